"""Second grading round of the shard views (issue #19): chips under the heatmap's tick
labels, names in a legible ink, leaders straight from the last point, the band named,
the dots' label clear of the dots, zero marks off the data, the coasting block's note,
a labelled tick near a log axis's bottom. Checked through the artists' data."""

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

import dtsgd_viz
from dtsgd_viz.views.mesh.layout_colors import label_ink
from dtsgd_viz.views.shards.coast import coasting
from dtsgd_viz.views.shards.plot import draw_shards
from dtsgd_viz.views.shards.ticks import BOTTOM_TICK, _bottom_gap, log_y


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


@pytest.mark.slow
def test_bottom_chips_stand_under_the_tick_labels_and_over_the_x_label(runs):
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    fig = view.figure
    r = fig.canvas.get_renderer()
    view.fit_labels(r)
    fig.draw_without_rendering()
    ax = view.heat_ax
    chips = [t.get_bbox_patch().get_window_extent(r) for t in view.tensor.labels if view.tensor.label_below(t)]
    ticks = [t.get_window_extent(r) for t in ax.get_xticklabels() if t.get_text()]
    frame = ax.get_window_extent(r)
    assert len(chips) == 4 and ticks
    assert all(frame.y0 - t.y1 < 12 for t in ticks)  # ticks by the axis
    assert all(c.y1 <= t.y0 - 1.5 for c in chips for t in ticks)  # chips under them
    label = ax.xaxis.label.get_window_extent(r)
    assert all(label.y1 <= c.y0 - 1.5 for c in chips)  # the x label under them


@pytest.mark.slow
def test_names_in_ink_leaders_straight_from_the_last_point(runs):
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    fig = view.figure
    fig.draw_without_rendering()
    view.place_end_labels()
    ax = view.norm_ax
    for t, line in zip(view.end_labels, view.lines):
        assert to_rgb(t.get_color()) == label_ink(line.get_color())
    end = (ax.transData + ax.transAxes.inverted()).transform((60, 1.0))[0]
    assert view.leader_lines
    for leader in view.leader_lines:  # two points: the last update, then the name
        x, y = leader.get_xdata(), leader.get_ydata()
        assert len(x) == 2 and x[0] == pytest.approx(end) and y[0] != y[1]
        assert x[1] < min(t.get_position()[0] for t in view.end_labels)
    r = fig.canvas.get_renderer()
    # the names close to the lines' ends: within 16 px of the last update
    last = ax.transData.transform((60, 1.0))[0]
    assert all(t.get_window_extent(r).x0 - last < 16 for t in view.end_labels)


@pytest.mark.slow
def test_the_band_is_named_and_the_step_label_leaves_the_dots_free(runs):
    view = draw_shards(runs["momentum"], "w", "velocity", 10)
    fig = view.figure
    fig.draw_without_rendering()
    view.fit_lines()
    names = {t.get_text(): t for t in view.end_labels if t.get_visible()}
    assert "range of 8 blocks" in names and "median of 8" in names
    r = fig.canvas.get_renderer()
    label = next(a for a in view.step_lines if a.get_gid() == "step-label")
    dots = next(a for a in view.step_lines if a.get_gid() == "step-dots")
    box = label.get_bbox_patch().get_window_extent(r)
    y = np.asarray(dots.get_ydata(), float)
    ok = np.isfinite(y)
    assert ok.sum() == 2
    pix = view.norm_ax.transData.transform(np.column_stack([dots.get_xdata(), y])[ok])
    radius = (dots.get_markersize() + dots.get_markeredgewidth()) / 2 * fig.dpi / 72
    for px, py in pix:  # the label's box clear of each dot
        assert (
            box.x0 >= px + radius - 0.5 or box.x1 <= px - radius + 0.5 or box.y1 <= py - radius or box.y0 >= py + radius
        )


@pytest.mark.slow
def test_the_coasting_block_is_explained_under_the_norm_panel(runs):
    view = draw_shards(runs["nesterov"], "w", "velocity", 10)
    note = view.coast_note
    assert note is not None and note.get_text().startswith("CPU:7 from update 47:")
    assert "×0.9 per update" in note.get_text() and "round-off" in note.get_text()
    assert to_rgb(note.get_color()) == label_ink(view.lines[7].get_color())
    fig = view.figure
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    assert note.get_window_extent(r).y1 <= view.norm_ax.xaxis.label.get_window_extent(r).y0 + 1
    assert note.get_window_extent(r).y0 >= 0  # inside the figure
    data = view.norm.data[view.norm_ax]
    assert np.allclose(data[47:, 7] / data[46:-1, 7], 0.9, rtol=1e-3)  # what it says
    # the block named as falling least says by which measure
    assert "falls least (fitted trend)" in view.norm_ax.get_title()
    view.set_kind("param")  # a parameter does not coast: no note
    assert view.coast_note is None
    # heavy-ball does not coast: its slot names the block alternating every update
    bounce = draw_shards(runs["momentum"], "w", "velocity", 10).coast_note
    assert bounce is None or ("round-off" not in bounce.get_text() and "alternate" in bounce.get_text())
    assert coasting(np.exp(-np.arange(30.0))[:, None], np.arange(1, 31), 0.9) is None


