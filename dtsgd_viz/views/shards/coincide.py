"""Lines of the norm panels that lie on each other: where one block's line runs within a
drawn line width (in pixels) of a line drawn over it for a stretch of updates, the one
under is hidden. ``coincident`` finds those stretches (pure numpy on pixel heights);
``CoincideMarks`` (an object of the norm panel) draws the hidden line's stretch dashed over
the other one, so both colours show there, and names it in a note inside the panel
where the lines leave room ("CPU:2,6 under CPU:3,7 at updates 1-6"), or under the
panel when they leave none. The data is never moved.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.stretches import true_stretches
from ..mesh.layout_colors import label_ink

if TYPE_CHECKING:
    from matplotlib.path import Path
    from matplotlib.transforms import BboxBase
    from numpy.typing import ArrayLike

    from .lines import NormPanel
    from .view import ShardsView

Run = tuple[int, int, int, int]  # (under, over, i0, i1): a stretch of one line hidden under another

DASH = (0, (4.0, 3.0))  # the hidden line's stretch, over the line on it
MIN_RUN_PX = 24.0
MIN_RUN_FRAC = 0.08
"""A stretch shorter than this many pixels along x, or this fraction of the panel's
width, is a crossing at a shallow angle (a short piece hidden, the line seen going in
and out), not a line hidden under another."""
MAX_NAMED = 3
NOTE_PAD_PX = 3.0  # pixels kept free of lines around the note


def coincident(x_px: ArrayLike, y_px: ArrayLike, tol_px: float, min_px: float = MIN_RUN_PX) -> list[Run]:
    """``[(under, over, i0, i1)]``: for every pair of lines (columns of ``y_px``,
    pixel heights at the updates' pixel columns ``x_px``; NaN: not drawn; a later
    column is drawn over an earlier one), each run of consecutive updates ``i0..i1``
    where both are drawn and at most ``tol_px`` apart, spanning at least ``min_px``
    along x. Between two such updates the straight segments stay that close too.

    >>> y = np.column_stack([np.arange(6.0) * 10, np.arange(6.0) * 10 + [0, 1, 1, 9, 9, 0]])
    >>> coincident(np.arange(6.0) * 20, y, 2.0)
    [(0, 1, 0, 2)]
    """
    x = np.asarray(x_px, np.float64)
    y = np.asarray(y_px, np.float64)
    out = []
    for a in range(y.shape[1]):
        for b in range(a + 1, y.shape[1]):
            with np.errstate(invalid="ignore"):
                close = np.abs(y[:, a] - y[:, b]) <= tol_px  # NaN: False
            for i, j in true_stretches(close):
                if j > i and abs(x[j] - x[i]) >= min_px:
                    out.append((a, b, i, j))
    return out


def span_text(updates: Sequence[int] | np.ndarray, i0: int, i1: int) -> str:
    """``"updates 1-6"`` (``"update 4"`` for one)."""
    a, b = int(updates[i0]), int(updates[i1])
    return f"update {a}" if a == b else f"updates {a}-{b}"


def coincide_text(
    runs: Iterable[Run],
    names: Sequence[str],
    updates: Sequence[int] | np.ndarray,
    panels: Sequence[Sequence[str]] | None = None,
) -> str:
    """The note's words for ``coincident``'s runs (``(under, over, i0, i1)``); with
    ``panels`` (one tuple of panel names per run), where else each run is.

    >>> print(coincide_text([(2, 3, 0, 5)], ["A", "B", "CPU:2,6", "CPU:3,7"], range(1, 9)))
    CPU:2,6 under CPU:3,7
    at updates 1-6 (dashed there)
    >>> print(coincide_text([(0, 3, 0, 5), (2, 3, 6, 7)], "ABCD", range(1, 9)))
    under D (dashed there):
    A at updates 1-6
    C at updates 7-8
    """
    runs = list(runs)[:MAX_NAMED]
    where = [f" ({' and '.join(p)})" if p and len(p) > 1 else "" for p in (panels or [()] * len(runs))]
    if len(runs) == 1:
        ((a, b, i, j),) = runs
        return f"{names[a]} under {names[b]}{where[0]}\nat {span_text(updates, i, j)} (dashed there)"
    overs = sorted({b for _, b, _, _ in runs})
    if len(overs) == 1:
        return "\n".join(
            [f"under {names[overs[0]]} (dashed there):"]
            + [f"{names[a]} at {span_text(updates, i, j)}{w}" for (a, _, i, j), w in zip(runs, where)]
        )
    return "\n".join(
        [f"{names[a]} under {names[b]} at {span_text(updates, i, j)}{w}" for (a, b, i, j), w in zip(runs, where)]
        + ["(dashed there)"]
    )


def _line_points(ax, artists, step=2.0):
    """Pixel points along every visible line of ``artists`` (``step`` px apart), every
    segment of a line sampled at once."""
    pts = []
    for line in artists:
        if not line.get_visible() or not len(line.get_xydata()):
            continue
        xy = line.get_transform().transform(np.asarray(line.get_xydata(), np.float64))
        xy = xy[np.isfinite(xy).all(1)]
        if len(xy) == 1:
            pts.append(xy)
        if len(xy) < 2:
            continue
        d = np.diff(xy, axis=0)
        n = np.maximum(1, (np.hypot(d[:, 0], d[:, 1]) / step).astype(np.int64))
        seg = np.repeat(np.arange(len(d)), n + 1)  # n + 1 points per segment
        first = np.repeat(np.cumsum(n + 1) - (n + 1), n + 1)
        t = (np.arange(len(seg)) - first) / n[seg]
        pts.append(xy[:-1][seg] + t[:, None] * d[seg])
    return np.concatenate(pts) if pts else np.empty((0, 2))


def occupancy(
    ax_box: BboxBase, points: np.ndarray, boxes: Iterable[BboxBase], polys: Sequence[Path], cell: float = 1.0
) -> tuple[np.ndarray, float, float]:
    """``(taken, x0, y0)``: which ``cell``-pixel cells of ``ax_box`` (rows: y up) hold a
    point of ``points``, lie in a box of ``boxes`` or in a filled path of ``polys``
    (pixels), as a summed-area table ``taken`` (``rect_taken`` reads it) and the
    pixel of its cell (0, 0)."""
    x0, y0 = np.floor(ax_box.x0) - 1, np.floor(ax_box.y0) - 1
    w = int(np.ceil((ax_box.x1 + 1 - x0) / cell)) + 1
    h = int(np.ceil((ax_box.y1 + 1 - y0) / cell)) + 1
    grid = np.zeros((h, w), bool)
    if len(points):
        ix = np.floor((points[:, 0] - x0) / cell).astype(np.int64)
        iy = np.floor((points[:, 1] - y0) / cell).astype(np.int64)
        ok = (ix >= 0) & (ix < w) & (iy >= 0) & (iy < h)
        grid[iy[ok], ix[ok]] = True
    for b in boxes:
        c0, c1 = (max(0, int(np.floor((v - x0) / cell))) for v in (b.x0, b.x1))
        r0, r1 = (max(0, int(np.floor((v - y0) / cell))) for v in (b.y0, b.y1))
        grid[r0 : r1 + 1, c0 : c1 + 1] = True
    if polys:
        cx = x0 + (np.arange(w) + 0.5) * cell
        cy = y0 + (np.arange(h) + 0.5) * cell
        centres = np.stack(np.meshgrid(cx, cy), -1).reshape(-1, 2)
        for p in polys:
            grid |= p.contains_points(centres).reshape(h, w)
    table = np.zeros((h + 1, w + 1), np.int64)
    table[1:, 1:] = grid.cumsum(0).cumsum(1)
    return table, x0, y0


def rect_taken(occ: tuple[np.ndarray, float, float], lo: np.ndarray, hi: np.ndarray, cell: float = 1.0) -> np.ndarray:
    """Whether each rectangle ``lo..hi`` (``(n, 2)`` pixel corners) holds a taken cell of
    ``occ`` (``occupancy``)."""
    table, x0, y0 = occ
    h, w = table.shape[0] - 1, table.shape[1] - 1
    c0 = np.clip(np.floor((lo[:, 0] - x0) / cell).astype(np.int64), 0, w)
    c1 = np.clip(np.floor((hi[:, 0] - x0) / cell).astype(np.int64) + 1, 0, w)
    r0 = np.clip(np.floor((lo[:, 1] - y0) / cell).astype(np.int64), 0, h)
    r1 = np.clip(np.floor((hi[:, 1] - y0) / cell).astype(np.int64) + 1, 0, h)
    return (table[r1, c1] - table[r0, c1] - table[r1, c0] + table[r0, c0]) > 0


def free_spot(
    ax_box: BboxBase,
    size: tuple[float, float],
    points: ArrayLike,
    boxes: Sequence[BboxBase],
    polys: Sequence[Path],
    near: Sequence[float],
    pad: float = NOTE_PAD_PX,
) -> tuple[float, float] | None:
    """The lower-left corner (pixels) of a ``size`` box inside ``ax_box`` clear of every
    point of ``points``, of ``boxes`` (``Bbox``) and of the filled ``polys`` (paths in
    pixels), ``pad`` pixels around it, the one nearest ``near`` of a 40 x 24 lattice of
    corners; None when there is none. One pass over the pixels (``occupancy``), then
    each corner in constant time, however many points the lines have."""
    w, h = size
    x0, y0, x1, y1 = ax_box.x0 + 7, ax_box.y0 + 5, ax_box.x1 - 7 - w, ax_box.y1 - 5 - h
    if x1 < x0 or y1 < y0:
        return None
    occ = occupancy(ax_box, np.asarray(points, np.float64).reshape(-1, 2), boxes, polys)
    corners = np.stack(np.meshgrid(np.linspace(x0, x1, 40), np.linspace(y0, y1, 24), indexing="ij"), -1).reshape(-1, 2)
    free = ~rect_taken(occ, corners - pad, corners + [w + pad, h + pad])
    if not free.any():
        return None
    d = np.hypot(corners[:, 0] + w / 2 - near[0], corners[:, 1] + h / 2 - near[1])
    best = int(np.flatnonzero(free)[np.argmin(d[free])])
    return float(corners[best, 0]), float(corners[best, 1])


class CoincideMarks:
    """The norm panels' hidden-line marks (see the module docstring): an object of the
    ``NormPanel`` (``norm``), whose lines and data it reads; ``view``: the ``ShardsView``.
    ``runs``: ``{axes: [(under, over, i0, i1)]}`` of the stretches marked; ``artists``:
    the dashes and notes drawn for them."""

    def __init__(self, view: ShardsView, norm: NormPanel):
        self.view, self.norm = view, norm
        self.artists: list = []
        self.runs: dict = {}

    def _coincide_sets(self):
        """``(name, axes, lines)`` of the log panels: on the linear mean panel, lines
        meeting at 0 are the finding (every mean near 0), not one line hiding another."""
        if self.view.stats_only:
            panels = self.norm.stat_panels
            return [(k, panels.axes[k], panels.lines[k]) for k in panels.lines if panels.axes[k].get_yscale() == "log"]
        return [("norm", self.norm.ax, self.norm.lines)] if self.norm.ax is not None else []

    def _hidden_runs(self, ax, lines):
        """``coincident``'s runs on ``ax`` among its visible lines, in block columns."""
        data = np.array(self.norm.data[ax], np.float64)
        shown = [g for g, line in enumerate(lines) if line.get_visible()]
        if len(shown) < 2:
            return []
        log = ax.get_yscale() == "log"
        with np.errstate(invalid="ignore", divide="ignore"):
            ok = np.isfinite(data) & ((data > 0) if log else True)
        pts = np.column_stack(
            [np.repeat(self.view.updates, data.shape[1]).astype(np.float64), np.where(ok, data, 1.0).ravel()]
        )
        pix = ax.transData.transform(pts).reshape(data.shape[0], data.shape[1], 2)
        y = np.where(ok, pix[:, :, 1], np.nan)[:, shown]
        tol = max(lines[g].get_linewidth() for g in shown) * ax.figure.dpi / 72
        least = max(MIN_RUN_PX, MIN_RUN_FRAC * ax.bbox.width)
        return [(shown[a], shown[b], i, j) for a, b, i, j in coincident(pix[:, 0, 0], y, tol, least)]

    def mark_coincident(self) -> None:
        """Dash every hidden stretch over the line on it and name them, each once, in
        the first panel it is on (again after the data, the band or the layout
        changed). ``coincide_runs``: ``{axes: [(under, over, i0, i1)]}``."""
        for artist in self.artists:
            artist.remove()
        self.artists, self.runs = [], {}
        names = [p.label for p in self.view.patches]
        said = {}  # (under, over, i0, i1) -> [panel names], the first panel holds the note
        notes = {}
        for label, ax, lines in self._coincide_sets():
            runs = self._hidden_runs(ax, lines)
            if not runs:
                continue
            self.runs[ax] = runs
            for a, b, i, j in runs:
                line = lines[a]
                (dash,) = ax.plot(
                    *self.norm.thinned(ax, self.norm.data[ax][:, a], i, j + 1),
                    color=line.get_color(),
                    lw=line.get_linewidth(),
                    ls=DASH,
                    zorder=2.2,
                    gid=f"coincide-dash-{a}-{b}",
                )
                self.artists.append(dash)
                if (a, b, i, j) not in said:
                    notes.setdefault(ax, []).append((a, b, i, j))
                said.setdefault((a, b, i, j), []).append(label)
        for ax, runs in notes.items():
            panels = [said[r] if self.view.stats_only else () for r in runs]
            self._coincide_note(ax, runs, names, coincide_text(runs, names, self.view.updates, panels))

    def _coincide_note(self, ax, runs, names, text):
        color = label_ink(self.view.styles[runs[0][0]][0]) if len(runs) == 1 else "0.25"
        note = ax.text(
            0,
            0,
            text,
            transform=None,
            fontsize=style.NOTE_SIZE,
            color=color,
            ha="left",
            va="bottom",
            zorder=8,
            gid="coincide-note",
            bbox=dict(fc="white", ec="none", alpha=0.85, pad=1.0),
        )
        note.set_in_layout(False)
        self.artists.append(note)
        fig = ax.figure
        renderer = fig.canvas.get_renderer() if hasattr(fig.canvas, "get_renderer") else None
        spot = None
        if renderer is not None:
            box = note.get_window_extent(renderer)
            a, b, i, j = runs[0]
            mid = ax.transData.transform(
                (self.view.updates[(i + j) // 2], np.nanmean(self.norm.data[ax][i : j + 1, a]))
            )
            # the dashes lie on the lines they mark: the lines alone are the obstacles
            obstacles = [line for line in ax.lines if not str(line.get_gid()).startswith("coincide-dash")]
            boxes = [
                t.get_window_extent(renderer) for t in ax.texts if t is not note and t.get_visible() and t.get_text()
            ]
            if ax.get_legend() is not None:
                boxes.append(ax.get_legend().get_window_extent(renderer))
            polys = [
                p.transformed(c.get_transform())
                for c in ax.collections
                if c.get_visible() and str(c.get_gid()).startswith(("norm-band", "norm-ribbon"))
                for p in c.get_paths()
            ]
            spot = free_spot(ax.bbox, (box.width, box.height), _line_points(ax, obstacles), boxes, polys, mid)
        if spot is not None:
            note.set_transform(ax.transAxes)
            note.set_position(tuple(ax.transAxes.inverted().transform(spot)))
            return
        # no room among the lines: under the panel's x label (or the note already there)
        note.remove()
        self.artists.remove(note)
        under = self.norm.coast_note
        stat_axes = self.norm.stat_panels.axes
        bottom = stat_axes[list(stat_axes)[-1]] if self.view.stats_only else ax
        note = bottom.annotate(
            text,
            (0.5, 0.0),
            xycoords=under if under is not None else bottom.xaxis.label,
            xytext=(0, -2),
            textcoords="offset points",
            ha="center",
            va="top",
            fontsize=style.NOTE_SIZE,
            color=color,
            annotation_clip=False,
            gid="coincide-note",
        )
        self.artists.append(note)
