"""``plot_compare`` and ``compare_findings``: real runs of the DTensor SGD on a sharded
quadratic (no surface handed to the view), checked through the figure's artists against
numpy on the recorded values, and the title's numbers read back against the findings
and against numpy."""

import re
import warnings

import numpy as np
import pytest
from helpers import synthetic_recording

import dtsgd_viz
from dtsgd_viz import MeshSpec
from dtsgd_viz.views.compare import compare_data, looks
from dtsgd_viz.views.compare.geometry import display_name
from dtsgd_viz.views.core.figure import headline_texts

STEPS = 30
CONFIGS = {
    "plain": dict(learning_rate=0.5),
    "momentum": dict(learning_rate=0.5, momentum=0.9, exact_update=True),
    "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True, exact_update=True),
}


@pytest.fixture(scope="module")
def runs():
    surface = dtsgd_viz.surfaces.ShardedQuadratic()
    return dtsgd_viz.run(surface, CONFIGS, STEPS)


@pytest.fixture(scope="module")
def figure(runs):
    return dtsgd_viz.plot_compare(runs)


def _lines(ax):
    return [ln for ln in ax.get_lines() if len(ln.get_xdata()) and not str(ln.get_gid()).startswith("loss-mean:")]


def _panels(fig):
    loss, gap = fig.axes
    return loss, gap


@pytest.mark.slow
def test_the_drawn_lines_are_the_recorded_values(runs, figure):
    loss_ax, gap_ax = _panels(figure)
    ref = runs["plain"].global_values("w", "param").astype(np.float64).reshape(STEPS, -1)
    # the loss of update k, after k - 1 updates, one line per run in its look
    drawn = _lines(loss_ax)
    assert len(drawn) == 3
    for line, (name, r) in zip(drawn, runs.items()):
        np.testing.assert_array_equal(line.get_xdata(), r.steps - 1)
        np.testing.assert_allclose(line.get_ydata(), r.loss, rtol=1e-12)
        assert line.get_color() == looks(runs)[name].color
    # each run's distance from the first run's parameters, relative to their norm
    for line, name in zip(_lines(gap_ax), ["momentum", "nesterov"]):
        p = runs[name].global_values("w", "param").astype(np.float64).reshape(STEPS, -1)
        expected = np.linalg.norm(p - ref, axis=1) / np.linalg.norm(ref, axis=1)
        expected[expected == 0] = np.nan  # a log axis has no 0 (momentum's first step is plain's)
        np.testing.assert_allclose(line.get_ydata(), expected, rtol=1e-9)
        np.testing.assert_array_equal(line.get_xdata(), runs[name].steps)


@pytest.mark.slow
def test_the_title_states_the_findings_and_they_match_numpy(runs, figure):
    found = dtsgd_viz.compare_findings(runs)
    title, settings = headline_texts(figure)
    tail = found.tail
    assert tail == 6 and f"compared over the last {tail}" in settings
    means = {n: float(np.mean(r.loss[-tail:])) for n, r in runs.items()}
    assert found.final_loss == pytest.approx(means, rel=1e-12)
    low, high = min(means, key=means.get), max(means, key=means.get)
    m = re.match(r"(\w+) ends ([\d.]+)(%|x) below (\w+)", title.replace("\n", " "))
    assert m, title
    assert (m.group(1).lower(), m.group(4)) == (low, high) == (found.lowest, found.highest)
    ratio = means[high] / means[low]
    stated = float(m.group(2))
    if m.group(3) == "x":
        assert stated == pytest.approx(ratio, rel=0.05)
    else:
        assert stated == pytest.approx(100 * (1 - 1 / ratio), abs=0.5)
    printed = str(found)  # the rules' names as every figure writes them
    assert f"  {display_name(low)}: {means[low]:.4g}" in printed and "Nesterov vs plain: parameters up to" in printed


def test_runs_of_one_rule_get_different_looks_and_a_dash_means_momentum():
    names = ["momentum", "nesterov", "nesterov default", "my run"]
    got = looks(names)
    keys = {(str(lk.color), str(lk.ls), lk.lw) for lk in got.values()}
    assert len(keys) == 4
    dashed = [n for n, lk in got.items() if lk.ls not in ("-", "solid")]
    assert dashed == ["momentum", "my run"] and got["my run"].ls != got["momentum"].ls


