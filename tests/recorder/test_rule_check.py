"""The rule check judges each update against its own size: float rounding never trips
it, a 1% deviation always does; the hyperparameters are those tf-keras applied, so real
recordings in every training dtype follow the rule exactly, not by tolerance."""

import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz.theory import reference


def _record(dtype, nesterov, steps=10, start=None, lr=0.1, scale=1.0, mesh_dims=None):
    mesh = dtsgd_viz.make_mesh(mesh_dims or {"batch": 2, "model": 4})
    lay = dtensor.Layout(["batch", "model"], mesh)
    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(4, 8)) if start is None else start
    c = rng.uniform(0.2, 1.5, size=(4, 8)) * scale

    def put(a):
        return dtensor.relayout(
            dtensor.copy_to_mesh(tf.cast(tf.constant(a), dtype), dtensor.Layout.replicated(mesh, 2)), lay
        )

    w = dtensor.DVariable(put(w0), name="w")
    C = put(c)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(lr, momentum=0.9, nesterov=nesterov, mesh=mesh, hooks=[rec], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(C * (w - 1.0) ** 2 / 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]), loss=loss)

    for _ in rec.loop(steps):
        step()
    return rec.recording


@pytest.mark.parametrize("nesterov", [False, True], ids=["momentum", "nesterov"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
@pytest.mark.slow
def test_every_training_dtype_follows_the_rule_exactly(dtype, nesterov, tmp_path):
    r = _record(dtype, nesterov)
    assert r.global_values("w", "param").dtype.name == dtype
    # what tf-keras multiplies by: tf.cast of the Python float goes through float32
    assert r.hyperparameters.momentum == 0.9
    assert r.hyperparameters.applied_momentum == float(np.float32(0.9)) != 0.9
    check = reference.check_recording(r)
    assert list(check["w"]) == []
    np.testing.assert_array_equal(check.deviation["w"], 0)  # exact, not within a tolerance
    back = dtsgd_viz.load_recording(r.save(tmp_path / "r.npz"))
    assert back.hyperparameters.applied_momentum == r.hyperparameters.applied_momentum
    np.testing.assert_array_equal(reference.check_recording(back).deviation["w"], 0)


@pytest.mark.slow
def test_the_old_rule_check_let_float64_pass_only_by_tolerance():
    """With 0.9 taken as given, a float64 recording is off by ~1e-8 (what the old check's
    atol hid); with the momentum as applied it is exact."""
    r = _record("float64", False)
    p, v, g = (r.global_values("w", k) for k in ("param", "velocity", "grad"))
    p_prev = np.concatenate([r.initial("w")[None], p[:-1]])
    v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
    lr = r.hyperparameters.learning_rate
    given = [reference.sgd_step(p_prev[i], g[i], v_prev[i], lr[i], 0.9)[0] for i in range(len(p))]
    applied = [
        reference.sgd_step(p_prev[i], g[i], v_prev[i], lr[i], r.hyperparameters.applied_momentum)[0]
        for i in range(len(p))
    ]
    assert np.abs(np.array(given) - p).max() > 1e-12
    np.testing.assert_array_equal(np.array(applied), p)


def _tampered(r, step, fraction, kind="param"):
    """The recording with update ``step`` moved off the rule by ``fraction`` of its size
    (the next update, which starts from there, is then off too)."""
    blocks = r.record("w").blocks[kind]
    p = r.global_values("w", "param")
    p_prev = np.concatenate([r.initial("w")[None], p[:-1]])
    size = (p - p_prev)[step - 1]
    direction = np.random.default_rng(step).normal(size=size.shape)
    direction *= np.linalg.norm(size.astype(np.float64)) / np.linalg.norm(direction)
    geom = r.geometry("w")
    blocks[step - 1] = geom.split((p[step - 1].astype(np.float64) + fraction * direction).astype(blocks.dtype))
    return r


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.slow
def test_a_one_percent_deviation_always_trips_float_rounding_never(dtype):
    # a LayerNorm gamma: values near 1.0, updates of ~1e-4 (the case the old check missed)
    start = 1.0 + 0.05 * np.random.default_rng(1).normal(size=(4, 8))
    r = _record(dtype, True, start=start, lr=0.001, steps=12)
    p = r.global_values("w", "param").astype(np.float64)
    sizes = np.abs(p - np.concatenate([r.initial("w")[None], p[:-1]])).mean(axis=(1, 2))
    assert np.all(sizes < 3e-4) and np.all(sizes > 3e-5)  # tiny updates of values near 1.0
    assert list(reference.check_recording(r)["w"]) == []
    # one unit in the last place on every element of an update: rounding, never flagged
    blocks = r.record("w").blocks["param"]
    blocks[4] = np.nextafter(blocks[4], np.inf)
    assert list(reference.check_recording(r)["w"]) == []
    # 1% of the update's size: flagged, with how far it is
    check = reference.check_recording(_tampered(r, 8, 0.01))
    assert list(check["w"]) == [8, 9]
    assert 0.005 < check.deviation["w"][7] < 0.02
    assert "w: 2 update(s) off the rule (updates 8-9)" in str(check)


@pytest.mark.slow
def test_a_velocity_off_the_rule_is_flagged():
    r = _record("float32", False)
    check = reference.check_recording(_tampered(r, 3, 0.02, kind="velocity"))
    assert 3 in check["w"]


@pytest.mark.slow
def test_exact_runs_of_every_rule_raise_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for nesterov in (False, True):
            _record("float32", nesterov, steps=40)
            _record("float16", nesterov, steps=20)


@pytest.mark.slow
def test_a_diverging_run_names_the_updates_it_could_not_check():
    """lr 3 on curvatures up to 3 (momentum 0.9, the real optimizer): the run diverges,
    its values overflow to Inf, then NaN. No deviation can be measured on those updates:
    the check names them and never says that every update follows the rule."""
    r = _record("float32", False, steps=120, lr=3.0, scale=2.0)
    steps = np.asarray(r.steps)
    # the truth, from the recorded arrays: an update is non-finite when its gradient, its
    # result or the state it started from holds a NaN or an Inf
    p, v, g = (r.global_values("w", k).reshape(len(steps), -1) for k in ("param", "velocity", "grad"))
    p_prev = np.concatenate([r.initial("w").reshape(1, -1), p[:-1]])
    v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
    finite = np.all([np.isfinite(x).all(axis=1) for x in (p, v, g, p_prev, v_prev)], axis=0)
    bad = steps[~finite]
    assert 10 < bad[0] < 100 and list(bad) == list(range(bad[0], 121))  # diverged for good
    assert np.isnan(p[-1]).any() and np.isinf(p[~finite]).any()
    check = reference.check_recording(r)
    np.testing.assert_array_equal(check.nonfinite["w"], bad)
    np.testing.assert_array_equal(check.unchecked["w"][reference.NONFINITE], bad)
    assert list(check["w"]) == []  # the finite updates follow it
    assert np.isnan(check.deviation["w"][~finite]).all()
    assert not np.isnan(check.deviation["w"][finite]).any()  # and every one was checked
    text = str(check)
    assert "every update follows" not in text
    assert f"w: {len(bad)} update(s) not checked, non-finite (updates {bad[0]}-120)" in text.splitlines()


@pytest.mark.slow
def test_check_recording_rejects_bad_rtol():
    r = _record("float32", False, steps=2)
    with pytest.raises(ValueError, match="rtol must be a number >= 0. Received: rtol=-1"):
        reference.check_recording(r, rtol=-1)


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "tf.function"])
@pytest.mark.slow
def test_weight_decay_is_recorded_as_the_devices_hold_it_and_follows_the_rule(graph):
    """tf-keras decays the weights (p -= p * wd * lr) before each update, inside
    apply_gradients: a recorder reading the previous update's results after that decay
    would record decayed values (it did, inside tf.function)."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    lay = dtensor.Layout(["unsharded", "model"], mesh)
    w = dtsgd_viz.variable(np.linspace(-1, 1, 32, dtype=np.float32).reshape(4, 8), lay, name="w")
    C = dtsgd_viz.shard(np.linspace(0.1, 1, 32, dtype=np.float32).reshape(4, 8), lay)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True, weight_decay=0.5)

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(C * w**2 / 2)
        grads = tape.gradient(loss, [w], output_gradients=tf.ones_like(loss))
        opt.apply_gradients(zip(grads, [w]), loss=loss)

    fn = tf.function(step) if graph else step
    truth = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # decay is part of the rule: no warning
        for _ in rec.loop(5):
            fn()
            truth.append(dtsgd_viz.to_numpy(w))
        r = rec.recording
    np.testing.assert_array_equal(r.global_values("w", "param"), np.stack(truth))
    hp = r.hyperparameters
    assert hp.weight_decay == float(np.float32(0.5)) and hp.decayed == ("w",)
    check = reference.check_recording(r)
    assert list(check["w"]) == [] and np.nanmax(check.deviation["w"]) == 0
    p_ref, _ = reference.replay(
        r.initial("w"), r.global_values("w", "grad"), hp.learning_rate, hp.applied_momentum, False, hp.weight_decay
    )
    np.testing.assert_array_equal(p_ref, r.global_values("w", "param"))


@pytest.mark.slow
def test_ema_overwrites_are_not_called_off_the_rule(tmp_path):
    mesh = dtsgd_viz.make_mesh({"x": 8})
    w = dtsgd_viz.variable(np.linspace(-1, 1, 16, dtype=np.float32), dtensor.Layout(["x"], mesh), name="w")
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(
        0.1,
        momentum=0.9,
        mesh=mesh,
        hooks=[rec],
        exact_update=True,
        ema_option={"use_ema": True, "ema_overwrite_frequency": 3},
    )

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w**2)
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]))

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in rec.loop(7):
            step()
        r = rec.recording
    assert r.hyperparameters.ema_overwrite_frequency == 3
    check = reference.check_recording(r)
    assert list(check["w"]) == []
    assert np.isnan(check.deviation["w"][[2, 5]]).all()  # updates 3 and 6: overwrites
    assert "w: 2 update(s) not checked, weights overwritten by their moving average (updates 3, 6)" in str(
        check
    ) and "every update follows" not in str(check)
    back = dtsgd_viz.load_recording(r.save(tmp_path / "ema.npz"))
    assert back.hyperparameters.ema_overwrite_frequency == 3
    assert list(reference.check_recording(back)["w"]) == []


@pytest.mark.parametrize("kind", ["param", "grad"])
@pytest.mark.slow
def test_bfloat16_recordings_draw(kind):
    import matplotlib

    matplotlib.use("Agg")
    from dtsgd_viz.widgets import ShardExplorer

    r = _record("bfloat16", True, steps=4)
    fig = dtsgd_viz.plot_shards(r, "w", kind)
    fig.canvas.draw()
    image = fig.axes[0].images[0].get_array()
    np.testing.assert_array_equal(image, r.global_values("w", kind)[-1].astype(np.float32))
    ShardExplorer(r)
