"""Recording under mixed_float16's dynamic loss scale (issue 30 item 3), with the real
optimizer on a {"batch": 2, "model": 4} mesh: a Recorder under MeshLossScaleOptimizer
records every applied update under its iteration and lists the skipped ones, with the
loss scale each used, in recording.skipped_steps / skipped_loss_scale; nothing lands in
dropped_steps. The truth they are checked against is read outside the recorder, update by
update: whether the weights moved, and the optimizer's own loss scale before and after,
which must follow tf-keras' documented rule computed here in numpy. A dynamic loss scale
that is not dtsgd_viz's is refused, whichever of it and the optimizer is built first."""

import dataclasses
import warnings

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from helpers import parts as _parts
from helpers import synthetic_store
from helpers.builders import overflow_data, overflow_model

import dtsgd_viz
from dtsgd_viz.recording import RecordingFileError
from dtsgd_viz.recording.store import StoreWriter, store_status
from dtsgd_viz.theory import reference

GROWTH_STEPS, UPDATES, INITIAL_SCALE = 6, 20, 2.0**15


@pytest.fixture
def mesh():
    return dtsgd_viz.make_mesh({"batch": 2, "model": 4})


def _master(w):
    """The float32 variable under a mixed precision wrapper (or the variable itself)."""
    return getattr(w, "_variable", w)


@dataclasses.dataclass
class _Update:
    scale_before: float
    scale_after: float
    counter_after: int  # the optimizer's count of good updates in a row
    counted_skip: bool  # the optimizer's skipped_steps moved by 1
    moved: bool  # some weight changed


class _UpdateLog:
    """Each update as seen from outside the recorder: the optimizer's loss scale and
    skipped-update count before and after it, and whether any weight changed."""

    def __init__(self, model, opt):
        self.model, self.opt, self.rows = model, opt, []

    def _read(self):
        return (
            float(self.opt.loss_scale.numpy()),
            int(self.opt.skipped_steps.numpy()),
            [dtsgd_viz.to_numpy(_master(w)) for w in self.model.weights],
        )

    def before(self, *_):
        self._before = self._read()

    def after(self, *_):
        (s0, k0, p0), (s1, k1, p1) = self._before, self._read()
        moved = not all(np.array_equal(a, b) for a, b in zip(p0, p1))
        counter = int(self.opt.dynamic_counter.numpy())
        self.rows.append(_Update(s0, s1, counter, k1 - k0 == 1, moved))


def _documented_scales(skipped, initial=INITIAL_SCALE, growth_steps=GROWTH_STEPS):
    """tf-keras' rule: a non-finite update halves the scale (never below 1) and resets the
    count; ``growth_steps`` finite updates in a row double it."""
    scale, good, scales = initial, 0, [initial]
    for skip in skipped:
        if skip:
            scale, good = max(scale / 2, 1.0), 0
        else:
            good += 1
            if good == growth_steps:
                scale, good = scale * 2, 0
        scales.append(scale)
    return scales


def _step_function(model, opt):
    variables = model.trainable_variables

    def step(x, y):
        with tf.GradientTape() as tape:
            scaled = opt.get_scaled_loss(tf.reduce_mean(tf.square(model(x, training=True) - y)))
        opt.apply_gradients(zip(opt.get_unscaled_gradients(tape.gradient(scaled, variables)), variables))

    return step


def _train(mesh, rec, how, order):
    """``UPDATES`` updates of the overflow model under MeshLossScaleOptimizer(SGD(hooks=
    [rec])), in a traced loop, an eager one or ``model.fit``; ``order="built_first"``
    builds the SGD before wrapping it (as when a checkpoint is restored before
    ``model.compile``). Returns the model, the SGD, its wrapper and the log's rows."""
    model = overflow_model(mesh)
    sgd = dtsgd_viz.SGD(0.001, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)
    if order == "built_first":
        sgd.build(model.trainable_variables)
    opt = dtsgd_viz.MeshLossScaleOptimizer(sgd, dynamic_growth_steps=GROWTH_STEPS)
    log = _UpdateLog(model, opt)
    if how == "fit":
        model.compile(optimizer=opt, loss="mse")
        assert model.optimizer is opt
        watch = tf_keras.callbacks.LambdaCallback(on_train_batch_begin=log.before, on_train_batch_end=log.after)
        model.fit(
            overflow_data(mesh), epochs=1, steps_per_epoch=UPDATES, verbose=0, callbacks=[rec.keras_callback(), watch]
        )
        return model, sgd, opt, log.rows
    step = _step_function(model, opt)
    step = step if how == "eager" else tf.function(step)
    batches = iter(overflow_data(mesh))
    for _ in rec.loop(UPDATES):
        log.before()
        step(*next(batches))
        log.after()
    return model, sgd, opt, log.rows


