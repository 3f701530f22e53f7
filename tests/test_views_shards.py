"""plot_shards checked through its data: the heatmap against the recorded (and live)
tensors, outlines and labels against the shard blocks, the norm panel against norms
computed here, and the NaN / replica-mismatch markers against the flagged steps."""

import dataclasses

import matplotlib
import numpy as np
import pytest
import tensorflow as tf
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure
from tensorflow.experimental import dtensor

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz import _dtensor
from dtsgd_viz.views import _shard_geometry as sg
from dtsgd_viz.views import shards as sv
from dtsgd_viz.views.shards import draw_shards, plot_shards, shard_norms
from helpers import Problem, layout, make_sgd, run

matplotlib.use("Agg")

STEPS = 6


def _record(shape, specs, steps=STEPS, kinds=dtsgd_viz.KINDS, seed=0):
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem(shape, layout(mesh, *specs), seed=seed)
    rec = dtsgd_viz.Recorder(kinds=kinds)
    opt = make_sgd(CONFIGS["nesterov"], mesh, hooks=[rec])
    run(problem, opt, steps, mode="eager-apply")
    return rec.recording, problem, opt


@pytest.fixture(scope="module")
def sharded():
    return _record((4, 8), ("x", "y"))


@pytest.fixture(scope="module")
def replicated_rows():
    return _record((4, 8), ("unsharded", "y"))[0]


@pytest.fixture(scope="module")
def nan_recording():
    """The gradient of iteration 3 holds one NaN: the parameter keeps it afterwards."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = layout(mesh, "x", "y")
    problem = Problem((4, 8), lay)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    for step in range(1, 6):
        g = np.full((4, 8), 0.5, np.float32)
        if step == 3:
            g[1, 5] = np.nan
        opt.apply_gradients([(_dtensor.put(g, lay), problem.var)])
    return rec.recording


def _live(x):
    """A DTensor's global value, gathered by DTensor itself (not by the recording)."""
    mesh = dtensor.fetch_layout(x).mesh
    replicated = dtensor.Layout.replicated(mesh, x.shape.rank)
    return dtensor.relayout(tf.convert_to_tensor(x), replicated).numpy()


def _figure_parts(fig):
    heat_ax, norm_ax = fig.axes[:2]  # then the two colour bars
    return heat_ax, norm_ax


def _outlines(ax):
    return sorted((int(p.get_x()), int(p.get_y()), int(p.get_width()), int(p.get_height()))
                  for p in ax.patches if (p.get_gid() or "").startswith("block-"))


def _labels(ax):
    return {t.get_text(): t.get_position() for t in ax.texts
            if (t.get_gid() or "").startswith("label-")}


def test_heatmap_holds_the_recorded_tensor_at_each_step(sharded):
    r, problem, opt = sharded
    for step in (0, 3, -1):
        fig = plot_shards(r, "w", "velocity", step)
        assert isinstance(fig, Figure)
        heat_ax, _ = _figure_parts(fig)
        shown = heat_ax.images[0].get_array()
        np.testing.assert_array_equal(shown, r.global_values("w", "velocity")[step])
        lo, hi = heat_ax.images[0].get_clim()
        assert lo == -hi and hi == pytest.approx(np.abs(shown).max())
        title = heat_ax.get_title()
        assert f"velocity of 'w' at iteration {r.steps[step]}" in title
        assert "lr=0.05" in title and "momentum=0.9" in title and "Nesterov" in title
    # the last step is what the live optimizer holds, read straight from TensorFlow
    np.testing.assert_array_equal(
        _figure_parts(plot_shards(r, "w", "param"))[0].images[0].get_array(), _live(problem.var))
    np.testing.assert_array_equal(
        _figure_parts(plot_shards(r, "w", "velocity"))[0].images[0].get_array(),
        _live(opt.velocity(problem.var)))


