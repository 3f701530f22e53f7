"""``Recorder``: a hook that keeps every shard of every update as plain numpy data.

Eager updates are taken to the host at once. Inside a ``tf.function`` (the normal
training step) nothing can call back into Python under DTensor, so the recorder writes
each recorded update into device-side buffers (``staging.py``, sized by ``ring.py``;
steps not recorded run none of it) and moves them to the host in one batch (``flush.py``)
whenever the recording is read, on ``flush()``, once per ring of ``Recorder.loop`` and
from ``Recorder.keras_callback`` during ``model.fit`` (``keras_callback.py``). The
recorder owns a ``Flusher`` (``flush.py``: the host side of those buffers) and a
``Streamer`` (``streaming.py``: the store, with ``path=``). The host
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

import contextlib
import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Self

import tensorflow as tf

from .. import dtensor as _dtensor
from .. import progress as _progress
from ..dtensor.model import variable_name
from ..recording.recording import KINDS, Part, Recording, check_kinds
from . import capture as _capture
from . import ring
from .flush import Flusher
from .hostlog import HostLog, StatsLog, assemble, entry
from .keras_callback import flush_callback
from .rulewatch import RuleWatch
from .split_step import SplitStep, UpdateCount
from .staging import Staging
from .streaming import Streamer
from .values import (
    Watched,
    applied_momentum,
    choose,
    eager_pv,
    global_value,
    grad_values,
    host_values,
    hyper,
    meta_row,
    pv_values,
)

__all__ = ["Recorder", "variable_name"]

DEFAULT_DECIMATE_STEPS = 1000
MODES = ("full", "stats")


def _check_int(name: str, value: Any, minimum: int = 1, allow_none: bool = False) -> None:
    if allow_none and value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        allowed = f"None or an integer >= {minimum}" if allow_none else f"an integer >= {minimum}"
        raise ValueError(f"{name} must be {allowed}. Received: {name}={value!r}.")


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
      resume: with ``path``, continue the store an earlier run of the same model left
        (closed or killed) from the iteration the optimizer was restored to
        (``tf.train.Checkpoint``), read at the first update this recorder sees
        (``streaming.py``): the steps the earlier run recorded after it are superseded
        by this run's (``recording.superseded_steps`` lists them). A store recording
        another run (mesh, variables, layouts, kinds, mode, hyperparameters) is a
        ``ValueError`` naming what differs; without a store yet, one is started.
    """

    def __init__(
        self,
        every: int = 1,
        kinds: Sequence[str] = KINDS,
        variables: Sequence | None = None,
        buffer_steps: int | None = None,
        mode: str = "full",
        max_steps: int | None = None,
        decimate: bool = False,
        path: str | os.PathLike | None = None,
        resume: bool = False,
    ):
        _check_int("every", every)
        _check_int("buffer_steps", buffer_steps, minimum=0, allow_none=True)
        _check_int("max_steps", max_steps, allow_none=True)
        if mode not in MODES:
            raise ValueError(f"mode must be one of {list(MODES)}. Received: mode={mode!r}.")
        if buffer_steps == 0 and mode != "full":
            raise ValueError(f"buffer_steps=0 (read at every flush) is for mode='full' only. Received: mode={mode!r}.")
        if not isinstance(decimate, bool):
            raise TypeError(f"decimate must be True or False. Received: {decimate!r}.")
        if not isinstance(resume, bool) or (resume and path is None):
            raise ValueError(
                "resume=True continues the store at path=...; resume must be "
                f"True or False. Received: resume={resume!r}, path={path!r}."
            )
        if path is not None and (max_steps is not None or decimate):
            raise ValueError(
                "Recorder(path=...) streams every recorded step to disk and keeps none in "
                f"memory: max_steps and decimate do not apply. Received: max_steps={max_steps!r}"
                f", decimate={decimate!r}. Thin the recording with every= instead."
            )
        self.path = None if path is None else os.fspath(path)
        # the store: opened when the optimizer is known (resume=True: at the first update)
        self._streamer = Streamer(self.path, resume, every)
        self.every, self.mode = every, mode
        self.kinds = check_kinds(kinds)
        self._wanted = None if variables is None else list(variables)
        self._buffer_steps = buffer_steps
        if decimate and max_steps is None:
            max_steps = DEFAULT_DECIMATE_STEPS
        self.max_steps, self.decimate = max_steps, decimate
        self._log = (StatsLog if mode == "stats" else HostLog)(max_steps, decimate, every)
        self._optimizer: Any = None
        self._watched: list[Watched] = []
        self._by_name: dict[str, Watched] = {}
        self._mesh: Any = None
        self._mesh_spec: Any = None
        self._per_step = 0
        self._applied_momentum = 0.0
        self._hyper: dict[str, Any] = {}
        self._initial: list | None = None
        self._rules: RuleWatch | None = None
        self._warned_untraced = False
        self._skipped: list[tuple[int, float]] = []  # (update, loss scale) a loss scale skipped
        self._cache: Recording | None = None
        self._staging: Staging | None = None  # the device buffers, built at the first trace
        self._copier: Any = None  # the split step's staging of p and v (``_pv_copier``)
        self.buffer_steps: int | None = None  # device slots, chosen when the optimizer is known
        self._row_slots = 1
        # the off-step function (step_function / loop(step=...)): while it is traced the
        # hooks add nothing; the host's count of its updates, checked at each flush
        self._suppressed = False
        self._count = UpdateCount()
        self._execution_steps = 1  # updates model.fit runs between two callback calls
        # the host side of the device buffers: the reads, the last update the host has
        self._flusher = Flusher(
            every,
            bool(self._pv_kinds()),
            self._count,
            wants=lambda step: self._log.wants(step),
            append=self._append,
            skip=self._skipped_arrived,
            live=self._live,
        )

    # ---- set-up -------------------------------------------------------------------------

    def on_build(self, optimizer: Any, variables: Any) -> None:
        if self._optimizer is not None:
            if self._optimizer is optimizer:
                return
            raise ValueError("This Recorder is already attached to another optimizer; make one Recorder per optimizer.")
        chosen = choose(variables, self._wanted)
        self._optimizer = optimizer
        self._watched = [Watched(name, var) for name, var in chosen]
        self._mesh = optimizer.mesh
        self._mesh_spec = (
            _dtensor.mesh_spec(self._mesh)
            if self._mesh is not None
            else (self._watched[0].layout.mesh if self._watched else None)
        )
        self._per_step = sum(w.nbytes_unique for w in self._watched) * len(self.kinds)
        self._choose_slots()
        self._by_name = {w.name: w for w in self._watched}
        self._flusher.last_step = int(_dtensor.unpack(optimizer.iterations)[0])
        self._applied_momentum = applied_momentum(optimizer)
        self._hyper = hyper(optimizer, self._watched)
        # on_build runs eagerly (tf-keras builds in init_scope) right before the first update
        # it will see, or when the hook is attached to a built optimizer.
        self._initial = [global_value(w, w.var) for w in self._watched]
        self._rules = self._rule_watch(start=self._flusher.last_step)
        self._warned_untraced = False
        if self._streamer.wanted and not self._streamer.resume:
            self._open_store()

    def _rule_watch(self, start: int) -> RuleWatch | None:
        """The host-side rule check (full mode with parameters and velocities, from the
        parameters at iteration ``start``; velocities are known only from a fresh start)."""
        if (
            self.mode != "full" or len(self._pv_kinds()) != 2 or start != 0 or self._initial is None
        ):  # (the initial values: read in on_build)
            return None
        return RuleWatch(
            self._watched, self._initial, self._optimizer, self._applied_momentum, self.every, **self._hyper
        )

    def _skip_untraced(self) -> None:
        """Skip the updates the optimizer made since the recorder last saw one while
        nothing was staged for them (called where staging starts, at the first trace
        with this recorder, and when the recording is read before any): a ``tf.function``
        traced before the Recorder was attached ran them, and a traced function calls
        only the hooks it was traced with. They are warned about once, never reported
        as overwritten, and the recording starts from the parameters they left."""
        with tf.init_scope():  # eagerly, also when called while a step is traced
            current = int(_dtensor.unpack(self._optimizer.iterations)[0])
            if current <= self._flusher.last_step:
                return
            first, self._flusher.last_step = self._flusher.last_step + 1, current
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
            RuntimeWarning,
            stacklevel=3,
        )

    # ---- the ring (its arithmetic: ring.py) ------------------------------------------------

    def _choose_slots(self) -> None:
        """``buffer_steps``: as asked, or the default, holding the updates ``model.fit``
        runs between two calls of the Keras callback (``ring.choose_slots``)."""
        largest = max((w.var.shape.num_elements() * w.var.dtype.size for w in self._watched), default=0)
        slots, warning = ring.choose_slots(
            self._buffer_steps,
            self.mode,
            per_step=self._per_step,
            largest_bytes=largest,
            small_ring_bytes=_capture.SMALL_RING_BYTES,
            execution_steps=self._execution_steps,
            every=self.every,
            has_pv=bool(self._pv_kinds()),
        )
        if warning is not None:
            warnings.warn(warning, RuntimeWarning, stacklevel=4)
        self.buffer_steps = slots
        self._row_slots = max(1, slots)

    def _hold_executions(self, steps: int, tuned: bool = False) -> None:
        """Make the ring hold ``steps`` updates between two flushes (the Keras callback
        calls this before training: the ring is built when the step is first traced)."""
        self._execution_steps = max(self._execution_steps, steps)
        if self._optimizer is not None and self._staging is None:
            self._choose_slots()
        warning = ring.hold_warning(steps, tuned, None if self._staging is None else self._flush_interval(), self.every)
        if warning is not None:
            warnings.warn(warning, RuntimeWarning, stacklevel=3)

    def _pv_kinds(self) -> list[str]:
        return [k for k in ("param", "velocity") if k in self.kinds]

    def _make_staging(self) -> Staging:
        assert self.buffer_steps is not None, "the ring is sized when the optimizer is known"
        self._skip_untraced()
        self._staging = Staging(
            self._watched,
            self.kinds,
            self.mode,
            self.every,
            self.buffer_steps,
            self._row_slots,
            self._mesh,
            self._optimizer.iterations,
        )
        return self._staging

    # ---- hook protocol ------------------------------------------------------------------------

    def _store_pending(self) -> bool:
        """Whether the store is still to be opened (``resume=True``: at the first update
        or read, from the iteration the optimizer is at then)."""
        return self._streamer.wanted and not self._streamer.is_open and self._optimizer is not None

    def before_update(self, optimizer: Any, variables: Any, params: Any) -> None:
        if self._store_pending():
            self._open_store()  # resume=True: from the iteration this update starts at
        if self._optimizer is None or tf.executing_eagerly() or self._suppressed:
            return
        staging = self._staging or self._make_staging()
        # the previous update's parameters and velocities, before this update changes them
        staging.stage_pv(optimizer)

    def after_update(self, event: Any) -> None:
        if self._optimizer is None or self._suppressed:
            return
        if tf.executing_eagerly():
            self._record_eager(event, grad_values(self._watched, event))
            return
        (self._staging or self._make_staging()).stage_update(event)

    def skipped_update(self, optimizer: Any, iteration: Any, loss_scale: Any) -> None:
        """An update that a dynamic loss scale skips (``MeshLossScaleOptimizer`` tells the
        optimizer's hooks, eagerly or traced into the branch that skips it, before the
        optimizer's ``iterations`` counts it): ``iteration`` is the iteration the skipped
        update makes, ``loss_scale`` the scale it used. It is listed in
        ``recording.skipped_steps`` when ``iteration`` is a multiple of ``every``."""
        if self._store_pending():
            self._open_store()  # resume=True: from the iteration this update starts at
        if self._optimizer is None or self._suppressed:
            return
        if tf.executing_eagerly():
            self.flush()  # keep order if traced steps ran before this eager one
            step = int(_dtensor.unpack(iteration)[0])
            self._flusher.last_step = max(self._flusher.last_step, step)
            if step % self.every == 0:
                self._skipped_arrived(step, float(_dtensor.unpack(loss_scale)[0]))
            self._stream()
            return
        (self._staging or self._make_staging()).stage_skip(optimizer, iteration, loss_scale)

    def _record_eager(self, event, grads) -> None:
        self.flush()  # keep order if traced steps ran before this eager one
        step = int(_dtensor.unpack(event.iteration)[0])
        self._flusher.last_step = max(self._flusher.last_step, step)
        if step % self.every or not self._log.wants(step):
            return
        pv = eager_pv(self._watched, self.kinds, event, self._optimizer)
        meta = _dtensor.unpack(meta_row(event))[0]
        self._append(meta, host_values({**grads, **pv}, self._by_name, self.kinds, self.mode))
        self._stream()
        if self._rules is not None:
            self._rules.warn(stacklevel=6)

    # ---- steps not recorded: a step function traced without the recorder -------------------

    def step_function(self, fn: Callable[..., Any]) -> SplitStep:
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

    def _needs_hooks(self, iteration: int) -> bool:
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
        if self._copier is None:
            opt, staging = self._optimizer, self._staging
            assert staging is not None, "a split step stages p and v once the step is traced"

            def copy():
                staging.stage_pv(opt)
                return opt.iterations.read_value()

            self._copier = tf.function(copy, autograph=False)
        return self._copier

    # the split step's side (``split_step.SplitStep`` calls these) ------------------------------

    def split_call(self) -> bool | None:
        """For the next call of a split step function (``step_function``): True when it
        runs the step traced without the recorder, False when with it; None while the
        calls are not split (``every=1``, before the recorder was traced, or once the
        count of updates went wrong)."""
        if self._staging is None or not self._count.ok or self.every <= 1:
            return None
        if self._count.next_update is None:  # once: where the optimizer is now
            self._count.next_update = int(_dtensor.unpack(self._optimizer.iterations)[0]) + 1
        return not self._needs_hooks(self._count.next_update)

    @contextlib.contextmanager
    def hooks_off(self) -> Iterator[None]:
        """The recorder's hooks do nothing within (the off function is traced there)."""
        self._suppressed = True
        try:
            yield
        finally:
            self._suppressed = False

    def stage_split_pv(self) -> None:
        """Right after a split step's recorded update: stage its parameters and
        velocities, so the next update can run the trace without the recorder."""
        if self._pv_kinds():
            self._pv_copier()()

    def count_call(self) -> None:
        """A split step function made one more call (one update)."""
        self._count.advance()

    def keras_callback(self) -> Any:
        """A tf-keras ``Callback`` that flushes during and after ``model.fit``.

        With ``steps_per_execution=k`` tf-keras runs k updates inside one call and calls
        the callback once per call: before training it has the ring sized to hold them
        (see ``_choose_slots``). Its flushes during an epoch wait for nothing (tf-keras
        times ``on_train_batch_end`` against the batch, whose updates the devices are
        still running, and warns when it is slower); the host copies are made at the end
        of each epoch, of training, or when the recording is read."""
        return flush_callback(
            hold=self._hold_executions,
            interval=self._flush_interval,
            flush=lambda final, wait=True: self._flush(final, wait),
        )

    # ---- flushes: the staged steps to the host log (the reads: flush.py) ----------------------

    def flush(self) -> int:
        """Copy staged steps from the devices to the host; returns how many arrived."""
        return self._flush(final=True)

    def _flush(self, final: bool, wait: bool = True) -> int:
        """``wait=False`` (a periodic flush during training): queue one read of everything
        staged and return without waiting for the devices (``Flusher.read``)."""
        if self._staging is None or self.buffer_steps is None:
            return 0
        # eagerly, even when called while a tf.function is being traced (a ``rec.loop``
        # generator abandoned mid-way is finalised whenever Python collects it)
        with tf.init_scope():
            arrived = self._flusher.read(self._staging, self.buffer_steps, final, wait)
        self._stream()
        if arrived and self._rules is not None:
            self._rules.warn(stacklevel=4)
        return arrived

    def _live(self) -> dict:
        """The latest update's parameters and velocities, read from the variables, in
        their host form."""
        return host_values(pv_values(self._watched, self.kinds, self._optimizer), self._by_name, self.kinds, self.mode)

    def _append(self, meta, data) -> None:
        """One recorded step: ``data[(name, kind)]`` is the per-device shard list (full
        mode; replicas compared, kept once) or the ``(n_unique, 3)`` stats."""
        step = int(meta[0])
        e = entry(meta, data, self._watched, self.kinds, self.mode)
        if self._rules is not None:
            self._rules.observe(step, e)
        self._log.append(step, e)
        self._cache = None

    def _skipped_arrived(self, step: int, loss_scale: float) -> None:
        """One recorded update a dynamic loss scale skipped, with the scale it used."""
        self._skipped.append((step, loss_scale))
        if self._rules is not None:
            self._rules.skip(step)
        self._cache = None

    def _flush_interval(self) -> int:
        """Updates between periodic flushes so that no staged step is overwritten
        (``ring.flush_interval``)."""
        return ring.flush_interval(self.buffer_steps, self.every, bool(self._pv_kinds()))

    def loop(
        self,
        steps: int | Iterable[Any],
        flush_every: int | None = None,
        progress: bool = False,
        step: Callable[[], Any] | None = None,
    ) -> Iterator[Any]:
        """Iterate ``range(steps)`` (or any iterable), flushing the device buffers often
        enough that nothing is overwritten, and once more at the end. ``progress=True``
        shows a progress bar (``tqdm.auto``; ``DTSGD_VIZ_PROGRESS=0`` turns it off).

        ``step``: the step function (one optimizer update per call, no arguments): the
        loop calls it and yields what it returns, running the steps this recorder does
        not record (``every=k``) traced without the recorder (``step_function``)."""
        items = range(steps) if isinstance(steps, int) else steps
        shown = _progress.iterate(items, _progress.check(progress), "recording")
        since, warned = 0, False
        split = (
            None
            if step is None
            else (step if isinstance(step, SplitStep) and step.recorder is self else self.step_function(step))
        )
        try:
            for item in shown:
                yield item if split is None else split()
                since += 1
                # asked each time: the slot count is known once the first update built it
                interval = self._flush_interval()
                built = self.buffer_steps is not None
                if flush_every is not None and (flush_every <= interval or not built):
                    interval = flush_every
                elif flush_every is not None and not warned:
                    warned = True  # a longer wait would overwrite staged steps: never lose them
                    warnings.warn(
                        f"Recorder.loop(flush_every={flush_every}): the device buffer holds "
                        f"{interval} recorded update(s) between flushes, so it flushes every "
                        f"{interval} (raise buffer_steps to flush less often).",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                if since >= interval:
                    self._flush(final=False)
                    since = 0
        finally:
            close = getattr(shown, "close", None)  # the progress bar's, when one is shown
            if shown is not items and close is not None:
                close()
            self.flush()

    # ---- the store, with path= (its writer: streaming.py) -------------------------------------

    def _open_store(self) -> None:
        """Open this client's part of the store at ``path`` (continuing it from the
        restored iteration with ``resume=True``)."""
        resume_from = self._resume_point() if self._streamer.resume else None
        self._streamer.open(self._build(), resume_from)  # no steps yet: what batches hold

    def _resume_point(self) -> int:
        """The optimizer's iteration now, from which the run continues: the recording
        starts from the parameters it holds (a restore is not a step the recorder
        missed, so it is not warned about as one)."""
        with tf.init_scope():
            current = int(_dtensor.unpack(self._optimizer.iterations)[0])
            if current != self._flusher.last_step and not len(self._log):
                self._initial = [global_value(w, w.var) for w in self._watched]
                self._rules = self._rule_watch(start=current)
                self._cache = None
        self._flusher.last_step = current
        return current

    def _stream(self) -> None:
        """With ``path=``: write the steps that reached the host since the last call to
        the store, commit them, and keep nothing of them here."""
        if self._streamer.write(self._log, self._flusher.dropped, self._skipped, self._initial):
            self._log = type(self._log)(None, False, self.every)

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
        if self._store_pending():
            self._open_store()  # resume=True, read before any update
        if self._staging is None:  # no step function traced with this recorder yet
            self._skip_untraced()
        self.flush()
        if self._cache is None:
            self._cache = self._streamer.read() if self._streamer.is_open else self._build()
        return self._cache

    def close(self) -> None:
        """Flush, and with ``path=`` mark the store closed (``load_recording`` then
        stops warning that the run did not close it; ``LiveMonitor`` stops polling)."""
        self.flush()
        self._streamer.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _build(self) -> Recording:
        opt = self._optimizer
        return assemble(
            self._log.entries,
            self._watched,
            self.kinds,
            self.mode,
            self._initial,
            mesh=self._mesh_spec,
            momentum=float(opt.momentum),
            nesterov=bool(opt.nesterov),
            dropped=sorted(self._flusher.dropped),
            applied_momentum=self._applied_momentum,
            part=self._part(),
            skipped=sorted(self._skipped),
            **self._hyper,
        )

    def _part(self) -> Part | None:
        """What this client records in a multi-client run: its devices' blocks."""
        info = _dtensor.client_info()
        if not info.multi_client or self._mesh is None:
            return None
        return Part(info.client_id, info.num_clients, _dtensor.local_device_ids(self._mesh))
