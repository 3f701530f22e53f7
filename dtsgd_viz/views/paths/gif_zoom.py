"""One zoom per run for the GIF's close-ups: a close-up whose zoom changes on every frame
makes its arrows jump (a shrinking update drawn ever larger), so each run keeps one zoom
factor for as long as its updates fit it and still read at it, and changes it rarely
(the frame that changes it says so in the panel's title).

    >>> zoom_schedule([4.3, 6.0, 9.0, 18.0, 15.0])      # one zoom over the whole run
    [4.0, 4.0, 4.0, 4.0, 4.0]
    >>> zoom_schedule([2.3, 5.0, 30.0, 100.0, 200.0])   # changed twice, never back
    [2.0, 2.0, 30.0, 30.0, 200.0]
    >>> zoom_schedule([30.0, 50.0, 120.0, 200.0])       # the held last frame, all but stopped: closest
    [30.0, 30.0, 30.0, 200.0]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ..update import geometry as upd

if TYPE_CHECKING:
    from ..update.panel import PanelData
    from .geometry import Box
    from .scene import PathScene

__all__ = ["ZOOMS", "KEEP_RATIO", "zoom_schedule", "box_points", "fitted_zoom", "fixed_boxes"]

# the zoom factors a close-up may take: round numbers read as such in its title
ZOOMS = (1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 7.0, 10.0, 15.0, 20.0, 30.0, 50.0, 70.0, 100.0, 150.0, 200.0)
KEEP_RATIO = 5.0  # a zoom is kept while the update would fit a box this many times closer
LAST_RATIO = 1.5  # ... but the last frame, held longest, its update all but stopped (it fits the
# closest zoom, ``ZOOMS[-1]``), takes that zoom when it is this much closer
FIT_PAD, FIT_MIN = 0.3, 0.005  # ``update_geometry.zoom_box``'s pad and floor for the fitted box


def _ladder(z: float) -> float:
    """The largest of ``ZOOMS`` at most ``z`` (the smallest when ``z`` is under it)."""
    below = [v for v in ZOOMS if v <= z * (1 + 1e-9)]
    return below[-1] if below else ZOOMS[0]


def zoom_schedule(
    fitted: Iterable[float], keep_ratio: float = KEEP_RATIO, last_ratio: float = LAST_RATIO
) -> list[float]:
    """The zoom of each frame from ``fitted`` (each frame's closest zoom at which its
    update still fits the box): frames grouped into the longest runs whose fitted zooms
    stay within ``keep_ratio`` of each other, each run at the largest of ``ZOOMS`` that
    every frame of it fits (so no update leaves its box, and none is drawn more than about
    ``keep_ratio`` times smaller than it could be). The last frame, which a GIF holds
    longest, takes the closest zoom when its update fits it (the run has all but stopped:
    at its group's zoom its arrows would be the size of the marks) and that is at least
    ``last_ratio`` times closer. Non-finite entries keep the zoom."""
    out: list[float] = []
    lo: float | None = None
    hi: float | None = None
    start = 0
    z = [float(v) if np.isfinite(v) and v > 0 else np.nan for v in fitted]

    def close(end: int) -> None:
        out.extend([_ladder(lo) if lo is not None else ZOOMS[0]] * (end - start))

    for n, v in enumerate(z):
        if np.isnan(v):
            continue
        new_lo = v if lo is None else min(lo, v)
        new_hi = v if hi is None else max(hi, v)
        if lo is not None and new_hi / _ladder(new_lo) > keep_ratio:
            close(n)
            start, lo, hi = n, v, v
        else:
            lo, hi = new_lo, new_hi
    close(len(z))
    if out and np.isfinite(z[-1]) and _ladder(z[-1]) == ZOOMS[-1] >= last_ratio * out[-1]:
        out[-1] = ZOOMS[-1]
    return out


def box_points(scene: PathScene, key: str, data: PanelData) -> list[np.ndarray]:
    """The points a close-up's box must hold (``PanelData`` ``data`` of run ``key``): the
    position, the next point, the arrows' tips and the look-ahead marks."""
    i = len(data.trail) - 1
    nxt = scene.coords[key][min(i + 1, len(scene.coords[key]) - 1)]
    pts = [data.position, nxt] + [np.asarray(t) + np.asarray(uv) for _, t, uv in data.chain]
    return pts + list(data.nesterov or ())


def fitted_zoom(scene: PathScene, key: str, data: PanelData) -> float:
    """The closest zoom at which ``data``'s points fit its box (NaN: no box)."""
    if data.box is None:
        return float("nan")
    box = upd.zoom_box(box_points(scene, key, data), scene.box, pad=FIT_PAD, min_frac=FIT_MIN)
    return float("nan") if box is None else upd.zoom_factor(scene.box, box)


# where a fixed-size box may sit round its points, in box sides off their centre, in the
# order tried (the clash-free one is kept)
SHIFTS = tuple(
    sorted(
        ((dx, dy) for dx in (-0.2, -0.1, 0.0, 0.1, 0.2) for dy in (-0.2, -0.1, 0.0, 0.1, 0.2)),
        key=lambda d: (round(np.hypot(*d), 6), d),
    )
)


def fixed_boxes(scene: PathScene, key: str, data: PanelData, zoom: float) -> list[Box | None]:
    """Square boxes ``zoom`` times closer than the paths panel round ``data``'s points,
    centred and then shifted (``SHIFTS``) while every point stays inside."""
    pts = np.asarray(box_points(scene, key, data), np.float64).reshape(-1, 2)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if data.box is None or not len(pts):
        return [data.box]
    main = max(float(np.ptp(scene.box[0])), float(np.ptp(scene.box[1])))
    span = main / zoom
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    c = (lo + hi) / 2
    out: list[Box | None] = []
    for dx, dy in SHIFTS:
        cx, cy = c[0] + dx * span, c[1] + dy * span
        box = ((cx - span / 2, cx + span / 2), (cy - span / 2, cy + span / 2))
        inside = lo[0] >= box[0][0] and hi[0] <= box[0][1] and lo[1] >= box[1][0] and hi[1] <= box[1][1]
        if inside or (dx, dy) == (0.0, 0.0):
            out.append(box)
    return out
