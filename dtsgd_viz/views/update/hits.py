"""Exact tests in display pixels behind the close-ups' labels (``update_labels.place``
and ``update_label_check.conflicts``): a segment against a rectangle, a segment, points,
a polygon; a disc against a rectangle; where a leader leaves the arrow its anchor lies on.
Pure numpy (and matplotlib's ``Path`` for polygons)::

    >>> import numpy as np
    >>> _seg_rect(np.array([0.0, 0.0]), np.array([10.0, 10.0]), (4, 4, 6, 6))
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

Rect = tuple[float, float, float, float]
"""A box ``(x0, y0, x1, y1)`` in display pixels."""
Segment = tuple[np.ndarray, np.ndarray]
"""A segment ``(a, b)``: its two ends, display pixels."""

GAP = 3.0  # pixels a label and a leader keep clear of everything else


def _seg_rect(a: np.ndarray, b: np.ndarray, r: Sequence[float]) -> bool:
    """Whether segment ``a b`` meets the rectangle ``r = (x0, y0, x1, y1)`` (Liang-Barsky)."""
    (x0, y0, x1, y1), d = r, b - a
    t0, t1 = 0.0, 1.0
    for p, q in ((-d[0], a[0] - x0), (d[0], x1 - a[0]), (-d[1], a[1] - y0), (d[1], y1 - a[1])):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 > t1:
            return False
    return True


def _seg_seg(p: np.ndarray, q: np.ndarray, r: np.ndarray, s: np.ndarray) -> bool:
    cross = lambda o, a, b: (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])  # noqa: E731
    return cross(p, q, r) * cross(p, q, s) < 0 and cross(r, s, p) * cross(r, s, q) < 0


def _seg_dist(a: np.ndarray, b: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """Each of ``pts``' distance to segment ``a b``."""
    d = b - a
    t = np.clip((pts - a) @ d / (float(d @ d) or 1.0), 0.0, 1.0)
    return np.hypot(*(a + t[:, None] * d - pts).T)


def _poly_rect(poly: np.ndarray, r: Sequence[float], gap: float = GAP) -> bool:
    from matplotlib.path import Path
    from matplotlib.transforms import Bbox

    if len(poly) < 3:
        x, y = poly[0]
        return r[0] - gap < x < r[2] + gap and r[1] - gap < y < r[3] + gap
    return Path(poly, closed=True).intersects_bbox(Bbox([[r[0] - gap, r[1] - gap], [r[2] + gap, r[3] + gap]]))


def _seg_poly(a: np.ndarray, b: np.ndarray, poly: ArrayLike, gap: float = GAP) -> bool:
    """Whether segment ``a b`` passes within ``gap`` of the polygon ``poly`` (or inside it)."""
    from matplotlib.path import Path

    poly = np.asarray(poly, np.float64)
    lo, hi = np.minimum(a, b) - gap, np.maximum(a, b) + gap  # boxes apart: far from it
    if np.any(poly.min(axis=0) > hi) or np.any(poly.max(axis=0) < lo):
        return False
    if len(poly) >= 3 and Path(poly).contains_point((float(a[0]), float(a[1]))):
        return True
    edges = np.concatenate([poly, poly[:1]]) if len(poly) > 1 else poly
    if float(_seg_dist(a, b, edges).min()) < gap:
        return True
    p, q = edges[:-1], edges[1:]
    if not len(p):  # a point (a zero-length arrow): its distance said it all
        return False
    cross = lambda o, u, v: (
        (u[..., 0] - o[..., 0]) * (v[..., 1] - o[..., 1])  # noqa: E731
        - (u[..., 1] - o[..., 1]) * (v[..., 0] - o[..., 0])
    )
    if np.any((cross(a, b, p) * cross(a, b, q) < 0) & (cross(p, q, a) * cross(p, q, b) < 0)):
        return True
    d = q - p  # a's and b's distance to every edge
    n2 = np.where((d * d).sum(axis=1) > 0, (d * d).sum(axis=1), 1.0)
    for c in (a, b):
        t = np.clip(((c - p) * d).sum(axis=1) / n2, 0.0, 1.0)
        if float(np.hypot(*(p + t[:, None] * d - c).T).min()) < gap:
            return True
    return False


def leaves(a: np.ndarray, b: np.ndarray, poly: np.ndarray) -> Segment | None:
    """The part of segment ``a b`` (from ``a`` inside the polygon ``poly``, pixels) from
    ``GAP`` past the last point of it inside ``poly`` (None when it ends there): a leader
    from a mark on an arrow may cross that arrow only where it starts."""
    from matplotlib.path import Path

    n = int(min(4000, max(2, np.hypot(*(b - a)) + 1)))
    pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
    inside = np.flatnonzero(Path(poly, closed=True).contains_points(pts))
    if not len(inside):
        return a, b
    edges = np.concatenate([poly, poly[:1]])
    rest = pts[int(inside[-1]) + 1 :]
    near = np.min([_seg_dist(p, q, rest) for p, q in zip(edges[:-1], edges[1:])], axis=0) if len(rest) else rest
    clear = np.flatnonzero(near >= GAP + 0.5)  # clear of its edge by GAP
    return None if not len(clear) else (rest[int(clear[0])], b)


def leader_flaws(
    anchor: np.ndarray, end: np.ndarray, rect: Sequence[float], hidden: float, least: float, corner: float
) -> list[str]:
    """How a leader from ``anchor`` to ``end`` (its end at the label's box ``rect``,
    pixels) fails to read as a leader: ``"short"`` when less than ``least`` pixels of it
    show beyond the ``hidden`` pixels under what it names (a tick at the text's end reads
    as a sign), ``"sign"`` when it meets the box's left or right side more than ``corner``
    pixels from its top and bottom (in line with the text: "−μ·v_prev"). Empty: it reads.

    >>> leader_flaws(np.array([0.0, 5.0]), np.array([20.0, 5.0]), (22, 0, 60, 10), 4.0, 8.0, 3.0)
    ['sign']
    >>> leader_flaws(np.array([0.0, -20.0]), np.array([21.0, -2.0]), (22, 0, 60, 10), 4.0, 8.0, 3.0)
    []
    """
    out = []
    if float(np.hypot(*(np.asarray(end) - np.asarray(anchor)))) - hidden < least:
        out.append("short")
    x, y = float(end[0]), float(end[1])
    if (x < rect[0] or x > rect[2]) and rect[1] + corner < y < rect[3] - corner:
        out.append("sign")
    return out


def _disc_rect(c: np.ndarray, rad: float, r: Sequence[float], gap: float = GAP) -> bool:
    nx, ny = min(max(c[0], r[0]), r[2]), min(max(c[1], r[1]), r[3])
    return float(np.hypot(c[0] - nx, c[1] - ny)) < rad + gap


def _grow(r: Sequence[float], g: float) -> Rect:
    return (r[0] - g, r[1] - g, r[2] + g, r[3] + g)


def _rects_meet(r: Sequence[float], s: Sequence[float], gap: float = GAP) -> bool:
    return r[0] - gap < s[2] and s[0] - gap < r[2] and r[1] - gap < s[3] and s[1] - gap < r[3]


def _trim(anchor: np.ndarray, end: np.ndarray, own: float) -> Segment | None:
    """The leader's part beyond ``own`` pixels of its anchor (None when none is left)."""
    d = end - anchor
    n = float(np.hypot(*d))
    return None if n <= own else (anchor + d * own / n, end)
