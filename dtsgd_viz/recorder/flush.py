"""Moving what the devices staged to the host: the reads behind ``Recorder.flush``, the
periodic flushes of ``Recorder.loop`` and of the Keras callback (``keras_callback.py``),
and the check each flush makes of a split step function's count of updates
(``split_step.py``).

``Flusher`` is an object of ``Recorder`` (its ``_flusher``): it owns the host's side of
the device buffers, the reads queued on the devices (``pending``), the last update the
host has (``last_step``) and the recorded steps overwritten before a read
(``dropped``); each step that arrives goes to the recorder's ``append``/``skip`` (given
at construction), the device buffers (``staging.py``) are handed to each read::

    for _ in rec.loop(100):   # Recorder.loop: a flush every ring
        train_step()
    rec.flush()               # the host has every recorded step
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from . import ring
from .split_step import UpdateCount, count_warning
from .staging import Staging


class Flusher:
    """The host side of ``Recorder``'s device buffers (see the module docstring).

    ``wants(step)``: whether the host log keeps ``step``; ``append(meta, data)``: one
    recorded step arrived; ``skip(step, loss_scale)``: one recorded update a loss scale
    skipped; ``live()``: the latest update's parameters and velocities, read from the
    variables."""

    def __init__(
        self,
        every: int,
        has_pv: bool,
        count: UpdateCount,
        *,
        wants: Callable[[int], bool],
        append: Callable[..., None],
        skip: Callable[[int, float], None],
        live: Callable[[], dict],
    ):
        self.every, self.has_pv, self.count = every, has_pv, count
        self._wants, self._append, self._skip, self._live = wants, append, skip, live
        self.pending: list[tuple[Callable[[], Any], int | None]] = []  # queued reads
        self.last_step = 0  # the last update the host has
        self.dropped: list[int] = []

    def read(self, staging: Staging, buffer_steps: int, final: bool, wait: bool) -> int:
        """Take what ``staging`` holds to the host (call eagerly); returns how many
        recorded steps arrived. ``wait=False`` (a periodic flush during training):
        queue one read of everything staged and return without waiting for the
        devices, which may run several steps behind; queued reads are taken to the
        host, oldest first, by the next read that waits, or once they hold more than
        the staging budget."""
        # a queued read cannot hold the latest parameters, which a ring of <= 1 slot
        # reads from the variables
        if wait or (self.has_pv and buffer_steps <= 1):
            return self._read_pending(0, staging, buffer_steps) + self._read(staging, buffer_steps, final)
        reader = staging.reader
        self.pending.append((reader.start(), self.count.expected()))
        return self._read_pending(ring.queued_reads(reader.nbytes), staging, buffer_steps)

    def _read_pending(self, keep: int, staging: Staging, buffer_steps: int) -> int:
        arrived = 0
        while len(self.pending) > keep:
            start, expected = self.pending.pop(0)
            arrived += self._read(staging, buffer_steps, False, start(), expected)
        return arrived

    def _read(
        self, staging: Staging, buffer_steps: int, final: bool, read: Any = None, expected: int | None = None
    ) -> int:
        # everything staged, in one call (or a read queued earlier, in device order)
        if read is None:
            read, expected = staging.reader(), self.count.expected()
        current = staging.iteration(read)
        if expected is not None and current != expected:
            self._split_failed(current, expected)
        # The latest update's parameters and velocities are staged only when the next
        # update starts; a periodic flush leaves that step for the next flush instead of
        # reading every variable now (the flush interval leaves room for it).
        upto = ring.last_readable(current, final, ring.periodic_flush_is_final(self.has_pv, buffer_steps))
        if upto <= self.last_step:
            return 0
        arrived, dropped = staging.read_steps(
            read,
            current,
            ring.recorded_steps(self.last_step, upto, self.every),
            after=self.last_step,
            wants=self._wants,
            append=self._append,
            live=self._live,
            skip=self._skip,
        )
        self.last_step = upto
        if dropped:
            self.dropped.extend(dropped)
            self._warn_dropped(dropped, buffer_steps)
        return arrived

    def _warn_dropped(self, dropped: list[int], buffer_steps: int) -> None:
        advice = (
            "The step function given to rec.loop(n, step=...) makes more than one update "
            "per call (warned above), so the recorder's count of updates runs behind: "
            "make one update per call, or raise buffer_steps."
            if not self.count.ok
            else f"Read or flush the recorder at least every {ring.span(buffer_steps, self.every)}"
            " steps (rec.flush(), or iterate with rec.loop(n)), or raise buffer_steps."
        )
        warnings.warn(
            f"Recorder: {len(dropped)} recorded step(s) ({dropped[0]}..{dropped[-1]}) were "
            f"overwritten on the devices before being read. {advice}",
            RuntimeWarning,
            stacklevel=4,
        )

    def _split_failed(self, current: int, expected: int) -> None:
        if self.count.fail():
            warnings.warn(count_warning(current, expected), RuntimeWarning, stacklevel=5)
