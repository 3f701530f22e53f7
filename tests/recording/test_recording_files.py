"""Recordings of real training runs: every dtype tf-keras trains in survives a file,
empty recordings are valid values, and a recorder attached after its step function
was traced says so (issue #9, items 4 and 5)."""

import dataclasses
import json
import subprocess
import sys
import warnings

import matplotlib
import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import Problem, layout, make_sgd

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.recording.damage import NoChecksumsWarning
from dtsgd_viz.recording.recording import RecordingFileError
from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.views.shards.plot import draw_shards

matplotlib.use("Agg")

DTYPES = ("float16", "bfloat16", "float32", "float64")
KINDS = ("param", "velocity", "grad")
STEPS = 5


def _numpy_dtype(name):
    return np.dtype(tf.as_dtype(name).as_numpy_dtype)


def _bits(a):
    """The raw bytes of ``a`` and its dtype: equal bits, not merely equal values."""
    a = np.ascontiguousarray(a)
    return a.dtype.name, a.shape, a.tobytes()


def _train(dtype, steps=STEPS, config=CONFIGS["nesterov"], **rec_kw):
    """The real optimizer on a [x, y]-sharded (4, 8) variable of ``dtype``: a quadratic
    loss computed in that dtype, ``steps`` updates of a ``tf.function`` in ``rec.loop``."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = layout(mesh, "x", "y")
    rng = np.random.default_rng(3)
    w0 = rng.normal(size=(4, 8)).astype(_numpy_dtype(dtype))
    c = rng.uniform(0.2, 1.5, size=(4, 8)).astype(_numpy_dtype(dtype))
    var = _dtensor.variable(w0, lay, name="w")
    C = _dtensor.put(c, lay)
    rec = dtsgd_viz.Recorder(**rec_kw)
    opt = make_sgd(config, mesh, hooks=[rec])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(C * var * var) / 2
        grads = tape.gradient(loss, [var])
        opt.apply_gradients(zip(grads, [var]), loss=loss)

    for _ in rec.loop(steps):
        step()
    return rec, var, w0


# ---- item 4: every training dtype, bit for bit ------------------------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """``runs(dtype)``: (dtype, recording, variable, start, saved path), trained once."""
    done = {}

    def get(dtype):
        if dtype not in done:
            rec, var, w0 = _train(dtype)
            r = rec.recording
            done[dtype] = dtype, r, var, w0, r.save(tmp_path_factory.mktemp(dtype) / "run.npz")
        return done[dtype]

    return get


@pytest.fixture(params=DTYPES)
def trained(request, runs):
    return runs(request.param)


@pytest.mark.slow
def test_real_recording_of_every_training_dtype_loads_bit_for_bit(trained):
    dtype, r, var, w0, path = trained
    back = dtsgd_viz.load_recording(path)
    assert back.record("w").dtype == dtype
    # independent truth: the start we gave the variable and what the devices hold now
    assert _bits(back.initial("w")) == _bits(w0)
    live = _dtensor.unpack(var)
    assert _bits(back.shard_values("w", "param")[-1]) == _bits(np.stack(live))
    for kind in KINDS:
        assert back.global_values("w", kind).dtype.name == dtype
        assert _bits(back.global_values("w", kind)) == _bits(r.global_values("w", kind))
        assert _bits(back.record("w").blocks[kind]) == _bits(r.record("w").blocks[kind])
        np.testing.assert_array_equal(back.shard_stats("w", kind), r.shard_stats("w", kind))
        assert back.shard_stats("w", kind).dtype == np.float64
    assert list(back.steps) == list(range(1, STEPS + 1))
    np.testing.assert_array_equal(back.loss_values, r.loss_values)
    assert len(back.nonfinite_steps) == 0 and len(back.replica_mismatch) == 0


@pytest.mark.slow
def test_loaded_recording_of_every_dtype_follows_the_numpy_rule(trained):
    """The reference recomputes each update in the recording's own dtype: a loaded
    bfloat16/float16 recording checks exactly as the in-memory one does."""
    _, r, _, _, path = trained
    back = dtsgd_viz.load_recording(path)
    assert list(reference.check_recording(back)["w"]) == []
    assert list(reference.check_recording(r)["w"]) == []
    path_values = back.path("w")
    assert path_values.shape == (STEPS + 1, 4, 8) and path_values.dtype == r.path("w").dtype


@pytest.mark.slow
def test_loaded_half_precision_recordings_draw(trained):
    dtype, _, _, _, path = trained
    back = dtsgd_viz.load_recording(path)
    view = draw_shards(back, "w", "velocity", step=3)  # update 3
    heat = np.asarray(view.heatmap.get_array(), np.float64)
    np.testing.assert_array_equal(heat, back.global_values("w", "velocity")[2].astype(np.float64))
    norms = back.shard_stats("w", "velocity")[..., 0]
    firsts = [d[0] for d in back.geometry("w").replica_groups]
    np.testing.assert_allclose(np.array([ln.get_ydata() for ln in view.norm.lines]).T, norms[:, firsts])


@pytest.mark.slow
def test_file_version_is_the_lowest_that_holds_the_data(trained):
    """float16/32/64 files stay version 1 (older dtsgd_viz reads them); bfloat16 arrays
    are stored as uint16 bit patterns in a version 2 file, which older versions refuse
    instead of reading the bits as integers."""
    dtype, _, _, _, path = trained
    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(f["meta"].tobytes())
        stored = f["v0.velocity"].dtype
    assert meta["variables"][0]["dtype"] == dtype
    if dtype == "bfloat16":
        assert meta["version"] == 2 and stored == np.uint16
    else:
        assert meta["version"] == 1 and stored == np.dtype(dtype)


@pytest.mark.slow
def test_version_1_bfloat16_file_from_before_the_fix_still_loads(runs, tmp_path):
    """Version 1 wrote bfloat16 arrays as they came (numpy stores them as raw ``|V2``
    bytes): they load as bfloat16, bit for bit."""
    _, r, _, _, path = runs("bfloat16")
    import ml_dtypes

    arrays = dict(np.load(path, allow_pickle=False))
    meta = json.loads(arrays["meta"].tobytes())
    meta["version"] = 1
    del meta["crc32"], meta["header_crc32"]  # version 1 files predate checksums
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    for key in [k for k in arrays if k.startswith("v0.") and not k.endswith(".stats")]:
        arrays[key] = arrays[key].view(ml_dtypes.bfloat16)  # what version 1 handed to savez
    old = tmp_path / "v1.npz"
    np.savez(old, **arrays)
    with np.load(old, allow_pickle=False) as f:
        assert f["v0.param"].dtype.str == "|V2"
    with pytest.warns(NoChecksumsWarning, match="written before dtsgd_viz kept checksums"):
        back = dtsgd_viz.load_recording(old)
    for kind in KINDS:
        assert _bits(back.global_values("w", kind)) == _bits(r.global_values("w", kind))
    assert _bits(back.initial("w")) == _bits(r.initial("w"))


@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
@pytest.mark.slow
def test_bfloat16_file_loads_without_tensorflow(runs, dtype):
    _, r, _, _, path = runs(dtype)
    code = (
        "import sys, dtsgd_viz\n"
        f"r = dtsgd_viz.load_recording({str(path)!r})\n"
        "v = r.global_values('w', 'velocity')\n"
        "bad = dtsgd_viz.reference.check_recording(r)['w']\n"
        "print(v.dtype.name, v.view('u' + str(v.itemsize)).sum(), len(bad),\n"
        "      'tensorflow' in sys.modules, 'ml_dtypes' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    v = r.global_values("w", "velocity")
    bits = v.view(f"u{v.itemsize}").sum()
    # ml_dtypes (a light TensorFlow dependency) is imported only for bfloat16 files
    assert out.stdout.split() == [dtype, str(bits), "0", "False", str(dtype == "bfloat16")]


@pytest.fixture(scope="module")
def two_float32_updates():
    """Two momentum updates of a float32 variable, recorded once for every ``bad`` dtype
    below (each test makes its own altered copy; the recording itself is not changed)."""
    rec, _, _ = _train("float32", steps=2, config=CONFIGS["momentum"])
    return rec.recording


@pytest.mark.parametrize("bad", ["complex64", "int32", "object"])
def test_a_dtype_the_file_cannot_hold_is_an_error_at_save_time(bad, tmp_path, two_float32_updates):
    r = two_float32_updates
    v = r.record("w")
    wrong = dataclasses.replace(
        v, dtype=bad, initial=v.initial.astype(bad), blocks={k: b.astype(bad) for k, b in v.blocks.items()}
    )
    target = tmp_path / "bad.npz"
    with pytest.raises(
        ValueError,
        match=(
            rf"Cannot save variable 'w': its values are {bad}. A recording file holds "
            r"float16, bfloat16, float32 or float64 \(the dtypes tf-keras trains in\)"
        ),
    ):
        dataclasses.replace(r, records=(wrong,)).save(target)
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a partial file


@pytest.mark.slow
def test_arrays_that_contradict_the_variable_dtype_are_refused(tmp_path):
    rec, _, _ = _train("float16", steps=2, config=CONFIGS["momentum"])
    r = rec.recording
    v = r.record("w")
    upcast = dataclasses.replace(v, blocks={**v.blocks, "grad": v.blocks["grad"].astype(np.float32)})
    with pytest.raises(
        ValueError,
        match=(
            r"Cannot save variable 'w': its dtype is float16 but its 'grad' values are "
            r"float32"
        ),
    ):
        dataclasses.replace(r, records=(upcast,)).save(tmp_path / "bad.npz")
    # and a file whose header and arrays disagree is refused on load
    path = r.save(tmp_path / "ok.npz")
    arrays = dict(np.load(path, allow_pickle=False))
    for dtype_name, array_key, array in (
        ("int8", None, None),
        ("float16", "v0.grad", arrays["v0.grad"].astype(np.float32)),
    ):
        tampered = dict(arrays)
        meta = json.loads(tampered["meta"].tobytes())
        meta["variables"][0]["dtype"] = dtype_name
        del meta["crc32"]  # a writer without checksums (they would find the changed member)
        tampered["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
        if array_key:
            tampered[array_key] = array
        np.savez(tmp_path / "tampered.npz", **tampered)
        with (
            pytest.raises(
                RecordingFileError,
                match=(
                    r"variable 'w' has dtype 'int8'|the 'grad' values of variable 'w' are stored as "
                    r"float32 but the variable's dtype is float16"
                ),
            ),
            warnings.catch_warnings(record=True) as seen,
        ):
            warnings.simplefilter("always")
            dtsgd_viz.load_recording(tmp_path / "tampered.npz")
        # a file without checksums says so before it is refused
        assert all("written before dtsgd_viz kept checksums" in str(w.message) for w in seen)


# ---- item 5: empty recordings -------------------------------------------------------------


@pytest.mark.parametrize("mode", ["full", "stats"])
@pytest.mark.parametrize("how", ["graph", "eager"])
@pytest.mark.slow
def test_a_recorder_that_recorded_nothing_gives_a_valid_empty_recording(mode, how, tmp_path):
    """every=100 over 50 updates records none of them: a valid, empty Recording."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"), seed=5)
    rec = dtsgd_viz.Recorder(every=100, mode=mode)
    opt = make_sgd(CONFIGS["momentum"], mesh, hooks=[rec])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        if how == "graph":
            step = problem.graph_step(opt)
            for _ in rec.loop(50):
                step()
        else:
            for _ in range(5):
                opt.minimize(problem.loss, [problem.var])
        r = rec.recording
    assert int(_dtensor.unpack(opt.iterations)[0]) == (50 if how == "graph" else 5)
    assert len(r) == 0 and r.steps.shape == (0,)
    assert "0 updates (no steps)" in repr(r)
    np.testing.assert_array_equal(r.initial("w"), problem.w0)
    assert r.loss is None and len(r.nonfinite_steps) == 0 and len(r.dropped_steps) == 0
    for kind in KINDS:
        assert r.shard_stats("w", kind).shape == (0, 8, 3)
        if mode == "full":
            assert r.global_values("w", kind).shape == (0, 4, 8)
            assert r.global_values("w", kind).dtype == np.float32
            assert r.shard_values("w", kind).shape == (0, 8, 2, 2)
    if mode == "full":
        assert r.path("w").shape == (1, 4, 8)
        assert {k: list(v) for k, v in reference.check_recording(r).items()} == {"w": []}
    back = dtsgd_viz.load_recording(r.save(tmp_path / "empty.npz"))
    assert len(back) == 0 and back.mode == mode and back.kinds == r.kinds
    np.testing.assert_array_equal(back.initial("w"), problem.w0)
    for kind in KINDS:
        assert back.shard_stats("w", kind).shape == (0, 8, 3)
        if mode == "full":
            assert back.global_values("w", kind).shape == (0, 4, 8)


