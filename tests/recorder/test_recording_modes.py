"""Stats mode, rings and decimation: what a long run keeps, checked against full values."""

import numpy as np
import pytest
import tf_keras
from helpers.builders import Problem, layout, make_sgd, run

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor

NESTEROV = dict(learning_rate=0.05, momentum=0.9, nesterov=True)
CASES = [
    ({"x": 2, "y": 4}, (4, 8), ("unsharded", "y")),
    ({"a": 2, "b": 2, "c": 2}, (4, 3, 2), ("c", "unsharded", "a")),
    ({"x": 8}, (16,), ("x",)),
]


def _record(mode_kw, steps=6, mode="graph", case=CASES[0], config=NESTEROV, **rec_kw):
    dims, shape, specs = case
    mesh = dtsgd_viz.make_mesh(dims)
    problem = Problem(shape, layout(mesh, *specs), seed=11)
    rec = dtsgd_viz.Recorder(**mode_kw, **rec_kw)
    opt = make_sgd(config, mesh, hooks=[rec])
    run(problem, opt, steps, mode, rec=rec if mode == "graph" else None)
    return rec.recording, problem, opt


def _numpy_stats(blocks):
    flat = blocks.reshape(blocks.shape[:2] + (-1,)).astype(np.float64)
    return np.stack([np.sqrt((flat**2).sum(-1)), flat.mean(-1), np.abs(flat).max(-1)], -1)


