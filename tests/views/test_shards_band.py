"""The norm panel's band (nearly coinciding blocks drawn as min..max with their median,
the extremes as lines), leader lines to end labels that moved, and chips beside a tall
strip: checked through the artists' data."""

import numpy as np
import pytest
from matplotlib.colors import to_rgb

import dtsgd_viz
from dtsgd_viz.views.mesh.layout_colors import label_ink
from dtsgd_viz.views.shards.labels import _roles
from dtsgd_viz.views.shards.plot import draw_shards
from dtsgd_viz.views.shards.stats import band_of
from dtsgd_viz.views.text.direct import READABLE_GAP, leaders


@pytest.fixture(scope="module")
def runs():
    """The demo's heavy-ball run (8 blocks bouncing together) and a Nesterov run whose
    blocks fan out over decades."""
    q = dtsgd_viz.surfaces.ShardedQuadratic()
    return dtsgd_viz.run(
        q,
        {
            "momentum": dict(learning_rate=0.5, momentum=0.9),
            "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True),
        },
        steps=60,
    )


def _gid(ax, gid):
    return [a for a in [*ax.lines, *ax.collections] if a.get_gid() == gid]


def test_band_of_follows_the_blocks_spread():
    t = np.linspace(0, 3, 40)[:, None]
    close = np.exp(-t) * (1 + 0.1 * np.arange(8))
    lo, med, hi = band_of(close)
    np.testing.assert_allclose(lo, close.min(1))
    np.testing.assert_allclose(hi, close.max(1))
    assert band_of(close[:, :4]) is None  # four lines read one by one
    assert band_of(np.exp(-t * np.arange(1, 9))) is None  # fanning out: every line


@pytest.mark.slow
def test_coinciding_blocks_are_one_band_and_their_extremes(runs):
    view = draw_shards(runs["momentum"], "w", "velocity", 10)
    ax, data = view.norm_ax, view.norm.data[view.norm_ax]
    (band,) = _gid(ax, "norm-band")
    (median,) = _gid(ax, "norm-median")
    # the median on the log axis: of the log norms (8 blocks: the middle two's geometric mean)
    np.testing.assert_allclose(median.get_ydata(), 10 ** np.nanmedian(np.log10(data), 1), rtol=1e-5)
    ys = np.concatenate([p.vertices[:, 1] for p in band.get_paths()])
    assert np.isclose(ys.min(), np.nanmin(data), rtol=1e-4)
    assert np.isclose(ys.max(), np.nanmax(data), rtol=1e-4)
    roles = view.band_blocks
    assert roles == _roles(data, view.index, view.updates)
    # the lines: the highest and the lowest block at the shown update (update 10), the
    # two the figure's title names; heavy-ball's blocks share one rate: none "falls least"
    i = list(view.updates).index(10)
    hi, lo = int(np.nanargmax(data[i])), int(np.nanargmin(data[i]))
    assert roles == {hi: "highest at update 10", lo: "lowest at update 10"}
    heads = [t.get_text() for t in [*view.figure.texts, *view.figure.artists] if hasattr(t, "get_text")]
    assert any(f"({view.patches[hi].label} to {view.patches[lo].label})" in h for h in heads)
    assert "least" not in view.norm_ax.get_title()
    assert "heavy-ball" in " ".join(heads)
    dots = _gid(ax, "step-dots")[0]  # a dot on each drawn line only
    assert np.isfinite(dots.get_ydata()).sum() == 2
    for g, line in enumerate(view.lines):  # only the extremes stay drawn as lines
        assert line.get_visible() == (g in roles)
    shown = {t.get_text(): t for t in view.end_labels if t.get_visible()}
    assert f"median of {len(view.lines)}" in shown
    assert f"{view.patches[hi].label} {roles[hi]}" in shown
    # the other blocks are named by the band (its median and range), a swing by its swatch
    assert len(shown) == len(roles) + 2 + len(view.bouncing)
    range_label = shown[f"range of {len(view.lines)} blocks"]
    assert range_label.get_bbox_patch() is not None  # on a swatch of the band's grey
    assert to_rgb(range_label.get_bbox_patch().get_facecolor()) == to_rgb(_gid(ax, "norm-band")[0].get_facecolor()[0])
    label = shown[f"{view.patches[hi].label} {roles[hi]}"]
    assert to_rgb(label.get_color()) == label_ink(view.lines[hi].get_color())
    view.set_step(60)  # another update: the lines follow the highest and lowest there
    hi, lo = int(np.nanargmax(data[-1])), int(np.nanargmin(data[-1]))
    assert view.band_blocks == {hi: "highest", lo: "lowest"}
    assert {t.get_text() for t in view.end_labels if t.get_visible()} == {
        f"{view.patches[hi].label} highest",
        f"{view.patches[lo].label} lowest",
        f"median of {len(view.lines)}",
        f"range of {len(view.lines)} blocks",
    }


