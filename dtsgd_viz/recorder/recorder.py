"""``Recorder``: a hook that keeps every shard of every update as plain numpy data.

Eager updates are taken to the host at once. Inside a ``tf.function`` (the normal
training step) nothing can call back into Python under DTensor, so the recorder writes
each recorded update into device-side buffers (see ``_capture``; steps not recorded run
none of it) and moves them to the host in one batch whenever the recording is read, on
``flush()``, once per ring of ``Recorder.loop`` and from ``Recorder.keras_callback``
during ``model.fit``. The host keeps read-only views of the device buffers (TensorFlow
never writes into a buffer that is still held) and copies them once, into the
recording's own arrays, when the recording is read. Steps overwritten before a flush
are listed in ``recording.dropped_steps`` (and warned about), never silently lost::

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
import os
import warnings
import weakref

import numpy as np

from . import capture as _capture
from ..dtensor import core as _dtensor
from .. import progress as _progress
from ..dtensor.core import tf
from .hostlog import HostLog, StatsLog, assemble, entry
from .rulewatch import RuleWatch
from ..geometry import shard_geometry
from ..dtensor.model import unique_names, variable_name
from ..recording.recording import KINDS, Part, Recording, check_kinds

STAGING_BUDGET_BYTES = 256 * 2**20
MAX_BUFFER_STEPS = 8
LARGE_BUFFER_STEPS = 4
STATS_BUFFER_STEPS = 512
DEFAULT_DECIMATE_STEPS = 1000
MODES = ("full", "stats")


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
        # the blocks this process's shards hold (a client of a multi-client run: some)
        self.held = self.geometry.held_groups(_dtensor.local_device_ids(
            None if self.live_layout is None else self.live_layout.mesh))
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
        8 for small tensors, 4 when one is large, within a 256 MiB budget (``rec.loop``
        flushes every ``buffer_steps - 1`` recorded steps: each flush waits for the
        devices); stats mode: 512. Full mode
        with ``buffer_steps=0`` stages nothing but gradients and reads parameters and
        velocities from the variables at each flush (after every recorded step in
        ``rec.loop`` and the Keras callback): least device memory, but a wait per step;
        steps no flush saw are then reported in ``dropped_steps``. Under ``model.fit``
        with ``steps_per_execution=k`` the Keras callback raises it to hold k updates
        (and two executions by default when that fits the budget).
      path: a folder to stream the recording to (``store.py``: a zarr store): every
        flushed batch of steps is written and committed there, and the host keeps
        nothing of it, so memory stays bounded however long the run;
        ``rec.recording`` and ``load_recording(path)`` read it back, also while the run
        writes or after it was killed. ``rec.close()`` (or ``with Recorder(...)``, or
        the end of the process) marks the store closed. Every recorded step is kept:
        thin with ``every``, not ``max_steps``/``decimate``.
    """

    def __init__(self, every=1, kinds=KINDS, variables=None, buffer_steps=None, mode="full",
                 max_steps=None, decimate=False, path=None):
        _check_int("every", every)
        _check_int("buffer_steps", buffer_steps, minimum=0, allow_none=True)
        _check_int("max_steps", max_steps, allow_none=True)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}. Received: mode={mode!r}.")
        if buffer_steps == 0 and mode != "full":
            raise ValueError("buffer_steps=0 (read at every flush) is for mode='full' only. "
                             f"Received: mode={mode!r}.")
        if not isinstance(decimate, bool):
            raise TypeError(f"decimate must be True or False. Received: {decimate!r}.")
        if path is not None and (max_steps is not None or decimate):
            raise ValueError(
                "Recorder(path=...) streams every recorded step to disk and keeps none in "
                f"memory: max_steps and decimate do not apply. Received: max_steps={max_steps!r}"
                f", decimate={decimate!r}. Thin the recording with every= instead.")
        self.path = None if path is None else os.fspath(path)
        self._writer = None  # the store's writer, made when the optimizer is known
        self.every, self.mode = every, mode
        self.kinds = check_kinds(kinds)
        self._wanted = None if variables is None else list(variables)
        self._buffer_steps = buffer_steps
        if decimate and max_steps is None:
            max_steps = DEFAULT_DECIMATE_STEPS
        self.max_steps, self.decimate = max_steps, decimate
        self._log = (StatsLog if mode == "stats" else HostLog)(max_steps, decimate, every)
        self._optimizer = None
        self._watched: list[_Watched] = []
        self._initial = None
        self._dropped: list[int] = []
        self._cache = None
        self._staged = False
        self._pending = []  # reads queued on the devices, not yet taken to the host
        # the off-step function (step_function / loop(step=...)): while it is traced the
        # hooks add nothing; the iteration its next update makes, as the host counts it
        # (None: not known yet); False once a flush saw the count go wrong
        self._suppressed = False
        self._next_update = None
        self._split_ok = True
        self._execution_steps = 1  # updates model.fit runs between two callback calls

    # ---- set-up -------------------------------------------------------------------------

    def on_build(self, optimizer, variables):
        if self._optimizer is not None:
            if self._optimizer is optimizer:
                return
            raise ValueError(
                "This Recorder is already attached to another optimizer; make one Recorder "
                "per optimizer."
            )
        names = unique_names(variables)
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
        self._per_step = sum(w.nbytes_unique for w in self._watched) * len(self.kinds)
        self._choose_slots()
        self._by_name = {w.name: w for w in self._watched}
        self._last_step = int(_dtensor.unpack(optimizer.iterations)[0])
        # what tf-keras multiplies by (its tf.cast of the Python float goes through float32)
        self._applied_momentum = float(tf.cast(optimizer.momentum, tf.float64).numpy())
        wd = getattr(optimizer, "weight_decay", None)
        self._hyper = {
            "weight_decay": None if wd is None else float(tf.cast(wd, tf.float64).numpy()),
            "decayed": tuple(w.name for w in self._watched
                             if wd is not None and optimizer._use_weight_decay(w.var)),
            "ema_overwrite_frequency": (getattr(optimizer, "ema_overwrite_frequency", None)
                                        if getattr(optimizer, "use_ema", False) else None),
        }
        # on_build runs eagerly (tf-keras builds in init_scope) right before the first update
        # it will see, or when the hook is attached to a built optimizer.
        self._initial = [self._global(w, w.var) for w in self._watched]
        self._rules = self._rule_watch(start=self._last_step)
        self._warned_untraced = False
        if self.path is not None:
            from ..recording.store import StoreWriter
            header = self._build()  # no steps yet: names what every batch will hold
            part = getattr(header, "part", None)
            self._writer = StoreWriter(self.path, header, 0 if part is None else part.client_id)
            # the end of the process (or of this recorder) closes the store: a run that
            # was killed leaves it open, and readers say so
            weakref.finalize(self, self._writer.close_at_exit)

    def _rule_watch(self, start):
        """The host-side rule check (full mode with parameters and velocities, from the
        parameters at iteration ``start``; velocities are known only from a fresh start)."""
        if self.mode != "full" or len(self._pv_kinds()) != 2 or start != 0:
            return None
        return RuleWatch(self._watched, self._initial, self._optimizer, self._applied_momentum,
                         self.every, **self._hyper)

    def _skip_untraced(self) -> None:
        """Skip the updates the optimizer made since the recorder last saw one while
        nothing was staged for them (called where staging starts, at the first trace
        with this recorder, and when the recording is read before any): a ``tf.function``
        traced before the Recorder was attached ran them, and a traced function calls
        only the hooks it was traced with. They are warned about once, never reported
        as overwritten, and the recording starts from the parameters they left."""
        with tf.init_scope():  # eagerly, also when called while a step is traced
            current = int(_dtensor.unpack(self._optimizer.iterations)[0])
            if current <= self._last_step:
                return
            first, self._last_step = self._last_step + 1, current
            if not len(self._log):
                self._initial = [self._global(w, w.var) for w in self._watched]
                self._rules = self._rule_watch(start=current)
                self._cache = None
        if self._warned_untraced:
            return
        self._warned_untraced = True
        warnings.warn(
            f"Recorder: the optimizer made {current - first + 1} update(s) (iterations "
            f"{first}..{current}) that this Recorder never saw: the step function "
            "(tf.function) was traced before the Recorder was attached, and a traced "
            "function calls only the hooks it was traced with. It must be re-traced: wrap "
            "the step in a new tf.function (model.fit: model.make_train_function(force=True))"
            ", or attach the recorder (SGD(..., hooks=[rec]) or opt.add_hook(rec)) before "
            "the step function's first call.",
            RuntimeWarning, stacklevel=3,
        )

    def _default_slots(self, per_step) -> int:
        """8 slots when every tensor fits a stacked ring; otherwise 4 (each slot of a large
        tensor is a full-size variable on the devices: 4 halve that memory, and
        ``benchmarks/offsteps.py`` saw no step-time difference between 4 and 8), and
        never more than the staging budget holds."""
        largest = max((w.var.shape.num_elements() * w.var.dtype.size for w in self._watched),
                      default=0)
        stacked = (MAX_BUFFER_STEPS + 1) * largest <= _capture.SMALL_RING_BYTES
        slots = MAX_BUFFER_STEPS if stacked else LARGE_BUFFER_STEPS
        return int(min(slots, max(2, STAGING_BUDGET_BYTES // max(per_step, 1))))

    def _choose_slots(self):
        """``buffer_steps``: as asked, or the default. Under ``model.fit`` with
        ``steps_per_execution=k`` the Keras callback runs once per k updates, so the ring
        must hold k recorded updates plus the one a periodic flush leaves: it gets at least
        that (an asked-for smaller ring is raised, with a warning) and, by default, two
        executions when they fit the staging budget (a flush every other call). Each slot
        is device memory: when holding one execution passes the budget, a warning says
        how much."""
        asked, k, per_step = self._buffer_steps, self._execution_steps, self._per_step
        if self.mode == "stats":
            slots = asked or STATS_BUFFER_STEPS
        else:
            slots = self._default_slots(per_step) if asked is None else asked
        if k > 1:
            leave = 1 if self._pv_kinds() else 0
            need = -(-k // self.every) + leave
            two = -(-2 * k // self.every) + leave
            if asked is None and (self.mode == "stats" or two * per_step <= STAGING_BUDGET_BYTES):
                need = two
            if slots < need:
                nbytes = need * per_step / 2**20
                if asked is not None:
                    warnings.warn(
                        f"Recorder(buffer_steps={asked}) cannot hold the {k} updates model.fit "
                        f"runs between two calls of the Keras callback (steps_per_execution={k})"
                        f": it stages {need} steps instead ({nbytes:.1f} MiB on the devices).",
                        RuntimeWarning, stacklevel=4)
                elif self.mode == "full" and need * per_step > STAGING_BUDGET_BYTES:
                    warnings.warn(
                        f"Recorder: keeping every update of model.fit with steps_per_execution"
                        f"={k} stages {need} steps on the devices ({nbytes:.1f} MiB, over the "
                        f"{STAGING_BUDGET_BYTES // 2**20} MiB staging budget). Record less "
                        "(every=, variables=, kinds=, mode='stats') or lower "
                        "steps_per_execution to use less device memory.",
                        RuntimeWarning, stacklevel=4)
                slots = need
        self.buffer_steps = slots
        self._row_slots = max(1, slots)

    def _hold_executions(self, steps, tuned=False):
        """Make the ring hold ``steps`` updates between two flushes (the Keras callback
        calls this before training: the ring is built when the step is first traced)."""
        self._execution_steps = max(self._execution_steps, steps)
        if self._optimizer is not None and not self._staged:
            self._choose_slots()
        if tuned:
            warnings.warn(
                "Recorder: steps_per_execution='auto' changes how many updates model.fit runs "
                "between two calls of the Keras callback while it trains, so the ring "
                "cannot be sized for it: updates beyond it are lost (listed in "
                "recording.dropped_steps). Give model.compile a fixed steps_per_execution.",
                RuntimeWarning, stacklevel=3)
        elif self._staged and self._flush_interval() < steps:
            warnings.warn(
                f"Recorder: its ring was built (at the first trace of the step function) for "
                f"{self._flush_interval()} updates between flushes, fewer than the {steps} "
                "model.fit now runs between two calls of the Keras callback "
                f"(steps_per_execution={steps}): updates will be lost (listed in "
                "recording.dropped_steps). Pass the callback to the first model.fit, or give "
                f"Recorder(buffer_steps={-(-steps // self.every) + 1}).",
                RuntimeWarning, stacklevel=3)

    def _pv_kinds(self):
        return [k for k in ("param", "velocity") if k in self.kinds]

    def _make_staging(self):
        self._skip_untraced()
        with tf.init_scope():
            self._meta = _capture.RowBuffer(self._row_slots, 3, self._mesh)
            if self.mode == "full":
                # buffer_steps=0: parameters and velocities are read from the variables at
                # each flush; only gradients (which no variable holds) are staged
                kinds = self.kinds if self.buffer_steps else [k for k in self.kinds if k == "grad"]
                self._ring = _capture.ValueRing(max(1, self.buffer_steps), self._watched, kinds)
                self._stats = None
            else:
                self._ring = None
                self._stats = _capture.StatsStaging(self.buffer_steps, self._watched,
                                                    self.kinds, self._mesh)
        staged = [self._optimizer.iterations, self._meta.var]
        staged += self._ring.variables if self._ring is not None else []
        staged += self._stats.variables if self._stats is not None else []
        self._read_staged = _capture.Reader(staged)
        self._staged = True

    # ---- what one step leaves behind -------------------------------------------------------

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

    def _pv_values(self, optimizer, copy=True):
        """The recorded parameters and velocities, read from the variables (``copy=False``:
        with ``value()``, without ``read_value()``'s identity op, where only reductions
        read them)."""
        def read(var):
            return var.read_value() if copy else var.value()
        out = {}
        for w in self._watched:
            if "param" in self.kinds:
                out[(w.name, "param")] = read(w.var)
            if "velocity" in self.kinds:
                out[(w.name, "velocity")] = read(optimizer.velocity(w.var))
        return out

    def _meta_row(self, event):
        loss = (tf.constant(float("nan"), tf.float64) if event.loss is None
                else tf.reduce_mean(tf.cast(event.loss, tf.float64)))
        return tf.stack([tf.cast(event.iteration, tf.float64),
                         tf.cast(event.learning_rate, tf.float64), loss])

    def _host(self, values):
        """Eager values to host entries: shards (full) or block stats (stats mode)."""
        out = {}
        for (name, kind), t in values.items():
            if kind not in self.kinds:
                continue
            w = self._by_name[name]
            if self.mode == "full":  # views, not copies: the one host copy is in _build
                out[(name, kind)] = _dtensor.unpack(t, copy=False)
            else:
                out[(name, kind)] = _capture.read_block_stats(_capture.block_stats(t, w.geometry), w)
        return out

    # ---- hook protocol ------------------------------------------------------------------------

    def before_update(self, optimizer, variables, params):
        if self._optimizer is None or tf.executing_eagerly() or self._suppressed:
            return
        if not self._staged:
            self._make_staging()
        self._stage_pv(optimizer)

    def _stage_pv(self, optimizer):
        """Stage the parameters and velocities of the update the optimizer's iteration
        counts, if it is recorded (at the start of the next update, or in the split step's
        copy function between two calls)."""
        # the previous update's results, read before this update changes them
        prev = tf.cast(optimizer.iterations.read_value(), tf.int64)
        due = tf.logical_and(prev > 0, tf.equal(prev % self.every, 0))
        slot = (prev // self.every) % max(1, self.buffer_steps)
        if self._ring is not None:
            if self._pv_kinds() and self.buffer_steps:
                # read inside the branch: nothing is read on steps not recorded, and the
                # update's in-place assignments never wait on (or copy around) our reads
                self._ring.write(due, slot, lambda: self._pv_values(optimizer))
        elif self._pv_kinds():
            # always in a branch: the branch reads the variables, so the update waits for
            # the whole branch instead of copying a parameter a pending read still holds
            self._write_stats(due, slot, lambda: self._pv_values(optimizer, copy=False),
                              branch=True)

    def after_update(self, event):
        if self._optimizer is None or self._suppressed:
            return
        if tf.executing_eagerly():
            self._record_eager(event, self._grad_values(event))
            return
        if not self._staged:
            self._make_staging()
        it = tf.cast(event.iteration, tf.int64)
        record = tf.equal(it % self.every, 0)

        def meta():
            self._meta.write(self._meta_row(event), (it // self.every) % self._meta.slots)
            return tf.constant(True)

        if self.every == 1:
            meta()
        else:  # steps not recorded run none of it
            _capture.cond(record, meta, lambda: tf.constant(False))
        if "grad" not in self.kinds:
            return
        grads = self._grad_values(event)
        slot = (it // self.every) % max(1, self.buffer_steps)
        if self._ring is not None:
            self._ring.write(record, slot, grads)
        else:
            self._write_stats(record, slot, lambda: grads)

    def _write_stats(self, predicate, slot, values, branch=False):
        """Block stats of ``values()`` into ``slot`` when ``predicate``: with ``every=1``
        (and not ``branch``) every step is recorded, so they are written unconditionally;
        otherwise the work sits behind a ``tf.cond`` so steps not recorded compute nothing."""
        def write(index):
            self._stats.write(values(), index)
            return tf.constant(True)

        if self.every == 1 and not branch:
            write(slot)
        else:
            _capture.cond(predicate, lambda: write(slot), lambda: tf.constant(False))

    def _record_eager(self, event, grads):
        self.flush()  # keep order if traced steps ran before this eager one
        step = int(_dtensor.unpack(event.iteration)[0])
        self._last_step = max(self._last_step, step)
        if step % self.every or not self._log.wants(step):
            return
        in_event = {event.optimizer._var_key(v): i for i, v in enumerate(event.variables)}
        pv = {}
        for w in self._watched:
            i = in_event.get(event.optimizer._var_key(w.var))
            pv[(w.name, "param")] = event.params[i] if i is not None else w.var.read_value()
            if "velocity" in self.kinds:
                pv[(w.name, "velocity")] = (event.velocities[i] if i is not None
                                            else self._optimizer.velocity(w.var).read_value())
        meta = _dtensor.unpack(self._meta_row(event))[0]
        self._append(meta, self._host({**grads, **pv}))
        self._stream()
        if self._rules is not None:
            self._rules.warn(stacklevel=6)

    # ---- host side ------------------------------------------------------------------------------

    def _global(self, w, value):
        """The global value (NaN where other clients hold the blocks)."""
        shards = _dtensor.unpack(value)
        return w.geometry.assemble(np.stack([shards[at[0]] for _, at in w.held]),
                                   [g for g, _ in w.held])

    def _append(self, meta, data):
        """One recorded step: ``data[(name, kind)]`` is the per-device shard list (full
        mode; replicas compared, kept once) or the ``(n_unique, 3)`` stats."""
        step = int(meta[0])
        e = entry(meta, data, self._watched, self.kinds, self.mode)
        if self._rules is not None:
            self._rules.observe(step, e)
        self._log.append(step, e)
        self._cache = None

    def flush(self) -> int:
        """Copy staged steps from the devices to the host; returns how many arrived."""
        return self._flush(final=True)

    def _flush(self, final, wait=True):
        """``wait=False`` (a periodic flush during training): queue one read of everything
        staged and return without waiting for the devices, which may run several steps
        behind; queued reads are taken to the host, oldest first, by the next flush that
        waits, or once they hold more than the staging budget."""
        if self._optimizer is None or not self._staged:
            return 0
        # eagerly, even when called while a tf.function is being traced (a ``rec.loop``
        # generator abandoned mid-way is finalised whenever Python collects it)
        with tf.init_scope():
            # a queued read cannot hold the latest parameters, which a ring of <= 1 slot
            # reads from the variables
            if wait or (self._pv_kinds() and self.buffer_steps <= 1):
                arrived = self._flush_pending(0) + self._flush_eagerly(final)
            else:
                self._pending.append((self._read_staged.start(), self._expected_iteration()))
                arrived = self._flush_pending(
                    max(1, STAGING_BUDGET_BYTES // max(1, self._read_staged.nbytes)))
        self._stream()
        if arrived and self._rules is not None:
            self._rules.warn(stacklevel=4)
        return arrived

    def _flush_pending(self, keep) -> int:
        arrived = 0
        while len(self._pending) > keep:
            start, expected = self._pending.pop(0)
            arrived += self._flush_eagerly(False, start(), expected)
        return arrived

    def _flush_eagerly(self, final, read=None, expected=None):
        # everything staged, in one call (or a read queued earlier, in device order)
        if read is None:
            read, expected = self._read_staged(), self._expected_iteration()
        current = int(read[self._optimizer.iterations.ref()][0])
        if expected is not None and current != expected:
            self._split_failed(current, expected)
        # The latest update's parameters and velocities are staged only when the next
        # update starts; a periodic flush leaves that step for the next flush instead of
        # reading every variable now (the flush interval leaves room for it).
        upto = current if final or self._periodic_flush_is_final() else current - 1
        if upto <= self._last_step:
            return 0
        metas = {int(r[0]): r for r in self._meta.read(read[self._meta.var.ref()])
                 if r[0] > self._last_step}
        first = self._last_step // self.every + 1
        expected = [s * self.every for s in range(first, upto // self.every + 1)]
        span = max(1, self.buffer_steps) * self.every
        stats = (self._stats.read(read)
                 if self._stats is not None and any(s + span >= current for s in expected) else None)
        live = None
        arrived, dropped = 0, []
        for step in expected:
            meta = metas.get(step)
            grad_ok = "grad" not in self.kinds or current < step + span
            pv_ok = (not self._pv_kinds() or step == current
                     or (self.buffer_steps > 0 and current <= step + span))
            if meta is None or not (grad_ok and pv_ok):
                dropped.append(step)
                continue
            if not self._log.wants(step):
                continue
            slot = (step // self.every) % max(1, self.buffer_steps)
            data = {}
            for w in self._watched:
                for kind in self.kinds:
                    key = (w.name, kind)
                    if kind != "grad" and step == current:
                        live = live if live is not None else self._host(
                            self._pv_values(self._optimizer))
                        data[key] = live[key]
                    elif self._ring is not None:
                        data[key] = self._ring.read(slot, key, read)
                    else:
                        data[key] = stats[key][slot]
            self._append(meta, data)
            arrived += 1
        self._last_step = upto
        if dropped:
            self._dropped.extend(dropped)
            advice = (
                "The step function given to rec.loop(n, step=...) makes more than one update "
                "per call (warned above), so the recorder's count of updates runs behind: "
                "make one update per call, or raise buffer_steps."
                if not self._split_ok else
                f"Read or flush the recorder at least every {span} steps (rec.flush(), or "
                "iterate with rec.loop(n)), or raise buffer_steps.")
            warnings.warn(
                f"Recorder: {len(dropped)} recorded step(s) ({dropped[0]}..{dropped[-1]}) were "
                f"overwritten on the devices before being read. {advice}",
                RuntimeWarning, stacklevel=2,
            )
        return arrived

    # ---- steps not recorded: a step function traced without the recorder -------------------

    def step_function(self, fn):
        """``fn`` (a ``tf.function`` or a Python function making one optimizer update per
        call) as two traced step functions, called in turn: updates whose results this
        recorder keeps run ``fn`` traced with the recorder (followed by a small function
        staging that update's parameters and velocities), the others (k - 1 of every k
        with ``every=k``) run ``fn`` traced with the recorder's hooks doing nothing, so
        they cost what the plain step costs. ``rec.loop(n, step=fn)`` uses it.

        The host counts the updates (one per call; the optimizer's iteration is read once,
        at the first call after the recorder was traced) and every flush checks the count
        against the devices: if a call made other than one update, a warning says so and
        every later call runs the recording function (steps missed meanwhile are listed
        in ``recording.dropped_steps``, never lost silently)."""
        return _SplitStep(self, fn)

    def _needs_hooks(self, iteration) -> bool:
        """Whether the update that makes ``iteration`` does recording work: it records
        the step (after the update). (The next update's read of the recorded step's
        parameters and velocities is made by ``_pv_copier`` right after it instead.)"""
        return iteration % self.every == 0

    def _pv_copier(self):
        """A function staging the latest update's parameters and velocities when that
        update is recorded: the split step calls it right after a recorded update, so the
        next update can run the trace without the recorder. It reads the variables after
        the step function returned (a call of its own), where they hold that update's
        results, as the next update's ``before_update`` would."""
        if getattr(self, "_copier", None) is None:
            opt = self._optimizer

            def copy():
                self._stage_pv(opt)
                return opt.iterations.read_value()
            self._copier = tf.function(copy, autograph=False)
        return self._copier

    def _expected_iteration(self):
        """The optimizer's iteration once every call made so far has run, as the host
        counts it (None when no split step function counts)."""
        return None if self._next_update is None else self._next_update - 1

    def _split_failed(self, current, expected):
        self._next_update = None
        if not self._split_ok:
            return
        self._split_ok = False
        warnings.warn(
            f"Recorder.step_function: the optimizer is at iteration {current} where one "
            f"update per call of the step function puts it at {expected}: the step "
            "function does not make exactly one update per call, so from now on every call "
            "runs the step traced with the recorder (recorded steps that ran without it are "
            "listed in recording.dropped_steps).", RuntimeWarning, stacklevel=4)

    def loop(self, steps, flush_every=None, progress=False, step=None):
        """Iterate ``range(steps)`` (or any iterable), flushing the device buffers often
        enough that nothing is overwritten, and once more at the end. ``progress=True``
        shows a progress bar (``tqdm.auto``; ``DTSGD_VIZ_PROGRESS=0`` turns it off).

        ``step``: the step function (one optimizer update per call, no arguments): the
        loop calls it and yields what it returns, running the steps this recorder does
        not record (``every=k``) traced without the recorder (``step_function``)."""
        items = range(steps) if isinstance(steps, int) else steps
        shown = _progress.iterate(items, _progress.check(progress), "recording")
        since, warned = 0, False
        split = None if step is None else (
            step if isinstance(step, _SplitStep) and step.recorder is self
            else self.step_function(step))
        try:
            for item in shown:
                yield item if split is None else split()
                since += 1
                # asked each time: the slot count is known once the first update built it
                interval = self._flush_interval()
                built = getattr(self, "buffer_steps", None) is not None
                if flush_every is not None and (flush_every <= interval or not built):
                    interval = flush_every
                elif flush_every is not None and not warned:
                    warned = True  # a longer wait would overwrite staged steps: never lose them
                    warnings.warn(
                        f"Recorder.loop(flush_every={flush_every}): the device buffer holds "
                        f"{interval} recorded update(s) between flushes, so it flushes every "
                        f"{interval} (raise buffer_steps to flush less often).",
                        RuntimeWarning, stacklevel=2)
                if since >= interval:
                    self._flush(final=False)
                    since = 0
        finally:
            if shown is not items:
                shown.close()
            self.flush()

    def _periodic_flush_is_final(self) -> bool:
        return (not self._pv_kinds()) or getattr(self, "buffer_steps", 0) <= 1

    def _flush_interval(self) -> int:
        """Updates between periodic flushes so that no staged step is overwritten: the
        ring less the slot of the step a periodic flush leaves for the next one (a flush
        waits for the devices, so fewer flushes cost less)."""
        slots = getattr(self, "buffer_steps", None)
        if slots is None or slots <= 1:  # not built yet / read at (nearly) every step
            return self.every
        return (slots - (0 if self._periodic_flush_is_final() else 1)) * self.every

    def keras_callback(self):
        """A tf-keras ``Callback`` that flushes during and after ``model.fit``.

        With ``steps_per_execution=k`` tf-keras runs k updates inside one call and calls
        the callback once per call: before training it has the ring sized to hold them
        (see ``_choose_slots``). Its flushes during an epoch wait for nothing (tf-keras
        times ``on_train_batch_end`` against the batch, whose updates the devices are
        still running, and warns when it is slower); the host copies are made at the end
        of each epoch, of training, or when the recording is read."""
        import tf_keras

        rec = self

        class _Flush(tf_keras.callbacks.Callback):
            since, last, per_call = 0, -1, 1

            def __init__(self):
                super().__init__()
                # it never reads the logs: otherwise tf-keras converts them to numpy for
                # it after every batch, a wait for the devices each step (and a
                # "callback is slow" warning)
                self._supports_tf_logs = True

            def on_train_begin(self, logs=None):
                spe = getattr(self.model, "_steps_per_execution", None)
                self.per_call = 1 if spe is None else int(spe.numpy())
                rec._hold_executions(self.per_call,
                                     bool(getattr(self.model, "autotune_steps_per_execution", 0)))
                rec.flush()  # updates made outside this callback's fits
                self.since = 0

            def on_epoch_begin(self, epoch, logs=None):
                self.last = -1

            def on_train_batch_end(self, batch, logs=None):
                # called once per execution: count the batches, not the calls
                ran, self.last = batch - self.last, batch
                self.since += ran
                # flush now if the next execution could overwrite what is not yet read
                if self.since + max(self.per_call, ran) > rec._flush_interval():
                    rec._flush(final=False, wait=False)
                    self.since = 0

            def on_epoch_end(self, epoch, logs=None):
                rec._flush(final=False)  # tf-keras has just waited for the devices
                self.since = 0

            def on_train_end(self, logs=None):
                rec.flush()
                self.since = 0

        return _Flush()

    # ---- the recording ------------------------------------------------------------------------

    @property
    def recording(self) -> Recording:
        """Everything recorded so far (flushes the devices first)."""
        if self._optimizer is None:
            raise ValueError(
                "This Recorder has seen no update yet, so it knows no variables to "
                "record: no optimizer it is attached to has applied gradients. Attach it "
                "with SGD(..., hooks=[rec]) or opt.add_hook(rec), then run at least one "
                "update (e.g. `for _ in rec.loop(n): train_step()`)."
            )
        if not self._staged:  # no step function traced with this recorder yet
            self._skip_untraced()
        self.flush()
        if self._cache is None:
            if self._writer is None:
                self._cache = self._build()
            else:
                from ..recording.store import StoreReader
                self._cache = StoreReader(self._writer.path, self._writer.client).read()
        return self._cache

    def _stream(self):
        """With ``path=``: write the steps that reached the host since the last call to
        the store, commit them, and keep nothing of them here."""
        w = self._writer
        if w is None or not (len(self._log) or len(self._dropped) > w.n_dropped):
            return
        w.append(self._log.entries, self._dropped[w.n_dropped:], self._initial)
        self._log = type(self._log)(None, False, self.every)

    def close(self):
        """Flush, and with ``path=`` mark the store closed (``load_recording`` then
        stops warning that the run did not close it; ``LiveMonitor`` stops polling)."""
        self.flush()
        if self._writer is not None:
            self._writer.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _build(self) -> Recording:
        opt = self._optimizer
        return assemble(self._log.entries, self._watched, self.kinds, self.mode, self._initial,
                        mesh=self._mesh_spec, momentum=float(opt.momentum),
                        nesterov=bool(opt.nesterov), dropped=sorted(self._dropped),
                        applied_momentum=self._applied_momentum, part=self._part(),
                        **self._hyper)

    def _part(self) -> Part | None:
        """What this client records in a multi-client run: its devices' blocks."""
        info = _dtensor.client_info()
        if not info.multi_client or self._mesh is None:
            return None
        return Part(info.client_id, info.num_clients, _dtensor.local_device_ids(self._mesh))


class _SplitStep:
    """``Recorder.step_function``: the step traced with the recorder (``on``) and traced
    with its hooks doing nothing (``off``), each call running the one its update needs."""

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
