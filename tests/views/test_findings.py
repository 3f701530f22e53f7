"""Numbers that agree with the data: every number the path figures state (``plot_paths``,
``plot_update``, ``animate``'s frames, ``PathExplorer``, ``CompareWidget``) is read back
from the drawn text and compared with ``dtsgd_viz.findings`` and with numpy on the real
recordings: the loss after k updates (the surface at the recorded parameters), the mean
over the last updates (never one point of momentum's saw-tooth), the update where the
paths are furthest apart, and that update's terms."""

import re

import matplotlib
import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz import surfaces
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.paths.loss import MEAN_LABEL

matplotlib.use("Agg")

VALLEY = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)  # tutorial 01's and the demo's
T01 = {
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}
TIMES = r"(\d+(?:\.\d)?)×"
# the window stated first, the best run after the colon, then its ratios to the next two
RANKED = (
    r"Lowest (?:mean loss over k = (\d+)–(\d+)|loss after (\d+) updates?): "
    rf"(\w+), {TIMES} below (\w+)(?:, {TIMES} below (\w+))?$"
)


@pytest.fixture(scope="module")
def t01():
    """Tutorial 01's two runs: 40 updates on the condition-10 valley (the 176× case)."""
    return VALLEY, dtsgd_viz.run(VALLEY, T01, steps=40)


@pytest.fixture(scope="module")
def t03():
    """Tutorial 03's three runs: 60 updates on the condition-20 valley."""
    from helpers.builders import tutorial_03_runs

    return tutorial_03_runs(60)


def after_k(rec, surface):
    """numpy: the loss after k = 0..N updates, at the recorded parameters (float64)."""
    return surface.value_np(rec.path("w").astype(np.float64))


