"""Paths thinned to the pixels they are drawn on: a path of more than ``EXACT_POINTS``
points is drawn through the fewest recorded points that keep the line within about half
a pixel of every recorded one (``thin_indices``). Pure numpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, cast

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure
    from numpy.typing import ArrayLike

    from .geometry import Box


EXACT_POINTS = 61
"""A path of at most this many points is drawn as recorded: only longer ones are thinned."""
TOLERANCE_PX = 0.25  # a recorded point this far off the thinned line (in pixels) is kept
CELL_PX = 0.15  # points following one another within one cell this wide are one point


def pixel_scale(box: Box, figure: Figure | SubFigure) -> np.ndarray:
    """``(sx, sy)``: the most pixels one data unit of ``box`` can take on an axes of
    ``figure`` (no wider nor taller than its root figure)."""
    root = cast("Figure", getattr(figure, "figure", figure) or figure)  # the root figure
    w, h = np.asarray(root.get_size_inches(), np.float64) * float(root.dpi)
    span = np.array([abs(float(box[0][1]) - float(box[0][0])), abs(float(box[1][1]) - float(box[1][0]))])
    span = np.where(span > 0, span, 1.0)
    return np.array([w, h]) / span


def vertex_limit(figure: Figure | SubFigure) -> int:
    """The most vertices a thinned path keeps on ``figure``: its width plus height in pixels."""
    root = cast("Figure", getattr(figure, "figure", figure) or figure)  # the root figure
    w, h = np.asarray(root.get_size_inches(), np.float64) * float(root.dpi)
    return int(max(2 * EXACT_POINTS, np.ceil(w + h)))


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each point of ``p`` (n, 2): its distance to the segment ``a``-``b``."""
    ab = b - a
    l2 = float(ab @ ab)
    if l2 <= 0.0:
        return np.hypot(*(p - a).T)
    t = np.clip((p - a) @ ab / l2, 0.0, 1.0)
    return np.hypot(*(p - (a + t[:, None] * ab)).T)


def _simplify(xy: np.ndarray, anchor: np.ndarray, tol: float) -> np.ndarray:
    """Douglas-Peucker on ``xy`` (pixels) between the ``anchor`` points (a mask); a
    stretch next to a non-finite anchor keeps no inner point."""
    keep = anchor.copy()
    finite = np.all(np.isfinite(xy), axis=1)
    ends = np.flatnonzero(keep)
    stack = [(int(a), int(b)) for a, b in zip(ends[:-1], ends[1:]) if b - a > 1 and finite[a] and finite[b]]
    while stack:
        a, b = stack.pop()
        d = _segment_distance(xy[a + 1 : b], xy[a], xy[b])
        j = int(np.argmax(d))
        if d[j] > tol:
            j += a + 1
            keep[j] = True
            if j - a > 1:
                stack.append((a, j))
            if b - j > 1:
                stack.append((j, b))
    return keep


def thin_indices(
    coords: ArrayLike, scale: ArrayLike, keep: Iterable[int] = (), tol: float = TOLERANCE_PX, limit: int | None = None
) -> np.ndarray:
    """The indices of the points of ``coords`` (n, 2) a line needs to look as the whole
    path does at ``scale`` pixels per unit: the ends, ``keep`` and around every
    non-finite point always; with ``limit``, ``tol`` doubles until at most that many.

        >>> import numpy as np
        >>> c = np.stack([np.arange(200.0), np.zeros(200)], axis=1)
        >>> c[100] = np.nan                         # the line breaks there
        >>> thin_indices(c, (1.0, 1.0)).tolist()
        [0, 99, 100, 101, 199]
    """
    c = np.asarray(coords, np.float64).reshape(-1, 2)
    n = len(c)
    if n <= EXACT_POINTS:
        return np.arange(n)
    xy = c * np.asarray(scale, np.float64).reshape(1, 2)
    finite = np.all(np.isfinite(xy), axis=1)
    forced = np.zeros(n, bool)
    forced[[0, n - 1]] = True
    k = np.asarray(list(keep), np.int64).reshape(-1)
    forced[k[(k >= 0) & (k < n)]] = True
    bad = ~finite
    if bad.any():  # the first non-finite point of each gap breaks the line; its neighbours end it
        forced |= bad & ~np.concatenate([[False], bad[:-1]])
        forced[:-1] |= bad[1:] & finite[:-1]
        forced[1:] |= bad[:-1] & finite[1:]
    # a point in the same cell as the one before it adds nothing the line can show
    with np.errstate(invalid="ignore"):
        cells = np.floor(np.where(finite[:, None], xy, 0.0) / CELL_PX)
    same = np.zeros(n, bool)
    same[1:] = np.all(cells[1:] == cells[:-1], axis=1) & finite[1:] & finite[:-1]
    same |= bad & ~forced  # a gap needs one non-finite point
    sub = np.flatnonzero(~same | forced)
    anchor = forced[sub]
    t = float(tol)
    for _ in range(40):
        kept = _simplify(xy[sub], anchor, t)
        if limit is None or np.count_nonzero(kept & ~anchor) <= max(0, int(limit) - np.count_nonzero(anchor)):
            break
        t *= 2.0
    return sub[kept]


def up_to(indices: ArrayLike | None, end: int, at: int | None = None) -> np.ndarray:
    """The thinned path (``indices``; None: every point) up to point ``end - 1``, with
    point ``at`` and that last point on it."""
    end = int(end)
    if indices is None:
        return np.arange(max(0, end))
    idx = np.asarray(indices, np.int64)
    extra = [v for v in (at, end - 1) if v is not None and 0 <= v < end]
    return np.unique(np.concatenate([idx[idx < end], np.asarray(extra, np.int64)]))
