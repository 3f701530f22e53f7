"""The shard figures as a reader sees them at the notebook's size: the shown update's
line thin and grey under white-edged dots, stacked update panels titled at title size
over their heatmaps, a long run's update axis on a log scale (its first updates not
squashed against the edge), a pale heatmap on a run-wide colour scale said so, and each
kind named by its noun. Plain-data recordings (no TensorFlow)."""

import matplotlib
import numpy as np
import pytest
from helpers import synthetic_recording
from matplotlib.colors import to_rgb

from dtsgd_viz.views.core import style
from dtsgd_viz.views.shards.lines import STEP_LINE_WIDTH, log_x
from dtsgd_viz.views.shards.plot import draw_shards, plot_shards
from dtsgd_viz.views.shards.update import plot_update_shards

matplotlib.use("Agg")

MODEL = [("d1/kernel", (4, 16), ("unsharded", "model")), ("d2/kernel", (16, 1), ("model", "unsharded"))]


def _model(steps=20, mode="full", updates=None, seed=0):
    """The tutorials' MLP kernels on the helper's 2x4 mesh (``synthetic_recording``)."""
    return synthetic_recording.recording(MODEL, steps, mode, updates=updates, seed=seed)


def _gid(ax, gid):
    return next(a for a in [*ax.lines, *ax.texts] if a.get_gid() == gid)


def test_the_shown_update_is_a_thin_grey_line_under_white_edged_dots():
    view = draw_shards(_model(), "d1/kernel", "velocity", 10)
    line, dots = _gid(view.norm_ax, "step-line"), _gid(view.norm_ax, "step-dots")
    assert list(line.get_xdata()) == [10, 10]
    r, g, b = to_rgb(line.get_color())
    assert abs(r - g) < 0.05 and abs(g - b) < 0.05 and 0.35 < r < 0.75  # a mid grey
    assert line.get_linewidth() == STEP_LINE_WIDTH < 1.6  # thinner than the norm lines
    assert dots.get_zorder() > line.get_zorder()
    assert to_rgb(dots.get_markeredgecolor()) == (1.0, 1.0, 1.0)
    assert dots.get_markersize() > 2 * line.get_linewidth()  # a dot stands out of the line
    r, g, b = to_rgb(dots.get_markerfacecolor())
    assert max(r, g, b) < 0.3  # dark dots on the grey line
    # each dot's middle in its block's line colour (which block a dot is reads)
    core = view.dot_colors[view.norm_ax]
    y = np.asarray(dots.get_ydata(), float)
    kept = np.flatnonzero(np.isfinite(y))
    np.testing.assert_allclose(core.get_offsets()[:, 1], y[kept])
    assert [to_rgb(c) for c in core.get_facecolors()] == [to_rgb(view.lines[g].get_color()) for g in kept]
    assert core.get_zorder() > dots.get_zorder() and core.get_sizes()[0] < dots.get_markersize() ** 2


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
    assert "summed over 'batch' (2 devices)" in axes[2].get_title().replace("\n", " ")


@pytest.mark.slow
def test_a_long_run_has_a_log_update_axis_a_short_one_a_linear_one():
    long = _model(mode="stats", steps=500, updates=np.arange(4, 2001, 4))
    view = draw_shards(long, "d1/kernel", "velocity")
    assert log_x(long.steps) and not log_x(np.arange(1, 151))
    bottom = view.stat_axes["max |x|"]
    for ax in view.stat_axes.values():
        assert ax.get_xscale() == "log"
        lo, hi = ax.get_xlim()
        assert lo < 4 and hi > 2000  # every update inside, a margin each side
    assert bottom.get_xlabel() == "optimizer update (log scale)"
    ticks = [t for t in bottom.get_xticks() if bottom.get_xlim()[0] <= t <= bottom.get_xlim()[1]]
    assert 3 <= len(ticks) <= 7 and all(float(t).is_integer() for t in ticks)
    # the first 200 updates take a good part of the width (on a linear axis: a tenth)
    ax = view.line_ax
    frac = (ax.transData + ax.transAxes.inverted()).transform([(4, 1e-3), (200, 1e-3)])[:, 0]
    assert frac[1] - frac[0] > 0.4
    # the names' leaders start at the lines' ends, on the log axis too
    view.figure.draw_without_rendering()
    end = (ax.transData + ax.transAxes.inverted()).transform((2000, 1e-3))[0]
    leaders = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("end-leader")]
    assert leaders
    for leader in leaders:  # in axes fractions
        assert leader.get_xdata()[0] == pytest.approx(end, abs=0.01)
    short = draw_shards(_model(steps=150), "d1/kernel", "velocity", 20)
    assert short.norm_ax.get_xscale() == "linear"
    assert short.norm_ax.get_xlabel() == "optimizer update"


@pytest.mark.slow
def test_a_pale_heatmap_on_the_run_wide_scale_says_how_far_its_values_reach():
    r = _model(steps=40)  # values decay 0.9 per update: update 30 is pale on the run's scale
    view = draw_shards(r, "d1/kernel", "grad", 30, fixed_scale=True, headline=True)
    values = r.global_values("d1/kernel", "grad")
    limit, top = np.abs(values).max(), np.abs(values[29]).max()
    assert top < 0.25 * limit
    title = view.heat_ax.get_title()
    assert f"(±{limit:.2g})" in title and f"reach only {top:.2g}" in title
    view.set_step(1)  # the first update fills the scale: no note
    assert "reach only" not in view.heat_ax.get_title()
    assert "colour scale fixed over the run" in view.heat_ax.get_title()
    view.set_fixed_scale(False)
    assert "colour scale" not in view.heat_ax.get_title()
    assert view.figure.get_suptitle().startswith("gradient of 'd1/kernel' at update 1: ")
    assert (
        plot_shards(r, "d1/kernel", "param", 3).get_suptitle().startswith("parameter of 'd1/kernel' after update 3: ")
    )
