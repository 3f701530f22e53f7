"""Surfaces: value and gradient in numpy, in TensorFlow and by finite differences;
minima; analytic Hessian eigenvalues. ``dtsgd_viz.run``: the real DTensor SGD against
the numpy reference, each coordinate on its own device, bad input."""

import math

import numpy as np
import pytest
import tensorflow as tf

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import reference, surfaces

STEPS = 6
SMALL_SHARDED = dict(shape=(4, 4), mesh={"x": 2, "y": 2}, specs=("x", "y"), curvature=(0.1, 1.0))

SURFACES = {
    "rotated": surfaces.RotatedQuadratic(condition=10.0, angle=30.0),
    "rotated-steep": surfaces.RotatedQuadratic(condition=50.0, angle=-70.0, scale=0.5),
    "rosenbrock": surfaces.Rosenbrock(),
    "beale": surfaces.Beale(),
    "himmelblau": surfaces.Himmelblau(),
    "sharded": surfaces.ShardedQuadratic(**SMALL_SHARDED),
}


def random_points(surface, n=5, seed=0):
    rng = np.random.default_rng(seed)
    if surface.view_box is None:
        return rng.normal(size=(n, *surface.shape))
    (x0, x1), (y0, y1) = surface.view_box
    return np.stack([rng.uniform(x0, x1, n), rng.uniform(y0, y1, n)], axis=-1) * 0.6


def finite_difference_grad(f, x, h=1e-6):
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


# ---- surfaces -------------------------------------------------------------------


@pytest.mark.parametrize("key", sorted(SURFACES))
def test_gradient_numpy_tensorflow_and_finite_differences_agree(key):
    s = SURFACES[key]
    for x in random_points(s):
        g_np = s.grad_np(x)
        g_fd = finite_difference_grad(s.value_np, x)
        np.testing.assert_allclose(g_np, g_fd, rtol=1e-5, atol=1e-5 * max(1.0, np.abs(g_np).max()))
        var = tf.Variable(x)  # float64: TensorFlow's own autodiff of value_tf
        assert float(s.value_tf(var)) == pytest.approx(float(s.value_np(x)), rel=1e-12)
        np.testing.assert_allclose(s.grad_tf(var).numpy(), g_np, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("key", sorted(SURFACES))
def test_value_np_is_vectorised_over_a_grid(key):
    s = SURFACES[key]
    pts = random_points(s, n=6, seed=1).reshape(2, 3, *s.shape)
    values = s.value_np(pts)
    assert values.shape == (2, 3)
    for i in np.ndindex(2, 3):
        assert values[i] == pytest.approx(float(s.value_np(pts[i])), rel=1e-14)
    assert s.grad_np(pts).shape == pts.shape
    assert s.dim == math.prod(s.shape)


@pytest.mark.parametrize("key", sorted(SURFACES))
def test_minima_have_zero_gradient_and_are_lowest(key):
    s = SURFACES[key]
    minima = s.minimum
    assert minima.shape[1:] == tuple(s.shape)
    for m in minima:
        assert np.abs(s.grad_np(m)).max() < 1e-9
        assert float(s.value_np(m)) == pytest.approx(s.min_value, abs=1e-12)
    if s.view_box is not None:  # no grid point of the view box is lower
        (x0, x1), (y0, y1) = s.view_box
        X, Y = np.meshgrid(np.linspace(x0, x1, 301), np.linspace(y0, y1, 301))
        assert s.value_np(np.stack([X, Y], -1)).min() >= s.min_value - 1e-12
        for m in minima:
            assert x0 <= m[0] <= x1 and y0 <= m[1] <= y1
        start = s.default_start
        assert x0 <= start[0] <= x1 and y0 <= start[1] <= y1
    else:
        assert np.all(s.value_np(np.random.default_rng(2).normal(size=(50, *s.shape))) > s.min_value)


def test_himmelblau_has_four_distinct_minima():
    m = surfaces.Himmelblau().minimum
    assert m.shape == (4, 2)
    assert len(np.unique(m.round(3), axis=0)) == 4
    np.testing.assert_allclose(m[0], [3.0, 2.0], atol=1e-12)


@pytest.mark.parametrize("key", ["rotated", "rotated-steep"])
def test_rotated_quadratic_eigenvalues_and_angle(key):
    s = SURFACES[key]
    hess = np.stack([finite_difference_grad(lambda x: s.grad_np(x)[i], np.zeros(2)) for i in range(2)])  # noqa: B023
    eigvals, eigvecs = np.linalg.eigh(hess)
    np.testing.assert_allclose(eigvals, s.hessian_eigenvalues, rtol=1e-6)
    assert s.hessian_eigenvalues[1] / s.hessian_eigenvalues[0] == pytest.approx(s.condition)
    flat = eigvecs[:, 0]  # the flat direction points at `angle`
    t = math.radians(s.angle)
    assert abs(abs(flat @ [math.cos(t), math.sin(t)]) - 1) < 1e-6


def test_sharded_quadratic_curvature_is_constant_per_device_block():
    s = SURFACES["sharded"]
    c = s.curvature
    geom = s.geometry
    levels = []
    for devices in geom.replica_groups:
        block = c[geom.blocks[devices[0]]]
        assert np.all(block == block.flat[0])
        levels.append(float(block.flat[0]))
    assert len(set(levels)) == geom.num_unique == 4
    assert min(levels) == pytest.approx(0.1) and max(levels) == pytest.approx(1.0)
    np.testing.assert_allclose(np.diff(np.log(sorted(levels))), np.log(10) / 3, rtol=1e-5)
    # the Hessian is diag(c): its eigenvalues are the curvature values
    hess_diag = finite_difference_grad(lambda x: s.value_np(x), s.minimum[0] + 0.3)
    np.testing.assert_allclose(np.sort((hess_diag / 0.3).ravel()), s.hessian_eigenvalues, rtol=1e-5)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: surfaces.RotatedQuadratic(condition=0.5), ValueError, r"condition must be >= 1.*0.5"),
        (lambda: surfaces.RotatedQuadratic(scale=-1.0), ValueError, "scale must be > 0"),
        (lambda: surfaces.Rosenbrock(b=float("nan")), ValueError, "b must be finite"),
        (lambda: surfaces.ShardedQuadratic((6,), {"x": 4}, ("x",)), ValueError, "does not divide"),
        (lambda: surfaces.ShardedQuadratic((4,), {"x": 2}, ("z",)), ValueError, "not a mesh dim"),
        (lambda: surfaces.ShardedQuadratic(curvature=(1.0, 0.1)), ValueError, "low <= high"),
        (lambda: surfaces.Beale().value_np(np.zeros((4, 3))), ValueError, r"shape \(\.\.\., 2\).*\(4, 3\)"),
    ],
)
def test_surface_bad_input(make, error, match):
    with pytest.raises(error, match=match):
        make()


