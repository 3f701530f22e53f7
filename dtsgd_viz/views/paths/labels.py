"""The scoring the explorer's callouts are placed with (``widgets.explorer_figure``):
``panel_obstacles`` collects what a label must keep off on a path panel, in display
pixels, and ``spot_costs`` / ``leader_cost`` score candidate spots against it. The path
figures themselves place no labels: they name their runs in a legend."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure, SubFigure
    from matplotlib.text import Text
    from numpy.typing import ArrayLike

    from .frames import PathArtists

__all__ = [
    "renderer_of",
    "Obstacles",
    "spot_costs",
    "place_text",
    "panel_obstacles",
    "text_box",
    "boxes_overlap",
    "leader_cost",
    "TOUCH",
    "HARD",
]

SAMPLE_PX = 2.0  # path samples this far apart
PAD_PX = 2.0  # a label keeps this many pixels off a path
HARD = 400.0  # the cost of covering a marker, a box or another label
OUTSIDE = 1e5  # the cost of leaving the frame
REST_WEIGHT = 0.3  # a sample of a thin whole run after the update shown, against a path's 1
TOUCH = 150.0  # the cost of covering any path at all (a label kept clear of every run)
WIDTH_UNIT = 2.1  # points: a path sample of a line this wide weighs 1 (momentum's; Nesterov's 1.4)


def renderer_of(fig: Figure | SubFigure) -> RendererBase:
    """A renderer to measure ``fig``'s texts with (a bare ``Figure``'s canvas has none)."""
    fig = fig.figure  # the root of a SubFigure
    get = getattr(fig.canvas, "get_renderer", None)
    return get() if get is not None else fig._get_renderer()  # pyright: ignore[reportAttributeAccessIssue]  # private, not in the stubs


def boxes_overlap(a: Sequence[float], b: Sequence[float], pad: float = 0.0) -> bool:
    """Whether the boxes ``(x0, y0, x1, y1)`` ``a`` and ``b`` overlap (grown by ``pad``)."""
    return a[0] - pad < b[2] and a[2] + pad > b[0] and a[1] - pad < b[3] and a[3] + pad > b[1]


class Obstacles:
    """What a label must keep off, in display pixels: ``points`` (path samples, soft:
    each covered one costs 1) and ``boxes`` (markers, zoom boxes, labels: each overlap
    costs ``HARD``), inside ``frame`` ``(x0, y0, x1, y1)``."""

    def __init__(self, frame: Iterable[float]) -> None:
        self.frame = tuple(float(v) for v in frame)
        self._points = [np.zeros((0, 2))]
        self._weights = [np.zeros(0)]
        self.boxes: list[tuple[float, ...]] = []

    @property
    def points(self) -> np.ndarray:
        return np.concatenate(self._points)

    @property
    def weights(self) -> np.ndarray:
        return np.concatenate(self._weights)

    def add_polyline(
        self, xy: ArrayLike | Sequence[ArrayLike], spacing: float = SAMPLE_PX, weight: float = 1.0
    ) -> None:
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        self._points.append(np.concatenate([xy, along_segments(xy, spacing, 2000)]))
        self._weights.append(np.full(len(self._points[-1]), float(weight)))

    def add_box(self, box: Iterable[float]) -> None:
        self.boxes.append(tuple(float(v) for v in box))

    def add_marker(self, xy: Sequence[float] | np.ndarray, radius: float) -> None:
        x, y = xy
        if np.isfinite(x) and np.isfinite(y):
            self.add_box((x - radius, y - radius, x + radius, y + radius))


def along_segments(xy: ArrayLike, spacing: float, most: int) -> np.ndarray:
    """Points along each segment of the polyline ``xy`` (m, 2): for each, its ends and
    evenly spaced points between, about ``spacing`` apart (2 to ``most`` a segment), as
    ``np.linspace`` spaces them; one pass for the whole line."""
    xy = np.asarray(xy, np.float64).reshape(-1, 2)
    if len(xy) < 2:
        return np.zeros((0, 2))
    a, d = xy[:-1], np.diff(xy, axis=0)
    n = np.minimum(most, np.maximum(2, (np.hypot(d[:, 0], d[:, 1]) / spacing).astype(np.int64) + 1))
    seg = np.repeat(np.arange(len(a)), n)
    j = np.arange(len(seg)) - np.repeat(np.cumsum(n) - n, n)
    t = j / np.repeat(n - 1, n).astype(np.float64)
    return a[seg] + t[:, None] * d[seg]


def spot_costs(
    obs: Obstacles,
    boxes: ArrayLike,
    pad: float = PAD_PX,
    points: tuple[np.ndarray, np.ndarray] | None = None,
    touch: float = 0.0,
) -> np.ndarray:
    """``spot_cost`` of each of ``boxes`` (k, 4) at once (the same numbers, one pass
    over the path samples per box instead of one Python call)."""
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    pts, w = (obs.points, obs.weights) if points is None else points
    out = np.zeros(len(b))
    if len(pts):
        x, y = pts[:, 0], pts[:, 1]
        for s in range(0, len(b), 32):  # (32, points) booleans at a time
            q = b[s : s + 32]
            under = (x >= q[:, :1] - pad) & (x <= q[:, 2:3] + pad) & (y >= q[:, 1:2] - pad) & (y <= q[:, 3:4] + pad)
            out[s : s + 32] = under.astype(np.float64) @ w + np.where(under.any(axis=1), touch, 0.0)
    if obs.boxes:
        o = np.asarray(obs.boxes, np.float64)
        hit = (
            (b[:, None, 0] - 1.0 < o[None, :, 2])
            & (b[:, None, 2] + 1.0 > o[None, :, 0])
            & (b[:, None, 1] - 1.0 < o[None, :, 3])
            & (b[:, None, 3] + 1.0 > o[None, :, 1])
        )
        out += HARD * np.count_nonzero(hit, axis=1)
    f = obs.frame
    off = (b[:, 0] < f[0] + 1) | (b[:, 1] < f[1] + 1) | (b[:, 2] > f[2] - 1) | (b[:, 3] > f[3] - 1)
    return out + np.where(off, OUTSIDE, 0.0)


def leader_cost(
    obs: Obstacles,
    start: ArrayLike,
    end: ArrayLike,
    near: float = 2.0,
    points: tuple[np.ndarray, np.ndarray] | None = None,
) -> float:
    """The weight of the path samples within ``near`` pixels of the leader from ``start``
    to ``end`` (display pixels): what a thin line there would cross."""
    pts, w = (obs.points, obs.weights) if points is None else points
    a, b = np.asarray(start, np.float64), np.asarray(end, np.float64)
    d = b - a
    n2 = float(d @ d)
    if n2 < 1e-9 or not len(pts):
        return 0.0
    t = np.clip((pts - a) @ d / n2, 0.0, 1.0)
    gap = np.hypot(*(pts - (a + t[:, None] * d)).T)
    return float(w[gap < near].sum())


def text_box(text: Text, renderer: RendererBase, pad: float = 2.0) -> tuple[float, float, float, float]:
    """The display box of ``text`` (with its bbox patch's pad, if any; an annotation's
    leader left out), grown by ``pad``."""
    from matplotlib.text import Text

    e = Text.get_window_extent(text, renderer)
    patch = text.get_bbox_patch()
    if patch is not None:
        pad += getattr(patch.get_boxstyle(), "pad", 0.0) * float(text.get_fontsize()) * text.figure.dpi / 72.0
    return (e.x0 - pad, e.y0 - pad, e.x1 + pad, e.y1 + pad)


def place_text(text: Text, box: Sequence[float], anchor: Sequence[float] | np.ndarray | None = None) -> None:
    """Centre ``text`` (an ``Annotation`` with offset-points coordinates from ``anchor``,
    or a data-coordinate ``Text``) on the display ``box``."""
    from matplotlib.text import Annotation

    ax = text.axes
    assert ax is not None  # a text on a panel
    cx, cy = (box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0
    text.set_horizontalalignment("center")
    text.set_verticalalignment("center")
    if hasattr(text, "xyann") and anchor is not None:
        assert isinstance(text, Annotation)  # (a Text with ``xyann``)
        k = 72.0 / ax.figure.dpi
        text.xyann = ((cx - anchor[0]) * k, (cy - anchor[1]) * k)
    else:
        x, y = ax.transData.inverted().transform((cx, cy))
        text.set_position((x, y))


def panel_obstacles(art: PathArtists, skip: Collection[Artist] = ()) -> Obstacles:
    """The ``Obstacles`` of the path panel of ``art`` (a ``PathArtists``): every visible
    line (paths, whole runs, casings: sampled; their markers and the start, star and
    rings: boxes), the arrows, the zoom boxes (their edges) and the notes; ``skip``:
    artists to leave out (the labels being placed)."""
    from matplotlib.text import Annotation

    ax = art.ax_path
    f = ax.get_window_extent()
    obs = Obstacles((f.x0, f.y0, f.x1, f.y1))
    px = ax.figure.dpi / 72.0
    for line in ax.lines:
        if not line.get_visible() or line in skip:
            continue
        with np.errstate(invalid="ignore"):
            # where it is drawn: a path in a lane (``path_lanes``) is shifted off its data
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), np.float64).reshape(-1, 2))
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        if line.get_linestyle() not in ("None", "none", " ", ""):
            # a thin light whole run under the paths hides less under a name than a path
            # and a wide line (Nesterov's) more than a thin one
            rest = (line.get_gid() or "").startswith("path-rest:")
            obs.add_polyline(xy, weight=REST_WEIGHT if rest else max(0.5, line.get_linewidth() / WIDTH_UNIT))
        if line.get_marker() not in ("None", "none", "", " ", None):
            r = 0.5 * line.get_markersize() * px + 1.0
            gid = line.get_gid() or ""
            if gid in ("start", "minimum") or gid.startswith("position:"):
                for p in xy:
                    obs.add_marker(p, r + 1.0)
            else:  # a path's own markers: on its line, soft
                obs.add_polyline(xy, spacing=r)
    for q in art.arrows.values():
        if not q.get_visible():
            continue
        # masked arrays (the stubs say ArrayLike)
        offsets, u, v = cast("np.ndarray", q.get_offsets()), cast("np.ndarray", q.U), cast("np.ndarray", q.V)
        tail = np.asarray(offsets[0], np.float64)
        tip = tail + [float(u[0]), float(v[0])]
        obs.add_polyline(ax.transData.transform([tail, tip]))
    for rect in art.zoom_boxes.values():
        x, y, w, h = rect.get_x(), rect.get_y(), rect.get_width(), rect.get_height()
        if w > 0 and h > 0:
            pts = ax.transData.transform([(x, y), (x + w, y), (x + w, y + h), (x, y + h), (x, y)])
            obs.add_polyline(pts)
            for _ in range(6):  # its edges weigh more than one path
                obs.add_polyline(pts)
    renderer = renderer_of(ax.figure)
    for t in ax.texts:  # the notes, callouts and names already placed, and their leaders
        if t.get_visible() and t.get_text() and t not in skip:
            box = text_box(t, renderer)
            obs.add_box(box)
            arrow = getattr(t, "arrow_patch", None)
            if arrow is not None and arrow.get_visible():
                assert isinstance(t, Annotation)  # (a text with a leader)
                end = ((box[0] + box[2]) / 2.0, (box[1] + box[3]) / 2.0)
                obs.add_polyline([ax.transData.transform(t.xy), end])
    return obs
