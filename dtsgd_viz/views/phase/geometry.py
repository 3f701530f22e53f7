"""Pure numpy behind ``views.phase.plot``: ratios, regions, cell edges, the cap's rate, contours, ticks, findings."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ...theory import quadratic as theory

if TYPE_CHECKING:
    from ...theory.convergence import PhaseGrid
    from ...theory.surfaces import Surface


REGIONS = ("both", "only_momentum", "only_nesterov", "cap_momentum", "cap_nesterov", "neither", "diverged")
TIE_WITHIN = 0.1  # two counts within 10% of each other are a tie: white on the ratio map, counted apart


def phase_ratio(momentum_steps: ArrayLike, nesterov_steps: ArrayLike) -> np.ndarray:
    """``log2(Nesterov updates / momentum updates)`` per cell; -inf: only Nesterov converges, +inf: only momentum.

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


def ratio_limit(values: ArrayLike) -> tuple[int, str]:
    """The ratio map's colour limit (log2), the least of 1, 2, 3 over the 98th percentile of ``|values|``; ``extend``.

    >>> ratio_limit([0.2, -0.9, 0.5]), ratio_limit([-1.5] + [0.1] * 99), ratio_limit([])
    ((1, 'neither'), (1, 'min'), (1, 'neither'))
    """
    v = np.asarray(values, np.float64).ravel()
    v = v[np.isfinite(v)]
    if not v.size:
        return 1, "neither"
    need = float(np.percentile(np.abs(v), 98.0))
    limit = next((lim for lim in (1, 2, 3) if lim >= need - 1e-12), 3)
    low, high = bool((v < -limit).any()), bool((v > limit).any())
    return limit, ("neither", "min", "max", "both")[low + 2 * high]


def ratio_regions(
    momentum_steps: ArrayLike, momentum_diverged: ArrayLike, nesterov_steps: ArrayLike, nesterov_diverged: ArrayLike
) -> np.ndarray:
    """Each cell's index into ``REGIONS``; ``cap_*``: only that rule converged, the other hit the cap undiverged.

    >>> ratio_regions([[5, 5, -1, 5, -1, -1, -1]], [[0, 0, 1, 0, 0, 0, 1]], [[3, -1, 4, -1, 4, -1, -1]],
    ...               [[0, 1, 0, 0, 0, 0, 1]]).tolist()
    [[0, 1, 2, 3, 4, 5, 6]]
    """
    m, n = np.asarray(momentum_steps) >= 0, np.asarray(nesterov_steps) >= 0
    md, nd = np.asarray(momentum_diverged, bool), np.asarray(nesterov_diverged, bool)
    out = np.full(np.broadcast_shapes(m.shape, n.shape), REGIONS.index("neither"))
    out[m & n] = REGIONS.index("both")
    out[m & ~n & nd] = REGIONS.index("only_momentum")
    out[n & ~m & md] = REGIONS.index("only_nesterov")
    out[m & ~n & ~nd] = REGIONS.index("cap_momentum")
    out[n & ~m & ~md] = REGIONS.index("cap_nesterov")
    out[~m & ~n & md & nd] = REGIONS.index("diverged")
    return out


def cell_edges(values: ArrayLike, log: bool) -> np.ndarray:
    """Cell edges around grid ``values``: midpoints (geometric for ``log``), the ends mirrored."""
    v = np.log(values) if log else np.asarray(values, np.float64)
    if len(v) == 1:
        half = 0.25 if log else 0.05
        e = np.array([v[0] - half, v[0] + half])
    else:
        mid = (v[1:] + v[:-1]) / 2
        e = np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])
    return np.exp(e) if log else e


