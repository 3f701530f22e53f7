"""Drawing one optimizer's update up close: the panel per run of ``plot_update`` (and of
``plot_paths(zoom=True)`` under its paths), and the styles that keep runs apart where
their paths coincide.

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
from .direct_labels import text_size

TINT = 0.55  # how far towards white the gradient term's colour is mixed


def run_styles(keys) -> dict[str, dict]:
    """``{config: dict(ls, lw, marker, ms, zorder)}``: each run's look from
    ``style.run_looks`` (one look per rule, in every figure)."""
    return {k: dict(ls=look.ls, lw=look.lw, marker=look.marker, ms=look.ms, zorder=look.zorder)
            for k, look in style.run_looks(keys).items()}


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


def _size_points(ax):
    """The axes' (width, height) in points (its current position in the figure)."""
    bbox = ax.get_window_extent()
    dpi = ax.figure.figure.dpi   # the root figure's (a SubFigure has none of its own)
    return bbox.width * 72.0 / dpi, bbox.height * 72.0 / dpi


def draw_update_panel(ax, scene, data: PanelData, color, run_style, equal_aspect=True, *,
                      label_size=None, avoid_path=False):
    """Clear ``ax`` and draw one run's update ``data`` there: thick arrows tip to tail,
    each named on a leader line with its true length, the zoom factor in the title.
    ``label_size``: the labels' type size in points (None: ``style.TICK_SIZE``, as the
    zoomed panels under the paths have it; ``plot_update``'s bigger panels pass more).
    ``avoid_path``: keep the labels off the path's last segments and Nesterov's dotted
    iterate line too (``plot_update``; the widgets' panels, redrawn every frame, skip it)."""
    from matplotlib import patheffects

    _clear(ax)
    if data.box is None:
        ax.set_title(f"{geo.rule_name(data.key)}: update {data.update} (non-finite)", fontsize=style.TITLE_SIZE,
                     color=color)
        return
    _draw_surroundings(ax, scene, data, color, run_style)
    outline = [patheffects.withStroke(linewidth=2.5, foreground="white")]
    arrows = _draw_chain(ax, data, color)
    labels = _arrow_labels(data, arrows)
    if data.nesterov is not None:   # placed first (``_place``): the arrows' names keep off them
        labels += _draw_lookahead(ax, data, color)
    _place(ax, data, labels, arrows, color, outline, equal_aspect,
           style.TICK_SIZE if label_size is None else float(label_size),
           _path_points(data) if avoid_path else ())
    _frame_panel(ax, data, color, equal_aspect, upd.zoom_factor(scene.box, data.box))


