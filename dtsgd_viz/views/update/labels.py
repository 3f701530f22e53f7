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

import numpy as np

from ..text.direct import text_size
from .arrows import HEAD_AXIS, HEAD_LENGTH, HEAD_WIDTH, SHAFT
from .hits import (  # noqa: F401
    GAP,
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


def arrow_polygon(tail, tip, width, headwidth=HEAD_WIDTH, headlength=HEAD_LENGTH, headaxislength=HEAD_AXIS):
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
    offset: tuple  # points from the anchor, and the alignment
    ha: str
    va: str
    rect: tuple  # the text's box, pixels
    leader: tuple | None  # (anchor, end) pixels
    cost: float = 0.0


def _leader_end(anchor, rect, pad):
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


def _spots(anchor, size, frame, px):
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


def _contains(poly, *pts) -> bool:
    from matplotlib.path import Path

    return bool(Path(poly, closed=True).contains_points(np.asarray(pts)).any())


def _static(spot, label_px, things, frame, pref, pull):
    """A spot's cost against the still things: the frame, the arrows, the marks (hard),
    the path's points under the label (``ON_PATH``), a leader along the path (soft), its
    preferred side (a reward)."""
    polys, discs, lines = things
    r, hard = spot.rect, 0
    inside = _grow(frame, -1.0)
    hard += not (inside[0] <= r[0] and r[2] <= inside[2] and inside[1] <= r[1] and r[3] <= inside[3])
    hard += sum(_poly_rect(p, r) for p in polys)
    hard += sum(_disc_rect(c, rad, r) for c, rad in discs)
    soft = 0.0
    if spot.leader is None:
        hard += 1
    else:
        part = _trim(*spot.leader, label_px.own)
        hidden = label_px.under if label_px.under is not None else label_px.own
        length = float(np.hypot(*(spot.leader[1] - spot.leader[0])))
        if part is not None:
            for p in polys:  # an arrow the anchor lies on (a head an update ends in): from where it leaves
                if len(p) >= 3 and _contains(p, spot.leader[0]):
                    out = leaves(spot.leader[0], spot.leader[1], p)
                    hard += out is not None and _seg_poly(*out, p)
                    # under that arrow up to where it leaves it: only the rest shows
                    hidden = max(hidden, length if out is None else float(np.hypot(*(out[0] - spot.leader[0]))) - GAP)
                else:
                    hard += _seg_poly(*part, p)
            hard += sum(float(_seg_dist(*part, np.array([c]))[0]) < rad + GAP - 1 for c, rad in discs)
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


def _pair_matrix(a, b):
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


def _leaders(spots):
    """``(n, 4)``: each spot's leader ``(ax, ay, bx, by)``, NaN for none."""
    return np.array([np.concatenate(s.leader) if s.leader is not None else [np.nan] * 4 for s in spots])


def _segs_rects(segs, rects):
    """``(n, m)``: whether segment ``i`` meets rectangle ``j`` (Liang-Barsky, vectorised)."""
    a, d = segs[:, None, :2], segs[:, None, 2:] - segs[:, None, :2]
    t0, t1 = np.zeros((len(segs), len(rects))), np.ones((len(segs), len(rects)))
    ok = np.isfinite(segs).all(axis=1)[:, None] & np.ones((1, len(rects)), bool)
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


def _segs_cross(s, u):
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


def _solve(options, beam=400):
    """The cheapest spot per label (``options[i]``: ``[(cost, spot)]``), by beam search
    over the precomputed pairwise crossings; returns ``(spots, total cost)``."""
    spots = [[s for _, s in opts] for opts in options]
    static = [np.array([c for c, _ in opts]) for opts in options]
    pair = {(i, j): _pair_matrix(spots[i], spots[j]) for j in range(len(spots)) for i in range(j)}
    states = [(0.0, ())]
    for j in range(len(spots)):
        grown = []
        for total, chosen in states:
            cost = total + static[j] + sum(pair[(i, j)][k] for i, k in enumerate(chosen))
            grown += [(float(c), chosen + (int(n),)) for n, c in enumerate(cost)]
        grown.sort(key=lambda st: st[0])
        states = grown[:beam]
    total, chosen = states[0]
    return [spots[j][k] for j, k in enumerate(chosen)], total


def place(ax, labels, things, *, fontsize, color, outline, smaller=(), keep=80):
    """Annotate ``ax`` with ``labels`` (``Label``), each on a leader, at the spots that
    cross nothing in ``things`` = ``(polygons, discs, line points)`` (pixels) nor each
    other, at ``fontsize`` or, where nothing fits it, the largest of ``smaller`` that
    does. Returns the annotations, in the order given (a ``Placed`` list: its ``cost``
    says whether anything still crosses)."""
    renderer = ax.figure.canvas.get_renderer() if hasattr(ax.figure.canvas, "get_renderer") else None
    px = ax.figure.dpi / 72.0
    frame = tuple(ax.bbox.extents)
    anns = []
    for lab in labels:
        ann = ax.annotate(
            lab.text,
            lab.anchor,
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
    prefs = []
    for lab, anchor in zip(labels, anchors):
        if lab.side is not None:
            tip = ax.transData.transform(np.asarray(lab.anchor, np.float64) + np.asarray(lab.side))
            pref, pull = tip - anchor, 4.0
        else:
            pref, pull = anchor - centre, 0.6
        n = float(np.hypot(*pref))
        prefs.append((pref / n if n > 0 else None, pull))
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
            scored = sorted(
                ((_static(s, labels[i], things, frame, *prefs[i]), s) for s in unique.values()), key=lambda cs: cs[0]
            )
            clean = [cs for cs in scored if cs[0] < HARD / 2]
            options.append(clean[:keep] if len(clean) >= 8 else scored[: max(keep // 2, len(clean))])
        spots, total = _solve(options)
        if best is None or total < best[2] - HARD / 2:
            best = (size, wrap, total, spots)
        if total < HARD / 2:  # nothing crossed: the largest size that fits
            break
    size, wrap, cost, spots = best
    for i, spot in zip(order, spots):
        anns[i].set_fontsize(size)
        anns[i].set_text(labels[i].wrapped if wrap and labels[i].wrapped else labels[i].text)
        anns[i].xyann = spot.offset
        anns[i].set_ha(spot.ha)
        anns[i].set_va(spot.va)
    return Placed(anns, cost)


class Placed(list):
    """The annotations ``place`` made, in the order given; ``cost`` how much the best
    placement crossed (``HARD`` a crossing: under ``HARD / 2``, nothing did)."""

    def __init__(self, anns, cost):
        super().__init__(anns)
        self.cost = float(cost)


def _measure(ann, label, renderer, px):
    """The label's text box (pixels) with its white halo."""
    if renderer is None:
        return tuple(v * px for v in text_size(label.text, ann.get_fontsize()))
    from matplotlib.text import Text

    b = Text.get_window_extent(ann, renderer)
    return b.width + 2.0, b.height + 2.0
