"""Momentum on a quadratic, in closed form (numpy only): the iteration matrix of each
rule, its spectral radius (the rate at which a mode's error shrinks per update), the
stability boundary and critical damping.

On a quadratic with Hessian eigenvalue ``h`` the gradient is ``h * p`` along that
eigenvector, so one tf-keras SGD update (see ``dtsgd_viz.reference``) is linear in
``(p, v)``; with ``a = lr * h`` its iteration matrix is::

    heavy ball  p' = (1 - a) p + mu v,            v' = -a p + mu v
    Nesterov    p' = (1 - (1 + mu) a) p + mu^2 v,  v' = -a p + mu v   (tf-keras form)

Both have a 2x2 matrix with trace ``T`` and determinant ``D`` (heavy ball
``T = 1 + mu - a``, ``D = mu``; Nesterov ``T = (1 + mu)(1 - a)``,
``D = mu (1 - a)``), eigenvalues ``(T +- sqrt(T^2 - 4 D)) / 2``. The error along the
eigenvector shrinks like ``rate^k`` after ``k`` updates, ``rate`` the spectral radius.

* **Stable** iff ``|D| < 1`` and ``|T| < 1 + D`` (Jury's test), which for
  ``0 <= mu < 1`` gives ``0 < a < 2 (1 + mu)`` (heavy ball) and
  ``0 < a < 2 (1 + mu) / (1 + 2 mu)`` (Nesterov). A run converges iff this holds for
  every eigenvalue, i.e. for the largest.
* **Critical damping**: where ``T^2 = 4 D`` the two eigenvalues meet. Below
  ``a = (1 - sqrt(mu))^2`` (heavy ball) or ``a = ((1 - mu) / (1 + mu))^2`` (Nesterov)
  they are real and the mode creeps in without oscillating (over-damped); above it
  they are complex, the mode oscillates and ``rate = sqrt(D)``. The fastest rate for a
  given ``mu`` is on this curve.

    >>> convergence_boundary([0.0, 0.5], h_max=10.0, nesterov=False).tolist()
    [0.2, 0.3]
    >>> convergence_boundary([0.0, 0.5], h_max=10.0, nesterov=True).tolist()
    [0.2, 0.15]
    >>> critical_damping([0.25], nesterov=False).tolist(), critical_damping([1/3], nesterov=True).tolist()
    ([0.25], [0.25])
    >>> round(float(rate(0.25, 0.25, nesterov=False)), 12)   # critically damped: sqrt(D)
    0.5
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "iteration_matrix",
    "spectral_radius",
    "rate",
    "problem_rate",
    "convergence_boundary",
    "critical_damping",
    "RULES",
]

RULES = {"momentum": False, "nesterov": True}
"""The two momentum rules by config name -> ``nesterov``."""


def _numbers(
    label: str, values: ArrayLike, *, low: float | None = None, low_inclusive: bool = True, high: float | None = None
) -> NDArray[np.float64]:
    """``values`` as float64, all finite and within the range, or a ValueError saying what
    was received and what is allowed."""
    try:
        a = np.asarray(values, np.float64)
    except (TypeError, ValueError):
        a = None
    ok = a is not None and not isinstance(values, bool) and bool(np.all(np.isfinite(a)))
    if ok and a is not None and low is not None:
        ok = bool(np.all(a >= low)) if low_inclusive else bool(np.all(a > low))
    if ok and a is not None and high is not None:
        ok = bool(np.all(a < high))
    if not ok:
        lo = "" if low is None else ("[" if low_inclusive else "(") + f"{low:g}, "
        hi = "" if high is None else f"{high:g})"
        allowed = (
            f"finite, in {lo}{hi}"
            if low is not None and high is not None
            else f"finite and {'>=' if low_inclusive else '>'} {low:g}"
            if low is not None
            else "finite (a number or an array of numbers)"
        )
        shown = values.tolist() if isinstance(values, np.ndarray) else values
        raise ValueError(f"{label} must be {allowed}. Received: {label}={shown!r}.")
    assert a is not None  # ok is False whenever a is None
    return a


def _momenta(values: ArrayLike) -> NDArray[np.float64]:
    return _numbers("momentum", values, low=0.0, high=1.0)


def _rule(nesterov) -> bool:
    if not isinstance(nesterov, (bool, np.bool_)):
        raise ValueError(f"nesterov must be True or False. Received: nesterov={nesterov!r}.")
    return bool(nesterov)


def iteration_matrix(learning_rate: float, momentum: float, h: float, nesterov: bool) -> np.ndarray:
    """The 2x2 matrix taking ``(p, v)`` to ``(p', v')`` along an eigenvector of
    Hessian eigenvalue ``h`` (float64). Every function here takes momenta in
    ``[0, 1)`` and finite numbers, and raises a ``ValueError`` naming the argument
    otherwise."""
    lr = float(_numbers("learning_rate", learning_rate))
    a, mu = lr * float(_numbers("h", h)), float(_momenta(momentum))
    if _rule(nesterov):
        return np.array([[1.0 - (1.0 + mu) * a, mu * mu], [-a, mu]])
    return np.array([[1.0 - a, mu], [-a, mu]])


def spectral_radius(learning_rate: float, momentum: float, h: float, nesterov: bool) -> float:
    """The largest ``|eigenvalue|`` of ``iteration_matrix``: ``rate`` at ``a = lr * h``."""
    a = float(_numbers("learning_rate", learning_rate)) * float(_numbers("h", h))
    return float(rate(a, momentum, nesterov))


def _trace_det(a, mu, nesterov):
    if nesterov:
        return (1.0 + mu) * (1.0 - a), mu * (1.0 - a)
    return 1.0 + mu - a, mu + 0.0 * a


def rate(a: ArrayLike, momentum: ArrayLike, nesterov: bool) -> np.ndarray:
    """The spectral radius of the iteration matrix for ``a = lr * h`` (closed form,
    broadcast over ``a`` and ``momentum``): how much a mode's error shrinks per update."""
    a, mu = np.broadcast_arrays(_numbers("a", a), _momenta(momentum))
    T, D = _trace_det(a, mu, _rule(nesterov))
    disc = T * T - 4.0 * D
    root = np.sqrt(np.abs(disc))
    real = np.maximum(np.abs(T + root), np.abs(T - root)) / 2.0
    return np.where(disc >= 0, real, np.sqrt(np.abs(D)))


