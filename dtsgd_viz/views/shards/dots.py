"""How the norm panel of ``ShardsView`` draws many lines and the dots at the shown update
so they stay apart: lines thinner when many of them share the panel or when a line
zig-zags (heavy-ball's bounces, a few updates each, drawn thick, fill into a band), and
a dot on the shown update's line for every line drawn there but those whose line lies
within a line width (in pixels) of a kept one's, which the label then names as
coinciding (the highest and the lowest always kept: the blocks the figure's title
names); crowded dots are drawn smaller (``dot_size``), never dropped.

Pure functions of the data and an axes' transform; ``_shard_lines`` and
``_shard_labels`` call them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike

LINE_WIDTH = 1.6  # a few lines, smooth
THIN_WIDTH = 1.1  # more than MANY_LINES lines drawn one by one: they tangle less
ZIGZAG_WIDTH = 0.9  # a line that turns at most updates: its zig-zag still reads
MANY_LINES = 4
ZIGZAG = 0.4
"""A line zig-zags when its log norm turns (its slope changes sign) at more than this
fraction of its updates."""
DOT_SIZE = 6.5  # points: the dots on the shown update's line (a dark ring)
DOT_CORE = 3.9  # points: the middle of each dot, in its block's colour
DOTS_NOTE = " (dots: block norms)"  # the step label names the dots on its line


def zigzags(y: ArrayLike) -> bool:
    """Whether a line of norms ``y`` turns at more than ``ZIGZAG`` of its updates.

    >>> zigzags(np.exp(-np.arange(30.0))), zigzags(2.0 + np.cos(np.pi * np.arange(30)))
    (False, True)
    """
    y = np.asarray(y, np.float64)
    y = y[np.isfinite(y) & (y > 0)]
    if len(y) < 8:
        return False
    d = np.diff(np.log10(y))
    d = d[d != 0]
    return len(d) > 2 and float(np.mean(np.sign(d[1:]) != np.sign(d[:-1]))) > ZIGZAG


def line_width(data: ArrayLike, g: int) -> float:
    """The width of block ``g``'s line among the lines of ``data`` (updates x blocks)."""
    data = np.asarray(data)
    if zigzags(data[:, g]):
        return ZIGZAG_WIDTH
    return THIN_WIDTH if data.shape[1] > MANY_LINES else LINE_WIDTH


def spaced(pixels: ArrayLike, values: ArrayLike, gap: float) -> np.ndarray:
    """Which dots to keep (bool per dot): the highest and lowest ``values`` always, then
    each other dot, from the highest down, while its pixel y (``pixels``) is at least
    ``gap`` from every dot kept. NaN values are never kept.

    >>> spaced(np.array([0.0, 2.0, 4.0, 30.0]), np.array([1.0, 2.0, 3.0, 9.0]), 5.0)
    array([ True, False, False,  True])
    """
    v = np.asarray(values, np.float64)
    p = np.asarray(pixels, np.float64)
    ok = np.isfinite(v) & np.isfinite(p)
    keep = np.zeros(len(v), bool)
    cols = np.flatnonzero(ok)
    if not len(cols):
        return keep
    order = cols[np.argsort(-v[cols], kind="stable")]
    keep[[order[0], order[-1]]] = True
    for g in order[1:-1]:
        if np.all(np.abs(p[keep] - p[g]) >= gap):
            keep[g] = True
    return keep


