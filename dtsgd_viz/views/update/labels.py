"""The close-ups' labels (``update_panel``): each arrow's name and true length and
Nesterov's two points' names, each on a thin leader, placed in display pixels against
what the panel really draws: the arrows' outlines (``arrow_polygon``, quiver's own
shape), the marks' discs, the path's last segments, the axes' frame, and each other.

A label and its leader may touch nothing but the mark it names, near its anchor: no
other label, arrow, mark or leader, and the label stays inside the axes. Every spot
(16 directions x ``RADII``) is scored once against the still things (``_static``) and
pairwise against the other labels' spots (``_pair``); a small beam search keeps the
cheapest set, so a label is moved for another's sake when only that frees both.
``update_label_check.conflicts`` measures a drawn panel the same way::

    >>> arrow_polygon((0.0, 0.0), (100.0, 0.0), 10.0)[:4].round(1).tolist()
    [[0.0, -5.0], [70.0, -5.0], [66.0, -15.0], [100.0, 0.0]]
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.figure import canvas_renderer
from ..text.direct import text_size
from .arrows import HEAD_AXIS, HEAD_LENGTH, HEAD_WIDTH, SHAFT
from .hits import (  # noqa: F401
    GAP,
    Rect,
    Segment,
    _disc_rect,
    _grow,
    _poly_rect,
    _rects_meet,
    _seg_dist,
    _seg_poly,
    _seg_rect,
    _seg_seg,
    _trim,
    leader_flaws,
    leaves,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.patheffects import AbstractPathEffect
    from matplotlib.text import Annotation
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

Things = tuple[Sequence[np.ndarray], Sequence[tuple[np.ndarray, float]], np.ndarray]
"""What ``place``'s labels keep off, in display pixels: ``(polygons, discs, line points)``, the
arrows' outlines, the marks' ``(centre, radius)`` and points along the path's last segments."""

__all__ = ["Label", "arrow_polygon", "place", "RADII", "SHAFT", "HEAD_WIDTH", "HEAD_LENGTH", "HEAD_AXIS", "LABEL_Z"]

LABEL_Z = 6.5  # the labels and leaders: over the path and its marks (<= 6), under the arrows (7)
RADII = (14.0, 22.0, 32.0, 44.0, 58.0, 76.0, 98.0)  # points from the anchor a label may sit
PAD = 2.0  # points matplotlib leaves between a text and its leader's end (half of 4)
HARD = 100.0  # the cost of one crossing: more than any preference
ON_PATH = 0.5 * HARD + 1.0  # a label over the path: not clean (the panel tries more room), but
# cheaper than a crossing where nothing else fits
LINE_COST = 6.0  # a leader over a point of the path or the dotted line (a crossing: about 3)
MIN_LEADER = 8.0  # pixels of a leader seen beyond what it names: shorter, it reads as a tick or sign
CORNER = 3.0  # pixels: a leader meeting a label's left or right side further than this from its
# top and bottom meets the text's line like a sign ("−μ·v_prev")


@dataclasses.dataclass(frozen=True, eq=False)
class Label:
    """A label to place: ``text`` naming ``anchor`` (plot coordinates); ``own`` the
    radius (pixels) of the mark or shaft at the anchor its leader may touch; ``side``
    a direction (plot coordinates) it keeps to, or None (away from the others);
    ``wrapped`` the same text on more lines, tried where ``text`` fits nowhere."""

    text: str
    anchor: np.ndarray
    gid: str
    bold: bool = False
    side: np.ndarray | None = None
    own: float = 6.0
    wrapped: str | None = None
    under: float | None = None  # pixels of the leader hidden under what it names (None: ``own``)


def arrow_polygon(
    tail: ArrayLike,
    tip: ArrayLike,
    width: float,
    headwidth: float = HEAD_WIDTH,
    headlength: float = HEAD_LENGTH,
    headaxislength: float = HEAD_AXIS,
) -> np.ndarray:
    """The outline (pixels) of a quiver arrow from ``tail`` to ``tip`` whose shaft is
    ``width`` pixels wide, as matplotlib's ``Quiver._h_arrows`` builds it (an arrow
    shorter than its head is shrunk whole)."""
    tail, tip = np.asarray(tail, np.float64), np.asarray(tip, np.float64)
    d = tip - tail
    n = float(np.hypot(*d))
    if not np.isfinite(n) or n == 0 or width <= 0:
        return tail[None, :]
    L = n / width  # in shaft widths
    x = np.array([0, L - headaxislength, L - headlength, L])
    y = 0.5 * np.array([1, 1, headwidth, 0])
    if L < headlength:  # minshaft 1: quiver shrinks the whole arrow
        s = L / headlength
        x = s * np.array([0, headlength - headaxislength, 0, headlength])
        y = s * y
    xs = np.concatenate([x, x[2::-1]]) * width
    ys = np.concatenate([-y, y[2::-1]]) * width
    u, perp = d / n, np.array([-d[1], d[0]]) / n
    return tail + xs[:, None] * u + ys[:, None] * perp


