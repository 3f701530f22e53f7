"""Measuring the close-ups' labels as drawn: ``conflicts`` lists what a label or its
leader crosses (another label or leader, an arrow, a mark, the frame), with the same
pixel tests ``update_labels.place`` placed them by. The tests of the close-ups use it
on the artists matplotlib drew (quiver's own polygons, the marks' discs)::

    >>> conflicts.__name__
    'conflicts'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .labels import (
    CORNER,
    GAP,
    MIN_LEADER,
    SHAFT,
    Segment,
    _disc_rect,
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
    from numpy.typing import ArrayLike

__all__ = ["conflicts"]


def conflicts(
    ax: Axes,
    renderer: RendererBase,
    polygons: Sequence[tuple[str, ArrayLike]],
    discs: Sequence[tuple[str, ArrayLike, float]],
    gap: float = 1.0,
) -> list[str]:
    """What the drawn labels of ``ax`` cross, as ``[str]`` (empty: nothing): ``polygons``
    ``[(name, pixels)]`` (the arrows as drawn), ``discs`` ``[(name, centre, radius)]``
    (the marks); a label's leader may touch only the mark at its own anchor (within
    ``discs``' radius of it, or an arrow's half shaft) and an arrow its anchor lies in,
    up to where it leaves that arrow (``update_hits.leaves``). A leader must also read
    as one (``update_hits.leader_flaws``): at least ``MIN_LEADER`` pixels of it seen beyond
    the mark or shaft it names, and not meeting its text's side in line with the text
    (a sign)."""
    from matplotlib.path import Path
    from matplotlib.text import Annotation, Text

    frame = ax.bbox.extents
    anns = [t for t in ax.texts if isinstance(t, Annotation) and t.get_text()]
    boxes: list[tuple[float, float, float, float]] = []
    leaders: list[tuple[Segment | None, Segment | None] | None] = []  # (leader, its part off the shaft)
    out: list[str] = []
    far_ends: list[np.ndarray] = []
    for t in anns:
        t.update_positions(renderer)  # an animated axes' labels are not drawn by canvas.draw()
        b = Text.get_window_extent(t, renderer)
        boxes.append((b.x0, b.y0, b.x1, b.y1))
        anchor = ax.transData.transform(t.xy)
        verts = np.asarray(t.arrow_patch.get_path().vertices) if t.arrow_patch is not None else np.zeros((0, 2))
        if len(verts) < 2:
            leaders.append(None)
            continue
        far = max(verts, key=lambda v: np.hypot(*(v - anchor)))
        far_ends.append(np.asarray(far, np.float64))
        shaft = 0.5 * SHAFT * ax.bbox.width + GAP + 4.0  # as ``update_panel`` lets a leader leave a shaft
        own = max([rad + 2.0 for _, c, rad in discs if np.hypot(*(np.asarray(c) - anchor)) < 1.0] + [shaft])
        leaders.append(
            (_trim(anchor, np.asarray(far, np.float64), own + 1.0), _trim(anchor, np.asarray(far, np.float64), shaft))
        )
    ends: list[np.ndarray | None] = [None if lead is None else far_ends.pop(0) for lead in leaders]
    legs = [(None, None) if lead is None else lead for lead in leaders]
    for i, (t, r, (lead, off_shaft)) in enumerate(zip(anns, boxes, legs)):
        gid = t.get_gid()
        anchor = ax.transData.transform(t.xy)
        at = (float(anchor[0]), float(anchor[1]))
        end = ends[i]
        if not (frame[0] <= r[0] and r[2] <= frame[2] and frame[1] <= r[1] and r[3] <= frame[3]):
            out.append(f"{gid} leaves the axes")
        for name, poly in polygons:
            if _poly_rect(np.asarray(poly), r, gap):
                out.append(f"{gid} over arrow {name}")
            poly = np.asarray(poly)
            mine = len(poly) >= 3 and Path(poly).contains_point(at, radius=2.0)
            # the arrow at its anchor (the shaft it names, a head the update ends in): touched
            # only where the leader leaves it
            part, g = (lead, gap)
            if mine and end is not None:
                part, g = leaves(anchor, end, poly) if Path(poly).contains_point(at) else off_shaft, 0.0
            if part is not None and _seg_poly(*part, poly, g):
                out.append(f"{gid}'s leader over arrow {name}")
        if end is not None:
            hidden = _hidden(anchor, end, polygons, discs)
            for flaw in leader_flaws(anchor, end, r, hidden, MIN_LEADER - 0.5, CORNER):
                out.append(f"{gid}'s leader reads as a {'tick' if flaw == 'short' else 'sign'}")
        for name, c, rad in discs:
            if _disc_rect(np.asarray(c), rad, r, gap):
                out.append(f"{gid} over mark {name}")
            if lead is not None and float(_seg_dist(*lead, np.array([c]))[0]) < rad:
                out.append(f"{gid}'s leader over mark {name}")
        for j, (u, s, (other, _)) in enumerate(zip(anns, boxes, legs)):
            if j == i:
                continue
            if j > i and _rects_meet(r, s, gap):
                out.append(f"{gid} over {u.get_gid()}")
            if lead is not None and _seg_rect(*lead, s):
                out.append(f"{gid}'s leader through {u.get_gid()}")
            if j > i and lead is not None and other is not None and _seg_seg(*lead, *other):
                out.append(f"{gid}'s leader across {u.get_gid()}'s")
    return out


def _hidden(
    anchor: np.ndarray,
    end: np.ndarray,
    polygons: Sequence[tuple[str, ArrayLike]],
    discs: Sequence[tuple[str, ArrayLike, float]],
) -> float:
    """Pixels of the leader ``anchor``-``end`` under the marks at its anchor and the arrows
    its anchor lies on (from the anchor to where it leaves the last of them)."""
    from matplotlib.path import Path

    at = (float(anchor[0]), float(anchor[1]))
    n = int(min(2000, max(2, 4 * np.hypot(*(end - anchor)) + 1)))
    pts = anchor + np.linspace(0.0, 1.0, n)[:, None] * (end - anchor)
    under = np.zeros(n, bool)
    for _, c, rad in discs:
        if np.hypot(*(np.asarray(c) - anchor)) < 1.0:
            under |= np.hypot(*(pts - np.asarray(c)).T) <= rad
    for _, poly in polygons:
        poly = np.asarray(poly)
        if len(poly) >= 3 and Path(poly).contains_point(at, radius=2.0):
            under |= Path(poly).contains_points(pts, radius=1.0) | Path(poly[::-1]).contains_points(pts, radius=1.0)
    last = np.flatnonzero(under)
    return 0.0 if not len(last) else float(np.hypot(*(pts[last[-1]] - anchor)))
