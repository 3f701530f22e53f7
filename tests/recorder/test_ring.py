"""The ring's arithmetic (``dtsgd_viz.recorder.ring``), checked on plain numbers: how many
slots the recorder stages, how often it must flush, and which staged steps a flush can
still read, against a step-by-step simulation of the ring. No TensorFlow."""

import pathlib
import subprocess
import sys

import pytest

from dtsgd_viz.recorder import ring

MIB = 2**20
SMALL = 4 * MIB  # capture.SMALL_RING_BYTES


def test_importing_the_ring_imports_no_tensorflow():
    code = "import dtsgd_viz.recorder.ring, sys; assert 'tensorflow' not in sys.modules"
    root = pathlib.Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "largest, per_step, slots",
    [
        (1024, 4096, 8),  # small tensors: a stacked ring of 8
        (SMALL // 9, 4096, 8),  # 9 slots (8 + scratch) still fit the stacked ring
        (SMALL // 9 + 1, 4096, 4),  # a large tensor: 4 full-size slots
        (1024, 100 * MIB, 2),  # the 256 MiB budget holds 2 steps (never fewer)
        (1024, 1024 * MIB, 2),
        (1024, 64 * MIB, 4),
        (0, 0, 8),  # nothing recorded
    ],
)
def test_default_slots(largest, per_step, slots):
    assert ring.default_slots(largest, per_step, SMALL) == slots


def _choose(asked=None, mode="full", k=1, every=1, has_pv=True, per_step=4096, largest=1024):
    return ring.choose_slots(
        asked,
        mode,
        per_step=per_step,
        largest_bytes=largest,
        small_ring_bytes=SMALL,
        execution_steps=k,
        every=every,
        has_pv=has_pv,
    )


@pytest.mark.parametrize(
    "kw, slots",
    [
        (dict(), 8),
        (dict(asked=3), 3),
        (dict(asked=0), 0),
        (dict(mode="stats"), ring.STATS_BUFFER_STEPS),
        (dict(mode="stats", asked=7), 7),
        (dict(k=2), 8),  # 8 slots already hold two calls (4 + 1)
        (dict(k=10), 21),  # two calls of 10, + the step a flush leaves
        (dict(k=10, has_pv=False), 20),  # a periodic flush leaves none
        (dict(k=10, every=3), 8),  # 7 recorded steps in two calls, + 1
        (dict(k=1000, mode="stats"), 2001),  # stats: two calls, whatever they cost
    ],
)
def test_choose_slots_holds_two_executions_when_asked_for_none(kw, slots):
    assert _choose(**kw) == (slots, None)


def test_choose_slots_raises_an_asked_for_ring_that_cannot_hold_one_execution():
    slots, warning = _choose(asked=4, k=10)
    assert slots == 11
    assert warning.startswith("Recorder(buffer_steps=4) cannot hold the 10 updates")
    assert "it stages 11 steps instead" in warning
    slots, warning = _choose(asked=0, k=3)
    assert slots == 4 and "buffer_steps=0" in warning
    assert _choose(asked=30, k=10) == (30, None)


def test_choose_slots_says_when_one_execution_passes_the_budget():
    # 100 MiB a step: the default is 2 slots, two calls of 3 (7 slots) do not fit the
    # budget, one call (4 slots) is needed and passes it
    slots, warning = _choose(k=3, per_step=100 * MIB)
    assert slots == 4
    assert "stages 4 steps on the devices (400.0 MiB, over the 256 MiB staging budget)" in warning
    # two calls pass the budget, one fits it: the default (6 slots, 4) holds one, silently
    assert _choose(k=3, per_step=40 * MIB) == (6, None)
    assert _choose(k=3, per_step=60 * MIB) == (4, None)


def test_hold_warning():
    assert ring.hold_warning(10, False, None, 1) is None  # not built: it is sized at build
    assert ring.hold_warning(10, False, 10, 1) is None
    built = ring.hold_warning(10, False, 7, 1)
    assert "built (at the first trace of the step function) for 7 updates" in built
    assert built.endswith("Recorder(buffer_steps=11).")
    assert ring.hold_warning(10, False, 7, 3).endswith("Recorder(buffer_steps=5).")
    assert "steps_per_execution='auto'" in ring.hold_warning(4, True, None, 1)


@pytest.mark.parametrize(
    "slots, every, has_pv, interval",
    [
        (4, 1, True, 3),
        (4, 2, True, 6),
        (8, 1, True, 7),
        (1, 1, True, 1),  # tests/recorder/test_capture.py
        (4, 1, False, 4),
        (4, 3, False, 12),  # grads only: a periodic flush reads them all
        (None, 3, True, 3),
        (0, 2, True, 2),  # not built yet / read at every recorded step
    ],
)
def test_flush_interval(slots, every, has_pv, interval):
    assert ring.flush_interval(slots, every, has_pv) == interval


def test_periodic_flush_is_final_and_last_readable():
    assert not ring.periodic_flush_is_final(True, 4)
    assert ring.periodic_flush_is_final(False, 4)
    assert ring.periodic_flush_is_final(True, 1)
    assert ring.periodic_flush_is_final(True, 0)
    assert ring.last_readable(9, final=True, periodic_is_final=False) == 9
    assert ring.last_readable(9, final=False, periodic_is_final=False) == 8
    assert ring.last_readable(9, final=False, periodic_is_final=True) == 9


def test_slots_span_and_recorded_steps():
    assert [ring.slot_of(s, 2, 3) for s in range(2, 16, 2)] == [1, 2, 0, 1, 2, 0, 1]
    assert ring.slot_of(5, 1, 0) == 0  # slots=0 stages grads in one slot
    assert ring.span(3, 2) == 6 and ring.span(0, 2) == 2
    assert ring.recorded_steps(0, 10, 3) == [3, 6, 9]
    assert ring.recorded_steps(6, 10, 3) == [9]
    assert ring.recorded_steps(5, 11, 1) == [6, 7, 8, 9, 10, 11]
    assert ring.recorded_steps(9, 9, 3) == []


def _simulated(slots, every, upto):
    """What the ring holds after each update: ``held[current][step]`` = the kinds of
    recorded ``step`` still in its slot. Update t writes its gradients into slot(t);
    the parameters and velocities of update t are written by update t + 1 (their read
    waits for the next update), and only when the ring has slots."""
    slot_grad, slot_pv, held = {}, {}, {}
    for t in range(1, upto + 1):
        if (t - 1) > 0 and (t - 1) % every == 0 and slots > 0:
            slot_pv[ring.slot_of(t - 1, every, slots)] = t - 1
        if t % every == 0:
            slot_grad[ring.slot_of(t, every, slots)] = t
        held[t] = {
            s: {"grad" for g in [slot_grad.get(ring.slot_of(s, every, slots))] if g == s}
            | {"pv" for p in [slot_pv.get(ring.slot_of(s, every, slots))] if p == s or s == t}
            for s in range(every, t + 1, every)
        }
    return held


@pytest.mark.parametrize("slots", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("every", [1, 2, 3])
def test_still_staged_agrees_with_a_simulated_ring(slots, every):
    held = _simulated(slots, every, upto=40)
    for current, steps in held.items():
        for step, kinds in steps.items():
            for grad, pv in [(True, True), (True, False), (False, True)]:
                whole = (not grad or "grad" in kinds) and (not pv or "pv" in kinds)
                assert ring.still_staged(step, current, slots, every, grad=grad, pv=pv) == whole, (
                    current,
                    step,
                    grad,
                    pv,
                )


def test_queued_reads_stay_within_the_budget():
    assert ring.queued_reads(100 * MIB) == 2
    assert ring.queued_reads(1024 * MIB) == 1
    assert ring.queued_reads(0) == ring.STAGING_BUDGET_BYTES
