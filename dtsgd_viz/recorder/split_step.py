"""``Recorder.step_function``: with ``every=k`` the k - 1 updates of every k that record
nothing run the step traced with the recorder's hooks doing nothing, so they cost what
the plain step costs::

    step = rec.step_function(train_step)   # or rec.loop(n, step=train_step)
    for _ in range(n):
        step()
    step.calls                             # {"on": ..., "off": ...}

``SplitStep`` asks its recorder, through the recorder's ``split_call``, ``hooks_off``,
``stage_split_pv`` and ``count_call``, which trace each call runs; the recorder keeps the
host's count of updates (an ``UpdateCount``) and checks it at each flush.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import tensorflow as tf


class UpdateCount:
    """The host's count of the updates a split step function makes, one per call:
    ``next_update`` is the iteration its next call makes (None: not counting, or not
    known yet); ``ok`` turns False, for good, once a flush saw the devices disagree."""

    def __init__(self) -> None:
        self.next_update: int | None = None
        self.ok = True

    def expected(self) -> int | None:
        """The optimizer's iteration once every call made so far has run, as the host
        counts it (None when no split step function counts)."""
        return None if self.next_update is None else self.next_update - 1

    def advance(self) -> None:
        """One more call made."""
        if self.next_update is not None:
            self.next_update += 1

    def fail(self) -> bool:
        """Stop counting: the devices disagreed. True the first time (say so then)."""
        self.next_update = None
        first, self.ok = self.ok, False
        return first


class SplitStep:
    """The step traced with the recorder (``on``) and traced with its hooks doing nothing
    (``off``), each call running the one its update needs. The recorder counts the
    updates and checks the count at each flush."""

    def __init__(self, recorder: Any, fn: Callable[..., Any]):
        self.recorder = recorder
        python = getattr(fn, "python_function", None)
        if python is None:  # a Python function
            python, self.on = fn, tf.function(fn)
        else:  # the user's tf.function is the recording one
            self.on = fn
        options = {}
        for name in ("jit_compile", "reduce_retracing", "autograph"):
            value = getattr(fn, f"_{name}", None)  # tf.function's own settings
            if value is not None:
                options[name] = value
        self.off = tf.function(python, **options)
        self.calls = {"on": 0, "off": 0}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        rec = self.recorder
        off = rec.split_call()  # None: the calls are not split
        if off:
            with rec.hooks_off():  # read while the off function is traced
                out = self.off(*args, **kwargs)
        else:
            out = self.on(*args, **kwargs)
            if off is not None:
                # the recorded update's p and v, now, so the next update can run "off"
                rec.stage_split_pv()
        rec.count_call()
        self.calls["off" if off else "on"] += 1
        return out


def count_warning(current: int, expected: int) -> str:
    """What a flush says when the optimizer's iteration is not the one the split step's
    count of one update per call expects."""
    return (
        f"Recorder.step_function: the optimizer is at iteration {current} where one "
        f"update per call of the step function puts it at {expected}: the step "
        "function does not make exactly one update per call, so from now on every call "
        "runs the step traced with the recorder (recorded steps that ran without it are "
        "listed in recording.dropped_steps)."
    )
