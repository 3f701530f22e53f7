"""A run diverges when its loss (else its parameters' L2 norm) ends NaN/Inf or above ``GROW`` times its first value,
from the first update after which it never comes back to its first value (at the latest, a variable's first NaN/Inf).

    >>> diverging_from([1.0, 0.5, 2.0, 40.0, np.inf], [1, 2, 3, 4, 5])
    3
    >>> diverging_from([1.0, 3.0, 0.8, 0.1], [1, 2, 3, 4]) is None   # a bump, then it falls
    True
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...recording.recording import Recording

GROW = 10.0  # a series ending more than this many times its first value has diverged


def diverging_from(values: ArrayLike, updates: ArrayLike) -> int | None:
    """The update (of ``updates``) from which ``values`` (one per update) diverge (see the module), or None."""
    v = np.abs(np.asarray(values, np.float64))
    u = np.asarray(updates)
    if not len(v):
        return None
    finite = np.isfinite(v)
    if not finite.any():
        return int(u[0])
    first, last = v[finite][0], v[finite][-1]
    if finite[-1] and not last > GROW * first:
        return None
    with np.errstate(invalid="ignore"):
        back = np.flatnonzero(finite & (v <= first))
    k = int(back[-1]) + 1 if len(back) else 0
    return int(u[min(k, len(u) - 1)])


def diverging_update(recording: Recording) -> int | None:
    """The update from which ``recording``'s run diverges (see the module), or None."""
    steps = np.asarray(recording.steps)
    if not len(steps):
        return None
    found = None
    loss = recording.loss
    if loss is not None:
        at = diverging_from(loss, steps)
        if at is not None:  # the loss before `at` is what update at - 1 left
            i = int(np.searchsorted(steps, at))
            found = int(steps[max(i - 1, 0)])
    elif "param" in recording.kinds:
        squares = 0.0
        for name in recording.variables:
            geometry = recording.geometry(name)
            firsts = [group[0] for group in geometry.replica_groups]
            norms = np.asarray(recording.shard_stats(name, "param")[:, firsts, 0], np.float64)
            with np.errstate(over="ignore", invalid="ignore"):
                squares = squares + np.sum(norms**2, axis=1)
        found = diverging_from(np.sqrt(squares), steps)
    bad = recording.nonfinite_steps
    if len(bad):
        found = int(bad[0]) if found is None else min(found, int(bad[0]))
    return found


def diverging_text(recording: Recording) -> str:
    """``"the run diverges from update 3"`` ("" when it does not diverge)."""
    at = diverging_update(recording)
    return "" if at is None else f"the run diverges from update {at}"
