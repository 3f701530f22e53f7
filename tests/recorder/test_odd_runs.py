"""Odd but legal runs: a zero-size variable (shape ``(0, 4)``) trains beside a real one.

tf-keras and ``dtsgd_viz.SGD`` without hooks train it fine; a ``Recorder`` records it as
empty blocks (stats 0: an empty block has nothing to sum, average or bound) and records
the other variable exactly as it is on the devices, read back after every update here.
"""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz.theory import reference

U = "unsharded"
STEPS = 5


def _run(mode, graph, hooks=True):
    """Five momentum updates of ``w`` (8x4, [unsharded, model]) and of two empty
    variables, ``z`` ((0, 4), [unsharded, model]) and ``e`` ((0, 4), [batch, model]: its
    empty dim sharded). Returns the recorder (or None) and ``w`` after each update."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    lay = dtensor.Layout([U, "model"], mesh)
    w = dtsgd_viz.variable(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4), lay, name="w")
    z = dtsgd_viz.variable(np.zeros((0, 4), np.float32), lay, name="z")
    e = dtsgd_viz.variable(np.zeros((0, 4), np.float32), dtensor.Layout(["batch", "model"], mesh), name="e")
    C = dtsgd_viz.shard(np.linspace(0.1, 1, 32, dtype=np.float32).reshape(8, 4), lay)
    rec = dtsgd_viz.Recorder(mode=mode) if hooks else None
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec] if hooks else [], exact_update=True)
    variables = [w, z, e]

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(C * (w - 1.0) ** 2 / 2)
            if graph:  # eagerly, DTensor cannot take the gradient of an empty tensor
                loss += tf.reduce_sum(z * z) + tf.reduce_sum(e * e)
        grads = tape.gradient(loss, variables, output_gradients=tf.ones_like(loss))
        if not graph:
            grads[1:] = [tf.zeros_like(v.read_value()) for v in variables[1:]]
        opt.apply_gradients(zip(grads, variables), loss=loss)

    fn = tf.function(step) if graph else step
    truth = []
    for _ in rec.loop(STEPS) if hooks else range(STEPS):
        fn()
        truth.append(dtsgd_viz.to_numpy(w))
    return rec, np.stack(truth)


def _tf_keras_trains_it():
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    z = dtsgd_viz.variable(np.zeros((0, 4), np.float32), dtensor.Layout([U, "model"], mesh), name="z")
    opt = tf_keras.dtensor.experimental.optimizers.SGD(0.1, momentum=0.9, mesh=mesh)
    opt.apply_gradients([(tf.zeros_like(z.read_value()), z)])
    return int(opt.iterations.numpy()) == 1


@pytest.mark.parametrize("graph", [True, False], ids=["tf.function", "eager"])
@pytest.mark.slow
def test_full_mode_records_empty_blocks(graph, tmp_path):
    assert _tf_keras_trains_it()  # a legal run
    rec, truth = _run("full", graph)
    r = rec.recording
    assert r.variables == ("w", "z", "e")
    np.testing.assert_array_equal(r.global_values("w", "param"), truth)  # w as it was
    _, no_hooks = _run("full", graph, hooks=False)
    np.testing.assert_array_equal(truth, no_hooks)  # hooks change nothing
    for name in ("z", "e"):
        for kind in ("param", "velocity", "grad"):
            assert r.global_values(name, kind).shape == (STEPS, 0, 4)
            assert r.shard_values(name, kind).shape == (STEPS, 8, 0, 1)
            np.testing.assert_array_equal(r.shard_stats(name, kind), 0)
    assert not r.nonfinite.any() and not r.replica_mismatch.any()
    check = reference.check_recording(r)
    assert {k: list(v) for k, v in check.items()} == {"w": [], "z": [], "e": []}
    assert str(check).startswith("every update follows the rule")
    back = dtsgd_viz.load_recording(r.save(tmp_path / "odd.npz"))
    np.testing.assert_array_equal(back.global_values("w", "velocity"), r.global_values("w", "velocity"))
    assert back.shard_values("z", "grad").shape == (STEPS, 8, 0, 1)
    assert back.shape("e") == (0, 4) and back.layout("e").sharding_specs == ("batch", "model")
    assert {k: list(v) for k, v in reference.check_recording(back).items()} == {"w": [], "z": [], "e": []}


def _block_stats(values, geometry):
    """(n_steps, n_devices, 3) norm, mean, max|x| of each device's block, in numpy."""
    out = []
    for x in values.astype(np.float64):
        per = []
        for block in geometry.blocks:
            b = x[block]
            per.append([np.sqrt(np.sum(b * b)), b.mean(), np.abs(b).max()])
        out.append(per)
    return np.array(out)


@pytest.mark.parametrize("graph", [True, False], ids=["tf.function", "eager"])
@pytest.mark.slow
def test_stats_mode_records_zero_stats_for_empty_blocks(graph, tmp_path):
    rec, truth = _run("stats", graph)
    r = rec.recording
    assert r.mode == "stats" and r.variables == ("w", "z", "e")
    np.testing.assert_allclose(r.shard_stats("w", "param"), _block_stats(truth, r.geometry("w")), rtol=1e-6)
    for name in ("z", "e"):
        for kind in ("param", "velocity", "grad"):
            stats = r.shard_stats(name, kind)
            assert stats.shape == (STEPS, 8, 3)
            np.testing.assert_array_equal(stats, 0)
    assert not r.nonfinite.any()
    back = dtsgd_viz.load_recording(r.save(tmp_path / "odd-stats.npz"))
    np.testing.assert_array_equal(back.shard_stats("z", "velocity"), 0)
    np.testing.assert_array_equal(back.shard_stats("w", "grad"), r.shard_stats("w", "grad"))
