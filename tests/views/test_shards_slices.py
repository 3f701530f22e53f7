"""Round-3 figure fixes of the shard view, checked through the artists: a rank-3 tensor
whose blocks are whole d0 slices has no "d0=k" ticks under its chips, and its note says
what the chips stand for; the step label names the dots; a hump is worded "rises Nx to
a peak at update k"."""

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz.views.shards.plot import draw_shards
from dtsgd_viz.views.shards.stats import change_text
from dtsgd_viz.views.shards.tensor_panel import blocks_are_slices


def _synthetic(dims, shape, specs, steps=6, seed=0):
    """A full recording on a mesh, built without TensorFlow (as a recorder's flush hands
    its host entries over)."""
    import types

    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.recorder.hostlog import assemble, entry
    from dtsgd_viz.specs import LayoutSpec, MeshSpec

    mesh = MeshSpec.create(dims)
    geom = shard_geometry(shape, LayoutSpec(specs, mesh))
    held = tuple((g, tuple(d)) for g, d in enumerate(geom.replica_groups))
    w = types.SimpleNamespace(name="w", geometry=geom, dtype="float32", layout=geom.layout, held=held)
    rng, kinds, entries = np.random.default_rng(seed), dtsgd_viz.KINDS, []
    for s in range(1, steps + 1):
        data = {
            ("w", k): [np.asarray(rng.normal(size=shape) * 0.8**s, np.float32)[b] for b in geom.blocks] for k in kinds
        }
        entries.append((s, entry((s, 0.1, 1.0 / s), data, [w], kinds, "full")))
    return assemble(
        entries,
        [w],
        kinds,
        "full",
        [np.zeros(shape, np.float32)],
        mesh=mesh,
        momentum=0.9,
        nesterov=True,
        dropped=[],
        applied_momentum=0.9,
    )


def _view(shape, specs):
    r = _synthetic({"batch": 2, "model": 4}, shape, specs, 6)
    view = draw_shards(r, "w", "velocity", step=3)
    view.figure.draw_without_rendering()
    return view


@pytest.mark.slow
def test_blocks_that_are_d0_slices_have_chips_not_d0_ticks():
    view = _view((4, 4, 16), ("model", "unsharded", "unsharded"))
    panel, ax = view.tensor, view.heat_ax
    assert blocks_are_slices(panel.patches, (4, 4, 16))
    assert [t.get_text() for t in ax.get_yticklabels() if t.get_text()] == []
    assert "each block is one d0 slice" in " ".join(ax.get_xlabel().split())
    assert "white lines" not in ax.get_xlabel()
    renderer = view.figure.canvas.get_renderer()
    label = ax.yaxis.label.get_window_extent(renderer)
    for chip in panel.labels:  # the y label stands left of the chips, not under them
        if chip.get_visible():
            assert label.x1 <= chip.get_window_extent(renderer).x0 + 0.5


@pytest.mark.slow
def test_blocks_of_several_d0_slices_keep_their_d0_ticks():
    view = _view((8, 2, 4), ("model", "unsharded", "unsharded"))
    assert not blocks_are_slices(view.tensor.patches, (8, 2, 4))
    ticks = [t.get_text() for t in view.heat_ax.get_yticklabels() if t.get_text()]
    assert ticks and all(t.startswith("d0=") for t in ticks)
    assert "white lines separate d0 slices" in " ".join(view.heat_ax.get_xlabel().split())


@pytest.mark.slow
def test_the_step_label_names_the_dots_at_the_shown_update():
    view = _view((8, 8), ("batch", "model"))
    label = next(a for a in view.step_lines if a.get_gid() == "step-label")
    dots = next(a for a in view.step_lines if a.get_gid() == "step-dots")
    x = view.updates[view.index]
    from dtsgd_viz.views.shards.labels import dots_note

    note = dots_note(view.norm.data[view.norm_ax][view.index], dots.get_ydata(), [p.label for p in view.patches])
    assert " ".join(label.get_text().split()) == " ".join(f"update {x}{note}".split())
    assert note in (
        " (dots: block norms)",
        " (dots: highest, lowest)",
        " (dots: block norms, two coincide)",
        " (dots: block norms, close ones share a dot)",
    ) or (note.startswith(" (dots: block norms;\n") and note.endswith(" coincide)"))
    assert set(dots.get_xdata()) == {x} == {label.get_position()[0]}
    # the label's white box never covers a dot: it starts past the dots' right edge
    fig = view.figure
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    box = label.get_bbox_patch().get_window_extent(r)
    y = np.asarray(dots.get_ydata(), float)
    pix = view.norm_ax.transData.transform(np.column_stack([dots.get_xdata(), y]))[np.isfinite(y)]
    radius = (dots.get_markersize() + dots.get_markeredgewidth()) / 2 * fig.dpi / 72
    for px, py in pix:
        assert (
            box.x0 >= px + radius - 0.5 or box.x1 <= px - radius + 0.5 or box.y1 <= py - radius or box.y0 >= py + radius
        )


def test_the_dots_note_says_when_two_blocks_share_a_dot():
    from dtsgd_viz.views.shards.labels import dots_note

    assert dots_note([1.0, 2.0, 2.0, 4.0], [1.0, 2.0, np.nan, 4.0]) == (" (dots: block norms, two coincide)")
    assert dots_note([1.0, 2.0, 2.0, 2.0, 4.0], [1.0, 2.0, np.nan, np.nan, 4.0]) == (
        " (dots: block norms, close ones share a dot)"
    )
    assert dots_note([1.0, 2.0, 4.0], [1.0, np.nan, 4.0]) == " (dots: highest, lowest)"
    # with the blocks' names: which share the dot (the hidden one with the kept nearest it)
    assert dots_note([1.0, 2.0, 2.1, 4.0], [1.0, np.nan, 2.1, 4.0], ["CPU:0", "CPU:1", "CPU:2", "CPU:3"]) == (
        " (dots: block norms;\nCPU:1 and CPU:2 coincide)"
    )


def test_a_hump_says_how_far_it_rises_and_where_it_peaks():
    d = np.array([[1.0, 1.0], [300.0, 300.0], [100.0, 100.0]])
    text = change_text(d, [1, 2, 3], ["CPU:0", "CPU:1"])
    assert text == "median block norm rises 300x to a peak at update 2, then falls 3x"
