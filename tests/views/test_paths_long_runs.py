"""Path views whose cost follows the updates drawn (issue 29, item 9): what a long run's
figure draws is the recording where drawn: its start, its end and its extreme points
among it. Properties only: no pixels, no timings."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic

import dtsgd_viz
from dtsgd_viz.theory import surfaces

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's valley
UPDATES = 10_000


@pytest.fixture(scope="module")
def long_runs():
    return {
        "plain": synthetic(SURFACE, UPDATES, 0.05),
        "momentum": synthetic(SURFACE, UPDATES, 0.05, 0.9),
        "nesterov": synthetic(SURFACE, UPDATES, 0.05, 0.9, True),
    }


# ---- a long run's figures ----------------------------------------------------------------


def _lines(ax, prefix):
    return {ln.get_gid()[len(prefix) :]: ln for ln in ax.lines if (ln.get_gid() or "").startswith(prefix)}


def _check_drawn(xy, path, extremes=True):
    """``xy`` (a drawn line) is rows of ``path`` (a settled run repeats its points, so
    their order is not checked), from its start to its end and (``extremes``) through
    its extreme points."""
    xy = np.asarray(xy, np.float64)
    rows = {tuple(p) for p in path}
    assert all(tuple(p) in rows for p in xy)  # none made up
    np.testing.assert_array_equal(xy[0], path[0])
    np.testing.assert_array_equal(xy[-1], path[-1])
    if extremes:
        np.testing.assert_array_equal(xy.min(axis=0), path.min(axis=0))
        np.testing.assert_array_equal(xy.max(axis=0), path.max(axis=0))


@pytest.mark.slow
def test_a_long_runs_paths_are_the_recording_through_its_ends_and_extremes(long_runs):
    fig = dtsgd_viz.plot_paths(long_runs, SURFACE, step=5)
    ax_path, ax_loss = fig.axes[:2]
    paths = _lines(ax_path, "path:")
    assert sorted(paths) == sorted(long_runs)
    for key, rec in long_runs.items():
        path = rec.path("w").astype(np.float64)
        xy = paths[key].get_xydata()
        assert len(xy) < len(path) // 4  # thinned
        _check_drawn(xy, path)
    for key, line in _lines(ax_loss, "loss:").items():
        x, y = (np.asarray(v, np.float64) for v in line.get_data())
        after = SURFACE.value_np(long_runs[key].path("w").astype(np.float64))
        np.testing.assert_array_equal(y, after[x.astype(int)])  # the recording's loss where drawn
        assert y.min() == after.min() and y.max() == after.max()


@pytest.mark.slow
def test_a_long_runs_explorer_moves_draw_the_recording_up_to_the_update(long_runs):
    from dtsgd_viz.widgets import PathExplorer

    w = PathExplorer(long_runs, SURFACE, zoom=False)
    for k in (7_321, 40):
        w.slider.value = k
        for key, line in w.view.artists.paths.items():
            path = long_runs[key].path("w").astype(np.float64)
            i = int(np.flatnonzero(long_runs[key].steps == k)[0])
            xy = np.asarray(line.get_xydata(), np.float64)
            _check_drawn(xy, path[: i + 2], extremes=False)  # up to the update's end
            assert tuple(path[i]) in {tuple(p) for p in xy}
        for key, line in w.view.artists.rests.items():  # the whole run under it
            _check_drawn(line.get_xydata(), long_runs[key].path("w").astype(np.float64))