def spaced_dots(ax: Axes, x: float, y: ArrayLike, dpi: float, widths: ArrayLike | None = None) -> np.ndarray:
    """``y`` with NaN for the dots at update ``x`` on ``ax`` whose lines coincide there
    with the line of a dot kept: their pixel heights within the wider line's drawn width
    (``widths``: each line's width in points, default ``LINE_WIDTH``; ``spaced``). Every
    other dot is drawn, however close: a dot is dropped only where its line cannot be
    told from another's."""
    y = np.array(y, np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        drawable = np.isfinite(y) & ((y > 0) if ax.get_yscale() == "log" else True)
    y[~drawable] = np.nan
    pts = np.column_stack([np.full(len(y), float(x)), np.where(drawable, y, 1.0)])
    pix = ax.transData.transform(pts)[:, 1]
    w = np.full(len(y), LINE_WIDTH) if widths is None else np.asarray(widths, np.float64)
    keep = spaced(np.where(drawable, pix, np.nan), y, float(np.max(w)) * dpi / 72)
    return np.where(keep, y, np.nan)


DOT_MIN = 3.6  # points: the smallest dot drawn where dots crowd
DOT_EDGE = 1.2  # points: the white edge around each dot


def dot_size(ax: Axes, x: float, y: ArrayLike, dpi: float) -> float:
    """The dots' size (points) at update ``x`` on ``ax`` for the drawn ``y`` (NaN: no dot):
    ``DOT_SIZE``, or smaller (to ``DOT_MIN``) so that the two closest dots, edges
    included, do not overlap.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure(figsize=(4, 4), dpi=72).add_axes([0, 0, 1, 1])
    >>> _ = ax.set_ylim(0, 288)   # a pixel a unit
    >>> dot_size(ax, 0.5, [10.0, 100.0], 72), dot_size(ax, 0.5, [10.0, 15.0, np.nan], 72)
    (6.5, 3.8)
    """
    y = np.asarray(y, np.float64)
    ok = np.isfinite(y)
    if ok.sum() < 2:
        return DOT_SIZE
    pix = np.sort(ax.transData.transform(np.column_stack([np.full(ok.sum(), float(x)), y[ok]]))[:, 1])
    gap = float(np.diff(pix).min()) * 72 / dpi
    return float(np.clip(gap - DOT_EDGE, DOT_MIN, DOT_SIZE))


ZERO_Y, ZERO_STEP = 0.03, 0.045  # axes fraction: the first zero mark, the next one up
ZERO_STEP_POINTS = 6.5  # points between zero marks hung under the bottom edge


def stacked(rows: ArrayLike, start: float = ZERO_Y, step: float = ZERO_STEP) -> np.ndarray:
    """The heights (axes fraction) of the zero marks at updates ``rows`` (one per mark):
    ``start``, each further block at the same update ``step`` further (up from the bottom
    edge on an axis holding no other data; ``start`` 0 and a negative ``step``: on the
    edge and hung under it, off the data's range), so four blocks at 0 show four circles,
    not one.

    >>> stacked(np.array([0, 0, 0, 3])).round(3).tolist()
    [0.03, 0.075, 0.12, 0.03]
    >>> stacked(np.array([0, 0, 3]), 0.0, -0.02).round(3).tolist()
    [0.0, -0.02, 0.0]
    """
    rows = np.asarray(rows)
    if not len(rows):
        return np.zeros(0)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    first = np.flatnonzero(np.concatenate([[True], np.diff(sorted_rows) != 0]))
    place = np.arange(len(rows)) - np.repeat(first, np.diff(np.append(first, len(rows))))
    out = np.empty(len(rows))
    out[order] = start + step * place  # the k-th mark at an update: k steps from start
    return out


MARK_PX = 8.0
"""Pixels between two marks of one block along the update axis (a circle or an X is
about that wide): a long run's marks are thinned to one per that many pixels."""


def mark_rows(px: ArrayLike, marked: ArrayLike, width: float = MARK_PX) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, blocks)`` of the marks to draw for ``marked`` (updates x blocks, bool;
    ``px``: each update's pixel x, ascending): one row per ``width`` pixels, the first
    row of those pixels that has a mark, marking every block marked anywhere in them, so
    the marks of a stretch of updates stay one per mark width however long the run.

    >>> marked = np.zeros((6, 2), bool); marked[[0, 1, 4], [0, 1, 0]] = True
    >>> [v.tolist() for v in mark_rows(np.arange(6.0), marked, 3.0)]   # rows 0-2, 3-5
    [[0, 0, 4], [0, 1, 0]]
    """
    marked = np.asarray(marked, bool)
    if marked.ndim == 1:
        marked = marked[:, None]
    hit = np.flatnonzero(marked.any(1))
    if not len(hit):
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    px = np.asarray(px, np.float64)
    bins = np.floor((px[hit] - px[hit[0]]) / width).astype(np.int64)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(bins) != 0]))
    held = np.logical_or.reduceat(marked[hit], starts, axis=0)
    r, g = np.nonzero(held)
    return hit[starts][r], g


def dots_note(values: ArrayLike, shown: ArrayLike, names: Sequence[str] | None = None) -> str:
    """What the dots on the shown update's line are: every block's norm, the highest and
    the lowest alone, or every block's norm with some of them drawn as one dot
    (``spaced_dots`` drops a dot only where its line lies within a line width of a kept
    dot's: those blocks' lines coincide there and share one). With ``names`` (one per block), the blocks sharing a
    dot are named
    (each hidden dot with the kept one nearest it), on a line of their own.

    >>> dots_note([1.0, 2.0, 3.0], [1.0, np.nan, 3.0])
    ' (dots: highest, lowest)'
    >>> dots_note([1.0, 2.0, 2.01, 3.0], [1.0, 2.0, np.nan, 3.0])
    ' (dots: block norms, two coincide)'
    >>> print(dots_note([1.0, 2.0, 2.01, 3.0], [1.0, 2.0, np.nan, 3.0], "ABCD"))
     (dots: block norms;
    B and C coincide)
    """
    v, s = np.asarray(values, np.float64), np.asarray(shown, np.float64)
    drawable, kept = int(np.sum(np.isfinite(v) & (v > 0))), int(np.sum(np.isfinite(s)))
    if kept >= drawable or kept < 2:
        return DOTS_NOTE
    shared = _shared_dots(v, s) if names is not None else {}
    if shared and len(shared) <= 2:  # which lines coincide, named
        assert names is not None  # shared is found only with names
        said = "; ".join(
            _group([names[g] for g in sorted([h, *hidden])]) + " coincide" for h, hidden in sorted(shared.items())
        )
        return f" (dots: block norms;\n{said})"
    if kept == 2:
        return " (dots: highest, lowest)"
    return (
        " (dots: block norms, two coincide)" if drawable - kept == 1 else " (dots: block norms, close ones share a dot)"
    )


def _shared_dots(values, shown) -> dict:
    """``{kept block: [hidden blocks]}``: each block with a norm but no dot of its own,
    under the kept dot nearest it (in log norm)."""
    ok = np.isfinite(values) & (values > 0)
    kept = np.flatnonzero(np.isfinite(shown))
    out: dict = {}
    for g in np.flatnonzero(ok & ~np.isfinite(shown)):
        near = (
            np.abs(np.log(values[kept]) - np.log(values[g]))
            if np.all(values[kept] > 0)
            else np.abs(values[kept] - values[g])
        )
        h = int(kept[np.argmin(near)])
        out.setdefault(h, []).append(int(g))
    return out


def _group(names) -> str:
    """Blocks sharing one dot, short: ``"CPU:0,1,3"`` for names with one ``prefix:``
    and more than two of them, else ``_and`` (``"CPU:1 and CPU:2"``): the note stays
    narrower than the panel.

    >>> _group(["CPU:0", "CPU:1", "CPU:3"]), _group(["CPU:1", "CPU:2"]), _group(["B", "C"])
    ('CPU:0,1,3', 'CPU:1 and CPU:2', 'B and C')
    """
    heads = {n.rpartition(":")[0] for n in names}
    if len(names) > 2 and len(heads) == 1 and next(iter(heads)):
        return next(iter(heads)) + ":" + ",".join(n.rpartition(":")[2] for n in names)
    return _and(names)


def _and(names) -> str:
    """``"A and B"``, ``"A, B and C"``."""
    names = list(names)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


RIBBON_LINE_WIDTH = 0.6  # a band line alternating every update, over its ribbon


def column_envelope(
    x: ArrayLike, lo: ArrayLike, hi: ArrayLike, columns: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(indices, lo, hi)``: a band ``lo..hi`` over ascending ``x`` thinned to ``columns``
    equal spans of x: each span's first and last point, both at the span's lowest ``lo``
    and highest ``hi`` (NaN only where the span has none), so the thinned band covers
    every point of the band's.

    >>> i, lo, hi = column_envelope(np.arange(6.0), np.array([1, 0, 2, 3, 3, 1.0]),
    ...                             np.array([2, 5, 4, 4, 6, 2.0]), 2)
    >>> i.tolist(), lo.tolist(), hi.tolist()
    ([0, 2, 3, 5], [0.0, 0.0, 1.0, 1.0], [5.0, 5.0, 6.0, 6.0])
    """
    x = np.asarray(x, np.float64)
    lo, hi = np.asarray(lo, np.float64), np.asarray(hi, np.float64)
    n = len(x)
    if n <= 2 * max(1, int(columns)):
        return np.arange(n), lo, hi
    span = x[-1] - x[0]
    bucket = np.clip(((x - x[0]) * (columns / span)).astype(np.int64), 0, columns - 1)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(bucket) != 0]))
    ends = np.append(starts[1:], n) - 1
    low = np.fmin.reduceat(lo, starts)  # fmin/fmax: NaN only where all are
    high = np.fmax.reduceat(hi, starts)
    idx = np.stack([starts, ends], 1).ravel()
    keep = np.concatenate([[True], np.diff(idx) > 0])  # a span of one point: once
    return idx[keep], np.repeat(low, 2)[keep], np.repeat(high, 2)[keep]


