"""In-graph staging and flushing: both ring kinds, the flush schedule, host views."""

import functools
import warnings

import numpy as np
import pytest
from helpers.builders import Problem, fit_dataset, layout, make_sgd
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.recorder import capture as _capture

MOMENTUM = dict(learning_rate=0.05, momentum=0.9, nesterov=True)


def _setup(shape=(4, 8), **rec_kw):
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem(shape, layout(mesh, "x", "y"), seed=3)
    rec = dtsgd_viz.Recorder(**rec_kw)
    opt = make_sgd(MOMENTUM, mesh, hooks=[rec])
    return problem, rec, opt


@functools.cache
def _eager(steps, **rec_kw):
    """The recording of ``steps`` eager updates (no ring): the truth the traced runs are
    compared with. A recording is plain data, so the runs alike share one."""
    problem, rec, opt = _setup(**rec_kw)
    for _ in range(steps):
        opt.minimize(problem.loss, [problem.var])
    return rec.recording


@pytest.fixture(params=["stacked", "per-slot"])
def ring(request, monkeypatch):
    """Small tensors share one stacked ring variable; large ones get a variable per slot
    behind a tf.cond. The tests' tensors are small, so the per-slot kind is forced."""
    if request.param == "per-slot":
        monkeypatch.setattr(_capture, "SMALL_RING_BYTES", 0)
    return request.param


@pytest.mark.parametrize("every, slots", [(1, 2), (1, 3), (2, 3)])
@pytest.mark.slow
def test_both_ring_kinds_record_what_eager_capture_records(ring, every, slots):
    problem, rec, opt = _setup(every=every, buffer_steps=slots)
    step = problem.graph_step(opt)
    for _ in rec.loop(11):
        step()
    kinds = ("param", "velocity", "grad")
    assert bool(rec._staging.ring.stacked) == (ring == "stacked")
    assert bool(rec._staging.ring.values[0]) == (ring == "per-slot")
    graph, eager = rec.recording, _eager(11, every=every)
    assert list(graph.steps) == list(range(every, 12, every))
    assert len(graph.dropped_steps) == 0
    for kind in kinds:
        np.testing.assert_array_equal(graph.global_values("w", kind), eager.global_values("w", kind))


@pytest.mark.slow
def test_recorded_values_do_not_change_when_training_goes_on(ring):
    """Host copies are views of device buffers until the recording is built: a later
    update or a later write into the same ring slot must not reach them."""
    problem, rec, opt = _setup(buffer_steps=2)
    step = problem.graph_step(opt)
    for _ in rec.loop(3):
        step()
    early = {k: rec.recording.global_values("w", k).copy() for k in ("param", "velocity", "grad")}
    views = [v for _, e in rec._log.entries for parts in e["values"].values() for v in parts]
    assert views and not any(v.flags.writeable for v in views)  # read-only views
    before = [v.copy() for v in views]
    for _ in rec.loop(9):  # every slot is rewritten several times
        step()
    for v, b in zip(views, before):
        np.testing.assert_array_equal(v, b)
    later = rec.recording
    for kind, values in early.items():
        np.testing.assert_array_equal(later.global_values("w", kind)[:3], values)
    assert later.global_values("w", "param").flags.writeable  # the recording owns its data


@pytest.mark.parametrize("slots, every, interval", [(4, 1, 3), (4, 2, 6), (8, 1, 7), (1, 1, 1)])
@pytest.mark.slow
def test_loop_flushes_once_per_ring_and_loses_nothing(slots, every, interval):
    problem, rec, opt = _setup(buffer_steps=slots, every=every)
    step = problem.graph_step(opt)
    calls = []
    flush = rec._flush
    rec._flush = lambda final: calls.append(final) or flush(final)
    for _ in rec.loop(42):
        step()
    assert rec._flush_interval() == interval
    periodic = 42 // interval
    assert calls == [False] * periodic + [True]  # periodic flushes, then the final one
    assert list(rec.recording.steps) == list(range(every, 43, every))
    assert len(rec.recording.dropped_steps) == 0