# ---- placing ----------------------------------------------------------------------------


@dataclasses.dataclass
class _Spot:
    offset: tuple[float, float]  # points from the anchor, and the alignment
    ha: str
    va: str
    rect: Rect  # the text's box, pixels
    leader: Segment | None  # (anchor, end) pixels
    cost: float = 0.0


def _leader_end(anchor: np.ndarray, rect: Sequence[float], pad: float) -> np.ndarray | None:
    """Where matplotlib's leader from the text's middle to ``anchor`` leaves the text's
    box grown by ``pad`` (None if the anchor is inside it)."""
    x0, y0, x1, y1 = _grow(rect, pad)
    c = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    d = anchor - c
    if x0 <= anchor[0] <= x1 and y0 <= anchor[1] <= y1:
        return None
    ts = [
        t
        for t in (
            (x1 - c[0]) / d[0] if d[0] > 0 else (x0 - c[0]) / d[0] if d[0] < 0 else np.inf,
            (y1 - c[1]) / d[1] if d[1] > 0 else (y0 - c[1]) / d[1] if d[1] < 0 else np.inf,
        )
    ]
    return c + min(ts) * d


def _spots(anchor: np.ndarray, size: tuple[float, float], frame: Sequence[float], px: float) -> list[_Spot]:
    """Every spot a label of ``size`` (pixels) may take round ``anchor`` (pixels), slid
    back inside ``frame`` when it sticks out."""
    w, h = size
    out = []
    for r in RADII:
        for t in np.linspace(0, 2 * np.pi, 16, endpoint=False):
            d = np.array([np.cos(t), np.sin(t)])
            ha = "right" if d[0] < -0.35 else "left" if d[0] > 0.35 else "center"
            va = "top" if d[1] < -0.35 else "bottom" if d[1] > 0.35 else "center"
            x, y = anchor + r * px * d
            x0 = x - w if ha == "right" else x if ha == "left" else x - w / 2
            y0 = y - h if va == "top" else y if va == "bottom" else y - h / 2
            fx0, fy0, fx1, fy1 = _grow(frame, -GAP)
            sx = max(0.0, fx0 - x0) - max(0.0, x0 + w - fx1)
            sy = max(0.0, fy0 - y0) - max(0.0, y0 + h - fy1)
            rect = (x0 + sx, y0 + sy, x0 + sx + w, y0 + sy + h)
            end = _leader_end(anchor, rect, PAD * px)
            out.append(
                _Spot(
                    ((r * px * d[0] + sx) / px, (r * px * d[1] + sy) / px),
                    ha,
                    va,
                    rect,
                    None if end is None else (anchor, end),
                    0.02 * r,
                )
            )
    return out


def _contains(poly: np.ndarray, *pts: np.ndarray) -> bool:
    from matplotlib.path import Path

    return bool(Path(poly, closed=True).contains_points(np.asarray(pts)).any())