def problem_rate(
    learning_rates: ArrayLike, momenta: ArrayLike, hessian_eigenvalues: ArrayLike, nesterov: bool
) -> np.ndarray:
    """The worst mode's rate on a grid: ``out[i, j] = max_h rate(lr_j h, mu_i)``."""
    lr = _numbers("learning_rates", learning_rates).reshape(-1)[None, :, None]
    mu = _momenta(momenta).reshape(-1)[:, None, None]
    h = _numbers("hessian_eigenvalues", hessian_eigenvalues).ravel()
    h = np.unique(h)[None, None, :]
    return rate(lr * h, mu, nesterov).max(axis=-1)


def convergence_boundary(momenta: ArrayLike, h_max: float, nesterov: bool) -> np.ndarray:
    """The largest learning rate at which the rule still converges on a quadratic
    whose largest Hessian eigenvalue is ``h_max``, for each momentum (see the module
    docstring): ``2 (1 + mu) / h_max``, Nesterov ``2 (1 + mu) / ((1 + 2 mu) h_max)``."""
    mu = _momenta(momenta)
    bound = 2.0 * (1.0 + mu) / float(_numbers("h_max", h_max, low=0.0, low_inclusive=False))
    return bound / (1.0 + 2.0 * mu) if _rule(nesterov) else bound


def critical_damping(momenta: ArrayLike, nesterov: bool) -> np.ndarray:
    """``a = lr * h`` at which a mode turns from over-damped (real eigenvalues) to
    oscillating (complex): ``(1 - sqrt(mu))^2``, Nesterov ``((1 - mu) / (1 + mu))^2``.
    Divide by ``h`` for the learning rate."""
    mu = _momenta(momenta)
    if _rule(nesterov):
        return ((1.0 - mu) / (1.0 + mu)) ** 2
    return (1.0 - np.sqrt(mu)) ** 2