def test_outlines_and_labels_are_the_device_blocks(sharded):
    r = sharded[0]
    heat_ax, _ = _figure_parts(plot_shards(r, "w", "grad", 1))
    # [x, y] on a 2x4 mesh: device (i, j) holds rows 2i:2i+2, cols 2j:2j+2
    expected = sorted((2 * (d % 4), 2 * (d // 4), 2, 2) for d in range(8))
    assert _outlines(heat_ax) == expected
    labels = _labels(heat_ax)
    assert set(labels) == {f"CPU:{d}" for d in range(8)}
    for d in range(8):
        x, y = labels[f"CPU:{d}"]
        assert (x, y) == (2 * (d % 4) + 1, 2 * (d // 4) + 1)  # centred in its block
    assert "sharded over 'y'" in heat_ax.get_xlabel() and "sharded over 'x'" in heat_ax.get_ylabel()


def test_replicas_share_one_outlined_block_with_a_grouped_label(replicated_rows):
    r = replicated_rows
    heat_ax, norm_ax = _figure_parts(plot_shards(r, "w"))
    geometry = r.geometry("w")
    assert geometry.replica_groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert _outlines(heat_ax) == [(2 * j, 0, 2, 4) for j in range(4)]
    assert set(_labels(heat_ax)) == {"CPU:0,4", "CPU:1,5", "CPU:2,6", "CPU:3,7"}
    norms = norm_ax.images[0].get_array()
    np.testing.assert_array_equal(norms[:, :4], norms[:, 4:])  # replicas: equal norms
    assert "unsharded" in heat_ax.get_ylabel()


def test_rank1_is_a_strip_and_rank3_pieces_tile_each_block():
    r1 = _record((8,), ("y",), steps=2)[0]
    heat_ax, _ = _figure_parts(plot_shards(r1, "w", "param", 0))
    np.testing.assert_array_equal(heat_ax.images[0].get_array(),
                                  r1.global_values("w", "param")[0][None, :])
    assert _outlines(heat_ax) == [(2 * j, 0, 2, 1) for j in range(4)]
    assert list(heat_ax.get_yticks()) == []

    r3 = _record((3, 4, 8), ("unsharded", "x", "y"), steps=2)[0]
    heat_ax, _ = _figure_parts(plot_shards(r3, "w", "param", 1))
    values = r3.global_values("w", "param")[1]
    np.testing.assert_array_equal(heat_ax.images[0].get_array(), values.reshape(12, 8))
    assert "flattened" in heat_ax.get_xlabel()
    geometry = r3.geometry("w")
    rects = {}
    for p in heat_ax.patches:
        if (p.get_gid() or "").startswith("block-"):
            rects.setdefault(int(p.get_gid()[6:]), []).append(p)
    for g, devices in enumerate(geometry.replica_groups):
        truth = np.zeros((3, 4, 8), bool)
        truth[geometry.blocks[devices[0]]] = True
        drawn = np.zeros((12, 8), int)
        for p in rects[g]:
            x, y, w, h = (int(v) for v in (p.get_x(), p.get_y(), p.get_width(), p.get_height()))
            drawn[y:y + h, x:x + w] += 1
        np.testing.assert_array_equal(drawn, truth.reshape(12, 8).astype(int))


def test_norm_panel_is_each_shards_l2_norm(sharded):
    r, problem, opt = sharded
    fig = plot_shards(r, "w", "velocity", 2)
    _, norm_ax = _figure_parts(fig)
    shards = r.shard_values("w", "velocity")
    truth = np.array([[np.linalg.norm(shards[i, d]) for d in range(8)] for i in range(STEPS)])
    np.testing.assert_allclose(norm_ax.images[0].get_array(), truth, rtol=1e-6)  # f64 vs f32
    np.testing.assert_allclose(shard_norms(r, "w", "velocity"), truth, rtol=1e-6)
    live = _dtensor.unpack(opt.velocity(problem.var))  # the devices' own shards
    np.testing.assert_allclose(truth[-1], [np.linalg.norm(x) for x in live], rtol=1e-6)
    assert [t.get_text() for t in norm_ax.get_xticklabels()] == [str(d) for d in range(8)]
    assert "CPU:" in norm_ax.get_xlabel() and "x=2" in norm_ax.get_xlabel()
    step_line = next(l for l in norm_ax.lines if l.get_gid() == "step-line")
    assert list(step_line.get_ydata()) == [2, 2]
    labels = [t.get_text() for t in norm_ax.get_yticklabels()]
    assert labels[0] == str(r.steps[0])
    assert not any(p.get_gid() == "nonfinite-row" for p in norm_ax.patches)


def test_norm_scale_turns_log_for_a_wide_range():
    assert sg.norm_scale(np.array([[0.5, 1.0], [2.0, np.nan]])) == ("linear", 0.0, 2.0)
    assert sg.norm_scale(np.array([[1e-4, 1.0], [0.0, 0.5]])) == ("log", 1e-4, 1.0)
    assert sg.norm_scale(np.zeros((2, 2))) == ("linear", 0.0, 1.0)
    r = _record((4, 8), ("x", "y"), steps=40)[0]
    for kind in ("grad", "param"):  # grad norms span > 100x over 40 steps, param's < 10x
        norms = shard_norms(r, "w", kind)
        wide = np.nanmax(norms) / norms[norms > 0].min() > sg.LOG_RANGE
        assert wide == (kind == "grad")
        _, norm_ax = _figure_parts(plot_shards(r, "w", kind))
        assert isinstance(norm_ax.images[0].norm, LogNorm) == wide
        assert ("log colour scale" in norm_ax.get_title()) == wide


def test_nonfinite_steps_and_cells_are_marked(nan_recording):
    r = nan_recording
    flagged = [int(np.nonzero(r.steps == s)[0][0]) for s in r.nonfinite_steps]
    assert flagged == [2, 3, 4]
    fig = plot_shards(r, "w", "grad", 2)
    heat_ax, norm_ax = _figure_parts(fig)
    shown = heat_ax.images[0].get_array()
    truth = r.global_values("w", "grad")[2]
    assert np.isnan(truth[1, 5])
    np.testing.assert_array_equal(np.ma.filled(shown, np.nan), truth)
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), ~np.isfinite(truth))
    cells = next(l for l in heat_ax.lines if l.get_gid() == "nonfinite-cells")
    assert list(zip(cells.get_xdata(), cells.get_ydata())) == [(5.5, 1.5)]
    assert "holds NaN/Inf" in heat_ax.get_title()
    rows = sorted(p.get_y() + 0.5 for p in norm_ax.patches if p.get_gid() == "nonfinite-row")
    assert rows == flagged
    marks = next(l for l in norm_ax.lines if l.get_gid() == "nonfinite-marks")
    assert list(marks.get_ydata()) == flagged
    assert not any(l.get_gid() == "mismatch-marks" for l in norm_ax.lines)
    assert any("NaN/Inf" in t.get_text() for t in norm_ax.get_legend().get_texts())
    shards = r.shard_values("w", "grad")
    truth_norms = np.linalg.norm(shards.reshape(len(r), 8, -1), axis=-1)
    assert list(zip(*np.nonzero(np.isnan(truth_norms)))) == [(2, 2)]  # device 2 holds [1, 5]
    np.testing.assert_array_equal(np.ma.getmaskarray(norm_ax.images[0].get_array()),
                                  np.isnan(truth_norms))
    # a clean step shows no NaN cells
    heat_ax, _ = _figure_parts(plot_shards(r, "w", "grad", 1))
    cells = next(l for l in heat_ax.lines if l.get_gid() == "nonfinite-cells")
    assert len(cells.get_xdata()) == 0 and "NaN" not in heat_ax.get_title()


def test_replica_mismatch_steps_are_marked():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    rep = dtensor.Layout.replicated(mesh, 1)
    var = _dtensor.variable(np.ones(4, np.float32), rep, name="r")
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    for step in range(4):
        if step == 2:  # copies disagree on device 6 (dtensor.pack does not check)
            parts = []
            for d, device in enumerate(mesh.local_devices()):
                with tf.device(device):
                    parts.append(tf.constant(np.full(4, 1.0 + (d == 6), np.float32)))
            grad = dtensor.pack(parts, rep)
        else:
            grad = _dtensor.put(np.ones(4, np.float32), rep)
        opt.apply_gradients([(grad, var)])
    r = rec.recording
    assert list(r.replica_mismatch) == [3]
    heat_ax, norm_ax = _figure_parts(plot_shards(r, "r", "grad", 0))
    marks = next(l for l in norm_ax.lines if l.get_gid() == "mismatch-marks")
    assert list(marks.get_ydata()) == [2]
    assert "replicas disagree" not in heat_ax.get_title()
    assert "replicas disagree" in _figure_parts(plot_shards(r, "r", "grad", 2))[0].get_title()
    assert [t.get_text() for t in norm_ax.get_xticklabels()][-1] == "flags"
    assert any(t.get_text() == "replicas disagree" for t in norm_ax.get_legend().get_texts())
    assert set(_labels(heat_ax)) == {"CPU:0-7"}
    assert _outlines(heat_ax) == [(0, 0, 4, 1)]


def test_bad_input_gets_clear_errors(sharded):
    r = sharded[0]
    with pytest.raises(ValueError, match=r"Unknown variable 'nope'.*\['w'\]"):
        plot_shards(r, "nope")
    with pytest.raises(ValueError, match="Unknown kind 'momentum'"):
        plot_shards(r, "w", "momentum")
    with pytest.raises(ValueError, match=rf"step {STEPS} is out of range.*-{STEPS}\.\.{STEPS - 1}"):
        plot_shards(r, "w", step=STEPS)
    with pytest.raises(ValueError, match="out of range"):
        plot_shards(r, "w", step=-STEPS - 1)
    with pytest.raises(TypeError, match="step must be an int"):
        plot_shards(r, "w", step=1.5)
    with pytest.raises(TypeError, match="ax must be None"):
        plot_shards(r, "w", ax="left")
    empty = dataclasses.replace(
        r, steps=r.steps[:0], loss_values=r.loss_values[:0], nonfinite=r.nonfinite[:0],
        mismatch=r.mismatch[:0],
        records=tuple(dataclasses.replace(v, blocks={k: b[:0] for k, b in v.blocks.items()})
                      for v in r.records))
    with pytest.raises(ValueError, match="no steps"):
        plot_shards(empty, "w")
    only_param = _record((4, 8), ("x", "y"), steps=1, kinds=("param",))[0]
    with pytest.raises(ValueError, match="Kind 'velocity' was not recorded"):
        plot_shards(only_param, "w")


def test_draws_into_given_axes_and_never_prints(sharded, capsys):
    r = sharded[0]
    fig = Figure()
    heat_ax, norm_ax = fig.subplots(1, 2)
    assert plot_shards(r, "w", ax=(heat_ax, norm_ax)) is fig
    assert heat_ax.images and norm_ax.images
    fig = Figure()
    ax = fig.add_subplot()
    assert plot_shards(r, "w", ax=ax) is fig and len(fig.axes) == 2  # heatmap + colour bar
    view = draw_shards(r, "w", "velocity", 0)
    heatmap = view.heatmap
    view.set_step(4)
    assert view.heatmap is heatmap
    np.testing.assert_array_equal(heatmap.get_array(), r.global_values("w", "velocity")[4])
    assert capsys.readouterr() == ("", "")


def test_pure_helpers():
    assert sg.device_label(["CPU:0", "CPU:4"]) == "CPU:0,4"
    assert sg.device_label([f"CPU:{i}" for i in (0, 1, 2, 3, 6)]) == "CPU:0-3,6"
    assert sg.device_label(["GPU:0", "CPU:1"]) == "GPU:0,CPU:1"
    assert sg.image_shape(()) == (1, 1) and sg.image_shape((5,)) == (1, 5)
    assert sg.image_shape((2, 3, 4)) == (6, 4) and sg.slice_boundaries((2, 3, 4)) == (3,)
    assert sg.block_rects((slice(0, 2), slice(1, 2), slice(0, 4)), (2, 3, 4)) == (
        (0, 1, 4, 1), (0, 4, 4, 1))
    assert sg.iteration_ticks(np.arange(1, 41)) == (
        [0, 4, 9, 14, 19, 24, 29, 34, 39], ["1", "5", "10", "15", "20", "25", "30", "35", "40"])
    assert sg.iteration_ticks(np.array([10, 20, 30])) == ([0, 1, 2], ["10", "20", "30"])
    assert sg.symmetric_limit(np.array([np.nan, -3.0, 2.0])) == 3.0
    assert sg.symmetric_limit(np.zeros(3)) == 1.0


# ---- stats-mode recordings ----------------------------------------------------------------


def _same_run(mode, steps=STEPS):
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"), seed=0)
    rec = dtsgd_viz.Recorder(mode=mode)
    run(problem, make_sgd(CONFIGS["nesterov"], mesh, hooks=[rec]), steps, mode="eager-apply")
    return rec.recording


@pytest.fixture(scope="module")
def stats_and_full():
    return _same_run("stats"), _same_run("full")


def _note(ax):
    note = next(t for t in ax.texts if t.get_gid() == "stats-only-note")
    return " ".join(note.get_text().split())


def test_stats_recording_draws_norms_and_says_values_are_missing(stats_and_full):
    stats, full = stats_and_full
    assert stats.mode == "stats"
    with pytest.raises(ValueError, match="mode='stats'"):
        stats.global_values("w", "velocity")  # what the view used to fail with
    for kind in ("velocity", "grad", "param"):
        fig = plot_shards(stats, "w", kind, step=3)
        heat_ax, norm_ax = _figure_parts(fig)
        shown = norm_ax.images[0].get_array()
        np.testing.assert_array_equal(shown, stats.shard_stats("w", kind)[..., 0])
        np.testing.assert_array_equal(shard_norms(stats, "w", kind),
                                      stats.shard_stats("w", kind)[..., 0])
        full_norms = _figure_parts(plot_shards(full, "w", kind, step=3))[1].images[0].get_array()
        np.testing.assert_allclose(shown, full_norms, rtol=1e-5)
        # no heatmap: the device blocks and a note in its place
        assert not heat_ax.images
        assert _note(heat_ax) == sv.STATS_ONLY_TEXT
        assert "values not recorded" in _note(heat_ax) and "mode='full'" in _note(heat_ax)
        assert _outlines(heat_ax) == _outlines(_figure_parts(plot_shards(full, "w", kind))[0])
        assert set(_labels(heat_ax)) == {f"CPU:{d}" for d in range(8)}
        assert f"{kind} of 'w' at iteration {stats.steps[3]}" in heat_ax.get_title()
        step_line = next(l for l in norm_ax.lines if l.get_gid() == "step-line")
        assert list(step_line.get_ydata()) == [3, 3]
    fig = plot_shards(stats, "w", "velocity", step=3)
    fig.savefig("/tmp/stats_view.png")
    view = draw_shards(stats, "w", "velocity", 0)
    view.set_step(4)
    view.set_kind("grad")
    assert list(view.step_line.get_ydata()) == [4, 4] and view.heatmap is None
    np.testing.assert_array_equal(view.norm_image.get_array(),
                                  stats.shard_stats("w", "grad")[..., 0])
    with pytest.raises(ValueError, match="Unknown kind 'momentum'"):
        plot_shards(stats, "w", "momentum")
    with pytest.raises(ValueError, match="Unknown variable 'nope'"):
        plot_shards(stats, "nope")


def test_stats_recording_marks_nonfinite_steps():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = layout(mesh, "x", "y")
    problem = Problem((4, 8), lay)
    rec = dtsgd_viz.Recorder(mode="stats")
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec])
    for step in range(1, 6):
        g = np.full((4, 8), 0.5, np.float32)
        if step == 3:
            g[1, 5] = np.nan
        opt.apply_gradients([(_dtensor.put(g, lay), problem.var)])
    r = rec.recording
    heat_ax, norm_ax = _figure_parts(plot_shards(r, "w", "grad", 2))
    assert "holds NaN/Inf" in heat_ax.get_title()
    marks = next(l for l in norm_ax.lines if l.get_gid() == "nonfinite-marks")
    assert list(marks.get_ydata()) == [2, 3, 4]
    mask = np.ma.getmaskarray(norm_ax.images[0].get_array())
    assert list(zip(*np.nonzero(mask))) == [(2, 2)]  # device 2 holds [1, 5]
    assert "NaN" not in _figure_parts(plot_shards(r, "w", "grad", 1))[0].get_title()
