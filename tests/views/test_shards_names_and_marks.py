"""The shard view's names and numbers on the real optimizer's runs (60 updates of plain
sharded-quadratic SGD with momentum and Nesterov): the chips under the heatmap's tick
labels and over its x label, each norm line named once at its end in a legible ink, the
titles' numbers those of the public functions recomputed here from the shards' values,
and no text running into another."""

import numpy as np
import pytest
from matplotlib.colors import to_rgb

import dtsgd_viz
from dtsgd_viz.views.mesh.layout_colors import lightness_of
from dtsgd_viz.views.shards.findings import norm_change_text, spread_text
from dtsgd_viz.views.shards.plot import draw_shards
from dtsgd_viz.views.text.clashes import clashes


@pytest.fixture(scope="module")
def runs():
    q = dtsgd_viz.surfaces.ShardedQuadratic()
    return dtsgd_viz.run(
        q,
        {
            "momentum": dict(learning_rate=0.5, momentum=0.9),
            "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True),
        },
        steps=60,
    )


def _block_norms(r, kind="velocity"):
    """(updates, blocks): each block's L2 norm, from the shards' values (not the view)."""
    shards = np.asarray(r.shard_values("w", kind), np.float64)
    firsts = [d[0] for d in r.geometry("w").replica_groups]
    return np.sqrt(np.sum(shards[:, firsts].reshape(len(r), len(firsts), -1) ** 2, axis=-1))


@pytest.mark.slow
def test_each_chip_sits_off_the_cells_the_top_row_above_the_heatmap_the_bottom_row_below(runs):
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    fig = view.figure
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    ax = view.heat_ax
    frame = ax.get_window_extent(r)
    assert view.tensor.named and len({p.rects[0][1] for p in view.patches}) == 2  # two rows of blocks
    for chip, p in zip(view.tensor.labels, view.patches):
        x, y, w, _ = p.rects[0]
        box = chip.get_bbox_patch().get_window_extent(r)
        if y == 0:  # over the heatmap's top edge, off the data
            assert box.y0 >= frame.y1
        else:  # under its bottom edge, off the data, clear of the x tick labels and the x label
            assert box.y1 <= frame.y0
            for text in [*ax.get_xticklabels(), ax.xaxis.label]:
                assert not text.get_text() or not box.overlaps(text.get_window_extent(r))
        left, right = ax.transData.transform([(x, 0), (x + w, 0)])[:, 0]  # each chip as wide as its block at most
        assert left <= box.x0 and box.x1 <= right


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["momentum", "nesterov"])
def test_each_line_is_named_once_at_its_end_in_a_legible_ink(runs, rule):
    """Nesterov's ends lie far apart, momentum's 8 within a few name heights: either way every
    line is named, in a column that keeps the order of the ends."""
    r = runs[rule]
    view = draw_shards(r, "w", "velocity", 10)
    fig = view.figure
    fig.draw_without_rendering()
    rd = fig.canvas.get_renderer()
    frame = view.norm_ax.get_window_extent(rd)
    last = _block_norms(r)[-1]
    # the median line the title speaks of: the median block's norm at each update
    median = np.median(_block_norms(r), axis=1)
    np.testing.assert_allclose(view.norm.median.get_ydata(), median, rtol=1e-5)
    names = [p.label for p in view.patches]
    assert [t.get_text() for t in view.norm.end_labels] == [*names, "median"]
    named, ends = list(range(len(names))), [*last, median[-1]]
    for t, g in zip(view.norm.end_labels, named):
        face = view.norm.lines[g].get_color()  # the name on a chip of its line's colour, in an ink that reads on it
        assert t.get_bbox_patch().get_facecolor()[:3] == to_rgb(face)
        assert abs(lightness_of(t.get_color()) - lightness_of(face)) >= 45
    for t in view.norm.end_labels:
        assert t.get_window_extent(rd).x0 >= frame.x1  # right of the lines' ends
    # pushed apart as little as needed, the names keep the order of the lines' ends
    heights = [t.get_window_extent(rd).y0 for t in view.norm.end_labels]
    assert list(np.argsort(heights, kind="stable")) == list(np.argsort(ends, kind="stable"))
    for ax in fig.axes:
        assert clashes(ax, rd) == []


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["momentum", "nesterov"])
def test_the_titles_numbers_are_the_public_functions_of_the_shards(runs, rule):
    r = runs[rule]
    norms = _block_norms(r)
    for step in (1, 10, 60):
        view = draw_shards(r, "w", "velocity", step)
        names = [p.label for p in view.patches]
        finding = view.figure.get_suptitle().strip().replace("\n", " ")
        assert finding == f"velocity of 'w' after update {step} of 60: {spread_text(norms[step - 1], names)}"
        said, ratio = _factor(finding, "span"), norms[step - 1].max() / norms[step - 1].min()
        assert _says(said, ratio)
        assert f"largest {names[int(np.argmax(norms[step - 1]))]}" in finding
        assert view.norm_ax.get_title() == norm_change_text(norms, r.steps)
    median = np.median(norms, axis=1)  # the median block's norm, each update, as a notebook computes it
    title = view.norm_ax.get_title()
    said, fall = _factor(title, "falls"), median[0] / median[-1]
    assert said == float(f"{fall:.2g}")  # its two digits, not another median's (2.7x said for 2.76)
    assert title.endswith(f"from update {r.steps[0]} to {r.steps[-1]}")  # the range the ratio spans


def _factor(text, word):
    """The factor ``text`` says after ``word``: "span 7.4x", "falls 400x", "falls 2.5e7x" (a float)."""
    import re

    m = re.search(rf"{word} ([0-9.]+(?:e[0-9]+)?)x", text)
    assert m, text
    return float(m.group(1))


def _says(said, factor):
    """Whether a title's factor (``_factor``) is ``factor`` to its 2 digits."""
    return said == pytest.approx(factor, rel=0.05)


def test_close_ends_are_each_named():
    """8 lines ending within a few label heights (08's 8 blocks): each block and the median
    named, in the order of their ends."""
    from helpers import synthetic_recording

    from dtsgd_viz.views.shards.findings import norm_panel_text

    r = synthetic_recording.recording([("w", (8, 16), ("batch", "model"))], steps=12, seed=3)
    view = draw_shards(r, "w", "velocity")
    names = [p.label for p in view.patches]
    last = _block_norms(r)[-1]
    view.figure.draw_without_rendering()
    labels = view.norm.end_labels
    assert [t.get_text() for t in labels] == [*names, "median"]
    heights = [t.get_window_extent().y0 for t in labels]
    ends = [*last, np.median(last)]
    assert list(np.argsort(heights, kind="stable")) == list(np.argsort(ends, kind="stable"))
    assert view.norm_ax.get_title() == norm_panel_text(r, "w", "velocity")


@pytest.mark.slow
def test_ends_far_apart_are_each_named(runs):
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    assert {t.get_text() for t in view.norm.end_labels} == {*(p.label for p in view.patches), "median"}