@pytest.mark.slow
def test_fanning_blocks_keep_their_lines_and_names_a_text_height_apart(runs):
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    ax = view.norm_ax
    assert view.band_blocks is None and not _gid(ax, "norm-band")
    assert all(line.get_visible() for line in view.lines)
    fig = view.figure
    fig.draw_without_rendering()
    view.place_end_labels()
    r = fig.canvas.get_renderer()
    boxes = sorted((t.get_window_extent(r) for t in view.end_labels), key=lambda b: b.y0)
    size_px = view.end_labels[0].get_fontsize() * fig.dpi / 72
    for a, b in zip(boxes, boxes[1:]):
        assert (b.y0 + b.y1) / 2 - (a.y0 + a.y1) / 2 >= 0.99 * READABLE_GAP * size_px
    for line in view.leader_lines:  # from a line's end to the name that moved
        y = line.get_ydata()
        name = next(t for t in view.end_labels if np.isclose(t.get_position()[1], y[-1]))
        assert label_ink(line.get_color()) == to_rgb(name.get_color())
        assert line.get_xdata()[-1] < name.get_position()[0]


def test_leaders_only_for_names_that_moved():
    from matplotlib.figure import Figure

    ax = Figure().add_subplot()
    out = leaders(ax, [0.2, 0.5, None], [0.3, 0.5, 0.9], ["r", "g", "b"], min_shift=0.01)
    assert len(out) == 1 and list(out[0].get_ydata()) == [0.2, 0.2, 0.3]


def test_a_tall_strip_has_its_chips_beside_it_at_each_blocks_middle():
    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.specs import LayoutSpec, MeshSpec
    from dtsgd_viz.views.core import style
    from dtsgd_viz.views.shards.tensor_panel import draw_tensor

    mesh = MeshSpec.create({"batch": 2, "model": 4})
    geom = shard_geometry((16, 1), LayoutSpec(("model", "unsharded"), mesh))
    from dtsgd_viz.views.core.figure import new_figure

    fig = new_figure((style.WIDTH, 5.4))
    ax = fig.add_subplot(1, 2, 1)
    panel = draw_tensor(ax, geom, mesh.short_device_names, np.arange(16.0)[:, None])
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    panel.fit_labels(r)
    assert panel.side
    frame = ax.get_window_extent(r)
    for text, (_x, y, _w, h) in zip(panel.labels, panel.label_rects):
        box = text.get_window_extent(r)
        assert text.get_visible() and box.x1 < frame.x0  # beside the strip, left
        mid = ax.transData.transform((0, y + h / 2))[1]
        assert abs((box.y0 + box.y1) / 2 - mid) < 1.0  # at its block's middle
        for edge in (y, y + h):  # clear of both boundaries
            assert not box.y0 <= ax.transData.transform((0, edge))[1] <= box.y1
    fig.draw_without_rendering()
    label = ax.yaxis.label.get_window_extent(r)
    assert all(label.x1 <= t.get_window_extent(r).x0 for t in panel.labels)


def test_dots_at_the_shown_update_stay_a_dot_apart_and_the_label_says_which():
    """01's eight block norms at update 10 piled their dots on one another: the dots kept
    are the highest and lowest block and others only a dot apart; the label names them."""
    from dtsgd_viz.views.shards.dots import DOT_MIN, DOT_SIZE, spaced, stacked, zigzags

    keep = spaced(np.array([0.0, 3.0, 6.0, 40.0]), np.array([1.0, 2.0, 3.0, 9.0]), 8.0)
    assert keep.tolist() == [True, False, False, True]
    assert stacked(np.array([2, 2, 5])).tolist() == pytest.approx([0.03, 0.075, 0.03])
    assert zigzags(2.0 + np.cos(np.pi * np.arange(40))) and not zigzags(np.exp(-np.arange(40.0)))
    assert 0 < DOT_MIN < DOT_SIZE  # crowded dots drawn smaller, never dropped


@pytest.mark.slow
def test_hidden_lines_and_the_band_set_no_empty_decades(runs):
    """Heavy-ball's band (the docs' momentum figure) reached 1e-5 through hidden blocks'
    single-update dips: the y range is that of the lines drawn; zig-zag lines thin."""
    view = draw_shards(runs["momentum"], "w", "velocity", 10)
    ax = view.norm_ax
    shown = [ln for ln in view.lines if ln.get_visible()]
    ys = np.concatenate([np.asarray(ln.get_ydata(), float) for ln in [*shown, *_gid(ax, "norm-median")]])
    ys = ys[np.isfinite(ys) & (ys > 0)]
    lo, hi = ax.get_ylim()
    assert lo <= ys.min() and np.log10(ys.min() / lo) < 0.3  # no empty decade below
    assert hi >= ys.max() and np.log10(hi / ys.max()) < 0.3
    assert all(ln.get_linewidth() < 1.6 for ln in shown)  # bouncing: thin, not a band
    dots = _gid(ax, "step-dots")[0]
    assert np.isfinite(dots.get_ydata()).sum() == 2  # the two lines drawn, no more


