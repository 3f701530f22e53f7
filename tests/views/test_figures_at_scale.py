"""The shard, memory and update-shard figures read at 64 devices (and plot_shards at
256 for a layout no machine here has): no text runs into another or into a legend, no
tick labels merge, and a plain ``fig.savefig(path)`` clips nothing.

Found on the views as they were: at 64 devices ``plot_shards`` shrank the heatmap to a
thumbnail and merged its tick labels ("08162432405664"), the titles and the device list
were clipped (already at 32); ``plot_memory``'s 64 tick labels smeared and its "as laid
out: ... along model" label ran into its legend; ``plot_update_shards``' ticks ran
together; ``savefig`` without ``bbox_inches="tight"`` cut titles at the right edge."""

import pytest
from helpers.figure_checks import clashes, clipped, tick_label_clashes
from helpers.synthetic_recording import recording

import dtsgd_viz
from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan
from dtsgd_viz.views.shards.update import plot_update_shards

MESHES = {32: {"batch": 4, "model": 8}, 64: {"batch": 8, "model": 8}}


def _reads(fig):
    """Every text of ``fig`` clear of every other and inside the figure, and no axis's
    tick labels merged; the problems found, named."""
    problems = clashes(fig) + clipped(fig)
    for ax in fig.axes:
        problems += tick_label_clashes(ax)
    return problems


@pytest.fixture(scope="module", params=sorted(MESHES))
def big(request):
    mesh = MeshSpec.create(MESHES[request.param])
    r = recording([("w", (64, 64), ("batch", "model"))], steps=20, mesh=mesh)
    plan = memory_plan(
        {
            "w": ((64, 64), "float32", LayoutSpec(("batch", "model"), mesh)),
            "b": ((64,), "float32", LayoutSpec(("model",), mesh)),
        }
    )
    return request.param, r, plan


@pytest.mark.slow
def test_plot_shards_reads_at_many_devices(big):
    n, r, _ = big
    fig = dtsgd_viz.plot_shards(r, "w")
    assert _reads(fig) == [], n
    heat = fig.axes[0].get_window_extent()
    assert heat.width >= 0.25 * fig.bbox.width  # a heatmap, not a thumbnail


@pytest.mark.slow
def test_plot_memory_reads_at_many_devices(big):
    n, _, plan = big
    fig = dtsgd_viz.plot_memory(plan)
    assert _reads(fig) == [], n


@pytest.mark.slow
def test_plot_update_shards_reads_at_many_devices(big):
    n, r, _ = big
    fig = plot_update_shards(r, "w")
    assert _reads(fig) == [], n


@pytest.mark.slow
def test_plot_shards_reads_at_256_devices():
    mesh = MeshSpec.create({"batch": 16, "model": 16})
    r = recording([("w", (64, 64), ("batch", "model"))], steps=6, mesh=mesh)
    assert _reads(dtsgd_viz.plot_shards(r, "w")) == []
