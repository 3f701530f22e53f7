"""Recorder and Recording: what is kept, how it is read, saved, loaded and rejected."""

import subprocess
import sys
import warnings

import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import Problem, layout, make_sgd, run
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.recording.recording import RecordingFileError

MOMENTUM = dict(learning_rate=0.05, momentum=0.9, nesterov=False)


def _recorded(steps=5, mode="eager", config=MOMENTUM, dims=None, specs=("x", "y"), shape=(4, 8), **rec_kw):
    mesh = dtsgd_viz.make_mesh(dims or {"x": 2, "y": 4})
    problem = Problem(shape, layout(mesh, *specs), seed=7)
    rec = dtsgd_viz.Recorder(**rec_kw)
    opt = make_sgd(config, mesh, hooks=[rec])
    run(problem, opt, steps, mode, rec=rec if mode == "graph" else None)
    return rec, problem, opt


@pytest.mark.parametrize("every", [1, 3])
@pytest.mark.slow
def test_graph_capture_equals_eager_capture(config, every):
    eager, _, _ = _recorded(7, "eager", config, every=every)
    graph, _, _ = _recorded(7, "graph", config, every=every, buffer_steps=2)
    a, b = eager.recording, graph.recording
    np.testing.assert_array_equal(a.steps, b.steps)
    assert list(a.steps) == list(range(every, 8, every))
    for kind in ("param", "velocity", "grad"):
        np.testing.assert_array_equal(a.global_values("w", kind), b.global_values("w", kind))
    np.testing.assert_array_equal(a.initial("w"), b.initial("w"))
    np.testing.assert_allclose(a.loss, b.loss, rtol=1e-6)
    np.testing.assert_array_equal(a.hyperparameters.learning_rate, b.hyperparameters.learning_rate)


@pytest.mark.slow
def test_kinds_and_variables_selection():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    p1, p2 = Problem((4, 8), layout(mesh, "x", "y"), name="a"), Problem((8,), layout(mesh, "y"), name="b")
    rec = dtsgd_viz.Recorder(kinds=("velocity",), variables=["b"])
    opt = dtsgd_viz.SGD(0.1, momentum=0.5, mesh=mesh, hooks=[rec])
    for _ in range(3):
        opt.minimize(lambda: p1.loss() + p2.loss(), [p1.var, p2.var])
    r = rec.recording
    assert r.variables == ("b",) and r.kinds == ("velocity",)
    assert r.global_values("b", "velocity").shape == (3, 8)
    with pytest.raises(ValueError, match=r"Kind 'param' was not recorded \(Recorder kinds=\['velocity'\]\)"):
        r.global_values("b", "param")
    with pytest.raises(ValueError, match=r"Unknown variable 'a'. This recording has: \['b'\]"):
        r.global_values("a", "velocity")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(every=0), r"every must be an integer >= 1. Received: every=0"),
        (dict(every=1.5), r"Received: every=1.5"),
        (
            dict(kinds=("param", "momentum")),
            r"Unknown kind\(s\) \['momentum'\]. Allowed: \['param', 'velocity', 'grad'\]",
        ),
        (dict(kinds=()), "Unknown kind"),
        (dict(buffer_steps=-1), r"buffer_steps must be None or an integer >= 0. Received: buffer_steps=-1"),
        (dict(buffer_steps=0, mode="stats"), "buffer_steps=0 .* is for mode='full' only"),
    ],
)
def test_recorder_bad_inputs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        dtsgd_viz.Recorder(**kwargs)


@pytest.mark.slow
def test_unknown_variable_filter_and_unattached_recorder():
    rec = dtsgd_viz.Recorder(variables=["nope"])
    with pytest.raises(ValueError, match=r"has seen no update yet.*SGD\(\.\.\., hooks=\[rec\]\)"):
        _ = rec.recording
    var = tf.Variable([1.0, 2.0], name="w")
    opt = dtsgd_viz.SGD(0.1, hooks=[rec])
    with pytest.raises(ValueError, match=r"names 'nope', which the optimizer does not update. Allowed: \['w'\]"):
        opt.minimize(lambda: tf.reduce_sum(var**2), [var])
    with pytest.raises(ValueError, match="Unknown kind 'speed'"):
        _recorded(1)[0].recording.global_values("w", "speed")


@pytest.mark.slow
def test_unique_storage_and_nbytes():
    # (4, 8) over a 2x4 mesh, sharded on y only: 4 unique blocks, each held twice
    rec, _, _ = _recorded(6, specs=("unsharded", "y"))
    r = rec.recording
    g = r.geometry("w")
    assert g.num_unique == 4 and r.record("w").blocks["param"].shape == (6, 4, 4, 2)
    assert r.shard_values("w", "param").shape == (6, 8, 4, 2)
    raw = 6 * 3 * 4 * 8 * 4  # steps * kinds * global floats * bytes: the unique data
    assert raw <= r.nbytes <= raw + 4 * 8 * 4 + 6 * 64  # plus the initial value and O(1) per step
    assert r.nbytes < 2 * raw  # replicas are not stored twice


