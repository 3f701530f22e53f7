"""One run's update up close (``plot_update``, the explorer, the GIF): arrows at true length."""

from __future__ import annotations

import dataclasses
import weakref
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..paths import geometry as geo
from . import geometry as upd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from ..paths.scene import PathScene

SHAFT, HEAD_WIDTH, HEAD_LENGTH, HEAD_AXIS = 0.024, 3.0, 3.4, 3.0  # quiver's shape, in shaft widths
QUIVER: dict[str, Any] = dict(angles="xy", scale_units="xy", scale=1.0, headwidth=HEAD_WIDTH, headlength=HEAD_LENGTH)
QUIVER["headaxislength"] = HEAD_AXIS  # an arrow at its true length, in that shape
SHAFT_HEADS = 2.0  # a shaft at least this many of its head lengths: the direction reads
THIN = 0.18 / ((1.0 + SHAFT_HEADS) * HEAD_LENGTH) / 1.3  # the thinnest shaft (an arrow 0.14 of the panel long)
FOLD = np.cos(np.radians(120.0))  # an arrow turning back more than 120° lies along the one before
FOLD_THIN = 0.55  # ... and is drawn this much thinner than it (the other shows round it)
FOLD_FLOOR = 0.45 * SHAFT  # but no thinner than this
NEXT_HEAD = 0.35  # a head no longer than this share of the next arrow, which starts under it


@dataclasses.dataclass(frozen=True, eq=False)
class DrawnArrow:
    """One term as drawn from ``tail`` along ``uv``, ``width`` quiver's (of the panel's width)."""

    term: str
    tail: np.ndarray
    uv: np.ndarray
    width: float


def fit_arrows(chain: Iterable[tuple[str, ArrayLike, ArrayLike]], span: float) -> list[DrawnArrow]:
    """``chain`` at true length in a close-up ``span`` wide, each width set by ``SHAFT_HEADS``, ``NEXT_HEAD``, ``FOLD``.

    >>> a, b = fit_arrows([("momentum", np.zeros(2), np.array([1.0, 0.0])),
    ...                    ("gradient", np.array([1.0, 0.0]), np.array([0.0, 0.01]))], 2.0)
    >>> a.width < SHAFT, b.width == THIN, b.uv.tolist()  # a's head: at most NEXT_HEAD of b
    (True, True, [0.0, 0.01])
    >>> fit_arrows([("momentum", np.zeros(2), np.array([1.0, 0.0]))], 2.0)[0].width == SHAFT
    True
    """
    out: list[DrawnArrow] = []
    span = float(span) if span and np.isfinite(span) else 1.0
    terms = [(term, np.asarray(tail, np.float64), np.asarray(uv, np.float64)) for term, tail, uv in chain]
    lengths = [float(np.hypot(*uv)) for _, _, uv in terms]
    for i, (term, tail, uv) in enumerate(terms):
        n = lengths[i]
        if not (np.isfinite(n) and n > 0):
            out.append(DrawnArrow(term, tail, uv, SHAFT))
            continue
        width = min(SHAFT, n / span / ((1.0 + SHAFT_HEADS) * HEAD_LENGTH))
        after = lengths[i + 1] if i + 1 < len(terms) else 0.0  # the next arrow starts under this one's head
        if np.isfinite(after) and after > 0:
            width = min(width, NEXT_HEAD * after / span / HEAD_LENGTH)
        width = max(THIN, width)
        before = out[-1].uv if out else np.zeros(2)
        if float(before @ uv) < FOLD * n * float(np.linalg.norm(before)):
            width = max(min(FOLD_FLOOR, width), min(width, FOLD_THIN * out[-1].width))
        out.append(DrawnArrow(term, tail, uv, float(width)))
    return out


TINT = 0.55  # how far towards white the gradient term's colour is mixed


