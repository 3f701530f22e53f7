"""plot_shards checked through its data: the heatmap against the recorded (and live)
tensors, outlines and labels against the shard blocks, the norm panel against norms
computed here, and the NaN / replica-mismatch markers against the flagged steps."""

import dataclasses
import io

import matplotlib
import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import Problem, layout, make_sgd, run
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from tensorflow.experimental import dtensor

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.mesh.layout_colors import lightness_of
from dtsgd_viz.views.shards import geometry as sg
from dtsgd_viz.views.shards.findings import STATS_ONLY_TEXT
from dtsgd_viz.views.shards.plot import draw_shards, plot_shards, shard_norms
from dtsgd_viz.views.shards.update import plot_update_shards

matplotlib.use("Agg")

STEPS = 6


def _dots_at(ax, dots, update):
    """Whether the shown update's dots stand on ``update``'s line (ties nest, never move)."""
    return bool(np.all(dots.get_offsets()[:, 0] == update))


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
def replicated_rows_run():
    return _record((4, 8), ("unsharded", "y"))


@pytest.fixture(scope="module")
def replicated_rows(replicated_rows_run):
    return replicated_rows_run[0]


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
    heat_ax, norm_ax = fig.axes[:2]  # then the colour bar
    return heat_ax, norm_ax


def _outlines(ax):
    return sorted(
        (int(p.get_x()), int(p.get_y()), int(p.get_width()), int(p.get_height()))
        for p in ax.patches
        if (p.get_gid() or "").startswith("block-")
    )


def _labels(ax):
    return {t.get_text(): t.get_position() for t in ax.texts if (t.get_gid() or "").startswith("label-")}


def _norm_lines(ax):
    """{group: (x, y)} of the per-block norm lines."""
    return {
        int(ln.get_gid()[5:]): (np.asarray(ln.get_xdata()), np.asarray(ln.get_ydata()))
        for ln in ax.lines
        if (ln.get_gid() or "").startswith("norm-") and ln.get_gid()[5:].isdigit()
    }


def _gid(ax, gid):
    return next(ln for ln in ax.lines if ln.get_gid() == gid)


@pytest.mark.slow
def test_heatmap_holds_the_recorded_tensor_at_each_update(sharded):
    r, problem, opt = sharded
    assert list(r.steps) == list(range(1, STEPS + 1))
    for step in (1, 4, STEPS):  # step=k is optimizer update k: index k - 1
        fig = plot_shards(r, "w", "velocity", step)
        assert isinstance(fig, Figure)
        heat_ax, _ = _figure_parts(fig)
        shown = heat_ax.images[0].get_array()
        np.testing.assert_array_equal(shown, r.global_values("w", "velocity")[step - 1])
        lo, hi = heat_ax.images[0].get_clim()
        assert lo == -hi and hi == pytest.approx(np.abs(shown).max())
        finding, settings = _titles(fig)
        assert finding.startswith(f"velocity of 'w' after update {step} of {r.steps[-1]}: ")
        assert "lr=0.05" in settings and "momentum=0.9" in settings and "Nesterov" in settings
        assert "laid out [x, y] on mesh (x 2, y 4)" in settings  # the layout, in the settings
        assert heat_ax.get_title() == ""  # the headline says what the panel shows
    # the last update is what the live optimizer holds, read straight from TensorFlow
    np.testing.assert_array_equal(
        _figure_parts(plot_shards(r, "w", "param"))[0].images[0].get_array(), _live(problem.var)
    )
    np.testing.assert_array_equal(
        _figure_parts(plot_shards(r, "w", "velocity", -1))[0].images[0].get_array(), _live(opt.velocity(problem.var))
    )


@pytest.mark.slow
def test_fixed_colour_scale_spans_the_whole_run(sharded):
    r = sharded[0]
    values = r.global_values("w", "velocity")
    m = np.abs(values).max()
    for step in (1, STEPS):
        image = _figure_parts(plot_shards(r, "w", "velocity", step, fixed_scale=True))[0].images[0]
        assert image.get_clim() == (pytest.approx(-m), pytest.approx(m))
    assert np.abs(values[0]).max() < m  # so the per-update scale of update 1 differs
    view = draw_shards(r, "w", "velocity", 1)
    assert view.heatmap.get_clim()[1] == pytest.approx(np.abs(values[0]).max())
    view.set_fixed_scale(True)
    assert view.heatmap.get_clim()[1] == pytest.approx(m)
    assert "scale of the whole run" in view.tensor.colorbar.ax.get_ylabel()  # said where the scale is
    view.set_fixed_scale(False)
    assert "whole run" not in view.tensor.colorbar.ax.get_ylabel()
    assert view.heat_ax.get_title() == ""
    view.set_kind("grad")  # the limit follows the kind
    assert view.heatmap.get_clim()[1] == pytest.approx(np.abs(r.global_values("w", "grad")).max())


