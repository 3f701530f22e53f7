"""``Recorder(path=...)``'s store side: the store's writer, each flushed batch written to
it, and the store of an earlier run continued (``resume=True``).

``Streamer`` is an object of ``Recorder`` (its ``_streamer``): it owns the writer and how
much of the recorder's dropped and skipped updates it has written; the recorder hands it
what to write. Without ``resume`` the store is opened when the recorder is attached
(``on_build``). With ``resume=True`` it is opened at the first update the recorder sees
(its ``before_update``, eagerly or while the step is traced), or at the first read of
``rec.recording`` if that comes first, so that a checkpoint restored after the optimizer
was built (``opt.build(...)`` then ``Checkpoint.restore``/``read``) is seen: the
optimizer's ``iterations`` then is the iteration the run resumes from.
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..recording.recording import Recording
    from ..recording.store import StoreWriter


class Streamer:
    """The store a ``Recorder(path=...)`` streams to (see the module docstring)."""

    def __init__(self, path: str | None, resume: bool, every: int):
        self.path, self.resume, self.every = path, resume, every
        self.writer: StoreWriter | None = None  # made when the optimizer is known
        self._dropped_streamed = 0  # of the recorder's dropped steps: those written
        self._skipped_streamed = 0  # and of its skipped updates

    @property
    def wanted(self) -> bool:
        """Whether the recorder streams to a store."""
        return self.path is not None

    @property
    def is_open(self) -> bool:
        return self.writer is not None

    def open(self, header: Recording, resume_from: int | None) -> None:
        """Open this client's part of the store at ``path``: ``header`` (a recording of
        no steps yet) names what every batch will hold; ``resume_from``: the iteration
        the run continues from (``resume=True``), else None."""
        from ..recording.store import StoreWriter

        assert self.path is not None, "Streamer.open needs a path"
        part = getattr(header, "part", None)
        self.writer = StoreWriter(self.path, header, 0 if part is None else part.client_id, resume_from=resume_from)
        # the end of the process (or of this recorder) closes the store: a run that was
        # killed leaves it open, and readers say so
        weakref.finalize(self, self.writer.close_at_exit)
        self._dropped_streamed = self._skipped_streamed = 0
        if self.writer.resumed is not None:
            self._warn_gap(*self.writer.resumed)

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
                "store's last update to keep every step).",
                RuntimeWarning,
                stacklevel=6,
            )

    def write(self, log: Any, dropped: Sequence[int], skipped: Sequence[tuple[int, float]], initial: Any) -> bool:
        """Write the steps of ``log`` (a host log) and the dropped and skipped updates
        not written yet to the store, and commit them; True when a batch was written
        (the caller then keeps nothing of ``log``)."""
        w = self.writer
        if w is None:
            return False
        new_dropped = list(dropped[self._dropped_streamed :])
        new_skipped = list(skipped[self._skipped_streamed :])
        if not (len(log) or new_dropped or new_skipped):
            return False
        w.append(log.entries, new_dropped, initial, skipped=new_skipped)
        self._dropped_streamed = len(dropped)
        self._skipped_streamed = len(skipped)
        return True

    def read(self) -> Recording:
        """Everything the store holds of this client's part."""
        from ..recording.store import StoreReader

        assert self.writer is not None, "Streamer.read needs an open store"
        return StoreReader(self.writer.path, self.writer.client).read()

    def close(self) -> None:
        """Mark the store closed (when one is open)."""
        if self.writer is not None:
            self.writer.close()
