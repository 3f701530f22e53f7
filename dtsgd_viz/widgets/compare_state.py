"""The state ``CompareWidget`` and its start drag (``_drag``) share, pure: the parameters
of the three runs (``CompareParams``), one slider change applied to them
(``compare_params``), the ``dtsgd_viz.run`` configs they make (``compare_configs``) and
the queue that coalesces runs (``RunQueue``, ``request``, ``finished``).

    >>> p = CompareParams(learning_rate=0.05, momentum=0.9, start=(1.0, 2.0), steps=60)
    >>> compare_params(p, {"name": "start_1", "new": -1.5}).start
    (1.0, -1.5)
    >>> compare_configs(p)["nesterov"]
    {'learning_rate': 0.05, 'momentum': 0.9, 'nesterov': True}
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

__all__ = ["CompareParams", "compare_params", "compare_configs", "RunQueue", "request", "finished", "OPTIMIZERS"]

OPTIMIZERS = ("plain", "momentum", "nesterov")


# ---- pure: parameters and configs -----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CompareParams:
    """What the three runs share: ``learning_rate``, ``momentum`` (plain SGD ignores
    it), ``start`` (a flat tuple of ``surface.dim`` numbers) and ``steps``."""

    learning_rate: float
    momentum: float
    start: tuple[float, ...]
    steps: int


def _check_params(p: CompareParams) -> CompareParams:
    lr, mu = p.learning_rate, p.momentum
    if not (isinstance(lr, (int, float)) and math.isfinite(lr) and lr > 0):
        raise ValueError(f"learning_rate must be a finite number > 0. Received: {lr!r}.")
    if not (isinstance(mu, (int, float)) and 0.0 <= mu < 1.0):
        raise ValueError(f"momentum must be in [0, 1). Received: {mu!r}.")
    if isinstance(p.steps, bool) or not isinstance(p.steps, (int, np.integer)) or p.steps < 1:
        raise ValueError(f"steps must be an integer >= 1. Received: {p.steps!r}.")
    if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in p.start):
        raise ValueError(f"start must be finite numbers. Received: {p.start!r}.")
    return p


def compare_params(params: CompareParams, change: Mapping[str, Any]) -> CompareParams:
    """The parameters after one change ``{"name": ..., "new": value}``; names are
    ``learning_rate``, ``momentum``, ``steps`` and ``start_<i>`` (one coordinate of a
    2-D start)."""
    name, new = change["name"], change["new"]
    if name in ("learning_rate", "momentum"):
        if isinstance(new, bool) or not isinstance(new, (int, float, np.number)):
            raise ValueError(f"{name} must be a number. Received: {new!r}.")
        out = dataclasses.replace(params, **{name: float(new)})
    elif name == "steps":
        out = dataclasses.replace(params, steps=new)
    elif name.startswith("start_") and name[6:].isdigit() and int(name[6:]) < len(params.start):
        start = list(params.start)
        start[int(name[6:])] = float(new)
        out = dataclasses.replace(params, start=tuple(start))
    else:
        allowed = ["learning_rate", "momentum", "steps"] + [f"start_{i}" for i in range(len(params.start))]
        raise ValueError(f"Unknown change {name!r}. Allowed: {allowed}.")
    return _check_params(out)


def compare_configs(params: CompareParams) -> dict[str, dict]:
    """The ``dtsgd_viz.run`` configs: plain SGD, classical momentum, Nesterov."""
    lr, mu = params.learning_rate, params.momentum
    return {
        "plain": dict(learning_rate=lr, momentum=0.0, nesterov=False),
        "momentum": dict(learning_rate=lr, momentum=mu, nesterov=False),
        "nesterov": dict(learning_rate=lr, momentum=mu, nesterov=True),
    }


# ---- pure: coalescing runs ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RunQueue:
    """Whether a run is in progress, and the latest parameters that arrived during it."""

    running: bool = False
    pending: CompareParams | None = None


def request(queue: RunQueue, params: CompareParams) -> tuple[RunQueue, CompareParams | None]:
    """New parameters arrived. Returns the new queue and the parameters to start a run
    with now, or None when a run is in progress (then only these latest ones are kept)."""
    if queue.running:
        return RunQueue(True, params), None
    return RunQueue(True, None), params


def finished(queue: RunQueue) -> tuple[RunQueue, CompareParams | None]:
    """A run ended. Returns the new queue and the parameters to run next (the latest
    that arrived meanwhile) or None (then the queue is idle)."""
    if queue.pending is not None:
        return RunQueue(True, None), queue.pending
    return RunQueue(False, None), None
