"""Drawing one optimizer's update up close: the zoomed panel ``plot_paths`` puts under the
paths for every run, and the styles that keep runs apart where their paths coincide.

The geometry (arrow chain, look-ahead points, the zoom box, the fading trail) comes
from ``path_geometry`` and ``update_geometry``; this module only draws it. A panel is redrawn from scratch
for each update (``draw_update_panel`` clears the axes), so the explorer widget and
the animation call the same function as ``plot_paths``.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import path_geometry as geo
from . import style
from . import update_geometry as upd

# Runs that start together (every rule's first update is along -g) stay apart: the
# first run is drawn widest and lowest, the others dashed or dotted on top of it, each
# with its own marker.
_RUN_STYLES = (
    dict(ls="-", lw=3.6, marker="o", ms=4.2),
    dict(ls=(0, (5.0, 2.2)), lw=2.0, marker="s", ms=3.4),
    dict(ls=(0, (1.0, 1.4)), lw=2.4, marker="^", ms=3.8),
    dict(ls=(0, (6.0, 1.5, 1.5, 1.5)), lw=1.8, marker="D", ms=3.0),
)
TINT = 0.55  # how far towards white the gradient term's colour is mixed


def run_styles(keys) -> dict[str, dict]:
    """``{config: dict(ls, lw, marker, ms, zorder)}`` in the order of ``keys``."""
    out = {}
    for i, key in enumerate(keys):
        s = dict(_RUN_STYLES[i % len(_RUN_STYLES)])
        s["zorder"] = 3 + 0.1 * i
        out[key] = s
    return out


def tint(color, amount: float = TINT):
    """``color`` mixed with white: ``(1 - amount) * color + amount * white`` (RGB)."""
    from matplotlib.colors import to_rgb
    rgb = np.asarray(to_rgb(color))
    return tuple(float(x) for x in (1 - amount) * rgb + amount)


def term_color(term: str, color):
    """The run's colour for the momentum / look-ahead term, its tint for the gradient."""
    return tint(color) if term == "gradient" else color


@dataclasses.dataclass(frozen=True)
class PanelData:
    """What one zoomed panel shows at one update (plot coordinates).

    ``chain``: ``[(term, tail, uv)]`` tip to tail from ``position``; ``nesterov``:
    ``(iterate, lookahead)`` or None; ``trail``: the path points up to ``position``;
    ``box``: the zoom box.
    """

    key: str
    update: int
    position: np.ndarray
    chain: tuple
    nesterov: tuple | None
    trail: np.ndarray
    box: tuple


def panel_data(key, update, coords, index, chain, nesterov, main_box) -> PanelData:
    """The panel of ``key`` at recording index ``index`` (update ``update``)."""
    position = np.asarray(coords[index], np.float64)
    pts = [position, coords[index + 1]]
    tip = position
    for _, tail, uv in chain:
        tip = np.asarray(tail) + np.asarray(uv)
        pts.append(tip)
    if nesterov is not None:
        pts += list(nesterov)
    box = upd.zoom_box(pts, main_box)
    return PanelData(key, int(update), position, tuple(chain), nesterov,
                     np.asarray(coords[:index + 1]), box)


def fade_rgba(color, n, half_life=4.0):
    """``n`` RGBA rows of ``color``, their alphas ``fade_alphas(n)`` (oldest first)."""
    from matplotlib.colors import to_rgba
    rgba = np.tile(to_rgba(color), (n, 1))
    rgba[:, 3] = geo.fade_alphas(n, half_life=half_life)
    return rgba


TRAIL = 40  # segments a trail holds: older ones have faded to the floor of fade_alphas


def trail_segments(coords, index, length=TRAIL):
    """The last ``length`` (at most) segments of the path up to the point before the
    update at recording index ``index``, oldest first. The whole path is drawn pale
    underneath, so a 10,000-update run still moves a trail of ``length`` segments."""
    c = np.asarray(coords[max(0, index - length):index + 1], np.float64)
    return np.stack([c[:-1], c[1:]], axis=1) if len(c) > 1 else np.zeros((0, 2, 2))


