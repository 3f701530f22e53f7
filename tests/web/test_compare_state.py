"""``web.compare_state`` and ``web.CompareWidget``'s kernel side: the quadratic the browser
runs the three rules on is the surface's, the controls' ranges hold the settings, bad
settings are refused naming what was received and what is allowed, and the real run
``real`` holds is the rule's own path from the same start."""

import numpy as np
import pytest
import traitlets

from dtsgd_viz import surfaces
from dtsgd_viz.theory import reference
from dtsgd_viz.web import encode
from dtsgd_viz.web.compare import MAX_STEPS, CompareWidget, compare_state
from dtsgd_viz.web.paths import update_ticks
from dtsgd_viz.widgets.compare_state import OPTIMIZERS, CompareParams, compare_configs

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's


@pytest.fixture(scope="module")
def state():
    return compare_state(SURFACE, learning_rate=0.05, momentum=0.9, steps=60)


def test_the_quadratic_the_browser_runs_is_the_surfaces(state):
    H, m = np.asarray(state["hessian"]).reshape(2, 2), np.asarray(state["minimum"])
    x = np.array([[0.7, -1.3], [2.0, 0.5], [-3.0, 1.5]])
    assert np.allclose((x - m) @ H.T, SURFACE.grad_np(x), rtol=1e-6)
    assert np.allclose(0.5 * np.einsum("ki,ij,kj->k", x - m, H, x - m) + state["min_value"], SURFACE.value_np(x))
    assert state["start"] == [float(v) for v in SURFACE.default_start]
    assert state["box"] == [list(map(float, r)) for r in SURFACE.view_box]


def test_the_runs_are_compare_configs_with_the_style_tables_looks(state):
    assert state["rules"] == list(OPTIMIZERS) == ["plain", "momentum", "nesterov"]
    configs = compare_configs(CompareParams(0.05, 0.9, (0.0, 0.0), 60))
    for r in OPTIMIZERS:
        assert state["nesterov"][r] == configs[r]["nesterov"]
        assert state["uses_momentum"][r] == (configs[r]["momentum"] == 0.9)
    assert state["rule_names"] == {"plain": "plain", "momentum": "momentum", "nesterov": "Nesterov"}
    colors = {state["looks"][r]["color"] for r in OPTIMIZERS}
    assert len(colors) == 3 and state["looks"]["momentum"]["dash"] and not state["looks"]["nesterov"]["dash"]


def test_the_controls_hold_the_settings_and_reach_past_the_stability_limit(state):
    lo, hi = state["lr_range"]
    h_max = float(np.max(SURFACE.hessian_eigenvalues))
    assert lo <= 0.01 / h_max and hi >= 4.0 / h_max and lo <= 0.05 <= hi
    assert (state["learning_rate"], state["momentum"], state["steps"]) == (0.05, 0.9, 60)
    assert state["momentum_range"] == [0.0, 0.99] and state["steps_range"] == [1, MAX_STEPS]
    assert state["update_ticks"][60 - 1] == update_ticks(60) and len(state["update_ticks"]) == MAX_STEPS
    a, b = state["loss_range"]
    corner = np.array([[x, y] for x in SURFACE.view_box[0] for y in SURFACE.view_box[1]])
    assert b >= SURFACE.value_np(corner).max() and all(a * (1 - 1e-9) <= t <= b for t in state["loss_ticks"])


def test_the_state_is_small(state):
    import json

    size = len(json.dumps(state))
    assert size < 150_000, size


