"""Side by side where the runs start together: every rule's first update is along -g,
so the runs' first legs lie on one line, and drawn there one over another the widest
(Nesterov) hides the rest. ``lanes`` (pure, tested numerically) finds the runs that
leave the start together and gives each a lane: a shift of its whole drawing by a few
points across that first leg, so the rules' lines run there side by side, each in its
own look (``LANE_CAPTION`` says so). ``shift_lines`` applies them; the data stay as
recorded (only the lines' transforms move).

    >>> import numpy as np
    >>> a = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
    >>> b = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, -3.0]])   # along a for its first unit
    >>> out = lanes({"a": a, "b": b}, {"a": 3.0, "b": 1.5}, span=4.0)
    >>> [round(v, 2) + 0.0 for v in out["a"]], [round(v, 2) + 0.0 for v in out["b"]]   # across, 3.75 pt apart
    ([0.0, -1.88], [0.0, 1.88])
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.figure import root_figure
from .casing import CASING_TOL, coinciding, draw_casings

if TYPE_CHECKING:
    from matplotlib.collections import Collection, LineCollection
    from matplotlib.lines import Line2D
    from numpy.typing import ArrayLike

    from ..core.style import Look
    from .frames import PathArtists
    from .scene import PathScene

__all__ = [
    "lanes",
    "shift_lines",
    "draw_lanes",
    "draw_lanes_and_casings",
    "shift_step",
    "lane_note",
    "LANE_AIR",
    "LANE_CAPTION",
    "MIN_SHARED",
]

LANE_AIR = 1.5  # points of air between two runs' lines in their lanes
MIN_SHARED = 0.04  # of the panel's larger span: a shared first leg at least this long gets lanes
LANE_CAPTION = (
    "where the paths share their first leg they are drawn side by side (each moved up to {pt:.0f} pt across it)"
)


def lanes(
    coords: Mapping[str, ArrayLike], widths: Mapping[str, float], span: float, tol: float = CASING_TOL
) -> dict[str, tuple[float, ...]]:
    """``{config: (dx, dy)}`` in points: the shift across the shared first leg of each
    run that leaves the start along another run (within ``tol * span`` for at least
    ``MIN_SHARED * span``), in ``coords``' order, each line ``LANE_AIR`` points clear of
    the next (``widths``: each run's line width in points), the lanes centred on the
    leg. Runs that share no first leg are not in the dict. Equal-aspect plot
    coordinates (the shift is across the leg as drawn)."""
    keys = [k for k in coords if len(_finite(coords[k])) >= 2]
    together: list[str] = []
    leg = None
    for i, a in enumerate(keys):
        for b in keys[i + 1 :]:
            ca, cb = _finite(coords[a]), _finite(coords[b])
            if not np.allclose(ca[0], cb[0], atol=tol * span):
                continue
            shared = coinciding(ca, cb, tol * span, min_length=MIN_SHARED * span)
            if not shared or np.linalg.norm(shared[0][0] - ca[0]) > tol * span:
                continue
            s = shared[0]
            d = s[-1] - s[0]
            if leg is None or np.linalg.norm(d) > np.linalg.norm(leg):
                leg = d
            together += [k for k in (a, b) if k not in together]
    if leg is None or np.linalg.norm(leg) == 0:
        return {}
    together = [k for k in keys if k in together]
    n = np.array([-leg[1], leg[0]]) / np.linalg.norm(leg)
    pos = [0.0]
    for a, b in zip(together, together[1:]):
        pos.append(pos[-1] + 0.5 * (widths[a] + widths[b]) + LANE_AIR)
    mid = 0.5 * (pos[0] + pos[-1])
    return {k: tuple(float(v) for v in (p - mid) * n) for k, p in zip(together, pos)}


def _finite(c: ArrayLike) -> np.ndarray:
    c = np.asarray(c, np.float64).reshape(-1, 2)
    return c[np.all(np.isfinite(c), axis=1)]


def shift_lines(artists: Iterable[Line2D | Collection | None], shift: Sequence[float]) -> None:
    """Draw each of ``artists`` (lines, collections) ``shift`` ``(dx, dy)`` points off
    where its data put it (its data unchanged)."""
    from matplotlib.transforms import ScaledTranslation

    for a in artists:
        if a is None:
            continue
        assert a.axes is not None  # drawn on an axes
        fig = root_figure(a.axes)
        a.set_transform(a.axes.transData + ScaledTranslation(shift[0] / 72.0, shift[1] / 72.0, fig.dpi_scale_trans))


def draw_lanes_and_casings(
    scene: PathScene, art: PathArtists, looks: Mapping[str, Look], drawn: Mapping[str, np.ndarray]
) -> tuple[dict[str, tuple[float, ...]], dict[str, LineCollection]]:
    """On an equal-aspect panel (two parameters), shift the paths of ``art`` (each
    run's ``drawn`` part) into their ``lanes``; then case what still coincides
    (``path_casing.draw_casings``, on the paths where they are drawn, its casings shifted
    with their runs). Returns ``(lanes, casings)``."""
    ax = art.ax_path
    span = max(np.ptp(scene.box[0]), np.ptp(scene.box[1]))
    shifts = lanes(drawn, {k: looks[k].lw for k in drawn}, span) if scene.plane.is_identity else {}
    for key, shift in shifts.items():
        shift_lines([art.paths.get(key)], shift)
    # the shift in data units (about: the panel is not laid out yet), to find what still coincides
    box = ax.get_window_extent()
    per_pt = span / max(1.0, max(box.width, box.height) * 72.0 / root_figure(ax).dpi)
    moved = {k: c + per_pt * np.asarray(shifts.get(k, (0.0, 0.0))) for k, c in drawn.items()}
    casings = draw_casings(ax, moved, looks, span)
    for key, lc in casings.items():
        if key in shifts:  # back onto the data, then drawn shifted exactly as its run
            d = per_pt * np.asarray(shifts[key])
            lc.set_segments([np.asarray(s) - d for s in lc.get_segments()])
            shift_lines([lc], shifts[key])
    return shifts, casings


def draw_lanes(
    scene: PathScene, art: PathArtists, looks: Mapping[str, Look], drawn: Mapping[str, np.ndarray]
) -> dict[str, tuple[float, ...]]:
    """Shift each run's path and its thin whole run (``art.paths``, ``art.rests``) into
    its ``lanes`` (two parameters only); returns the lanes."""
    span = max(np.ptp(scene.box[0]), np.ptp(scene.box[1]))
    shifts = lanes(drawn, {k: looks[k].lw for k in drawn}, span) if scene.plane.is_identity else {}
    for key, shift in shifts.items():
        shift_lines([art.paths.get(key), art.rests.get(key)], shift)
    return shifts


def shift_step(art: PathArtists) -> None:
    """The update's rings, trails and arrows drawn in their runs' lanes (``art.lanes``)."""
    from matplotlib.transforms import ScaledTranslation

    for key, shift in art.lanes.items():
        shift_lines([art.positions.get(key), art.trails.get(key)], shift)
        for (k, _), q in art.arrows.items():
            if k == key:
                assert q.axes is not None  # drawn on the path panel
                fig = root_figure(q.axes)
                q.set_offset_transform(
                    q.axes.transData + ScaledTranslation(shift[0] / 72.0, shift[1] / 72.0, fig.dpi_scale_trans)
                )


def lane_note(art: PathArtists) -> str:
    """The caption's line saying the paths of ``art`` are drawn in lanes ("" if not)."""
    moved = max((float(np.hypot(s[0], s[1])) for s in art.lanes.values()), default=0.0)  # (dx, dy)
    return LANE_CAPTION.format(pt=np.ceil(moved)) if moved > 0 else ""
