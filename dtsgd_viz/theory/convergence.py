"""Steps to converge, and the (learning rate x momentum) grid of them computed with
``dtsgd_viz.reference`` (numpy only): what ``plot_phase``, ``CompareWidget`` and
``PhaseDiagram`` count. The theory
(iteration matrix, spectral radius, stability boundary) lives in ``dtsgd_viz.theory``.

    >>> import numpy as np
    >>> steps_to_tolerance(np.array([4.0, 1.0, 1e-4, 1e-3, 1e-5]), 0.0, 1e-3).item()
    2
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .. import progress as _progress
from . import reference

if TYPE_CHECKING:
    from ..recording.recording import Recording
    from .surfaces.base import Surface

__all__ = [
    "steps_to_tolerance",
    "path_losses",
    "PhaseGrid",
    "phase_grid",
    "diverged",
    "check_grid_axis",
    "check_steps_tol",
]


def steps_to_tolerance(losses: ArrayLike, min_value: float, tol: float) -> np.ndarray:
    """The first step ``k`` (along axis 0 of ``losses``, the loss after ``k`` updates)
    after which the loss stays within ``tol`` of ``min_value`` to the end of the
    run; -1 where it never does (or ends non-finite). Shape: ``losses.shape[1:]``."""
    z = np.asarray(losses, np.float64)
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(z) & (np.abs(z - min_value) <= tol)
    n = z.shape[0]
    bad = ~ok
    # index of the last bad entry + 1 (0 if none): the loss stays good from there on
    last_bad = np.where(bad.any(axis=0), n - np.argmax(bad[::-1], axis=0), 0)
    return np.where(last_bad < n, last_bad, -1).astype(np.int64)


def path_losses(recording: Recording, surface: Surface, name: str = "w") -> np.ndarray:
    """The loss (float64, from ``surface.value_np``) at the start and after every
    recorded update: ``(n_steps + 1,)``. Unlike ``recording.loss`` (the loss *before*
    each update) it includes the final parameter."""
    path = recording.path(name).astype(np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(surface.value_np(path), np.float64)


def check_grid_axis(label: str, values: ArrayLike, low: float, high: float, high_inclusive: bool = False) -> np.ndarray:
    """A 1-D, strictly increasing float array within ``[low, high)`` (or ``]``)."""
    try:
        a = np.asarray(values, np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{label} must be a 1-D sequence of numbers. Received: {values!r}.") from None
    too_high = (a > high) if high_inclusive else (a >= high)
    if a.ndim != 1 or len(a) < 1 or not np.all(np.isfinite(a)) or np.any(a < low) or np.any(too_high):
        bracket = "]" if high_inclusive else ")"
        raise ValueError(
            f"{label} must be a non-empty 1-D sequence of finite numbers in [{low:g}, {high:g}"
            f"{bracket}. Received: {np.asarray(values).tolist()!r}."
        )
    if np.any(np.diff(a) <= 0):
        raise ValueError(f"{label} must be strictly increasing. Received: {a.tolist()!r}.")
    return a


def check_steps_tol(steps: int, tol: float) -> tuple[int, float]:
    """``steps`` an integer >= 1 (not a bool) and ``tol`` a finite number > 0, as given
    to ``phase_grid``; returns them as ``(int, float)``."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 1:
        raise ValueError(f"steps must be an integer >= 1 (updates per cell). Received: steps={steps!r}.")
    try:
        t = float(tol)
    except (TypeError, ValueError):
        t = float("nan")
    if isinstance(tol, bool) or not (np.isfinite(t) and t > 0):
        raise ValueError(f"tol must be a finite number > 0 (on loss - min_value). Received: tol={tol!r}.")
    return int(steps), t


@dataclasses.dataclass(frozen=True, eq=False)
class PhaseGrid:
    """Steps to converge on a (momentum x learning rate) grid for one rule.

    ``steps[i, j]`` is for ``momenta[i]`` and ``learning_rates[j]``: the first update
    after which the loss stays within ``tol`` of the minimum, or -1 if it does not
    within ``max_steps``; ``diverged[i, j]`` marks runs that ended non-finite or
    farther from the minimum than they started. ``losses`` is ``(max_steps + 1, n_mu,
    n_lr)``.
    """

    learning_rates: np.ndarray
    momenta: np.ndarray
    nesterov: bool
    max_steps: int
    tol: float
    steps: np.ndarray
    diverged: np.ndarray
    losses: np.ndarray

    @property
    def converged(self) -> np.ndarray:
        return self.steps >= 0


def phase_grid(
    surface: Surface,
    learning_rates: ArrayLike,
    momenta: ArrayLike,
    steps: int,
    tol: float,
    nesterov: bool,
    start: ArrayLike | None = None,
    progress: bool = False,
) -> PhaseGrid:
    """Run tf-keras' SGD rule (``dtsgd_viz.reference.sgd_step``, float32, the same
    order of operations as the real optimizer) from ``start`` (default
    ``surface.default_start``) at every (momentum, learning rate) of the grid at once,
    with gradients ``surface.grad_np``, and count steps to converge.

    Every cell is exactly ``reference.run(surface.grad_np, start, steps, lr, mu,
    nesterov)``: the rule is elementwise, so broadcasting the hyperparameters over
    the grid changes no rounding. ``progress=True`` shows a progress bar over the
    steps (``tqdm.auto``).
    """
    steps, tol = check_steps_tol(steps, tol)
    lrs = check_grid_axis("learning_rates", learning_rates, 0.0, np.inf)
    mus = check_grid_axis("momenta", momenta, 0.0, 1.0)
    if np.any(lrs <= 0):
        raise ValueError(f"learning_rates must be > 0. Received: {lrs.tolist()!r}.")
    start = np.asarray(surface.default_start if start is None else start, np.float32)
    shape = tuple(surface.shape)
    if start.shape != shape:
        raise ValueError(f"start must have shape {shape}. Received: shape {start.shape}.")
    k = len(shape)
    grid = (len(mus), len(lrs))
    LR = lrs.reshape(1, -1, *([1] * k))
    MU = mus.reshape(-1, 1, *([1] * k))
    p = np.broadcast_to(start, grid + shape).copy()
    v = np.zeros_like(p)
    losses = np.empty((steps + 1,) + grid)
    label = f"phase grid ({'nesterov' if nesterov else 'momentum'})"
    with np.errstate(over="ignore", invalid="ignore"):
        losses[0] = surface.value_np(p)
        for t in _progress.iterate(range(steps), _progress.check(progress), label):
            p, v = reference.sgd_step(p, surface.grad_np(p), v, LR, MU, nesterov)
            losses[t + 1] = surface.value_np(p)
    m = float(surface.min_value)
    conv = steps_to_tolerance(losses, m, tol)
    return PhaseGrid(lrs, mus, bool(nesterov), int(steps), float(tol), conv, diverged(losses, m, conv), losses)


def diverged(losses: ArrayLike, min_value: float, steps_to_tol: ArrayLike) -> np.ndarray:
    """Runs (along axis 0 of ``losses``) that did not converge and ended non-finite or
    farther from ``min_value`` than they started."""
    z = np.asarray(losses, np.float64)
    with np.errstate(invalid="ignore"):
        worse = ~np.isfinite(z[-1]) | (np.abs(z[-1] - min_value) > np.abs(z[0] - min_value))
    return (np.asarray(steps_to_tol) < 0) & worse