def _fine(values: np.ndarray, s: int, log: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``s`` fine cells per cell of ``values``: their edges, centres and centres in grid units (a run's centre: k)."""
    knots = np.insert(cell_edges(values, log), np.arange(1, len(values) + 1), values)
    t = np.arange(len(values) * s * 2 + 1) / (2 * s) - 0.5  # fine edges and centres, interleaved
    f = np.interp(t, np.arange(len(knots)) / 2 - 0.5, np.log(knots) if log else knots)
    f = np.exp(f) if log else f
    return f[::2], f[1::2], t[1::2]


def side_cells(lrs: ArrayLike, mus: ArrayLike, h: ArrayLike | None, rules: dict[str, bool]) -> tuple:
    """``(lr_edges, mu_edges, (i, j))``: the cells cut ~200 x 100 (odd counts: one on each run's centre), each the
    run ``(i, j)`` nearest on its side of each ``rules`` boundary: colours change where the exact curves do."""
    lrs, mus = np.asarray(lrs, np.float64), np.asarray(mus, np.float64)
    if h is None or not rules:
        return cell_edges(lrs, log=True), cell_edges(mus, log=False), tuple(np.indices((len(mus), len(lrs))))
    sj, si = (max(1, round(n / len(v) / 2) * 2 + 1) for n, v in ((200, lrs), (100, mus)))
    (lr_e, lr_c, u), (mu_e, mu_c, v) = _fine(lrs, sj, log=True), _fine(mus, si, log=False)

    def side(lr, mu):  # which side of each boundary: bit k for rule k
        mu = np.clip(mu, 0.0, 0.9999)
        return sum((lr > theory.convergence_boundary(mu, np.max(h), nz)) << k for k, nz in enumerate(rules.values()))

    want, at = side(lr_c[None, :], mu_c[:, None]), np.asarray(side(lrs[None, :], mus[:, None]))
    own = np.meshgrid(np.arange(len(mus)).repeat(si), np.arange(len(lrs)).repeat(sj), indexing="ij")
    offsets = [(di, dj) for di in (0, -1, 1) for dj in (0, -1, 1)]  # the cell's own run first: kept if none fits
    ii = np.stack([np.clip(own[0] + di, 0, len(mus) - 1) for di, _ in offsets])
    jj = np.stack([np.clip(own[1] + dj, 0, len(lrs) - 1) for _, dj in offsets])
    d = np.where(at[ii, jj] == want, (v[:, None] - ii) ** 2 + (u[None, :] - jj) ** 2, np.inf)
    k = np.argmin(d, axis=0)[None]  # the nearest run on the same side, of the cell's and its neighbours'
    return lr_e, mu_e, (np.take_along_axis(ii, k, 0)[0], np.take_along_axis(jj, k, 0)[0])


def cap_rate(loss0: float, tol: float, steps: int) -> float:
    """The rate that brings a mode's loss from ``loss0`` to ``tol`` in ``steps`` updates."""
    if not loss0 > tol > 0:
        return float("nan")
    return float((tol / loss0) ** (1.0 / (2.0 * steps)))


def log_ticks(lo: float, hi: float) -> tuple[list, list]:
    """``(major, labelled_minor)`` log ticks over ``lo..hi``: the decades, and 2s and 5s (more) when it spans few."""
    spans = ((0.5, range(2, 10)), (1.0, (2, 3, 5)), (1.6, (2, 5)), (np.inf, ()))
    subs = next(s for most, s in spans if np.log10(hi / lo) <= most)
    major, minor = [], []
    for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1):
        base = 10.0**e
        if lo * (1 - 1e-9) <= base <= hi * (1 + 1e-9):
            major.append(float(f"{base:.12g}"))
        minor += [float(f"{m * base:.12g}") for m in subs if lo <= m * base <= hi]
    return major, minor


def mode_losses(surface: Surface, start: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """A quadratic ``surface``'s distinct Hessian eigenvalues and the loss ``start`` holds in each (else None).

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
    nearest = np.argmin(np.abs(lam[:, None] - h[None, :]), axis=1)
    return h, np.bincount(nearest, weights=0.5 * lam * c**2, minlength=len(h))


def flat_mode_loss(surface: Surface, start: ArrayLike | None = None, tol: float = 0.0) -> float | None:
    """The starting loss of the flattest eigendirection holding more than ``tol``."""
    found = mode_losses(surface, start)
    if found is None:
        return None
    held = np.flatnonzero(found[1] > max(tol, 0.0))
    return float(found[1][held[0]]) if len(held) else None


def cap_loss(surface: Surface, grid: PhaseGrid, start: ArrayLike | None = None) -> float:
    """The starting loss deciding the cap's edge: the flattest direction's, else the whole."""
    flat = flat_mode_loss(surface, start, grid.tol)
    return flat if flat is not None else float(grid.losses[0].flat[0]) - float(surface.min_value)


EDGE_BAND = 0.12  # no contour this close (a fraction of the learning rate) to the stability boundary


def contour_mask(
    learning_rates: ArrayLike, momenta: ArrayLike, hessian_eigenvalues: ArrayLike, nesterov: bool
) -> np.ndarray:
    """``out[i, j]`` True where no contour is drawn: no convergence, or within ``EDGE_BAND`` of the boundary.

    >>> contour_mask([0.01, 0.085, 0.095, 0.2], [0.0], [1.0, 20.0], False).tolist()   # boundary 0.1
    [[False, False, True, True]]
    """
    lr = np.asarray(learning_rates, np.float64).reshape(-1)
    mu = np.asarray(momenta, np.float64).reshape(-1)
    h = np.unique(np.asarray(hessian_eigenvalues, np.float64))
    edge = theory.convergence_boundary(np.clip(mu, 0.0, 0.9999), h[-1], nesterov)[:, None]
    return (theory.problem_rate(lr, mu, h, nesterov) >= 1.0) | (lr[None, :] > (1.0 - EDGE_BAND) * edge)


def phase_finding(momentum_steps: ArrayLike, nesterov_steps: ArrayLike, within: float = TIE_WITHIN) -> str:
    """The ratio map's finding: where both converge, how often each rule is over ``within`` faster, the ties.

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
    """The step maps' finding: each rule's fewest updates over the grid.

    >>> steps_finding([[7, -1]], [[-1, -1]])
    'Fewest updates in the 2 cells: momentum 7, Nesterov none within tol'
    """
    m, n = np.asarray(momentum_steps), np.asarray(nesterov_steps)
    best = [
        f"{name} {int(a[a >= 0].min())}" if (a >= 0).any() else f"{name} none within tol"
        for name, a in (("momentum", m), ("Nesterov", n))
    ]
    return f"Fewest updates in the {m.size} cells: {', '.join(best)}"
