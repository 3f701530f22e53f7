"""Pure numpy behind ``views.phase.plot``: the ratio of the two step maps, each cell's
region, the cells' edges, the cap's rate and the loss it comes from, where iso-rate
contours are drawn, the log learning-rate ticks, and the maps' findings (the titles).

The cap's edge: each eigendirection of a quadratic shrinks on its own, its loss like
``rate^(2k)``; where the cap's grey ends the flattest one decides, so the cap's rate
comes from that direction's share of the starting loss (tutorial 03: 1.7 of 80)::

    >>> from dtsgd_viz.theory import surfaces
    >>> s = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    >>> round(cap_rate(flat_mode_loss(s), 1e-3, 150), 3)
    0.975
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ...theory import quadratic as theory

if TYPE_CHECKING:
    from ...theory.convergence import PhaseGrid
    from ...theory.surfaces import Surface


# the ratio map's cells: both converge (the diverging colour map), or one of the neutrals
REGIONS = ("both", "only_momentum", "only_nesterov", "cap", "neither", "diverged")
TIE_WITHIN = 0.1  # two counts within 10% of each other are a tie: white on the ratio map, counted apart


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


def mode_losses(surface: Surface, start: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct eigenvalues of a quadratic ``surface``'s Hessian (ascending) and the
    loss above the minimum that ``start`` (default ``surface.default_start``) holds in
    each one's eigenspace; None for a surface without ``hessian_eigenvalues``. The Hessian
    is read off the gradient (exact on a quadratic).

    >>> from dtsgd_viz.theory import surfaces
    >>> h, loss = mode_losses(surfaces.RotatedQuadratic(condition=20.0, angle=30.0))
    >>> h.tolist(), [round(float(v), 2) for v in loss]
    ([1.0, 20.0], [1.71, 78.35])
    """
    h = getattr(surface, "hessian_eigenvalues", None)
    if h is None:
        return None
    h = np.unique(np.asarray(h, np.float64))
    shape = tuple(surface.shape)
    n = int(np.prod(shape))
    x_min = np.asarray(surface.minimum, np.float64).reshape((-1, *shape))[0]
    start = np.asarray(surface.default_start if start is None else start, np.float64).reshape(shape)
    g0 = np.asarray(surface.grad_np(x_min), np.float64).reshape(n)
    basis = x_min.reshape(1, n) + np.eye(n)
    a = np.asarray(surface.grad_np(basis.reshape((n, *shape))), np.float64).reshape(n, n) - g0
    lam, vec = np.linalg.eigh((a + a.T) / 2)
    c = vec.T @ (start - x_min).reshape(n)
    # each eigenvalue of the spectrum, the share of the loss in its eigenspace
    nearest = np.argmin(np.abs(lam[:, None] - h[None, :]), axis=1)
    return h, np.bincount(nearest, weights=0.5 * lam * c**2, minlength=len(h))


def flat_mode_loss(surface: Surface, start: ArrayLike | None = None, tol: float = 0.0) -> float | None:
    """The starting loss of the flattest eigendirection that holds more than ``tol`` of
    it (the one that decides where the step cap ends); None without a Hessian."""
    found = mode_losses(surface, start)
    if found is None:
        return None
    held = np.flatnonzero(found[1] > max(tol, 0.0))
    return float(found[1][held[0]]) if len(held) else None


def cap_loss(surface: Surface, grid: PhaseGrid, start: ArrayLike | None = None) -> float:
    """The starting loss that decides where the step cap ends: on a quadratic the
    flattest direction's share (``flat_mode_loss``), else the whole loss of ``grid``
    (a ``PhaseGrid``) at update 0."""
    flat = flat_mode_loss(surface, start, grid.tol)
    return flat if flat is not None else float(grid.losses[0].flat[0]) - float(surface.min_value)


EDGE_BAND = 0.12  # no contour this close (a fraction of the learning rate) to the stability boundary


def contour_mask(
    learning_rates: ArrayLike,
    momenta: ArrayLike,
    hessian_eigenvalues: ArrayLike,
    nesterov: bool,
    band: float = EDGE_BAND,
) -> np.ndarray:
    """``out[i, j]`` True where no iso-rate contour is drawn at ``(learning_rates[j],
    momenta[i])``: the rule does not converge (rate >= 1), or the learning rate lies
    within ``band`` of the stability boundary, where the rate climbs to 1 and every
    level's contour would crowd along the boundary's own line.

    >>> contour_mask([0.01, 0.085, 0.095, 0.2], [0.0], [1.0, 20.0], False).tolist()   # boundary 0.1
    [[False, False, True, True]]
    """
    lr = np.asarray(learning_rates, np.float64).reshape(-1)
    mu = np.asarray(momenta, np.float64).reshape(-1)
    h = np.unique(np.asarray(hessian_eigenvalues, np.float64))
    edge = theory.convergence_boundary(np.clip(mu, 0.0, 0.9999), h[-1], nesterov)[:, None]
    return (theory.problem_rate(lr, mu, h, nesterov) >= 1.0) | (lr[None, :] > (1.0 - band) * edge)


def phase_finding(momentum_steps: ArrayLike, nesterov_steps: ArrayLike, within: float = TIE_WITHIN) -> str:
    """The ratio map's finding, one line: of the cells where both rules converge, in how
    many each rule needs more than ``within`` (a fraction) fewer updates, and how many
    are ties (the white cells of the map).

    >>> phase_finding([[10, 8, 20, -1]], [[5, 8, 21, 3]])
    'Both converge in 3 cells: Nesterov >10% faster in 1, momentum in 0, ties 2'
    >>> phase_finding([[10, 8, 20, -1]], [[5, 8, 21, 3]], within=0)
    'Both converge in 3 cells: Nesterov faster in 1, momentum in 1, ties 1'
    """
    if not within >= 0:
        raise ValueError(f"within must be a fraction >= 0. Received: {within!r}.")
    m, n = np.asarray(momentum_steps), np.asarray(nesterov_steps)
    both = (m >= 0) & (n >= 0)
    if not both.any():
        return "No cell where both rules converge"
    mf, nf = np.maximum(m, 1).astype(float), np.maximum(n, 1).astype(float)
    nes, mom = int((both & (mf > nf * (1 + within))).sum()), int((both & (nf > mf * (1 + within))).sum())
    by = f" >{within:.0%}" if within > 0 else ""
    return (
        f"Both converge in {int(both.sum())} cells: Nesterov{by} faster in {nes}, "
        f"momentum in {mom}, ties {int(both.sum()) - nes - mom}"
    )


def steps_finding(momentum_steps: ArrayLike, nesterov_steps: ArrayLike) -> str:
    """The step maps' finding, one line: each rule's fewest updates over the grid's cells
    (the tutorial prints them as the best cell of the map).

    >>> steps_finding([[10, -1, -1]], [[5, 8, -1]])
    'Fewest updates in the 3 cells: momentum 10, Nesterov 5'
    >>> steps_finding([[7, -1]], [[-1, -1]])
    'Fewest updates in the 2 cells: momentum 7, Nesterov none within tol'
    """
    m, n = np.asarray(momentum_steps), np.asarray(nesterov_steps)
    best = [
        f"{name} {int(a[a >= 0].min())}" if (a >= 0).any() else f"{name} none within tol"
        for name, a in (("momentum", m), ("Nesterov", n))
    ]
    return f"Fewest updates in the {m.size} cells: {', '.join(best)}"