def run_styles(keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{config: dict(ls=dash)}``: each run's dash, for its faint whole path."""
    return {k: dict(ls=look.ls) for k, look in style.run_looks(keys).items()}


def tint(color: ColorType, amount: float = TINT) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = (float((1 - amount) * c + amount) for c in to_rgb(color))
    return r, g, b


def term_color(term: str, color: ColorType) -> ColorType:
    return tint(color) if term == "gradient" else color


@dataclasses.dataclass(frozen=True)
class PanelData:
    """One zoomed panel at one update, in plot coordinates."""

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
    position = np.asarray(coords[index], np.float64)
    chain = tuple(chain)
    tips = [np.asarray(tail) + np.asarray(uv) for _, tail, uv in chain]
    pts = [position, coords[index + 1], *tips, *(nesterov or ())]
    box = upd.zoom_box(pts, main_box, min_frac=PANEL_MIN)
    return PanelData(key, int(update), position, chain, nesterov, np.asarray(coords[: index + 1]), box)


PANEL_MIN = 0.005  # of the paths panel: the smallest box (zoom ×200), so a tiny update fills its panel


def fade_rgba(color: ColorType, n: int, half_life: float = 4.0) -> np.ndarray:
    """``n`` RGBA rows of ``color`` fading by ``fade_alphas`` (oldest first)."""
    from matplotlib.colors import to_rgba

    rgba = np.tile(to_rgba(color), (n, 1))
    rgba[:, 3] = geo.fade_alphas(n, half_life=half_life)
    return rgba


TRAIL = 40  # segments a trail holds: older ones have faded to the floor of fade_alphas


def trail_segments(coords: np.ndarray, index: int, length: int = TRAIL) -> np.ndarray:
    """The last ``length`` (at most) segments of the path up to recording index ``index``."""
    c = np.asarray(coords[max(0, index - length) : index + 1], np.float64)
    return np.stack([c[:-1], c[1:]], axis=1) if len(c) > 1 else np.zeros((0, 2, 2))


def draw_update_panel(
    ax: Axes,
    scene: PathScene,
    data: PanelData,
    color: ColorType,
    run_style: Mapping[str, Any],
    equal_aspect: bool = True,
    *,
    whole_path: bool = True,
    labels: bool = True,
) -> None:
    """Clear ``ax`` and draw ``data``, the whole path faintly (``whole_path``) and the arrows' names (``labels``)."""
    from matplotlib.collections import LineCollection
    from matplotlib.ticker import MaxNLocator

    for artist in [*ax.lines, *ax.collections, *ax.texts, *ax.patches]:  # the last update's, not the ticks
        artist.remove()  # (faster than ``ax.clear()``)
    ax.set_aspect("auto")
    if data.box is None:
        return
    ax.set_xlim(*data.box[0])
    ax.set_ylim(*data.box[1])
    if equal_aspect:
        ax.set_aspect("equal", adjustable="box")
    ax.xaxis.set_major_locator(MaxNLocator(4))
    ax.yaxis.set_major_locator(MaxNLocator(4))
    ax.tick_params(labelsize=style.TICK_SIZE, labelleft=True, pad=1.5)
    for spine in ax.spines.values():
        spine.set_edgecolor(color)
        spine.set_linewidth(1.2)
    X, Y, Z = geo.loss_grid(scene.surface.value_np, scene.plane, tuple(scene.surface.shape), data.box, n=41)
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.contour(X, Y, Z, levels=geo.log_levels(Z, n=9, inner=0.01), colors="0.7", linewidths=0.7, alpha=0.7)
    c = scene.coords[data.key]
    if whole_path:
        ax.plot(c[:, 0], c[:, 1], ls=run_style["ls"], color=color, lw=1.0, alpha=0.25, gid=f"zoom-path:{data.key}")
    seg = trail_segments(c, len(data.trail) - 1)
    if len(seg):
        rgba = fade_rgba(tint(color, TRAIL_TINT), len(seg), half_life=3.0)
        rgba[:, 3] *= TRAIL_ALPHA
        ax.add_collection(
            LineCollection(list(seg), colors=rgba, linewidths=TRAIL_LW, gid=f"zoom-trail:{data.key}", zorder=3)
        )
        # a dot at each point taken: unlike the pale lines of the updates after the one shown
        ax.scatter(*seg[:, 0].T, s=TRAIL_DOT**2, c=rgba, lw=0, zorder=3.1, gid=f"zoom-trail-points:{data.key}")
    x, y = float(data.position[0]), float(data.position[1])
    ax.plot([x], [y], "o", ms=START_MS, mfc="white", mec=color, mew=1.4, zorder=8, gid=f"zoom-position:{data.key}")
    arrows = _draw_chain(ax, data, color)
    if labels:
        _name_arrows(ax, data, arrows, color)
        keep_labels_inside(ax)


TRAIL_TINT, TRAIL_ALPHA, TRAIL_LW = 0.35, 0.8, 1.5  # the path so far: pale and thin, never read as an arrow
TRAIL_DOT = 4.0  # points: the dot at each of its updates' points
RING_MS, INSET_RING = 8.0, 0.6  # the ring round the point after the update, under the arrows; an inset's share
START_MS = 6.0  # the white disk where the update starts, over the arrows' tails (zorder 8), under their names
NEXT_Z = 6.9  # the point an update reaches: under the arrows, the last head points at it
ARROW_Z = 7.0  # the arrows: over the marks
LABEL_Z = 9.0  # the arrows' names, in a white halo: over the arrows they sit beside


def _draw_chain(ax: Axes, data: PanelData, color: ColorType) -> list[DrawnArrow]:
    """The arrows tip to tail, the point reached (a ring, not in an inset) and, for two terms, the step."""
    from matplotlib import patheffects

    assert data.box is not None
    span = float(np.ptp(data.box[0]))
    true = fit_arrows(data.chain, span)
    arrows = beside_folds(true, span, span / (ax.bbox.width * 72.0 / ax.figure.dpi))
    for i, a in enumerate(arrows):  # at their true length, each over the one before
        face, z = term_color(a.term, color), ARROW_Z + 0.1 * i
        q = ax.quiver(a.tail[:1], a.tail[1:], a.uv[:1], a.uv[1:], color=face, width=a.width, edgecolor=color, **QUIVER)
        q.set(linewidth=1.0, zorder=z, gid=f"zoom-arrow:{data.key}:{a.term}")
    if not arrows:
        return arrows
    tip = true[-1].tail + true[-1].uv  # the point reached, whether or not the last arrow is drawn beside a fold
    ring = style.ROLE_LOOKS["current"].marker
    ms = RING_MS * (INSET_RING if ax.get_axes_locator() else 1.0)  # an inset's smaller: its short arrows show
    ax.plot([tip[0]], [tip[1]], ring, ms=ms, mfc="none", mec=tint(color, 0.3), mew=1.4, zorder=NEXT_Z)
    ax.lines[-1].set_gid(f"zoom-next:{data.key}")
    if len(arrows) > 1:  # a plain line: the arrows' heads already say which way it goes
        outline = [patheffects.withStroke(linewidth=2.8, foreground="white")]
        (x0, y0), (x1, y1) = data.position, tip
        ax.plot([x0, x1], [y0, y1], color=color, lw=1.1, path_effects=outline, zorder=NEXT_Z - 0.05)  # under the arrows
        ax.lines[-1].set_gid(f"zoom-step:{data.key}")
    return arrows


FOLD_GAP = 0.5  # points between a folded arrow and the head of the arrow it turns back along


ALONG = np.cos(np.radians(15.0))  # ... and one turning less than 15° runs on along it


def lies_along(u: np.ndarray, v: np.ndarray) -> bool:  # ``v`` from ``u``'s tip turns back (FOLD) or runs on (ALONG)
    nu, nv = float(np.hypot(*u)), float(np.hypot(*v))
    cos = float(u @ v) / (nu * nv) if nu > 0 and nv > 0 and np.isfinite(nu * nv) else 0.0
    return cos < FOLD or cos > ALONG


def beside_folds(arrows: Sequence[DrawnArrow], span: float, per_point: float) -> list[DrawnArrow]:
    """``arrows``, each lying along the one before (``lies_along``) moved beside it to the side it turns to (the
    names go to the other), parallel, clear of that arrow's head (a panel ``span`` wide, ``per_point`` a point)."""
    out = list(arrows)
    for i in range(1, len(out)):
        u, v = out[i - 1].uv, out[i].uv
        if lies_along(u, v):
            side = np.array([-u[1], u[0]]) / np.hypot(*u) * (1.0 if float(u[0] * v[1] - u[1] * v[0]) >= 0 else -1.0)
            half = 0.5 * HEAD_WIDTH * out[i - 1].width + 0.5 * out[i].width  # of the panel's width, as quiver's
            out[i] = dataclasses.replace(out[i], tail=out[i].tail + side * (half * span + FOLD_GAP * per_point))
    return out


LABEL_GAP = 4.0  # points between an arrow's shaft and its name


def label_spots(chain: Sequence[tuple[str, ArrayLike, ArrayLike]]) -> list[tuple[np.ndarray, np.ndarray]]:
    """``[(anchor, side)]`` per arrow: its name beside its shaft's middle, outside the chain's turn (one lying along
    the one before, ``lies_along``, on the side ``beside_folds`` moves it to: off the other's shaft and head).

    >>> spots = label_spots([("m", (0, 0), (1.0, 0.0)), ("g", (1, 0), (0.0, 1.0))])   # a left turn
    >>> [(a.tolist(), s.round(3).tolist()) for a, s in spots]
    [([0.5, 0.0], [0.0, -1.0]), ([1.0, 0.5], [1.0, 0.0])]
    """
    vecs = [np.asarray(uv, np.float64) for _, _, uv in chain]
    nonzero = [v for v in vecs if np.all(np.isfinite(v)) and np.hypot(*v) > 0]
    turn = sum(float(u[0] * v[1] - u[1] * v[0]) for u, v in zip(nonzero, nonzero[1:]))
    out = []
    for i, ((_, tail, _), v) in enumerate(zip(chain, vecs)):
        tail = np.asarray(tail, np.float64)
        n = float(np.hypot(*v)) if np.all(np.isfinite(v)) else 0.0
        if n == 0:
            out.append((tail, np.array([0.0, 1.0])))
            continue
        left = np.array([-v[1], v[0]]) / n
        if i and lies_along(u := vecs[i - 1], v):
            left = left * (1.0 if float(left @ [-u[1], u[0]]) * float(u[0] * v[1] - u[1] * v[0]) >= 0 else -1.0)
            out.append((tail + v / 2, left))
            continue
        out.append((tail + v / 2, -left if turn > 0 else left))
    return out


def _name_arrows(ax: Axes, data: PanelData, arrows: Sequence[DrawnArrow], color: ColorType) -> None:
    from matplotlib import patheffects

    outline = [patheffects.withStroke(linewidth=2.5, foreground="white")]
    to_pt = lambda p: ax.transData.transform(p) * 72.0 / ax.figure.dpi  # noqa: E731
    span = float(np.ptp(data.box[0])) if data.box else 1.0
    px = ax.bbox.width * 72.0 / ax.figure.dpi  # points per panel width: quiver's width unit
    for i, (a, (anchor, side)) in enumerate(zip(arrows, label_spots([(a.term, a.tail, a.uv) for a in arrows]))):
        zero = not float(np.hypot(*a.uv)) > 0
        moved = i > 0 and not zero and lies_along(arrows[i - 1].uv, a.uv)  # drawn beside the one before (beside_folds)
        d = to_pt(anchor + side * 1e-3 * span) - to_pt(anchor)  # the side as seen, in points
        d = d / (float(np.hypot(*d)) or 1.0)
        # beside its shaft and (unless moved off it) the head of the arrow before, which its tail starts under
        half = max(0.5 * a.width, 0.5 * HEAD_WIDTH * arrows[i - 1].width if i and not moved else 0.0) * px
        name = upd.TERM_SHORT[a.term] + (" = 0" if zero else "")
        size = style.TICK_SIZE if ax.get_axes_locator() else style.LABEL_SIZE  # an inset's: smaller
        box = 0.31 * size * len(name) * abs(d[0]) + 0.6 * size * abs(d[1])  # centred: its box clear of the shaft
        off = (half + LABEL_GAP if not zero else RING_MS / 2 + 2.0) + box
        ax.annotate(
            name,
            anchor,  # pyright: ignore[reportArgumentType]  # stubs: xy is any (x, y) pair, an array too
            xytext=(float(off * d[0]), float(off * d[1])),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=size,
            fontweight="normal" if a.term == "gradient" else "bold",
            color=color,
            zorder=LABEL_Z,
            path_effects=outline,
            gid=f"zoom-label:{data.key}:{a.term}",
            annotation_clip=False,
            in_layout=False,
        )


def keep_labels_inside(ax: Axes, pad: float = 4.0) -> None:
    """Slide each arrow name of ``ax`` (and of its inset) back inside the axes where it sticks
    out, measured on the figure as laid out now; a name on another goes to its shaft's other side."""
    from ..core.figure import canvas_renderer
    from ..text.clashes import GAP

    for inset in ax.child_axes:
        keep_labels_inside(inset, pad + 1.5)  # pyright: ignore[reportArgumentType]  # an inset is an Axes
    renderer = canvas_renderer(ax.figure)
    frame = ax.get_window_extent(renderer)
    k = 72.0 / ax.figure.dpi
    # the names kept so far, and the panel's other words (an inset's 1/k)
    placed = [
        t.get_window_extent(renderer)
        for t in ax.texts
        if t.get_text() and t.get_visible() and not (t.get_gid() or "").startswith("zoom-label:")
    ]
    for t in ax.texts:
        if not (t.get_gid() or "").startswith("zoom-label:"):
            continue
        x, y = _SPOT.setdefault(t, t.xyann)  # pyright: ignore[reportAttributeAccessIssue]  # an Annotation's offset
        for flip in (False, True):  # its side, else the other side
            if flip:
                x, y = -x, -y
                ha, va = t.get_horizontalalignment(), t.get_verticalalignment()
                t.set_horizontalalignment("right" if ha == "left" else "left" if ha == "right" else "center")
                t.set_verticalalignment("top" if va == "bottom" else "bottom" if va == "top" else "center")
            t.xyann = (x, y)  # pyright: ignore[reportAttributeAccessIssue]
            b = t.get_window_extent(renderer)
            dx = max(0.0, frame.x0 + pad - b.x0) - max(0.0, b.x1 - frame.x1 + pad)
            dy = max(0.0, frame.y0 + pad - b.y0) - max(0.0, b.y1 - frame.y1 + pad)
            if dx or dy:
                t.xyann = (x + dx * k, y + dy * k)  # pyright: ignore[reportAttributeAccessIssue]
            if not any(t.get_window_extent(renderer).padded(2 * GAP).overlaps(o) for o in placed):
                break
        placed.append(t.get_window_extent(renderer))


_SPOT: weakref.WeakKeyDictionary[Any, tuple[float, float]] = weakref.WeakKeyDictionary()  # each name's own offset