@dataclasses.dataclass(frozen=True)
class _Still:
    """What ``_static`` reads of the still things, once per label: each polygon's box
    (pixels, for a quick miss), whether the label's anchor lies inside it, and the marks'
    centres and radii as arrays."""

    boxes: np.ndarray  # (polygons, 4): x0, y0, x1, y1
    anchor_in: tuple[bool, ...]
    centres: np.ndarray  # (discs, 2)
    radii: np.ndarray  # (discs,)

    @classmethod
    def of(cls, things: Things, anchor: np.ndarray) -> _Still:
        polys, discs, _ = things
        boxes = np.array(
            [[*np.min(p, axis=0), *np.max(p, axis=0)] for p in (np.asarray(q, np.float64) for q in polys)]
        ).reshape(-1, 4)
        anchor_in = tuple(bool(len(q) >= 3 and _contains(q, anchor)) for q in polys)
        centres = np.array([c for c, _ in discs], np.float64).reshape(-1, 2)
        radii = np.array([rad for _, rad in discs], np.float64)
        return cls(boxes, anchor_in, centres, radii)

    def near(self, lo: np.ndarray, hi: np.ndarray, gap: float) -> np.ndarray:
        """The polygons whose boxes come within ``gap`` (and a pixel) of the box ``lo``-``hi``:
        the others cannot touch it."""
        g = gap + 1.0
        b = self.boxes
        return np.flatnonzero(
            (b[:, 0] <= hi[0] + g) & (b[:, 2] >= lo[0] - g) & (b[:, 1] <= hi[1] + g) & (b[:, 3] >= lo[1] - g)
        )


def _static(
    spot: _Spot,
    label_px: Label,
    things: Things,
    frame: Sequence[float],
    pref: np.ndarray | None,
    pull: float,
    still: _Still | None = None,
) -> float:
    """A spot's cost against the still things: the frame, the arrows, the marks (hard),
    the path's points under the label (``ON_PATH``), a leader along the path (soft), its
    preferred side (a reward). ``still``: ``_Still.of(things, anchor)``, computed once
    per label (made here when not given)."""
    polys, discs, lines = things
    if still is None:
        still = _Still.of(things, np.asarray(spot.leader[0] if spot.leader else label_px.anchor, np.float64))
    r, hard = spot.rect, 0
    inside = _grow(frame, -1.0)
    hard += not (inside[0] <= r[0] and r[2] <= inside[2] and inside[1] <= r[1] and r[3] <= inside[3])
    rlo, rhi = np.array(r[:2]), np.array(r[2:])
    hard += sum(_poly_rect(polys[k], r) for k in still.near(rlo, rhi, GAP))
    if len(still.radii):  # _disc_rect for every mark at once
        nx = np.minimum(np.maximum(still.centres[:, 0], r[0]), r[2])
        ny = np.minimum(np.maximum(still.centres[:, 1], r[1]), r[3])
        hard += int((np.hypot(still.centres[:, 0] - nx, still.centres[:, 1] - ny) < still.radii + GAP).sum())
    soft = 0.0
    if spot.leader is None:
        hard += 1
    else:
        part = _trim(*spot.leader, label_px.own)
        hidden = label_px.under if label_px.under is not None else label_px.own
        length = float(np.hypot(*(spot.leader[1] - spot.leader[0])))
        if part is not None:
            near = set(still.near(np.minimum(*part), np.maximum(*part), GAP).tolist())
            for k, p in enumerate(polys):
                if still.anchor_in[k]:  # an arrow the anchor lies on (a head an update ends in): from where it leaves
                    out = leaves(spot.leader[0], spot.leader[1], p)
                    hard += out is not None and _seg_poly(*out, p)
                    # under that arrow up to where it leaves it: only the rest shows
                    hidden = max(hidden, length if out is None else float(np.hypot(*(out[0] - spot.leader[0]))) - GAP)
                elif k in near:
                    hard += _seg_poly(*part, p)
            if len(still.radii):
                hard += int((_seg_dist(*part, still.centres) < still.radii + GAP - 1).sum())
            if len(lines):
                soft += LINE_COST * float((_seg_dist(*part, lines) < 3.0).sum())
        soft += 0.01 * length
        hard += len(leader_flaws(*spot.leader, r, hidden, MIN_LEADER, CORNER))
    if len(lines):  # a label over the path or the dotted line reads as struck through: near a crossing
        g = _grow(r, 2.0)
        soft += ON_PATH * bool(
            ((lines[:, 0] > g[0]) & (lines[:, 0] < g[2]) & (lines[:, 1] > g[1]) & (lines[:, 1] < g[3])).any()
        )
    if pref is not None:
        c = np.array([(r[0] + r[2]) / 2, (r[1] + r[3]) / 2]) - spot.leader[0] if spot.leader else pref
        n = float(np.hypot(*c)) or 1.0
        soft -= pull * float(c @ pref) / n
    return HARD * hard + soft + spot.cost