def tail_of(n):
    return max(1, min(10, n // 5))


def text(s: str) -> str:
    return " ".join(s.split())  # wrapped lines and no-break spaces as single spaces


def same_printed(printed: str, value: float):
    """``printed`` (``"433"``, ``"2.5"``) is ``value`` as the figures round it."""
    tol = 0.05 if "." in printed else 0.5
    assert abs(float(printed) - value) <= tol + 1e-9, (printed, value)


def check_ranked_headline(line, runs, surface, upto=None):
    """The numbers of a "... lowest: N× below ..." headline against numpy: the window
    is the last fifth (1 to 10) of the updates up to ``upto``, each ratio that of the
    runs' mean loss after k updates over it, the best run the lowest mean."""
    n = upto or min(len(r) for r in runs.values())
    m = re.match(RANKED, line)
    assert m, line
    a, b = (int(m[1]), int(m[2])) if m[1] else (int(m[3]), int(m[3]))
    assert (a, b) == (n - tail_of(n) + 1, n)  # the window ends at the last update counted (upto)
    means = {rule_name(k): float(after_k(r, surface)[a : b + 1].mean()) for k, r in runs.items()}
    assert m[4] == min(means, key=means.get)
    for times, other in ((m[5], m[6]), (m[7], m[8])):
        if other:
            same_printed(times, means[other] / means[m[4]])
    return m


# ---- the findings themselves ---------------------------------------------------------


@pytest.mark.slow
def test_tutorial_01_compares_the_mean_after_k_updates_not_the_loss_before_the_last(t01):
    surface, runs = t01
    f = dtsgd_viz.findings(runs, surface)
    after = {k: after_k(r, surface) for k, r in runs.items()}
    for k, r in runs.items():
        # the recorded loss of update k is what its forward pass saw: the loss after k - 1 updates
        np.testing.assert_allclose(r.loss, after[k][:-1], rtol=1e-5)
        assert f.final_loss[k] == pytest.approx(after[k][-1], rel=1e-12)  # the notebook's printed line
        assert f.tail_loss[k] == pytest.approx(after[k][33:].mean(), rel=1e-12)
    assert (f.last_k, f.window, f.tail, f.from_surface) == (40, (33, 40), 8, True)
    assert f.ranking == ("nesterov", "momentum") and not f.level
    ratio = after["momentum"][33:].mean() / after["nesterov"][33:].mean()
    assert f.times["momentum"] == pytest.approx(ratio, rel=1e-12)
    # neither the loss before update 40 (176×) nor the last point alone (11.5×): both are
    # single points of momentum's saw-tooth, which swings many times over within the window
    assert abs(ratio - after["momentum"][39] / after["nesterov"][39]) > 0.5 * ratio
    assert abs(ratio - after["momentum"][40] / after["nesterov"][40]) > 0.5 * ratio
    assert f.swing["momentum"] == pytest.approx(after["momentum"][33:].max() / after["momentum"][33:].min())
    # the update after which the runs' parameters are furthest apart (numpy)
    p = {k: r.path("w").astype(np.float64) for k, r in runs.items()}
    d = np.linalg.norm(p["momentum"][1:] - p["nesterov"][1:], axis=1)
    assert f.apart == (int(np.argmax(d)) + 1, pytest.approx(d.max(), rel=1e-12))


@pytest.mark.slow
def test_without_a_surface_the_means_are_compare_findings(t03):
    _, runs = t03
    f, c = dtsgd_viz.findings(runs), dtsgd_viz.compare_findings(runs)
    assert f.from_surface is False and f.last_k == 59 and f.window == (50, 59)
    for k, r in runs.items():
        assert f.tail_loss[k] == pytest.approx(c.final_loss[k], rel=1e-12)
        assert f.tail_loss[k] == pytest.approx(np.mean(np.asarray(r.loss, np.float64)[-10:]), rel=1e-12)
        assert f.final_loss[k] == r.loss[-1]  # after 59 updates: the last one the recording saw
    assert f.lowest == c.lowest and max(f.times.values()) == pytest.approx(c.ratio, rel=1e-12)


@pytest.mark.slow
def test_the_printout_states_the_figures_numbers(t03):
    surface, runs = t03
    f = dtsgd_viz.findings(runs, surface, step=5, tol=1e-3)
    out = str(f)
    assert "loss after k updates, from the surface at the recorded parameters" in out
    assert f.headline() in out and f.update_headline() in out
    for k, r in runs.items():
        after = after_k(r, surface)
        row = next(line for line in out.splitlines() if line.strip().startswith(rule_name(k) + " "))
        assert f"{after[-1]:.2e}" in row and f"{after[51:].mean():.2e}" in row
        # the tolerance column: the first k after which the loss stays within 1e-3 of the minimum
        ok = np.abs(after - surface.min_value) <= 1e-3
        stays = [j for j in range(len(after)) if ok[j:].all()]
        assert (f"from k = {stays[0]}" if stays else "never") in row
    u, dist = f.apart
    assert f"paths furthest apart after update {u}: {dist:.3g} apart" in out


@pytest.mark.slow
def test_bad_input_is_a_clear_error(t01):
    surface, runs = t01
    with pytest.raises(ValueError, match="non-empty dict"):
        dtsgd_viz.findings({}, surface)
    with pytest.raises(TypeError, match="surface must be"):
        dtsgd_viz.findings(runs, "valley")
    with pytest.raises(ValueError, match="41"):
        dtsgd_viz.findings(runs, surface, upto=41)
    with pytest.raises(ValueError, match="step"):
        dtsgd_viz.findings(runs, surface, step=99)


# ---- the figures say them ------------------------------------------------------------


def check_loss_axis(ax):
    assert ax.get_xlabel() == "updates made (k)" and ax.get_ylabel() == "loss after k updates"
    assert ax.get_title().startswith("Loss after k updates")


@pytest.mark.parametrize("which, step", [("t01", 4), ("t03", 5)])
@pytest.mark.slow
def test_plot_paths_states_the_findings(request, which, step):
    surface, runs = request.getfixturevalue(which)
    fig = dtsgd_viz.plot_paths(runs, surface, step=step)
    f = dtsgd_viz.findings(runs, surface, step=step)
    finding, settings = headline_texts(fig)
    assert text(finding) == text(f.headline())
    check_ranked_headline(text(finding), runs, surface)
    ax_path, ax_loss = fig.axes[:2]
    check_loss_axis(ax_loss)
    # update 4 of 01 is drawn as arrows, 03's update 5 is too short to see at the paths' scale
    assert ax_path.get_title() in (f"Update {step}: its terms as arrows", f"Update {step} marked")
    gids = lambda prefix: {
        a.get_gid()[len(prefix) :]: a
        for a in ax_loss.lines  # noqa: E731
        if (a.get_gid() or "").startswith(prefix)
    }
    lines, dots, bars = gids("loss:"), gids("loss-marker:"), gids("loss-mean:")
    a, b = f.window
    for k, r in runs.items():
        after = after_k(r, surface)
        np.testing.assert_array_equal(lines[k].get_xdata(), np.arange(len(r) + 1))
        np.testing.assert_allclose(lines[k].get_ydata(), after, rtol=1e-12)
        # the dot: at the ring, the parameters after the update: the loss after step updates
        np.testing.assert_allclose(dots[k].get_xydata()[0], [step, after[step]], rtol=1e-12)
        np.testing.assert_allclose(bars[k].get_xdata(), [a, b])  # the headline's mean, across its window
        assert bars[k].get_ydata()[0] == pytest.approx(after[a : b + 1].mean(), rel=1e-12)
    (line,) = gids("step-line").values()
    assert line.get_xdata()[0] == step
    (band,) = [p for p in ax_loss.patches if p.get_gid() == "loss-window"]
    assert (band.get_x(), band.get_x() + band.get_width()) == pytest.approx((a, b))
    # the legend says what the rings are; no caption
    assert [t.get_text() for t in fig.legends[0].get_texts()][-2:] == [f"after update {step}", MEAN_LABEL]
    assert fig._supxlabel is None


@pytest.mark.slow
def test_plot_paths_takes_apart_where_the_findings_say_the_paths_are_furthest_apart(t03):
    surface, runs = t03
    f = dtsgd_viz.findings(runs, surface)
    title = dtsgd_viz.plot_paths(runs, surface, arrows=True).axes[0].get_title()
    assert title == f"Update {f.apart[0]}: where the runs differ most"
    # numpy: between the two runs with momentum, the largest distance after an update
    p = {k: r.path("w").astype(np.float64) for k, r in runs.items()}
    d = np.linalg.norm(p["momentum"][1:] - p["nesterov"][1:], axis=1)
    assert f.apart[0] == int(np.argmax(d)) + 1 and f.apart[1] == pytest.approx(d.max(), rel=1e-12)


@pytest.mark.slow
def test_plot_update_states_the_findings(t03):
    surface, runs = t03
    step = 5
    fig = dtsgd_viz.plot_update(runs, surface, step=step)
    f = dtsgd_viz.findings(runs, surface, step=step)
    finding = text(headline_texts(fig)[0])
    assert finding == text(f.update_headline())
    # numpy on the recordings: each run's step p_5 - p_4 and its terms (tf-keras' rule)
    total, terms = {}, {}
    for k, r in runs.items():
        p = r.path("w").astype(np.float64)
        g = r.global_values("w", "grad").astype(np.float64)
        v = r.global_values("w", "velocity").astype(np.float64)
        hp = r.hyperparameters
        lr, mu, i = float(hp.learning_rate[step - 1]), float(hp.momentum), step - 1
        total[k] = p[step] - p[step - 1]
        terms[k] = {"gradient": lr * np.linalg.norm(g[i])}
        if mu:
            terms[k]["lookahead" if hp.nesterov else "momentum"] = mu * np.linalg.norm(
                v[i] if hp.nesterov else v[i - 1]
            )
        for term, vec in f.terms[k].terms:
            assert np.linalg.norm(vec) == pytest.approx(terms[k][term], rel=1e-6)
    m = re.match(rf"Update {step}: (\w+)'s step is {TIMES} (\w+)'s and {TIMES} (\w+)'s, at (\d+)° to both$", finding)
    assert m, finding
    size = {rule_name(k): np.linalg.norm(t) for k, t in total.items()}
    assert m[1] == max(size, key=size.get)
    same_printed(m[2], size[m[1]] / size[m[3]])
    same_printed(m[4], size[m[1]] / size[m[5]])
    top = next(k for k in runs if rule_name(k) == m[1])
    for other in runs:
        if other != top:
            cos = total[top] @ total[other] / (np.linalg.norm(total[top]) * np.linalg.norm(total[other]))
            assert abs(np.degrees(np.arccos(cos)) - int(m[6])) < 5
    # the lengths chart gives each term's true length, as findings and numpy have it
    short = {"momentum": "|μ·v|", "lookahead": "|μ·v|", "gradient": "|−lr·g|"}
    said = {t.get_gid(): t.get_text() for t in fig.axes[-1].texts}
    printed = str(f)
    seen = 0
    for key, by_term in terms.items():
        for term, length in by_term.items():
            value = said[f"length-label:{key}:{short[term]}"].split()[-1]
            assert float(value) == pytest.approx(float(f"{length:.3g}"), rel=1e-9) and value in printed
            seen += 1
    assert seen == sum(len(t) for t in terms.values())
    # the panels name the terms without lengths (the chart says them); each title names its run
    # (and, here where plain's update is too small at the shared zoom, the panel's own zoom)
    assert [ax.get_title().split(" · ")[0] for ax in fig.axes[:-1]] == [rule_name(k) for k in runs]


@pytest.mark.slow
def test_animation_frames_state_the_findings(t01, tmp_path):
    surface, runs = t01
    anim = dtsgd_viz.animate(runs, surface, frames=[4, 20, 40], zoom=False, hold=0)
    fig = anim._fig
    ax_path, ax_loss = fig.axes[:2]
    for i in (3, 19, 39):  # recording indices: updates 4, 20, 40
        anim._func(i)
        u = i + 1
        f = dtsgd_viz.findings(runs, surface, upto=u)  # the frame's own headline
        assert text(headline_texts(fig)[0]) == text(f.headline())
        check_loss_axis(ax_loss)
        assert re.match(rf"Update {u}(:| marked$)", ax_path.get_title()), ax_path.get_title()
        for line in ax_loss.lines:
            gid = line.get_gid() or ""
            if gid.startswith("loss-marker:"):  # at the ring: the parameters after update u
                after = after_k(runs[gid[12:]], surface)
                np.testing.assert_allclose(line.get_xydata()[0], [u, after[u]], rtol=1e-12)
            if gid == "step-line":
                assert line.get_xdata()[0] == u
            if gid.startswith("loss-mean:"):  # the means the frame's headline compares
                assert line.get_ydata()[0] == pytest.approx(f.tail_loss[gid[10:]], rel=1e-12)
    anim.save(tmp_path / "paths.gif", writer="pillow")  # the frames, as the demo's GIF has them
    assert (tmp_path / "paths.gif").stat().st_size > 0


@pytest.mark.slow
def test_path_explorer_headline_is_findings_up_to_the_update(t03):
    from dtsgd_viz.widgets import PathExplorer

    surface, runs = t03
    w = PathExplorer(runs, surface, step=20, zoom=False)
    art = w.view.artists
    check_loss_axis(art.ax_loss)
    for u in (20, 1, 7, 60):
        w.slider.value = u
        finding = text(headline_texts(w.figure)[0])
        assert finding == text(dtsgd_viz.findings(runs, surface, upto=u).headline()), u
        if u > 1:  # at update 1 nothing is ranked yet by more than the first update
            check_ranked_headline(finding, runs, surface, upto=u)
        for k, dot in art.loss_markers.items():
            after = after_k(runs[k], surface)
            np.testing.assert_allclose(dot.get_xydata()[0], [u, after[u]], rtol=1e-12)  # update u at k = u
        assert art.step_line.get_xdata()[0] == u == dtsgd_viz.findings(runs, surface, upto=u).window[1]


@pytest.mark.slow
def test_compare_widget_headline_is_findings(t03):
    from dtsgd_viz.widgets import CompareWidget

    surface, runs = t03
    w = CompareWidget(surface, learning_rate=0.05, momentum=0.9, steps=60, background=False)
    assert w.error is None
    finding = text(headline_texts(w.figure)[0])
    assert finding == text(dtsgd_viz.findings(w.recordings, surface).headline())
    check_ranked_headline(finding, w.recordings, surface)
    check_loss_axis(w.view.artists.ax_loss)
    f = dtsgd_viz.findings(runs, surface)  # the same rules and start: the same numbers as plot_paths'
    assert text(f.headline()) == finding


@pytest.mark.slow
def test_the_demo_summary_prints_the_findings():
    """``make demo``'s table: each run's loss after N updates and its mean over the last
    updates, numpy at the recorded parameters of the demo's own loss; the line under it
    is the findings' headline."""
    from dtsgd_viz.cli import demo

    runs = demo.run_demo(12)
    out = demo.summary(runs)
    recs = {r.name: r.recording for r in runs}
    f = dtsgd_viz.findings(recs, demo.demo_surface(), tol=1e-3)
    assert text(f.headline()) in text(out)
    c = surfaces.ShardedQuadratic().curvature
    for name, rec in recs.items():
        w = rec.path("w").astype(np.float64)
        after = np.sum(c * (w - 1.0) ** 2 / 2.0, axis=(1, 2))  # the demo's loss, sum(c*(w-1)^2/2)
        np.testing.assert_allclose(after[:-1], rec.loss, rtol=1e-5)  # what each update's forward pass saw
        row = next(line.split() for line in out.splitlines() if line.startswith(name + " "))
        assert float(row[3]) == float(f"{after[-1]:.3e}")
        assert float(row[4]) == float(f"{after[-tail_of(12) :].mean():.3e}")
    assert "mean k=11-12" in out and "after 12" in out
