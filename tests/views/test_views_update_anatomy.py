"""plot_update (the anatomy of one update, one close-up panel per run), checked through
the figure's data: the arrows against the recorded update and the reference rule, the
zoom factor in each title against the axes' spans, the headline against the recorded
steps, the type sizes and width against the one scale; bad input raises."""

import numpy as np
import pytest
from helpers.arrows import assert_tail
from helpers.synthetic_paths import synthetic

import dtsgd_viz
from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.paths.plot import draw_paths
from dtsgd_viz.views.update import geometry as upd

ROTATED = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
PLANAR = surfaces.ShardedQuadratic((2, 4), {"x": 2}, ("x", "unsharded"), curvature=(0.2, 1.0))
RULES = {"plain": (0.05, 0.0, False), "momentum": (0.05, 0.9, False), "nesterov": (0.05, 0.9, True)}


@pytest.fixture(scope="module")
def runs():
    return {k: synthetic(ROTATED, 30, lr, mu, nest) for k, (lr, mu, nest) in RULES.items()}


def by_gid(fig, prefix):
    return {
        a.get_gid()[len(prefix) :]: a
        for ax in fig.axes
        for a in [*ax.lines, *ax.collections]
        if (a.get_gid() or "").startswith(prefix)
    }


def panel_of(fig, key):
    return by_gid(fig, "zoom-position:")[key].axes