def _seg_dists(a: np.ndarray, b: np.ndarray, pts: np.ndarray) -> np.ndarray:
    """``(segments, points)``: each point's distance to each segment ``a[i] b[i]``
    (``_seg_dist`` for many segments at once)."""
    d = b - a
    dd = (d * d).sum(axis=1)
    dd = np.where(dd > 0, dd, 1.0)
    rel = pts[None, :, :] - a[:, None, :]
    t = np.clip((rel[..., 0] * d[:, None, 0] + rel[..., 1] * d[:, None, 1]) / dd[:, None], 0.0, 1.0)
    return np.hypot(t * d[:, None, 0] - rel[..., 0], t * d[:, None, 1] - rel[..., 1])


def _cross(o: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return (u[..., 0] - o[..., 0]) * (v[..., 1] - o[..., 1]) - (u[..., 1] - o[..., 1]) * (v[..., 0] - o[..., 0])


def _segs_polys(a: np.ndarray, b: np.ndarray, poly: np.ndarray, gap: float = GAP) -> np.ndarray:
    """``(segments,)``: ``_seg_poly`` for many segments ``a[i] b[i]`` and one polygon."""
    from matplotlib.path import Path

    poly = np.asarray(poly, np.float64)
    lo, hi = np.minimum(a, b) - gap, np.maximum(a, b) + gap
    far = (poly.min(axis=0)[None, :] > hi).any(axis=1) | (poly.max(axis=0)[None, :] < lo).any(axis=1)
    hit = np.zeros(len(a), bool)
    if len(poly) >= 3:
        hit |= Path(poly).contains_points(a)
    edges = np.concatenate([poly, poly[:1]]) if len(poly) > 1 else poly
    hit |= _seg_dists(a, b, edges).min(axis=1) < gap
    p, q = edges[:-1], edges[1:]
    if len(p):
        A, B, P, Q = a[:, None, :], b[:, None, :], p[None, :, :], q[None, :, :]
        hit |= ((_cross(A, B, P) * _cross(A, B, Q) < 0) & (_cross(P, Q, A) * _cross(P, Q, B) < 0)).any(axis=1)
        for c in (a, b):
            hit |= _seg_dists(p, q, c).min(axis=0) < gap
    return hit & ~far


def _polys_rects(poly: np.ndarray, rects: np.ndarray, gap: float = GAP) -> np.ndarray:
    """``(rects,)``: ``_poly_rect`` for many rectangles and one polygon: whether the
    polygon meets the rectangle grown by ``gap`` (an edge crosses it, as matplotlib's
    ``path_intersects_rectangle`` tests, or its centre lies inside the polygon)."""
    from matplotlib.path import Path

    poly = np.asarray(poly, np.float64)
    x0, y0, x1, y1 = (rects[:, k] + g for k, g in zip(range(4), (-gap, -gap, gap, gap)))
    if len(poly) < 3:
        x, y = poly[0]
        return (x0 < x) & (x < x1) & (y0 < y) & (y < y1)
    ring = np.concatenate([poly, poly[:1]])  # round to the start
    s, e = ring[:-1], ring[1:]
    cx, cy, w, h = (x0 + x1) / 2, (y0 + y1) / 2, np.abs(x1 - x0), np.abs(y1 - y0)
    ax_, ay_, bx, by = s[None, :, 0], s[None, :, 1], e[None, :, 0], e[None, :, 1]
    cx, cy, w, h = cx[:, None], cy[:, None], w[:, None], h[:, None]
    meets = (
        (np.abs(ax_ + bx - 2.0 * cx) < np.abs(ax_ - bx) + w)
        & (np.abs(ay_ + by - 2.0 * cy) < np.abs(ay_ - by) + h)
        & (
            2.0 * np.abs((ax_ - cx) * (ay_ - by) - (ay_ - cy) * (ax_ - bx))
            < w * np.abs(ay_ - by) + h * np.abs(ax_ - bx)
        )
    ).any(axis=1)
    centre_in = Path(poly, closed=True).contains_points(np.column_stack([cx[:, 0], cy[:, 0]]))
    return meets | centre_in


def _static_all(spots: list[_Spot], label_px: Label, things: tuple, frame: tuple, pref, pull: float, still: _Still):
    """``_static`` for every spot of one label at once: ``(spots,)`` costs."""
    polys, _, lines = things
    n = len(spots)
    R = np.array([s.rect for s in spots], np.float64).reshape(n, 4)
    inside = _grow(frame, -1.0)
    hard = (
        ~((inside[0] <= R[:, 0]) & (R[:, 2] <= inside[2]) & (inside[1] <= R[:, 1]) & (R[:, 3] <= inside[3]))
    ).astype(float)
    for p in polys:
        hard += _polys_rects(p, R)
    C, rad = still.centres, still.radii
    if len(rad):
        nx = np.minimum(np.maximum(C[None, :, 0], R[:, None, 0]), R[:, None, 2])
        ny = np.minimum(np.maximum(C[None, :, 1], R[:, None, 1]), R[:, None, 3])
        hard += (np.hypot(C[None, :, 0] - nx, C[None, :, 1] - ny) < rad[None, :] + GAP).sum(axis=1)
    soft = np.zeros(n)
    led = np.array([s.leader is not None for s in spots])
    hard += ~led
    if led.any():
        idx = np.flatnonzero(led)
        legs = [s.leader for s in spots if s.leader is not None]  # those of idx, in order
        A = np.array([lead[0] for lead in legs], np.float64)
        E = np.array([lead[1] for lead in legs], np.float64)
        d = E - A
        length = np.hypot(d[:, 0], d[:, 1])
        hidden = np.full(len(idx), label_px.under if label_px.under is not None else label_px.own, np.float64)
        h = np.zeros(len(idx))
        trim = length > label_px.own
        if trim.any():
            t = np.flatnonzero(trim)
            a, b = A[t] + d[t] * (label_px.own / length[t])[:, None], E[t]
            for k, p in enumerate(polys):
                if still.anchor_in[k]:  # from where the leader leaves the arrow its anchor lies on
                    for j in t:
                        out = leaves(A[j], E[j], p)
                        h[j] += out is not None and _seg_poly(*out, p)
                        hidden[j] = max(
                            hidden[j], length[j] if out is None else float(np.hypot(*(out[0] - A[j]))) - GAP
                        )
                else:
                    h[t] += _segs_polys(a, b, p)
            if len(rad):
                h[t] += (_seg_dists(a, b, C) < rad[None, :] + GAP - 1).sum(axis=1)
            if len(lines):
                soft[idx[t]] += LINE_COST * (_seg_dists(a, b, np.asarray(lines, np.float64)) < 3.0).sum(axis=1)
        soft[idx] += 0.01 * length
        r = R[idx]
        h += length - hidden < MIN_LEADER  # leader_flaws: "short", then "sign"
        h += ((E[:, 0] < r[:, 0]) | (E[:, 0] > r[:, 2])) & (r[:, 1] + CORNER < E[:, 1]) & (E[:, 1] < r[:, 3] - CORNER)
        hard[idx] += h
    if len(lines):  # a label over the path or the dotted line reads as struck through
        L = np.asarray(lines, np.float64)
        g = R + [-2.0, -2.0, 2.0, 2.0]
        over = (
            (L[None, :, 0] > g[:, None, 0])
            & (L[None, :, 0] < g[:, None, 2])
            & (L[None, :, 1] > g[:, None, 1])
            & (L[None, :, 1] < g[:, None, 3])
        ).any(axis=1)
        soft += ON_PATH * over
    if pref is not None:
        mid = np.column_stack([(R[:, 0] + R[:, 2]) / 2, (R[:, 1] + R[:, 3]) / 2])
        c = np.where(led[:, None], mid - np.array([s.leader[0] if s.leader else (0.0, 0.0) for s in spots]), pref)
        norm = np.hypot(c[:, 0], c[:, 1])
        norm = np.where(norm > 0, norm, 1.0)
        soft -= pull * (c @ pref) / norm
    return HARD * hard + soft + np.array([s.cost for s in spots])


def _pair_matrix(a: Sequence[_Spot], b: Sequence[_Spot]) -> np.ndarray:
    """``HARD`` x the crossings of every spot in ``a`` with every spot in ``b`` (two
    labels' options): boxes apart, no leader through the other's box or across the
    other's leader. Shape ``(len(a), len(b))``."""
    ra, rb = np.array([s.rect for s in a]), np.array([s.rect for s in b])
    la, lb = _leaders(a), _leaders(b)
    hard = (
        (ra[:, None, 0] - GAP < rb[None, :, 2])
        & (rb[None, :, 0] - GAP < ra[:, None, 2])
        & (ra[:, None, 1] - GAP < rb[None, :, 3])
        & (rb[None, :, 1] - GAP < ra[:, None, 3])
    ).astype(float)
    hard += _segs_rects(la, rb + [-GAP, -GAP, GAP, GAP])
    hard += _segs_rects(lb, ra + [-GAP, -GAP, GAP, GAP]).T
    hard += _segs_cross(la, lb)
    return HARD * hard


def _leaders(spots: Iterable[_Spot]) -> np.ndarray:
    """``(n, 4)``: each spot's leader ``(ax, ay, bx, by)``, NaN for none."""
    return np.array([np.concatenate(s.leader) if s.leader is not None else [np.nan] * 4 for s in spots])


def _segs_rects(segs: np.ndarray, rects: np.ndarray) -> np.ndarray:
    """``(n, m)``: whether segment ``i`` meets rectangle ``j`` (Liang-Barsky, vectorised)."""
    a, d = segs[:, None, :2], segs[:, None, 2:] - segs[:, None, :2]
    t0, t1 = np.zeros((len(segs), len(rects))), np.ones((len(segs), len(rects)))
    ok = np.all(np.isfinite(segs), axis=1)[:, None] & np.ones((1, len(rects)), bool)
    r = rects[None, :, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        for p, q in (
            (-d[..., 0], a[..., 0] - r[..., 0]),
            (d[..., 0], r[..., 2] - a[..., 0]),
            (-d[..., 1], a[..., 1] - r[..., 1]),
            (d[..., 1], r[..., 3] - a[..., 1]),
        ):
            ok &= ~((p == 0) & (q < 0))
            t = q / p
            t0 = np.where(p < 0, np.maximum(t0, t), t0)
            t1 = np.where(p > 0, np.minimum(t1, t), t1)
    return (ok & (t0 <= t1)).astype(float)


def _segs_cross(s: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``(n, m)``: whether segment ``i`` of ``s`` crosses segment ``j`` of ``u``."""
    p, q = s[:, None, :2], s[:, None, 2:]
    r, w = u[None, :, :2], u[None, :, 2:]
    cross = lambda o, a, b: (
        (a[..., 0] - o[..., 0]) * (b[..., 1] - o[..., 1])  # noqa: E731
        - (a[..., 1] - o[..., 1]) * (b[..., 0] - o[..., 0])
    )
    with np.errstate(invalid="ignore"):
        hit = (cross(p, q, r) * cross(p, q, w) < 0) & (cross(r, w, p) * cross(r, w, q) < 0)
    return hit.astype(float)


def _solve(options: Sequence[Sequence[tuple[float, _Spot]]], beam: int = 400) -> tuple[list[_Spot], float]:
    """The cheapest spot per label (``options[i]``: ``[(cost, spot)]``), by beam search
    over the precomputed pairwise crossings; returns ``(spots, total cost)``. Ties keep
    the order the states and spots came in (a stable sort)."""
    spots = [[s for _, s in opts] for opts in options]
    static = [np.array([c for c, _ in opts], np.float64) for opts in options]
    pair = {(i, j): _pair_matrix(spots[i], spots[j]) for j in range(len(spots)) for i in range(j)}
    totals = np.zeros(1)
    chosen = np.zeros((1, 0), np.intp)  # (states, labels so far)
    for j in range(len(spots)):
        crossed = np.zeros((len(totals), len(spots[j])))
        for i in range(j):
            crossed = crossed + pair[(i, j)][chosen[:, i]]
        cost = (totals[:, None] + static[j][None, :] + crossed).ravel()
        keep = np.argsort(cost, kind="stable")[:beam]
        state, pick = np.divmod(keep, len(spots[j]))
        totals = cost[keep]
        chosen = np.concatenate([chosen[state], pick[:, None]], axis=1)
    return [spots[j][int(k)] for j, k in enumerate(chosen[0])], float(totals[0])


def place(
    ax: Axes,
    labels: Sequence[Label],
    things: Things,
    *,
    fontsize: float,
    color: ColorType,
    outline: Sequence[AbstractPathEffect],
    smaller: Iterable[float] = (),
    keep: int = 80,
) -> Placed:
    """Annotate ``ax`` with ``labels`` (``Label``), each on a leader, at the spots that
    cross nothing in ``things`` = ``(polygons, discs, line points)`` (pixels) nor each
    other, at ``fontsize`` or, where nothing fits it, the largest of ``smaller`` that
    does. Returns the annotations, in the order given (a ``Placed`` list: its ``cost``
    says whether anything still crosses)."""
    renderer = canvas_renderer(ax.figure) if hasattr(ax.figure.canvas, "get_renderer") else None
    px = ax.figure.dpi / 72.0
    frame = tuple(ax.bbox.extents)
    anns = []
    for lab in labels:
        ann = ax.annotate(
            lab.text,
            lab.anchor,  # pyright: ignore[reportArgumentType]  # stubs: xy is any (x, y) pair, an array too
            xytext=(0, 0),
            textcoords="offset points",
            fontsize=fontsize,
            color=color,
            fontweight="bold" if lab.bold else "normal",
            zorder=LABEL_Z,
            path_effects=outline,
            gid=lab.gid,
            annotation_clip=False,
            in_layout=False,
            arrowprops=dict(arrowstyle="-", color=color, lw=0.9, shrinkA=0, shrinkB=1, path_effects=outline),
        )  # the leader in a white halo
        anns.append(ann)
    anchors = [ax.transData.transform(np.asarray(lab.anchor, np.float64)) for lab in labels]
    centre = np.mean(anchors, axis=0)
    prefs: list[tuple[np.ndarray | None, float]] = []
    for lab, anchor in zip(labels, anchors):
        if lab.side is not None:
            tip = ax.transData.transform(np.asarray(lab.anchor, np.float64) + np.asarray(lab.side))
            pref, pull = tip - anchor, 4.0
        else:
            pref, pull = anchor - centre, 0.6
        n = float(np.hypot(*pref))
        prefs.append((pref / n if n > 0 else None, pull))
    stills = [_Still.of(things, anchor) for anchor in anchors]
    # the labels held to a side first: the others fit round them
    order = sorted(range(len(labels)), key=lambda i: labels[i].side is None)
    best = None
    sizes = sorted({fontsize, *(s for s in smaller if s < fontsize)}, reverse=True)
    wraps = (False, True) if any(lab.wrapped for lab in labels) else (False,)
    for size, wrap in [(s, w) for s in sizes for w in wraps]:
        for ann, lab in zip(anns, labels):
            ann.set_fontsize(size)
            ann.set_text(lab.wrapped if wrap and lab.wrapped else lab.text)
        options = []
        for i in order:
            w, h = _measure(anns[i], labels[i], renderer, px)
            unique = {}
            for spot in _spots(anchors[i], (w, h), frame, px):
                unique.setdefault(tuple(np.round(spot.rect, 1)), spot)
            spots = list(unique.values())
            costs = _static_all(spots, labels[i], things, frame, *prefs[i], stills[i])
            scored = sorted(zip(costs.tolist(), spots), key=lambda cs: cs[0])
            clean = [cs for cs in scored if cs[0] < HARD / 2]
            options.append(clean[:keep] if len(clean) >= 8 else scored[: max(keep // 2, len(clean))])
        spots, total = _solve(options)
        if best is None or total < best[2] - HARD / 2:
            best = (size, wrap, total, spots)
        if total < HARD / 2:  # nothing crossed: the largest size that fits
            break
    assert best is not None  # sizes holds fontsize: one try at least
    size, wrap, cost, spots = best
    for i, spot in zip(order, spots):
        anns[i].set_fontsize(size)
        anns[i].set_text(labels[i].wrapped if wrap and labels[i].wrapped else labels[i].text)
        anns[i].xyann = spot.offset
        anns[i].set_ha(spot.ha)
        anns[i].set_va(spot.va)
    return Placed(anns, cost)


class Placed(list["Annotation"]):
    """The annotations ``place`` made, in the order given; ``cost`` how much the best
    placement crossed (``HARD`` a crossing: under ``HARD / 2``, nothing did)."""

    def __init__(self, anns: Iterable[Annotation], cost: float) -> None:
        super().__init__(anns)
        self.cost = float(cost)


def _measure(ann: Annotation, label: Label, renderer: RendererBase | None, px: float) -> tuple[float, float]:
    """The label's text box (pixels) with its white halo."""
    if renderer is None:
        w, h = text_size(label.text, float(ann.get_fontsize()))
        return w * px, h * px
    from matplotlib.text import Text

    b = Text.get_window_extent(ann, renderer)
    return b.width + 2.0, b.height + 2.0