@pytest.mark.slow
def test_periodic_flush_leaves_the_latest_step_for_the_next_flush():
    problem, rec, opt = _setup(buffer_steps=4)
    step = problem.graph_step(opt)
    for _ in range(3):
        step()
    assert rec._flush(final=False) == 2  # step 3's parameters are staged by update 4
    assert rec._flush(final=False) == 0
    assert rec.flush() == 1  # a final flush reads step 3 from the variables
    eager = _eager(3)
    np.testing.assert_array_equal(rec.recording.global_values("w", "param"), eager.global_values("w", "param"))


def test_a_large_tensor_gets_per_slot_variables_and_a_small_one_a_stacked_ring():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    small = Problem((4, 8), layout(mesh, "x", "y"), seed=1, name="small")
    n = 1024  # (slots + 1) x 4 MiB is over SMALL_RING_BYTES
    big = _dtensor.variable(np.zeros((n, n), np.float32), layout(mesh, "x", "y"), name="big")
    rec = dtsgd_viz.Recorder(kinds=("param",), buffer_steps=2)
    opt = make_sgd(MOMENTUM, mesh, hooks=[rec])
    opt.build([small.var, big])
    rec._make_staging()
    assert list(rec._staging.ring.stacked) == [("small", "param")]
    assert [list(s) for s in rec._staging.ring.values] == [[("big", "param")]] * 2


@pytest.mark.slow
def test_tensors_alike_share_one_stacked_variable_and_record_what_eager_capture_records():
    """The (variable, kind)s of one phase with the same shape, dtype and layout share one
    stacked ring variable (one scatter per step for all of them, and few variables to
    create and compile at the first call); each is still recorded exactly."""
    import tensorflow as tf

    def build():
        mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
        probs = [
            Problem((4, 8), layout(mesh, "x", "y"), seed=1, name="a"),
            Problem((4, 8), layout(mesh, "x", "y"), seed=2, name="b"),
            Problem((4, 8), layout(mesh, "y", "x"), seed=3, name="c"),
        ]
        rec = dtsgd_viz.Recorder(buffer_steps=3)
        opt = make_sgd(MOMENTUM, mesh, hooks=[rec])
        variables = [p.var for p in probs]

        def loss():
            return tf.add_n([p.loss() for p in probs])

        return rec, opt, variables, loss

    rec, opt, variables, loss = build()

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, variables)
        return opt.apply_gradients(zip(grads, variables), loss=value)

    for _ in rec.loop(7):
        step()
    ring = rec._staging.ring
    groups = sorted(sorted(keys) for _, keys in ring.groups)
    assert groups == [
        [("a", "grad"), ("b", "grad")],
        [("a", "param"), ("a", "velocity"), ("b", "param"), ("b", "velocity")],
        [("c", "grad")],
        [("c", "param"), ("c", "velocity")],
    ]
    assert len(ring.variables) == 4
    erec, eopt, evariables, eloss = build()
    for _ in range(7):
        eopt.minimize(eloss, evariables)
    graph, eager = rec.recording, erec.recording
    assert list(graph.steps) == list(range(1, 8)) and len(graph.dropped_steps) == 0
    for name in ("a", "b", "c"):
        for kind in ("param", "velocity", "grad"):
            np.testing.assert_array_equal(graph.global_values(name, kind), eager.global_values(name, kind))


@pytest.mark.parametrize("steps_per_execution", [1, 3])
@pytest.mark.slow
def test_keras_callback_counts_batches_not_calls(steps_per_execution):
    import tensorflow as tf
    from helpers.builders import layoutmap_mlp as _mlp
    from helpers.builders import regression_data as _data

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = _mlp(mesh)
    rec = dtsgd_viz.Recorder(kinds=("param", "velocity"), buffer_steps=4)
    opt = dtsgd_viz.SGD(0.02, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)
    x, y = _data()
    dds = fit_dataset(mesh, x, y)
    model.compile(optimizer=opt, loss="mse", steps_per_execution=steps_per_execution)
    calls = []
    flush = rec._flush
    rec._flush = lambda final, wait=True: calls.append((final, wait)) or flush(final, wait)
    callback, logs_seen = rec.keras_callback(), []
    batch_end = callback.on_train_batch_end
    callback.on_train_batch_end = lambda batch, logs=None: (
        logs_seen.append(type(logs["loss"])) or batch_end(batch, logs)
    )
    model.fit(dds, epochs=2, steps_per_epoch=9, verbose=0, callbacks=[callback])
    # the logs stay tensors: tf-keras does not wait for the devices to convert them for us
    assert logs_seen and all(issubclass(t, tf.Tensor) for t in logs_seen)
    # every 3 batches (a 4-slot ring less the step left for the next flush) without
    # waiting for the devices; waiting at each epoch's end (tf-keras has just waited) and
    # at the start and end of training
    epoch = [(False, False)] * 3 + [(False, True)]
    assert calls == [(True, True)] + epoch * 2 + [(True, True)]
    assert list(rec.recording.steps) == list(range(1, 19))
    assert len(rec.recording.dropped_steps) == 0


