"""The names of a close-up's marks, on the data (``plot_update``'s panels): the ring
"before" the update, the dot "after" it (where the update really ends), and the
fading line "path so far", so the figure's footer need not carry a key. Each is an
``update_labels.Label``, placed with the arrows' names by ``update_labels.place``.

``trail_anchor`` picks where "path so far" points: a point on the path's newest
segments inside the panel, clear of the ring::

    >>> import numpy as np
    >>> trail = np.array([[0.0, 0.0], [1.0, 0.0]])
    >>> trail_anchor(trail, ((-0.5, 1.5), (-1.0, 1.0))).round(2).tolist()
    [0.5, 0.0]
    >>> trail_anchor(trail, ((0.95, 2.95), (-1.0, 1.0))) is None   # nothing of it inside
    True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from . import labels as lab

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike

    from ..paths.geometry import Box
    from .arrows import DrawnArrow
    from .panel import PanelData

__all__ = ["mark_labels", "trail_anchor"]

RING_MS = style.ROLE_LOOKS["current"].ms + 2  # as ``update_panel`` draws the ring
RING_MEW = style.ROLE_LOOKS["current"].lw + 0.2
NEXT_MS, NEXT_MEW = 6.0, 1.0
INSET = 0.03  # panel spans: the anchor keeps this far inside the panel
NEAR, AIM = 0.06, 0.25  # panel spans from the ring: at least / ideally
CLEAR = 0.05  # panel spans the anchor keeps from another mark's line (it names the path alone)
AGE = 0.03  # what each older leg costs, in panel spans off AIM: the newer legs first


def _dist(pts: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each of ``pts``' distance to the segment ``a b`` (plot coordinates)."""
    d = b - a
    t = np.clip((pts - a) @ d / (float(d @ d) or 1.0), 0.0, 1.0)
    return np.hypot(*(a + t[:, None] * d - pts).T)


def trail_anchor(
    trail: ArrayLike, box: Box, segments: int = 40, avoid: Iterable[tuple[ArrayLike, ArrayLike]] = ()
) -> np.ndarray | None:
    """Where "path so far" names the path ``trail`` (its points up to the ring, the
    last one): on its newest ``segments`` segments (the newest preferred), ``INSET`` inside ``box``, at least
    ``NEAR`` and ideally ``AIM`` of the panel from the ring, and ``CLEAR`` of the segments
    ``avoid`` (``[(a, b)]``: Nesterov's dotted line, the arrows, which may lie along the
    path and would take the name); None where none is."""
    pts = np.asarray(trail, np.float64).reshape(-1, 2)
    if len(pts) < 2:
        return None
    (x0, x1), (y0, y1) = box
    span = max(x1 - x0, y1 - y0) or 1.0
    ring, best = pts[-1], None
    avoid = [(np.asarray(a, np.float64), np.asarray(b, np.float64)) for a, b in avoid]
    t = np.linspace(0.0, 1.0, 41)[:, None]
    for age, (a, b) in enumerate(zip(pts[-2::-1][:segments], pts[:0:-1][:segments])):
        cand = b + t * (a - b)
        inside = (
            (cand[:, 0] > x0 + INSET * span)
            & (cand[:, 0] < x1 - INSET * span)
            & (cand[:, 1] > y0 + INSET * span)
            & (cand[:, 1] < y1 - INSET * span)
        )
        far = np.hypot(*(cand - ring).T) / span
        ok = inside & (far >= NEAR) & np.all(np.isfinite(cand), axis=1)
        for a, b in avoid:
            ok &= _dist(cand, a, b) >= CLEAR * span
        for p, d in zip(cand[ok], far[ok]):
            cost = abs(d - AIM) + AGE * age
            if best is None or cost < best[0]:
                best = (cost, p)
    return None if best is None else best[1]


def mark_labels(
    ax: Axes,
    data: PanelData,
    arrows: Sequence[DrawnArrow],
    radius: Callable[[float, float, Axes], float],
    trail: bool = True,
) -> list[lab.Label]:
    """The labels naming ``data``'s ring ("before"; Nesterov's look-ahead label names it
    instead), the dot the update reaches ("after": the true end, on the shaft of a
    last arrow drawn longer) and the fading path ("path so far", with ``trail``);
    ``radius(ms, mew, ax)`` a mark's radius in pixels."""
    out = []
    if data.nesterov is None:
        out.append(
            lab.Label(
                "before",
                np.asarray(data.position, np.float64),
                f"position-label:{data.key}",
                own=radius(RING_MS, RING_MEW, ax) + 2.0,
            )
        )
    if arrows:  # the true end: on the shaft of a last arrow drawn longer, its leader leaving that shaft
        last = arrows[-1]
        own = radius(NEXT_MS, NEXT_MEW, ax) + 2.0
        if last.dashed:
            own = max(own, 0.5 * last.width * ax.bbox.width + lab.GAP + 4.0)
        out.append(lab.Label("after", last.tail + last.true_uv, f"next-label:{data.key}", own=own))
    avoid = [(a.tail, a.tail + a.uv) for a in arrows]
    if data.nesterov is not None:
        iterate, lookahead = data.nesterov
        avoid.append((iterate, lookahead))
    anchor = None
    if trail:
        assert data.box is not None  # a panel without a box draws no marks (draw_update_panel)
        anchor = trail_anchor(data.trail, data.box, avoid=avoid)
    if anchor is not None:
        out.append(lab.Label("path so far", anchor, f"trail-label:{data.key}", own=4.0))
    return out