def _zero_first(steps=6):
    """A full recording of one (8, 8) variable on a 2x4 mesh whose velocity is 0 after
    update 1 (as 07's attention kernel), built without TensorFlow."""
    import types

    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.recorder.hostlog import assemble, entry
    from dtsgd_viz.specs import LayoutSpec, MeshSpec

    mesh = MeshSpec.create({"x": 2, "y": 4})
    geom = shard_geometry((8, 8), LayoutSpec(("x", "y"), mesh))
    held = tuple((g, tuple(d)) for g, d in enumerate(geom.replica_groups))
    w = types.SimpleNamespace(name="w", geometry=geom, dtype="float32", layout=geom.layout, held=held)
    rng, kinds, entries = np.random.default_rng(0), dtsgd_viz.KINDS, []
    for s in range(1, steps + 1):
        data = {
            ("w", k): [
                np.asarray(np.zeros((8, 8)) if (k == "velocity" and s == 1) else rng.normal(size=(8, 8)), np.float32)[b]
                for b in geom.blocks
            ]
            for k in kinds
        }
        entries.append((s, entry((s, 0.1, 1.0 / s), data, [w], kinds, "full")))
    return assemble(
        entries,
        [w],
        kinds,
        "full",
        [np.zeros((8, 8), np.float32)],
        mesh=mesh,
        momentum=0.9,
        nesterov=True,
        dropped=[],
        applied_momentum=0.9,
    )


@pytest.mark.slow
def test_zero_norms_hang_on_and_under_the_bottom_edge():
    """07: the update-1 zero circles were stacked up to 6e-5, inside the data's range."""
    r = _zero_first()
    view = draw_shards(r, "w", "velocity")
    view.figure.draw_without_rendering()
    view.fit_lines()
    heights = view.zero_marks[view.norm_ax].get_offsets()[:, 1]
    assert len(heights) == 8 and heights[0] == 0.0 and np.all(heights[1:] < 0)
    assert np.all(np.diff(heights) < 0)  # a circle per block, one under another
    label = view.zero_labels[view.norm_ax]  # named beside them: data, not decoration
    assert label.get_text() == "norm 0" and label.get_position()[0] == 1
    assert heights.min() < label.get_position()[1] < heights.max()
    fig, ax = view.figure, view.norm_ax
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    marks = view.zero_marks[ax]
    pix = marks.get_offset_transform().transform(marks.get_offsets())
    radius = 4.5 * fig.dpi / 72  # s=30: a 5.5 pt circle and its 1.4 pt edge, with air
    for t in ax.get_xticklabels():
        box = t.get_window_extent(r)
        if not t.get_text() or not t.get_visible():
            continue
        for px, py in pix:  # no tick label under a circle
            assert box.x1 < px - radius or box.x0 > px + radius or box.y1 < py - radius


def test_a_log_axis_labels_a_tick_near_its_bottom():
    ax = Figure(figsize=(4, 3)).add_subplot()
    ax.plot([1, 2, 3], [2.4e-4, 8e-4, 2.0e-3])
    log_y(ax)
    ax.figure.draw_without_rendering()
    lo, hi = ax.get_ylim()
    ticks = [t for t in ax.get_yticks() if lo <= t <= hi]
    assert _bottom_gap(ticks, lo, hi) <= BOTTOM_TICK
    assert 3e-4 in [pytest.approx(t) for t in ticks]
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "0.0003" in labels


