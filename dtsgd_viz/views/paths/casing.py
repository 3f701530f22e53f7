"""Where two runs' paths coincide (every rule's first update is along -g, so the runs
share their first stretch), the lower path is drawn wider under the upper one as a
casing: its colour shows as edges on both sides of the upper line, so both are seen.
The casing runs along the upper line (centred on it, so its edges are even, not a
sliver on one side where the lower path converges onto it) and in the lower run's
dash, as long as its own dashes: a dashed run's edges still read as that run.
``coinciding`` is the pure part (plot coordinates in, stretches out); ``draw_casings``
adds one ``LineCollection`` per cased run, just under its own path.

    >>> import numpy as np
    >>> a = np.array([[0.0, 0.0], [2.0, 0.0], [2.0, 2.0]])
    >>> b = np.array([[0.0, 0.0], [1.0, 0.0], [1.0, -3.0]])    # along a for its first unit
    >>> [s[[0, -1]].round(2).tolist() for s in coinciding(a, b, tol=0.05)]
    [[[0.0, 0.0], [1.0, 0.0]]]
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core.stretches import true_stretches

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection
    from numpy.typing import ArrayLike

    from ..core.style import Look

__all__ = ["coinciding", "draw_casings", "CASING_EDGE", "CASING_TOL"]

CASING_EDGE = 1.3  # points of the lower path's colour each side of the line over it
CASING_TOL = 0.008  # of the panel's larger span: paths nearer than this coincide (~3 px)
PER_SEGMENT = 24
CHUNK = 256  # points measured against a polyline at a time


def _samples(c: ArrayLike, per_segment: int = PER_SEGMENT) -> np.ndarray:
    c = np.asarray(c, np.float64).reshape(-1, 2)
    c = c[np.all(np.isfinite(c), axis=1)]
    if len(c) < 2:
        return c
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[:, None, None]
    pts = (c[:-1] + t * (c[1:] - c[:-1])).transpose(1, 0, 2).reshape(-1, 2)
    return np.concatenate([pts, c[-1:]])


def _nearest_on_polyline(p: ArrayLike, c: ArrayLike, within: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each point of ``p`` (n, 2): the nearest point on the polyline ``c`` (m, 2) and
    its distance. With ``within``, only the points at most ``within`` from ``c`` are
    measured (the others: NaN and ``inf``), against the segments near them: the cost
    follows the points that lie near the line, not ``n * m``."""
    p = np.asarray(p, np.float64).reshape(-1, 2)
    c = np.asarray(c, np.float64).reshape(-1, 2)
    c = c[np.all(np.isfinite(c), axis=1)]
    if len(c) == 0:
        return np.full_like(p, np.nan), np.full(len(p), np.inf)
    if len(c) == 1:
        d = np.linalg.norm(p - c[0], axis=1)
        near = np.broadcast_to(c[0], p.shape).copy()
        if within is not None:
            near[~(d <= within)], d[~(d <= within)] = np.nan, np.inf
        return near, d
    a, b = c[:-1], c[1:]
    ab = b - a
    L2 = np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-300)
    lo_s, hi_s = np.minimum(a, b), np.maximum(a, b)
    near_out, d_out = np.full_like(p, np.nan), np.full(len(p), np.inf)
    for s in range(0, len(p), CHUNK):  # a chunk of points at a time: memory CHUNK * m
        q = p[s : s + CHUNK]
        seg = slice(None)
        if within is not None:  # the segments whose box comes within ``within`` of the chunk's
            ok = np.all(np.isfinite(q), axis=1)
            if not ok.any():
                continue
            lo, hi = q[ok].min(axis=0) - within, q[ok].max(axis=0) + within
            seg = np.flatnonzero(np.all((hi_s >= lo) & (lo_s <= hi), axis=1))
            if not len(seg):
                continue
        sa, sab = a[seg], ab[seg]
        t = np.clip(np.einsum("nij,ij->ni", q[:, None, :] - sa[None], sab) / L2[seg], 0.0, 1.0)
        near = sa[None] + t[..., None] * sab[None]
        d = np.linalg.norm(q[:, None, :] - near, axis=-1)
        i = np.argmin(d, axis=1)
        rows = np.arange(len(q))
        near_out[s : s + len(q)], d_out[s : s + len(q)] = near[rows, i], d[rows, i]
    if within is not None:
        far = ~(d_out <= within)
        near_out[far], d_out[far] = np.nan, np.inf
    return near_out, d_out