@pytest.mark.parametrize("case", CASES, ids=["2d-replicated", "3d", "1d"])
@pytest.mark.parametrize("mode", ["eager", "graph"])
@pytest.mark.slow
def test_stats_equal_numpy_stats_of_full_values(case, mode):
    full, _, _ = _record({}, mode=mode, case=case)
    stats, _, _ = _record({"mode": "stats"}, mode=mode, case=case)
    assert stats.mode == "stats" and full.mode == "full"
    np.testing.assert_array_equal(stats.steps, full.steps)
    np.testing.assert_allclose(stats.loss, full.loss, rtol=1e-6)
    geom = full.geometry("w")
    for kind in ("param", "velocity", "grad"):
        want = _numpy_stats(full.record("w").blocks[kind])  # unique blocks, group order
        np.testing.assert_allclose(stats.record("w").stats[kind], want, rtol=1e-5, atol=1e-7)
        # per device, replicas repeated in mesh order, same as full mode's derived stats
        per_device = stats.shard_stats("w", kind)
        assert per_device.shape == (len(full), geom.num_devices, 3)
        np.testing.assert_allclose(per_device, full.shard_stats("w", kind), rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(
            per_device[:, :, 0],
            np.linalg.norm(full.shard_values("w", kind).reshape(len(full), geom.num_devices, -1), axis=-1),
            rtol=1e-5,
        )


@pytest.mark.slow
def test_stats_mode_is_small_and_says_what_it_cannot_do(tmp_path):
    stats, _, _ = _record({"mode": "stats"}, steps=5)
    geom = stats.geometry("w")
    per_step = 3 * geom.num_unique * 3 * 8  # kinds * unique blocks * (norm, mean, max) * f64
    assert stats.nbytes <= 5 * (per_step + 64) + stats.initial("w").nbytes
    with pytest.raises(ValueError, match=r"mode='stats'.*Use shard_stats\(\)"):
        stats.global_values("w", "velocity")
    with pytest.raises(ValueError, match="Unknown kind 'speed'"):
        stats.shard_stats("w", "speed")
    back = dtsgd_viz.load_recording(stats.save(tmp_path / "s.npz"))
    assert back.mode == "stats"
    np.testing.assert_array_equal(back.shard_stats("w", "grad"), stats.shard_stats("w", "grad"))


@pytest.mark.slow
def test_stats_mode_every_and_graph_equals_eager():
    a, _, _ = _record({"mode": "stats", "every": 2}, steps=7, mode="eager")
    b, _, _ = _record({"mode": "stats", "every": 2}, steps=7, mode="graph")
    assert list(a.steps) == list(b.steps) == [2, 4, 6]
    for kind in ("param", "velocity", "grad"):
        np.testing.assert_allclose(a.shard_stats("w", kind), b.shard_stats("w", kind), rtol=1e-6)


def test_stats_mode_flags_nonfinite_steps():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = layout(mesh, "x", "y")
    problem = Problem((4, 8), lay)
    rec = dtsgd_viz.Recorder(mode="stats")
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    for step in range(1, 5):
        g = np.ones((4, 8), np.float32)
        if step == 2:
            g[3, 7] = np.inf
        opt.apply_gradients([(_dtensor.put(g, lay), problem.var)])
    r = rec.recording
    assert list(r.nonfinite_steps) == [2, 3, 4] and r.nonfinite[1, 0] == 3


@pytest.mark.slow
def test_ring_keeps_the_last_steps():
    full, _, _ = _record({}, steps=10)
    ring, _, _ = _record({"max_steps": 3}, steps=10)
    assert list(ring.steps) == [8, 9, 10]
    np.testing.assert_array_equal(ring.global_values("w", "velocity"), full.global_values("w", "velocity")[-3:])
    np.testing.assert_array_equal(ring.initial("w"), full.initial("w"))


@pytest.mark.parametrize("every", [1, 2])
@pytest.mark.slow
def test_decimation_keeps_an_evenly_thinned_history(every):
    steps = 20
    full, _, _ = _record({"every": every}, steps=steps, mode="eager")
    thin, _, _ = _record({"decimate": True, "max_steps": 4, "every": every}, steps=steps, mode="eager")
    recorded = list(range(every, steps + 1, every))
    stride = 1  # independent truth: the smallest power-of-two stride that fits
    while len([s for s in recorded if (s // every) % stride == 0]) > 4:
        stride *= 2
    want = [s for s in recorded if (s // every) % stride == 0]
    assert list(thin.steps) == want and len(want) <= 4
    idx = [list(full.steps).index(s) for s in want]
    np.testing.assert_array_equal(thin.global_values("w", "param"), full.global_values("w", "param")[idx])


@pytest.mark.slow
def test_decimation_in_stats_mode_over_a_longer_run():
    thin, _, _ = _record({"mode": "stats", "decimate": True, "max_steps": 16}, steps=200)
    assert len(thin) <= 16 and thin.steps[-1] <= 200 and thin.steps[0] >= 1
    gaps = np.diff(thin.steps)
    assert len(set(gaps.tolist())) == 1  # evenly spaced


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(mode="fast"), r"mode must be one of \['full', 'stats'\]. Received: mode='fast'"),
        (dict(max_steps=0), r"max_steps must be None or an integer >= 1. Received: max_steps=0"),
        (dict(decimate="yes"), "decimate must be True or False"),
    ],
)
def test_bad_mode_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        dtsgd_viz.Recorder(**kwargs)


@pytest.mark.parametrize("mode_kw", [{"mode": "stats"}, {"every": 3, "buffer_steps": 2}])
@pytest.mark.slow
def test_plain_step_numerics_untouched(mode_kw):
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = layout(mesh, "x", "unsharded")
    ours, theirs = Problem((6, 8), lay, seed=2), Problem((6, 8), lay, seed=2)
    rec = dtsgd_viz.Recorder(**mode_kw)
    opt = make_sgd(NESTEROV, mesh, hooks=[rec])
    plain = tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh, jit_compile=False)
    run(ours, opt, 9, "graph", rec=rec)
    run(theirs, plain, 9, "graph")
    assert all(a.tobytes() == b.tobytes() for a, b in zip(_dtensor.unpack(ours.var), _dtensor.unpack(theirs.var)))
    assert len(rec.recording) == (9 if "mode" in mode_kw else 3)


def test_full_mode_shard_stats_are_exact_when_computed_a_few_steps_at_a_time():
    from dtsgd_viz.recording.recording import block_stats

    rng = np.random.default_rng(5)
    blocks = rng.normal(size=(7, 3, 4, 5)).astype(np.float32)
    blocks[2, 1, 0, 0], blocks[4, 0, 1, 1], blocks[5, 2, 3, 4] = np.nan, np.inf, -np.inf
    want = _numpy_stats(blocks)
    for chunk in (1, 50, 10**6):  # one step per chunk, a few, all at once
        np.testing.assert_allclose(block_stats(blocks, chunk_elements=chunk), want, rtol=1e-12)
