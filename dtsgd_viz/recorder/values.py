"""What the recorder reads: the variables it watches and, at each update, their gradients,
parameters and velocities and the step's metadata row, on the devices (traced into the
step function, or eagerly), and their host form (per-device shards or block stats).

``Watched`` is the host-side bookkeeping of one recorded variable; the functions take the
watched variables and the update (``hooks.UpdateEvent``) or the optimizer and return
``{(name, kind): tensor}``::

    watched = [Watched(name, var) for name, var in choose(optimizer_variables)]
    pv_values(watched, ("param", "velocity"), optimizer)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from .. import dtensor as _dtensor
from ..dtensor.model import unique_names, variable_name
from ..geometry import shard_geometry
from . import capture as _capture


class Watched:
    """Host-side bookkeeping for one recorded variable."""

    def __init__(self, name: str, var: Any):
        self.name, self.var = name, var
        self.layout = _dtensor.layout_of(var)
        self.live_layout = _dtensor.live_layout(var)
        self.geometry = shard_geometry(tuple(var.shape), self.layout)
        # the blocks this process's shards hold (a client of a multi-client run: some)
        self.held = self.geometry.held_groups(
            _dtensor.local_device_ids(None if self.live_layout is None else self.live_layout.mesh)
        )
        self.dtype = var.dtype.name
        self.nbytes_unique = self.geometry.num_unique * math.prod(self.geometry.local_shape) * var.dtype.size


def choose(variables: Any, wanted: Sequence | None = None) -> list[tuple[str, object]]:
    """``(name, variable)`` of the ``wanted`` variables (names or variables; None: all)
    among the optimizer's ``variables``, in the order asked."""
    names = unique_names(variables)
    chosen = list(range(len(variables)))
    if wanted is not None:
        chosen = []
        for want in wanted:
            key = want if isinstance(want, str) else variable_name(want)
            key = key[:-2] if key.endswith(":0") else key
            if key not in names:
                raise ValueError(
                    f"Recorder(variables=...) names {key!r}, which the optimizer does not update. Allowed: {names}."
                )
            chosen.append(names.index(key))
    return [(names[i], variables[i]) for i in chosen]


def applied_momentum(optimizer: Any) -> float:
    """What tf-keras multiplies by (its tf.cast of the Python float goes through float32)."""
    return float(tf.cast(optimizer.momentum, tf.float64).numpy())


def hyper(optimizer: Any, watched: list) -> dict:
    """The optimizer's settings a recording keeps beside the update rule: weight decay
    (and which variables it decays) and the EMA overwrite frequency."""
    wd = getattr(optimizer, "weight_decay", None)
    return {
        "weight_decay": None if wd is None else float(tf.cast(wd, tf.float64).numpy()),
        "decayed": tuple(w.name for w in watched if wd is not None and optimizer._use_weight_decay(w.var)),
        "ema_overwrite_frequency": (
            getattr(optimizer, "ema_overwrite_frequency", None) if getattr(optimizer, "use_ema", False) else None
        ),
    }


def grad_values(watched: list, event: Any) -> dict:
    """The gradients the update applied, laid out like their variables (zeros where
    tf-keras filtered a variable's gradient out: nothing was applied)."""
    opt = event.optimizer
    in_event = {opt._var_key(v): i for i, v in enumerate(event.variables)}
    out = {}
    for w in watched:
        i = in_event.get(opt._var_key(w.var))
        if i is None:  # no gradient this step (filtered by tf-keras): nothing applied
            out[(w.name, "grad")] = tf.zeros_like(w.var.read_value())
            continue
        grad = event.grads[i]
        if isinstance(grad, tf.IndexedSlices):
            grad = tf.convert_to_tensor(grad)
        if w.live_layout is not None and not (
            tf.executing_eagerly() and _dtensor.live_layout(grad) == w.live_layout
        ):  # relayout would hide replicas that disagree
            grad = _dtensor.relayout(grad, w.live_layout)
        out[(w.name, "grad")] = grad
    return out


def pv_values(watched: list, kinds: Sequence[str], optimizer: Any, copy: bool = True) -> dict:
    """The recorded parameters and velocities, read from the variables (``copy=False``:
    with ``value()``, without ``read_value()``'s identity op, where only reductions
    read them)."""

    def read(var):
        return var.read_value() if copy else var.value()

    out = {}
    for w in watched:
        if "param" in kinds:
            out[(w.name, "param")] = read(w.var)
        if "velocity" in kinds:
            out[(w.name, "velocity")] = read(optimizer.velocity(w.var))
    return out


def eager_pv(watched: list, kinds: Sequence[str], event: Any, optimizer: Any) -> dict:
    """An eager update's parameters (and velocities) as it reports them, read from the
    variables for those it did not update."""
    in_event = {event.optimizer._var_key(v): i for i, v in enumerate(event.variables)}
    pv = {}
    for w in watched:
        i = in_event.get(event.optimizer._var_key(w.var))
        pv[(w.name, "param")] = event.params[i] if i is not None else w.var.read_value()
        if "velocity" in kinds:
            pv[(w.name, "velocity")] = event.velocities[i] if i is not None else optimizer.velocity(w.var).read_value()
    return pv


def meta_row(event: Any) -> Any:
    """The step's (iteration, learning rate, mean loss, 0) as one float64 row (the last
    column holds a skipped update's loss scale: ``skip_row``)."""
    loss = (
        tf.constant(float("nan"), tf.float64) if event.loss is None else tf.reduce_mean(tf.cast(event.loss, tf.float64))
    )
    return tf.stack(
        [
            tf.cast(event.iteration, tf.float64),
            tf.cast(event.learning_rate, tf.float64),
            loss,
            tf.constant(0.0, tf.float64),
        ]
    )


def skip_row(iteration: Any, loss_scale: Any) -> Any:
    """The row of an update a dynamic loss scale skipped: (iteration, NaN, NaN, the loss
    scale it used), told from an applied update's row by its loss scale (always >= 1)."""
    nan = tf.constant(float("nan"), tf.float64)
    return tf.stack([tf.cast(iteration, tf.float64), nan, nan, tf.cast(loss_scale, tf.float64)])


def host_values(values: dict, by_name: dict, kinds: Sequence[str], mode: str) -> dict:
    """Eager values to host entries: shards (full) or block stats (stats mode)."""
    out = {}
    for (name, kind), t in values.items():
        if kind not in kinds:
            continue
        w = by_name[name]
        if _capture.is_empty(w):  # nothing to read (and DTensor loses its layout)
            out[(name, kind)] = _capture.empty_value(w, mode)
        elif mode == "full":  # views, not copies: the one host copy is made at assembly
            out[(name, kind)] = _dtensor.unpack(t, copy=False)
        else:
            out[(name, kind)] = _capture.read_block_stats(_capture.block_stats(t, w.geometry), w)
    return out


def global_value(w: Any, value: Any) -> np.ndarray:
    """The global value (NaN where other clients hold the blocks)."""
    shards = _dtensor.unpack(value)
    return w.geometry.assemble(np.stack([shards[at[0]] for _, at in w.held]), [g for g, _ in w.held])
