"""The host log of stats mode keeps its steps in columns: the same steps and values as
the per-step log, for every retention rule, at a few bytes per block and kind."""

import numpy as np
import pytest

from dtsgd_viz.recorder.hostlog import HostLog, StatsLog


def _entry(step, blocks=(8, 2)):
    rng = np.random.default_rng(step)
    stats = {
        (f"v{i}", kind): rng.normal(size=(n, 3)).astype(np.float32)
        for i, n in enumerate(blocks)
        for kind in ("param", "grad")
    }
    return {"lr": 0.1 / step, "loss": float(step), "mismatch": None, "stats": stats}


@pytest.mark.parametrize(
    "max_steps, decimate, every",
    [
        (None, False, 1),
        (5, False, 1),
        (1, False, 1),
        (7, True, 1),
        (6, True, 3),
        (4, False, 2),
    ],
)
def test_columns_keep_what_the_per_step_log_keeps(max_steps, decimate, every):
    rows, cols = HostLog(max_steps, decimate, every), StatsLog(max_steps, decimate, every)
    for step in range(every, 101 * every, every):
        e = _entry(step)
        assert rows.wants(step) == cols.wants(step)
        rows.append(step, e)
        cols.append(step, e)
        assert len(rows) == len(cols)
    a, b = rows.entries, cols.entries
    assert [s for s, _ in a] == [s for s, _ in b]
    for (_, ea), (_, eb) in zip(a, b):
        assert (ea["lr"], ea["loss"]) == (eb["lr"], eb["loss"])
        for key in ea["stats"]:
            np.testing.assert_array_equal(ea["stats"][key], eb["stats"][key])


def test_columns_cost_twelve_bytes_per_block_and_kind():
    log = StatsLog()
    for step in range(1, 10_001):
        log.append(step, _entry(step % 50 + 1))
    per_step = log.nbytes / len(log)
    # 20 blocks x 3 float32 = 240 B of numbers, + iteration, learning rate and loss;
    # growth by doubling leaves at most as much again unused
    assert per_step <= 2 * (20 * 12 + 24)