@pytest.mark.slow
def test_a_diverging_run_is_named_and_no_warning_leaks():
    surface = dtsgd_viz.surfaces.ShardedQuadratic()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the recorder's own warning about the NaN run
        runs = dtsgd_viz.run(
            surface,
            {
                "momentum": dict(learning_rate=0.5, momentum=0.9),
                "nesterov": dict(learning_rate=60.0, momentum=0.9, nesterov=True),
            },
            60,
        )
    first_bad = int(runs["nesterov"].nonfinite_steps[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = dtsgd_viz.plot_compare(runs)
        fig.savefig(__import__("io").BytesIO(), format="png")
    title, _ = headline_texts(fig)
    assert title.replace("\n", " ") == f"Nesterov diverges at update {first_bad}"  # the rule's name, as written
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["momentum", "Nesterov"]  # the headline says where it diverges
    assert f"Nesterov: NaN/Inf from update {first_bad}" in str(dtsgd_viz.compare_findings(runs))


@pytest.mark.slow
def test_stats_mode_and_a_wide_mesh():
    mesh = MeshSpec.create({"batch": 2, "model": 32})  # 64 devices: 8 cells a row
    specs = [("w", (4, 64), ("batch", "model"))]
    a = synthetic_recording.recording(specs, steps=12, mode="stats", mesh=mesh, seed=1)
    b = synthetic_recording.recording(specs, steps=12, mode="stats", mesh=mesh, seed=2)
    fig = dtsgd_viz.plot_compare({"momentum": a, "nesterov": b})
    data = compare_data({"momentum": a, "nesterov": b})
    assert data.gaps is None and len(fig.axes) == 1  # stats keep no parameters: the loss panel alone
    assert fig.get_figwidth() * fig.dpi <= 950


def test_bad_input_is_named():
    r = synthetic_recording.recording([("w", (8, 8), ("batch", "model"))], steps=5)
    other = synthetic_recording.recording([("w", (8, 8), ("batch", "model"))], steps=6)
    for runs, error, message in [
        ([r, r], TypeError, "takes a dict {run name: Recording}.* Received: list"),
        ({"a": r}, ValueError, "at least two runs. Received 1: \\['a'\\]"),
        ({"a": r, "b": "x"}, TypeError, "Run 'b' is a str, not a dtsgd_viz Recording"),
        ({"a": r, "b": other}, ValueError, "record different updates \\(5 updates, 1..5 vs 6"),
    ]:
        with pytest.raises(error, match=message):
            dtsgd_viz.plot_compare(runs)
    with pytest.raises(ValueError, match="Unknown variable 'v'. The runs record: \\['w'\\]"):
        dtsgd_viz.plot_compare({"a": r, "b": r}, variable="v")


def test_a_run_on_the_first_runs_path_is_marked_over_it_and_named(runs):
    """A run whose parameters equal the first run's at every update has a distance of 0,
    which a log axis cannot draw: its loss is drawn as its look's markers (no line) over
    the first run's line (both can be seen), the gap panel draws no line for it, the headline
    says whose path it is and its mean bar is the first run's (not drawn twice)."""
    same = {"momentum": runs["momentum"], "copy": runs["momentum"], "nesterov": runs["nesterov"]}
    fig = dtsgd_viz.plot_compare(same)
    loss, gap = _panels(fig)
    data = compare_data(same)
    assert np.all(np.asarray(data.gaps["copy"]) == 0) and np.any(np.asarray(data.gaps["nesterov"]) > 0)
    first, copy, _ = _lines(loss)
    np.testing.assert_array_equal(copy.get_ydata(), first.get_ydata())
    assert copy.get_zorder() > first.get_zorder() and copy.get_linestyle() == "None"
    assert copy.get_marker() == looks(same)["copy"].marker != first.get_marker()
    assert len(_lines(gap)) == 1 and not gap.texts
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    found = dtsgd_viz.compare_findings(same)
    assert labels[:3] == ["momentum", "copy", "Nesterov"]
    assert "copy follows momentum's path" in headline_texts(fig)[0].replace("\n", " ")
    assert labels[3] == f"each run's mean, k = {STEPS - found.tail}–{STEPS - 1} (shaded)"
    assert {ln.get_gid() for ln in loss.get_lines() if str(ln.get_gid()).startswith("loss-mean:")} == {
        "loss-mean:momentum",
        "loss-mean:nesterov",
    }
    # the legend's entry shows the bars drawn: one short bar each, in its run's colour and width
    from matplotlib.colors import to_rgba

    entry = fig.legends[0].get_children()[0].get_children()[1].get_children()[-1].get_children()[-1]
    shown = entry.get_children()[0].get_children()
    bars = [ln for ln in loss.get_lines() if str(ln.get_gid()).startswith("loss-mean:")]
    assert entry.get_children()[1].get_children()[0].get_text() == labels[3]
    assert [(to_rgba(a.get_color()), a.get_linewidth()) for a in shown] == [
        (to_rgba(b.get_color()), b.get_linewidth()) for b in bars
    ]


def test_the_loss_panel_marks_the_updates_the_ends_are_compared_over(runs, figure):
    """The band covers the last ``tail`` losses and each run's mean there is drawn across
    it at the value the title and ``compare_findings`` state (numpy on the recording)."""
    loss_ax, _ = _panels(figure)
    found = dtsgd_viz.compare_findings(runs)
    band = [p for p in loss_ax.patches if p.get_gid() == "loss-window"]
    assert len(band) == 1
    x = band[0].get_path().vertices[:, 0]
    xs = band[0].get_transform().transform(band[0].get_path().vertices)[:, 0]
    lo, hi = loss_ax.transData.inverted().transform([[xs.min(), 0], [xs.max(), 0]])[:, 0]
    last = (runs["plain"].steps - 1)[-found.tail :]
    assert lo == pytest.approx(last[0] - 0.5) and hi == pytest.approx(last[-1] + 0.5) and len(x)
    for name, r in runs.items():
        (mean,) = [ln for ln in loss_ax.get_lines() if ln.get_gid() == f"loss-mean:{name}"]
        assert np.asarray(mean.get_ydata()) == pytest.approx(np.mean(r.loss[-found.tail :]), rel=1e-9)
        assert found.final_loss[name] == pytest.approx(np.mean(r.loss[-found.tail :]), rel=1e-9)