@pytest.mark.parametrize("update", [1, 5, -1])
@pytest.mark.slow
def test_the_arrows_add_up_to_the_recorded_update_tip_to_tail(runs, update):
    fig = dtsgd_viz.plot_update(runs, ROTATED, step=update)
    k = update if update > 0 else 30 + 1 + update
    assert len(fig.axes) == len(runs) + 1  # one panel per run and the lengths chart
    for key, rec in runs.items():
        i = list(rec.steps).index(k)
        path = rec.path("w").astype(np.float64)
        lr, mu, nest = RULES[key]
        arrows = {gid.split(":", 1)[1]: q for gid, q in by_gid(fig, "zoom-arrow:").items() if gid.startswith(key + ":")}
        order = ["gradient"] if mu == 0 else ["lookahead" if nest else "momentum", "gradient"]
        assert sorted(arrows) == sorted(order)
        tip, before = path[i], None
        for term in order:
            q = arrows[term]
            uv = np.array([float(q.U[0]), float(q.V[0])])  # drawn at its true length
            assert_tail(np.asarray(q.get_offsets())[0], tip, before, uv)  # tip to tail, or beside a fold
            tip, before = tip + uv, uv
            assert q.axes is panel_of(fig, key)
        # they end on the recorded next point, where the numpy reference rule goes
        np.testing.assert_allclose(tip, path[i + 1], rtol=1e-5, atol=1e-6)
        g = rec.global_values("w", "grad")[i].astype(np.float64)
        v_prev = rec.global_values("w", "velocity")[i - 1].astype(np.float64) if i else np.zeros(2)
        p_ref, _ = reference.sgd_step(path[i], g, v_prev, lr, mu, nest)
        np.testing.assert_allclose(tip, p_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(by_gid(fig, "zoom-position:")[key].get_xydata()[0], path[i])
        # the step: a thin line from the ring to the recorded next point (two terms; one term is its own arrow)
        ax = panel_of(fig, key)
        steps = [ln for ln in ax.lines if ln.get_gid() == f"zoom-step:{key}"]
        assert len(steps) == (len(order) > 1)
        for line in steps:
            np.testing.assert_allclose(line.get_xydata()[0], path[i], atol=1e-12)
            np.testing.assert_allclose(line.get_xydata()[1], path[i + 1], rtol=1e-5, atol=1e-6)
        # g is taken at the ring (tf-keras stores Nesterov's look-ahead point): no other point is marked
        assert not {"lookahead:", "iterate:"} & {(a.get_gid() or "")[:9] for a in [*ax.lines, *ax.collections]}


@pytest.mark.slow
def test_one_zoom_for_every_panel_said_once_and_an_inset_only_for_an_update_too_small(runs):
    import re

    from dtsgd_viz.views.update.zoom import INSET_BELOW, INSET_RECT

    paths = dtsgd_viz.plot_paths(runs, ROTATED, step=5).axes[0]
    main = max(np.ptp(paths.get_xlim()), np.ptp(paths.get_ylim()))
    for step in (1, 5, 20):
        fig = dtsgd_viz.plot_update(runs, ROTATED, step=step)
        spans = {k: max(np.ptp(panel_of(fig, k).get_xlim()), np.ptp(panel_of(fig, k).get_ylim())) for k in runs}
        assert max(spans.values()) == pytest.approx(min(spans.values()), rel=1e-9)  # one zoom
        caption = fig.get_supxlabel()
        assert "\n" not in caption and caption.startswith(f"Update {step} up close: ")
        shown = float(re.search(r"every panel spans 1/([\d.]+) of the paths' width", caption).group(1))
        assert shown == pytest.approx(main / spans["plain"], rel=0.06, abs=0.06)
        assert [panel_of(fig, k).get_title() for k in runs] == [rule_name(k) for k in runs]
        for key in runs:
            ax = panel_of(fig, key)
            rec = runs[key]
            path = rec.path("w").astype(np.float64)
            lr, mu, nest = RULES[key]
            v_prev = rec.global_values("w", "velocity")[step - 2].astype(np.float64) if step > 1 else np.zeros(2)
            g = rec.global_values("w", "grad")[step - 1].astype(np.float64)
            # the update itself: the ring, the first arrow's tip and the point after (not the iterate)
            drawn = [path[step - 1], path[step], path[step - 1] + mu * (mu * v_prev - lr * g if nest else v_prev)]
            reach = np.ptp(np.array(drawn), axis=0).max()
            insets = ax.child_axes
            if not insets:  # readable at the shared zoom: with its pad round it, at least INSET_BELOW of it
                assert reach * 1.31 >= INSET_BELOW * spans[key] * 0.999
                continue
            (inset,) = insets
            own = max(np.ptp(inset.get_xlim()), np.ptp(inset.get_ylim()))
            assert own < INSET_BELOW * spans[key] and reach <= own  # too small there, whole here
            closer = main / own  # of the paths' width, as the caption's share
            (said,) = [t.get_text() for t in inset.texts if (t.get_gid() or "").startswith("inset-zoom:")]
            assert said == (f"1/{closer:.0f}" if closer >= 9.5 else f"1/{closer:.1f}")
            assert said not in caption  # said once, in the inset
            # its dotted box on the panel: exactly what it enlarges, over the marks however small
            box = next(p for p in ax.patches if p.get_gid() == f"inset-box:{key}")
            (x0, x1), (y0, y1) = inset.get_xlim(), inset.get_ylim()
            np.testing.assert_allclose([box.get_x(), box.get_x() + box.get_width()], [x0, x1], atol=1e-12 * spans[key])
            np.testing.assert_allclose([box.get_y(), box.get_y() + box.get_height()], [y0, y1], atol=1e-12 * spans[key])
            assert box.get_zorder() > max(ln.get_zorder() for ln in ax.lines if "zoom-" in (ln.get_gid() or ""))
            fig.draw_without_rendering()
            # the update and its box in the lower left, clear of the inset; a dotted leader from it to the inset
            on_panel = ax.transAxes.inverted().transform(ax.transData.transform(np.array(drawn)))
            assert on_panel.max() < INSET_RECT[0] and on_panel.min() > 0, (key, on_panel)
            (leader,) = [ln for ln in ax.lines if ln.get_gid() == f"inset-leader:{key}"]
            ends = ax.transData.transform(leader.get_xydata())
            x1, y1 = box.get_x() + box.get_width(), box.get_y() + box.get_height()
            np.testing.assert_allclose(ends[0], ax.transData.transform((x1, y1)), atol=1e-6)  # the box's corner
            np.testing.assert_allclose(ends[1], inset.get_window_extent().p0, atol=1.0)  # the inset's
            assert leader.get_linestyle() == box.get_linestyle() == ":"


@pytest.mark.slow
def test_the_lengths_chart_draws_each_term_as_recorded_and_as_findings_prints_it(runs):
    fig = dtsgd_viz.plot_update(runs, ROTATED, step=5)
    chart = fig.axes[-1]
    bars = {p.get_gid(): p for p in chart.patches if (p.get_gid() or "").startswith("length:")}
    texts = {t.get_gid(): t.get_text() for t in chart.texts}
    printed = str(dtsgd_viz.findings(runs, ROTATED, step=5))
    for key, rec in runs.items():
        i = list(rec.steps).index(5)
        lr, mu, nest = RULES[key]
        path = rec.path("w").astype(np.float64)
        g = rec.global_values("w", "grad")[i].astype(np.float64)
        v_prev = rec.global_values("w", "velocity")[i - 1].astype(np.float64)
        v_new = mu * v_prev - lr * g
        want = {"|−lr·g|": lr * np.linalg.norm(g), "|step|": np.linalg.norm(path[i + 1] - path[i])}
        if mu:
            want["|μ·v|"] = mu * np.linalg.norm(v_new if nest else v_prev)
        assert {gid.split(":")[2] for gid in bars if gid.split(":")[1] == key} == set(want)
        for what, length in want.items():
            bar = bars[f"length:{key}:{what}"]
            assert bar.get_x() == 0 and bar.get_width() == pytest.approx(length, rel=1e-5)
            said = texts[f"length-label:{key}:{what}"].split()[-1]
            assert float(said) == pytest.approx(length, rel=5e-3) and said in printed
            if what == "|μ·v|":  # which velocity the bar measures, named on it
                term = upd.TERM_SHORT["lookahead" if nest else "momentum"]
                assert term in texts[f"length-label:{key}:{what}"]
    # one axis, starting at 0, reaching past the longest bar
    assert chart.get_xlim()[0] == 0 and chart.get_xlim()[1] > max(b.get_width() for b in bars.values())


@pytest.mark.slow
def test_the_headline_says_which_step_is_longer_and_by_how_much(runs):
    fig = dtsgd_viz.plot_update(runs, ROTATED, step=5)
    finding, settings = headline_texts(fig)
    steps = {k: float(np.linalg.norm(np.diff(r.path("w").astype(np.float64), axis=0)[4])) for k, r in runs.items()}
    ranked = sorted(steps, key=lambda k: -steps[k])
    assert finding.startswith(f"Update 5: {rule_name(ranked[0])}'s step is ")
    for k in ranked[1:]:
        ratio = steps[ranked[0]] / steps[k]
        k = rule_name(k)
        assert (f"{ratio:.0f}× {k}'s" if ratio >= 9.5 else f"{ratio:.1f}× {k}'s") in finding
    assert "lr 0.05" in settings and "μ 0.9" in settings
    # two runs: the angle between their steps
    two = {k: runs[k] for k in ("momentum", "nesterov")}
    d = {k: np.diff(r.path("w").astype(np.float64), axis=0)[4] for k, r in two.items()}
    angle = np.degrees(
        np.arccos(d["momentum"] @ d["nesterov"] / np.linalg.norm(d["momentum"]) / np.linalg.norm(d["nesterov"]))
    )
    finding, _ = headline_texts(dtsgd_viz.plot_update(two, ROTATED, step=5))
    assert finding.endswith(f"{angle:.0f}° apart") if angle >= 10 else finding.endswith("same line")


@pytest.mark.slow
def test_without_a_step_it_takes_apart_the_update_plot_paths_picks(runs):
    fig = dtsgd_viz.plot_update(runs, ROTATED)
    import re  # the update plot_paths' path panel names in its title ("... update N ...")

    k = int(re.search(r"[Uu]pdate (\d+)", dtsgd_viz.plot_paths(runs, ROTATED).axes[0].get_title()).group(1))
    assert headline_texts(fig)[0].startswith(f"Update {k}: ")
    assert " ".join(headline_texts(fig)[1].split()).endswith("the update where the runs differ most")
    # one run: one panel, a headline that says what carries its step
    one = dtsgd_viz.plot_update(runs["momentum"], ROTATED, step=3)
    assert len(one.axes) == 2  # the panel and the lengths chart
    assert "μ·v_prev" in headline_texts(one)[0] and "−lr·g" in headline_texts(one)[0]


@pytest.mark.slow
def test_projected_runs_are_on_the_plane_plot_paths_draws():
    recs = dtsgd_viz.run(
        PLANAR,
        {
            "momentum": dict(learning_rate=0.5, momentum=0.9),
            "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True),
        },
        8,
    )
    fig = dtsgd_viz.plot_update(recs, PLANAR, step=3)
    scene = draw_paths(recs, PLANAR).scene
    for key, _rec in recs.items():
        np.testing.assert_allclose(by_gid(fig, "zoom-position:")[key].get_xydata()[0], scene.coords[key][2], atol=1e-9)
    # the finding's lengths and angle are measured on the recorded vectors, not the plane
    dim = int(np.prod(recs["momentum"].path("w").shape[1:]))
    title = fig.get_suptitle().replace("\n", " ")
    assert dim == 8 and "in all 8 parameters" in title
    # the headline breaks between phrases: no bracket, no line ending inside the phrase
    assert "(" not in title and all(
        not line.rstrip().endswith(("in", "in all", "all 8")) for line in fig.get_suptitle().split("\n")
    )
    plain = dtsgd_viz.run(ROTATED, {"plain": dict(learning_rate=0.05)}, 3)
    assert "in all" not in dtsgd_viz.plot_update(plain, ROTATED, step=2).get_suptitle()  # 2 numbers


@pytest.mark.slow
def test_readable_at_the_notebook_width(runs):
    from matplotlib.text import Text

    for recs in (runs, {k: runs[k] for k in ("momentum", "nesterov")}):
        fig = dtsgd_viz.plot_update(recs, ROTATED, step=5)
        assert fig.get_figwidth() <= style.WIDTH + 1e-9
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text()]
        assert min(t.get_fontsize() for t in texts) >= style.NOTE_SIZE
        labels = [t for ax in fig.axes for t in ax.texts if (t.get_gid() or "").startswith("zoom-label:")]
        # large type, or where a tight panel needs it the tick labels' (>= 9 px): the data fill the panel
        assert labels and all(t.get_fontsize() >= style.TICK_SIZE for t in labels)
        assert max(t.get_fontsize() for t in labels) > style.TICK_SIZE
        # nothing sticks out of the figure: the notebook crops to what is drawn, + PAD a side
        tight = fig.get_tightbbox(renderer)  # inches
        assert (tight.width + 2 * style.PAD) * style.DPI <= style.MAX_WIDTH_PX
        for ax in fig.axes:  # the labels stay in their panels
            p = ax.get_window_extent(renderer)
            for t in ax.texts:
                b = t.get_window_extent(renderer)
                assert p.x0 - 2 <= b.x0 and b.x1 <= p.x1 + 2 and p.y0 - 2 <= b.y0 and b.y1 <= p.y1 + 2