def _clear(ax):
    """Remove what a previous update drew; the axes keep their ticks (``ax.clear()``
    would rebuild them, the slowest part of redrawing a panel for every frame)."""
    for artist in [*ax.lines, *ax.collections, *ax.texts, *ax.patches]:
        artist.remove()
    ax.set_aspect("auto")


LABEL_OFFSET = 16.0           # points from the look-ahead point to its label
LABEL_SIZE = (62.0, 24.0)     # points: about what "look-ahead:\ng taken here" takes


def _size_points(ax):
    """The axes' (width, height) in points (its current position in the figure)."""
    bbox = ax.get_window_extent()
    dpi = ax.figure.figure.dpi   # the root figure's (a SubFigure has none of its own)
    return bbox.width * 72.0 / dpi, bbox.height * 72.0 / dpi


def lookahead_label_direction(point, away, box, size, label=LABEL_SIZE, offset=LABEL_OFFSET):
    """``(direction, ha, va)`` for the look-ahead label of ``point`` in the panel
    ``box`` drawn ``size`` points wide and high: of 16 directions, the one closest to
    ``away`` whose label (``label`` points, ``offset`` points from the point) stays
    inside the panel; if none fits, the one leaving the least of it outside."""
    (x0, x1), (y0, y1) = box
    W, H = size
    px = (float(point[0]) - x0) / ((x1 - x0) or 1.0) * W
    py = (float(point[1]) - y0) / ((y1 - y0) or 1.0) * H
    n = float(np.hypot(*away))
    away = np.asarray(away, np.float64) / n if n > 0 else np.array([-1.0, -1.0]) / 2 ** 0.5
    best = None
    for t in np.linspace(0.0, 2 * np.pi, 16, endpoint=False):
        d = np.array([np.cos(t), np.sin(t)])
        ax_, ay = px + offset * d[0], py + offset * d[1]
        left, right = (ax_ - label[0], ax_) if d[0] < 0 else (ax_, ax_ + label[0])
        bottom, top = (ay - label[1], ay) if d[1] < 0 else (ay, ay + label[1])
        outside = (max(0.0, 2 - left) + max(0.0, right - W + 2) + max(0.0, 2 - bottom)
                   + max(0.0, top - H + 2))
        key = (outside, -float(d @ away))
        if best is None or key < best[0]:
            best = (key, d)
    d = best[1]
    return d, ("right" if d[0] < 0 else "left"), ("top" if d[1] < 0 else "bottom")


def draw_update_panel(ax, scene, data: PanelData, color, run_style, equal_aspect=True):
    """Clear ``ax`` and draw one run's update ``data`` there, arrows thick."""
    from matplotlib import patheffects

    fs = style.FONT_SIZE
    _clear(ax)
    if data.box is None:
        ax.set_title(f"{data.key}: update {data.update} (non-finite)", fontsize=fs + 1, color=color)
        return
    _draw_surroundings(ax, scene, data, color, run_style)
    outline = [patheffects.withStroke(linewidth=2.5, foreground="white")]
    _draw_chain(ax, data, color, outline)
    if data.nesterov is not None:
        _draw_lookahead(ax, data, color, outline)
    _frame_panel(ax, data, color, equal_aspect)