@pytest.mark.slow
def test_fanning_lines_are_thin_and_the_heatmap_ticks_stay_by_the_axis(runs):
    """01's Nesterov picture: eight lines drawn one by one are thinner; the x ticks of
    the heatmap sit on the row of the chips below it (between them), by the axis."""
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    assert all(ln.get_linewidth() <= 1.1 for ln in view.lines)
    fig = view.figure
    r = fig.canvas.get_renderer()
    ax = view.heat_ax
    chips = [t.get_window_extent(r) for t in view.tensor.labels if view.tensor.label_below(t)]
    ticks = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text()]
    assert chips and ticks
    frame = ax.get_window_extent(r)
    assert all(frame.y0 - t.y1 < 12 for t in ticks)  # by the axis
    assert not any(c.overlaps(t) for c in chips for t in ticks)
    dots = [ln for ln in ax.figure.axes[1].lines if ln.get_gid() == "step-dots"] or [
        ln for ln in view.norm_ax.lines if ln.get_gid() == "step-dots"
    ]
    y = np.asarray(dots[0].get_ydata(), float)
    pix = view.norm_ax.transData.transform(np.column_stack([np.full(len(y), 10.0), np.nan_to_num(y, nan=1.0)]))[:, 1]
    kept = np.sort(pix[np.isfinite(y)])
    # dots are dropped only where lines coincide (within a line width); the others stay
    width = max(ln.get_linewidth() for ln in view.lines if ln.get_visible())
    assert len(kept) >= 2 and np.diff(kept).min() >= width * fig.dpi / 72


@pytest.mark.slow
def test_the_demo_band_panel_reads(runs):
    """docs_shards-momentum-update010: the range band, CPU:7's shaded swing, the median
    and CPU:3 crowded one panel, the swing explained only in a footnote."""
    view = draw_shards(runs["momentum"], "w", "velocity", 10)
    fig, ax = view.figure, view.norm_ax
    assert view.band_blocks is not None and view.bouncing
    (band,) = _gid(ax, "norm-band")
    ribbons = [c for c in ax.collections if str(c.get_gid()).startswith("norm-ribbon")]
    assert band.get_alpha() <= 0.3 and all(c.get_alpha() <= 0.3 for c in ribbons)
    (median,) = _gid(ax, "norm-median")
    for g in view.band_blocks:  # the named blocks over the median, not under it
        assert view.lines[g].get_zorder() > median.get_zorder()
    # the swing named beside its line, on a swatch of its colour; no footnote for it
    assert view.coast_note is None
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    shown = [t for t in view.end_labels if t.get_visible()]
    texts = {t.get_gid(): t for t in shown}
    for g in view.bouncing:
        swing = texts[f"end-label-swing-{view.bouncing.index(g)}"]
        # its period as the line's own turns give it (two over the share of updates where it turns)
        y = np.asarray(view.lines[g].get_ydata(), np.float64)
        y = y[np.isfinite(y) & (y > 0)]
        d = np.sign(np.diff(y))
        d = d[d != 0]
        period = 2.0 / np.mean(d[1:] != d[:-1])
        assert swing.get_text() == f"{view.patches[g].label} swings every ~{period:.0f} updates"
        assert 3.5 <= period <= 5.0  # the demo's heavy-ball run: up two, down two
        assert to_rgb(swing.get_bbox_patch().get_facecolor()) == to_rgb(view.lines[g].get_color())
    # the names apart from each other and right of the panel, clear of the band's edges
    boxes = [t.get_window_extent(renderer) for t in shown]
    for i, a in enumerate(boxes):
        assert a.x0 >= ax.bbox.x1
        for b in boxes[i + 1 :]:
            assert not a.overlaps(b)
    # the dots' label inside the panel, off the band's edges and the lines
    (step,) = [t for t in ax.texts if t.get_gid() == "step-label"]
    box = step.get_window_extent(renderer)
    from matplotlib.path import Path

    for line in [median, *[view.lines[g] for g in view.band_blocks]]:
        assert not Path(line.get_transform().transform(line.get_xydata())).intersects_bbox(box, filled=False)
    edge = band.get_paths()[0].transformed(band.get_transform())
    assert not edge.intersects_bbox(box, filled=True)
