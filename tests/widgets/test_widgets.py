"""Widgets: the pure state transition first, then the real widget driven through its
traits, checked through what its figure then holds."""

import io
import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from helpers.builders import Problem, layout, make_sgd, run
from PIL import Image

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.widgets import ExplorerState, ShardExplorer, explorer_state, redraw_for

matplotlib.use("Agg")

STEPS = 6


@pytest.fixture(scope="module")
def two_variables():
    """A [x, y]-sharded matrix "w" and a [y]-sharded vector "b", one real optimizer."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    w = _dtensor.variable(np.zeros((4, 8), np.float32), layout(mesh, "x", "y"), name="w")
    b = _dtensor.variable(np.zeros(8, np.float32), layout(mesh, "y"), name="b")
    rec = dtsgd_viz.Recorder()
    opt = make_sgd(CONFIGS["momentum"], mesh, hooks=[rec])
    rng = np.random.default_rng(0)
    for _ in range(STEPS):
        gw = rng.normal(size=(4, 8)).astype(np.float32)
        gb = rng.normal(size=8).astype(np.float32)
        opt.apply_gradients([(_dtensor.put(gw, layout(mesh, "x", "y")), w), (_dtensor.put(gb, layout(mesh, "y")), b)])
    return rec.recording


@pytest.fixture(scope="module")
def param_and_grad_only():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "unsharded", "y"))
    rec = dtsgd_viz.Recorder(kinds=("param", "grad"))
    run(problem, make_sgd(CONFIGS["nesterov"], mesh, hooks=[rec]), 3, mode="eager-apply")
    return rec.recording


# ---- the pure state transition ------------------------------------------------------


@pytest.mark.slow
def test_explorer_state_transitions(two_variables):
    r = two_variables
    s = ExplorerState.of(r)
    assert (s.variables, s.kinds) == (("w", "b"), tuple(dtsgd_viz.KINDS))
    assert s.steps == (1, 2, 3, 4, 5, 6)
    assert (s.variable, s.kind, s.step, s.update) == ("w", "velocity", 0, 1)
    s2 = explorer_state(s, {"name": "step", "new": 4})
    assert (s2.step, s2.update, s2.kind, s2.variable) == (4, 5, "velocity", "w")
    assert redraw_for(s, s2) == "step" and redraw_for(s2, s2) is None
    s3 = explorer_state(s2, {"name": "kind", "new": "grad"})
    assert (s3.kind, s3.step) == ("grad", 4) and redraw_for(s2, s3) == "kind"
    s4 = explorer_state(s3, {"name": "variable", "new": "b"})
    assert (s4.variable, s4.kind, s4.step) == ("b", "grad", 4) and redraw_for(s3, s4) == "variable"
    assert s == ExplorerState.of(r)  # frozen: transitions never mutate
    with pytest.raises(ValueError, match=r"Unknown variable 'v'.*\['w', 'b'\]"):
        explorer_state(s, {"name": "variable", "new": "v"})
    with pytest.raises(ValueError, match=r"must be an int in 0\.\.5, an index.*Received: 6"):
        explorer_state(s, {"name": "step", "new": 6})
    with pytest.raises(ValueError, match="Unknown change 'zoom'"):
        explorer_state(s, {"name": "zoom", "new": 2})
    assert ExplorerState.of(r, step=3).step == 2  # step= is the update number
    # the slider's change is the update number, as PathExplorer's
    s5 = explorer_state(s, {"name": "update", "new": 5})
    assert (s5.step, s5.update) == (4, 5) and s5 == s2
    with pytest.raises(
        ValueError,
        match=r"update must be an int in 1\.\.6 \(updates 1\.\.6\)"
        r"\. Received: 0",
    ):
        explorer_state(s, {"name": "update", "new": 0})
    with pytest.raises(ValueError, match=r"Received: 2\.0"):
        explorer_state(s, {"name": "update", "new": 2.0})
    assert ExplorerState.of(r, "b", "param", -1) == explorer_state(
        explorer_state(explorer_state(s, {"name": "variable", "new": "b"}), {"name": "kind", "new": "param"}),
        {"name": "step", "new": 5},
    )


def test_explorer_state_offers_only_recorded_kinds(param_and_grad_only):
    s = ExplorerState.of(param_and_grad_only)
    assert s.kinds == ("param", "grad") and s.kind == "param"
    with pytest.raises(ValueError, match=r"Kind 'velocity' was not recorded.*\['param', 'grad'\]"):
        explorer_state(s, {"name": "kind", "new": "velocity"})


# ---- the real widget --------------------------------------------------------------------


def _png_shape(data):
    return np.asarray(Image.open(io.BytesIO(data))).shape


@pytest.mark.slow
def test_step_change_redraws_in_place(two_variables, capsys):
    r = two_variables
    w = ShardExplorer(r)
    assert w.variable.options == ("w", "b") and w.kind.options == tuple(dtsgd_viz.KINDS)
    heat_ax, norm_ax = w.figure.axes[:2]
    heatmap, norm_lines = heat_ax.images[0], list(norm_ax.lines)
    step_line = next(ln for ln in norm_ax.lines if ln.get_gid() == "step-line")
    outlines = [p for p in heat_ax.patches]
    assert w.fixed.value and w.view.fixed_scale  # Play shows decay: one scale for the run
    m = np.abs(r.global_values("w", "velocity")).max()
    assert heatmap.get_clim()[1] == pytest.approx(m)
    png, renders = w.image.value, w.renders
    assert _png_shape(png)[:2] == (500, 930)  # style.SHARD_EXPLORER_SIZE at style.DPI

    w.slider.value = 6  # the update number
    assert w.state.step == 5 and w.renders == renders + 1
    np.testing.assert_array_equal(heatmap.get_array(), r.global_values("w", "velocity")[5])
    assert f"after update {r.steps[5]}" in w.figure.get_suptitle()
    assert list(step_line.get_xdata()) == [6, 6] and heatmap.get_clim()[1] == pytest.approx(m)
    assert "update 6" in w.step_label.value
    # the same artists, updated in place; the PNG shows the new state
    assert w.figure.axes[:2] == [heat_ax, norm_ax]
    assert heat_ax.images[0] is heatmap and list(norm_ax.lines) == norm_lines
    assert [p for p in heat_ax.patches] == outlines
    w.fixed.value = False  # per update again
    assert heatmap.get_clim()[1] == pytest.approx(np.abs(r.global_values("w", "velocity")[5]).max())
    assert w.image.value != png and w.image.value == w.render()
    assert capsys.readouterr() == ("", "")  # widgets never print


@pytest.mark.slow
def test_kind_change_updates_heatmap_and_norms(two_variables):
    r = two_variables
    w = ShardExplorer(r, step=3)
    heat_ax, norm_ax = w.figure.axes[:2]
    heatmap, lines = heat_ax.images[0], list(w.view.norm.lines)
    w.kind.value = "grad"
    assert heat_ax.images[0] is heatmap and w.view.norm.lines == lines
    np.testing.assert_array_equal(heatmap.get_array(), r.global_values("w", "grad")[2])
    shards = r.shard_values("w", "grad")
    truth = np.linalg.norm(shards.reshape(STEPS, 8, -1), axis=-1)
    np.testing.assert_allclose(np.array([ln.get_ydata() for ln in lines]).T, truth, rtol=1e-6)
    assert w.figure.get_suptitle().startswith("gradient of 'w' at update 3")
    w.slider.value = 5  # the new kind stays while stepping
    np.testing.assert_array_equal(heatmap.get_array(), r.global_values("w", "grad")[4])


@pytest.mark.slow
def test_play_is_linked_to_the_slider(two_variables):
    r = two_variables
    w = ShardExplorer(r)
    assert (w.slider.min, w.slider.max, w.slider.step) == (1, STEPS, 1)
    assert (w.play.min, w.play.max) == (0, STEPS - 1)  # Play walks the recorded updates
    w.play.value = 3
    assert w.slider.value == 4 and w.state.step == 3 and w.state.update == 4
    np.testing.assert_array_equal(w.figure.axes[0].images[0].get_array(), r.global_values("w", "velocity")[3])
    w.slider.value = 2
    assert w.play.value == 1


@pytest.mark.slow
def test_variable_change_redraws_the_new_variable(two_variables):
    r = two_variables
    w = ShardExplorer(r, kind="param")
    figure = w.figure
    w.slider.value = 3
    w.variable.value = "b"
    assert w.figure is figure
    heat_ax, norm_ax = figure.axes[:2]
    np.testing.assert_array_equal(heat_ax.images[0].get_array(), r.global_values("b", "param")[2][None, :])
    outlines = sorted(p.get_x() for p in heat_ax.patches if p.get_gid().startswith("block-"))
    assert outlines == [0, 2, 4, 6]  # [y] over y=4: four blocks of two, replicated over x
    assert len(w.view.norm.lines) == 4  # [y]: four unique blocks, each on two devices
    assert w.figure.get_suptitle().startswith("parameter of 'b' after update 3")
    w.slider.value = 1  # and stepping works on the new view
    np.testing.assert_array_equal(w.view.heatmap.get_array(), r.global_values("b", "param")[0][None])


@pytest.mark.slow
def test_widget_layout_and_display(param_and_grad_only):
    w = ShardExplorer(param_and_grad_only)
    assert w.kind.options == ("param", "grad") and w.kind.value == "param"
    assert w.image in w.widget.children
    controls = [c for box in w.widget.children[:2] for c in box.children]
    for part in (w.variable, w.kind, w.play, w.slider):
        assert part in controls
    bundle = w._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.widget.model_id
    assert callable(w._ipython_display_)
    with pytest.raises(ValueError, match=r"step=4 is out of range.*updates 1, 2, 3"):
        ShardExplorer(param_and_grad_only, step=4)
    with pytest.raises(ValueError, match="was not recorded"):
        ShardExplorer(param_and_grad_only, kind="velocity")


@pytest.mark.slow
def test_ipywidgets_stay_out_of_the_views():
    code = (
        "import sys, dtsgd_viz.views.shards.plot; "
        "print(sorted(m for m in ('ipywidgets', 'IPython', 'tensorflow', 'matplotlib.pyplot') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_explorer_on_a_stats_recording():
    """Stats mode keeps norms only: the step slider moves the step line, the kind picker
    swaps the norm panel, and the heatmap's place says values were not recorded."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"), seed=0)
    rec = dtsgd_viz.Recorder(mode="stats")
    run(problem, make_sgd(CONFIGS["nesterov"], mesh, hooks=[rec]), STEPS, mode="eager-apply")
    r = rec.recording
    w = ShardExplorer(r)
    heat_ax, norm_ax = w.figure.axes[:2]
    assert not heat_ax.images and w.view.heatmap is None
    note = " ".join(headline_texts(w.figure)[1].split())
    assert "values not recorded" in note and "mode='full'" in note
    lines = w.view.norm.lines
    step_line = next(ln for ln in w.view.norm.step_lines if ln.get_gid() == "step-line")
    np.testing.assert_allclose(np.array([ln.get_ydata() for ln in lines]).T, r.shard_stats("w", "velocity")[..., 0])
    png, renders = w.image.value, w.renders
    w.slider.value = 5
    assert list(step_line.get_xdata()) == [5, 5] and w.renders == renders + 1
    assert f"after update {r.steps[4]}" in w.figure.get_suptitle() and w.image.value != png
    w.kind.value = "grad"
    assert w.view.norm.lines == lines
    np.testing.assert_allclose(np.array([ln.get_ydata() for ln in lines]).T, r.shard_stats("w", "grad")[..., 0])
    assert "gradient of 'w'" in w.figure.get_suptitle() and list(step_line.get_xdata()) == [5, 5]