def _draw_surroundings(ax, scene, data: PanelData, color, run_style):
    """The loss contours in the zoom box, the whole path faintly, the fading trail up to
    the update and the position before it."""
    from matplotlib.collections import LineCollection

    X, Y, Z = geo.loss_grid(scene.surface.value_np, scene.plane, tuple(scene.surface.shape),
                            data.box, n=41)
    levels = geo.log_levels(Z, n=9, inner=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.contour(X, Y, Z, levels=levels, colors="0.6", linewidths=0.7, alpha=0.7)
    c = scene.coords[data.key]
    ax.plot(c[:, 0], c[:, 1], ls=run_style["ls"], color=color, lw=1.0, alpha=0.25,
            gid=f"zoom-path:{data.key}")
    seg = trail_segments(c, len(data.trail) - 1)
    if len(seg):
        ax.add_collection(LineCollection(seg, colors=fade_rgba(color, len(seg), half_life=3.0), linewidths=2.2,
                                         gid=f"zoom-trail:{data.key}", zorder=3))
        ax.scatter(seg[:, 0, 0], seg[:, 0, 1], s=14, c=fade_rgba(color, len(seg), half_life=3.0),
                   zorder=3, gid=f"zoom-trail-points:{data.key}")
    ax.plot([data.position[0]], [data.position[1]], "o", ms=11, mfc="white", mec=color, mew=2.2,
            zorder=5, gid=f"zoom-position:{data.key}")


def _draw_chain(ax, data: PanelData, color, outline):
    """The terms as thick arrows tip to tail, each long enough labelled, and the point
    the update reaches."""
    fs = style.FONT_SIZE
    tip = data.position
    span = np.ptp(data.box[0])
    for term, tail, uv in data.chain:
        tc = term_color(term, color)
        ax.quiver([tail[0]], [tail[1]], [uv[0]], [uv[1]], angles="xy", scale_units="xy", scale=1.0,
                  color=tc, width=0.024, headwidth=3.0, headlength=3.4, headaxislength=3.0,
                  edgecolor=color, linewidth=1.0, zorder=7, gid=f"zoom-arrow:{data.key}:{term}")
        tip = np.asarray(tail) + np.asarray(uv)
        norm = float(np.hypot(*uv))
        if norm > 0.04 * span:  # label only arrows long enough to carry one
            mid = np.asarray(tail) + 0.5 * np.asarray(uv)
            off = np.array([-uv[1], uv[0]]) / norm * 0.06 * span
            ax.text(*(mid + off), upd.TERM_SHORT[term], fontsize=fs + 1, color=color,
                    ha="center", va="center", zorder=8, path_effects=outline,
                    fontweight="bold" if term != "gradient" else "normal")
    ax.plot([tip[0]], [tip[1]], "o", ms=6, color=color, mec="white", mew=1.0, zorder=8,
            gid=f"zoom-next:{data.key}")


def _draw_lookahead(ax, data: PanelData, color, outline):
    """Nesterov's classical iterate, the look-ahead point where g was taken (the
    parameter) and a label on it that stays in the panel."""
    it, la = data.nesterov
    ax.plot([it[0], la[0]], [it[1], la[1]], ":", color=color, lw=1.4, zorder=4)
    ax.plot([it[0]], [it[1]], "s", ms=6, mfc="white", mec=color, mew=1.4, zorder=6,
            gid=f"iterate:{data.key}")
    ax.plot([la[0]], [la[1]], "D", ms=7, color=color, mec="white", mew=1.0, zorder=9,
            gid=f"lookahead:{data.key}")
    # the label goes behind the point, away from where the arrows leave it, and
    # never out of the panel: the direction most away from them whose label fits
    away = -sum((np.asarray(uv) for _, _, uv in data.chain), np.zeros(2))
    d, ha, va = lookahead_label_direction(la, away, data.box, _size_points(ax))
    ax.annotate("look-ahead:\ng taken here", la, gid=f"lookahead-label:{data.key}",
                xytext=tuple(LABEL_OFFSET * d), textcoords="offset points",
                fontsize=style.FONT_SIZE - 1, color=color, ha=ha, va=va, zorder=9,
                path_effects=outline)


def _frame_panel(ax, data: PanelData, color, equal_aspect):
    """Limits on the zoom box, small tick labels for its scale, the title and spines in
    the run's colour."""
    fs = style.FONT_SIZE
    ax.set_xlim(*data.box[0])
    ax.set_ylim(*data.box[1])
    if equal_aspect:
        ax.set_aspect("equal", adjustable="box")
    # small tick labels on both axes give the scale of the box
    ax.tick_params(labelsize=fs - 2.5, labelleft=True, pad=1.5)
    ax.set_title(f"{data.key}: update {data.update}", fontsize=fs + 1, color=color,
                 fontweight="bold")
    for spine in ax.spines.values():
        spine.set_edgecolor(color)
        spine.set_linewidth(1.2)
