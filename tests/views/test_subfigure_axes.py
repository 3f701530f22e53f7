"""Views drawn into axes the caller made inside a ``SubFigure`` (``fig.subfigures``, a
common way to lay out a notebook figure): each draws there and returns the root
``Figure``, the same as for axes of a plain figure."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic
from matplotlib.figure import Figure

import dtsgd_viz
from dtsgd_viz import LayoutSpec, MeshSpec
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.core.figure import axes_size_inches, root_figure

MESH = MeshSpec.create({"batch": 2, "model": 4})


@pytest.fixture
def halves():
    fig = Figure(figsize=(9.5, 4.0))
    left, right = fig.subfigures(1, 2)
    return fig, left, right


def test_the_root_figure_and_the_axes_size_through_a_subfigure(halves):
    fig, left, right = halves
    ax = right.subplots()
    assert root_figure(ax) is fig and root_figure(fig.subplots()) is fig
    width, height = axes_size_inches(ax)
    fig.canvas.draw()  # no layout engine: the axes keep the box they were made with
    box = ax.get_window_extent()
    assert (width, height) == pytest.approx((box.width / fig.dpi, box.height / fig.dpi))
    assert width < 4.75  # a share of its half of the figure, not of the whole


def test_plot_layout_in_a_subfigure(halves):
    fig, left, _ = halves
    ax = left.subplots()
    assert dtsgd_viz.plot_layout(LayoutSpec(("batch", "model"), MESH), (4, 8), name="w", ax=ax) is fig
    names = [t.get_text() for t in ax.texts if t.get_text().startswith("CPU:")]
    assert names == [f"CPU:{d}" for d in range(8)]  # one block per device, each named


def test_plot_memory_in_a_subfigure(halves):
    fig, left, _ = halves
    ax = left.subplots()
    plan = dtsgd_viz.memory_plan({"w": ((64, 64), "float32", LayoutSpec(("batch", "model"), MESH))})
    assert dtsgd_viz.plot_memory(plan, ax=ax) is fig
    assert ax.get_ylabel() == "KiB per device"
    bars = [p.get_height() for p in ax.patches if p.get_height() > 0]
    assert bars[:8] == [64 * 64 * 4 / 8 / 1024] * 8  # each device's block of the parameter


def test_plot_paths_in_a_subfigure(halves):
    fig, left, right = halves
    surface = surfaces.RotatedQuadratic()
    run = synthetic(surface, 8, 0.05, 0.9)
    path_ax, loss_ax = right.subplots(1, 2)
    assert dtsgd_viz.plot_paths({"momentum": run}, surface, ax=(path_ax, loss_ax)) is fig
    drawn = [line for line in path_ax.lines if line.get_gid() == "path:momentum"]
    np.testing.assert_array_equal(drawn[0].get_xydata(), run.path("w"))
    fig.canvas.draw()