# ---- run: the real optimizer -------------------------------------------------------


@pytest.fixture(scope="module")
def rotated_runs():
    s = SURFACES["rotated"]
    return s, dtsgd_viz.run(s, CONFIGS, STEPS)


def check_against_reference(rec, surface, config, start, steps=STEPS):
    assert rec.variables == ("w",)
    assert list(rec.steps) == list(range(1, steps + 1))
    full = reference.run(
        surface.grad_np,
        start.astype(np.float32),
        steps,
        config["learning_rate"],
        config.get("momentum", 0.0),
        config.get("nesterov", False),
    )
    np.testing.assert_allclose(rec.path("w"), full, rtol=1e-5, atol=1e-6)
    # the gradient applied at each step is the surface's gradient at the parameter before it
    np.testing.assert_allclose(rec.global_values("w", "grad"), surface.grad_np(full[:-1]), rtol=1e-5, atol=1e-5)
    # the loss reported at each step is the surface's value before the update
    np.testing.assert_allclose(rec.loss, surface.value_np(full[:-1]), rtol=1e-5, atol=1e-7)
    assert rec.hyperparameters.momentum == pytest.approx(config.get("momentum", 0.0))
    assert rec.hyperparameters.nesterov is config.get("nesterov", False)
    assert all(len(bad) == 0 for bad in reference.check_recording(rec).values())


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.slow
def test_run_matches_reference_on_rotated_quadratic(rotated_runs, name):
    s, recs = rotated_runs
    assert list(recs) == list(CONFIGS)
    check_against_reference(recs[name], s, CONFIGS[name], s.default_start)


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.slow
def test_each_coordinate_lives_on_its_own_device(rotated_runs, name):
    _, rec = rotated_runs[0], rotated_runs[1][name]
    layout = rec.layout("w")
    assert layout.sharding_specs == ("coord",)
    assert layout.mesh.dim_names == ("coord",) and layout.mesh.dim_sizes == (2,)
    devices = rec.shard_devices("w")
    assert len(devices) == 2 and devices[0] != devices[1]
    for kind in ("param", "velocity", "grad"):
        shards = rec.shard_values("w", kind)
        assert shards.shape == (STEPS, 2, 1)
        np.testing.assert_array_equal(shards[:, 0, 0], rec.global_values("w", kind)[:, 0])
        np.testing.assert_array_equal(shards[:, 1, 0], rec.global_values("w", kind)[:, 1])