@pytest.fixture(scope="module")
def empty_recordings():
    """Real runs with every=10 over 5 updates: nothing recorded."""
    s = surfaces.RotatedQuadratic()
    recs = dtsgd_viz.run(s, {"momentum": CONFIGS["momentum"]}, steps=5, every=10)
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"))
    rec = dtsgd_viz.Recorder(every=10)
    opt = make_sgd(CONFIGS["momentum"], mesh, hooks=[rec])
    for _ in range(5):
        opt.minimize(problem.loss, [problem.var])
    return s, recs, rec.recording


def _says_nothing_was_recorded(message, name):
    assert name in message
    assert "nothing was recorded" in message and "nothing to draw" in message
    assert "every=k" in message  # why: k larger than the run ...
    assert "traced" in message  # ... or attached after the step function was traced


@pytest.mark.slow
def test_views_say_an_empty_recording_has_nothing_to_draw(empty_recordings):
    from dtsgd_viz.widgets import PathExplorer, ShardExplorer

    s, recs, sharded = empty_recordings
    assert len(recs["momentum"]) == 0 and len(sharded) == 0
    for draw in (lambda: dtsgd_viz.plot_shards(sharded, "w"), lambda: ShardExplorer(sharded)):
        with pytest.raises(ValueError) as err:
            draw()
        _says_nothing_was_recorded(str(err.value), "<Recording 0 updates (no steps)")
    for draw in (
        lambda: dtsgd_viz.plot_paths(recs, s),
        lambda: dtsgd_viz.animate(recs, s),
        lambda: PathExplorer(recs, s),
    ):
        with pytest.raises(ValueError) as err:
            draw()
        _says_nothing_was_recorded(str(err.value), "Recording 'momentum'")


