"""How many steps the recorder stages on the devices, and when it must read them.

Plain arithmetic on numbers (no TensorFlow): how many slots the ring gets
(``default_slots``, ``choose_slots``), what holding ``model.fit``'s executions asks of it
(``hold_warning``), how often a flush must come (``flush_interval``), which slot a
recorded step lands in (``slot_of``) and which staged steps a flush can still read
(``recorded_steps``, ``still_staged``)::

    >>> choose_slots(None, "full", per_step=4096, largest_bytes=1024,
    ...              small_ring_bytes=4 * 2**20)
    (8, None)
    >>> flush_interval(8, every=2, has_pv=True)  # a periodic flush leaves one slot
    14

The ``Recorder`` owns the numbers (its ``buffer_steps``, ``every``, the bytes it stages per
step) and warns with the messages these functions return.
"""

from __future__ import annotations

from typing import Any

STAGING_BUDGET_BYTES = 256 * 2**20
"""Device memory the full-mode ring may take by default (and what queued reads may hold)."""
MAX_BUFFER_STEPS = 8
"""Slots of a full-mode ring whose tensors all fit a stacked ring."""
LARGE_BUFFER_STEPS = 4
"""Slots of a full-mode ring holding a large tensor (each slot is a full-size copy)."""
STATS_BUFFER_STEPS = 512
"""Slots of a stats-mode ring (a few numbers per shard and step)."""


