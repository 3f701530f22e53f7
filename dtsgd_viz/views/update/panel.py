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
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.figure import canvas_renderer
from ..paths import geometry as geo
from . import arrows as arr
from . import fold, marks
from . import geometry as upd
from . import labels as lab

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from ..paths.scene import PathScene

TINT = 0.55  # how far towards white the gradient term's colour is mixed


def run_styles(keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{config: dict(ls, lw, marker, ms, zorder)}``: each run's look from
    ``style.run_looks`` (one look per rule, in every figure)."""
    return {
        k: dict(ls=look.ls, lw=look.lw, marker=look.marker, ms=look.ms, zorder=look.zorder)
        for k, look in style.run_looks(keys).items()
    }


def tint(color: ColorType, amount: float = TINT) -> tuple[float, float, float]:
    """``color`` mixed with white: ``(1 - amount) * color + amount * white`` (RGB)."""
    from matplotlib.colors import to_rgb

    rgb = np.asarray(to_rgb(color))
    r, g, b = (float(x) for x in (1 - amount) * rgb + amount)
    return r, g, b


def term_color(term: str, color: ColorType) -> ColorType:
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
    chain: tuple[tuple[str, np.ndarray, np.ndarray], ...]
    nesterov: tuple[np.ndarray, np.ndarray] | None
    trail: np.ndarray
    box: geo.Box | None  # None: no finite point to frame


def panel_data(
    key: str,
    update: int,
    coords: np.ndarray,
    index: int,
    chain: Iterable[tuple[str, np.ndarray, np.ndarray]],
    nesterov: tuple[np.ndarray, np.ndarray] | None,
    main_box: geo.Box,
) -> PanelData:
    """The panel of ``key`` at recording index ``index`` (update ``update``)."""
    position = np.asarray(coords[index], np.float64)
    pts = [position, coords[index + 1]]
    tip = position
    for _, tail, uv in chain:
        tip = np.asarray(tail) + np.asarray(uv)
        pts.append(tip)
    if nesterov is not None:
        pts += list(nesterov)
    box = centre_content(upd.zoom_box(pts, main_box, min_frac=PANEL_MIN), pts, coords[: index + 1])
    return PanelData(key, int(update), position, tuple(chain), nesterov, np.asarray(coords[: index + 1]), box)


PANEL_MIN = 0.005  # of the paths panel: the smallest box (zoom ×200), so a tiny update fills its panel
KEEP_IN = 0.15  # of a box: how far inside it the update's points stay when it is moved


def centre_content(
    box: geo.Box | None, must: ArrayLike, trail: ArrayLike, segments: int = 2, keep: float = KEEP_IN
) -> geo.Box | None:
    """``box`` moved (same size) so what the panel draws, the points ``must`` and the
    part of the path ``trail`` (its last ``segments`` legs) inside it, sits in its middle
    along both axes (the explorer keeps two legs of the path), while ``must`` stays ``keep``
    of the box inside it: an update whose
    path arrives from one side leaves no empty band on the other.

    >>> b = centre_content(((0.0, 4.0), (0.0, 4.0)), [(1.0, 2.0), (3.0, 2.0)], [(2.0, -9.0), (1.0, 2.0)])
    >>> [tuple(round(v, 2) for v in r) for r in b]
    [(0.0, 4.0), (-0.92, 3.08)]
    """
    if box is None:
        return box
    must = np.asarray(must, np.float64).reshape(-1, 2)
    must = must[np.all(np.isfinite(must), axis=1)]
    path = np.asarray(trail, np.float64).reshape(-1, 2)[-segments - 1 :]
    if not len(must):
        return box
    lo_b, hi_b = np.array([box[0][0], box[1][0]]), np.array([box[0][1], box[1][1]])
    span = hi_b - lo_b
    t = np.linspace(0.0, 1.0, 25)[:, None]
    samples = np.concatenate([a + t * (b - a) for a, b in zip(path[:-1], path[1:])]) if len(path) > 1 else must
    samples = samples[np.all(np.isfinite(samples), axis=1)]
    # moved once: the path a move brings in would pull it on and on
    inside = samples[np.all((samples >= lo_b) & (samples <= hi_b), axis=1)]
    content = np.concatenate([must, inside])
    shift = (content.min(axis=0) + content.max(axis=0)) / 2 - (lo_b + hi_b) / 2
    low = must.max(axis=0) + keep * span - hi_b  # the least shift keeping ``must`` inside
    high = must.min(axis=0) - keep * span - lo_b  # the most
    shift = np.where(low <= high, np.clip(shift, low, high), 0.0)
    lo_b, hi_b = lo_b + shift, hi_b + shift
    return ((float(lo_b[0]), float(hi_b[0])), (float(lo_b[1]), float(hi_b[1])))


def fade_rgba(color: ColorType, n: int, half_life: float = 4.0) -> np.ndarray:
    """``n`` RGBA rows of ``color``, their alphas ``fade_alphas(n)`` (oldest first)."""
    from matplotlib.colors import to_rgba

    rgba = np.tile(to_rgba(color), (n, 1))
    rgba[:, 3] = geo.fade_alphas(n, half_life=half_life)
    return rgba


TRAIL = 40  # segments a trail holds: older ones have faded to the floor of fade_alphas


def trail_segments(coords: np.ndarray, index: int, length: int = TRAIL) -> np.ndarray:
    """The last ``length`` (at most) segments of the path up to the point before the
    update at recording index ``index``, oldest first. The whole path is drawn pale
    underneath, so a 10,000-update run still moves a trail of ``length`` segments."""
    c = np.asarray(coords[max(0, index - length) : index + 1], np.float64)
    return np.stack([c[:-1], c[1:]], axis=1) if len(c) > 1 else np.zeros((0, 2, 2))


def _clear(ax: Axes) -> None:
    """Remove what a previous update drew; the axes keep their ticks (``ax.clear()``
    would rebuild them, the slowest part of redrawing a panel for every frame)."""
    for artist in [*ax.lines, *ax.collections, *ax.texts, *ax.patches]:
        artist.remove()
    ax.set_aspect("auto")


def draw_update_panel(
    ax: Axes,
    scene: PathScene,
    data: PanelData,
    color: ColorType,
    run_style: Mapping[str, Any],
    equal_aspect: bool = True,
    *,
    label_size: float | None = None,
    smaller: Iterable[float] = (style.TICK_SIZE,),
    avoid_path: bool = True,
    name_marks: bool = False,
    whole_path: bool = True,
    crowded: bool = False,
    true_length: bool = False,
    labels: bool = True,
    lengths: bool = True,
    _flip: float = 1.0,
) -> float:
    """Clear ``ax`` and draw one run's update ``data`` there: thick arrows tip to tail
    (each shaft at least two heads long, ``update_arrows.fit_arrows``), each named on a
    leader line with its true length, the zoom factor in the title.
    ``label_size``: the labels' type size in points (None: ``style.LABEL_SIZE``, the
    size of labels on the data; ``plot_update``'s bigger panels pass more), or the
    largest of ``smaller`` where nothing fits at that size. ``name_marks``: the ring,
    the dot and the fading path are named on the data too ("before", "after", "path so
    far"; ``crowded``: only "before" and "after", and Nesterov's ring only by its
    look-ahead name); ``whole_path``: the run's whole path drawn faintly underneath. The labels
    keep off every arrow, mark, leader and each other, inside the axes, and off the
    path's last segments and Nesterov's dotted line (``update_labels``), measured on the
    axes as they are now: draw again after the figure's layout changes.
    ``avoid_path`` is kept for callers; the path is always avoided. ``true_length``:
    every arrow at its true length, never drawn longer (``fit_arrows(stretch=False)``:
    panels on one zoom); ``labels=False``: no names at all (an update too small to
    name at this zoom, named in its inset); ``lengths=False``: the arrows' names without
    their lengths (a chart beside says them, in all the parameters). Returns how much
    the labels still cross (``update_labels.Placed.cost``; under ``HARD / 2``: nothing)."""
    from matplotlib import patheffects

    _clear(ax)
    if data.box is None:
        ax.set_title(
            f"{geo.rule_name(data.key)}: update {data.update} (non-finite)", fontsize=style.TITLE_SIZE, color=color
        )
        return 0.0
    _frame_panel(ax, data, color, equal_aspect, upd.zoom_factor(scene.box, data.box))
    ax.apply_aspect()  # the box as drawn: the labels are placed in its pixels
    _draw_surroundings(ax, scene, data, color, run_style, whole_path)
    outline = [patheffects.withStroke(linewidth=2.5, foreground="white")]
    arrows = _draw_chain(ax, data, color, _flip, stretch=not true_length)
    if not labels:
        if data.nesterov is not None:
            _draw_lookahead(ax, data, color)
        return 0.0
    names = _arrow_labels(ax, data, arrows, lengths)
    if data.nesterov is not None:  # held to their sides: the arrows' names fit round them
        names += _draw_lookahead(ax, data, color, name_marks and not crowded)
    if name_marks:
        names += marks.mark_labels(ax, data, arrows, _radius, trail=not crowded)
    placed = lab.place(
        ax,
        names,
        _obstacles(ax, data, arrows),
        color=color,
        outline=outline,
        fontsize=style.LABEL_SIZE if label_size is None else float(label_size),
        smaller=smaller,
    )
    if placed.cost >= lab.HARD / 2 and _flip > 0 and any(a.shift is not None for a in arrows):
        return draw_update_panel(
            ax,
            scene,
            data,
            color,
            run_style,
            equal_aspect,
            label_size=label_size,
            smaller=smaller,
            name_marks=name_marks,
            whole_path=whole_path,
            crowded=crowded,
            true_length=true_length,
            lengths=lengths,
            _flip=-1.0,
        )  # an arrow drawn aside: the other side
    return placed.cost


def _draw_surroundings(
    ax: Axes, scene: PathScene, data: PanelData, color: ColorType, run_style: Mapping[str, Any], whole_path: bool = True
) -> None:
    """The loss contours in the zoom box, the whole path faintly (``whole_path``), the
    fading trail up to the update and the position before it (a ring, in every rule's
    panel)."""
    from matplotlib.collections import LineCollection

    assert data.box is not None  # drawn only round a box
    X, Y, Z = geo.loss_grid(scene.surface.value_np, scene.plane, tuple(scene.surface.shape), data.box, n=41)
    levels = geo.log_levels(Z, n=9, inner=0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.contour(X, Y, Z, levels=levels, colors="0.7", linewidths=0.7, alpha=0.7)
    c = scene.coords[data.key]
    if whole_path:
        ax.plot(c[:, 0], c[:, 1], ls=run_style["ls"], color=color, lw=1.0, alpha=0.25, gid=f"zoom-path:{data.key}")
    seg = trail_segments(c, len(data.trail) - 1)
    if len(seg):  # light and thin, the leg into the ring too: never read as one of the arrows
        rgba = fade_rgba(tint(color, TRAIL_TINT), len(seg), half_life=3.0)
        rgba[:, 3] *= TRAIL_ALPHA
        ax.add_collection(
            LineCollection(list(seg), colors=rgba, linewidths=TRAIL_LW, gid=f"zoom-trail:{data.key}", zorder=3)
        )
        ax.scatter(seg[:, 0, 0], seg[:, 0, 1], s=12, c=rgba, zorder=3, gid=f"zoom-trail-points:{data.key}")
    current = style.ROLE_LOOKS["current"]
    ax.plot(
        [data.position[0]],
        [data.position[1]],
        current.marker,
        ms=RING_MS,
        mfc="white",
        mec=color,
        mew=current.lw + 0.2,
        zorder=5,
        gid=f"zoom-position:{data.key}",
    )


# the path so far: its colour's tint, thin, at most this opaque (the arrows are opaque and
# three times as thick, so the leg into the ring never reads as an arrow)
TRAIL_TINT, TRAIL_ALPHA, TRAIL_LW = 0.35, 0.8, 1.5
RING_MS = style.ROLE_LOOKS["current"].ms + 2  # the position before the update
# Nesterov's look-ahead point is that position: its diamond sits inside the ring, white
# inside so it shows over the arrow leaving the ring in the same colour
LOOKAHEAD_MARK: dict[str, Any] = dict(
    marker=style.ROLE_LOOKS["lookahead"].marker, ms=style.ROLE_LOOKS["lookahead"].ms, mfc="white", mew=1.6, ls="none"
)
NEXT_Z = 6.9  # the point an update reaches: under the arrows, the last head points at it


def _draw_chain(
    ax: Axes, data: PanelData, color: ColorType, flip: float = 1.0, stretch: bool = True
) -> list[arr.DrawnArrow]:
    """The terms as thick arrows tip to tail, each shaft at least two heads long
    (``update_arrows.fit_arrows``: thinner, or drawn longer and dashed), each drawn over
    the one after it (an arrow folding back starts under the head before it, which shows
    whole; one folding straight back is drawn a few pixels aside, ``update_fold``), and the
    point the update reaches: under the last head when the arrow ends there, over the
    shaft when the last arrow is drawn longer or aside (its drawn tip is not the update's
    end). Returns the ``DrawnArrow`` list."""
    assert data.box is not None  # drawn only round a box
    span = float(np.ptp(data.box[0]))
    arrows = arr.fit_arrows(data.chain, span, stretch)  # one folding straight back is drawn aside
    arrows = [dataclasses.replace(a, shift=s) for a, s in zip(arrows, fold.shifts(ax, arrows, flip))]
    for i, a in enumerate(arrows):
        tc, z = term_color(a.term, color), ARROW_Z + 0.1 * (len(arrows) - i)
        moved: dict[str, Any] = {} if a.shift is None else dict(transform=fold.transform(ax, a.shift))
        if a.shift is not None:  # joined to the true tip before it
            fold.draw(ax, a, a.shift, tc, z - 0.01, f"zoom-connector:{data.key}:{a.term}")
        q = ax.quiver(
            [a.tail[0]],
            [a.tail[1]],
            [a.uv[0]],
            [a.uv[1]],
            angles="xy",
            scale_units="xy",
            scale=1.0,
            color=tc,
            width=a.width,
            headwidth=arr.HEAD_WIDTH,
            headlength=arr.HEAD_LENGTH,
            headaxislength=arr.HEAD_AXIS,
            edgecolor=color,
            linewidth=1.0,
            zorder=z,
            gid=f"zoom-arrow:{data.key}:{a.term}",
            linestyle=(0, (4.0, 2.0)) if a.dashed else "-",
            **moved,
        )
        setattr(q, "magnified", a.factor)  # noqa: B010  # our own mark on the Quiver: how much longer it is drawn
    if arrows:
        tip = arrows[-1].tail + arrows[-1].true_uv
        hidden = arrows[-1].dashed or arrows[-1].shift is not None  # else under the last head
        z = NEXT_Z if not hidden else ARROW_Z + 0.1 * (len(arrows) + 1)
        ax.plot([tip[0]], [tip[1]], "o", ms=6, color=color, mec="white", mew=1.0, zorder=z, gid=f"zoom-next:{data.key}")
    return arrows


ARROW_Z = 7.0  # the arrows: over the labels (6.5) and the marks, under the look-ahead diamond (10)


def _length(x: float) -> str:
    return f"{x:.2g}" if x >= 1e-3 else f"{x:.1e}"


def _arrow_labels(ax: Axes, data: PanelData, arrows: list[arr.DrawnArrow], lengths: bool = True) -> list[lab.Label]:
    """Each arrow's name and true length (``update_labels.Label``), anchored at the
    middle of its shaft (clear of its head, so the leader meets the shaft)."""
    assert data.box is not None  # drawn only round a box
    out = []
    span = float(np.ptp(data.box[0])) or 1.0
    for a in arrows:
        length = float(np.hypot(*a.true_uv))
        text = f"{upd.TERM_SHORT[a.term]}  {_length(length)}" if lengths else upd.TERM_SHORT[a.term]
        if a.dashed:
            text += f"\n(drawn ×{a.factor:.0f} longer)" if a.factor >= 9.5 else f"\n(drawn ×{a.factor:.1f} longer)"
        elif length == 0:
            text = f"{upd.TERM_SHORT[a.term]} = 0"
        drawn = float(np.hypot(*a.uv))  # the anchor: the middle of the shaft as seen
        mid = (a.covered + 0.5 * max(0.0, drawn - a.head(span) - a.covered)) / drawn if drawn > 0 else 0.5
        if a.dashed and a is not arrows[-1]:  # the next arrow starts at its true tip: name the part before
            mid = 0.5 / a.factor
        after = arrows[arrows.index(a) + 1] if a is not arrows[-1] else None
        if after is not None and after.covered > 0 and drawn > 0:  # the next folds back over this one:
            bare = drawn + float(after.uv @ a.uv) / drawn  # name the part it leaves bare
            if bare > 2 * a.head(span):
                mid = min(mid, 0.5 * bare / drawn)
        half = 0.5 * a.width * ax.bbox.width  # pixels: the leader leaves its own shaft
        own = half + lab.GAP + 4.0
        if length == 0:  # a zero arrow's name points at the ring it sits in
            half = own = max(own, _radius(RING_MS, style.ROLE_LOOKS["current"].lw + 0.2, ax) + 2.0)
        at = a.tail + mid * a.uv + fold.data_shift(ax, a.tail, a.shift)  # on the shaft as drawn
        out.append(lab.Label(text, at, f"zoom-label:{data.key}:{a.term}", a.term != "gradient", own=own, under=half))
    return out


def _draw_lookahead(ax: Axes, data: PanelData, color: ColorType, before: bool = False) -> list[lab.Label]:
    """Nesterov's classical iterate, the dotted line of μ·v_prev from it to the
    look-ahead point where g was taken (the parameter, in its ring); returns their
    labels, placed with the arrows' (``update_labels.place``); ``before``: the
    look-ahead point's label names the ring too (it is the parameter before the update)."""
    assert data.nesterov is not None and data.box is not None  # drawn only for a Nesterov update, round a box
    it, la = data.nesterov
    from matplotlib import patheffects

    # round dots in a white halo: they read as μ·v_prev's line where it lies along the path
    ahead, iterate = style.ROLE_LOOKS["lookahead"], style.ROLE_LOOKS["iterate"]
    ax.plot(
        [it[0], la[0]],
        [it[1], la[1]],
        **ahead.line(color),
        dash_capstyle="round",
        gid=f"iterate-line:{data.key}",
        path_effects=[patheffects.Stroke(linewidth=4.2, foreground="white"), patheffects.Normal()],
    )
    ax.plot(
        [it[0]],
        [it[1]],
        ls="none",
        marker=iterate.marker,
        ms=iterate.ms,
        mfc="white",
        mec=color,
        mew=iterate.lw,
        zorder=iterate.zorder,
        gid=f"iterate:{data.key}",
    )
    ax.plot([la[0]], [la[1]], **LOOKAHEAD_MARK, color=color, zorder=10, gid=f"lookahead:{data.key}")
    ring = _radius(RING_MS, style.ROLE_LOOKS["current"].lw + 0.2, ax) + 2.0
    span = float(np.ptp(data.box[0])) or 1.0
    d = np.asarray(la, np.float64) - np.asarray(it, np.float64)
    if float(np.hypot(*d)) < COINCIDE * span:  # one point at this zoom, one name
        why = "(v_prev = 0)" if not np.any(d) else "(μ·v_prev too short to see)"
        text = f"iterate = look-ahead\n{why}: g here"
        return [
            lab.Label(
                ("before = " if before else "") + text,
                np.asarray(la),
                f"lookahead-label:{data.key}",
                own=ring,
                wrapped=("before = " if before else "") + f"iterate =\nlook-ahead\n{why}:\ng here",
            )
        ]
    # the two names on opposite sides of the iterate to look-ahead line, so neither leader
    # crosses the other's name
    side = np.array([d[1], -d[0]]) / float(np.hypot(*d))  # the look-ahead's name right of the line
    return [
        lab.Label(
            ("before = " if before else "") + "look-ahead point:\ng taken here",
            np.asarray(la),
            f"lookahead-label:{data.key}",
            side=side,
            own=ring,
        ),
        lab.Label(
            "iterate p − μ·v_prev",
            np.asarray(it),
            f"iterate-label:{data.key}",
            side=-side,
            wrapped="iterate\np − μ·v_prev",
            own=_radius(6, 1.4, ax) + 2.0,
        ),
    ]


COINCIDE = 0.02  # iterate and look-ahead closer than this (in panel spans) are one point
PATH_SEGMENTS = TRAIL  # the path's last segments the labels keep off: all the trail draws


def _radius(ms: float, mew: float, ax: Axes) -> float:
    """A marker's radius in pixels (its size and edge, in points)."""
    return (ms + mew) / 2 * ax.figure.dpi / 72.0


def _obstacles(ax: Axes, data: PanelData, arrows: Sequence[arr.DrawnArrow]) -> lab.Things:
    """``(polygons, discs, line points)`` in pixels: the arrows as quiver draws them, the
    marks, and points along the path's last segments and Nesterov's dotted line."""
    to_px = ax.transData.transform
    polys = [
        lab.arrow_polygon(
            to_px(a.tail) + (0 if a.shift is None else a.shift),
            to_px(a.tail + a.uv) + (0 if a.shift is None else a.shift),
            a.width * ax.bbox.width,
        )
        for a in arrows
    ]
    discs: list[tuple[np.ndarray, float]] = []
    for line in ax.lines:
        if line.get_marker() in (None, "None", "", " ") or not (line.get_gid() or "").startswith(
            ("zoom-position", "zoom-next", "iterate:", "lookahead:")
        ):
            continue
        r = _radius(line.get_markersize(), line.get_markeredgewidth(), ax)
        discs += [(p, r) for p in to_px(line.get_xydata())]
    lines = [np.asarray(data.trail[-PATH_SEGMENTS - 1 :], np.float64).reshape(-1, 2)]
    if data.nesterov is not None:
        lines.append(np.asarray(data.nesterov, np.float64).reshape(-1, 2))
    return polys, discs, line_points([to_px(line) for line in lines], ax.bbox.extents)


def line_points(lines: Iterable[ArrayLike], frame: Sequence[float], spacing: float = 2.0) -> np.ndarray:
    """Points every ``spacing`` pixels along the polylines ``lines`` (pixels), those
    inside ``frame = (x0, y0, x1, y1)``: what a label must not sit on."""
    pts = [np.zeros((0, 2))]
    for line in lines:
        line = np.asarray(line, np.float64).reshape(-1, 2)
        for a, b in zip(line[:-1], line[1:]):
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                continue
            n = int(min(2000, max(2, np.hypot(*(b - a)) / spacing + 1)))
            pts.append(a + np.linspace(0.0, 1.0, n)[:, None] * (b - a))
    pts = np.concatenate(pts)
    x0, y0, x1, y1 = frame
    return pts[(pts[:, 0] >= x0) & (pts[:, 0] <= x1) & (pts[:, 1] >= y0) & (pts[:, 1] <= y1)]


def _frame_panel(ax: Axes, data: PanelData, color: ColorType, equal_aspect: bool, zoom: float) -> None:
    """Limits on the zoom box, a few tick labels for its scale, the title (with the zoom
    factor over the paths panel) and spines in the run's colour."""
    from matplotlib.ticker import MaxNLocator

    assert data.box is not None  # framed only round a box
    ax.set_xlim(*data.box[0])
    ax.set_ylim(*data.box[1])
    if equal_aspect:
        ax.set_aspect("equal", adjustable="box")
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(labelsize=style.TICK_SIZE, labelleft=True, pad=1.5)
    factor = f"×{zoom:.0f}" if zoom >= 9.5 else f"×{zoom:.1f}"
    title = ax.set_title(
        f"{geo.rule_name(data.key)}: update {data.update} · zoom {factor}",
        fontsize=style.TITLE_SIZE,
        color=color,
        fontweight="bold",
    )
    if hasattr(ax.figure.canvas, "get_renderer"):  # no wider than its panel: it would leave the figure
        renderer = canvas_renderer(ax.figure)
        for size in np.arange(style.TITLE_SIZE, style.TICK_SIZE - 0.01, -0.5):
            title.set_fontsize(float(size))
            if title.get_window_extent(renderer).width <= ax.bbox.width:
                break
    for spine in ax.spines.values():
        spine.set_edgecolor(color)
        spine.set_linewidth(1.2)