@pytest.mark.slow
def test_slider_value_is_the_update_shown(two_variables):
    """The slider counted recorded positions from 0 (ShardExplorer(r, step=10) had
    slider.value 9, and slider.value = 10 showed update 11); PathExplorer's value is
    the update, so ShardExplorer's is too."""
    r = two_variables
    w = ShardExplorer(r, step=4)
    assert w.slider.value == 4 and w.state.update == 4 and w.play.value == 3
    w.slider.value = 2
    assert w.state.update == 2 and "update 2" in w.step_label.value
    np.testing.assert_array_equal(w.view.heatmap.get_array(), r.global_values("w", "velocity")[1])
    assert "after update 2" in w.figure.get_suptitle()


@pytest.mark.slow
def test_slider_on_spaced_updates_snaps_and_play_walks_them(two_variables):
    import dataclasses

    every = dataclasses.replace(two_variables, steps=two_variables.steps * 10)  # 10, 20, ..., 60
    w = ShardExplorer(every, step=20)
    assert (w.slider.value, w.slider.min, w.slider.max, w.slider.step) == (20, 10, 60, 10)
    w.slider.value = 44  # between recorded updates: the nearest
    assert w.slider.value == 40 and w.state.update == 40 and w.play.value == 3
    np.testing.assert_array_equal(w.view.heatmap.get_array(), every.global_values("w", "velocity")[3])
    shown = []
    for k in range(w.play.max + 1):  # Play's frames
        w.play.value = k
        shown.append(w.slider.value)
    assert shown == list(every.steps)
    uneven = dataclasses.replace(two_variables, steps=np.array([1, 2, 4, 8, 16, 32]))
    w = ShardExplorer(uneven)
    assert w.slider.step == 1
    shown = []
    for k in range(w.play.max + 1):  # uneven spacing: Play still steps through each one
        w.play.value = k
        shown.append(w.state.update)
    assert shown == [1, 2, 4, 8, 16, 32]
    w.slider.value = 11
    assert w.slider.value == 8 and w.state.update == 8
