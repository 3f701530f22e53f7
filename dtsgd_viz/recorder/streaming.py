"""``Recorder(path=...)``'s store side: opening the store's writer, writing each flushed
batch to it, and continuing the store of an earlier run (``resume=True``).

``Streaming`` is a base class of ``Recorder``; its methods use the recorder's state
(``path``, ``_resume``, ``_writer``, ``_log``, ``_dropped``, ``_skipped``, ``_optimizer``,
``_last_step``, ``_initial``, ``_rules``). Without ``resume`` the store is opened when the
recorder is attached (``on_build``). With ``resume=True`` it is opened at the first update the
recorder sees (its ``before_update``, eagerly or while the step is traced), or at the
first read of ``rec.recording`` if that comes first, so that a checkpoint restored after
the optimizer was built (``opt.build(...)`` then ``Checkpoint.restore``/``read``) is
seen: the optimizer's ``iterations`` then is the iteration the run resumes from.
"""

from __future__ import annotations

import warnings
import weakref

import tensorflow as tf

from .. import dtensor as _dtensor
from .values import global_value


class Streaming:
    """The store side of ``Recorder`` (see the module docstring)."""

    def _open_store(self) -> None:
        """Open this client's part of the store at ``self.path`` (continuing it from the
        restored iteration with ``resume=True``)."""
        from ..recording.store import StoreWriter
        resume_from = self._resume_point() if self._resume else None
        header = self._build()  # no steps yet: names what every batch will hold
        part = getattr(header, "part", None)
        self._writer = StoreWriter(self.path, header, 0 if part is None else part.client_id,
                                   resume_from=resume_from)
        # the end of the process (or of this recorder) closes the store: a run that was
        # killed leaves it open, and readers say so
        weakref.finalize(self, self._writer.close_at_exit)
        self._dropped_streamed = 0  # of self._dropped: the steps written to the store
        self._skipped_streamed = 0  # and of self._skipped
        if self._writer.resumed is not None:
            self._warn_gap(*self._writer.resumed)

    def _resume_point(self) -> int:
        """The optimizer's iteration now, from which the run continues: the recording
        starts from the parameters it holds (a restore is not a step the recorder
        missed, so it is not warned about as one)."""
        with tf.init_scope():
            current = int(_dtensor.unpack(self._optimizer.iterations)[0])
            if current != self._last_step and not len(self._log):
                self._initial = [global_value(w, w.var) for w in self._watched]
                self._rules = self._rule_watch(start=current)
                self._cache = None
        self._last_step = current
        return current

    def _warn_gap(self, iteration, kept, superseded, last_step) -> None:
        """A store that ends before the restored iteration misses the updates between
        (their batch was never committed): said once, at the resume."""
        if last_step is None or last_step >= iteration:
            return
        missing = [s for s in range(last_step + 1, iteration + 1) if s % self.every == 0]
        if missing:
            warnings.warn(
                f"Recorder(path={self.path!r}, resume=True): the store ends at update "
                f"{last_step} but the optimizer resumes from iteration {iteration}: the "
                f"recorded update(s) {missing[0]}..{missing[-1]} in between were never "
                "committed and are not in the store (restore a checkpoint no later than the "
                "store's last update to keep every step).", RuntimeWarning, stacklevel=5)

    def _stream(self):
        """With ``path=``: write the steps that reached the host since the last call to
        the store, commit them, and keep nothing of them here."""
        w = self._writer
        if w is None:
            return
        dropped = self._dropped[self._dropped_streamed:]
        skipped = self._skipped[self._skipped_streamed:]
        if not (len(self._log) or dropped or skipped):
            return
        w.append(self._log.entries, dropped, self._initial, skipped=skipped)
        self._dropped_streamed = len(self._dropped)
        self._skipped_streamed = len(self._skipped)
        self._log = type(self._log)(None, False, self.every)