def test_shard_values_are_device_order_replicas_repeated():
    rec, problem, _ = _recorded(2, specs=("unsharded", "y"))
    r = rec.recording
    shards = r.shard_values("w", "param")[-1]
    live = _dtensor.unpack(problem.var)
    for d in range(8):
        np.testing.assert_array_equal(shards[d], live[d])
    assert r.shard_devices("w")[5].endswith("CPU:5")


def test_nonfinite_gradients_flagged_without_losing_steps():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"))
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    lay = layout(mesh, "x", "y")
    for step in range(1, 6):
        g = np.full((4, 8), 0.5, np.float32)
        if step == 3:
            g[1, 5] = np.nan
        opt.apply_gradients([(_dtensor.put(g, lay), problem.var)])
    r = rec.recording
    assert list(r.steps) == [1, 2, 3, 4, 5]
    assert list(r.nonfinite_steps) == [3, 4, 5]  # the NaN reaches the parameter and stays
    assert r.nonfinite[2, 0] == 3 and r.nonfinite[3, 0] == 2  # grad+param, then param only
    assert np.isnan(r.global_values("w", "grad")[2, 1, 5])
    np.testing.assert_allclose(
        r.global_values("w", "param")[1], problem.w0 - 0.05 - 0.095, rtol=1e-6
    )  # earlier steps intact


