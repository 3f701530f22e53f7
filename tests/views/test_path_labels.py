"""What the path figures write: one legend naming every mark of the paths panel, in one
row under the panels; no text on either panel overlapping another (``views.text.clashes``);
no caption over one line; a short loss on a linear axis; a projected minimum framed with
the paths."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic
from matplotlib.text import Text

import dtsgd_viz
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.paths.loss import MEAN_LABEL
from dtsgd_viz.views.text.clashes import clashes

VALLEY = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)
NARROW = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)


@pytest.fixture(scope="module")
def two():
    return {"momentum": synthetic(VALLEY, 40, 0.05, 0.9), "nesterov": synthetic(VALLEY, 40, 0.05, 0.9, True)}


@pytest.fixture(scope="module")
def three():
    return {
        "plain": synthetic(NARROW, 60, 0.05),
        "momentum": synthetic(NARROW, 60, 0.05, 0.9),
        "nesterov": synthetic(NARROW, 60, 0.05, 0.9, True),
    }


@pytest.fixture(scope="module")
def figures(two, three):
    """``plot_paths`` of tutorial 01's two runs at update 4 and of 03's three at update 5
    (its default pick too), each drawn once and laid out: the tests only read them."""
    out = {
        "two": (two, dtsgd_viz.plot_paths(two, VALLEY, step=4)),
        "three": (three, dtsgd_viz.plot_paths(three, NARROW, step=5)),
        "three-auto": (three, dtsgd_viz.plot_paths(three, NARROW)),
    }
    for _, fig in out.values():
        fig.canvas.draw()
    return out


@pytest.mark.parametrize("which", ["two", "three", "three-auto"])
@pytest.mark.slow
def test_one_legend_in_one_row_under_the_panels_names_every_mark(figures, which):
    runs, fig = figures[which]
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    update = fig.axes[0].get_title().split()[1].rstrip(":")
    names = [t.get_text() for t in legend.get_texts()]
    assert names == [*(rule_name(k) for k in runs), "start", "minimum", f"after update {update}", MEAN_LABEL]
    box = legend.get_window_extent(renderer)
    rows = {round(t.get_window_extent(renderer).y0) for t in legend.get_texts()}
    assert len(rows) == 1  # one row
    for ax in fig.axes:  # under the panels and their tick labels, inside the figure
        assert box.y1 <= ax.get_tightbbox(renderer).y0 + 1.0
    assert fig.bbox.x0 <= box.x0 and box.x1 <= fig.bbox.x1 and box.y0 >= fig.bbox.y0
    # nothing is written on the paths: no placed names, leaders or call-outs
    assert not fig.axes[0].texts


@pytest.mark.parametrize("which", ["two", "three", "three-auto"])
@pytest.mark.slow
def test_no_text_overlaps_another_and_no_caption_is_over_one_line(figures, which):
    _, fig = figures[which]
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        assert clashes(ax, renderer) == []
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    headline = fig.get_suptitle()
    for t in texts:
        if t.get_text() == headline:  # blank lines hold the settings line's room
            assert t.get_text().strip().count("\n") <= 1
        else:
            assert "\n" not in t.get_text().strip(), t.get_text()
    # the titles, the headline and the tick labels drawn (a tick past the axis' end is not) fit the figure
    unseen = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            locs = axis.get_majorticklocs()
            for loc, tick in zip(locs, axis.get_major_ticks(len(locs))):
                if not lo - 1e-9 * (hi - lo) <= loc <= hi + 1e-9 * (hi - lo):
                    unseen |= {id(tick.label1), id(tick.label2)}
    for t in texts:
        if id(t) in unseen:
            continue
        e = t.get_window_extent(renderer)
        assert fig.bbox.x0 - 0.5 <= e.x0 and e.x1 <= fig.bbox.x1 + 0.5, t.get_text()


@pytest.mark.slow
def test_the_default_pick_is_titled_and_ringed_after_the_update_findings_names(three, figures):
    _, fig = figures["three-auto"]
    found = dtsgd_viz.findings(three, NARROW)
    u, _ = found.apart
    assert fig.axes[0].get_title().startswith(f"Update {u}")
    assert "where the runs differ most" in fig.axes[0].get_title()
    for line in fig.axes[0].lines:
        gid = line.get_gid() or ""
        if gid.startswith("position:"):  # the parameters after update u, as findings measures them
            key = gid.split(":")[1]
            np.testing.assert_array_equal(line.get_xydata()[0], three[key].path("w")[u])
    step_line = [ln for ln in fig.axes[1].lines if ln.get_gid() == "step-line"][0]
    assert step_line.get_xdata()[0] == u  # the loss after u updates


def test_a_loss_within_a_decade_is_drawn_on_a_linear_axis(two):
    from dtsgd_viz.views.paths.loss import _needs_log
    from dtsgd_viz.views.paths.scene import build_scene

    scene = build_scene(two, VALLEY, None)
    assert _needs_log(scene)
    short = {k: synthetic(surfaces.RotatedQuadratic(), 3, 0.01) for k in ("a", "b")}
    fig = dtsgd_viz.plot_paths(short, surfaces.RotatedQuadratic(), step=2)
    assert fig.axes[1].get_yscale() == "linear" and "log" not in fig.axes[1].get_title()


def test_a_projected_minimum_near_the_paths_is_framed_with_them():
    from dtsgd_viz.views.paths.scene import _near

    coords = np.array([[0.0, 0.0], [1.0, 1.0]])
    kept = _near(np.array([[1.4, 0.5], [9.0, 9.0]]), coords)
    assert len(kept) == 1 and kept[0].tolist() == [[1.4, 0.5]]