def test_bad_input_is_a_clear_error(runs):
    with pytest.raises(
        ValueError,
        match=r"step=31 is out of range\. Allowed: a recorded update "
        r"\(updates 1\.\.30\).*None \(the update where the runs differ most\)",
    ):
        dtsgd_viz.plot_update(runs, ROTATED, step=31)
    with pytest.raises(ValueError, match=r"step=0"):
        dtsgd_viz.plot_update(runs, ROTATED, step=0)
    with pytest.raises(ValueError, match=r"step must be an int.*Received: step=1\.5 \(float\)"):
        dtsgd_viz.plot_update(runs, ROTATED, step=1.5)
    with pytest.raises(ValueError, match="non-empty dict"):
        dtsgd_viz.plot_update({}, ROTATED)
    with pytest.raises(TypeError, match="surface must be a dtsgd_viz.surfaces surface"):
        dtsgd_viz.plot_update(runs, object())
    with pytest.raises(ValueError, match="Unknown variable 'v'"):
        dtsgd_viz.plot_update(runs, ROTATED, name="v")
    # what the recording cannot take apart: said, with what to do instead
    every2 = synthetic(ROTATED, 6, 0.05, 0.9, every=2)
    with pytest.raises(
        ValueError,
        match=r"cannot take update 4 of 'm' apart: update 3, just before "
        r"update 4, is not recorded.*arrows=False",
    ):
        dtsgd_viz.plot_update({"m": every2}, ROTATED, step=4)
    params_only = synthetic(ROTATED, 4, 0.05, 0.9, kinds=("param",))
    with pytest.raises(ValueError, match="kinds grad, velocity not recorded"):
        dtsgd_viz.plot_update({"m": params_only}, ROTATED)


