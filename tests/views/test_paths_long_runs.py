"""Path views whose cost follows the updates drawn (issue 29, item 9): the windowed and
bucketed searches that replaced all-pairs ones give what brute force gives (on small
inputs, or on a long run that is a small one made dense), and what a long run's figure
draws is the recording where drawn: its start, its end and its extreme points among
it. Properties only: no pixels, no timings."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic

import dtsgd_viz
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.paths import casing, labels, names

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


def _brute_distance_to_polyline(p, c):
    """Every point of ``p`` against every segment of ``c``, one point at a time."""
    out = []
    for q in p:
        best = np.inf
        for a, b in zip(c[:-1], c[1:]):
            ab = b - a
            t = 0.0 if not ab @ ab else min(1.0, max(0.0, float((q - a) @ ab / (ab @ ab))))
            best = min(best, float(np.hypot(*(q - (a + t * ab)))))
        out.append(best)
    return np.array(out)


def _brute_spot(obs, anchor, size, radii, near, extra, touch=0.0):
    """``best_spot`` as its docstring defines it: every candidate scored in full."""
    cost = [
        labels.spot_cost(obs, box[:4], touch=touch) + near * box[4] + (extra(tuple(box[:4])) if extra else 0)
        for box in labels.candidates(anchor, size, radii)
    ]
    return tuple(labels.candidates(anchor, size, radii)[int(np.argmin(cost))][:4])


def _densified(c, k):
    """The polyline ``c`` with ``k - 1`` points put evenly along each segment: the same
    line through ``k`` times the points."""
    t = np.arange(k)[:, None, None] / k
    pts = (c[:-1] + t * (c[1:] - c[:-1])).transpose(1, 0, 2).reshape(-1, 2)
    return np.concatenate([pts, c[-1:]])


# ---- the pure parts ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_long_run_coincides_where_the_small_run_it_densifies_does_by_brute_force():
    # two paths sharing their first leg, then parting: as a brute force sees it on 6 points
    lower = np.array([[0.0, 0.0], [1.0, 0.0], [2.0, 0.02], [2.5, 1.0], [3.0, 2.5], [2.0, 3.0]])
    upper = np.array([[0.0, 0.0], [1.5, 0.0], [2.5, 0.0], [3.5, -1.0], [4.0, -3.0]])
    tol = 0.05
    samples = casing._samples(lower)
    near = _brute_distance_to_polyline(samples, upper) <= tol
    truth = samples[near]  # the sampled points of lower within tol of upper
    assert 0 < len(truth) < len(samples)
    # the same two lines through 4,000 points each: the stretches run between the same ends
    small = casing.coinciding(lower, upper, tol)
    dense = casing.coinciding(_densified(lower, 1000), _densified(upper, 800), tol)
    assert len(small) == len(dense) == 1
    for s in (small[0], dense[0]):
        np.testing.assert_allclose(s[0], truth[0], atol=1e-12)
        # its last point within one sample spacing of the brute force's last
        assert np.hypot(*(s[-1] - truth[-1])) <= np.hypot(*(samples[1] - samples[0])) + 1e-12
    assert np.all(_brute_distance_to_polyline(dense[0][::97], upper) <= tol + 1e-12)


@pytest.mark.slow
def test_the_casings_nearest_points_on_a_long_polyline_match_brute_force():
    rng = np.random.default_rng(5)
    c = np.cumsum(rng.normal(size=(80, 2)), axis=0)
    dense = _densified(c, 125)  # 9,876 points on the same line
    p = c[rng.integers(0, 80, 200)] + rng.normal(scale=0.3, size=(200, 2))
    truth = _brute_distance_to_polyline(p, c)
    _, d = casing._nearest_on_polyline(p, dense)
    np.testing.assert_allclose(d, truth, atol=1e-9)
    _, d_w = casing._nearest_on_polyline(p, dense, within=0.2)
    close = truth <= 0.2 - 1e-9
    assert close.any() and (~close).any()
    np.testing.assert_allclose(d_w[close], truth[close], atol=1e-9)
    assert np.all(np.isinf(d_w[truth > 0.2 + 1e-9]))


def test_the_windowed_nearest_distance_is_exact_within_its_window():
    rng = np.random.default_rng(2)
    a, b = rng.uniform(0, 300, size=(40, 2)), rng.uniform(0, 300, size=(3000, 2))
    truth = np.array([np.min(np.hypot(*(b - q).T)) for q in a])
    np.testing.assert_allclose(names._min_dist(a, b), truth, atol=1e-9)
    seg = np.array([[100.0, 100.0], [104.0, 103.0], [108.0, 106.0]])
    truth_seg = np.array([np.min(np.hypot(*(b - q).T)) for q in seg])
    got = names._min_dist(seg, b, within=4.0)
    inside = truth_seg < 4.0
    np.testing.assert_allclose(got[inside], truth_seg[inside], atol=1e-9)
    assert np.all(got[~inside] >= 4.0)
    assert np.all(np.isinf(names._min_dist(seg, b[:0], within=4.0)))


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


def test_every_candidate_spot_costs_what_spot_cost_says():
    rng = np.random.default_rng(11)
    obs = _random_obstacles(rng)
    cands = labels.candidates((200, 150), (40, 12), (5.0, 18.0, 40.0, 120.0))
    boxes = [c[:4] for c in cands]
    for touch in (0.0, 150.0):
        want = [labels.spot_cost(obs, b, touch=touch) for b in boxes]
        np.testing.assert_allclose(labels.spot_costs(obs, boxes, touch=touch), want, rtol=1e-12, atol=1e-9)


def test_the_best_spot_is_the_one_scoring_every_candidate_in_full_finds():
    rng = np.random.default_rng(13)
    asked = []
    for _ in range(12):
        obs = _random_obstacles(rng)
        anchor = tuple(rng.uniform(60, 340, size=2))
        pts = obs.points

        def extra(box):  # a leader cost >= 0 that favours some boxes
            asked.append(box)
            end = np.clip(anchor, box[:2], box[2:])  # noqa: B023
            return labels.leader_cost(obs, anchor, end) * 3.0  # noqa: B023

        for kw in (dict(radii=(5.0, 10.0, 18.0, 30.0), near=0.15), dict(radii=(2.0, 28.0, 70.0), near=0.35)):
            got = labels.best_spot(obs, anchor, (30, 10), extra=extra, **kw)
            assert got == pytest.approx(_brute_spot(obs, anchor, (30, 10), kw["radii"], kw["near"], extra))
            plain = labels.best_spot(obs, anchor, (30, 10), **kw)  # no extra: the cheapest spot alone
            assert plain == pytest.approx(_brute_spot(obs, anchor, (30, 10), kw["radii"], kw["near"], None))
        assert len(pts) == len(obs.points)
    assert asked  # the extra cost was asked, of the boxes that could still win


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


def test_the_best_spot_when_every_spot_costs_infinitely_much_is_the_first():
    """An ``extra`` that rules every box out (inf) leaves the first candidate, as argmin
    over all-inf costs does (it used to compare an index with None)."""
    obs = _random_obstacles(np.random.default_rng(3))
    got = labels.best_spot(obs, (200.0, 200.0), (30, 10), extra=lambda box: np.inf)
    assert got == pytest.approx(
        _brute_spot(obs, (200.0, 200.0), (30, 10), (5.0, 10.0, 18.0, 30.0), 0.15, lambda b: np.inf)
    )
