"""The recorder's buffers on the devices: what the step function writes into them (traced
with it) and how a flush reads a staged step back.

``Staging`` holds a metadata row per recorded step (``capture.RowBuffer``) and the values:
full per-shard values in a ``capture.ValueRing`` (full mode) or block stats in a
``capture.StatsStaging`` (stats mode), all read with one call (``capture.Reader``).
Which slot a step lands in is ``ring.slot_of``. The ``Recorder`` builds it eagerly at the
first trace of a step function::

    staging = Staging(watched, kinds, "full", every=1, slots=8, row_slots=8, mesh=mesh,
                      iterations=optimizer.iterations)
    staging.stage_update(event)      # traced: the update's metadata and gradients
    staging.stage_pv(optimizer)      # traced: the previous update's parameters, velocities
    staging.stage_skip(optimizer, iteration, loss_scale)   # traced: an update skipped
    staging.read_steps(staging.reader(), ...)   # at a flush, eagerly
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import tensorflow as tf

from . import capture as _capture
from . import host_memory
from .ring import slot_of, span, still_staged
from .values import grad_values, meta_row, pv_values, skip_row


class Staging:
    """The device buffers of one recorder: ``slots`` recorded steps (``slots=0``: full
    mode stages only gradients, parameters and velocities are read from the variables at
    each flush) and ``row_slots`` metadata rows, for the ``watched`` variables' ``kinds``.
    ``iterations``: the optimizer's iteration variable, read with the buffers."""

    def __init__(
        self,
        watched: list,
        kinds: Sequence[str],
        mode: str,
        every: int,
        slots: int,
        row_slots: int,
        mesh: Any,
        iterations: Any,
    ):
        self.watched, self.kinds, self.mode = watched, kinds, mode
        self.every, self.slots, self.iterations = every, slots, iterations
        self.has_pv = any(k in kinds for k in ("param", "velocity"))
        # a zero-size variable has nothing to stage: its host form is known (capture.empty_value)
        self.on_devices = [w for w in watched if not _capture.is_empty(w)]
        with tf.init_scope():
            self.meta = _capture.RowBuffer(row_slots, 4, mesh)  # values.meta_row
            if mode == "full":
                # slots=0: parameters and velocities are read from the variables at each
                # flush; only gradients (which no variable holds) are staged
                staged = kinds if slots else [k for k in kinds if k == "grad"]
                self.ring = _capture.ValueRing(max(1, slots), watched, staged)
                self.stats = None
            else:
                self.ring = None
                self.stats = _capture.StatsStaging(slots, watched, kinds, mesh)
        variables = [iterations, self.meta.var]
        variables += self.ring.variables if self.ring is not None else []
        variables += self.stats.variables if self.stats is not None else []
        self.reader = _capture.Reader(variables)
        host_memory.give_back_when_collected(self)  # the buffers, freed with it

    # ---- written by the step function ------------------------------------------------------

    def stage_pv(self, optimizer: Any) -> None:
        """Stage the parameters and velocities of the update the optimizer's iteration
        counts, if it is recorded (at the start of the next update, or in the split step's
        copy function between two calls)."""
        # the previous update's results, read before this update changes them
        prev = tf.cast(optimizer.iterations.read_value(), tf.int64)
        due = tf.logical_and(prev > 0, tf.equal(prev % self.every, 0))
        slot = slot_of(prev, self.every, self.slots)
        if self.ring is not None:
            if self.has_pv and self.slots:
                # read inside the branch: nothing is read on steps not recorded, and the
                # update's in-place assignments never wait on (or copy around) our reads
                self.ring.write(due, slot, lambda: pv_values(self.on_devices, self.kinds, optimizer))
        elif self.has_pv:
            # always in a branch: the branch reads the variables, so the update waits for
            # the whole branch instead of copying a parameter a pending read still holds
            self.write_stats(
                due, slot, lambda: pv_values(self.on_devices, self.kinds, optimizer, copy=False), branch=True
            )

    def stage_update(self, event: Any) -> None:
        """Stage a traced update's metadata row and, if recorded, its gradients."""
        it = tf.cast(event.iteration, tf.int64)
        record = tf.equal(it % self.every, 0)

        def meta():
            self.meta.write(meta_row(event), slot_of(it, self.every, self.meta.slots))
            return tf.constant(True)

        if self.every == 1:
            meta()
        else:  # steps not recorded run none of it
            _capture.cond(record, meta, lambda: tf.constant(False))
        if "grad" not in self.kinds:
            return
        grads = grad_values(self.on_devices, event)
        slot = slot_of(it, self.every, self.slots)
        if self.ring is not None:
            self.ring.write(record, slot, grads)
        else:
            self.write_stats(record, slot, lambda: grads)

    def stage_skip(self, optimizer: Any, iteration: Any, loss_scale: Any) -> None:
        """Stage an update that a dynamic loss scale skips (traced into the branch that
        skips it, before the optimizer's iteration counts it): the previous update's
        parameters and velocities, which the skipped update's own start would have
        staged, and, if ``iteration`` (the skipped update's) is recorded, its row with
        the ``loss_scale`` it used (``values.skip_row``). Nothing else: a skipped update
        changes no variable."""
        self.stage_pv(optimizer)
        it = tf.cast(iteration, tf.int64)

        def meta():
            self.meta.write(skip_row(it, loss_scale), slot_of(it, self.every, self.meta.slots))
            return tf.constant(True)

        if self.every == 1:
            meta()
        else:
            _capture.cond(tf.equal(it % self.every, 0), meta, lambda: tf.constant(False))

    def write_stats(self, predicate: Any, slot: Any, values: Callable[[], dict], branch: bool = False) -> None:
        """Block stats of ``values()`` into ``slot`` when ``predicate``: with ``every=1``
        (and not ``branch``) every step is recorded, so they are written unconditionally;
        otherwise the work sits behind a ``tf.cond`` so steps not recorded compute nothing."""
        stats = self.stats
        assert stats is not None, "block stats are staged in mode='stats' only"

        def write(index):
            stats.write(values(), index)
            return tf.constant(True)

        if self.every == 1 and not branch:
            write(slot)
        else:
            _capture.cond(predicate, lambda: write(slot), lambda: tf.constant(False))

    # ---- read back at a flush ----------------------------------------------------------------

    def iteration(self, read: Any) -> int:
        """The optimizer's iteration in ``read`` (a ``reader`` result)."""
        return int(read[self.iterations.ref()][0])

    def metas(self, read: Any, after: int) -> dict:
        """The staged metadata rows of the steps after ``after``, by step."""
        return {int(r[0]): r for r in self.meta.read(read[self.meta.var.ref()]) if r[0] > after}

    def stats_for(self, read: Any, steps: list[int], current: int) -> dict | None:
        """Stats mode: the staged block stats, when one of ``steps`` may still be in the
        ring at iteration ``current`` (None otherwise, and in full mode)."""
        ring = span(self.slots, self.every)
        if self.stats is not None and any(s + ring >= current for s in steps):
            return self.stats.read(read)
        return None

    def read_steps(
        self,
        read: Any,
        current: int,
        steps: list[int],
        *,
        after: int,
        wants: Callable[[int], bool],
        append: Callable[..., None],
        live: Callable[[], dict],
        skip: Callable[[int, float], None],
    ) -> tuple[int, list[int]]:
        """Hand each of the recorded ``steps`` still whole in ``read`` (a ``reader``
        result, at iteration ``current``) to ``append(meta_row, data)``, skipping those
        the host log does not ``wants``, and each a dynamic loss scale skipped to
        ``skip(step, loss_scale)``, in step order; ``after``: the last step the host has.
        The latest update's parameters and velocities are the variables' own: ``live()``
        reads them (once). Returns how many arrived and the steps overwritten."""
        metas = self.metas(read, after)
        stats = self.stats_for(read, steps, current)
        grad = "grad" in self.kinds
        arrived, dropped, pv = 0, [], None
        for step in steps:
            meta = metas.get(step)
            if meta is not None and meta[3] > 0:  # skipped: its row is all there is
                skip(step, float(meta[3]))
                continue
            if meta is None or not still_staged(step, current, self.slots, self.every, grad=grad, pv=self.has_pv):
                dropped.append(step)
                continue
            if not wants(step):
                continue
            slot = slot_of(step, self.every, self.slots)
            data = {}
            for w in self.watched:
                for kind in self.kinds:
                    key = (w.name, kind)
                    if kind != "grad" and step == current:
                        pv = pv if pv is not None else live()
                        data[key] = pv[key]
                    elif self.ring is not None:
                        data[key] = self.ring.read(slot, key, read)
                    else:
                        assert stats is not None, "stats mode reads the staged stats"
                        data[key] = stats[key][slot]
            append(meta, data)
            arrived += 1
        return arrived, dropped
