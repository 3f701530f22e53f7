"""``Recorder``: a hook that keeps every shard of every update as plain numpy data.

Eager updates are copied to the host at once. Inside a ``tf.function`` (the normal
training step) nothing can call back into Python under DTensor (``tf.py_function``
has no layout propagation), so the recorder stages each update in device-side
variables laid out like the parameter, in a ring of ``buffer_steps`` slots picked
with ``tf.cond``; the ring is copied to the host in one batch whenever the
recording is read, on ``flush()``, and every ``buffer_steps // 2`` iterations of
``Recorder.loop``. Steps overwritten before a flush are listed in
``recording.dropped_steps`` (and warned about), never silently lost::

    rec = dtsgd_viz.Recorder(every=1, kinds=("param", "velocity"))
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    for _ in rec.loop(100):          # flushes the device ring as it goes
        train_step()                 # a tf.function calling opt.apply_gradients
    rec.recording.global_values("w", "velocity")
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _dtensor
from ._dtensor import tf
from .geometry import shard_geometry
from .recording import (
    KINDS, NONFINITE_GRAD, NONFINITE_PARAM, Hyperparameters, Recording, VariableRecord,
    check_kinds,
)

STAGING_BUDGET_BYTES = 128 * 2**20
MAX_BUFFER_STEPS = 8
_META = 3  # step, learning rate, loss; then one non-finite flag word per variable


def variable_name(var) -> str:
    name = getattr(var, "name", None) or "variable"
    return name[:-2] if name.endswith(":0") else name


def _unique_names(variables) -> list[str]:
    names, seen = [], {}
    for v in variables:
        base = variable_name(v)
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


class _Watched:
    """Host-side bookkeeping for one recorded variable."""

    def __init__(self, name, var, index):
        self.name, self.var, self.index = name, var, index
        self.layout = _dtensor.layout_of(var)
        self.live_layout = _dtensor.live_layout(var)
        self.geometry = shard_geometry(tuple(var.shape), self.layout)
        self.dtype = var.dtype.name
        self.nbytes_unique = (
            self.geometry.num_unique * math.prod(self.geometry.local_shape) * var.dtype.size
        )


class Recorder:
    """Records every ``every``-th update of one optimizer, per shard.

    Args:
      every: record updates whose iteration is a multiple of ``every`` (>= 1).
      kinds: any of ``"param"`` (after the update), ``"velocity"`` (momentum slot
        after the update), ``"grad"`` (the gradient applied).
      variables: names (``"dense/kernel"``) or variables to record; None records all.
      buffer_steps: device-side ring slots used inside ``tf.function`` (each slot adds
        branches to the traced graph); None picks up
        to 8 within a 128 MiB staging budget.
    """

    def __init__(self, every=1, kinds=KINDS, variables=None, buffer_steps=None):
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError(f"every must be an integer >= 1. Received: every={every!r}.")
        if buffer_steps is not None and (
            isinstance(buffer_steps, bool) or not isinstance(buffer_steps, int) or buffer_steps < 1
        ):
            raise ValueError(f"buffer_steps must be None or an integer >= 1. Received: {buffer_steps!r}.")
        self.every = every
        self.kinds = check_kinds(kinds)
        self._wanted = None if variables is None else list(variables)
        self._buffer_steps = buffer_steps
        self._optimizer = None
        self._watched: list[_Watched] = []
        self._clear_host()

    def _clear_host(self):
        self._steps, self._lr, self._loss, self._flags, self._mismatch = [], [], [], [], []
        self._values = {}
        self._initial = None
        self._dropped: list[int] = []
        self._cache = None

    # ---- hook protocol --------------------------------------------------------------

    def on_build(self, optimizer, variables):
        if self._optimizer is not None:
            if self._optimizer is optimizer:
                return
            raise ValueError(
                "This Recorder is already attached to another optimizer; make one Recorder "
                "per optimizer."
            )
        names = _unique_names(variables)
        chosen = list(range(len(variables)))
        if self._wanted is not None:
            chosen = []
            for want in self._wanted:
                key = want if isinstance(want, str) else variable_name(want)
                key = key[:-2] if key.endswith(":0") else key
                if key not in names:
                    raise ValueError(
                        f"Recorder(variables=...) names {key!r}, which the optimizer does not "
                        f"update. Allowed: {names}."
                    )
                chosen.append(names.index(key))
        self._optimizer = optimizer
        self._watched = [_Watched(names[i], variables[i], i) for i in chosen]
        self._key_to_watched = {optimizer._var_key(w.var): w for w in self._watched}
        self._mesh = optimizer.mesh
        self._mesh_spec = (
            _dtensor.mesh_spec(self._mesh) if self._mesh is not None
            else (self._watched[0].layout.mesh if self._watched else None)
        )
        per_step = sum(w.nbytes_unique for w in self._watched) * len(self.kinds)
        self.buffer_steps = self._buffer_steps or int(
            min(MAX_BUFFER_STEPS, max(2, STAGING_BUDGET_BYTES // max(per_step, 1)))
        )
        self._last_step = int(_dtensor.unpack(optimizer.iterations)[0])
        self._staging = None  # created on first traced update

    def _make_staging(self):
        scalar = lambda v, dt: _dtensor.replicated_scalar_variable(v, self._mesh, dt)  # noqa: E731
        vec = len(self._watched) + _META

        def meta_var():
            init = np.full(vec, -1.0)
            if self._mesh is None:
                return tf.Variable(init, trainable=False)
            return _dtensor.variable(init, _dtensor.dtensor.Layout.replicated(self._mesh, 1))

        with tf.init_scope():
            self._staging = {
                "meta": [meta_var() for _ in range(self.buffer_steps)],
                "pv_meta": [meta_var() for _ in range(self.buffer_steps)],
                "values": [
                    {(w.name, k): _dtensor.zeros_like_variable(w.var) for w in self._watched
                     for k in self.kinds}
                    for _ in range(self.buffer_steps)
                ],
                "initial": [_dtensor.zeros_like_variable(w.var) for w in self._watched],
                "has_initial": scalar(0, tf.int32),
            }

    def before_update(self, optimizer, variables, params):
        if self._initial is not None:
            return
        by_key = {optimizer._var_key(v): p for v, p in zip(variables, params)}
        if tf.executing_eagerly():
            self._initial = [self._global(w, by_key.get(optimizer._var_key(w.var), w.var))
                             for w in self._watched]
            return
        if self._staging is None:
            self._make_staging()
        st = self._staging

        def copy():
            for w, var in zip(self._watched, st["initial"]):
                var.assign(by_key.get(optimizer._var_key(w.var), w.var.read_value()))
            st["has_initial"].assign(1)
            return tf.constant(True)

        tf.cond(tf.equal(st["has_initial"].read_value(), 0), copy, lambda: tf.constant(False))
        self._stage_previous(optimizer, by_key)

    def _stage_previous(self, optimizer, by_key):
        """Stage the parameters and velocities left by the previous update.

        Inside one DTensor ``tf.function`` a read placed after tf-keras' Nesterov
        ``assign_add`` was seen to return the pre-update value (control dependencies
        did not help), so post-update values are taken here, at the start of the next
        update, and for the latest update from the variables themselves at flush."""
        pv_kinds = [k for k in ("param", "velocity") if k in self.kinds]
        st = self._staging
        prev = tf.cast(optimizer.iterations.read_value(), tf.int64)
        due = tf.logical_and(prev > 0, tf.equal(prev % self.every, 0))
        slot = (prev // self.every) % self.buffer_steps
        current = {}
        for w in self._watched:
            param = by_key.get(optimizer._var_key(w.var), None)
            current[(w.name, "param")] = param if param is not None else w.var.read_value()
            if "velocity" in pv_kinds:
                current[(w.name, "velocity")] = optimizer.velocity(w.var).read_value()

        def meta():
            flags = [tf.cast(tf.logical_not(tf.reduce_all(tf.math.is_finite(
                current[(w.name, "param")]))), tf.float64) * NONFINITE_PARAM
                for w in self._watched]
            return tf.stack([tf.cast(prev, tf.float64), *flags])

        def write(k):
            for kind in pv_kinds:
                for w in self._watched:
                    st["values"][k][(w.name, kind)].assign(current[(w.name, kind)])
            st["pv_meta"][k].assign(tf.concat([meta(), tf.zeros(2, tf.float64)], 0))
            return tf.constant(True)

        self._in_slot(due, slot, write)

    def _in_slot(self, predicate, slot, write):
        """Run ``write(k)`` for ``k == slot`` when ``predicate``: nested ``tf.cond``s (DTensor
        has no layout propagation for ``switch_case`` or scatter into a buffer)."""

        def select(lo, hi):
            if hi - lo == 1:
                return write(lo)
            mid = (lo + hi) // 2
            return tf.cond(slot < mid, lambda: select(lo, mid), lambda: select(mid, hi))

        tf.cond(predicate, lambda: select(0, self.buffer_steps), lambda: tf.constant(False))

    def after_update(self, event):
        if self._optimizer is None:
            return
        values, meta = self._step_tensors(event)
        if tf.executing_eagerly():
            self.flush()  # keep order if traced steps ran before this eager one
            meta = _dtensor.unpack(meta())[0]
            if int(meta[0]) % self.every == 0:
                self._append(meta, {key: _dtensor.unpack(v) for key, v in values.items()})
            self._last_step = max(self._last_step, int(meta[0]))
            return
        if self._staging is None:
            self._make_staging()
        it = tf.cast(event.iteration, tf.int64)
        st = self._staging

        def write(k):
            if "grad" in self.kinds:
                for w in self._watched:
                    st["values"][k][(w.name, "grad")].assign(values[(w.name, "grad")])
            st["meta"][k].assign(meta())
            return tf.constant(True)

        self._in_slot(tf.equal(it % self.every, 0), (it // self.every) % self.buffer_steps, write)

    def _step_tensors(self, event):
        opt = event.optimizer
        in_event = {opt._var_key(v): i for i, v in enumerate(event.variables)}
        values, finite_inputs = {}, []
        for w in self._watched:
            i = in_event.get(opt._var_key(w.var))
            param = event.params[i] if i is not None else w.var.read_value()
            if i is not None:
                grad = event.grads[i]
                if isinstance(grad, tf.IndexedSlices):
                    grad = tf.convert_to_tensor(grad)
                if w.live_layout is not None and not (
                    tf.executing_eagerly() and _dtensor.live_layout(grad) == w.live_layout
                ):  # relayout would hide replicas that disagree
                    grad = _dtensor.dtensor.relayout(grad, w.live_layout)
            else:  # no gradient this step (filtered by tf-keras): nothing was applied
                grad = tf.zeros_like(param)
            kinds = {"param": param, "grad": grad}
            if "velocity" in self.kinds:
                kinds["velocity"] = (
                    event.velocities[i] if i is not None else opt.velocity(w.var).read_value()
                )
            for k in self.kinds:
                values[(w.name, k)] = kinds[k]
            finite_inputs.append((grad, kinds["param"]))
        loss = event.loss

        def meta():
            flags = []
            for grad, param in finite_inputs:
                bad_g = tf.logical_not(tf.reduce_all(tf.math.is_finite(grad)))
                bad_p = tf.logical_not(tf.reduce_all(tf.math.is_finite(param)))
                flags.append(tf.cast(bad_g, tf.float64) * NONFINITE_GRAD
                             + tf.cast(bad_p, tf.float64) * NONFINITE_PARAM)
            value = (tf.constant(float("nan"), tf.float64) if loss is None
                     else tf.reduce_mean(tf.cast(loss, tf.float64)))
            return tf.stack([
                tf.cast(event.iteration, tf.float64),
                tf.cast(event.learning_rate, tf.float64),
                value,
                *flags,
            ])

        return values, meta

    # ---- host side ---------------------------------------------------------------------

    def _global(self, w, value):
        shards = _dtensor.unpack(value)
        return w.geometry.assemble(np.stack([shards[g[0]] for g in w.geometry.replica_groups]))

    def _append(self, meta, shards):
        self._steps.append(int(meta[0]))
        self._lr.append(meta[1])
        self._loss.append(meta[2])
        self._flags.append(meta[_META:].astype(np.uint8))
        mismatch = np.zeros(len(self._watched), np.uint8)
        for wi, w in enumerate(self._watched):
            for ki, kind in enumerate(KINDS):
                if kind not in self.kinds:
                    continue
                parts = shards[(w.name, kind)]
                groups = w.geometry.replica_groups
                if any(parts[d].tobytes() != parts[g[0]].tobytes() for g in groups for d in g[1:]):
                    mismatch[wi] |= 1 << ki
                self._values.setdefault((w.name, kind), []).append(
                    np.stack([parts[g[0]] for g in groups])
                )
        self._mismatch.append(mismatch)
        self._cache = None

    def flush(self) -> int:
        """Copy staged steps from the devices to the host; returns how many arrived."""
        if self._optimizer is None or self._staging is None:
            return 0
        st = self._staging
        if self._initial is None and int(_dtensor.unpack(st["has_initial"])[0]):
            self._initial = [self._global(w, v) for w, v in zip(self._watched, st["initial"])]
        metas = [(_dtensor.unpack(m)[0], k) for k, m in enumerate(st["meta"])]
        fresh = sorted((m for m in metas if m[0][0] > self._last_step), key=lambda m: m[0][0])
        current = int(_dtensor.unpack(self._optimizer.iterations)[0])
        got = {int(m[0]) for m, _ in fresh}
        first = self._last_step // self.every + 1
        expected = [s * self.every for s in range(first, current // self.every + 1)]
        dropped = [s for s in expected if s not in got]
        if dropped:
            self._dropped.extend(dropped)
            warnings.warn(
                f"Recorder: {len(dropped)} recorded step(s) ({dropped[0]}..{dropped[-1]}) were "
                f"overwritten on the devices before being read. Read or flush the recorder at "
                f"least every {self.buffer_steps * self.every} steps (rec.flush(), or iterate "
                "with rec.loop(n)), or raise buffer_steps.",
                RuntimeWarning,
                stacklevel=2,
            )
        arrived = 0
        for meta, k in fresh:
            step = int(meta[0])
            pv = _dtensor.unpack(st["pv_meta"][k])[0]
            shards = {}
            for (name, kind), var in st["values"][k].items():
                if kind == "grad" or int(pv[0]) == step:
                    shards[(name, kind)] = _dtensor.unpack(var)
            meta = meta.copy()
            if int(pv[0]) == step:
                param_flags = pv[1:1 + len(self._watched)]
            elif step == current:  # the latest update: its results are in the variables
                live = {}
                for w in self._watched:
                    live[(w.name, "param")] = _dtensor.unpack(w.var)
                    if "velocity" in self.kinds:
                        live[(w.name, "velocity")] = _dtensor.unpack(self._optimizer.velocity(w.var))
                shards.update({key: v for key, v in live.items() if key[1] in self.kinds})
                param_flags = np.array([
                    0.0 if all(np.isfinite(x).all() for x in live[(w.name, "param")])
                    else NONFINITE_PARAM for w in self._watched])
            else:  # overwritten by a later update before this flush
                self._dropped.append(step)
                continue
            flags = meta[_META:].astype(np.uint8) & NONFINITE_GRAD
            meta[_META:] = flags | param_flags.astype(np.uint8)
            self._append(meta, shards)
            arrived += 1
        self._last_step = max(self._last_step, current)
        return arrived

    def loop(self, steps, flush_every=None):
        """Iterate ``range(steps)`` (or any iterable), flushing the device buffer often
        enough that nothing is overwritten, and once more at the end."""
        items = range(steps) if isinstance(steps, int) else steps
        flush_every = flush_every or max(1, self.buffer_steps_hint * self.every // 2)
        try:
            for i, item in enumerate(items, 1):
                yield item
                if i % flush_every == 0:
                    self.flush()
        finally:
            self.flush()

    @property
    def buffer_steps_hint(self) -> int:
        return getattr(self, "buffer_steps", None) or self._buffer_steps or 2

    def keras_callback(self):
        """A tf-keras ``Callback`` that flushes during and after ``model.fit``."""
        import tf_keras

        rec = self

        class _Flush(tf_keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if (batch + 1) % max(1, rec.buffer_steps_hint * rec.every // 2) == 0:
                    rec.flush()

            def on_train_end(self, logs=None):
                rec.flush()

        return _Flush()

    @property
    def recording(self) -> Recording:
        """Everything recorded so far (flushes the devices first)."""
        if self._optimizer is None:
            raise ValueError(
                "This Recorder has not seen an optimizer yet: attach it with "
                "SGD(..., hooks=[rec]) or opt.add_hook(rec) and run at least one update."
            )
        self.flush()
        if self._cache is None:
            self._cache = self._build()
        return self._cache

    def _build(self) -> Recording:
        n = len(self._steps)
        records = []
        for i, w in enumerate(self._watched):
            local = w.geometry.local_shape
            blocks = {}
            for k in self.kinds:
                vals = self._values.get((w.name, k), [])
                blocks[k] = (np.stack(vals) if vals else
                             np.zeros((0, w.geometry.num_unique, *local), w.dtype))
            initial = (self._initial[i] if self._initial is not None
                       else np.full(w.geometry.global_shape, np.nan, w.dtype))
            records.append(VariableRecord(w.name, w.geometry.global_shape, w.dtype, w.layout,
                                          initial, blocks))
        opt = self._optimizer
        hp = Hyperparameters(np.asarray(self._lr, np.float64).reshape(n),
                             float(opt.momentum), bool(opt.nesterov))
        v = len(self._watched)
        return Recording(
            mesh=self._mesh_spec,
            records=tuple(records),
            kinds=self.kinds,
            steps=np.asarray(self._steps, np.int64).reshape(n),
            hyperparameters=hp,
            loss_values=np.asarray(self._loss, np.float64).reshape(n),
            nonfinite=np.asarray(self._flags, np.uint8).reshape(n, v),
            mismatch=np.asarray(self._mismatch, np.uint8).reshape(n, v),
            dropped_steps=np.asarray(sorted(self._dropped), np.int64),
        )