def _expected(rows):
    """From the log of a run from its start: the applied updates, the skipped ones (the
    first update is 1) and the loss scale each skipped one used, once the optimizer's
    scale is seen to follow tf-keras' documented rule."""
    skipped = [not r.moved for r in rows]
    assert [r.counted_skip for r in rows] == skipped  # the optimizer counts what did not move
    scales = [rows[0].scale_before] + [r.scale_after for r in rows]
    assert all(r.scale_before == s for r, s in zip(rows, scales))
    assert scales == _documented_scales(skipped), scales
    return (
        [i + 1 for i, s in enumerate(skipped) if not s],
        [i + 1 for i, s in enumerate(skipped) if s],
        [r.scale_before for r in rows if not r.moved],
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "how, order",
    [("loop", "wrapped_first"), ("loop", "built_first"), ("fit", "built_first"), ("eager", "wrapped_first")],
)
def test_a_recorder_under_the_mesh_loss_scale_records_every_applied_update(mesh, how, order):
    rec = dtsgd_viz.Recorder()
    with warnings.catch_warnings():
        # no "overwritten on the devices" (nor any other warning of the recorder)
        warnings.simplefilter("error", RuntimeWarning)
        model, sgd, opt, rows = _train(mesh, rec, how, order)
        r = rec.recording
    applied, skipped, scales = _expected(rows)
    print(how, order, "skipped", skipped, "at", scales)
    # the first 8 updates overflow (2**15 down to 2**7), and one more after the first growth
    assert skipped[:8] == list(range(1, 9)) and len(skipped) > 8, skipped
    assert int(sgd.iterations.numpy()) == UPDATES  # tf-keras counts a skipped update
    assert list(r.steps) == applied
    assert r.skipped_steps.dtype == np.int64 and list(r.skipped_steps) == skipped
    assert r.skipped_loss_scale.dtype == np.float64 and list(r.skipped_loss_scale) == scales
    assert len(r.dropped_steps) == 0 and len(r.nonfinite_steps) == 0
    # the applied updates follow the numpy rule, each after a skip too (from the state
    # before the skip; the first one from the initial weights and zero velocities)
    check = reference.check_recording(r)
    assert all(len(s) == 0 for s in check.values()), check
    after_skip = [i for i, s in enumerate(r.steps) if s - 1 in skipped]
    assert 0 in after_skip and len(after_skip) >= 2
    for name in r.variables:
        assert np.all(np.isfinite(check.deviation[name][after_skip])), name
    for w in model.weights:
        name = w.name.removesuffix(":0")
        np.testing.assert_array_equal(r.global_values(name, "param")[-1], dtsgd_viz.to_numpy(_master(w)))
        np.testing.assert_array_equal(
            r.global_values(name, "velocity")[-1], dtsgd_viz.to_numpy(sgd.velocity(_master(w)))
        )


