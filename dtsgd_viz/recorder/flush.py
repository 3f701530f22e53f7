"""Moving what the devices staged to the host: ``Recorder.flush``, the periodic flushes
of ``Recorder.loop`` and of the Keras callback (``keras_callback.py``), and the check each
flush makes of a split step function's count of updates (``split_step.py``).

``Flushing`` is a base class of ``Recorder``, its host side: its methods read and write
the recorder's state, set up by ``Recorder``: ``_staging`` (the device buffers,
``staging.py``), ``_pending`` (reads queued on the devices), ``_last_step`` (the last
update the host has), ``_log`` (``hostlog.py``), ``_dropped``, ``_rules`` and
``_next_update``/``_split_ok`` (the split step's count), ``_skipped`` (updates a dynamic
loss scale skipped); each flush hands what arrived to
``_stream`` (``streaming.py``: the store, with ``path=``)::

    for _ in rec.loop(100):   # Flushing.loop: a flush every ring
        train_step()
    rec.flush()               # Flushing.flush: the host has every recorded step
"""

from __future__ import annotations

import warnings

import tensorflow as tf

from . import ring
from .. import progress as _progress
from .hostlog import entry
from .split_step import SplitStep, count_warning
from .values import host_values, pv_values


class Flushing:
    """``Recorder``'s flushes: the staged steps to the host log (and the store)."""

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
                reader = self._staging.reader
                self._pending.append((reader.start(), self._expected_iteration()))
                arrived = self._flush_pending(ring.queued_reads(reader.nbytes))
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

    def _live(self) -> dict:
        """The latest update's parameters and velocities, read from the variables, in
        their host form."""
        return host_values(pv_values(self._watched, self.kinds, self._optimizer),
                           self._by_name, self.kinds, self.mode)

    def _flush_eagerly(self, final, read=None, expected=None):
        # everything staged, in one call (or a read queued earlier, in device order)
        if read is None:
            read, expected = self._staging.reader(), self._expected_iteration()
        current = self._staging.iteration(read)
        if expected is not None and current != expected:
            self._split_failed(current, expected)
        # The latest update's parameters and velocities are staged only when the next
        # update starts; a periodic flush leaves that step for the next flush instead of
        # reading every variable now (the flush interval leaves room for it).
        upto = ring.last_readable(current, final, self._periodic_flush_is_final())
        if upto <= self._last_step:
            return 0
        arrived, dropped = self._staging.read_steps(
            read, current, ring.recorded_steps(self._last_step, upto, self.every),
            after=self._last_step, wants=self._log.wants, append=self._append, live=self._live,
            skip=self._skipped_arrived)
        self._last_step = upto
        if dropped:
            self._dropped.extend(dropped)
            self._warn_dropped(dropped)
        return arrived

    def _warn_dropped(self, dropped):
        advice = (
            "The step function given to rec.loop(n, step=...) makes more than one update "
            "per call (warned above), so the recorder's count of updates runs behind: "
            "make one update per call, or raise buffer_steps."
            if not self._split_ok else
            f"Read or flush the recorder at least every {ring.span(self.buffer_steps, self.every)}"
            " steps (rec.flush(), or iterate with rec.loop(n)), or raise buffer_steps.")
        warnings.warn(
            f"Recorder: {len(dropped)} recorded step(s) ({dropped[0]}..{dropped[-1]}) were "
            f"overwritten on the devices before being read. {advice}",
            RuntimeWarning, stacklevel=3,
        )

    def _append(self, meta, data):
        """One recorded step: ``data[(name, kind)]`` is the per-device shard list (full
        mode; replicas compared, kept once) or the ``(n_unique, 3)`` stats."""
        step = int(meta[0])
        e = entry(meta, data, self._watched, self.kinds, self.mode)
        if self._rules is not None:
            self._rules.observe(step, e)
        self._log.append(step, e)
        self._cache = None

    def _skipped_arrived(self, step, loss_scale):
        """One recorded update a dynamic loss scale skipped, with the scale it used."""
        self._skipped.append((step, loss_scale))
        if self._rules is not None:
            self._rules.skip(step)
        self._cache = None

    def _expected_iteration(self):
        """The optimizer's iteration once every call made so far has run, as the host
        counts it (None when no split step function counts)."""
        return None if self._next_update is None else self._next_update - 1

    def _split_failed(self, current, expected):
        self._next_update = None
        if not self._split_ok:
            return
        self._split_ok = False
        warnings.warn(count_warning(current, expected), RuntimeWarning, stacklevel=4)

    def _periodic_flush_is_final(self) -> bool:
        return ring.periodic_flush_is_final(bool(self._pv_kinds()),
                                            getattr(self, "buffer_steps", 0))

    def _flush_interval(self) -> int:
        """Updates between periodic flushes so that no staged step is overwritten
        (``ring.flush_interval``)."""
        return ring.flush_interval(getattr(self, "buffer_steps", None), self.every,
                                   bool(self._pv_kinds()))

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
            step if isinstance(step, SplitStep) and step.recorder is self
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
