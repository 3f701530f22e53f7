"""Rank-3 tensors in the shard view, checked through the artists: a tensor whose blocks
are whole d0 slices has no "d0=k" ticks under its chips (the chips name the slices), one
whose blocks hold several slices keeps them; and the norm panel's finding of a hump says
how far it rises, from which update, where it peaks and how far it falls."""

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz.views.shards.findings import change_text, norm_change_text
from dtsgd_viz.views.shards.plot import draw_shards
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
def test_blocks_that_are_d0_slices_are_named_by_the_y_axis_not_d0_ticks():
    """07's heads: each block a d0 slice, a row band; its chip is the y tick label at its
    middle, beside the heatmap, over no cell."""
    view = _view((4, 4, 16), ("model", "unsharded", "unsharded"))
    panel, ax = view.tensor, view.heat_ax
    assert blocks_are_slices(panel.patches, (4, 4, 16))
    assert [t.get_text() for t in ax.get_yticklabels()] == [p.label for p in panel.patches]
    assert list(ax.get_yticks()) == [2, 6, 10, 14]  # the bands' middles
    assert ax.get_ylabel() == "rows: d0 x d1 flattened" and panel.named
    renderer = view.figure.canvas.get_renderer()
    heat = ax.get_window_extent(renderer)
    for chip, p in zip(panel.labels, panel.patches):
        assert chip.get_visible()
        box = chip.get_bbox_patch().get_window_extent(renderer)
        _, y, _, h = p.rects[0]
        top, bottom = ax.transData.transform([(0, y), (0, y + h)])[:, 1]
        assert box.x1 <= heat.x0 and bottom <= box.y0 and box.y1 <= top  # left of its own band


@pytest.mark.slow
def test_blocks_of_several_d0_slices_keep_their_d0_ticks():
    view = _view((8, 2, 4), ("model", "unsharded", "unsharded"))
    assert not blocks_are_slices(view.tensor.patches, (8, 2, 4))
    ticks = [t.get_text() for t in view.heat_ax.get_yticklabels() if t.get_text()]
    assert ticks and all(t.startswith("d0=") for t in ticks)
    assert view.heat_ax.get_ylabel() == "rows: d0 x d1 flattened"


def test_a_hump_says_how_far_it_rises_and_where_it_peaks():
    d = np.array([[1.0, 1.0], [300.0, 300.0], [100.0, 100.0]])
    assert (
        change_text(d, [1, 2, 3], ["CPU:0", "CPU:1"])
        == "median block norm rises 300x to a peak at update 2, then falls 3x"
    )
    assert norm_change_text(d, [1, 2, 3]) == "median rises 300x to update 2, then falls 3x"
    # norms of 0 at update 1 (a log axis cannot draw them): the rise is from update 2
    zero_first = np.vstack([np.zeros((1, 2)), d])
    assert norm_change_text(zero_first, [1, 2, 3, 4]) == "median rises 300x from update 2 to 3, then falls 3x"
    assert norm_change_text(d[[0, 2]], [1, 2]) == "median grows 100x from update 1 to 2"
    assert norm_change_text(np.array([[1.0], [1.33]]), [1, 2]) == "median stays within 1.5x from update 1 to 2 (1.3x)"
    # a decimated run that starts at update 4 says so (06: "over 2000 updates" read as from update 1)
    assert norm_change_text(d[[0, 2]], [4, 2000]) == "median grows 100x from update 4 to 2000"
