"""The real DTensor optimizer, recorded shard by shard, against the numpy reference."""

import numpy as np
import pytest
from helpers.builders import CASE_IDS, LAYOUT_CASES, Problem, layout, make_sgd, run

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.theory import reference

STEPS = 6
RTOL = 1e-6


def check_against_reference(rec, problem, config, steps=STEPS):
    name = rec.variables[0]
    assert list(rec.steps) == list(range(1, steps + 1))
    np.testing.assert_array_equal(rec.initial(name), problem.w0)
    grads = rec.global_values(name, "grad")
    params = rec.global_values(name, "param")
    vels = rec.global_values(name, "velocity")
    # gradients: recomputed independently in numpy from the previous parameter
    prev = np.concatenate([problem.w0[None], params[:-1]])
    np.testing.assert_allclose(grads, problem.numpy_grad(prev), rtol=RTOL, atol=1e-6)
    # params and velocities: the reference's update rule applied to those gradients
    p_ref, v_ref = reference.replay(
        problem.w0, grads, rec.hyperparameters.learning_rate, config["momentum"], config["nesterov"]
    )
    np.testing.assert_allclose(params, p_ref, rtol=RTOL, atol=1e-7)
    np.testing.assert_allclose(vels, v_ref, rtol=RTOL, atol=1e-7)
    # and the whole trajectory from the reference alone, gradients included
    full = reference.run(
        problem.numpy_grad, problem.w0, steps, config["learning_rate"], config["momentum"], config["nesterov"]
    )
    np.testing.assert_allclose(params, full[1:], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rec.hyperparameters.learning_rate, config["learning_rate"], rtol=1e-7)
    # the last recorded shards are exactly what the devices hold now
    live = _dtensor.unpack(problem.var)
    shards = rec.shard_values(name, "param")[-1]
    assert len(live) == len(shards)
    for d in range(len(live)):
        np.testing.assert_array_equal(shards[d], live[d])


@pytest.mark.parametrize("dims, shape, specs", LAYOUT_CASES, ids=CASE_IDS)
@pytest.mark.slow
def test_recorded_updates_match_reference(dims, shape, specs, config):
    mesh = dtsgd_viz.make_mesh(dims)
    problem = Problem(shape, layout(mesh, *specs))
    rec = dtsgd_viz.Recorder()
    opt = make_sgd(config, mesh, hooks=[rec])
    run(problem, opt, STEPS)
    recording = rec.recording
    assert recording.layout("w").sharding_specs == specs
    assert recording.shape("w") == shape
    check_against_reference(recording, problem, config)


@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 2)], ids=["rank1", "rank2", "rank3"])
def test_plain_variable_without_mesh(shape, config):
    problem = Problem(shape, None, seed=3)
    rec = dtsgd_viz.Recorder()
    opt = make_sgd(config, None, hooks=[rec])
    run(problem, opt, STEPS)
    recording = rec.recording
    assert recording.mesh.num_devices == 1
    assert recording.shard_values("w", "param").shape == (STEPS, 1, *shape)
    check_against_reference(recording, problem, config)


@pytest.mark.parametrize(
    "dims, shape, specs",
    [({"x": 2, "y": 4}, (4, 8), ("x", "y")), ({"a": 2, "b": 2, "c": 2}, (4, 3, 2), ("c", "unsharded", "a"))],
    ids=["2d", "3d"],
)
@pytest.mark.slow
def test_inside_tf_function(dims, shape, specs, config):
    mesh = dtsgd_viz.make_mesh(dims)
    problem = Problem(shape, layout(mesh, *specs), seed=1)
    rec = dtsgd_viz.Recorder(buffer_steps=4)
    opt = make_sgd(config, mesh, hooks=[rec])
    run(problem, opt, STEPS, mode="graph", rec=rec)
    recording = rec.recording
    assert len(recording.dropped_steps) == 0
    check_against_reference(recording, problem, config)
    # the loss the loop reported, against numpy
    prev = np.concatenate([problem.w0[None], recording.global_values("w", "param")[:-1]])
    want = (problem.c * prev**2 / 2 + problem.b * prev).reshape(STEPS, -1).sum(1)
    np.testing.assert_allclose(recording.loss, want, rtol=1e-5)


def test_reference_first_steps_by_hand():
    # momentum 0.9, lr 0.1, loss w**2/2 from w=1: moves 0.1 then 0.19*... as documented
    p, v = np.float32(1.0), np.float32(0.0)
    p1, v = reference.sgd_step(p, p, v, 0.1, 0.9)
    p2, v = reference.sgd_step(p1, p1, v, 0.1, 0.9)
    assert np.isclose(p - p1, 0.1) and np.isclose(p1 - p2, 0.18)
    # Nesterov moves further on the second step: p + mu*v_new - lr*g
    q1, w = reference.sgd_step(p, p, np.float32(0), 0.1, 0.9, nesterov=True)
    assert np.isclose(p - q1, 0.19)