def _distance_to_polyline(p: ArrayLike, c: ArrayLike, within: float | None = None) -> np.ndarray:
    """Each point of ``p`` (n, 2): its distance to the polyline ``c`` (m, 2) (``inf``
    beyond ``within``, if given)."""
    return _nearest_on_polyline(p, c, within)[1]


def _dash(look: Look, width: float) -> str | tuple[float, tuple[float, ...]]:
    """``look``'s line style for a line ``width`` points wide with dashes as long as
    ``look``'s own (matplotlib scales a dash pattern with the line width)."""
    ls = look.ls
    if isinstance(ls, tuple) and len(ls) == 2 and ls[1]:
        scale = look.lw / width
        return (ls[0], tuple(v * scale for v in ls[1]))
    return "solid"


def coinciding(lower: ArrayLike, upper: ArrayLike, tol: float, min_length: float | None = None) -> list[np.ndarray]:
    """The stretches of the path ``lower`` that run within ``tol`` of the path ``upper``
    (plot coordinates), each an ``(k, 2)`` array of points along ``lower``, at least
    ``min_length`` long (default ``3 * tol``)."""
    p = _samples(lower)
    if len(p) < 2:
        return []
    near = _distance_to_polyline(p, upper, within=tol) <= tol
    min_length = 3.0 * tol if min_length is None else min_length
    out = []
    for i, j in true_stretches(near):
        s = p[i : j + 1]
        if j > i and np.sum(np.linalg.norm(np.diff(s, axis=0), axis=1)) >= min_length:
            out.append(s)
    return out


def draw_casings(
    ax: Axes, coords: Mapping[str, np.ndarray], looks: Mapping[str, Look], span: float
) -> dict[str, LineCollection]:
    """Under each run's path, where a run drawn over it (higher ``looks[k].zorder``)
    coincides with it, a casing in its colour and dash ``2 * CASING_EDGE`` points wider
    than what is drawn over it there (the upper run's line, or its own casing), along
    the upper line. Returns ``{config: LineCollection}`` (gid ``path-casing:<config>``),
    one polyline per stretch."""
    from matplotlib.collections import LineCollection

    order = sorted(coords, key=lambda k: looks[k].zorder, reverse=True)  # top first
    width = {k: looks[k].lw for k in coords}  # the widest each run is drawn anywhere
    out: dict[str, LineCollection] = {}
    tol = CASING_TOL * span
    for n, key in enumerate(order):
        segs: list[np.ndarray] = []
        widths: list[float] = []
        for upper in order[:n]:
            w = width[upper] + 2.0 * CASING_EDGE
            if w <= looks[key].lw:
                continue
            for s in coinciding(coords[key], coords[upper], tol):
                segs.append(_nearest_on_polyline(s, coords[upper], within=tol)[0])
                widths.append(w)
        if not segs:
            continue
        width[key] = max(widths)
        look = looks[key]
        dashed = _dash(look, max(widths)) != "solid"
        lc = LineCollection(
            segs,
            linewidths=widths,
            colors=look.color,
            linestyles=[_dash(look, w) for w in widths],
            capstyle="butt" if dashed else "round",
            joinstyle="round",
            zorder=look.zorder - 0.01,
            gid=f"path-casing:{key}",
        )
        ax.add_collection(lc)
        out[key] = lc
    return out
