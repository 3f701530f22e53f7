"""The step convention of every view: ``step=k`` is update k as ``recording.steps`` counts it (the first is 1), ``-1``
the last recorded, ... ``-n`` the first; 0 (the start) and anything but an int are a ``ValueError``.

    >>> resolve_update(-1, [2, 4, 6]), resolve_update(4, [2, 4, 6])
    (6, 4)
    >>> update_position(-3, [2, 4, 6])
    0
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike


def describe_updates(updates: ArrayLike) -> str:
    """``updates 1..8``, ``updates 2, 4, ..., 16 (every 2)`` or ``8 updates from 3 to 90``."""
    u = np.asarray(updates, np.int64)
    if len(u) == 0:
        return "no updates"
    if len(u) == 1:
        return f"update {int(u[0])} only"
    d = np.diff(u)
    if len(u) <= 4:
        return "updates " + ", ".join(str(int(x)) for x in u)
    if np.all(d == 1):
        return f"updates {int(u[0])}..{int(u[-1])}"
    if np.all(d == d[0]):
        return f"updates {int(u[0])}, {int(u[1])}, ..., {int(u[-1])} (every {int(d[0])})"
    return f"{len(u)} updates from {int(u[0])} to {int(u[-1])}"


def resolve_update(
    step: object,
    updates: ArrayLike,
    *,
    none: str = "the last",
    held: str | None = None,
    start: str = "the start is not a recorded update",
) -> int | None:
    """The update number ``step`` picks from the sorted ``updates`` (None for None), else a ``ValueError`` saying
    what is allowed; ``none``, ``held``, ``start``: what None means, how updates are counted, what step=0 is."""
    if step is None:
        return None
    u = np.asarray(updates, np.int64)
    n = len(u)
    back = "-1" if n == 1 else f"-1..-{n}"
    allowed = (
        f"Allowed: a recorded update ({describe_updates(u)}), {back} counting back from the last, or None ({none})."
    )
    allowed = allowed if n else f"Allowed: None ({none})."
    if isinstance(step, (bool, np.bool_)) or not isinstance(step, (int, np.integer)):
        raise ValueError(
            "step must be an int: an update number as recording.steps counts them (the "
            f"first update is 1) or a negative count back from the last. Received: "
            f"step={step!r} ({type(step).__name__}). {allowed}"
        )
    step = int(step)
    if step < 0:
        if -step > n:
            held = held or f"{n} update{'s are' if n != 1 else ' is'} recorded"
            raise ValueError(f"step={step} is out of range: {held}. {allowed}")
        return int(u[step])
    if step == 0:
        raise ValueError(
            f"step=0 is the start, before any update: {start} (updates are numbered "
            f"from 1, as recording.steps counts them). {allowed}"
        )
    if n == 0 or step < u[0] or step > u[-1]:
        raise ValueError(f"step={step} is out of range. {allowed}")
    if step not in u:
        raise ValueError(f"step={step} was not recorded. {allowed}")
    return step


def update_position(step: object, updates: ArrayLike) -> int:
    """The index into ``updates`` (and the recording's arrays) of the update ``step`` picks; None: the last."""
    u = np.asarray(updates, np.int64)
    picked = resolve_update(step, u)
    if picked is None:
        return len(u) - 1
    return int(np.searchsorted(u, picked))
