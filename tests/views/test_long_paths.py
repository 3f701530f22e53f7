"""Path figures of long runs: 3 x 10,000 updates of tutorial 03's surface (made by the
numpy reference rule) drawn with a bounded number of vertices per line, the lines
still through the start, the end and the update shown exactly, and within a pixel of
every recorded point (measured here with a brute-force numpy distance); the pure
thinning checked against brute force."""

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


def _lines(ax, prefix):
    return {ln.get_gid()[len(prefix) :]: ln for ln in ax.lines if (ln.get_gid() or "").startswith(prefix)}


def _pixel_limit(fig) -> int:
    """As many vertices as the figure is wide and tall in pixels."""
    w, h = fig.get_size_inches() * fig.dpi
    return int(np.ceil(w + h))


def _distance_to_polyline(p, poly) -> np.ndarray:
    """Brute force, in chunks: each point of ``p`` to its nearest segment of ``poly``."""
    a, b = poly[:-1], poly[1:]
    ab = b - a
    l2 = np.maximum(np.einsum("ij,ij->i", ab, ab), 1e-300)
    out = []
    for s in range(0, len(p), 500):
        q = p[s : s + 500]
        t = np.clip(np.einsum("nij,ij->ni", q[:, None] - a[None], ab) / l2, 0.0, 1.0)
        out.append(np.linalg.norm(q[:, None] - (a[None] + t[..., None] * ab[None]), axis=-1).min(axis=1))
    return np.concatenate(out)


def _check_line(ax, line, path, exact_rows):
    """``line`` draws recorded points of ``path`` only, starts and ends on its first and
    last, passes through ``exact_rows`` exactly and lies within a pixel of every point."""
    xy = np.asarray(line.get_xydata(), np.float64)
    recorded = {tuple(p) for p in path}
    assert all(tuple(p) in recorded for p in xy)  # only recorded points, none made up
    np.testing.assert_array_equal(xy[0], path[0])
    np.testing.assert_array_equal(xy[-1], path[-1])
    drawn = {tuple(p) for p in xy}
    for i in exact_rows:
        assert tuple(path[i]) in drawn
    px = ax.transData.transform
    assert _distance_to_polyline(px(path), px(xy)).max() < 1.0


@pytest.mark.slow
def test_a_10000_update_plot_paths_draws_each_path_with_a_pixel_bounded_line(long_runs):
    fig = dtsgd_viz.plot_paths(long_runs, SURFACE, step=5)
    ax_path, ax_loss = fig.axes[:2]
    limit = _pixel_limit(fig)
    paths = _lines(ax_path, "path:")
    assert sorted(paths) == sorted(long_runs)
    for key, rec in long_runs.items():
        path = rec.path("w").astype(np.float64)
        assert len(path) == UPDATES + 1
        line = paths[key]
        assert len(line.get_xydata()) <= limit
        i = int(np.flatnonzero(rec.steps == 5)[0])
        lowest = int(np.nanargmin(rec.loss))
        _check_line(ax_path, line, path, exact_rows=(i, i + 1, lowest))
        ring = _lines(ax_path, "position:")[key]  # the parameters after update 5
        np.testing.assert_array_equal(ring.get_xydata()[0], path[i + 1])
    # the loss lines: at most ~3 points a pixel column, the extremes and both ends kept
    columns = int(np.ceil(fig.get_size_inches()[0] * fig.dpi))
    for key, line in _lines(ax_loss, "loss:").items():
        x, y = (np.asarray(v, np.float64) for v in line.get_data())
        rec = long_runs[key]
        assert len(x) <= 3 * columns + 2
        after = SURFACE.value_np(rec.path("w").astype(np.float64))  # the loss after k = 0..N updates
        assert x[0] == 0 and x[-1] == rec.steps[-1] and y[-1] == after[-1]
        assert np.nanmin(y) == np.nanmin(after) and np.nanmax(y) == np.nanmax(after)
    # the numbers written come from the whole run: the headline names its last update
    assert f"{UPDATES - 9}–{UPDATES}" in fig._suptitle.get_text()  # the mean over k = 9991..10000