@pytest.mark.parametrize(
    "key, name, lr_scale",
    [
        ("rosenbrock", "nesterov", 0.02),
        ("beale", "momentum", 0.02),
        ("himmelblau", "plain", 0.1),
    ],
)
@pytest.mark.slow
def test_run_matches_reference_on_other_2d_surfaces(key, name, lr_scale):
    s = SURFACES[key]
    config = dict(CONFIGS[name], learning_rate=CONFIGS[name]["learning_rate"] * lr_scale)
    rec = dtsgd_viz.run(s, {name: config}, STEPS)[name]
    check_against_reference(rec, s, config, s.default_start)
    assert rec.layout("w").sharding_specs == ("coord",)


@pytest.mark.slow
def test_run_on_a_sharded_quadratic_keeps_its_layout():
    s = SURFACES["sharded"]
    config = CONFIGS["nesterov"]
    rec = dtsgd_viz.run(s, {"nesterov": config}, STEPS)["nesterov"]
    check_against_reference(rec, s, config, s.default_start)
    assert rec.layout("w").sharding_specs == ("x", "y")
    assert rec.mesh.dim_sizes == (2, 2)
    # per device: the gradient block is that block's own curvature times (w - 1)
    geom = s.geometry
    prev = rec.path("w")[:-1]
    grads = rec.shard_values("w", "grad")
    for d in range(geom.num_devices):
        block = geom.blocks[d]
        c = s.curvature[block]
        np.testing.assert_allclose(grads[:, d], c * (prev[(slice(None), *block)] - 1.0), rtol=1e-5, atol=1e-7)


@pytest.mark.slow
def test_run_start_every_and_progress():
    s = SURFACES["rotated"]
    calls = []
    start = np.array([1.0, -2.0])
    recs = dtsgd_viz.run(s, {"plain": CONFIGS["plain"]}, 6, start=start, every=2, progress=lambda *a: calls.append(a))
    rec = recs["plain"]
    assert list(rec.steps) == [2, 4, 6]
    full = reference.run(s.grad_np, start.astype(np.float32), 6, CONFIGS["plain"]["learning_rate"])
    np.testing.assert_allclose(rec.path("w"), full[::2], rtol=1e-5, atol=1e-6)
    assert calls[-1] == ("plain", 6, 6)
    assert [c[1] for c in calls] == sorted(c[1] for c in calls)


@pytest.mark.slow
def test_run_is_deterministic_and_uncached(rotated_runs):
    s, recs = rotated_runs
    again = dtsgd_viz.run(s, {"nesterov": CONFIGS["nesterov"]}, STEPS)["nesterov"]
    assert again is not recs["nesterov"]
    np.testing.assert_array_equal(again.path("w"), recs["nesterov"].path("w"))
    np.testing.assert_array_equal(again.loss, recs["nesterov"].loss)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (
            dict(configs={"m": dict(lr=0.1)}),
            ValueError,
            r"Unknown key\(s\) \['lr'\] in config 'm'. Allowed: \['learning_rate'",
        ),
        (dict(configs={}), ValueError, "non-empty dict"),
        (dict(configs={"m": 0.1}), TypeError, "must be a dict of SGD arguments"),
        (dict(configs={"m": dict(momentum=1.5)}), ValueError, r"momentum must be in \[0, 1\]"),
        (dict(steps=0), ValueError, "steps must be an integer >= 1. Received: steps=0"),
        (dict(steps=2.5), ValueError, "Received: steps=2.5"),
        (dict(every=0), ValueError, "every must be an integer >= 1"),
        (dict(start=[1.0, 2.0, 3.0]), ValueError, r"start must have shape \(2,\).*Received: shape \(3,\)"),
        (dict(start=[float("nan"), 0.0]), ValueError, "start must be finite"),
        (dict(start=[1e39, 0.0]), ValueError, "start must be finite"),
        (dict(mesh={"x": 4}), ValueError, "needs a dim of size 2. Received: mesh dims {'x': 4}"),
        (dict(progress="yes"), TypeError, "progress must be callable"),
    ],
)
def test_run_bad_input(kwargs, error, match):
    args = dict(surface=SURFACES["rotated"], configs={"plain": CONFIGS["plain"]}, steps=3)
    args.update(kwargs)
    with pytest.raises(error, match=match):
        dtsgd_viz.run(**args)


def test_run_sharded_quadratic_rejects_a_mesh_without_its_dims():
    with pytest.raises(ValueError, match=r"must have those dims. Received: mesh dims \{'coord': 2\}"):
        dtsgd_viz.run(SURFACES["sharded"], {"plain": CONFIGS["plain"]}, 2, mesh={"coord": 2})
