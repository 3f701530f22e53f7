"""Stats-mode statistics keep the dtype they are stored in (issue 30 item 5): the float32
the devices' sums are rounded to, in the host log, the store and a saved ``.npz`` (a file
saved with float64 statistics loads as float64). Loading copies nothing into float64;
the views convert what they draw, and draw the same from either dtype. Plain data: no
TensorFlow."""

import dataclasses

import numpy as np
import pytest
from helpers.synthetic_store import KINDS, MESH, entries, header, watched

import dtsgd_viz
from dtsgd_viz.recorder.hostlog import StatsLog, assemble
from dtsgd_viz.recording.store import StoreWriter
from dtsgd_viz.views.shards.geometry import block_norm_lines, shard_norms

STEPS = 40


def _stats_store(path):
    writer = StoreWriter(path, header("stats"))
    for first in range(1, STEPS + 1, 9):
        writer.append(entries(range(first, min(STEPS, first + 8) + 1), "stats"))
    writer.close()
    return path


def test_a_stats_store_loads_its_statistics_as_stored(tmp_path):
    import zarr

    path = _stats_store(tmp_path / "run.zarr")
    r = dtsgd_viz.load_recording(path)
    group = zarr.open_group(str(path / "client-0"), mode="r")
    for i, v in enumerate(r.records):
        for kind in KINDS:
            stored = group[f"v{i}.{kind}.stats"][:STEPS]  # zarr itself, not StoreReader
            assert stored.dtype == np.float32
            assert v.stats[kind].dtype == np.float32
            np.testing.assert_array_equal(v.stats[kind], stored)
    # and the statistics are the ones the writer was given (entries: seeded draws)
    want = np.stack([e["stats"][("w", "velocity")] for _, e in entries(range(1, STEPS + 1), "stats")])
    np.testing.assert_array_equal(r.record("w").stats["velocity"], want.astype(np.float32))


def test_the_host_log_assembles_float32_statistics():
    """An eager update's statistics reach the host log as float64 (``read_block_stats``);
    it keeps float32, and the recording it assembles holds those float32 values."""
    given = entries(range(1, 6), "stats")
    log = StatsLog()
    for step, e in given:
        log.append(step, {**e, "stats": {key: s.astype(np.float64) for key, s in e["stats"].items()}})
    r = assemble(
        log.entries,
        watched(),
        KINDS,
        "stats",
        [np.zeros((8, 8), np.float32), np.zeros(8, np.float32)],
        mesh=MESH,
        momentum=0.9,
        nesterov=True,
        dropped=[],
        applied_momentum=0.9,
    )
    for v in r.records:
        for kind in KINDS:
            want = np.stack([e["stats"][(v.name, kind)] for _, e in given]).astype(np.float32)
            assert v.stats[kind].dtype == np.float32
            np.testing.assert_array_equal(v.stats[kind], want)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_npz_keeps_the_dtype_its_statistics_were_saved_in(tmp_path, dtype):
    r = dtsgd_viz.load_recording(_stats_store(tmp_path / "run.zarr"))
    saved = dataclasses.replace(
        r,
        records=tuple(
            dataclasses.replace(v, stats={k: s.astype(dtype) for k, s in v.stats.items()}) for v in r.records
        ),
    )
    back = dtsgd_viz.load_recording(saved.save(tmp_path / "run.npz"))
    assert back.record("w").stats["grad"].dtype == dtype
    np.testing.assert_array_equal(back.record("w").stats["grad"], r.record("w").stats["grad"])


@pytest.mark.slow
def test_the_views_draw_the_same_from_float32_and_float64_statistics(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    r32 = dtsgd_viz.load_recording(_stats_store(tmp_path / "run.zarr"))
    r64 = dataclasses.replace(
        r32,
        records=tuple(
            dataclasses.replace(v, stats={k: s.astype(np.float64) for k, s in v.stats.items()}) for v in r32.records
        ),
    )
    for kind in KINDS:
        a, b = shard_norms(r32, "w", kind), shard_norms(r64, "w", kind)
        assert a.dtype == b.dtype == np.float64 and np.array_equal(a, b, equal_nan=True)
        (ua, la), (ub, lb) = block_norm_lines(r32, "w", kind), block_norm_lines(r64, "w", kind)
        assert np.array_equal(ua, ub) and all(np.array_equal(x, y, equal_nan=True) for x, y in zip(la, lb))
    views = [dtsgd_viz.views.shards.plot.draw_shards(r, "w", "velocity") for r in (r32, r64)]
    assert len(views[0].norm.lines) == len(views[1].norm.lines) > 0
    for x, y in zip(views[0].norm.lines, views[1].norm.lines):
        assert np.array_equal(x.get_xdata(), y.get_xdata())
        assert np.array_equal(x.get_ydata(), y.get_ydata(), equal_nan=True)
    assert [t.get_text() for t in views[0].figure.findobj(matplotlib.text.Text)] == [
        t.get_text() for t in views[1].figure.findobj(matplotlib.text.Text)
    ]
