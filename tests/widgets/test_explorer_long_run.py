"""PathExplorer on 3 x 10,000 updates of tutorial 03's surface (made by the numpy
reference rule): built and moved with a bounded number of vertices per line, each path
drawn up to the update shown ending exactly on it, the still part (the thin whole runs,
the loss curves) unchanged by a move, and every number from the whole run."""

import matplotlib
import numpy as np
import pytest
from helpers.synthetic_paths import synthetic

from dtsgd_viz.theory import surfaces

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
UPDATES = 10_000


@pytest.fixture(scope="module")
def long_runs():
    return {
        "plain": synthetic(SURFACE, UPDATES, 0.05),
        "momentum": synthetic(SURFACE, UPDATES, 0.05, 0.9),
        "nesterov": synthetic(SURFACE, UPDATES, 0.05, 0.9, True),
    }


@pytest.mark.slow
def test_a_10000_update_explorer_moves_with_pixel_bounded_lines(long_runs):
    from dtsgd_viz.widgets import PathExplorer

    w = PathExplorer(long_runs, SURFACE, step=5)
    art = w.view.artists
    fig = w.figure
    limit = int(np.ceil(sum(fig.get_size_inches() * fig.dpi)))  # its width and height in pixels
    columns = int(np.ceil(fig.get_size_inches()[0] * fig.dpi))
    static = w.static_state()
    for key, whole in static.paths.items():  # the thin whole runs: start to end, bounded
        path = long_runs[key].path("w").astype(np.float64)
        assert len(whole) <= limit
        np.testing.assert_array_equal(whole[[0, -1]], path[[0, -1]])
    for key, curve in static.loss_curves.items():
        rec = long_runs[key]
        assert len(curve) <= 3 * columns + 2
        after = SURFACE.value_np(rec.path("w").astype(np.float64))  # the loss after k = 0..N updates
        assert curve[0, 0] == 0 and curve[-1, 0] == rec.steps[-1] and np.nanmin(curve[:, 1]) == np.nanmin(after)
    for update in (7_321, 9_999, 40):
        w.slider.value = update
        for key, line in art.paths.items():
            rec = long_runs[key]
            path = rec.path("w").astype(np.float64)
            i = int(np.flatnonzero(rec.steps == update)[0])
            xy = np.asarray(line.get_xydata(), np.float64)
            assert len(xy) <= limit
            np.testing.assert_array_equal(xy[0], path[0])
            np.testing.assert_array_equal(xy[-1], path[i + 1])  # up to the update's end
            assert tuple(path[i]) in {tuple(p) for p in xy}  # through its start, exactly
            np.testing.assert_array_equal(art.positions[key].get_xydata()[0], path[i + 1])  # the ring: after it
            # the dot: the loss after the update, at k = update (as plot_paths and findings)
            np.testing.assert_allclose(
                art.loss_markers[key].get_xydata()[0], [update, SURFACE.value_np(path[i + 1])], rtol=1e-12
            )
        assert w.frame().title.startswith(f"Update {update}")
    assert w.static_state().same_as(static)
