"""``ShardExplorer({name: Recording})``: real runs side by side, the heatmaps holding each
run's recorded tensor at the slider's update on one colour scale, the gap lines equal to
numpy's distance of each run's recorded values from the first run's."""

import numpy as np
import pytest
from helpers import synthetic_recording
from matplotlib import colors as mcolors

import dtsgd_viz
from dtsgd_viz.widgets import ShardExplorer

CONFIGS = {
    "momentum": dict(learning_rate=0.5, momentum=0.9, exact_update=True),
    "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True, exact_update=True),
}


def runs_of(configs):
    if "cached" not in CACHE:
        CACHE["cached"] = dtsgd_viz.run(dtsgd_viz.surfaces.ShardedQuadratic(), configs, 12)
    return CACHE["cached"]


CACHE: dict = {}


@pytest.fixture(scope="module")
def runs():
    return runs_of(CONFIGS)


@pytest.mark.slow
def test_each_run_at_the_slider_update_on_one_scale(runs):
    ex = ShardExplorer(runs, step=3)
    view = ex.view
    for update in (3, 9):
        ex.slider.value = update
        limits = {h.get_clim() for h in view.heatmaps}
        assert len(limits) == 1  # one colour scale for both runs
        lo, hi = limits.pop()
        every = np.concatenate([r.global_values("w", "velocity").ravel() for r in runs.values()])
        assert -lo == hi == pytest.approx(np.abs(every).max())  # fixed over the whole of every run
        for heatmap, r in zip(view.heatmaps, runs.values()):
            np.testing.assert_array_equal(heatmap.get_array(), r.global_values("w", "velocity")[update - 1])
        a, b = (r.global_values("w", "velocity")[update - 1].astype(np.float64) for r in runs.values())
        (marker,) = view.markers  # the second run's distance from the first, in percent of the first's norm
        assert marker.get_xdata()[0] == update
        assert marker.get_ydata()[0] == pytest.approx(100 * np.linalg.norm(b - a) / np.linalg.norm(a), rel=1e-5)
        assert list(view.step_line.get_xdata()) == [update, update]  # seen where the rings coincide
    ex.fixed.value = False  # the scale of this update, still shared
    now = max(np.abs(r.global_values("w", "velocity")[8]).max() for r in runs.values())
    assert {h.get_clim() for h in view.heatmaps} == {(-now, now)}
    ex.kind.value = "grad"
    a, b = (r.global_values("w", "grad").astype(np.float64).reshape(len(r), -1) for r in runs.values())
    (line,) = view.lines
    np.testing.assert_allclose(line.get_ydata(), 100 * np.linalg.norm(b - a, axis=1) / np.linalg.norm(a, axis=1))
    assert view.norm_ax.get_ylabel() == "grad gap\nfrom momentum,\n% of its norm"
    assert view.panels[-1].colorbar.ax.get_ylabel() == "grad value"
    assert len(ex.render()) > 1000


@pytest.mark.slow
def test_the_legend_names_the_runs_as_the_chips_do_and_the_norm_label_stays_clear():
    """09: the chips said "Nesterov", the legend "nesterov"; the norm axis' label
    "‖velocity‖ of hidden/kernel" reached up to the heatmaps' x labels."""
    from dtsgd_viz.views.compare import display_name

    m = runs_of(CONFIGS)["momentum"]
    names = {"momentum": m, "nesterov (default)": m}  # as a stale-velocity run takes momentum's every step
    view = ShardExplorer(names, step=3).view
    chips = [ax.get_title() for ax in view.heat_axes]
    assert chips == [display_name(n) for n in names] == ["momentum", "Nesterov (default)"]
    assert [t.get_text() for t in view.norm_ax.get_legend().get_texts()] == chips[1:]  # each from the first
    view.figure.draw_without_rendering()
    label = view.norm_ax.yaxis.label.get_window_extent()
    above = max(ax.xaxis.label.get_window_extent().y0 for ax in view.heat_axes)
    assert view.norm_ax.get_ylabel() == "velocity gap\nfrom momentum,\n% of its norm" and label.y1 < above - 6
    # equal runs: a line at 0, drawn whole (the axis starts under it), its ring at the shown update on it
    (line,), (ring,) = view.lines, view.markers
    assert np.all(line.get_ydata() == 0) and ring.get_ydata()[0] == 0 and view.norm_ax.get_ylim()[0] < 0


