"""The shard figures as a reader sees them at the notebook's size: the shown update's
line thin and grey under a dot per block, lines that lie on each other both seen,
stacked update panels titled at title size over their heatmaps, a long run's update axis
on a log scale (its first updates not squashed against the edge), a run-wide colour
scale said on its colour bar, a tall strip's chips at its blocks' top edges. Plain-data recordings (no
TensorFlow)."""

import matplotlib
import numpy as np
import pytest
from helpers import synthetic_recording
from matplotlib.colors import to_rgb

from dtsgd_viz.views.core import style
from dtsgd_viz.views.shards.lines import STEP_LINE_WIDTH, log_x
from dtsgd_viz.views.shards.plot import draw_shards, plot_shards, shard_norms
from dtsgd_viz.views.shards.update import plot_update_shards

matplotlib.use("Agg")

MODEL = [("d1/kernel", (4, 16), ("unsharded", "model")), ("d2/kernel", (16, 1), ("model", "unsharded"))]


def _model(steps=20, mode="full", updates=None, seed=0):
    """The tutorials' MLP kernels on the helper's 2x4 mesh (``synthetic_recording``)."""
    return synthetic_recording.recording(MODEL, steps, mode, updates=updates, seed=seed)


def _gid(ax, gid):
    return next(a for a in [*ax.lines, *ax.texts] if a.get_gid() == gid)


@pytest.mark.slow
def test_the_shown_update_is_a_thin_grey_line_under_white_edged_dots():
    r = _model()
    view = draw_shards(r, "d1/kernel", "velocity", 10)
    line = _gid(view.norm_ax, "step-line")
    dots = next(c for c in view.norm_ax.collections if c.get_gid() == "step-dots")
    assert list(line.get_xdata()) == [10, 10] and "after update 10 of" in view.figure.get_suptitle()
    r_, g, b = to_rgb(line.get_color())
    assert abs(r_ - g) < 0.05 and abs(g - b) < 0.05 and 0.35 < r_ < 0.75  # a mid grey
    assert line.get_linewidth() == STEP_LINE_WIDTH <= min(ln.get_linewidth() for ln in view.norm.lines)
    assert dots.get_zorder() > line.get_zorder() > max(ln.get_zorder() for ln in view.norm.lines)
    assert [tuple(c[:3]) for c in dots.get_edgecolors()] == [(1.0, 1.0, 1.0)]
    # a dot per block at its norm after update 10, in the block's line colour
    norms = shard_norms(r, "d1/kernel", "velocity")[9, [d[0] for d in r.geometry("d1/kernel").replica_groups]]
    drawn = sorted(zip(dots.get_offsets()[:, 1], [to_rgb(c) for c in dots.get_facecolors()]))
    want = sorted(zip(norms, [to_rgb(ln.get_color()) for ln in view.norm.lines]))
    np.testing.assert_allclose([y for y, _ in drawn], [y for y, _ in want], rtol=1e-6)
    assert [c for _, c in drawn] == [c for _, c in want]
    assert np.all(dots.get_offsets()[:, 0] == 10)  # on the line, never moved
    # the title's largest and smallest drawn last: no other dot hides them
    np.testing.assert_allclose(sorted(dots.get_offsets()[-2:, 1]), [norms.min(), norms.max()], rtol=1e-6)
    view.set_index(list(view.updates).index(3))  # moved in place
    assert list(line.get_xdata()) == [3, 3] and "after update 3 of" in view.figure.get_suptitle()
    assert np.all(dots.get_offsets()[:, 0] == 3)


def test_every_block_line_has_one_width_and_the_median_its_own_look():
    """Lines of different widths read as blocks that matter more: every block's line is
    drawn at one width, in block order; the median is black, white-edged, over them (no
    block line is black or edged), named "median" in black."""
    from matplotlib.colors import to_hex

    from dtsgd_viz.views.shards.lines import LINE_WIDTH

    view = draw_shards(_model(), "d1/kernel", "velocity", 10)
    order = [view.norm_ax.lines.index(ln) for ln in view.norm.lines]
    assert order == sorted(order) and {ln.get_linewidth() for ln in view.norm.lines} == {LINE_WIDTH}
    median = view.norm.median
    assert median is not None and to_hex(median.get_color()) == "#000000"
    assert median.get_zorder() > max(ln.get_zorder() for ln in view.norm.lines) and median.get_path_effects()
    assert all(to_hex(ln.get_color()) != "#000000" and not ln.get_path_effects() for ln in view.norm.lines)
    view.figure.draw_without_rendering()
    name = next(t for t in view.norm.end_labels if t.get_text() == "median")
    assert to_hex(name.get_color()) == "#000000"


