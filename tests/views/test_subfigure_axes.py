"""Views drawn into axes the caller made inside a ``SubFigure`` (``fig.subfigures``, a
common way to lay out a notebook figure): each draws there and returns the root
``Figure``, the same as for axes of a plain figure."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic
from matplotlib.figure import Figure

import dtsgd_viz
from dtsgd_viz import MeshSpec
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


def test_plot_paths_in_a_subfigure(halves):
    fig, left, right = halves
    surface = surfaces.RotatedQuadratic()
    run = synthetic(surface, 8, 0.05, 0.9)
    path_ax, loss_ax = right.subplots(1, 2)
    assert dtsgd_viz.plot_paths({"momentum": run}, surface, ax=(path_ax, loss_ax)) is fig
    drawn = [line for line in path_ax.lines if line.get_gid() == "path:momentum"]
    np.testing.assert_array_equal(drawn[0].get_xydata(), run.path("w"))
    fig.canvas.draw()
