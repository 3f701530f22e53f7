"""The recorder's own check of the update rule, run on the host as full steps arrive.

Inside a DTensor ``tf.function`` tf-keras' update can move a parameter with the previous
step's velocity (see ``SGD.update_step``). Every recorded pair of consecutive steps that
holds parameters and velocities says whether that happened
(``reference.step_deviation``), so the recorder checks the first ``CHECK_UPDATES`` such
updates of each variable and warns once, naming the variables and the switch that fixes
it. Each check reads a sample of at most ``SAMPLE`` elements of each variable (the
same elements every step, spread over its blocks), so it costs microseconds whatever the
tensor's size; later updates are not checked: the hazard shows from the first updates
on, every element at once (``reference.check_recording`` checks everything).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from ..theory.reference import RTOL, step_deviation

CHECK_UPDATES = 32
SAMPLE = 4096


def _sample(blocks) -> np.ndarray:
    """The first elements of each block, ``SAMPLE`` in all at most (a small copy: the
    blocks are views of device buffers)."""
    if not len(blocks):
        return np.zeros(0)
    per = max(1, SAMPLE // len(blocks))
    return np.concatenate([np.ravel(b)[:per] for b in blocks])


class RuleWatch:
    """Checks recorded full steps against the rule until ``CHECK_UPDATES`` updates per
    variable are checked or a deviation is found; warns once."""

    def __init__(
        self,
        watched: list,
        initial: list,
        optimizer: Any,
        momentum: float,
        every: int,
        *,
        weight_decay: float | None = None,
        decayed: Iterable[str] = (),
        ema_overwrite_frequency: int | None = None,
    ):
        self.watched = watched
        self.optimizer = optimizer
        self.momentum, self.nesterov = momentum, bool(optimizer.nesterov)
        self.rule = "Nesterov" if self.nesterov else ("momentum" if momentum else "SGD")
        self.active = every == 1
        # as recorded (Hyperparameters): weight decay moves the decayed variables too
        # (p -= p * weight_decay * learning_rate); EMA overwrites move the weights to their
        # averages, so those steps follow no SGD rule
        self.weight_decay, self.decayed = weight_decay, set(decayed)
        self.overwrite = ema_overwrite_frequency
        self.checked = 0
        self.flagged: dict[str, list[tuple[int, float]]] = {}
        self.warned = False
        # the state before step 1: the initial parameters and zero velocities, as blocks
        self.prev = (0, {})
        for w, init in zip(watched, initial):
            p0 = _sample(w.geometry.split(init)[[g for g, _ in w.held]])
            self.prev[1][w.name] = (p0, np.zeros_like(p0))

    def observe(self, step: int, entry: dict) -> None:
        if not self.active:
            return
        values = entry["values"]
        now = {
            w.name: (_sample(values[(w.name, "param")]), _sample(values[(w.name, "velocity")])) for w in self.watched
        }
        prev_step, prev = self.prev
        self.prev = (step, now)
        if prev_step != step - 1:
            return  # not consecutive (a gap, a ring that dropped steps): nothing to compare
        if self.overwrite and step % self.overwrite == 0:
            return
        for w in self.watched:
            (p_prev, v_prev), (p, v) = prev[w.name], now[w.name]
            decay = (
                (self.weight_decay or 0.0) * float(entry["lr"]) if w.name in self.decayed else 0.0
            )  # a decayed variable: weight_decay is set
            dev = step_deviation(p_prev, v_prev, self.momentum, self.nesterov, p, v, decay)
            if dev > RTOL:
                self.flagged.setdefault(w.name, []).append((step, dev))
        self.checked += 1
        if self.checked >= CHECK_UPDATES:
            self.active = False

    def skip(self, step: int) -> None:
        """Update ``step`` was skipped (a dynamic loss scale's overflow): it changed no
        variable, so the next update is checked against the state before it."""
        prev_step, prev = self.prev
        if prev_step == step - 1:
            self.prev = (step, prev)

    def warn(self, stacklevel: int = 3) -> None:
        """Warn once if any checked update was off the rule."""
        if self.warned or not self.flagged:
            return
        self.warned = True
        self.active = False
        names = sorted(self.flagged)
        # from a sample of each variable, measured without its gradient: how far each
        # update was from the rule is check_recording's to say (every element, as the rule)
        shown = ", ".join(f"{n!r} (from update {self.flagged[n][0][0]})" for n in names[:5])
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        if getattr(self.optimizer, "exact_update", False):
            advice = (
                "exact_update=True is set, so something else changed the parameters "
                "between updates (another optimizer, an assign of your own, a restore); "
                "reference.check_recording(recording) lists every such update."
            )
        else:
            moved = "the previous step's gradient step" if not self.momentum else "the previous step's velocity"
            advice = (
                "This is tf-keras' stale-velocity read inside a DTensor tf.function: "
                f"the parameter moved with {moved}. The recording "
                "shows what the devices hold; reference.check_recording(recording) says by how much, "
                "update by update. To train with the documented rule, use "
                "dtsgd_viz.SGD(..., exact_update=True)."
            )
        warnings.warn(
            f"Recorder: {len(names)} variable(s) did not follow the {self.rule} update rule: {shown}{more}. {advice}",
            RuntimeWarning,
            stacklevel=stacklevel,
        )