@pytest.mark.slow
def test_a_loop_abandoned_mid_way_flushes_eagerly_even_inside_a_trace():
    """Python finalises an abandoned ``rec.loop`` generator whenever it collects it,
    possibly while a tf.function is being traced: its final flush must still work."""
    import tensorflow as tf

    problem, rec, opt = _setup(buffer_steps=4)
    step = problem.graph_step(opt)
    loop = rec.loop(100)
    for _ in range(5):
        next(loop)
        step()

    @tf.function
    def traced():
        loop.close()  # runs the loop's final flush during tracing
        return tf.constant(1)

    traced()
    assert list(rec.recording.steps) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("every", [1, 2])
@pytest.mark.slow
def test_own_loop_flushing_once_per_ring_loses_nothing(every):
    """The README's rule for a loop of one's own: flush() at least every buffer_steps
    recorded steps (a full flush also reads the latest step from the variables)."""
    problem, rec, opt = _setup(buffer_steps=3, every=every)
    step = problem.graph_step(opt)
    for i in range(1, 25):
        step()
        if i % (3 * every) == 0:
            rec.flush()
    assert list(rec.recording.steps) == list(range(every, 25, every))
    assert len(rec.recording.dropped_steps) == 0
    eager = _eager(24, every=every)
    np.testing.assert_array_equal(rec.recording.global_values("w", "grad"), eager.global_values("w", "grad"))


@pytest.mark.slow
def test_loop_never_waits_longer_than_the_ring_holds():
    """rec.loop(n, flush_every=k) with k beyond the device ring would overwrite staged
    steps: it flushes as often as the ring needs, and says so once."""
    problem, rec, opt = _setup(buffer_steps=4)
    step = problem.graph_step(opt)
    with pytest.warns(RuntimeWarning, match=r"flush_every=10\): the device buffer holds 3"):
        for _ in rec.loop(20, flush_every=10):
            step()
    r = rec.recording
    assert list(r.steps) == list(range(1, 21)) and len(r.dropped_steps) == 0