def _twins(steps=20, same=8):
    """A full recording of one (4, 8) variable laid out [unsharded, y] on a 2x4 mesh (4
    blocks, 2 replicas each) whose blocks 2 and 3 hold the same values for the first
    ``same`` updates and part after (05's CPU:2,6 under CPU:3,7), built without
    TensorFlow."""
    import types

    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.recorder.hostlog import assemble, entry
    from dtsgd_viz.specs import LayoutSpec, MeshSpec

    mesh = MeshSpec.create({"x": 2, "y": 4})
    geom = shard_geometry((4, 8), LayoutSpec(("unsharded", "y"), mesh))
    held = tuple((g, tuple(d)) for g, d in enumerate(geom.replica_groups))
    w = types.SimpleNamespace(name="w", geometry=geom, dtype="float32", layout=geom.layout, held=held)
    rng, kinds, entries = np.random.default_rng(1), dtsgd_viz.KINDS, []
    base = rng.normal(size=(4, 2))
    for s in range(1, steps + 1):
        full = np.zeros((4, 8))
        for g, scale in enumerate([0.01, 0.003, 1.0, 1.0 if s <= same else 3.0]):
            full[:, 2 * g : 2 * g + 2] = base * scale * np.exp(-0.1 * s) * (1 + 0.3 * np.sin(s + g))
        if s <= same:
            full[:, 6:8] = full[:, 4:6]
        data = {("w", k): [np.asarray(full, np.float32)[b] for b in geom.blocks] for k in kinds}
        entries.append((s, entry((s, 0.1, 1.0 / s), data, [w], kinds, "full")))
    return assemble(
        entries,
        [w],
        kinds,
        "full",
        [np.zeros((4, 8), np.float32)],
        mesh=mesh,
        momentum=0.9,
        nesterov=True,
        dropped=[],
        applied_momentum=0.9,
    )


@pytest.mark.slow
def test_a_line_hidden_under_another_is_dashed_over_it_and_named():
    """05/06: CPU:2,6 lay exactly under CPU:3,7 for updates 1-8, unseen and unsaid."""
    from dtsgd_viz.views.shards.coincide import coincident

    r = _twins()
    view = draw_shards(r, "w", "velocity")
    fig, ax = view.figure, view.norm_ax
    fig.draw_without_rendering()
    # the blocks' norms from the recording's arrays, in pixels, independently of the view
    geom = r.geometry("w")
    values = np.asarray(r.global_values("w", "velocity"), np.float64)
    groups = [d[0] for d in geom.replica_groups]
    norms = np.stack([[np.linalg.norm(v[geom.blocks[d]]) for d in groups] for v in values])
    px = np.stack(
        [ax.transData.transform(np.column_stack([r.steps, norms[:, g]]))[:, 1] for g in range(len(groups))], 1
    )
    lw = max(line.get_linewidth() for line in view.lines) * fig.dpi / 72
    close = {(a, b): np.abs(px[:, a] - px[:, b]) <= lw for a in range(4) for b in range(a + 1, 4)}
    hidden = {k: np.flatnonzero(v) for k, v in close.items() if v.sum() >= 2}
    assert set(hidden) == {(2, 3)} and hidden[(2, 3)].tolist() == list(range(8))
    names = [p.label for p in view.patches]
    (note,) = [t for t in ax.texts if t.get_gid() == "coincide-note"]
    assert note.get_text().replace("\n", " ") == (f"{names[2]} under {names[3]} at updates 1-8 (dashed there)")
    assert view.coincide_runs[ax] == [(2, 3, 0, 7)]
    # the hidden line's stretch drawn dashed over the other, its data unmoved
    (dash,) = [line for line in ax.lines if line.get_gid() == "coincide-dash-2-3"]
    assert dash.get_zorder() > view.lines[3].get_zorder() and dash.get_linestyle() == "--"
    np.testing.assert_allclose(dash.get_xdata(), r.steps[:8])
    np.testing.assert_allclose(dash.get_ydata(), norms[:8, 2], rtol=1e-6)
    assert dash.get_color() == view.lines[2].get_color()
    # the note clear of every line and of the shown update's label, inside the panel
    renderer = fig.canvas.get_renderer()
    box = note.get_window_extent(renderer)
    assert ax.bbox.x0 <= box.x0 and box.x1 <= ax.bbox.x1
    assert ax.bbox.y0 <= box.y0 and box.y1 <= ax.bbox.y1
    from matplotlib.path import Path

    for line in ax.lines:
        if not line.get_visible() or not len(line.get_xydata()):
            continue
        path = Path(line.get_transform().transform(line.get_xydata()))
        assert not path.intersects_bbox(box, filled=False), line.get_gid()
    for t in ax.texts:
        if t is not note and t.get_text() and t.get_visible():
            assert not t.get_window_extent(renderer).overlaps(box)
    # lines that part at once: no note
    assert coincident(np.arange(5.0) * 20, np.column_stack([np.zeros(5), [0, 9, 0, 9, 0]]), 2.0) == []
    apart = draw_shards(_twins(same=1), "w", "velocity")
    assert not [t for t in apart.norm_ax.texts if t.get_gid() == "coincide-note"]
