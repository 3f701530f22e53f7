"""Path views whose cost follows the updates drawn (issue 29, item 9): the one-pass
searches the explorer's scoring keeps give what brute force gives, and what a long run's
figure draws is the recording where drawn: its start, its end and its extreme points
among it. Properties only: no pixels, no timings."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic

import dtsgd_viz
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.paths import labels

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's valley
UPDATES = 10_000


@pytest.fixture(scope="module")
def long_runs():
    return {
        "plain": synthetic(SURFACE, UPDATES, 0.05),
        "momentum": synthetic(SURFACE, UPDATES, 0.05, 0.9),
        "nesterov": synthetic(SURFACE, UPDATES, 0.05, 0.9, True),
    }


# ---- independent truths ----------------------------------------------------------------


# ---- the pure parts ---------------------------------------------------------------------


def test_points_along_a_polyline_are_those_a_segment_by_segment_linspace_gives():
    rng = np.random.default_rng(7)
    xy = np.cumsum(rng.normal(scale=20.0, size=(50, 2)), axis=0)
    truth = np.concatenate(
        [
            a + np.linspace(0.0, 1.0, min(500, max(2, int(np.hypot(*(b - a)) / 3.0) + 1)))[:, None] * (b - a)
            for a, b in zip(xy[:-1], xy[1:])
        ]
    )
    np.testing.assert_allclose(labels.along_segments(xy, 3.0, 500), truth, atol=1e-9)
    assert labels.along_segments(xy[:1], 3.0, 500).shape == (0, 2)


def _random_obstacles(rng):
    obs = labels.Obstacles((0, 0, 400, 300))
    for _ in range(4):
        obs.add_polyline(
            np.cumsum(rng.normal(scale=15.0, size=(30, 2)), axis=0) + [200, 150], weight=float(rng.uniform(0.3, 1.5))
        )
    for _ in range(3):
        obs.add_marker(rng.uniform(50, 350, size=2), 5.0)
    return obs


def test_every_spot_costs_the_weights_of_the_samples_under_it_and_its_overlaps():
    rng = np.random.default_rng(11)
    obs = _random_obstacles(rng)
    boxes = [(x, y, x + 40, y + 12) for x, y in rng.uniform(0, 380, size=(60, 2))]
    pts, w = obs.points, obs.weights
    for touch in (0.0, 150.0):
        want = []
        for b in boxes:  # one box at a time, by its definition
            under = (
                (pts[:, 0] >= b[0] - 2) & (pts[:, 0] <= b[2] + 2) & (pts[:, 1] >= b[1] - 2) & (pts[:, 1] <= b[3] + 2)
            )
            cost = w[under].sum() + (touch if under.any() else 0.0)
            cost += labels.HARD * sum(labels.boxes_overlap(b, o, 1.0) for o in obs.boxes)
            f = obs.frame
            cost += 1e5 * (b[0] < f[0] + 1 or b[1] < f[1] + 1 or b[2] > f[2] - 1 or b[3] > f[3] - 1)
            want.append(cost)
        np.testing.assert_allclose(labels.spot_costs(obs, boxes, touch=touch), want, rtol=1e-12, atol=1e-9)
    line = labels.Obstacles((0, 0, 200, 200))
    line.add_polyline([[0, 100], [200, 100]])
    assert labels.leader_cost(line, (100, 50), (100, 150)) > 0.0  # crosses it
    assert labels.leader_cost(line, (20, 150), (180, 150)) == 0.0  # runs beside it


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