def default_slots(largest_bytes: int, per_step: int, small_ring_bytes: int) -> int:
    """8 slots when every tensor fits a stacked ring (``largest_bytes``: the largest
    recorded tensor; ``small_ring_bytes``: what a stacked ring may hold); otherwise 4 (each
    slot of a large tensor is a full-size variable on the devices: 4 halve that memory,
    and ``benchmarks/offsteps.py`` saw no step-time difference between 4 and 8), and never
    more than the staging budget holds at ``per_step`` bytes a recorded step."""
    stacked = (MAX_BUFFER_STEPS + 1) * largest_bytes <= small_ring_bytes
    slots = MAX_BUFFER_STEPS if stacked else LARGE_BUFFER_STEPS
    return int(min(slots, max(2, STAGING_BUDGET_BYTES // max(per_step, 1))))


def choose_slots(
    asked: int | None,
    mode: str,
    *,
    per_step: int,
    largest_bytes: int,
    small_ring_bytes: int,
    execution_steps: int = 1,
    every: int = 1,
    has_pv: bool = True,
) -> tuple[int, str | None]:
    """``buffer_steps`` and a warning (or None): as ``asked``, or the default. Under
    ``model.fit`` with ``steps_per_execution=k`` (``execution_steps``) the Keras callback
    runs once per k updates, so the ring must hold k recorded updates plus the one a
    periodic flush leaves (when parameters or velocities are staged, ``has_pv``): it gets
    at least that (an asked-for smaller ring is raised, with a warning) and, by default,
    two executions when they fit the staging budget (a flush every other call). Each slot
    is device memory: when holding one execution passes the budget, the warning says how
    much."""
    k = execution_steps
    if mode == "stats":
        slots = asked or STATS_BUFFER_STEPS
    else:
        slots = default_slots(largest_bytes, per_step, small_ring_bytes) if asked is None else asked
    warning = None
    if k > 1:
        leave = 1 if has_pv else 0
        need = -(-k // every) + leave
        two = -(-2 * k // every) + leave
        if asked is None and (mode == "stats" or two * per_step <= STAGING_BUDGET_BYTES):
            need = two
        if slots < need:
            nbytes = need * per_step / 2**20
            if asked is not None:
                warning = (
                    f"Recorder(buffer_steps={asked}) cannot hold the {k} updates model.fit "
                    f"runs between two calls of the Keras callback (steps_per_execution={k})"
                    f": it stages {need} steps instead ({nbytes:.1f} MiB on the devices)."
                )
            elif mode == "full" and need * per_step > STAGING_BUDGET_BYTES:
                warning = (
                    f"Recorder: keeping every update of model.fit with steps_per_execution"
                    f"={k} stages {need} steps on the devices ({nbytes:.1f} MiB, over the "
                    f"{STAGING_BUDGET_BYTES // 2**20} MiB staging budget). Record less "
                    "(every=, variables=, kinds=, mode='stats') or lower "
                    "steps_per_execution to use less device memory."
                )
            slots = need
    return slots, warning


def hold_warning(steps: int, tuned: bool, interval: int | None, every: int) -> str | None:
    """Why a ring cannot hold the ``steps`` updates ``model.fit`` runs between two calls
    of the Keras callback, or None: ``tuned`` (``steps_per_execution='auto'``) changes
    that count while it trains; a ring already built (``interval``: its updates between
    flushes; None while not built) cannot grow."""
    if tuned:
        return (
            "Recorder: steps_per_execution='auto' changes how many updates model.fit runs "
            "between two calls of the Keras callback while it trains, so the ring "
            "cannot be sized for it: updates beyond it are lost (listed in "
            "recording.dropped_steps). Give model.compile a fixed steps_per_execution."
        )
    if interval is not None and interval < steps:
        return (
            f"Recorder: its ring was built (at the first trace of the step function) for "
            f"{interval} updates between flushes, fewer than the {steps} "
            "model.fit now runs between two calls of the Keras callback "
            f"(steps_per_execution={steps}): updates will be lost (listed in "
            "recording.dropped_steps). Pass the callback to the first model.fit, or give "
            f"Recorder(buffer_steps={-(-steps // every) + 1})."
        )
    return None


def periodic_flush_is_final(has_pv: bool, slots: int) -> bool:
    """Whether a periodic flush reads up to the latest update, as a final one does: with
    nothing but gradients staged (``has_pv`` False), or a ring of at most one slot (read
    from the variables). Otherwise the latest update's parameters and velocities are
    staged only when the next update starts, and a periodic flush leaves that step."""
    return (not has_pv) or slots <= 1


def flush_interval(slots: int | None, every: int, has_pv: bool) -> int:
    """Updates between periodic flushes so that no staged step is overwritten: the ring
    less the slot of the step a periodic flush leaves for the next one (a flush waits for
    the devices, so fewer flushes cost less). ``slots`` None: the ring is not built yet."""
    if slots is None or slots <= 1:  # not built yet / read at (nearly) every step
        return every
    return (slots - (0 if periodic_flush_is_final(has_pv, slots) else 1)) * every


def last_readable(current: int, final: bool, periodic_is_final: bool) -> int:
    """The latest update a flush at iteration ``current`` reads (a periodic flush that is
    not final leaves the latest one, whose parameters the next update stages)."""
    return current if final or periodic_is_final else current - 1


def slot_of(step: Any, every: int, slots: int) -> Any:
    """The ring slot of the recorded ``step`` (a number, or an integer tensor: the same
    arithmetic is traced into the step function)."""
    return (step // every) % max(1, slots)


def span(slots: int, every: int) -> int:
    """Updates after which the ring comes round to a slot again."""
    return max(1, slots) * every


def recorded_steps(after: int, upto: int, every: int) -> list[int]:
    """The recorded steps (multiples of ``every``) after ``after``, up to ``upto``."""
    first = after // every + 1
    return [s * every for s in range(first, upto // every + 1)]


def still_staged(step: int, current: int, slots: int, every: int, *, grad: bool, pv: bool) -> bool:
    """Whether recorded ``step`` is still whole on the devices at iteration ``current``:
    its gradients (``grad``: staged) were not overwritten, and its parameters and
    velocities (``pv``) are either the variables' own (the latest step) or staged
    (``slots`` > 0) and not yet overwritten (they are written one update later than
    the gradients)."""
    ring = span(slots, every)
    grad_ok = not grad or current < step + ring
    pv_ok = not pv or step == current or (slots > 0 and current <= step + ring)
    return grad_ok and pv_ok


def queued_reads(read_nbytes: int) -> int:
    """How many reads of ``read_nbytes`` each may wait in the queue (within the staging
    budget, at least one) before the oldest is taken to the host."""
    return max(1, STAGING_BUDGET_BYTES // max(1, read_nbytes))