@pytest.mark.slow
def test_layout_of_an_empty_recording_still_draws(empty_recordings):
    """The layout needs no steps: it is drawn as for any recording."""
    _, _, sharded = empty_recordings
    fig = dtsgd_viz.plot_layout(sharded, name="w")
    assert "w" in dtsgd_viz.layout_table(sharded, name="w")
    assert fig.axes


# ---- item 5: a recorder attached after the step function was traced ------------------------


@pytest.mark.slow
def test_recorder_attached_after_tracing_warns_to_retrace():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"), seed=9)
    opt = make_sgd(CONFIGS["momentum"], mesh)
    old_step = problem.graph_step(opt)
    old_step(), old_step()  # traced (and the optimizer built) without the recorder
    rec = opt.add_hook(dtsgd_viz.Recorder())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in rec.loop(5):
            old_step()  # the traced function never calls the recorder
        r = rec.recording
    messages = [str(w.message) for w in caught]
    assert not any("overwritten" in m for m in messages)
    assert len(messages) == 1, messages
    assert caught[0].category is RuntimeWarning
    assert "5 update(s) (iterations 3..7)" in messages[0]
    assert "tf.function) was traced before the Recorder was attached" in messages[0]
    assert "re-trace" in messages[0]
    assert len(r) == 0 and len(r.dropped_steps) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once, not on every read
        _ = rec.recording

    # a new tf.function is traced with the recorder: it records from there on, and the
    # updates the old function made are not reported as overwritten
    new_step = problem.graph_step(opt)
    for _ in range(2):
        old_step()  # still the old function: iterations 8, 9
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in rec.loop(3):
            new_step()  # iterations 10..12, traced on the first call
        r = rec.recording
    assert [str(w.message) for w in caught] == []  # already warned once
    assert list(r.steps) == [10, 11, 12] and len(r.dropped_steps) == 0
    # the recording starts from the parameter before its first update (after step 9)
    assert r.path("w").shape == (4, 4, 8)
    live = np.stack(_dtensor.unpack(problem.var))
    np.testing.assert_array_equal(r.shard_values("w", "param")[-1], live)
    g = r.global_values("w", "grad")
    np.testing.assert_allclose(g[0], problem.numpy_grad(r.initial("w")), rtol=1e-6)
    assert list(reference.check_recording(r)["w"]) == []


@pytest.mark.slow
def test_retraced_after_untraced_updates_warns_instead_of_overwritten():
    """The untraced updates are found when the new function is traced: one warning that
    names them and says to re-trace (here the user already did), never 'overwritten'."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"), seed=11)
    opt = make_sgd(CONFIGS["nesterov"], mesh)
    old_step = problem.graph_step(opt)
    old_step()
    rec = opt.add_hook(dtsgd_viz.Recorder(buffer_steps=2))
    for _ in range(4):
        old_step()  # iterations 2..5, unseen
    new_step = problem.graph_step(opt)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in rec.loop(3):
            new_step()  # iterations 6..8
        r = rec.recording
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "4 update(s) (iterations 2..5)" in messages[0], messages
    assert list(r.steps) == [6, 7, 8] and len(r.dropped_steps) == 0
    np.testing.assert_allclose(r.global_values("w", "grad")[0], problem.numpy_grad(r.initial("w")), rtol=1e-6)
