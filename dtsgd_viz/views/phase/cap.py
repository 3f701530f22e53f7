"""The step cap's edge on the phase maps of a quadratic: the rate a run needs to bring
the loss to the tolerance within the cap, from the loss that decides it.

Each eigendirection of the Hessian shrinks on its own, its loss like ``rate^(2k)``.
Where the cap's grey ends, the learning rate is small, the steep directions are long
gone and the flattest one decides: so the cap's rate comes from that direction's own
share of the starting loss, not the total (on tutorial 03's valley 1.7 of 80, rate
0.975, not 0.963).

    >>> from dtsgd_viz.theory import surfaces
    >>> s = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    >>> h, loss = mode_losses(s)
    >>> h.tolist(), [round(float(v), 2) for v in loss]
    ([1.0, 20.0], [1.71, 78.35])
    >>> round(cap_rate(flat_mode_loss(s), 1e-3, 150), 3)
    0.975
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .geometry import cap_rate

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...theory.convergence import PhaseGrid
    from ...theory.surfaces import Surface

__all__ = ["mode_losses", "flat_mode_loss", "cap_loss", "cap_rate"]


def mode_losses(surface: Surface, start: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray] | None:
    """The distinct eigenvalues of a quadratic ``surface``'s Hessian (ascending) and the
    loss above the minimum that ``start`` (default ``surface.default_start``) holds in
    each one's eigenspace; None for a surface without ``hessian_eigenvalues``.

    The Hessian is read off the gradient (exact on a quadratic): column ``k`` is
    ``grad(minimum + e_k) - grad(minimum)``."""
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
    a = (a + a.T) / 2
    lam, vec = np.linalg.eigh(a)
    c = vec.T @ (start - x_min).reshape(n)
    part = 0.5 * lam * c**2
    # each eigenvalue of the Hessian's spectrum, the share of the loss in its eigenspace
    nearest = np.argmin(np.abs(lam[:, None] - h[None, :]), axis=1)
    return h, np.bincount(nearest, weights=part, minlength=len(h))


def flat_mode_loss(surface: Surface, start: ArrayLike | None = None, tol: float = 0.0) -> float | None:
    """The starting loss of the flattest eigendirection that holds more than ``tol`` of
    it (the one that decides where the step cap ends); None without a Hessian."""
    found = mode_losses(surface, start)
    if found is None:
        return None
    h, loss = found
    held = np.flatnonzero(loss > max(tol, 0.0))
    return float(loss[held[0]]) if len(held) else None


def cap_loss(surface: Surface, grid: PhaseGrid, start: ArrayLike | None = None) -> float:
    """The starting loss that decides where the step cap ends: on a quadratic the
    flattest direction's share (``flat_mode_loss``), else the whole loss of ``grid``
    (a ``PhaseGrid``) at update 0."""
    flat = flat_mode_loss(surface, start, grid.tol)
    return flat if flat is not None else float(grid.losses[0].flat[0]) - float(surface.min_value)
