"""``Recorder``: a hook that keeps every shard of every update as plain numpy data.

Eager updates are taken to the host at once. Inside a ``tf.function`` (the normal
training step) nothing can call back into Python under DTensor, so the recorder writes
each recorded update into device-side buffers (``staging.py``, sized by ``ring.py``;
steps not recorded run none of it) and moves them to the host in one batch (``flush.py``)
whenever the recording is read, on ``flush()``, once per ring of ``Recorder.loop`` and
from ``Recorder.keras_callback`` during ``model.fit`` (``keras_callback.py``). The host
keeps read-only views of the device buffers (TensorFlow never writes into a buffer that
is still held) and copies them once, into the recording's own arrays, when the recording
is read. Steps overwritten before a flush
are listed in ``recording.dropped_steps`` (and warned about), never silently lost; updates
a dynamic loss scale (``MeshLossScaleOptimizer``) skipped are listed in
``recording.skipped_steps``, with their loss scale (``skipped_update``)::

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

import os
import warnings

import tensorflow as tf

from . import capture as _capture
from . import ring
from .. import dtensor as _dtensor
from ..dtensor.model import variable_name
from .flush import Flushing
from .hostlog import HostLog, StatsLog, assemble
from .keras_callback import flush_callback
from .rulewatch import RuleWatch
from .split_step import SplitStep
from .staging import Staging
from .streaming import Streaming
from .values import (Watched, applied_momentum, choose, eager_pv, global_value, grad_values,
                     host_values, hyper, meta_row)
from ..recording.recording import KINDS, Part, Recording, check_kinds

__all__ = ["Recorder", "variable_name"]

DEFAULT_DECIMATE_STEPS = 1000
MODES = ("full", "stats")


def _check_int(name, value, minimum=1, allow_none=False):
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        allowed = f"None or an integer >= {minimum}" if allow_none else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {allowed}. Received: {name}={value!r}.")


class Recorder(Flushing, Streaming):
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
      resume: with ``path``, continue the store an earlier run of the same model left
        (closed or killed) from the iteration the optimizer was restored to
        (``tf.train.Checkpoint``), read at the first update this recorder sees
        (``streaming.py``): the steps the earlier run recorded after it are superseded
        by this run's (``recording.superseded_steps`` lists them). A store recording
        another run (mesh, variables, layouts, kinds, mode, hyperparameters) is a
        ``ValueError`` naming what differs; without a store yet, one is started.
    """

    def __init__(self, every=1, kinds=KINDS, variables=None, buffer_steps=None, mode="full",
                 max_steps=None, decimate=False, path=None, resume=False):
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
        if not isinstance(resume, bool) or (resume and path is None):
            raise ValueError("resume=True continues the store at path=...; resume must be "
                             f"True or False. Received: resume={resume!r}, path={path!r}.")
        if path is not None and (max_steps is not None or decimate):
            raise ValueError(
                "Recorder(path=...) streams every recorded step to disk and keeps none in "
                f"memory: max_steps and decimate do not apply. Received: max_steps={max_steps!r}"
                f", decimate={decimate!r}. Thin the recording with every= instead.")
        self.path = None if path is None else os.fspath(path)
        self._writer = None  # the store's writer, made when the optimizer is known
        self._resume = resume  # then made at the first update (streaming.py)
        self.every, self.mode = every, mode
        self.kinds = check_kinds(kinds)
        self._wanted = None if variables is None else list(variables)
        self._buffer_steps = buffer_steps
        if decimate and max_steps is None:
            max_steps = DEFAULT_DECIMATE_STEPS
        self.max_steps, self.decimate = max_steps, decimate
        self._log = (StatsLog if mode == "stats" else HostLog)(max_steps, decimate, every)
        self._optimizer = None
        self._watched: list[Watched] = []
        self._initial = None
        self._dropped: list[int] = []
        self._skipped: list[tuple[int, float]] = []  # (update, loss scale) a loss scale skipped
        self._cache = None
        self._staged = False
        self._staging = None  # the device buffers, built at the first trace
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
        chosen = choose(variables, self._wanted)
        self._optimizer = optimizer
        self._watched = [Watched(name, var) for name, var in chosen]
        self._mesh = optimizer.mesh
        self._mesh_spec = (
            _dtensor.mesh_spec(self._mesh) if self._mesh is not None
            else (self._watched[0].layout.mesh if self._watched else None)
        )
        self._per_step = sum(w.nbytes_unique for w in self._watched) * len(self.kinds)
        self._choose_slots()
        self._by_name = {w.name: w for w in self._watched}
        self._last_step = int(_dtensor.unpack(optimizer.iterations)[0])
        self._applied_momentum = applied_momentum(optimizer)
        self._hyper = hyper(optimizer, self._watched)
        # on_build runs eagerly (tf-keras builds in init_scope) right before the first update
        # it will see, or when the hook is attached to a built optimizer.
        self._initial = [global_value(w, w.var) for w in self._watched]
        self._rules = self._rule_watch(start=self._last_step)
        self._warned_untraced = False
        if self.path is not None and not self._resume:
            self._open_store()

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
                self._initial = [global_value(w, w.var) for w in self._watched]
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

    # ---- the ring (its arithmetic: ring.py) ------------------------------------------------

    def _choose_slots(self):
        """``buffer_steps``: as asked, or the default, holding the updates ``model.fit``
        runs between two calls of the Keras callback (``ring.choose_slots``)."""
        largest = max((w.var.shape.num_elements() * w.var.dtype.size for w in self._watched),
                      default=0)
        slots, warning = ring.choose_slots(
            self._buffer_steps, self.mode, per_step=self._per_step, largest_bytes=largest,
            small_ring_bytes=_capture.SMALL_RING_BYTES, execution_steps=self._execution_steps,
            every=self.every, has_pv=bool(self._pv_kinds()))
        if warning is not None:
            warnings.warn(warning, RuntimeWarning, stacklevel=4)
        self.buffer_steps = slots
        self._row_slots = max(1, slots)

    def _hold_executions(self, steps, tuned=False):
        """Make the ring hold ``steps`` updates between two flushes (the Keras callback
        calls this before training: the ring is built when the step is first traced)."""
        self._execution_steps = max(self._execution_steps, steps)
        if self._optimizer is not None and not self._staged:
            self._choose_slots()
        warning = ring.hold_warning(steps, tuned, self._flush_interval() if self._staged else None,
                                    self.every)
        if warning is not None:
            warnings.warn(warning, RuntimeWarning, stacklevel=3)

    def _pv_kinds(self):
        return [k for k in ("param", "velocity") if k in self.kinds]

    def _make_staging(self):
        self._skip_untraced()
        self._staging = Staging(self._watched, self.kinds, self.mode, self.every,
                                self.buffer_steps, self._row_slots, self._mesh,
                                self._optimizer.iterations)
        self._staged = True

    # ---- hook protocol ------------------------------------------------------------------------

    def before_update(self, optimizer, variables, params):
        if self._writer is None and self.path is not None and self._optimizer is not None:
            self._open_store()  # resume=True: from the iteration this update starts at
        if self._optimizer is None or tf.executing_eagerly() or self._suppressed:
            return
        if not self._staged:
            self._make_staging()
        # the previous update's parameters and velocities, before this update changes them
        self._staging.stage_pv(optimizer)

    def after_update(self, event):
        if self._optimizer is None or self._suppressed:
            return
        if tf.executing_eagerly():
            self._record_eager(event, grad_values(self._watched, event))
            return
        if not self._staged:
            self._make_staging()
        self._staging.stage_update(event)

    def skipped_update(self, optimizer, iteration, loss_scale):
        """An update that a dynamic loss scale skips (``MeshLossScaleOptimizer`` tells the
        optimizer's hooks, eagerly or traced into the branch that skips it, before the
        optimizer's ``iterations`` counts it): ``iteration`` is the iteration the skipped
        update makes, ``loss_scale`` the scale it used. It is listed in
        ``recording.skipped_steps`` when ``iteration`` is a multiple of ``every``."""
        if self._writer is None and self.path is not None and self._optimizer is not None:
            self._open_store()  # resume=True: from the iteration this update starts at
        if self._optimizer is None or self._suppressed:
            return
        if tf.executing_eagerly():
            self.flush()  # keep order if traced steps ran before this eager one
            step = int(_dtensor.unpack(iteration)[0])
            self._last_step = max(self._last_step, step)
            if step % self.every == 0:
                self._skipped_arrived(step, float(_dtensor.unpack(loss_scale)[0]))
            self._stream()
            return
        if not self._staged:
            self._make_staging()
        self._staging.stage_skip(optimizer, iteration, loss_scale)

    def _record_eager(self, event, grads):
        self.flush()  # keep order if traced steps ran before this eager one
        step = int(_dtensor.unpack(event.iteration)[0])
        self._last_step = max(self._last_step, step)
        if step % self.every or not self._log.wants(step):
            return
        pv = eager_pv(self._watched, self.kinds, event, self._optimizer)
        meta = _dtensor.unpack(meta_row(event))[0]
        self._append(meta, host_values({**grads, **pv}, self._by_name, self.kinds, self.mode))
        self._stream()
        if self._rules is not None:
            self._rules.warn(stacklevel=6)

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
        return SplitStep(self, fn)

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
                self._staging.stage_pv(opt)
                return opt.iterations.read_value()
            self._copier = tf.function(copy, autograph=False)
        return self._copier

    def keras_callback(self):
        """A tf-keras ``Callback`` that flushes during and after ``model.fit``.

        With ``steps_per_execution=k`` tf-keras runs k updates inside one call and calls
        the callback once per call: before training it has the ring sized to hold them
        (see ``_choose_slots``). Its flushes during an epoch wait for nothing (tf-keras
        times ``on_train_batch_end`` against the batch, whose updates the devices are
        still running, and warns when it is slower); the host copies are made at the end
        of each epoch, of training, or when the recording is read."""
        return flush_callback(self)

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
        if self._writer is None and self.path is not None:
            self._open_store()  # resume=True, read before any update
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
                        skipped=sorted(self._skipped), **self._hyper)

    def _part(self) -> Part | None:
        """What this client records in a multi-client run: its devices' blocks."""
        info = _dtensor.client_info()
        if not info.multi_client or self._mesh is None:
            return None
        return Part(info.client_id, info.num_clients, _dtensor.local_device_ids(self._mesh))