@pytest.mark.slow
def test_outlines_and_labels_are_the_device_blocks(sharded):
    r = sharded[0]
    heat_ax, _ = _figure_parts(plot_shards(r, "w", "grad", 2))
    # [x, y] on a 2x4 mesh: device (i, j) holds rows 2i:2i+2, cols 2j:2j+2
    geometry = r.geometry("w")
    expected = sorted((b[1].start, b[0].start, 2, 2) for b in geometry.blocks)
    assert _outlines(heat_ax) == expected == sorted((2 * (d % 4), 2 * (d // 4), 2, 2) for d in range(8))
    labels = _labels(heat_ax)
    assert set(labels) == {f"CPU:{d}" for d in range(8)}
    styles = dtsgd_viz.views.core.style.block_styles(geometry)
    heat_ax.figure.canvas.draw()
    frame = heat_ax.get_window_extent()
    for d in range(8):
        x, y = labels[f"CPU:{d}"]
        # off the cells, at its block's outer edge: above the heatmap (top row), below it (bottom row)
        assert (x, y) == (2 * (d % 4) + 1, 0 if d // 4 == 0 else 4)
        text = next(t for t in heat_ax.texts if t.get_text() == f"CPU:{d}")
        box = text.get_bbox_patch().get_window_extent()
        assert box.y0 >= frame.y1 - 0.5 if d // 4 == 0 else box.y1 <= frame.y0 + 0.5
        chip = text.get_bbox_patch()
        assert chip.get_facecolor()[:3] == pytest.approx(to_rgb(styles[geometry.group_of[d]][0]))
    assert "over 'y'" in heat_ax.get_xlabel() and "over 'x'" in heat_ax.get_ylabel()


@pytest.mark.slow
def test_replicas_share_one_outlined_block_one_line_and_a_grouped_label(replicated_rows):
    r = replicated_rows
    heat_ax, norm_ax = _figure_parts(plot_shards(r, "w"))
    geometry = r.geometry("w")
    assert geometry.replica_groups == ((0, 4), (1, 5), (2, 6), (3, 7))
    assert _outlines(heat_ax) == [(2 * j, 0, 2, 4) for j in range(4)]
    assert set(_labels(heat_ax)) == {"CPU:0,4", "CPU:1,5", "CPU:2,6", "CPU:3,7"}
    lines = _norm_lines(norm_ax)
    assert sorted(lines) == [0, 1, 2, 3]  # one line per unique block, not per device
    shards = r.shard_values("w", "velocity")
    for g, devices in enumerate(geometry.replica_groups):
        np.testing.assert_allclose(
            lines[g][1], np.linalg.norm(shards[:, devices[1]].reshape(STEPS, -1), axis=1), rtol=1e-6
        )
    assert "not sharded" in heat_ax.get_ylabel()


@pytest.mark.slow
def test_rank1_is_a_strip_and_rank3_pieces_tile_each_block():
    r1 = _record((8,), ("y",), steps=2)[0]
    heat_ax, _ = _figure_parts(plot_shards(r1, "w", "param", 1))
    np.testing.assert_array_equal(heat_ax.images[0].get_array(), r1.global_values("w", "param")[0][None, :])
    assert _outlines(heat_ax) == [(2 * j, 0, 2, 1) for j in range(4)]
    assert list(heat_ax.get_yticks()) == []

    r3 = _record((3, 4, 8), ("unsharded", "x", "y"), steps=2)[0]
    heat_ax, _ = _figure_parts(plot_shards(r3, "w", "param", 2))
    values = r3.global_values("w", "param")[1]
    np.testing.assert_array_equal(heat_ax.images[0].get_array(), values.reshape(12, 8))
    assert "flattened" in heat_ax.get_ylabel()
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
            drawn[y : y + h, x : x + w] += 1
        np.testing.assert_array_equal(drawn, truth.reshape(12, 8).astype(int))


@pytest.mark.slow
def test_norm_lines_are_each_blocks_l2_norm(sharded):
    r, problem, opt = sharded
    fig = plot_shards(r, "w", "velocity", 3)
    _, norm_ax = _figure_parts(fig)
    shards = r.shard_values("w", "velocity")
    truth = np.array([[np.linalg.norm(shards[i, d]) for d in range(8)] for i in range(STEPS)])
    lines = _norm_lines(norm_ax)
    geometry = r.geometry("w")
    styles = dtsgd_viz.views.core.style.block_styles(geometry)
    for g, devices in enumerate(geometry.replica_groups):
        x, y = lines[g]
        np.testing.assert_array_equal(x, r.steps)
        np.testing.assert_allclose(y, truth[:, devices[0]], rtol=1e-6)  # f64 vs f32
        line = next(ln for ln in norm_ax.lines if ln.get_gid() == f"norm-{g}")
        assert to_rgb(line.get_color()) == pytest.approx(to_rgb(styles[g][0]))
    np.testing.assert_allclose(shard_norms(r, "w", "velocity"), truth, rtol=1e-6)
    live = _dtensor.unpack(opt.velocity(problem.var))  # the devices' own shards
    np.testing.assert_allclose(truth[-1], [np.linalg.norm(x) for x in live], rtol=1e-6)
    assert norm_ax.get_yscale() == "log" and norm_ax.get_xlabel() == "optimizer update"
    # the shown update: a vertical line, and a dot on every block's line, inside the view
    step_line = _gid(norm_ax, "step-line")
    assert list(step_line.get_xdata()) == [3, 3]
    lo, hi = norm_ax.get_xlim()
    assert lo < 3 < hi and step_line.get_zorder() > max(
        ln.get_zorder() for ln in norm_ax.lines if ln.get_gid().startswith("norm-")
    )
    # a dot on every block's line at the shown update, in the block's colour, over the lines
    dots = next(c for c in norm_ax.collections if c.get_gid() == "step-dots")
    want = np.array([truth[2, d[0]] for d in geometry.replica_groups], np.float64)
    order = np.argsort(dots.get_offsets()[:, 1])  # drawn extremes last; compared by value
    np.testing.assert_allclose(dots.get_offsets()[order, 1], np.sort(want), rtol=1e-6)
    assert _dots_at(norm_ax, dots, 3)
    colors = np.array([to_rgb(c) for c, _, _ in styles])
    np.testing.assert_allclose(dots.get_facecolors()[order, :3], colors[np.argsort(want)])
    assert dots.get_zorder() > step_line.get_zorder()
    # its first and last updates stay visible too
    for step in (1, STEPS):
        ax = _figure_parts(plot_shards(r, "w", "velocity", step))[1]
        lo, hi = ax.get_xlim()
        assert lo < step < hi
    assert not any(len(ln.get_xdata()) for ln in norm_ax.lines if ln.get_gid() == "nonfinite-marks")  # none


@pytest.mark.slow
def test_nonfinite_updates_and_cells_are_marked(nan_recording):
    r = nan_recording
    assert list(r.nonfinite_steps) == [3, 4, 5]
    fig = plot_shards(r, "w", "grad", 3)
    heat_ax, norm_ax = _figure_parts(fig)
    shown = heat_ax.images[0].get_array()
    truth = r.global_values("w", "grad")[2]
    assert np.isnan(truth[1, 5])
    np.testing.assert_array_equal(np.ma.filled(shown, np.nan), truth)
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), ~np.isfinite(truth))
    cells = _gid(heat_ax, "nonfinite-cells")
    assert list(zip(cells.get_xdata(), cells.get_ydata())) == [(5.5, 1.5)]
    assert "after update" not in _titles(fig)[0]
    assert _titles(fig)[0].startswith(f"gradient of 'w' at update 3 of {r.steps[-1]}:")
    assert "NaN/Inf" in _titles(fig)[0]  # the spread names the block at NaN/Inf
    marks = _gid(norm_ax, "nonfinite-marks")
    assert list(marks.get_xdata()) == [3, 4, 5]
    assert not any(len(ln.get_xdata()) for ln in norm_ax.lines if ln.get_gid() == "mismatch-marks")  # none
    assert any("NaN/Inf" in t.get_text() for t in norm_ax.get_legend().get_texts())
    # device 2 holds [1, 5]: its line has a gap at update 3, the others do not
    lines = _norm_lines(norm_ax)
    assert np.isnan(lines[2][1][2]) and not np.isnan(lines[1][1]).any()
    fig = plot_shards(r, "w", "grad", 2)
    assert len(_gid(_figure_parts(fig)[0], "nonfinite-cells").get_xdata()) == 0
    assert "NaN" not in _headline(fig)


@pytest.mark.slow
def test_replica_mismatch_updates_are_marked():
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
    heat_ax, norm_ax = _figure_parts(plot_shards(r, "r", "grad", 1))
    assert len(_norm_lines(norm_ax)) == 1  # eight copies, one line
    marks = _gid(norm_ax, "mismatch-marks")
    x, y = _norm_lines(norm_ax)[0]
    assert list(marks.get_xdata()) == [3] and list(marks.get_ydata()) == [y[2]]
    # said once, by the mark and its key: shown at update 3 the diamond sits on the step line, the title says none
    at3 = draw_shards(r, "r", "grad", 3)
    assert list(at3.norm.step_lines[0].get_xdata()) == [3, 3] == 2 * list(at3.norm.marks["mismatch-marks"].get_xdata())
    assert "replicas disagree" not in _headline(heat_ax.figure) + _headline(at3.figure)
    # replicated: one block, held whole by every device
    assert _titles(heat_ax.figure)[0].endswith(": one block, held whole by every device")
    assert any(t.get_text() == "replicas disagree" for t in norm_ax.get_legend().get_texts())
    assert set(_labels(heat_ax)) == {"CPU:0-7"}
    assert _outlines(heat_ax) == [(0, 0, 4, 1)]


@pytest.mark.slow
def test_bad_input_gets_clear_errors(sharded):
    r = sharded[0]
    with pytest.raises(ValueError, match=r"Unknown variable 'nope'.*\['w'\]"):
        plot_shards(r, "nope")
    with pytest.raises(ValueError, match="Unknown kind 'momentum'"):
        plot_shards(r, "w", "momentum")
    for bad in (STEPS + 1, -STEPS - 1):
        with pytest.raises(ValueError, match=rf"step={bad} is out of range.*1\.\.{STEPS}"):
            plot_shards(r, "w", step=bad)
    with pytest.raises(TypeError, match="ax must be None"):
        plot_shards(r, "w", ax="left")
    empty = dataclasses.replace(
        r,
        steps=r.steps[:0],
        loss_values=r.loss_values[:0],
        nonfinite=r.nonfinite[:0],
        mismatch=r.mismatch[:0],
        records=tuple(dataclasses.replace(v, blocks={k: b[:0] for k, b in v.blocks.items()}) for v in r.records),
    )
    with pytest.raises(ValueError, match="no steps"):
        plot_shards(empty, "w")
    only_param = _record((4, 8), ("x", "y"), steps=1, kinds=("param",))[0]
    with pytest.raises(ValueError, match="Kind 'velocity' was not recorded"):
        plot_shards(only_param, "w")
    every = dataclasses.replace(r, steps=r.steps * 10)  # as Recorder(every=10) numbers them
    with pytest.raises(ValueError, match=r"10, 20, \.\.\., 60 \(every 10\)"):
        plot_shards(every, "w", step=15)
    assert "after update 20" in _titles(plot_shards(every, "w", step=20))[0]


@pytest.mark.slow
def test_draws_into_given_axes_and_never_prints(sharded, capsys):
    r = sharded[0]
    fig = Figure()
    heat_ax, norm_ax = fig.subplots(1, 2)
    assert plot_shards(r, "w", ax=(heat_ax, norm_ax)) is fig
    assert heat_ax.images and _norm_lines(norm_ax)
    assert len(heat_ax.child_axes) == 1 and len(fig.axes) == 2  # the colour bar: an inset
    view = draw_shards(r, "w", "velocity", 1)
    heatmap = view.heatmap
    view.set_index(list(view.updates).index(5))
    assert view.heatmap is heatmap
    np.testing.assert_array_equal(heatmap.get_array(), r.global_values("w", "velocity")[4])
    assert list(_gid(view.norm_ax, "step-line").get_xdata()) == [5, 5]
    assert capsys.readouterr() == ("", "")


def test_pure_helpers():
    assert sg.device_label(["CPU:0", "CPU:4"]) == "CPU:0,4"
    assert sg.device_label([f"CPU:{i}" for i in (0, 1, 2, 3, 6)]) == "CPU:0-3,6"
    assert sg.device_label(["GPU:0", "CPU:1"]) == "GPU:0,CPU:1"
    assert sg.image_shape(()) == (1, 1) and sg.image_shape((5,)) == (1, 5)
    assert sg.image_shape((2, 3, 4)) == (6, 4) and sg.slice_boundaries((2, 3, 4)) == (3,)
    assert sg.block_rects((slice(0, 2), slice(1, 2), slice(0, 4)), (2, 3, 4)) == ((0, 1, 4, 1), (0, 4, 4, 1))
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


def _factor_said(finding, noun):
    """``(factor, "smaller"/"larger")`` a title says of ``noun`` ("velocity 110x and
    gradient 21x smaller"), or None where it says "within 1.5x"."""
    import re

    m = re.search(rf"{noun} ([0-9.]+)x(?: and \w+ [0-9.]+x)? (smaller|larger)", finding)
    if m is None:
        m = re.search(rf"\w+ [0-9.]+x and {noun} ([0-9.]+)x (smaller|larger)", finding)
    return None if m is None else (float(m.group(1)), m.group(2))


def _span_said(finding):
    """``(factor, largest, smallest)`` of "block norms span 7.4x (largest CPU:1, smallest CPU:6)"."""
    import re

    m = re.search(r"block norms span ([0-9.]+)x \(largest (\S+), smallest (\S+)\)$", finding)
    return None if m is None else (float(m.group(1)), m.group(2), m.group(3))


@pytest.mark.slow
def test_the_figure_title_is_the_spread_of_the_shown_updates_blocks(sharded, replicated_rows):
    """The headline states how far apart the blocks' norms are at the shown update and
    which block is largest and which smallest, computed here from the shards' values;
    the settings line says the optimizer and layout; the norm panel keeps its own
    finding over the run, not repeated in the headline."""
    for r, name in ((sharded[0], "w"), (replicated_rows, "w")):
        geometry = r.geometry(name)
        for kind in ("velocity", "param", "grad"):
            view = draw_shards(r, name, kind, 1)
            for step in (1, 3, STEPS):
                view.set_index(list(view.updates).index(step))
                shards = r.shard_values(name, kind)[step - 1]
                norms = np.array(
                    [np.sqrt(np.sum(np.square(shards[d[0]], dtype=np.float64))) for d in geometry.replica_groups]
                )
                names = [p.label for p in view.patches]
                finding, settings = _titles(view.figure)
                ratio = norms.max() / norms.min()
                said = _span_said(finding)
                assert said == (  # the exact span, also under 1.5x
                    pytest.approx(ratio, rel=0.05),
                    names[int(np.argmax(norms))],
                    names[int(np.argmin(norms))],
                )
                assert settings.startswith("SGD lr=0.05, momentum=0.9, Nesterov")
                assert len([a for a in view.figure.artists if a.get_gid() == "subtitle"]) == 1
            norm_title = view.norm_ax.get_title()
            assert norm_title.startswith("median ") and norm_title not in finding
            assert "replicas per block" in settings if r is replicated_rows else ("replicas" not in settings)


@pytest.mark.slow
def test_shard_titles_fit_the_figure_and_overlap_nothing(sharded):
    """Headline, settings line, panel titles and the chips under them: inside the
    figure, apart from each other, at least NOTE_SIZE."""
    from dtsgd_viz.views.core import style

    fig = plot_shards(sharded[0], "w", "velocity", 3)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    heat_ax, norm_ax = _figure_parts(fig)
    sub = next(a for a in fig.artists if a.get_gid() == "subtitle")
    texts = [
        fig._suptitle,
        sub,
        heat_ax.title,
        norm_ax.title,
        *[t for t in heat_ax.texts if (t.get_gid() or "").startswith("label-")],
    ]
    boxes = [t.get_window_extent(renderer) for t in texts]
    for t, box in zip(texts, boxes):
        assert t.get_fontsize() >= style.NOTE_SIZE
        assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height
    # the suptitle holds blank lines the settings line hangs in: under its first line
    assert boxes[1].y1 < boxes[0].y1 - fig._suptitle.get_fontsize() and boxes[1].y0 >= boxes[0].y0
    for i, a in enumerate(boxes[:4]):
        for b in boxes[max(i + 1, 2) :]:
            assert not a.overlaps(b)


def _titles(fig):
    """``(finding, settings)`` of a figure titled by ``views.core.figure.headline``, each
    on one line (as it reads: its wrapping undone)."""
    from dtsgd_viz.views.core.figure import headline_texts

    return tuple(" ".join((t or "").split()) for t in headline_texts(fig))


def _headline(fig):
    """The figure's finding and settings (``views.core.figure.headline``), one string."""
    from dtsgd_viz.views.core.figure import headline_texts

    return "\n".join(t for t in headline_texts(fig) if t)


def _note(ax):
    note = next(t for t in ax.texts if t.get_gid() == "stats-only-note")
    return " ".join(note.get_text().split())


@pytest.mark.slow
def test_stats_recording_draws_its_norm_mean_and_max(stats_and_full):
    stats, full = stats_and_full
    assert stats.mode == "stats"
    with pytest.raises(ValueError, match="mode='stats'"):
        stats.global_values("w", "velocity")  # what the view used to fail with
    geometry = stats.geometry("w")
    for kind in ("velocity", "grad", "param"):
        view = draw_shards(stats, "w", kind, step=4)
        table = stats.shard_stats("w", kind)
        ax = view.norm_ax  # one panel: the stored norm of each block
        assert ax is view.norm_ax and ax.get_ylabel() == "L2 norm of the block"
        for g, devices in enumerate(geometry.replica_groups):
            x, y = _norm_lines(ax)[g]
            np.testing.assert_array_equal(x, stats.steps)
            np.testing.assert_allclose(y, table[:, devices[0], 0])
        assert list(_gid(ax, "step-line").get_xdata()) == [4, 4]
        full_fig = plot_shards(full, "w", kind)  # read twice: drawn once
        full_norms = _norm_lines(_figure_parts(full_fig)[1])
        for g in full_norms:
            np.testing.assert_allclose(_norm_lines(view.norm_ax)[g][1], full_norms[g][1], rtol=1e-5)
        # no values: no heatmap and no placeholder panel; the subtitle says why
        fig = view.figure
        assert view.heat_ax is None and view.heatmap is None
        assert fig.axes == [view.norm_ax]
        assert not any(ax.images for ax in fig.axes)
        note = " ".join(headline_texts(fig)[1].split())  # the settings line (gid "subtitle")
        assert STATS_ONLY_TEXT in note and "mode='full'" in note
        # the blocks are still the devices' blocks, each named at its line's end in its colour
        full_ax = _figure_parts(full_fig)[0]
        assert sorted(r for p in view.patches for r in p.rects) == _outlines(full_ax)
        names = [p.label for p in view.patches]
        assert set(_labels(full_ax)) == {f"CPU:{d}" for d in range(8)} == set(names)
        named = [t.get_text() for t in view.norm.end_labels if t.get_visible()]
        assert named == [*names, "median"]
        when = "at update 4" if kind == "grad" else "after update 4"
        noun = {"param": "parameter", "grad": "gradient"}.get(kind, kind)
        assert f"{noun} of 'w' {when}" in _headline(fig)
    view = draw_shards(stats, "w", "velocity", 1)
    view.set_index(list(view.updates).index(5))
    view.set_kind("grad")
    assert list(_gid(view.norm_ax, "step-line").get_xdata()) == [5, 5]
    np.testing.assert_allclose(_norm_lines(view.norm_ax)[0][1], stats.shard_stats("w", "grad")[:, 0, 0])
    with pytest.raises(ValueError, match="Unknown kind 'momentum'"):
        plot_shards(stats, "w", "momentum")
    with pytest.raises(ValueError, match="Unknown variable 'nope'"):
        plot_shards(stats, "nope")


@pytest.mark.slow
def test_stats_recording_marks_nonfinite_updates():
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
    view = draw_shards(r, "w", "grad", 3)
    assert "NaN/Inf" in _headline(view.figure)
    assert list(view.norm.marks["nonfinite-marks"].get_xdata()) == [3, 4, 5]
    lines = _norm_lines(view.norm_ax)
    assert np.isnan(lines[2][1][2]) and np.isfinite(lines[1][1]).all()  # device 2 holds [1, 5]
    assert "NaN" not in _headline(plot_shards(r, "w", "grad", 2))


# ---- parameter, velocity and gradient at one update --------------------------------------


@pytest.mark.slow
def test_update_shards_share_the_blocks_the_devices_really_hold(replicated_rows_run):
    r, problem, opt = replicated_rows_run
    from dtsgd_viz.views.shards.update import plot_update_shards

    geometry = r.geometry("w")
    expected = sorted(
        (b[1].start, b[0].start, b[1].stop - b[1].start, b[0].stop - b[0].start)
        for b in (geometry.blocks[d[0]] for d in geometry.replica_groups)
    )
    for step in (2, STEPS):
        fig = plot_update_shards(r, "w", step)
        axes = [ax for ax in fig.axes if ax.images and _outlines(ax)]
        assert len(axes) == 3
        for ax, kind in zip(axes, ("param", "velocity", "grad")):
            assert _outlines(ax) == expected  # identical outlines in the three panels
            assert set(_labels(ax)) == {"CPU:0,4", "CPU:1,5", "CPU:2,6", "CPU:3,7"}
            np.testing.assert_array_equal(ax.images[0].get_array(), r.global_values("w", kind)[step - 1])
        assert f"'w' at update {step} of {STEPS}, largest |value|:" in fig.get_suptitle()
        # the finding: each kind's largest |value| against the parameter's, from the data
        finding = _titles(fig)[0]
        top = {k: np.abs(r.global_values("w", k)[step - 1]).max() for k in ("param", "velocity", "grad")}
        for kind, noun in (("velocity", "velocity"), ("grad", "gradient")):
            ratio = top["param"] / top[kind]
            said = _factor_said(finding, noun)
            factor, word = said
            assert word == ("smaller" if ratio >= 1 else "larger")
            assert factor == float(f"{max(ratio, 1 / ratio):.2g}")  # the title's two digits are the data's
        assert "than the parameter" in finding
    # the last update: each block as drawn is what dtensor.unpack gets from the devices
    params = {"param": problem.var, "velocity": opt.velocity(problem.var)}
    for ax, kind in zip(axes, ("param", "velocity")):
        image = np.asarray(ax.images[0].get_array())
        for d, shard in enumerate(_dtensor.unpack(params[kind])):
            np.testing.assert_array_equal(image[geometry.blocks[d]], shard)
    # the gradient of update k, computed here: c * w_{k-1} + b (one sum over 'x' copies)
    before = r.global_values("w", "param")[-2]
    np.testing.assert_allclose(axes[2].images[0].get_array(), problem.c * before + problem.b, rtol=1e-5, atol=1e-6)
    assert axes[2].get_title() == f"gradient of update {r.steps[-1]}"  # one line each
    assert "laid out [unsharded, y]" in _titles(fig)[1]  # the layout, once, in the settings line


@pytest.mark.slow
def test_update_shards_of_partial_and_stats_recordings(sharded, stats_and_full):
    from dtsgd_viz.views.shards.update import plot_update_shards

    only_param = _record((4, 8), ("x", "y"), steps=2, kinds=("param", "grad"))[0]
    fig = plot_update_shards(only_param, "w")
    assert len([ax for ax in fig.axes if ax.images]) == 2
    assert "not recorded: velocity" in _headline(fig)
    assert [ax.get_title() for ax in fig.axes if ax.images] == ["parameter after update 2", "gradient of update 2"]
    stats = stats_and_full[0]
    fig = plot_update_shards(stats, "w", 2)
    assert not any(ax.images for ax in fig.axes) and "mode='stats'" in _headline(fig)
    with pytest.raises(ValueError, match="step=9 is out of range"):
        plot_update_shards(stats, "w", 9)
    with pytest.raises(ValueError, match="kinds must be some of"):
        plot_update_shards(stats, "w", kinds=("momentum",))


@pytest.mark.slow
def test_step_counts_back_from_the_last_and_refuses_non_ints_alike(sharded):
    """One convention for plot_shards, plot_update_shards and ShardExplorer, as
    plot_paths has it: k is update k, -1..-n count back from the last, 0 (the start) and
    anything but an int are ValueErrors naming what was received and what is allowed."""
    from dtsgd_viz.widgets.shard_explorer import ExplorerState

    r = sharded[0]
    every = dataclasses.replace(r, steps=r.steps * 2)  # updates 2, 4, ..., 12
    n = len(every.steps)
    for back in range(1, n + 1):
        assert ExplorerState.of(every, step=-back).update == int(every.steps[-back])
    for back in (1, n // 2, n):  # the last, one between, the first (each figure is drawn)
        update = int(every.steps[-back])
        title = _titles(plot_shards(every, "w", step=-back))[0]
        assert f"after update {update}" in title
        assert f"update {update}" in plot_update_shards(every, "w", -back).get_suptitle()
    allowed = (
        r"Allowed: a recorded update \(updates 2, 4, \.\.\., 12 \(every 2\)\), "
        rf"-1\.\.-{n} counting back from the last, or None \(the last\)\."
    )
    cases = [
        (0, r"step=0 is the start, before any update: the start is not a recorded update"),
        (-n - 1, rf"step={-n - 1} is out of range: {n} updates are recorded"),
        (3, "step=3 was not recorded"),
        (2.0, r"Received: step=2\.0 \(float\)"),
        ("3", r"Received: step='3' \(str\)"),
        (True, r"Received: step=True \(bool\)"),
    ]
    for bad, why in cases:
        for draw in (
            lambda: plot_shards(every, "w", step=bad),  # noqa: B023 (each called in this loop)
            lambda: plot_update_shards(every, "w", bad),  # noqa: B023 (each called in this loop)
            lambda: ExplorerState.of(every, step=bad),  # noqa: B023
        ):
            with pytest.raises(ValueError, match=why + ".*" + allowed):
                draw()


def _synthetic(dims, shape, specs, steps=6, mode="full", values=None, seed=0):
    """A recording on a mesh of any size, built without TensorFlow (as a recorder's flush
    hands its host entries over): 16 or 64 devices need no logical devices."""
    import types

    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.recorder.hostlog import assemble, entry
    from dtsgd_viz.specs import LayoutSpec, MeshSpec

    mesh = MeshSpec.create(dims)
    geom = shard_geometry(shape, LayoutSpec(specs, mesh))
    held = tuple((g, tuple(d)) for g, d in enumerate(geom.replica_groups))
    w = types.SimpleNamespace(name="w", geometry=geom, dtype="float32", layout=geom.layout, held=held)
    rng = np.random.default_rng(seed)
    kinds = dtsgd_viz.KINDS
    entries = []
    for s in range(1, steps + 1):
        data = {}
        for k in kinds:
            if mode == "full":
                g = rng.normal(size=shape) * 0.8**s if values is None else values(s, k)
                data[("w", k)] = [np.asarray(g, np.float32)[b] for b in geom.blocks]
            else:
                g = rng.normal(size=(geom.num_unique, 3)) if values is None else values(s, k)
                with np.errstate(over="ignore"):  # float32 overflows to inf, as it does
                    data[("w", k)] = np.asarray(g, np.float32)
        entries.append((s, entry((s, 0.1, 1.0 / s), data, [w], kinds, mode)))
    return assemble(
        entries,
        [w],
        kinds,
        mode,
        [np.zeros(shape, np.float32)],
        mesh=mesh,
        momentum=0.9,
        nesterov=True,
        dropped=[],
        applied_momentum=0.9,
    )


@pytest.mark.parametrize("dims,shape", [({"x": 4, "y": 4}, (8, 8)), ({"x": 8, "y": 8}, (16, 16))])
@pytest.mark.slow
def test_many_blocks_draw_a_band_and_their_median(dims, shape):
    """Past 8 blocks the panel draws the range of every block as a band and their median
    as one line, named in a two-entry legend; the lines are hidden."""
    from dtsgd_viz.views.shards.findings import median_line

    r = _synthetic(dims, shape, ("x", "y"))
    n = int(np.prod(list(dims.values())))
    view = draw_shards(r, "w")
    norms = shard_norms(r, "w", "velocity")
    band = [c for c in view.norm_ax.collections if c.get_gid() == "norm-band"]
    assert len(band) == 1 and not any(ln.get_visible() for ln in view.norm.lines)
    # the band spans every block's norm at every update
    verts = band[0].get_paths()[0].vertices
    assert verts[:, 1].min() == pytest.approx(np.nanmin(norms), rel=1e-6)
    assert verts[:, 1].max() == pytest.approx(np.nanmax(norms), rel=1e-6)
    median = _gid(view.norm_ax, "norm-median")
    np.testing.assert_allclose(median.get_ydata(), median_line(norms), rtol=1e-6)
    assert [t.get_text() for t in view.norm.legend.get_texts()] == [f"median of {n} blocks", f"range of {n} blocks"]
    assert view.norm.end_labels is None


@pytest.mark.slow
def test_few_blocks_are_named_at_their_line_ends_without_a_legend(sharded):
    """Eight blocks were told apart by an 8-entry legend of close hues: each line is
    named at its right end now, in its colour, the names apart; no legend."""
    view = draw_shards(sharded[0], "w")
    fig = view.figure
    fig.draw_without_rendering()
    assert view.norm.legend is None and view.norm_ax.get_legend() is None
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in view.norm.end_labels]
    # each block's name, then the median's (the line the panel's title speaks of)
    assert [t.get_text() for t in view.norm.end_labels] == [p.label for p in view.patches] + ["median"]
    for t, line in zip(view.norm.end_labels, view.norm.lines):
        # the name on a chip of its line's very colour (pale sand, cyan too), in an ink that reads on it
        assert t.get_visible() and t.get_bbox_patch().get_facecolor()[:3] == to_rgb(line.get_color())
        assert abs(lightness_of(t.get_color()) - lightness_of(line.get_color())) >= 45
        assert t.get_fontsize() >= dtsgd_viz.views.core.style.NOTE_SIZE
    axes = view.norm_ax.get_window_extent(renderer)
    for i, a in enumerate(boxes):
        assert a.x0 >= axes.x1  # right of the line ends
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)


@pytest.mark.slow
def test_a_name_moved_off_its_lines_end_has_a_leader_back_to_it(sharded):
    """08: nine names in one decade stood up to two rows from their lines' ends: each name
    that had to move is joined to its line's end by a leader in its colour."""
    view = draw_shards(sharded[0], "w")
    view.figure.draw_without_rendering()
    ax, texts = view.norm_ax, view.norm.end_labels
    to_axes = ax.transData + ax.transAxes.inverted()
    drawn = [*view.norm.lines, _gid(ax, "norm-median")]  # the names' order: each block's, then the median's

    def end(line):  # the line's last finite point, in axes fractions
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        i = np.flatnonzero(np.isfinite(y) & (y > 0))[-1]
        return float(to_axes.transform((x[i], y[i]))[1])

    ends = {t.get_text(): end(line) for t, line in zip(texts, drawn)}
    leaders = {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("end-leader")}
    moved = [t for t in texts if abs(t.get_position()[1] - ends[t.get_text()]) > 0.02]
    assert moved, "the fixture's names should crowd"  # else this test checks nothing
    for t in moved:  # a block's name on a chip of its line's colour, the median's in its ink: the leader's colour
        ink = t.get_bbox_patch().get_facecolor() if t.get_bbox_patch() else t.get_color()
        (line,) = [ln for ln in leaders.values() if to_rgb(ln.get_color()) == to_rgb(ink)]
        y = line.get_ydata()
        assert y[0] == pytest.approx(ends[t.get_text()]) and y[-1] == pytest.approx(t.get_position()[1])
    assert len(leaders) <= len(texts)


@pytest.mark.slow
def test_colour_bars_below_a_tenth_count_in_their_power_of_ten_alike():
    """05: one bar read "0.01, 0.02", the next "(×1e-3)": every bar whose values stay
    under 0.1 says its power of ten in its label, ticks counting in it."""

    def values(s, k):
        return np.random.default_rng(s).normal(size=(4, 8)) * {"param": 0.3, "velocity": 0.02, "grad": 0.003}[k]

    r = _synthetic({"x": 2, "y": 4}, (4, 8), ("x", "y"), 3, values=values)
    for kind, label in (
        ("param", "param value"),
        ("velocity", "velocity value (×1e-2)"),
        ("grad", "grad value (×1e-3)"),
    ):
        view = draw_shards(r, "w", kind, 3)
        bar = view.tensor.colorbar
        view.figure.draw_without_rendering()
        assert bar.ax.get_ylabel() == label
        scale = 10.0 ** float(label.split("1e")[1].rstrip(")")) if "1e" in label else 1.0
        for tick in bar.ax.get_yticklabels():
            if tick.get_text():
                assert float(tick.get_text().replace("\u2212", "-")) * scale == pytest.approx(tick.get_position()[1])


@pytest.mark.slow
def test_rank3_update_panels_keep_captions_scales_and_labels_readable():
    """A (16, 4, 4) query kernel: the rank-3 note ran across the neighbouring panels, the
    colour bar's x10^-4 overprinted its label, and 64 stacked 'CPU:0,4' chips (one per
    d0 slice) were unreadable."""

    def values(s, k):
        scale = {"param": 0.1, "velocity": 1e-4, "grad": 1e-3}[k]
        return np.random.default_rng(s).normal(size=(16, 4, 4)) * scale

    r = _synthetic({"batch": 2, "model": 4}, (16, 4, 4), ("unsharded", "model", "unsharded"), 3, values=values)
    fig = plot_update_shards(r, "w", 3)
    fig.draw_without_rendering()
    lines = _headline(fig).split("\n")
    panels = fig._dtsgd_panels
    for panel in panels.values():
        assert "rank 3" not in panel.ax.get_xlabel()
        # one label per block (4), not one per d0 slice of each (64)
        assert len(panel.labels) == 4 == len(r.geometry("w").replica_groups)
        assert len(panel.outlines) == 64
    bar = panels["velocity"].colorbar
    assert bar.ax.get_xlabel() == "velocity value (×1e-4)"
    assert panels["grad"].colorbar.ax.get_xlabel() == "grad value (×1e-3)"
    assert panels["param"].colorbar.ax.get_xlabel() == "param value"
    assert bar.ax.xaxis.get_offset_text().get_text() == ""
    for label in bar.ax.get_xticklabels():  # each tick in units of the label's 1e-4
        value = float(label.get_text().replace("\u2212", "-"))
        assert value * 1e-4 == pytest.approx(label.get_position()[0], rel=1e-6, abs=1e-12)
    # blocks one row high cannot hold a chip: none is drawn (the docstrings say so, not the figure)
    assert not panels["velocity"].named and not any(t.get_visible() for t in panels["velocity"].labels)
    assert "too small" not in lines[-1]
    heat_ax, _ = _figure_parts(plot_shards(r, "w", step=3))
    assert heat_ax.get_title() == ""


@pytest.mark.slow
def test_a_diverging_stats_run_marks_where_its_statistics_overflow():
    """Stats of a diverging float32 run: lines ended with no mark where the norm became
    inf (the sum of squares overflows before the values do, so the recording's NaN/Inf
    flags can stay unset): an X marks each such update."""

    def values(s, k):
        n = np.float64(1.9) ** (s * 2.2) * np.ones(8)
        with np.errstate(over="ignore"):
            return np.stack([n, (-1.0) ** s * n / 10, n / 2], 1)

    with pytest.warns(RuntimeWarning, match="overflowed float32"):
        r = _synthetic({"x": 2, "y": 4}, (8, 8), ("x", "y"), 70, mode="stats", values=values)
    r = dataclasses.replace(r, nonfinite=np.zeros_like(r.nonfinite))  # as the real run
    view = draw_shards(r, "w", "param")
    stats = r.shard_stats("w", "param")
    truth = np.asarray(r.steps)[~np.isfinite(stats[:, :, 0].astype(float)).all(axis=1)]
    assert len(truth) > 0
    np.testing.assert_array_equal(view.norm.marks["nonfinite-marks"].get_xdata(), truth)  # where the norm overflowed
    assert "NaN/Inf" in [t.get_text() for t in view.norm.legend.get_texts()]


@pytest.mark.slow
def test_a_calm_stats_run_has_no_marks(stats_and_full):
    view = draw_shards(stats_and_full[0], "w", "param")
    marks = view.norm.marks
    assert not len(marks["nonfinite-marks"].get_xdata()) and not len(marks["mismatch-marks"].get_xdata())
    # the empty marks stay out of the layout (at pixel (0, 0) they collapsed every panel)
    import io
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        view.figure.savefig(io.BytesIO(), format="png")
    assert view.norm_ax.get_position().width > 0.2


@pytest.mark.slow
def test_norms_that_are_zero_are_drawn_and_said():
    """After one update with a zero velocity the norm panel was an empty linear
    -0.04..0.04 axis: zero norms are NaN on a log axis and nothing showed them."""

    def values(s, k):
        return np.zeros((8, 8)) if k == "velocity" else np.ones((8, 8))

    r = _synthetic({"x": 2, "y": 4}, (8, 8), ("x", "y"), 1, values=values)
    view = draw_shards(r, "w", "velocity")
    marks = view.norm.marks["zero-marks"]
    # a circle per block on the bottom edge (x: the update, y: axes fraction 0), grey as its legend entry
    np.testing.assert_allclose(marks.get_offsets(), [[1, 0]] * 8)
    legend = view.norm.legend
    key = next(h for t, h in zip(legend.get_texts(), legend.legend_handles) if t.get_text() == "norm exactly 0")
    assert {to_rgb(c[:3]) for c in marks.get_edgecolors()} == {to_rgb(key.get_markeredgecolor())}
    assert list(view.norm_ax.get_ylim()) == [0, 1] and list(view.norm_ax.get_xticks()) == [1]
    assert "norm exactly 0" in [t.get_text() for t in view.norm.legend.get_texts()]
    assert _titles(view.figure)[0].endswith(": every block's norm is 0")
    view.set_kind("param")  # non-zero norms: no marks
    assert len(marks.get_offsets()) == 0
    assert view.norm_ax.get_yscale() == "log"
    lo, hi = view.norm_ax.get_ylim()
    assert lo < view.norm.lines[0].get_ydata()[0] < hi


@pytest.mark.slow
def test_zero_norms_on_a_log_axis_sit_on_the_bottom_spine_below_every_norm():
    """07: zero norms on a log axis are grey circles on the bottom spine, below the lowest
    norm drawn and below every value tick (the legend says "norm exactly 0")."""

    def values(s, k):
        return np.zeros((4, 8)) if k == "velocity" and s == 1 else np.full((4, 8), 1e-5 * s)

    r = _synthetic({"x": 2, "y": 4}, (4, 8), ("unsharded", "y"), 8, values=values)
    view = draw_shards(r, "w", "velocity", 3)
    view.figure.draw_without_rendering()
    ax = view.norm_ax
    marks = view.norm.marks["zero-marks"]
    np.testing.assert_allclose(marks.get_offsets(), [[1, 0]] * 4)  # update 1, the bottom spine
    assert ax.get_yscale() == "log"
    lo, hi = ax.get_ylim()
    assert lo < np.nanmin(view.norm.data)  # the spine is below every norm drawn
    ticks = [t.get_position()[1] for t in ax.get_yticklabels() if t.get_text()]
    # no value tick at the spine the zeros sit on (07's circle read as the 2e-5 there)
    assert all(np.log(t / lo) > 0.05 * np.log(hi / lo) for t in ticks if lo <= t <= hi)
    assert "norm exactly 0" in [t.get_text() for t in view.norm.legend.get_texts()]


@pytest.mark.slow
def test_a_kind_change_rebuilds_the_legend():
    """After set_kind (ShardExplorer's kind picker) the new kind's zero-norm circles had
    no legend entry, which plot_shards of that kind has."""

    def values(s, k):
        return np.zeros((8, 8)) if k == "grad" and s == 2 else np.full((8, 8), float(s))

    r = _synthetic({"x": 2, "y": 4}, (8, 8), ("x", "y"), 4, values=values)
    zero = "norm exactly 0"

    texts = lambda v: [t.get_text() for t in v.norm.legend.get_texts()] if v.norm.legend else []  # noqa: E731
    assert zero in texts(draw_shards(r, "w", "grad"))
    view = draw_shards(r, "w", "param")
    assert zero not in texts(view)
    view.set_kind("grad")
    assert len(view.norm.marks["zero-marks"].get_offsets()) == 8
    assert zero in texts(view) and view.norm_ax.get_legend() is view.norm.legend
    view.set_kind("param")
    assert zero not in texts(view)


@pytest.mark.slow
def test_a_gradient_is_titled_by_the_update_it_belongs_to(sharded):
    """The gradient shown at update k is the one update k computed and applied
    ("gradient of 'w' at update k"), not a state after it; each kind named by its noun."""
    r = sharded[0]
    finding = _titles(plot_shards(r, "w", "grad", 3))[0]
    last = r.steps[-1]  # "update k of N": where k stands in the run
    assert finding.startswith(f"gradient of 'w' at update 3 of {last}: ")
    assert "after update" not in finding
    view = draw_shards(r, "w", "grad", 2)
    view.set_kind("velocity")
    assert _titles(view.figure)[0].startswith(f"velocity of 'w' after update 2 of {last}: ")
    view.set_kind("param")
    assert _titles(view.figure)[0].startswith(f"parameter of 'w' after update 2 of {last}: ")
    # drawn into the caller's axes: no figure title, the heatmap panel's title says it
    fig = Figure(figsize=(9.3, 4.8))
    view = draw_shards(r, "w", "grad", 3, ax=tuple(fig.subplots(1, 2)))
    assert not fig.get_suptitle()
    assert view.heat_ax.get_title() == f"gradient of 'w' at update 3 of {last}"
    view.set_kind("param")
    assert view.heat_ax.get_title().startswith("parameter of 'w' after update 3")


LONG = 100_000


def _long(mode, seed=0):
    """A ``LONG``-update recording of 'w' (4x8 over a 2x4 mesh: 8 blocks), built from
    arrays: block 3's norm spikes to 1e3 at update 54321 and dips to 1e-6 at 77777;
    block 5's norms are NaN over updates 20001..20050."""
    r = _synthetic({"x": 2, "y": 4}, (4, 8), ("x", "y"), steps=2, mode=mode)
    rng = np.random.default_rng(seed)
    n, w = LONG, r.records[0]
    if mode == "full":
        scale = np.exp(np.cumsum(rng.normal(0, 0.01, (n, 8)), 0))[..., None, None]
        blocks = {k: (rng.normal(size=(n, 8, 2, 2)) * scale).astype(np.float32) for k in r.kinds}
        v = blocks["velocity"]
        v[54320, 3], v[77776, 3], v[20000:20050, 5] = 500.0, 5e-7, np.nan
        w = dataclasses.replace(w, blocks=blocks)
    else:
        stats = {k: np.abs(rng.normal(size=(n, 8, 3))) + 0.1 for k in r.kinds}
        v = stats["velocity"]
        v[54320, 3], v[77776, 3], v[20000:20050, 5] = 1e3, 1e-6, np.nan
        w = dataclasses.replace(w, stats=stats)
    hp = dataclasses.replace(r.hyperparameters, learning_rate=np.full(n, 0.1))
    return dataclasses.replace(
        r,
        records=(w,),
        steps=np.arange(1, n + 1),
        hyperparameters=hp,
        loss_values=1.0 / np.arange(1, n + 1),
        nonfinite=np.zeros((n, 1), np.uint8),
        mismatch=np.zeros((n, 1), np.uint8),
    )


def test_minmax_decimate_keeps_each_columns_extremes_and_gaps():
    from helpers.envelope import check_envelope

    rng = np.random.default_rng(1)
    x = np.arange(1, LONG + 1)
    y = np.cumsum(rng.normal(size=LONG))
    y[[17, 4242, 99_998]] = [1e6, -1e6, 3e5]  # one-update spikes
    y[30_000:30_100] = np.nan  # a gap
    for columns in (1, 7, 300, 1000):
        xs, ys = sg.minmax_decimate(x, y, columns)
        # min and max a column, the ends, and a NaN in the (at most 2) columns of the gap
        assert len(xs) <= 2 * columns + 2 + 2
        check_envelope(x, y, xs, ys, columns)
        if columns >= 300:  # a column each: every spike drawn, where it was
            assert {x[17], x[4242], x[99_998]} <= set(xs.tolist())
    # no more points than columns: the same arrays, the picture unchanged
    few_x, few_y = x[:300], y[:300]
    assert all(a is b for a, b in zip(sg.minmax_decimate(few_x, few_y, 300), (few_x, few_y)))
    # uneven updates (a decimated recording) are cut by x, not by position
    xs, ys = sg.minmax_decimate(np.r_[np.arange(10), 1000.0], np.r_[np.arange(10.0), 5], 2)
    assert xs.tolist() == [0, 9, 1000] and ys.tolist() == [0, 9, 5]


@pytest.mark.parametrize("mode", ["stats", "full"])
@pytest.mark.slow
def test_a_100000_update_line_is_drawn_two_points_a_pixel_column(mode):
    """A long run drew 100,000 points per line (most of them in the same pixel column):
    each line now holds at most ~2 points per column of its axes, every column's min
    and max, the spike and the dip, and the gap of NaN norms."""
    from helpers.envelope import check_envelope

    r = _long(mode)
    view = draw_shards(r, "w", "velocity", step=54321)
    axes, lines = [view.norm_ax], [view.norm.lines]  # a stats recording: its stored norms alone
    fig = view.figure
    fig.savefig(io.BytesIO(), format="png")  # the widths the picture has
    norms = sg.block_norm_lines(r, "w", "velocity")[1]
    for ax, group in zip(axes, lines):
        columns = view.norm.thinned_to[ax]  # what the lines were thinned to: about the drawn width
        assert 200 < columns < 1000 and columns <= 1.4 * ax.bbox.width
        data = view.norm.data
        # the columns of the axis as drawn: of log10(update) on a log update axis
        space = np.log10 if ax.get_xscale() == "log" else np.asarray
        for g, line in enumerate(group):
            xs, ys = line.get_xdata(), line.get_ydata()
            assert len(xs) <= 2 * columns * 1.02 + 3  # ~2 a column (a NaN column: 3)
            check_envelope(space(r.steps), data[:, g], space(xs), ys, columns)
    drawn = dict(zip(view.norm.lines[3].get_xdata(), view.norm.lines[3].get_ydata()))
    assert drawn[54321] == norms[54320, 3] == np.nanmax(norms[:, 3])  # the spike
    assert drawn[77777] == norms[77776, 3] == np.nanmin(norms[:, 3])  # the dip
    gap = view.norm.lines[5].get_xdata()[np.isnan(view.norm.lines[5].get_ydata())]
    assert len(gap) and all(20001 <= u <= 20050 for u in gap)
    # the limits are those of every point, the dots at the shown update exact
    ax = axes[0]
    lo, hi = ax.get_ylim()
    assert lo <= np.nanmin(view.norm.data) and hi >= np.nanmax(view.norm.data)
    dots = next(c for c in ax.collections if c.get_gid() == "step-dots")
    at = view.norm.data[54320]  # every finite norm at the shown update, exact
    np.testing.assert_array_equal(np.sort(dots.get_offsets()[:, 1]), np.sort(at[np.isfinite(at)]))
    # another kind in place: thinned the same way
    view.set_kind("grad")
    for line in view.norm.lines:
        assert len(line.get_xdata()) <= 3 * view.norm.thinned_to[axes[0]] + 2


def test_dots_at_the_shown_update_stand_on_its_line_at_their_norms():
    """Every dot stands on the update's line at its exact norm, ties (blocks 0-6) too."""

    def values(s, k):  # (4, 8) on x=2, y=4: blocks (2, 2); blocks 0-6 equal, block 7 larger
        v = np.ones((4, 8)) * 0.5**s
        v[2:, 6:] *= 20.0
        return v

    r = _synthetic({"x": 2, "y": 4}, (4, 8), ("x", "y"), 5, values=values)
    view = draw_shards(r, "w", "velocity", 3)
    view.figure.draw_without_rendering()
    ax = view.norm_ax
    dots = next(c for c in ax.collections if c.get_gid() == "step-dots")
    norms = shard_norms(r, "w", "velocity")[2, [d[0] for d in r.geometry("w").replica_groups]]
    np.testing.assert_allclose(dots.get_offsets()[:, 1], norms, rtol=1e-6)  # each at its value
    assert np.all(dots.get_offsets()[:, 0] == 3)  # each on the update's line