@pytest.mark.slow
def test_stacked_update_panels_are_titled_over_their_heatmaps():
    fig = plot_update_shards(_model(), "d1/kernel", step=20)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.images]
    assert len(axes) == 3
    for ax, head in zip(axes, ("parameter after update 20", "velocity slot after update 20", "gradient of update 20")):
        title = ax.title
        assert title.get_text().startswith(head) and title.get_fontsize() == style.TITLE_SIZE
        assert title.get_ha() == "center"
        box, frame = title.get_window_extent(renderer), ax.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= fig.bbox.width  # wrapped to the figure
        assert abs((box.x0 + box.x1) / 2 - (frame.x0 + frame.x1) / 2) < 2  # over its data
        assert frame.y1 < box.y0 < frame.y1 + 60  # just above its heatmap (and the chips)
    assert all("\n" not in ax.get_title() for ax in axes)  # one line each


@pytest.mark.slow
def test_a_long_run_has_a_log_update_axis_a_short_one_a_linear_one():
    long = _model(mode="stats", steps=500, updates=np.arange(4, 2001, 4))
    view = draw_shards(long, "d1/kernel", "velocity")
    assert log_x(long.steps) and not log_x(np.arange(1, 151))
    bottom = view.norm_ax  # a stats recording's one panel: the stored norms
    for ax in [view.norm_ax]:
        assert ax.get_xscale() == "log"
        lo, hi = ax.get_xlim()
        assert lo < 4 and hi > 2000  # every update inside, a margin each side
    assert bottom.get_xlabel() == "optimizer update (log scale)"
    ticks = [t for t in bottom.get_xticks() if bottom.get_xlim()[0] <= t <= bottom.get_xlim()[1]]
    assert 3 <= len(ticks) <= 7 and all(float(t).is_integer() for t in ticks)
    # the first 200 updates take a good part of the width (on a linear axis: a tenth)
    ax = view.norm_ax
    frac = (ax.transData + ax.transAxes.inverted()).transform([(4, 1e-3), (200, 1e-3)])[:, 0]
    assert frac[1] - frac[0] > 0.4
    # the names stand right of the axes, on the log axis too
    view.figure.draw_without_rendering()
    frame = ax.get_window_extent()
    assert view.norm.end_labels and all(t.get_window_extent().x0 >= frame.x1 for t in view.norm.end_labels)
    short = draw_shards(_model(steps=150), "d1/kernel", "velocity", 20)
    assert short.norm_ax.get_xscale() == "linear"
    assert short.norm_ax.get_xlabel() == "optimizer update"


@pytest.mark.slow
def test_a_run_wide_colour_scale_is_said_on_the_colour_bar_and_each_kind_by_its_noun():
    r = _model(steps=40)
    view = draw_shards(r, "d1/kernel", "grad", 30, fixed_scale=True, headline=True)
    values = r.global_values("d1/kernel", "grad")
    assert view.heatmap.get_clim()[1] == pytest.approx(np.abs(values).max())
    assert "scale of the whole run" in view.tensor.colorbar.ax.get_ylabel()
    view.set_fixed_scale(False)
    assert view.heatmap.get_clim()[1] == pytest.approx(np.abs(values[29]).max())
    assert "whole run" not in view.tensor.colorbar.ax.get_ylabel()
    view.set_index(list(view.updates).index(1))
    assert view.figure.get_suptitle().startswith(f"gradient of 'd1/kernel' at update 1 of {r.steps[-1]}:")
    assert (
        plot_shards(r, "d1/kernel", "param", 3)
        .get_suptitle()
        .startswith(f"parameter of 'd1/kernel' after update 3 of {r.steps[-1]}:")
    )


def test_a_tall_strip_names_its_row_bands_on_the_y_axis_off_the_cells():
    """A (16, 1) kernel cut by rows: blocks that are row bands (as 07's heads) are named by
    the y axis, a chip at each band's middle left of the heatmap, over no cell, no text
    clashing."""
    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.specs import LayoutSpec, MeshSpec
    from dtsgd_viz.views.core.figure import new_figure
    from dtsgd_viz.views.shards.tensor_panel import TensorPanel
    from dtsgd_viz.views.text.clashes import clashes

    mesh = MeshSpec.create({"batch": 2, "model": 4})
    geom = shard_geometry((16, 1), LayoutSpec(("model", "unsharded"), mesh))
    fig = new_figure((style.WIDTH, 5.4))
    ax = fig.add_subplot(1, 2, 1)
    ax.set_ylabel("dim 0")
    panel = TensorPanel(ax, geom, mesh.short_device_names, np.arange(16.0)[:, None])
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    assert panel.named and [t.get_text() for t in panel.labels] == [p.label for p in panel.patches]
    assert list(ax.get_yticks()) == [2, 6, 10, 14]  # the bands' middles
    assert [t.get_text() for t in ax.get_yticklabels()] == [p.label for p in panel.patches]
    frame = ax.get_window_extent(r)
    for text, p in zip(panel.labels, panel.patches):
        _, y, _, h = p.rects[0]
        box = text.get_bbox_patch().get_window_extent(r)
        top, bottom = ax.transData.transform([(0, y), (0, y + h)])[:, 1]
        assert text.get_visible() and box.x1 <= frame.x0  # off the heatmap
        assert bottom <= box.y0 and box.y1 <= top  # beside its own band
        assert text.get_bbox_patch().get_facecolor()[:3] == to_rgb(panel.styles[p.group][0])
    assert clashes(ax, r) == []