def test_stats_runs_and_bad_input():
    specs = [("w", (8, 8), ("batch", "model"))]
    a = synthetic_recording.recording(specs, steps=6, mode="stats", seed=1)
    b = synthetic_recording.recording(specs, steps=6, mode="stats", seed=2)
    ex = ShardExplorer({"a": a, "b": b})
    assert ex.view.heatmaps == [] and len(ex.view.lines) == 1
    firsts = [g[0] for g in a.geometry("w").replica_groups]
    na, nb = (np.sqrt((r.shard_stats("w", "velocity")[:, firsts, 0].astype(np.float64) ** 2).sum(1)) for r in (a, b))
    np.testing.assert_allclose(ex.view.lines[0].get_ydata(), 100 * np.abs(nb - na) / na, rtol=1e-6)
    with pytest.raises(TypeError, match="ShardExplorer takes a Recording or a dict .* Received: list"):
        ShardExplorer([a, b])
    short = synthetic_recording.recording(specs, steps=4, mode="stats")
    with pytest.raises(ValueError, match="record different updates"):
        ShardExplorer({"a": a, "short": short})


def test_the_title_is_gaps_text(runs):
    """The title's numbers are ``gaps``: each run's distance from the first at the shown
    update, relative to the first's, as numpy computes it from the recorded values."""
    from dtsgd_viz.views.compare import display_name
    from dtsgd_viz.views.core.figure import headline_texts, new_figure
    from dtsgd_viz.widgets.shard_runs import RunsShardsView, gaps, gaps_text

    a, b = (r.global_values("w", "velocity")[6].astype(np.float64) for r in runs.values())
    expected = np.linalg.norm(b - a) / np.linalg.norm(a)
    assert gaps(runs, "w", "velocity", 7) == {"nesterov": pytest.approx(expected)}
    text = gaps_text(runs, "w", "velocity", 7)
    assert text == f"velocity of 'w' after update 7 of 12: Nesterov {expected:.0%} from momentum"
    view = RunsShardsView(runs, "w", "velocity", 6, figure=new_figure((9.3, 5.0)))
    assert headline_texts(view.figure)[0].replace("\n", " ") == text
    # each run named on a chip in its rule's colour, over its heatmap with the layout's x label
    for ax, run in zip(view.heat_axes, runs):
        assert ax.get_title() == display_name(run)
        assert ax.title.get_bbox_patch().get_facecolor()[:3] == pytest.approx(mcolors.to_rgb(view.look[run].color))
        assert ax.get_xlabel().startswith("dim 1 — over 'model' (")  # the layout pictures' wording
    view.set_index(9)
    assert headline_texts(view.figure)[0].replace("\n", " ") == gaps_text(runs, "w", "velocity", 10)
    assert sum(a.get_gid() == "subtitle" for a in view.figure.artists) == 1


def test_the_gap_lines_are_the_titles_gaps_at_every_update_chunk_by_chunk(runs, monkeypatch):
    """``gap_lines`` (the lower panel) is ``gaps`` at each update, in chunks smaller than the run too."""
    from dtsgd_viz.widgets import shard_runs

    whole = shard_runs.gap_lines(runs, "w", "grad")["nesterov"]
    monkeypatch.setattr(shard_runs, "CHUNK", 5)  # 12 updates: chunks of 5, 5 and 2
    np.testing.assert_array_equal(shard_runs.gap_lines(runs, "w", "grad")["nesterov"], whole)
    each = [shard_runs.gaps(runs, "w", "grad", step)["nesterov"] for step in range(1, 13)]
    np.testing.assert_allclose(whole, each, rtol=1e-12)