@pytest.mark.parametrize("scale", [1e-25, 1e22])
def test_stats_max_abs_is_exact_far_outside_where_squares_fit_float32(scale):
    """A diverging run reaches |x| ~ 1e22 and a converged one 1e-25, where x*x leaves
    float32 (an earlier formulation, sqrt(max x*x), said inf and 0 there). max|x| and the
    mean stay exact, NaN/Inf is not claimed, and the norm that float32 squares cannot hold
    is named in a warning instead of passing silently."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    layout = dtensor.Layout(["batch", "model"], mesh)
    init = (np.random.default_rng(3).normal(size=(8, 8)) * scale).astype(np.float32)
    w = dtsgd_viz.variable(init, layout, name="w_range")
    rec = dtsgd_viz.Recorder(mode="stats", kinds=("param",))
    opt = dtsgd_viz.SGD(1.0, momentum=0.9, mesh=mesh, hooks=[rec])  # zero gradients:
    zero = dtsgd_viz.shard(np.zeros((8, 8), np.float32), layout)
    for _ in rec.loop(2):  # w stays what it was
        opt.apply_gradients([(zero, w)])
    with pytest.warns(RuntimeWarning, match=r"'w_range' \(param\) (over|under)flowed float32"):
        r = rec.recording
    stats = r.shard_stats("w_range", "param")[-1]  # (devices, 3) at the last update
    blocks = [init[i * 4 : (i + 1) * 4, j * 2 : (j + 1) * 2] for i in range(2) for j in range(4)]
    np.testing.assert_array_equal(stats[:, 2], [np.abs(b).max() for b in blocks])
    np.testing.assert_allclose(stats[:, 1], [b.astype(np.float64).mean() for b in blocks], rtol=1e-6)
    assert len(r.nonfinite_steps) == 0


@pytest.mark.slow
def test_off_steps_run_the_step_traced_without_the_recorder():
    """With every=k, rec.loop(step=...) runs the updates that record nothing through a
    second trace of the step in which the recorder's hooks add nothing: those calls never
    reach the hooks, and the recording equals one made with every=1, subsampled."""
    every, steps = 4, 23
    problem, rec, opt = _setup(every=every, buffer_steps=3)
    calls = {"before": 0, "after": 0}
    before, after = rec.before_update, rec.after_update
    ran = []

    def count(name, fn):
        def hook(*args):
            if not rec._suppressed:
                calls[name] += 1
            ran.append(rec._suppressed)
            return fn(*args)

        return hook

    rec.before_update, rec.after_update = count("before", before), count("after", after)
    split = rec.step_function(problem.graph_step(opt))
    for _ in rec.loop(steps, step=split):
        pass
    # each function is traced once: the hooks ran at the two traces only (not per call)
    # "on": the first call (it builds the staging) and the recorded updates
    assert split.calls == {"on": 1 + steps // every, "off": steps - 1 - steps // every}
    assert calls == {"before": 1, "after": 1} and ran.count(True) == 2
    graph = rec.recording
    problem1, rec1, opt1 = _setup(every=1)
    step1 = problem1.graph_step(opt1)
    for _ in rec1.loop(steps):
        step1()
    full = rec1.recording
    assert list(graph.steps) == list(range(every, steps + 1, every))
    assert len(graph.dropped_steps) == 0
    keep = [list(full.steps).index(s) for s in graph.steps]
    for kind in ("param", "velocity", "grad"):
        np.testing.assert_array_equal(graph.global_values("w", kind), full.global_values("w", kind)[keep])
    np.testing.assert_array_equal(graph.loss, full.loss[keep])


@pytest.mark.parametrize("mode", ["full", "stats"])
@pytest.mark.slow
def test_off_step_function_with_grads_only_and_stats(mode):
    every, steps = 3, 14
    kinds = ("grad",) if mode == "full" else ("param", "velocity", "grad")
    problem, rec, opt = _setup(every=every, kinds=kinds, mode=mode)
    for _ in rec.loop(steps, step=problem.graph_step(opt)):
        pass
    problem1, rec1, opt1 = _setup(every=every, kinds=kinds, mode=mode)
    step1 = problem1.graph_step(opt1)
    for _ in rec1.loop(steps):
        step1()
    a, b = rec.recording, rec1.recording
    assert list(a.steps) == list(b.steps) == list(range(every, steps + 1, every))
    for kind in kinds:
        if mode == "full":
            np.testing.assert_array_equal(a.global_values("w", kind), b.global_values("w", kind))
        else:
            np.testing.assert_array_equal(a.record("w").stats[kind], b.record("w").stats[kind])


@pytest.mark.slow
def test_a_step_function_making_two_updates_per_call_is_caught():
    """The host counts one update per call; a flush that finds another count warns and
    every later call runs the recording function (no step is lost silently)."""
    problem, rec, opt = _setup(every=5, buffer_steps=3)
    inner = problem.graph_step(opt).python_function  # traced into the wrapper's functions

    def twice():
        inner()
        return inner()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in rec.loop(12, step=twice):
            pass
        r = rec.recording
    messages = [str(w.message) for w in caught]
    assert all(w.category is RuntimeWarning for w in caught), messages
    assert "does not make exactly one update per call" in messages[0]
    # the later overwrite warnings name the cause, not advice the user already follows
    later = [m for m in messages[1:] if "overwritten on the devices" in m]
    assert len(later) == len(messages) - 1 >= 1, messages
    for m in later:
        assert "makes more than one update per call (warned above)" in m, m
        assert "iterate with rec.loop(n)" not in m, m
    assert not rec._count.ok
    # every step the recorder expected either arrived or is listed as dropped
    assert sorted([*r.steps, *r.dropped_steps]) == list(range(5, 25, 5))
