"""Pure geometry behind ``views.phase.plot``: the ratio of the two step maps, the cells'
edges, the rate the step cap needs, where to label the iso-rate contours, and the
ticks of the log learning-rate axis.

No matplotlib here; every function takes and returns numpy arrays or numbers, so
tests check them numerically::

    >>> cell_edges([0.1, 1.0, 10.0], log=True).round(4).tolist()
    [0.0316, 0.3162, 3.1623, 31.6228]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "phase_ratio",
    "cell_edges",
    "cap_rate",
    "label_spots",
    "log_ticks",
    "ratio_regions",
    "REGIONS",
    "region_spot",
    "spot_cells",
    "phase_finding",
    "ratio_limit",
    "shown_columns",
]

# the ratio map's cells: both converge (the diverging colour map), or one of the neutrals
REGIONS = ("both", "only_momentum", "only_nesterov", "cap", "neither", "diverged")


def phase_ratio(momentum_steps: ArrayLike, nesterov_steps: ArrayLike) -> np.ndarray:
    """``log2(Nesterov updates / momentum updates)`` per cell (0 counts as 1 update):
    negative where Nesterov is faster, 0 for a tie; ``-inf`` where only Nesterov
    converges, ``+inf`` where only momentum does, NaN where neither does.

    >>> phase_ratio([[10, 10, -1, -1]], [[5, 10, 7, -1]]).tolist()
    [[-1.0, 0.0, -inf, nan]]
    """
    m, n = np.asarray(momentum_steps), np.asarray(nesterov_steps)
    out = np.full(np.broadcast_shapes(m.shape, n.shape), np.nan)
    both = (m >= 0) & (n >= 0)
    out[both] = np.log2(np.maximum(n[both], 1) / np.maximum(m[both], 1))
    out[(m >= 0) & (n < 0)] = np.inf
    out[(m < 0) & (n >= 0)] = -np.inf
    return out


def ratio_limit(values: ArrayLike, percentile: float = 98.0, limits: Sequence[int] = (1, 2, 3)) -> tuple[int, str]:
    """The ratio map's symmetric colour limit in log2 units and the colour bar's
    ``extend``: the smallest of ``limits`` (2x, 4x, 8x) covering the ``percentile`` of
    ``|values|`` (the finite log2 ratios where both rules converge), the largest when
    none does; ``extend`` names the ends some value lies past.

    >>> ratio_limit([0.2, -0.9, 0.5]), ratio_limit([-1.5] + [0.1] * 99), ratio_limit([])
    ((1, 'neither'), (1, 'min'), (1, 'neither'))
    """
    v = np.asarray(values, np.float64).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return int(limits[0]), "neither"
    need = float(np.percentile(np.abs(v), percentile))
    limit = next((int(lim) for lim in limits if lim >= need - 1e-12), int(limits[-1]))
    low, high = bool((v < -limit).any()), bool((v > limit).any())
    return limit, {(False, False): "neither", (True, False): "min", (False, True): "max", (True, True): "both"}[
        (low, high)
    ]


def ratio_regions(
    momentum_steps: ArrayLike, momentum_diverged: ArrayLike, nesterov_steps: ArrayLike, nesterov_diverged: ArrayLike
) -> np.ndarray:
    """Each cell's index into ``REGIONS``: ``both`` converge; ``only_momentum`` /
    ``only_nesterov`` converges and the other rule *diverged* (a stability verdict);
    ``cap``: one converges and the other neither converged nor diverged within the step
    cap (a verdict of the cap, not of stability); ``neither`` converges within the cap
    (at least one of them not diverging either); ``diverged``: both rules diverge.

    >>> ratio_regions([[5, 5, -1, 5, -1, -1]], [[0, 0, 1, 0, 0, 1]], [[3, -1, 4, -1, -1, -1]],
    ...               [[0, 1, 0, 0, 0, 1]]).tolist()
    [[0, 1, 2, 3, 4, 5]]
    """
    m, n = np.asarray(momentum_steps) >= 0, np.asarray(nesterov_steps) >= 0
    md, nd = np.asarray(momentum_diverged, bool), np.asarray(nesterov_diverged, bool)
    out = np.full(np.broadcast_shapes(m.shape, n.shape), REGIONS.index("neither"))
    out[m & n] = REGIONS.index("both")
    out[m & ~n & nd] = REGIONS.index("only_momentum")
    out[n & ~m & md] = REGIONS.index("only_nesterov")
    out[(m & ~n & ~nd) | (n & ~m & ~md)] = REGIONS.index("cap")
    out[~m & ~n & md & nd] = REGIONS.index("diverged")
    return out


def region_spot(
    mask: ArrayLike, width: float, height: float, near: tuple[float, float] | None = None
) -> tuple[float, float] | None:
    """Where a label ``width`` x ``height`` cells fits inside the region ``mask`` (rows:
    momenta, columns: learning rates): ``(row, column)`` of the cell centre (fractional)
    farthest from the region's edge (then nearest its middle) among those whose label covers only region cells;
    None when the label fits nowhere. With ``near`` (a cell ``(row, column)``): the one
    nearest that cell instead (a note pointing at it).

    >>> m = np.zeros((5, 7), bool); m[1:4, 1:6] = True
    >>> region_spot(m, 3, 1), region_spot(m, 6, 1), region_spot(m, 3, 1, near=(4, 6))
    ((2.0, 3.0), None, (3.0, 4.0))
    """
    mask = np.asarray(mask, bool)
    rows, cols = mask.shape
    if not mask.any():
        return None
    ii, jj = np.nonzero(mask)
    oi, oj = np.nonzero(~mask)
    ci, cj = ii.mean(), jj.mean()
    best = None
    for i, j in zip(ii, jj):
        r0, r1 = i + 0.5 - height / 2, i + 0.5 + height / 2
        c0, c1 = j + 0.5 - width / 2, j + 0.5 + width / 2
        if r0 < -1e-9 or c0 < -1e-9 or r1 > rows + 1e-9 or c1 > cols + 1e-9:
            continue
        a, b = int(np.floor(r0 + 1e-9)), int(np.ceil(r1 - 1e-9))
        c, d = int(np.floor(c0 + 1e-9)), int(np.ceil(c1 - 1e-9))
        if not mask[a:b, c:d].all():
            continue
        far = np.min(np.maximum(np.abs(oi - i), np.abs(oj - j))) if len(oi) else rows + cols
        edge = min(i + 1, j + 1, rows - i, cols - j)
        key = (
            (min(far, edge), -float(np.hypot(i - ci, j - cj)))
            if near is None  # deep inside, then central
            else (-float(np.hypot(i - near[0], j - near[1])),)
        )
        if best is None or key > best[0]:
            best = (key, (float(i), float(j)))
    return None if best is None else best[1]


def spot_cells(shape: tuple[int, ...], spot: tuple[float, float], width: float, height: float) -> np.ndarray:
    """The cells a ``width`` x ``height`` label at ``spot`` (``region_spot``) covers.

    >>> spot_cells((3, 4), (1.0, 1.0), 3, 1).astype(int).tolist()
    [[0, 0, 0, 0], [1, 1, 1, 0], [0, 0, 0, 0]]
    """
    out = np.zeros(shape, bool)
    i, j = spot
    out[
        max(int(np.floor(i + 0.5 - height / 2 + 1e-9)), 0) : int(np.ceil(i + 0.5 + height / 2 - 1e-9)),
        max(int(np.floor(j + 0.5 - width / 2 + 1e-9)), 0) : int(np.ceil(j + 0.5 + width / 2 - 1e-9)),
    ] = True
    return out


def cell_edges(values: ArrayLike, log: bool) -> np.ndarray:
    """Cell edges around grid ``values``: midpoints (geometric for ``log``), the ends
    mirrored."""
    v = np.log(values) if log else np.asarray(values, np.float64)
    if len(v) == 1:
        half = 0.25 if log else 0.05
        e = np.array([v[0] - half, v[0] + half])
    else:
        mid = (v[1:] + v[:-1]) / 2
        e = np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])
    return np.exp(e) if log else e


def cap_rate(loss0: float, tol: float, steps: int) -> float:
    """The rate a run needs to bring the loss from ``loss0`` to ``tol`` in ``steps``
    updates (the loss of a mode shrinks like ``rate^(2k)``)."""
    if not loss0 > tol > 0:
        return float("nan")
    return float((tol / loss0) ** (1.0 / (2.0 * steps)))


def label_spots(
    level_vertices: Iterable[ArrayLike],
    avoid: Iterable[ArrayLike],
    x_range: ArrayLike,
    y_range: ArrayLike,
    half_lengths: Iterable[float],
) -> list:
    """Where to label each contour level (``level_vertices[i]``: its vertices, x on a
    log scale), or None: the vertex farthest, in axes fractions, from the ``avoid``
    polylines (stability boundary, critical damping), from the labels already placed
    and from the edges; None where even that vertex is closer to one of them than the
    label's half length ``half_lengths[i]`` (a label there would sit on a line)."""
    lx = np.log(np.asarray(x_range, np.float64))
    y_range = np.asarray(y_range, np.float64)

    def frac(pts):
        pts = np.asarray(pts, np.float64).reshape(-1, 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = (np.log(pts[:, 0]) - lx[0]) / (lx[1] - lx[0])
        v = (pts[:, 1] - y_range[0]) / (y_range[1] - y_range[0])
        f = np.column_stack([u, v])
        return f[np.all(np.isfinite(f), axis=1)]

    blocked = [frac(a) for a in avoid]
    spots, placed = [], []
    for verts, half in zip(level_vertices, half_lengths):
        verts = np.asarray(verts, np.float64).reshape(-1, 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            f = np.column_stack(
                [
                    (np.log(verts[:, 0]) - lx[0]) / (lx[1] - lx[0]),
                    (verts[:, 1] - y_range[0]) / (y_range[1] - y_range[0]),
                ]
            )
        ok = np.all(np.isfinite(f), axis=1) & np.all((f >= 0) & (f <= 1), axis=1)
        if not ok.any():
            spots.append(None)
            continue
        f, verts = f[ok], verts[ok]
        d = np.minimum(np.minimum(f[:, 0], 1 - f[:, 0]), np.minimum(f[:, 1], 1 - f[:, 1]))
        for b in blocked + [np.asarray(placed).reshape(-1, 2)]:
            if len(b):
                d = np.minimum(
                    d, np.min(np.hypot(f[:, None, 0] - b[None, :, 0], f[:, None, 1] - b[None, :, 1]), axis=1)
                )
        best = int(np.argmax(d))
        if d[best] < half:
            spots.append(None)
            continue
        spots.append(tuple(verts[best]))
        placed.append(f[best])
    return spots


def log_ticks(lo: float, hi: float) -> tuple[list, list]:
    """``(major, labelled_minor)`` tick values for a log axis from ``lo`` to ``hi``:
    the decades, and within 1.6 decades the 2s and 5s of each decade (2, 3 and 5
    within one; 2..9 within half a decade), few enough that their labels stay apart
    on a map a third of a notebook wide.

    >>> log_ticks(0.015, 0.5)
    ([0.1], [0.02, 0.05, 0.2, 0.5])
    """
    decades = np.log10(hi / lo)
    subs = (
        tuple(range(2, 10))
        if decades <= 0.5
        else (2.0, 3.0, 5.0)
        if decades <= 1.0
        else (2.0, 5.0)
        if decades <= 1.6
        else ()
    )
    major, minor = [], []
    for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        base = 10.0**e
        if lo * (1 - 1e-9) <= base <= hi * (1 + 1e-9):
            major.append(float(f"{base:.12g}"))
        minor += [float(f"{m * base:.12g}") for m in subs if lo <= m * base <= hi]
    return major, minor


def phase_finding(momentum_steps: ArrayLike, nesterov_steps: ArrayLike, within: float = 0.1) -> str:
    """The ratio map's finding: in how many of the cells where both rules converge each
    needs fewer updates by more than ``within`` (10%). Short enough for one line of a
    figure's title (the fewest updates are the step maps' finding).

    >>> phase_finding([[10, 8, 20, -1]], [[5, 8, 21, 3]])
    'Nesterov is >10% faster in 1 of 3 cells where both converge, momentum in 0'
    """
    m, n = np.asarray(momentum_steps), np.asarray(nesterov_steps)
    both = (m >= 0) & (n >= 0)
    if not both.any():
        return "No cell where both rules converge"
    mf, nf = np.maximum(m, 1).astype(float), np.maximum(n, 1).astype(float)
    return (
        f"Nesterov is >{within:.0%} faster in {int((both & (mf > nf * (1 + within))).sum())} of "
        f"{int(both.sum())} cells where both converge, momentum in "
        f"{int((both & (nf > mf * (1 + within))).sum())}"
    )


def steps_finding(
    momentum_steps: ArrayLike, nesterov_steps: ArrayLike, momentum_diverged: ArrayLike, nesterov_diverged: ArrayLike
) -> str:
    """The step maps' finding, one line of a title: in how many cells each rule
    diverges, and the fewest updates either needs (the range of the two rules' best).

    >>> steps_finding([[10, -1, -1]], [[5, 8, -1]], [[False, True, True]], [[False, False, True]])
    'Momentum diverges in 2 of 3 cells, Nesterov in 1; both at best 5–10 updates'
    >>> steps_finding([[7, -1]], [[-1, -1]], [[False, True]], [[True, True]])
    'Momentum diverges in 1 of 2 cells, Nesterov in 2; momentum at best 7 updates'
    """
    m, n = np.asarray(momentum_steps), np.asarray(nesterov_steps)
    head = (
        f"Momentum diverges in {int(np.sum(momentum_diverged))} of {m.size} cells, Nesterov in "
        f"{int(np.sum(nesterov_diverged))}"
    )
    best = {name: int(a[a >= 0].min()) for name, a in (("momentum", m), ("Nesterov", n)) if (a >= 0).any()}
    if not best:
        return head + "; neither reaches tol in any"
    if len(best) == 1:
        ((name, k),) = best.items()
        return head + f"; {name} at best {k} updates"
    lo, hi = sorted(best.values())
    return head + f"; both at best {lo}{'' if lo == hi else f'–{hi}'} updates"


def shown_columns(regions: ArrayLike, min_share: float = 0.2, margin: int = 1) -> tuple[int, int]:
    """``(first, stop)``: the columns of a ratio map (``regions``, ``ratio_regions``) worth
    its width: from the first to the last column in which at least ``min_share`` of the
    cells are something other than ``neither`` (the cap's grey), ``margin`` columns more
    each side. All columns when none qualifies.

    >>> r = np.full((5, 8), REGIONS.index("neither")); r[:, 5:] = 0; r[4, 0] = 0; r[3:, 3] = 0
    >>> shown_columns(r), shown_columns(r, min_share=0.4)
    ((0, 8), (2, 8))
    """
    r = np.asarray(regions)
    share = np.mean(r != REGIONS.index("neither"), axis=0)
    keep = np.flatnonzero(share >= min_share - 1e-12)
    if not keep.size:
        return 0, r.shape[1]
    return max(int(keep[0]) - margin, 0), min(int(keep[-1]) + 1 + margin, r.shape[1])