def test_replica_mismatch_is_flagged():
    """A replicated gradient whose copies disagree (built with dtensor.pack, which does
    not check) is flagged at that step. DTensor itself then applies device 0's copy
    everywhere, so the parameter's replicas agree again: both are recorded."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    rep = dtensor.Layout.replicated(mesh, 1)
    parts = []
    for d, device in enumerate(mesh.local_devices()):
        with tf.device(device):
            parts.append(tf.constant(np.full(3, 1.0 + (d == 6), np.float32)))
    bad_grad = dtensor.pack(parts, rep)
    var = _dtensor.variable(np.ones(3, np.float32), rep, name="r")
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, mesh=mesh, hooks=[rec])
    opt.apply_gradients([(_dtensor.put(np.ones(3, np.float32), rep), var)])
    opt.apply_gradients([(bad_grad, var)])
    r = rec.recording
    assert list(r.replica_mismatch) == [2]
    assert r.mismatch[1, 0] == 4  # the bit of "grad" (KINDS order: param, velocity, grad)
    assert r.record("r").blocks["grad"].shape == (2, 1, 3)  # stored once: device 0's copy
    np.testing.assert_allclose(r.global_values("r", "param")[-1], 0.8, rtol=1e-6)


@pytest.mark.slow
def test_dropped_steps_are_reported_not_silent():
    rec, _, _ = _recorded(0)
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"))
    rec = dtsgd_viz.Recorder(buffer_steps=2)
    opt = make_sgd(MOMENTUM, mesh, hooks=[rec])
    step = problem.graph_step(opt)
    for _ in range(5):  # no flush in between: only the last 2 slots survive
        step()
    with pytest.warns(RuntimeWarning, match=r"3 recorded step\(s\) \(1\.\.3\) were overwritten"):
        r = rec.recording
    assert list(r.steps) == [4, 5] and list(r.dropped_steps) == [1, 2, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in rec.loop(6):
            step()
        assert list(rec.recording.steps) == [4, 5, 6, 7, 8, 9, 10, 11]


@pytest.mark.slow
def test_save_load_round_trip(tmp_path):
    rec, _, _ = _recorded(
        4, mode="graph", dims={"a": 2, "b": 2, "c": 2}, specs=("c", "unsharded", "a"), shape=(4, 3, 2)
    )
    r = rec.recording
    path = r.save(tmp_path / "run.npz")
    back = dtsgd_viz.load_recording(path)
    assert back.mesh == r.mesh and back.variables == r.variables and back.kinds == r.kinds
    assert back.layout("w") == r.layout("w")
    for kind in r.kinds:
        np.testing.assert_array_equal(back.shard_values("w", kind), r.shard_values("w", kind))
    for attr in ("steps", "loss_values", "nonfinite", "mismatch", "dropped_steps"):
        np.testing.assert_array_equal(getattr(back, attr), getattr(r, attr))
    assert back.hyperparameters.momentum == 0.9 and back.hyperparameters.nesterov is False
    np.testing.assert_array_equal(back.initial("w"), r.initial("w"))


def test_loading_does_not_import_tensorflow(tmp_path):
    rec, _, _ = _recorded(2)
    path = rec.recording.save(tmp_path / "r.npz")
    code = (
        "import sys, dtsgd_viz\n"
        f"r = dtsgd_viz.load_recording({str(path)!r})\n"
        "print(r.global_values('w', 'velocity').shape, 'tensorflow' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "(2, 4, 8) False"


def test_corrupted_and_truncated_files(tmp_path):
    rec, _, _ = _recorded(3)
    path = rec.recording.save(tmp_path / "r.npz")
    data = path_bytes = open(path, "rb").read()
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(RecordingFileError, match="truncated or corrupted"):
        dtsgd_viz.load_recording(truncated)
    import zipfile

    with zipfile.ZipFile(path) as zf:  # find the payload of the gradient array
        info = zf.getinfo("v0.grad.npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    flipped = bytearray(path_bytes)
    flipped[start + info.compress_size - 7] ^= 0xFF  # inside the float data
    corrupted = tmp_path / "corrupted.npz"
    corrupted.write_bytes(bytes(flipped))
    with pytest.raises(RecordingFileError, match="corrupted"):
        dtsgd_viz.load_recording(corrupted)
    foreign = tmp_path / "foreign.npz"
    np.savez(foreign, x=np.zeros(3))
    with pytest.raises(RecordingFileError, match="missing or unreadable header"):
        dtsgd_viz.load_recording(foreign)
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    with pytest.raises(RecordingFileError, match="not a readable dtsgd_viz recording"):
        dtsgd_viz.load_recording(text)
    assert isinstance(RecordingFileError("x"), ValueError)


def test_newer_format_version_is_refused(tmp_path):
    import json
    import zipfile

    rec, _, _ = _recorded(1)
    path = rec.recording.save(tmp_path / "r.npz")
    arrays = dict(np.load(path, allow_pickle=False))
    meta = json.loads(arrays["meta"].tobytes())
    meta["version"] = 99
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    np.savez(tmp_path / "v99.npz", **arrays)
    assert zipfile.is_zipfile(tmp_path / "v99.npz")
    with pytest.raises(RecordingFileError, match="version 99; this dtsgd_viz reads version 1"):
        dtsgd_viz.load_recording(tmp_path / "v99.npz")


def test_learning_rate_schedule_is_recorded_per_step():
    import tf_keras

    sched = tf_keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=1, decay_rate=0.5)
    var = tf.Variable([1.0, -2.0], name="w")
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(sched, momentum=0.9, hooks=[rec])
    for _ in range(3):
        opt.minimize(lambda: tf.reduce_sum(var**2) / 2, [var])
    r = rec.recording
    np.testing.assert_allclose(r.hyperparameters.learning_rate, [0.1, 0.05, 0.025], rtol=1e-6)
    assert all(len(s) == 0 for s in dtsgd_viz.reference.check_recording(r).values())


def test_check_recording_flags_a_tampered_step():
    rec, _, _ = _recorded(4)
    r = rec.recording
    assert list(dtsgd_viz.reference.check_recording(r)["w"]) == []
    r.record("w").blocks["param"][2] += 1e-3  # pretend step 3 moved wrongly
    assert list(dtsgd_viz.reference.check_recording(r)["w"]) == [3, 4]


@pytest.mark.parametrize("kinds", [("param", "velocity"), ("param", "velocity", "grad")])
@pytest.mark.slow
def test_read_at_flush_mode_equals_eager_capture(kinds):
    """buffer_steps=0 stages only gradients and reads parameters and velocities from the
    variables at each flush (rec.loop flushes after every recorded step)."""
    eager, _, _ = _recorded(6, "eager", kinds=kinds, every=2)
    direct, _, _ = _recorded(6, "graph", kinds=kinds, every=2, buffer_steps=0)
    a, b = eager.recording, direct.recording
    assert list(b.steps) == [2, 4, 6] and len(b.dropped_steps) == 0
    for kind in kinds:
        np.testing.assert_array_equal(a.global_values("w", kind), b.global_values("w", kind))


@pytest.mark.slow
def test_read_at_flush_mode_reports_what_no_flush_saw():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"))
    rec = dtsgd_viz.Recorder(kinds=("param", "velocity"), buffer_steps=0)
    step = problem.graph_step(make_sgd(MOMENTUM, mesh, hooks=[rec]))
    for _ in range(3):
        step()
    with pytest.warns(RuntimeWarning, match=r"2 recorded step\(s\) \(1\.\.2\)"):
        r = rec.recording
    assert list(r.steps) == [3] and list(r.dropped_steps) == [1, 2]