@pytest.mark.slow
@pytest.mark.parametrize("mode, every", [("full", 2), ("stats", 1)])
def test_thinned_and_stats_recordings_list_the_skips_among_their_steps(mesh, mode, every):
    rec = dtsgd_viz.Recorder(mode=mode, every=every)
    model = overflow_model(mesh)
    sgd = dtsgd_viz.SGD(0.001, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)
    opt = dtsgd_viz.MeshLossScaleOptimizer(sgd, dynamic_growth_steps=GROWTH_STEPS)
    log, step, batches = _UpdateLog(model, opt), _step_function(model, opt), iter(overflow_data(mesh))
    # every=2: the split step runs the updates it does not record traced without hooks
    step = rec.step_function(tf.function(step)) if every > 1 else tf.function(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in rec.loop(UPDATES):
            log.before()
            step(*next(batches))
            log.after()
        r = rec.recording
    if every > 1:
        assert step.calls["off"] > 0 and sum(step.calls.values()) == UPDATES
    applied, skipped, scales = _expected(log.rows)
    recorded = [s for s in applied if s % every == 0]
    assert list(r.steps) == recorded and len(r.dropped_steps) == 0
    assert list(r.skipped_steps) == [s for s in skipped if s % every == 0]
    assert list(r.skipped_loss_scale) == [c for s, c in zip(skipped, scales) if s % every == 0]
    assert len(r.skipped_steps) >= 2


@pytest.mark.slow
def test_a_resumed_run_lists_the_same_skips(mesh, tmp_path):
    """A run streams 20 updates to a store with a checkpoint after update 12; a second run
    builds a new model and SGD, restores the checkpoint before wrapping the SGD in a new
    MeshLossScaleOptimizer (the loss scale's state comes back from the checkpoint) and
    resumes the store to update 20: the store lists the skips of the first run once, and
    holds its updates bit for bit."""
    store, ckpt = tmp_path / "run.zarr", str(tmp_path / "ckpt")
    model = overflow_model(mesh)
    rec = dtsgd_viz.Recorder(path=store)
    sgd = dtsgd_viz.SGD(0.001, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)
    opt = dtsgd_viz.MeshLossScaleOptimizer(sgd, dynamic_growth_steps=GROWTH_STEPS)
    log, step = _UpdateLog(model, opt), tf.function(_step_function(model, opt))
    checkpoint = tf.train.Checkpoint(model=model, optimizer=opt)
    batches = iter(overflow_data(mesh))
    for i in rec.loop(UPDATES):
        log.before()
        step(*next(batches))
        log.after()
        if i == 11:
            checkpoint.write(ckpt)  # after update 12
    rec.close()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        straight = dtsgd_viz.load_recording(store)
    applied, skipped, scales = _expected(log.rows)
    assert list(straight.steps) == applied and list(straight.skipped_steps) == skipped
    assert list(straight.skipped_loss_scale) == scales
    late = [s for s in skipped if s > 12]
    assert late, skipped  # the resumed run has a skip of its own to make
    assert store_status(store)[0].n_skipped == len(skipped)

    model2 = overflow_model(mesh)
    rec2 = dtsgd_viz.Recorder(path=store, resume=True)
    sgd2 = dtsgd_viz.SGD(0.001, momentum=0.9, mesh=mesh, hooks=[rec2], exact_update=True)
    sgd2.build(model2.trainable_variables)
    status = tf.train.Checkpoint(model=model2, optimizer=sgd2).read(ckpt)
    opt2 = dtsgd_viz.MeshLossScaleOptimizer(sgd2, dynamic_growth_steps=GROWTH_STEPS)
    status.assert_consumed()  # the loss scale's two variables too, once they exist
    assert float(opt2.loss_scale.numpy()) == log.rows[11].scale_after != INITIAL_SCALE
    assert int(opt2.dynamic_counter.numpy()) == log.rows[11].counter_after
    log2, step2 = _UpdateLog(model2, opt2), tf.function(_step_function(model2, opt2))
    batches = iter(overflow_data(mesh))
    for _ in range(12):
        next(batches)
    for _ in rec2.loop(UPDATES - 12):
        log2.before()
        step2(*next(batches))
        log2.after()
    rec2.close()
    assert [dataclasses.astuple(r) for r in log2.rows] == [dataclasses.astuple(r) for r in log.rows[12:]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        resumed = dtsgd_viz.load_recording(store)
    assert list(resumed.steps) == applied
    assert list(resumed.skipped_steps) == skipped  # each once: those after 12 made again
    assert list(resumed.skipped_loss_scale) == scales
    assert list(resumed.superseded_steps) == [s for s in applied if s > 12]
    for a, b in zip(straight.records, resumed.records):
        for kind in straight.kinds:
            assert a.blocks[kind].tobytes() == b.blocks[kind].tobytes(), (a.name, kind)
    assert all(len(s) == 0 for s in reference.check_recording(resumed).values())


# ---- a dynamic loss scale that does not report its skips: refused -------------------------


class _DeafHook:
    """A hook with the three methods of the protocol, and no skipped_update."""

    def on_build(self, optimizer, variables):
        pass

    def before_update(self, optimizer, variables, params):
        pass

    def after_update(self, event):
        pass


FOREIGN = (
    r"wrapped in LossScaleOptimizerV3, a dynamic loss scale that is not "
    r"dtsgd_viz's.*never runs.*MeshLossScaleOptimizer\(opt\).*dynamic=False"
)


@pytest.mark.slow
def test_a_foreign_dynamic_loss_scale_is_refused_whichever_is_built_first(mesh):
    model = overflow_model(mesh)
    variables = model.trainable_variables
    # built first, wrapped afterwards (as when a checkpoint is restored before compile)
    built = dtsgd_viz.SGD(0.001, mesh=mesh, hooks=[dtsgd_viz.Recorder()])
    built.build(variables)
    with pytest.raises(ValueError, match=FOREIGN):
        tf_keras.mixed_precision.LossScaleOptimizer(built)
    # model.compile wraps it in the same one under mixed_float16
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        compiled = tf_keras.Sequential([tf_keras.layers.Dense(1, input_shape=(4,))])
        with pytest.raises(ValueError, match=FOREIGN):
            compiled.compile(optimizer=built, loss="mse")
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")
    # the refusal left no mark: the loss scale that reports its skips can wrap it
    assert dtsgd_viz.MeshLossScaleOptimizer(built).inner_optimizer is built
    # wrapped first: a hook added afterwards is refused too
    bare = dtsgd_viz.SGD(0.001, mesh=mesh)
    tf_keras.mixed_precision.LossScaleOptimizer(bare)
    with pytest.raises(ValueError, match=FOREIGN):
        bare.add_hook(dtsgd_viz.Recorder())
    assert bare.hooks == ()
    # a fixed scale skips nothing: a recorder may watch it, in either order
    fixed = dtsgd_viz.SGD(0.001, mesh=mesh, hooks=[dtsgd_viz.Recorder()])
    fixed.build(variables)
    tf_keras.mixed_precision.LossScaleOptimizer(fixed, dynamic=False, initial_scale=8)
    fixed.add_hook(dtsgd_viz.Recorder())


def test_a_hook_without_skipped_update_is_refused_under_the_mesh_loss_scale(mesh):
    deaf = dtsgd_viz.SGD(0.001, mesh=mesh, hooks=[_DeafHook()])
    with pytest.raises(
        ValueError,
        match=r"MeshLossScaleOptimizer with a dynamic loss scale.*"
        r"skipped_update\(optimizer, iteration, loss_scale\).*"
        r"_DeafHook have none",
    ):
        dtsgd_viz.MeshLossScaleOptimizer(deaf)
    opt = dtsgd_viz.MeshLossScaleOptimizer(dtsgd_viz.SGD(0.001, mesh=mesh))
    with pytest.raises(ValueError, match="_DeafHook have none"):
        opt.inner_optimizer.add_hook(_DeafHook())
    opt.inner_optimizer.add_hook(dtsgd_viz.Recorder())  # it has one
    dtsgd_viz.MeshLossScaleOptimizer(
        dtsgd_viz.SGD(0.001, mesh=mesh, hooks=[_DeafHook()]), dynamic=False, initial_scale=8
    )  # skips nothing


# ---- the plain data: files, parts, stores ---------------------------------------------


def _with_skips(r, steps, scales):
    return dataclasses.replace(
        r, skipped_steps=np.asarray(steps, np.int64), skipped_loss_scale=np.asarray(scales, np.float64)
    )


def test_skipped_updates_are_saved_loaded_and_merged(tmp_path):
    whole = _parts.whole_recording(2, 16, 6, "both")
    r = _with_skips(whole, [2, 5], [1024.0, 512.0])
    loaded = dtsgd_viz.load_recording(r.save(tmp_path / "r.npz"))
    assert loaded.skipped_steps.dtype == np.int64 and list(loaded.skipped_steps) == [2, 5]
    assert list(loaded.skipped_loss_scale) == [1024.0, 512.0]
    # a file from before skipped updates were recorded: none
    assert len(dtsgd_viz.load_recording(whole.save(tmp_path / "w.npz")).skipped_steps) == 0
    parts = [_with_skips(p, [2, 5], [1024.0, 512.0]) for p in _parts.split(whole, 2)]
    merged = dtsgd_viz.merge_recordings(parts)
    assert list(merged.skipped_steps) == [2, 5] and list(merged.skipped_loss_scale) == [1024.0, 512.0]
    bad = _with_skips(whole, [2, 5], [1024.0])
    with pytest.raises(
        RecordingFileError,
        match=r"skipped_steps \(2,\) and skipped_loss_scale "
        r"\(1,\) must be 1-D and of one length",
    ):
        dtsgd_viz.load_recording(bad.save(tmp_path / "bad.npz"))


def test_a_store_keeps_the_skips_and_a_resume_forgets_those_after_its_iteration(tmp_path):
    store = tmp_path / "run.zarr"
    writer = StoreWriter(store, synthetic_store.header())
    writer.append(synthetic_store.entries([1, 3, 4]), skipped=[(2, 2048.0)])
    writer.append(synthetic_store.entries([5, 7, 8]), skipped=[(6, 1024.0), (9, 512.0)])
    writer.close()
    r = dtsgd_viz.load_recording(store)
    assert list(r.steps) == [1, 3, 4, 5, 7, 8] and list(r.skipped_steps) == [2, 6, 9]
    assert list(r.skipped_loss_scale) == [2048.0, 1024.0, 512.0]
    # resumed from a checkpoint after update 6: 7..9 run again, the skip at 9 with them
    resumed = StoreWriter(store, synthetic_store.header(), resume_from=6)
    resumed.append(synthetic_store.entries([7, 8, 9]))
    resumed.close()
    r = dtsgd_viz.load_recording(store)
    assert list(r.steps) == [1, 3, 4, 5, 7, 8, 9] and list(r.superseded_steps) == [7, 8]
    assert list(r.skipped_steps) == [2, 6] and list(r.skipped_loss_scale) == [2048.0, 1024.0]