@pytest.mark.slow
def test_a_10000_update_animation_grows_thinned_lines_through_each_frames_update(long_runs, tmp_path):
    anim = dtsgd_viz.animate(long_runs, SURFACE, frames=[5, 6000], hold=0, zoom=False)
    anim.save(tmp_path / "long.gif", writer="pillow")  # ends on the last frame: update 6000
    ax_path, ax_loss = anim._fig.axes[:2]
    limit = _pixel_limit(anim._fig)
    for key, line in _lines(ax_path, "path:").items():
        rec = long_runs[key]
        path = rec.path("w").astype(np.float64)
        i = int(np.flatnonzero(rec.steps == 6000)[0])
        xy = np.asarray(line.get_xydata(), np.float64)
        assert len(xy) <= limit
        np.testing.assert_array_equal(xy[0], path[0])
        np.testing.assert_array_equal(xy[-1], path[i + 1])  # up to the update's end
        assert tuple(path[i]) in {tuple(p) for p in xy}
        np.testing.assert_array_equal(_lines(ax_path, "position:")[key].get_xydata()[0], path[i + 1])
    columns = int(np.ceil(anim._fig.get_size_inches()[0] * anim._fig.dpi))
    for _key, line in _lines(ax_loss, "loss:").items():
        x = np.asarray(line.get_xdata(), np.float64)
        assert len(x) <= 3 * columns + 2 and x[0] == 0 and x[-1] == 6000  # k = 0..6000: after update 6000


# ---- the pure parts -------------------------------------------------------------------


@pytest.mark.slow
def test_thinning_keeps_short_paths_whole_and_long_ones_within_the_tolerance():
    from dtsgd_viz.views.paths.geometry import CELL_PX, EXACT_POINTS, TOLERANCE_PX, thin_indices

    rng = np.random.default_rng(3)
    short = rng.normal(size=(EXACT_POINTS, 2))
    np.testing.assert_array_equal(thin_indices(short, (100.0, 100.0)), np.arange(EXACT_POINTS))
    # a spiral into the origin, 20,000 points, drawn at 300 px a unit
    t = np.linspace(0.0, 60.0 * np.pi, 20_000)
    spiral = np.stack([np.exp(-t / 40) * np.cos(t), np.exp(-t / 40) * np.sin(t)], axis=1)
    scale = np.array([300.0, 300.0])
    keep = [7, 12_345]
    idx = thin_indices(spiral, scale, keep=keep)
    assert idx[0] == 0 and idx[-1] == len(spiral) - 1 and set(keep) <= set(idx.tolist())
    assert np.all(np.diff(idx) > 0) and len(idx) < len(spiral) // 10
    gap = _distance_to_polyline(spiral * scale, spiral[idx] * scale)
    assert gap.max() <= TOLERANCE_PX + CELL_PX * np.sqrt(2) + 1e-9


@pytest.mark.slow
def test_thinning_breaks_the_line_at_non_finite_points_and_holds_a_vertex_limit():
    from dtsgd_viz.views.paths.geometry import thin_indices

    line = np.stack([np.arange(1000.0), np.zeros(1000)], axis=1)
    line[400:410] = np.nan
    idx = thin_indices(line, (1.0, 1.0)).tolist()
    assert idx == [0, 399, 400, 410, 999]  # one NaN keeps the gap, its neighbours end it
    # a walk that never settles: as many turns as points, until the limit coarsens it
    walk = np.cumsum(np.random.default_rng(0).normal(size=(5000, 2)), axis=0)
    free = thin_indices(walk, (10.0, 10.0))
    capped = thin_indices(walk, (10.0, 10.0), keep=[2500], limit=300)
    assert len(free) > 300 >= len(capped) and 2500 in capped and capped[-1] == 4999


def test_up_to_ends_a_thinned_path_exactly_on_the_update_shown():
    from dtsgd_viz.views.paths.geometry import up_to

    assert up_to(np.array([0, 10, 20, 30]), 16, at=14).tolist() == [0, 10, 14, 15]
    assert up_to(None, 4, at=2).tolist() == [0, 1, 2, 3]
    assert up_to(np.array([0, 10, 20]), 11, at=9).tolist() == [0, 9, 10]