def _draw_surroundings(ax, scene, data: PanelData, color, run_style):
    """The loss contours in the zoom box, the whole path faintly, the fading trail up to
    the update and the position before it."""
    from matplotlib.collections import LineCollection

    X, Y, Z = geo.loss_grid(scene.surface.value_np, scene.plane, tuple(scene.surface.shape),
                            data.box, n=41)
    levels = geo.log_levels(Z, n=9, inner=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.contour(X, Y, Z, levels=levels, colors="0.7", linewidths=0.7, alpha=0.7)
    c = scene.coords[data.key]
    ax.plot(c[:, 0], c[:, 1], ls=run_style["ls"], color=color, lw=1.0, alpha=0.25,
            gid=f"zoom-path:{data.key}")
    seg = trail_segments(c, len(data.trail) - 1)
    if len(seg):
        rgba = fade_rgba(color, len(seg), half_life=3.0)
        ax.add_collection(LineCollection(seg, colors=rgba, linewidths=2.0,
                                         gid=f"zoom-trail:{data.key}", zorder=3))
        ax.scatter(seg[:, 0, 0], seg[:, 0, 1], s=14, c=rgba, zorder=3,
                   gid=f"zoom-trail-points:{data.key}")
    current = style.ROLE_LOOKS["current"]
    if data.nesterov is not None:   # the position is the look-ahead point: one mark, its diamond
        ax.plot([data.position[0]], [data.position[1]], **LOOKAHEAD_MARK, color=color, zorder=5,
                gid=f"zoom-position:{data.key}")
        return
    ax.plot([data.position[0]], [data.position[1]], current.marker, ms=current.ms + 2, mfc="white",
            mec=color, mew=current.lw + 0.2, zorder=5, gid=f"zoom-position:{data.key}")


LOOKAHEAD_MARK = dict(marker="D", ms=9, mec="white", mew=1.2, ls="none")


def _draw_chain(ax, data: PanelData, color):
    """The terms as thick arrows tip to tail (the last one drawn at least
    ``upd.MIN_ARROW`` of the panel long, ``upd.drawn_chain``) and the point the update
    reaches. Returns ``[(term, tail, uv_drawn, true_length, factor)]``."""
    span = float(np.ptp(data.box[0]))
    out = []
    for term, tail, uv, factor in upd.drawn_chain(data.chain, span):
        tc = term_color(term, color)
        q = ax.quiver([tail[0]], [tail[1]], [uv[0]], [uv[1]], angles="xy", scale_units="xy", scale=1.0,
                      color=tc, width=0.024, headwidth=3.0, headlength=3.4, headaxislength=3.0,
                      edgecolor=color, linewidth=1.0, zorder=7, gid=f"zoom-arrow:{data.key}:{term}",
                      linestyle="--" if factor > 1 else "-")
        q.magnified = factor
        out.append((term, tail, uv, float(np.hypot(*uv)) / factor, factor))
    last = data.chain[-1] if data.chain else None
    if last is not None:
        tip = np.asarray(last[1]) + np.asarray(last[2])
        ax.plot([tip[0]], [tip[1]], "o", ms=6, color=color, mec="white", mew=1.0, zorder=8,
                gid=f"zoom-next:{data.key}")
    return out


def _length(x: float) -> str:
    return f"{x:.2g}" if x >= 1e-3 else f"{x:.1e}"


def _arrow_labels(data: PanelData, arrows):
    """``[(text, anchor, gid, bold)]``: each arrow's name and true length, anchored at the
    middle of its shaft."""
    out = []
    for term, tail, uv, length, factor in arrows:
        text = f"{upd.TERM_SHORT[term]}  {_length(length)}"
        if factor > 1:
            text += f"\n(drawn ×{factor:.0f} longer)" if factor >= 9.5 else f"\n(drawn ×{factor:.1f} longer)"
        elif length == 0:
            text = f"{upd.TERM_SHORT[term]} = 0"
        out.append((text, np.asarray(tail) + 0.5 * np.asarray(uv), f"zoom-label:{data.key}:{term}",
                    term != "gradient"))
    return out


def _draw_lookahead(ax, data: PanelData, color):
    """Nesterov's classical iterate and the look-ahead point where g was taken (the
    parameter); returns their labels, placed with the arrows' (``_place``)."""
    it, la = data.nesterov
    ax.plot([it[0], la[0]], [it[1], la[1]], ":", color=color, lw=1.4, zorder=4)
    ax.plot([it[0]], [it[1]], "s", ms=6, mfc="white", mec=color, mew=1.4, zorder=6,
            gid=f"iterate:{data.key}")
    ax.plot([la[0]], [la[1]], **LOOKAHEAD_MARK, color=color, zorder=10, gid=f"lookahead:{data.key}")
    span = float(np.ptp(data.box[0])) or 1.0
    d = np.asarray(la, np.float64) - np.asarray(it, np.float64)
    if float(np.hypot(*d)) < COINCIDE * span:   # v_prev = 0 (the first update): one point, one name
        return [("iterate = look-ahead\n(v_prev = 0): g here", np.asarray(la),
                 f"lookahead-label:{data.key}", False)]
    # the two names on opposite sides of the iterate to look-ahead line, so neither leader
    # crosses the other's name
    side = np.array([d[1], -d[0]]) / float(np.hypot(*d))   # the look-ahead's name right of the line
    return [("look-ahead point:\ng taken here", np.asarray(la), f"lookahead-label:{data.key}", False, side),
            ("iterate p − μ·v_prev", np.asarray(it), f"iterate-label:{data.key}", False, -side)]


COINCIDE = 0.02   # iterate and look-ahead closer than this (in panel spans) are one point


PATH_SEGMENTS = 6   # the path's last segments a plot_update label keeps off


def _path_points(data: PanelData) -> np.ndarray:
    """Points (plot coordinates) along the last ``PATH_SEGMENTS`` segments of the path up
    to the update and along Nesterov's iterate to look-ahead line, for ``_place``."""
    lines = [np.asarray(data.trail[-PATH_SEGMENTS - 1:], np.float64).reshape(-1, 2)]
    if data.nesterov is not None:
        lines.append(np.asarray(data.nesterov, np.float64).reshape(-1, 2))
    t = np.linspace(0.0, 1.0, 24)[:, None]
    out = [a + t * (b - a) for line in lines for a, b in zip(line[:-1], line[1:])]
    pts = np.concatenate(out) if out else np.zeros((0, 2))
    return pts[np.all(np.isfinite(pts), axis=1)]


def _place(ax, data: PanelData, labels, arrows, color, outline, equal_aspect=True,
           fs=style.TICK_SIZE, avoid=()):
    """Write ``labels`` on leader lines, off the arrow shafts, the marks, the points
    ``avoid`` (plot coordinates) and each other (``upd.place_labels``)."""
    (x0, x1), (y0, y1) = data.box
    W, H = _size_points(ax)
    if equal_aspect:   # the square box is drawn as a square: the axes shrink to it
        W = H = min(W, H)
    to_pt = lambda p: np.array([(p[0] - x0) / ((x1 - x0) or 1) * W,  # noqa: E731
                                (p[1] - y0) / ((y1 - y0) or 1) * H])
    obstacles = [arrow_outline(to_pt(tail), to_pt(np.asarray(tail) + np.asarray(uv)), W)
                 for _, tail, uv, _, _ in arrows]
    marks = [data.position, *(data.nesterov or ())]
    ring = 7.0 * np.column_stack([np.cos(np.linspace(0, 2 * np.pi, 8, endpoint=False)),
                                  np.sin(np.linspace(0, 2 * np.pi, 8, endpoint=False))])
    obstacles += [to_pt(p) + r for p in marks for r in [np.zeros(2), *ring]]   # the marks' discs
    obstacles += [to_pt(p) for p in avoid]
    centre = np.mean([to_pt(lab[1]) for lab in labels], axis=0)
    # a label's own side (in data units, e.g. Nesterov's two points), pulled to firmly
    scale = np.array([W / ((x1 - x0) or 1), H / ((y1 - y0) or 1)])
    away = [np.asarray(lab[4]) * scale if len(lab) > 4 else to_pt(lab[1]) - centre for lab in labels]
    pull = [SIDE_PULL if len(lab) > 4 else 0.3 for lab in labels]
    # the labels held to a side are placed first, the others around them; drawn in the given order
    order = sorted(range(len(labels)), key=lambda i: len(labels[i]) <= 4)
    placed = upd.place_labels([to_pt(labels[i][1]) for i in order],
                              [text_size(labels[i][0], fs) for i in order],
                              np.concatenate([np.reshape(o, (-1, 2)) for o in obstacles]), (W, H), [away[i] for i in order],
                              pull=[pull[i] for i in order])
    spots = [placed[order.index(i)] for i in range(len(labels))]
    for (text, anchor, gid, bold, *_), (dx, dy, ha, va) in zip(labels, spots):
        ax.annotate(text, anchor, xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
                    fontsize=fs, color=color, fontweight="bold" if bold else "normal", zorder=LABEL_Z,
                    path_effects=outline, gid=gid, annotation_clip=False,
                    arrowprops=dict(arrowstyle="-", color=color, lw=0.9, shrinkA=0, shrinkB=1,
                                    path_effects=outline))   # the leader in a white halo, over the path


LABEL_Z = 6.5   # the labels and leaders: over the path and its marks (<= 6), under the arrows (7)
SHAFT, HEAD_WIDTH, HEAD_LENGTH = 0.024, 3.0, 3.4   # the arrows' quiver width (of the axes' width), head


def arrow_outline(tail, tip, W, n=24):
    """Points (in points) covering a ``_draw_chain`` arrow from ``tail`` to ``tip`` in a
    panel ``W`` points wide: along its shaft's middle and both edges and over its head."""
    tail, tip = np.asarray(tail, np.float64), np.asarray(tip, np.float64)
    d = tip - tail
    n_len = float(np.hypot(*d))
    if not np.isfinite(n_len) or n_len == 0:
        return tail[None, :]
    u, perp = d / n_len, np.array([-d[1], d[0]]) / n_len
    shaft = SHAFT * W
    t = np.linspace(0.0, 1.0, n)[:, None]
    pts = [tail + t * d + k * 0.5 * shaft * perp for k in (-1, 0, 1)]
    head = min(HEAD_LENGTH * shaft, n_len)
    for s in np.linspace(0.0, 1.0, 6):   # the head's triangle, its base ``head`` behind the tip
        base = tip - head * (1 - s) * u
        half = 0.5 * HEAD_WIDTH * shaft * (1 - s)
        pts.append(base[None, :] + np.linspace(-half, half, 7)[:, None] * perp)
    return np.concatenate(pts)


SIDE_PULL = 8.0   # how firmly a label with its own side keeps to it (place_labels' costs)


def _frame_panel(ax, data: PanelData, color, equal_aspect, zoom):
    """Limits on the zoom box, a few tick labels for its scale, the title (with the zoom
    factor over the paths panel) and spines in the run's colour."""
    from matplotlib.ticker import MaxNLocator
    ax.set_xlim(*data.box[0])
    ax.set_ylim(*data.box[1])
    if equal_aspect:
        ax.set_aspect("equal", adjustable="box")
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(labelsize=style.TICK_SIZE, labelleft=True, pad=1.5)
    factor = f"×{zoom:.0f}" if zoom >= 9.5 else f"×{zoom:.1f}"
    ax.set_title(f"{geo.rule_name(data.key)}: update {data.update} · zoom {factor}", fontsize=style.TITLE_SIZE,
                 color=color, fontweight="bold")
    for spine in ax.spines.values():
        spine.set_edgecolor(color)
        spine.set_linewidth(1.2)