def test_surfaces_the_browser_cannot_run_are_refused_by_name():
    with pytest.raises(ValueError, match=r"web.CompareWidget runs.*Rosenbrock with 2 parameter\(s\) and no hessian"):
        compare_state(surfaces.Rosenbrock())
    with pytest.raises(ValueError, match=r"ShardedQuadratic with \d+ parameter"):
        compare_state(surfaces.ShardedQuadratic())
    with pytest.raises(TypeError, match="must be a dtsgd_viz.surfaces surface. Received: 3"):
        compare_state(3)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(learning_rate=0.0), r"learning_rate must be finite and > 0\. Received: 0\.0"),
        (dict(learning_rate=float("nan")), r"learning_rate must be finite and > 0\. Received: nan"),
        (dict(momentum=1.0), r"momentum must be in 0\.\.0\.99\. Received: 1\.0"),
        (dict(momentum=-0.1), r"momentum must be in 0\.\.0\.99\. Received: -0\.1"),
        (dict(momentum="0.9"), r"momentum must be a number in 0\.\.0\.99\. Received: '0\.9'"),
        (dict(steps=0), r"steps must be an int in 1\.\.400\. Received: 0"),
        (dict(steps=401), r"steps must be an int in 1\.\.400\. Received: 401"),
        (dict(steps=6.0), r"steps must be an int in 1\.\.400\. Received: 6\.0"),
        (
            dict(start=[9.0, 0.0]),
            r"start must lie in the view box x in -4\.\.4, y in -4\.\.4.*Received: \[9\.0, 0\.0\]",
        ),
        (dict(start=[1.0]), r"start must have shape \(2,\)"),
    ],
)
def test_settings_out_of_range_are_refused_with_what_is_allowed(kwargs, message):
    with pytest.raises(ValueError, match=message):
        compare_state(SURFACE, **kwargs)


def test_without_a_kernel_run_nothing_is_run_and_settings_are_checked():
    w = CompareWidget(SURFACE, steps=10, run_real=False)
    assert w.real == {} and w.runs == [] and w.snapshot_png() is None
    w.momentum = 0.5
    assert w.runs == []
    with pytest.raises(ValueError, match=r"learning_rate must be in 0\.0001\.\.1 \(the slider's range\)\. Received: 3"):
        w.learning_rate = 3.0
    with pytest.raises(ValueError, match=r"steps must be an int in 1\.\.400\. Received: 500"):
        w.steps = 500
    with pytest.raises(traitlets.TraitError, match=r"start must lie in the view box"):
        w.start = [0.0, 5.0]
    assert w.settings() == {"learning_rate": 0.05, "momentum": 0.5, "steps": 10, "start": [-3.0, 1.5]}


@pytest.fixture(scope="module")
def widget():
    return CompareWidget(SURFACE, learning_rate=0.05, momentum=0.9, steps=20)


def _float32_reference(lr, mu, steps, start):
    p0 = np.asarray(start, np.float32)
    configs = compare_configs(CompareParams(lr, mu, tuple(start), steps))
    return {
        k: reference.run(SURFACE.grad_np, p0, steps, np.float32(lr), np.float32(c["momentum"]), c["nesterov"])
        for k, c in configs.items()
    }


def test_the_real_run_is_the_rules_path_from_the_same_start(widget):
    assert widget.real["params"] == {"learning_rate": 0.05, "momentum": 0.9, "steps": 20, "start": [-3.0, 1.5]}
    want = _float32_reference(0.05, 0.9, 20, [-3.0, 1.5])
    for rule in OPTIMIZERS:
        path = encode.decode(widget.real["paths"][rule])
        assert path.shape == (21, 2)
        np.testing.assert_allclose(path, want[rule], rtol=0, atol=1e-5, err_msg=rule)
        losses = encode.decode(widget.real["losses"][rule])
        np.testing.assert_allclose(losses, SURFACE.value_np(path), rtol=1e-12)


def test_each_change_runs_the_real_optimizer_with_the_new_settings(widget):
    n = len(widget.runs)
    widget.momentum = 0.5
    widget.start = [1.0, -2.0]
    assert len(widget.runs) == n + 2
    assert widget.real["params"] == {"learning_rate": 0.05, "momentum": 0.5, "steps": 20, "start": [1.0, -2.0]}
    want = _float32_reference(0.05, 0.5, 20, [1.0, -2.0])
    for rule in OPTIMIZERS:
        np.testing.assert_allclose(encode.decode(widget.real["paths"][rule]), want[rule], rtol=0, atol=1e-5)
    assert widget.snapshot_png()[:8] == b"\x89PNG\r\n\x1a\n"
