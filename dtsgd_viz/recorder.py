"""``Recorder``: a hook that keeps every shard of every update as plain numpy data.

Eager updates are copied to the host at once. Inside a ``tf.function`` (the normal
training step) nothing can call back into Python under DTensor, so the recorder writes
each update into device-side buffers (see ``_capture``) and copies them to the host in
one batch whenever the recording is read, on ``flush()``, every few iterations of
``Recorder.loop`` and from ``Recorder.keras_callback`` during ``model.fit``. Steps
overwritten before a flush are listed in ``recording.dropped_steps`` (and warned
about), never silently lost::

    rec = dtsgd_viz.Recorder(every=1, kinds=("param", "velocity"))
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    for _ in rec.loop(100):          # flushes the device buffers as it goes
        train_step()                 # a tf.function calling opt.apply_gradients
    rec.recording.global_values("w", "velocity")

Post-update parameters and velocities are read at the start of the *next* update (and
for the latest update from the variables at flush): inside one DTensor ``tf.function``
a read placed right after tf-keras' assignments was seen to return pre-update values.
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from . import _capture, _dtensor
from ._dtensor import tf
from ._hostlog import HostLog
from .geometry import shard_geometry
from .recording import (
    KINDS, NONFINITE_GRAD, NONFINITE_PARAM, Hyperparameters, Recording, VariableRecord,
    check_kinds,
)

STAGING_BUDGET_BYTES = 128 * 2**20
MAX_BUFFER_STEPS = 8
STATS_BUFFER_STEPS = 256
DEFAULT_DECIMATE_STEPS = 1000
MODES = ("full", "stats")


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


def _check_int(name, value, minimum=1, allow_none=False):
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        allowed = f"None or an integer >= {minimum}" if allow_none else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {allowed}. Received: {name}={value!r}.")


class _Watched:
    """Host-side bookkeeping for one recorded variable."""

    def __init__(self, name, var):
        self.name, self.var = name, var
        self.layout = _dtensor.layout_of(var)
        self.live_layout = _dtensor.live_layout(var)
        self.geometry = shard_geometry(tuple(var.shape), self.layout)
        self.order = _capture.group_order(self.geometry)
        self.dtype = var.dtype.name
        self.nbytes_unique = (
            self.geometry.num_unique * math.prod(self.geometry.local_shape) * var.dtype.size
        )


class Recorder:
    """Records every ``every``-th update of one optimizer, per shard.

    Args:
      every: record updates whose iteration is a multiple of ``every`` (>= 1).
      kinds: any of ``"param"`` (after the update), ``"velocity"`` (momentum slot after
        the update), ``"grad"`` (the gradient applied).
      variables: names (``"dense/kernel"``) or variables to record; None records all.
      mode: ``"full"`` keeps every shard's values; ``"stats"`` keeps, per shard, the L2
        norm, mean and max |x|, computed on the device (tiny, for long runs).
      max_steps: keep only the last ``max_steps`` recorded steps (a ring); with
        ``decimate=True`` keep an evenly thinned history of at most ``max_steps``
        (default 1000) instead.
      buffer_steps: device-side slots between flushes inside ``tf.function``. Full mode:
        up to 8 within a 128 MiB budget (each slot adds branches to the traced graph);
        stats mode: 256.
    """

    def __init__(self, every=1, kinds=KINDS, variables=None, buffer_steps=None, mode="full",
                 max_steps=None, decimate=False):
        _check_int("every", every)
        _check_int("buffer_steps", buffer_steps, allow_none=True)
        _check_int("max_steps", max_steps, allow_none=True)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}. Received: mode={mode!r}.")
        if not isinstance(decimate, bool):
            raise TypeError(f"decimate must be True or False. Received: {decimate!r}.")
        self.every, self.mode = every, mode
        self.kinds = check_kinds(kinds)
        self._wanted = None if variables is None else list(variables)
        self._buffer_steps = buffer_steps
        if decimate and max_steps is None:
            max_steps = DEFAULT_DECIMATE_STEPS
        self.max_steps, self.decimate = max_steps, decimate
        self._log = HostLog(max_steps, decimate, every)
        self._optimizer = None
        self._watched: list[_Watched] = []
        self._initial = None
        self._dropped: list[int] = []
        self._cache = None
        self._staged = False

    # ---- set-up -------------------------------------------------------------------------

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
        self._watched = [_Watched(names[i], variables[i]) for i in chosen]
        self._mesh = optimizer.mesh
        self._mesh_spec = (
            _dtensor.mesh_spec(self._mesh) if self._mesh is not None
            else (self._watched[0].layout.mesh if self._watched else None)
        )
        per_step = sum(w.nbytes_unique for w in self._watched) * len(self.kinds)
        if self.mode == "stats":
            self.buffer_steps = self._buffer_steps or STATS_BUFFER_STEPS
        else:
            self.buffer_steps = self._buffer_steps or int(
                min(MAX_BUFFER_STEPS, max(2, STAGING_BUDGET_BYTES // max(per_step, 1))))
        self._row_slots = self.buffer_steps if self.mode == "stats" else max(self.buffer_steps, 64)
        self._last_step = int(_dtensor.unpack(optimizer.iterations)[0])

    def _pv_kinds(self):
        return [k for k in ("param", "velocity") if k in self.kinds]

    def _stats_width(self, kinds):
        if self.mode != "stats":
            return 0
        return sum(w.geometry.num_unique * 3 for w in self._watched for _ in kinds)

    def _make_staging(self):
        v = len(self._watched)
        with tf.init_scope():
            self._grad_rows = _capture.RowBuffer(
                self._row_slots, 3 + v + self._stats_width(["grad"] if "grad" in self.kinds else []),
                self._mesh)
            self._pv_rows = _capture.RowBuffer(
                self._row_slots, 1 + v + self._stats_width(self._pv_kinds()), self._mesh)
            self._ring = (_capture.ValueRing(self.buffer_steps, self._watched, self.kinds)
                          if self.mode == "full" else None)
            self._initial_vars = [_dtensor.zeros_like_variable(w.var) for w in self._watched]
            self._has_initial = _dtensor.replicated_scalar_variable(0, self._mesh, tf.int32)
        self._staged = True

    # ---- rows: what one step leaves behind, computed on the devices --------------------

    def _row(self, head, values, kinds, bit):
        """``head`` + one non-finite flag per variable + (stats mode) block stats per
        (variable, kind). The flag of a kind whose stats are computed comes from its block
        means (a NaN/Inf anywhere makes the sum non-finite), saving a pass over the data."""
        own_kind = "param" if bit == NONFINITE_PARAM else "grad"
        flags, stats = [], []
        for w in self._watched:
            x = values[(w.name, own_kind)]
            means = None
            if self.mode == "stats":
                per = {k: _capture.block_stats(values[(w.name, k)], w.geometry, self._mesh)
                       for k in kinds}
                stats += [per[k] for k in kinds]
                if own_kind in per:
                    means = tf.reshape(per[own_kind], (-1, 3))[:, 1]
            finite = tf.reduce_all(tf.math.is_finite(means if means is not None else x))
            flags.append(tf.cast(tf.logical_not(finite), tf.float64) * bit)
        return tf.concat([tf.stack([tf.cast(h, tf.float64) for h in head] + flags), *stats], 0)

    def _grad_values(self, event):
        opt = event.optimizer
        in_event = {opt._var_key(v): i for i, v in enumerate(event.variables)}
        out = {}
        for w in self._watched:
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
                grad = _dtensor.dtensor.relayout(grad, w.live_layout)
            out[(w.name, "grad")] = grad
        return out

    def _pv_values(self, optimizer, by_key=None):
        out = {}
        for w in self._watched:
            p = (by_key or {}).get(optimizer._var_key(w.var))
            out[(w.name, "param")] = p if p is not None else w.var.read_value()
            if "velocity" in self.kinds:
                out[(w.name, "velocity")] = optimizer.velocity(w.var).read_value()
        return out

    def _grad_row(self, event, grads):
        loss = (tf.constant(float("nan"), tf.float64) if event.loss is None
                else tf.reduce_mean(tf.cast(event.loss, tf.float64)))
        kinds = ["grad"] if "grad" in self.kinds else []
        return self._row([event.iteration, event.learning_rate, loss], grads, kinds, NONFINITE_GRAD)

    def _pv_row(self, step, pv):
        return self._row([step], pv, self._pv_kinds(), NONFINITE_PARAM)

    # ---- hook protocol ----------------------------------------------------------------------

    def before_update(self, optimizer, variables, params):
        if self._optimizer is None:
            return
        by_key = {optimizer._var_key(v): p for v, p in zip(variables, params)}
        if tf.executing_eagerly():
            if self._initial is None:
                self._initial = [self._global(w, by_key.get(optimizer._var_key(w.var), w.var))
                                 for w in self._watched]
            return
        if not self._staged:
            self._make_staging()

        def copy():
            for w, var in zip(self._watched, self._initial_vars):
                var.assign(by_key.get(optimizer._var_key(w.var), w.var.read_value()))
            self._has_initial.assign(1)
            return tf.constant(True)

        tf.cond(tf.equal(self._has_initial.read_value(), 0), copy, lambda: tf.constant(False))
        # the previous update's results, read before this update changes them
        prev = tf.cast(optimizer.iterations.read_value(), tf.int64)
        due = tf.logical_and(prev > 0, tf.equal(prev % self.every, 0))
        pv = self._pv_values(optimizer, by_key)
        self._write_row(self._pv_rows, due, prev, lambda: self._pv_row(prev, pv))
        if self._ring is not None:
            self._ring.write(due, (prev // self.every) % self.buffer_steps,
                             {k: v for k, v in pv.items() if k[1] in self.kinds})

    def after_update(self, event):
        if self._optimizer is None:
            return
        grads = self._grad_values(event)
        if tf.executing_eagerly():
            self._record_eager(event, grads)
            return
        if not self._staged:
            self._make_staging()
        it = tf.cast(event.iteration, tf.int64)
        record = tf.equal(it % self.every, 0)
        self._write_row(self._grad_rows, record, it, lambda: self._grad_row(event, grads))
        if self._ring is not None and "grad" in self.kinds:
            self._ring.write(record, (it // self.every) % self.buffer_steps, grads)

    def _write_row(self, buffer, predicate, step, make_row):
        index = tf.where(predicate, (step // self.every) % buffer.slots,
                         tf.constant(buffer.slots, tf.int64))
        if self.every == 1:
            buffer.write(make_row(), index)
        else:  # skip the reductions on steps that are not recorded
            row = tf.cond(predicate, make_row, lambda: tf.zeros(buffer.width, tf.float64))
            buffer.write(row, index)

    def _record_eager(self, event, grads):
        self.flush()  # keep order if traced steps ran before this eager one
        step = int(_dtensor.unpack(event.iteration)[0])
        self._last_step = max(self._last_step, step)
        if step % self.every or not self._log.wants(step):
            return
        pv = {}
        for w, i in self._event_index(event):
            pv[(w.name, "param")] = event.params[i] if i is not None else w.var.read_value()
            if "velocity" in self.kinds:
                pv[(w.name, "velocity")] = (event.velocities[i] if i is not None
                                            else self._optimizer.velocity(w.var).read_value())
        grow = _dtensor.unpack(self._grad_row(event, grads))[0]
        prow = _dtensor.unpack(self._pv_row(event.iteration, pv))[0]
        values = {}
        if self.mode == "full":
            values = {key: _dtensor.unpack(t) for key, t in {**grads, **pv}.items()
                      if key[1] in self.kinds}
        self._append(grow, prow, values)

    def _event_index(self, event):
        opt = event.optimizer
        in_event = {opt._var_key(v): i for i, v in enumerate(event.variables)}
        return [(w, in_event.get(opt._var_key(w.var))) for w in self._watched]

    # ---- host side ----------------------------------------------------------------------------

    def _global(self, w, value):
        shards = _dtensor.unpack(value)
        return w.geometry.assemble(np.stack([shards[g[0]] for g in w.geometry.replica_groups]))

    def _split_stats(self, row, offset, kinds):
        out = {}
        for w in self._watched:
            for k in kinds:
                n = w.geometry.num_unique * 3
                out[(w.name, k)] = row[offset:offset + n].reshape(-1, 3)[w.order]
                offset += n
        return out

    def _append(self, grow, prow, values):
        v = len(self._watched)
        flags = (grow[3:3 + v].astype(np.uint8) & NONFINITE_GRAD) | \
            (prow[1:1 + v].astype(np.uint8) & NONFINITE_PARAM)
        entry = {"lr": grow[1], "loss": grow[2], "flags": flags,
                 "mismatch": np.zeros(v, np.uint8)}
        if self.mode == "stats":
            entry["stats"] = {
                **self._split_stats(grow, 3 + v, ["grad"] if "grad" in self.kinds else []),
                **self._split_stats(prow, 1 + v, self._pv_kinds()),
            }
        else:
            blocks = {}
            for wi, w in enumerate(self._watched):
                groups = w.geometry.replica_groups
                for ki, kind in enumerate(KINDS):
                    if kind not in self.kinds:
                        continue
                    parts = values[(w.name, kind)]
                    if any(parts[d].tobytes() != parts[g[0]].tobytes()
                           for g in groups for d in g[1:]):
                        entry["mismatch"][wi] |= 1 << ki
                    blocks[(w.name, kind)] = np.stack([parts[g[0]] for g in groups])
            entry["values"] = blocks
        self._log.append(int(grow[0]), entry)
        self._cache = None

    def flush(self) -> int:
        """Copy staged steps from the devices to the host; returns how many arrived."""
        if self._optimizer is None or not self._staged:
            return 0
        if self._initial is None and int(_dtensor.unpack(self._has_initial)[0]):
            self._initial = [self._global(w, var) for w, var in zip(self._watched, self._initial_vars)]
        current = int(_dtensor.unpack(self._optimizer.iterations)[0])
        if current <= self._last_step:
            return 0
        grows = {int(r[0]): r for r in self._grad_rows.read() if r[0] > self._last_step}
        prows = {int(r[0]): r for r in self._pv_rows.read() if r[0] > self._last_step}
        first = self._last_step // self.every + 1
        expected = [s * self.every for s in range(first, current // self.every + 1)]
        ring_span = self.buffer_steps * self.every
        latest = max(grows) if grows else 0
        arrived, dropped = 0, []
        live = None
        for step in expected:
            grow, prow = grows.get(step), prows.get(step)
            if prow is None and step == current and grow is not None:
                live = live or self._live_pv()
                prow = live[0]
            in_ring = self._ring is None or (step + ring_span > latest and current <= step + ring_span)
            if grow is None or prow is None or not in_ring:
                dropped.append(step)
                continue
            if not self._log.wants(step):
                continue
            values = {}
            if self._ring is not None:
                slot = (step // self.every) % self.buffer_steps
                for (name, kind) in self._ring.values[slot]:
                    if kind == "grad" or step != current:
                        values[(name, kind)] = self._ring.read(slot, (name, kind))
                if step == current:
                    values.update(live[1])
            self._append(grow, prow, values)
            arrived += 1
        self._last_step = current
        if dropped:
            self._dropped.extend(dropped)
            warnings.warn(
                f"Recorder: {len(dropped)} recorded step(s) ({dropped[0]}..{dropped[-1]}) were "
                f"overwritten on the devices before being read. Read or flush the recorder at "
                f"least every {ring_span} steps (rec.flush(), or iterate with rec.loop(n)), "
                "or raise buffer_steps.",
                RuntimeWarning, stacklevel=2,
            )
        return arrived

    def _live_pv(self):
        """The latest update's results, read from the variables (eagerly, so exact)."""
        pv = self._pv_values(self._optimizer)
        row = _dtensor.unpack(self._pv_row(self._optimizer.iterations.read_value(), pv))[0]
        values = {}
        if self.mode == "full":
            values = {key: _dtensor.unpack(t) for key, t in pv.items() if key[1] in self.kinds}
        return row, values

    def loop(self, steps, flush_every=None):
        """Iterate ``range(steps)`` (or any iterable), flushing the device buffers often
        enough that nothing is overwritten, and once more at the end."""
        items = range(steps) if isinstance(steps, int) else steps
        flush_every = flush_every or self._flush_interval()
        try:
            for i, item in enumerate(items, 1):
                yield item
                if i % flush_every == 0:
                    self.flush()
        finally:
            self.flush()

    def _flush_interval(self) -> int:
        slots = getattr(self, "buffer_steps", None) or self._buffer_steps or 2
        return max(1, slots * self.every // 2)

    def keras_callback(self):
        """A tf-keras ``Callback`` that flushes during and after ``model.fit``."""
        import tf_keras

        rec = self

        class _Flush(tf_keras.callbacks.Callback):
            def on_train_batch_end(self, batch, logs=None):
                if (batch + 1) % rec._flush_interval() == 0:
                    rec.flush()

            def on_train_end(self, logs=None):
                rec.flush()

        return _Flush()

    # ---- the recording ------------------------------------------------------------------------

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
        entries = self._log.entries
        n, v = len(entries), len(self._watched)
        records = []
        for i, w in enumerate(self._watched):
            local = w.geometry.local_shape
            blocks, stats = {}, {}
            for k in self.kinds:
                if self.mode == "full":
                    vals = [e["values"][(w.name, k)] for _, e in entries]
                    blocks[k] = (np.stack(vals) if vals else
                                 np.zeros((0, w.geometry.num_unique, *local), w.dtype))
                else:
                    vals = [e["stats"][(w.name, k)] for _, e in entries]
                    stats[k] = (np.stack(vals) if vals else
                                np.zeros((0, w.geometry.num_unique, 3))).astype(np.float64)
            initial = (self._initial[i] if self._initial is not None
                       else np.full(w.geometry.global_shape, np.nan, w.dtype))
            records.append(VariableRecord(w.name, w.geometry.global_shape, w.dtype, w.layout,
                                          initial, blocks, stats))
        opt = self._optimizer
        lr = np.array([e["lr"] for _, e in entries], np.float64).reshape(n)
        return Recording(
            mesh=self._mesh_spec,
            records=tuple(records),
            kinds=self.kinds,
            steps=np.array([s for s, _ in entries], np.int64).reshape(n),
            hyperparameters=Hyperparameters(lr, float(opt.momentum), bool(opt.nesterov)),
            loss_values=np.array([e["loss"] for _, e in entries], np.float64).reshape(n),
            nonfinite=np.array([e["flags"] for _, e in entries], np.uint8).reshape(n, v),
            mismatch=np.array([e["mismatch"] for _, e in entries], np.uint8).reshape(n, v),
            dropped_steps=np.asarray(sorted(self._dropped), np.int64),
            mode=self.mode,
        )