def pair_envelope(y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)``: at each update the min and max of a line's value there and at the
    updates either side (NaN ignored): the ribbon a line alternating every update fills.

    >>> [v.tolist() for v in pair_envelope(np.array([1.0, 3.0, 1.0, 3.0]))]
    [[1.0, 1.0, 1.0, 1.0], [3.0, 3.0, 3.0, 3.0]]
    """
    y = np.asarray(y, np.float64)
    pad = np.concatenate([[np.nan], y, [np.nan]])
    window = np.stack([pad[:-2], pad[1:-1], pad[2:]])
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all NaN: NaN
        return np.nanmin(window, 0), np.nanmax(window, 0)


def swing_period(y: ArrayLike) -> float:
    """Updates per up-and-down cycle of a line of norms ``y``: two over the share of its
    updates where it turns (2 for a line alternating every update).

    >>> swing_period(2.0 + np.cos(np.pi * np.arange(30)))
    2.0
    >>> round(swing_period(2.0 + np.cos(np.pi * np.arange(40) / 2)), 1)    # up 2, down 2
    4.0
    """
    y = np.asarray(y, np.float64)
    y = y[np.isfinite(y) & (y > 0)]
    d = np.diff(np.log10(y)) if len(y) > 1 else np.zeros(0)
    d = d[d != 0]
    turns = float(np.mean(np.sign(d[1:]) != np.sign(d[:-1]))) if len(d) > 2 else 0.0
    return 2.0 / turns if turns > 0 else float("inf")


def swing_text(name: str, y: ArrayLike) -> str:
    """The name of a swinging band line's ribbon, true to its period (``swing_period``).

    >>> swing_text("CPU:7", 2.0 + np.cos(np.pi * np.arange(30)))
    'CPU:7 alternates every update'
    >>> swing_text("CPU:7", 2.0 + np.cos(np.pi * np.arange(40) / 2))
    'CPU:7 swings every ~4 updates'
    """
    period = swing_period(y)
    if period < 2.5:
        return f"{name} alternates every update"
    return f"{name} swings every ~{period:.0f} updates"  # up and down once per ~period


def bounce_text(names: Sequence[str]) -> str:
    """The note naming the band lines that alternate every update (``pair_envelope``).

    >>> print(bounce_text(["CPU:7"]))
    CPU:7 alternates up and down every update:
    drawn thin over its range (shaded, its colour)
    """
    said = names[0] if len(names) == 1 else " and ".join(names)
    verb, its = ("alternates", "its") if len(names) == 1 else ("alternate", "their")
    return f"{said} {verb} up and down every update:\ndrawn thin over {its} range (shaded, {its} colour)"


def pixel_columns(ax: Axes) -> int:
    """The width of ``ax`` in pixel columns at its figure's dpi."""
    return max(1, int(np.ceil(ax.bbox.width)))
