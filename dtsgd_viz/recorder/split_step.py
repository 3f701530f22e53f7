"""``Recorder.step_function``: with ``every=k`` the k - 1 updates of every k that record
nothing run the step traced with the recorder's hooks doing nothing, so they cost what
the plain step costs::

    step = rec.step_function(train_step)   # or rec.loop(n, step=train_step)
    for _ in range(n):
        step()
    step.calls                             # {"on": ..., "off": ...}
"""

from __future__ import annotations

import tensorflow as tf

from .. import dtensor as _dtensor


class SplitStep:
    """The step traced with the recorder (``on``) and traced with its hooks doing nothing
    (``off``), each call running the one its update needs. The recorder counts the
    updates (``recorder._next_update``) and checks the count at each flush."""

    def __init__(self, recorder, fn):
        self.recorder = recorder
        python = getattr(fn, "python_function", None)
        if python is None:  # a Python function
            python, self.on = fn, tf.function(fn)
        else:  # the user's tf.function is the recording one
            self.on = fn
        options = {}
        for name in ("jit_compile", "reduce_retracing", "autograph"):
            value = getattr(fn, f"_{name}", None)
            if value is not None:
                options[name] = value
        self.off = tf.function(python, **options)
        self.calls = {"on": 0, "off": 0}

    def __call__(self, *args, **kwargs):
        rec = self.recorder
        off = split = False
        if rec._staged and rec._split_ok and rec.every > 1:
            if rec._next_update is None:  # once: where the optimizer is now
                rec._next_update = int(_dtensor.unpack(rec._optimizer.iterations)[0]) + 1
            off = not rec._needs_hooks(rec._next_update)
            split = True
        if off:
            rec._suppressed = True  # read while the off function is traced
            try:
                out = self.off(*args, **kwargs)
            finally:
                rec._suppressed = False
        else:
            out = self.on(*args, **kwargs)
            if split and rec._pv_kinds():
                # the recorded update's p and v, now, so the next update can run "off"
                rec._pv_copier()()
        if rec._next_update is not None:
            rec._next_update += 1
        self.calls["off" if off else "on"] += 1
        return out


def count_warning(current, expected) -> str:
    """What a flush says when the optimizer's iteration is not the one the split step's
    count of one update per call expects."""
    return (
        f"Recorder.step_function: the optimizer is at iteration {current} where one "
        f"update per call of the step function puts it at {expected}: the step "
        "function does not make exactly one update per call, so from now on every call "
        "runs the step traced with the recorder (recorded steps that ran without it are "
        "listed in recording.dropped_steps).")