def test_the_finding_of_terms_that_are_not_finite():
    t = lambda *v: upd.UpdateTerms(2, 1, np.zeros(2), (("gradient", np.array(v)),), np.array(v))  # noqa: E731
    from dtsgd_viz.views.update.plot import update_finding

    assert update_finding({"a": t(np.inf, 0.0)}, 2) == "Update 2: not finite; a: not finite"
    assert update_finding({"a": t(1.0, 0.0), "b": t(2.0, 0.0)}, 2) == (
        "Update 2: b's step is 2.0× a's, along the same line"
    )


@pytest.mark.slow
def test_each_arrow_is_named_once_beside_the_middle_of_its_shaft_and_no_text_clashes(runs):
    from dtsgd_viz.views.text.clashes import clashes

    for step in (1, 5, 20):
        fig = dtsgd_viz.plot_update(runs, ROTATED, step=step)
        fig.canvas.draw()
        for key in runs:
            ax = panel_of(fig, key)
            assert clashes(ax) == [], (step, key)
            # an update too small at the shared zoom is named in its inset (same data coordinates), beside its arrows
            named = ax.child_axes[0] if ax.child_axes else ax
            gids = {q.get_gid() or "": q for q in named.collections}
            arrows = {g.split(":")[2]: q for g, q in gids.items() if g.startswith(f"zoom-arrow:{key}:")}
            assert clashes(named) == [], (step, key)
            names = {t.get_gid().split(":")[2]: t for t in named.texts if (t.get_gid() or "").startswith("zoom-label:")}
            assert not (named is not ax and any((t.get_gid() or "").startswith("zoom-label:") for t in ax.texts))
            assert sorted(names) == sorted(arrows)  # one name per arrow
            for term, q in arrows.items():
                tail, uv = np.asarray(q.get_offsets())[0], np.array([float(q.U[0]), float(q.V[0])])
                zero = not np.hypot(*uv) > 0
                assert names[term].get_text() == upd.TERM_SHORT[term] + (" = 0" if zero else "")
                np.testing.assert_allclose(names[term].xy, tail + (0 if zero else uv / 2), atol=1e-12)


@pytest.mark.slow
def test_the_key_names_the_marks_every_panel_draws(runs):
    both = dtsgd_viz.plot_update(runs, ROTATED, step=5)
    texts = [t.get_text() for t in both.axes[-1].get_legend().get_texts()]
    assert texts == ["before the update: g taken here", "after it", "step (the arrows' sum)", "path so far"]
    for key in runs:  # the marks the key names are drawn in every panel
        ax = panel_of(both, key)
        assert {f"zoom-position:{key}", f"zoom-next:{key}"} <= {ln.get_gid() for ln in ax.lines}
        assert f"zoom-trail:{key}" in {c.get_gid() for c in ax.collections}
    assert "zoom-step:nesterov" in {ln.get_gid() for ln in panel_of(both, "nesterov").lines}
