"""plot_modes: each mode's curve is the real recorded parameter projected on a Hessian
eigenvector; its envelope and the rate curves are the spectral radius computed here."""

import dataclasses

import matplotlib
import numpy as np
import pytest
from helpers.theory_reference import radius

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.rates.modes import mode_envelope

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)
STEPS = 25


@pytest.fixture(scope="module")
def recs():
    return dtsgd_viz.run(SURFACE, CONFIGS, STEPS)


@pytest.fixture(scope="module")
def fig(recs):
    return dtsgd_viz.plot_modes(recs, SURFACE)


def lines(ax):
    return {line.get_gid(): line for line in ax.lines if line.get_gid()}


@pytest.mark.slow
def test_mode_curves_are_the_recorded_parameters_projected_on_the_eigenvectors(fig, recs):
    h, U = np.linalg.eigh(SURFACE.hessian)
    axes = {ax.get_label(): ax for ax in fig.axes}
    assert [ax.get_yscale() for ax in (axes["mode:0"], axes["mode:1"])] == ["log", "log"]
    for i in range(2):
        drawn = lines(axes[f"mode:{i}"])
        assert f"h = {h[i]:g}" in axes[f"mode:{i}"].get_title()
        for key, rec in recs.items():
            path = rec.path("w").astype(np.float64)
            expected = np.abs(path @ U[:, i])  # the minimum is the origin
            k, y = drawn[f"mode:{i}:{key}"].get_data()
            np.testing.assert_array_equal(k, np.arange(STEPS + 1))
            ok = expected > 0
            np.testing.assert_allclose(np.asarray(y)[ok], expected[ok], rtol=1e-12, atol=1e-15)


@pytest.mark.slow
def test_each_envelope_shrinks_by_the_spectral_radius_and_bounds_the_real_run(fig, recs):
    h, U = np.linalg.eigh(SURFACE.hessian)
    axes = {ax.get_label(): ax for ax in fig.axes}
    for i in range(2):
        drawn = lines(axes[f"mode:{i}"])
        for key, rec in recs.items():
            hp = rec.hyperparameters  # as tf-keras applied them (through float32)
            rho = radius(float(hp.learning_rate[0]), hp.applied_momentum, h[i], hp.nesterov)
            env = np.asarray(drawn[f"envelope:{i}:{key}"].get_ydata())
            err = np.abs(rec.path("w").astype(np.float64) @ U[:, i])
            if rho < 1e-6:  # lr * h = 1 for plain SGD: the mode is gone after one update
                assert np.all(~(env[2:] >= 1e-6 * err[0])) and np.all(err[1:] < 1e-6 * err[0])
                continue
            np.testing.assert_allclose(
                env,
                mode_envelope(
                    err[0] * np.sign(rec.path("w")[0] @ U[:, i]),
                    float(hp.learning_rate[0]),
                    hp.applied_momentum,
                    h[i],
                    hp.nesterov,
                    STEPS,
                ),
                rtol=1e-12,
            )
            k = np.arange(len(env))
            assert np.all(env <= env[0] * (1 + k) * rho**k * (1 + 1e-9)), (key, i)  # shrinks by rho
            assert np.all(err <= env * (1 + 1e-4) + 1e-6), (key, i)
            assert np.max((err / env)[5:]) > 0.5  # tight: the run comes close to it


def test_envelope_of_an_oscillating_mode_is_its_amplitude():
    # heavy ball in the complex region: e_k = 2|c| rho^k cos(k theta + phi)
    lr, mu, h = 0.05, 0.9, 10.0
    env = mode_envelope(1.0, lr, mu, h, False, 200)
    M = np.array([[1 - lr * h, mu], [-lr * h, mu]])
    s, e = np.array([1.0, 0.0]), []
    for _ in range(201):
        e.append(s[0])
        s = M @ s
    assert np.all(np.abs(e) <= env + 1e-12) and np.max(np.abs(e) / env) > 0.99


def test_rate_panel_draws_both_rules_and_marks_each_eigenvalue(fig):
    h = np.linalg.eigvalsh(SURFACE.hessian)
    ax = {ax.get_label(): ax for ax in fig.axes}["rates"]
    drawn = lines(ax)
    for key in ("momentum", "nesterov", "plain"):
        c = CONFIGS[key]
        if f"rate:{key}" in drawn:
            a, r = drawn[f"rate:{key}"].get_data()
            for ai, ri in list(zip(a, r))[::37]:
                # the momentum tf-keras applied went through float32
                assert ri == pytest.approx(radius(ai, c["momentum"], 1.0, c["nesterov"]), abs=1e-6)
        for i in range(2):
            x, y = drawn[f"mark:{i}:{key}"].get_data()
            assert x[0] == pytest.approx(c["learning_rate"] * h[i], rel=1e-6)
            assert y[0] == pytest.approx(radius(c["learning_rate"], c["momentum"], h[i], c["nesterov"]), abs=1e-6)
    assert {"rate:momentum", "rate:nesterov"} <= set(drawn)
    assert ax.get_xscale() == "log"


def test_non_quadratic_surfaces_and_other_paths_are_refused(recs):
    with pytest.raises(ValueError, match="needs a quadratic surface with a Hessian.*Rosenbrock"):
        dtsgd_viz.plot_modes(recs, surfaces.Rosenbrock())
    with pytest.raises(ValueError, match="needs a quadratic surface with a Hessian.*ShardedQuadratic"):
        dtsgd_viz.plot_modes(recs, surfaces.ShardedQuadratic())

    @dataclasses.dataclass(frozen=True)
    class Quadratic3:
        hessian = np.diag([1.0, 2.0, 3.0])
        minimum = np.zeros((1, 3))

    with pytest.raises(ValueError, match=r"holds 'w' of shape \(2,\).*Allowed: shape \(3,\)"):
        dtsgd_viz.plot_modes(recs, Quadratic3())
    with pytest.raises(TypeError, match="recordings must be a Recording or a non-empty dict"):
        dtsgd_viz.plot_modes([1, 2], SURFACE)
    with pytest.raises(ValueError, match="has no variable 'v'"):
        dtsgd_viz.plot_modes(recs, SURFACE, name="v")


@pytest.mark.slow
def test_envelope_near_critical_damping_starts_at_the_error_and_bounds_the_real_run():
    # a = lr h1 = 0.01 = (1 - sqrt(0.81))^2: the two eigenvalues meet and the mode is
    # (alpha + beta k) rho^k; an A rho^k envelope had A ~ 300 |e0|, drawn off the chart
    s = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)
    recs = dtsgd_viz.run(s, {"m": dict(learning_rate=0.01, momentum=0.81)}, steps=40)
    fig = dtsgd_viz.plot_modes(recs, s)
    _, U = np.linalg.eigh(s.hessian)
    axes = {ax.get_label(): ax for ax in fig.axes}
    for i in range(2):
        env = np.asarray(lines(axes[f"mode:{i}"])[f"envelope:{i}:m"].get_ydata())
        err = np.abs(recs["m"].path("w").astype(np.float64) @ U[:, i])
        assert env[0] == pytest.approx(err[0], rel=1e-6)
        assert np.all(err <= env * (1 + 1e-4) + 1e-6)
        assert np.max((err / env)[5:]) > 0.5
        lo, hi = axes[f"mode:{i}"].get_ylim()
        assert np.nanmax(env) <= hi  # on the chart


@pytest.mark.parametrize("nesterov", [False, True])
@pytest.mark.parametrize("mu", [0.3, 0.81, 0.9, 0.99])
def test_envelope_is_a_true_bound_that_the_mode_touches_around_critical_damping(mu, nesterov):
    from dtsgd_viz.theory import quadratic as theory

    a_c = float(theory.critical_damping(mu, nesterov))
    for a in a_c * np.array([0.5, 0.9, 0.999, 1.0, 1.001, 1.1, 2.0]):
        M = theory.iteration_matrix(a, mu, 1.0, nesterov)
        st, e = np.array([1.0, 0.0]), []
        for _ in range(121):
            e.append(st[0])
            st = M @ st
        env = mode_envelope(1.0, a, mu, 1.0, nesterov, 120)
        assert np.all(np.abs(e) <= env * (1 + 1e-9)), a
        assert np.max((np.abs(e) / env)[10:]) > 0.5, a


@pytest.mark.slow
def test_runs_made_on_another_surface_are_refused(recs):
    with pytest.raises(
        ValueError,
        match=r"Recording '\w+' was not made on the rotated quadratic "
        r"\(condition 3, angle 30°\).*RotatedQuadratic\(condition=3.0.*"
        r"at update 1 it recorded loss [0-9.]+, where this surface gives",
    ):
        dtsgd_viz.plot_modes(recs, surfaces.RotatedQuadratic(condition=3.0))
    dtsgd_viz.plot_modes(recs, surfaces.RotatedQuadratic(condition=10.0, angle=30.0))  # an equal one is fine


@pytest.mark.slow
def test_eigenvalue_labels_of_several_learning_rates_never_overprint():
    # lr 0.01 and 0.25 on h = 1, 10: guides at a = 0.01, 0.1, 0.25, 2.5, named on the top axis
    from helpers.readable import overlapping

    s = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)
    recs = dtsgd_viz.run(
        s,
        {"m": dict(learning_rate=0.01, momentum=0.81), "n": dict(learning_rate=0.25, momentum=0.5, nesterov=True)},
        steps=8,
    )
    fig = dtsgd_viz.plot_modes(recs, s)
    ax = {ax.get_label(): ax for ax in fig.axes}["rates"]
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    (top,) = ax.child_axes
    ticks = {
        round(float(t.get_loc()), 6): t.label2.get_text() or t.label1.get_text() for t in top.xaxis.get_major_ticks()
    }
    assert ticks == {0.01: "h₁=1", 0.1: "h₂=10", 0.25: "h₁=1", 2.5: "h₂=10"}
    guides = sorted(round(float(ln.get_xdata()[0]), 6) for ln in ax.lines if ln.get_linestyle() == ":")
    assert guides == sorted(ticks)  # a guide line under each name
    labels = [t.label2 if t.label2.get_text() else t.label1 for t in top.xaxis.get_major_ticks()]
    assert not overlapping([t.get_window_extent(renderer) for t in labels if t.get_visible()])


@pytest.mark.slow
def test_runs_gone_within_the_first_updates_get_no_note_and_the_key_names_every_run():
    """On the fast direction (h = 20, lr 0.05: lr*h = 1) plain SGD lands on the minimum
    in one update and Nesterov in two. No name or note is placed among the lines: the one
    key, in the flat direction's panel, names every run."""
    from helpers.synthetic_paths import synthetic

    s = surfaces.RotatedQuadratic(condition=20.0)
    recs = {
        "plain": synthetic(s, 60, 0.05),
        "momentum": synthetic(s, 60, 0.05, 0.9),
        "nesterov": synthetic(s, 60, 0.05, 0.9, True),
    }
    fig = dtsgd_viz.plot_modes(recs, s)
    assert fig.get_suptitle().startswith("Nesterov converges fastest")
    axes = {ax.get_label(): ax for ax in fig.axes}
    assert not axes["mode:1"].texts and not axes["mode:0"].texts
    assert axes["mode:1"].get_legend() is None and axes["rates"].get_legend() is None
    key = axes["mode:0"].get_legend()
    assert [t.get_text() for t in key.get_texts()] == ["plain", "momentum", "Nesterov", "bound ∝ ρᵏ (theory)"]


def test_the_subtitle_names_only_line_styles_the_lines_have(fig):
    """The settings line says which lines are dotted (the envelopes): each of them is,
    and it makes no claim about the recorded runs' styles (momentum's is dashed)."""
    from dtsgd_viz.views.core.figure import headline_texts

    _, settings = headline_texts(fig)
    settings = " ".join(settings.split())
    modes = [ax for ax in fig.axes if ax.get_label().startswith("mode:")]
    envelopes = [ln for ax in modes for ln in ax.lines if (ln.get_gid() or "").startswith("envelope:")]
    recorded = [ln for ax in modes for ln in ax.lines if (ln.get_gid() or "").startswith("mode:")]
    assert envelopes and recorded
    key = next(ax for ax in modes if ax.get_label() == "mode:0").get_legend()

    def word(line):  # from the dash pattern drawn, in line widths
        _, seq = line._unscaled_dash_pattern
        return dash_word((0, tuple(v / line.get_linewidth() for v in seq)) if seq else "-")

    assert {word(ln) for ln in envelopes} == {"dotted"}
    assert not any(w in settings for w in ("solid", "dashed", "dotted"))  # the key says it, drawn
    assert {word(ln) for ln in recorded} == {"solid", "dashed"}  # momentum dashed: no single word fits
    (envelope,) = [h for h, t in zip(key.legend_handles, key.get_texts()) if t.get_text().startswith("bound")]
    assert word(envelope) == "dotted"


def dash_word(ls: object) -> str:
    """``solid``, ``dotted`` (dashes no longer than 1.5 line widths) or ``dashed``."""
    if ls in ("-", "solid"):
        return "solid"
    if ls in (":", "dotted") or (isinstance(ls, tuple) and ls[1] and max(ls[1][::2]) <= 1.5):
        return "dotted"
    return "dashed"


def test_dash_word():
    assert [dash_word(ls) for ls in ("-", ":", "--", (0, (1.0, 1.3)), (0, (4.0, 1.6)))] == [
        "solid",
        "dotted",
        "dashed",
        "dotted",
        "dashed",
    ]


@pytest.mark.slow
def test_rate_marks_at_rate_zero_show_whole_and_each_run_keeps_its_marker():
    """lr * h = 1 puts plain SGD and Nesterov at rate 0: the axis starts below 0 so their
    marks are not cut, and each run has its own marker (the first drawn largest), so
    marks at one rate all show."""
    from dtsgd_viz.views.core import style

    s = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03: lr * h = 1 on h = 20
    configs = {
        "plain": dict(learning_rate=0.05, momentum=0.0),
        "momentum": dict(learning_rate=0.05, momentum=0.9),
        "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
    }
    recs = dtsgd_viz.run(s, configs, steps=4)
    fig = dtsgd_viz.plot_modes(recs, s)
    ax = {ax.get_label(): ax for ax in fig.axes}["rates"]
    fig.draw_without_rendering()
    marks = {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("mark:")}
    sizes = {}
    for gid, ln in marks.items():
        key = gid.rsplit(":", 1)[-1]
        assert ln.get_marker() == style.run_looks(list(configs))[key].marker
        sizes[key] = ln.get_markersize()
        if abs(ln.get_ydata()[0]) < 1e-6:  # at rate 0: its whole marker above the axis bottom
            y = ax.transData.transform((ln.get_xdata()[0], 0.0))[1]
            bottom = ax.get_window_extent().y0
            assert y - bottom >= ln.get_markersize() / 2 * fig.dpi / 72
    assert any(abs(ln.get_ydata()[0]) < 1e-6 for ln in marks.values())
    order = list(configs)
    assert [sizes[k] for k in order] == sorted(sizes.values(), reverse=True)


def test_the_key_covers_no_recorded_point_and_no_text_overlaps(fig):
    """The runs are named once, in a key in the first mode panel (no name placed among
    the curves): the key covers no point of a recorded error or envelope there, and no
    text of the rate panel overprints another."""
    from dtsgd_viz.views.text.clashes import clashes

    axes = {ax.get_label(): ax for ax in fig.axes}
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    ax = axes["mode:0"]
    key = ax.get_legend().get_window_extent(renderer)
    for ln in ax.lines:
        xy = ax.transData.transform(np.column_stack([ln.get_xdata(), ln.get_ydata()]).astype(float))
        xy = xy[np.all(np.isfinite(xy), axis=1)]
        inside = (key.x0 < xy[:, 0]) & (xy[:, 0] < key.x1) & (key.y0 < xy[:, 1]) & (xy[:, 1] < key.y1)
        assert not inside.any(), ln.get_gid()
    assert clashes(axes["rates"], renderer) == []


TUTORIAL_03 = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}


@pytest.fixture(scope="module")
def fig03():
    """Tutorial 03's rate panel: plain and momentum nearly at one rate on h1, plain and
    Nesterov both at rate 0 on h2 (lr * h = 1)."""
    s = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    fig = dtsgd_viz.plot_modes(dtsgd_viz.run(s, TUTORIAL_03, steps=4), s)
    fig.draw_without_rendering()
    return fig


@pytest.mark.slow
def test_the_rate_marks_nest_and_a_key_names_them(fig03):
    """Runs at one rate all show: the marks are concentric, the first run's largest and
    each earlier one an open ring in its colour, the last filled; the zoom's key names each
    run's marker, drawn as on the curves."""
    from dtsgd_viz.views.core import style

    axes = {ax.get_label(): ax for ax in fig03.axes}
    ax = axes["rates"]
    looks = style.run_looks(list(TUTORIAL_03))
    marks = {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("mark:")}
    keys = list(TUTORIAL_03)
    for i in range(2):
        sizes = [marks[f"mark:{i}:{k}"].get_markersize() for k in keys]
        assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == len(sizes)
        for k in keys[:-1]:
            ln = marks[f"mark:{i}:{k}"]
            assert ln.get_markerfacecolor() == "none" and ln.get_markeredgecolor() == looks[k].color
        assert marks[f"mark:{i}:{keys[-1]}"].get_markerfacecolor() == looks[keys[-1]].color
    key = axes["mode:0"].get_legend()  # the direction panels': lines only, as they draw no marks
    assert key is not None and key.get_gid() == "mark-key"
    assert [t.get_text() for t in key.get_texts()][:3] == ["plain", "momentum", "Nesterov"]  # as on every figure
    assert all(h.get_marker() in ("None", "", None) for h in key.legend_handles)
    zoom = axes["rate-zoom"].get_legend()  # the marks are named in the zoom's key, as drawn
    assert zoom is not None and zoom.get_gid() == "zoom-key"
    for handle, k in zip(zoom.legend_handles, keys):
        drawn = marks[f"mark:0:{k}"]
        assert (handle.get_marker(), handle.get_markerfacecolor(), handle.get_markeredgecolor()) == (
            drawn.get_marker(),
            drawn.get_markerfacecolor(),
            drawn.get_markeredgecolor(),
        )
    assert "lr·h" in ax.get_xlabel() and "a =" not in ax.get_xlabel()


@pytest.mark.slow
def test_the_rate_key_draws_each_run_as_its_curve(fig03):
    """Each legend entry is its run's curve (colour, dash, width) with its mark on it."""
    from matplotlib.colors import to_hex

    ax = {ax.get_label(): ax for ax in fig03.axes}["rates"]
    curves = {ln.get_gid().split(":", 1)[1]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("rate:")}
    key = {a.get_label(): a for a in fig03.axes}["mode:0"].get_legend()
    for handle, k in zip(key.legend_handles, TUTORIAL_03):
        curve = curves[k]
        assert to_hex(handle.get_color()) == to_hex(curve.get_color())
        assert (handle.get_linestyle(), handle.get_linewidth()) == (curve.get_linestyle(), curve.get_linewidth())


def test_the_zoom_beside_the_rate_panel_resolves_the_runs_on_h1(fig03):
    """On a 0-1 axis the three h1 marks (0.950, 0.949, 0.925) sat on one another: a zoom
    beside draws that band; its y range holds the three rates, Nesterov's mark stands
    clear of the other two, and its legend gives each run's rate, the spectral radius
    computed here (the title names the direction, not the axis range)."""
    axes = {ax.get_label(): ax for ax in fig03.axes}
    zoom = axes["rate-zoom"]
    renderer = fig03.canvas.get_renderer()
    h = np.linalg.eigvalsh(surfaces.RotatedQuadratic(condition=20.0, angle=30.0).hessian)
    expected = {
        k: radius(c["learning_rate"], c["momentum"], h[0], c.get("nesterov", False)) for k, c in TUTORIAL_03.items()
    }
    lo, hi = zoom.get_ylim()
    assert all(lo < r < hi for r in expected.values()) and hi - lo < 0.1  # a zoom, not 0-1
    marks = {ln.get_gid().split(":", 1)[1]: ln for ln in zoom.lines if (ln.get_gid() or "").startswith("zoom-mark:")}
    assert set(marks) == set(TUTORIAL_03)
    px = {k: zoom.transData.transform(ln.get_xydata()[0]) for k, ln in marks.items()}
    size = {k: ln.get_markersize() * fig03.dpi / 72 for k, ln in marks.items()}
    for k in ("plain", "momentum"):
        assert marks[k].get_ydata()[0] == pytest.approx(expected[k], abs=1e-6)
        assert px[k][1] - px["nesterov"][1] >= (size[k] + size["nesterov"]) / 2
    key = zoom.get_legend()
    assert [t.get_text() for t in key.get_texts()] == [
        f"plain {expected['plain']:.3f}",
        f"momentum {expected['momentum']:.3f}",
        f"Nesterov {expected['nesterov']:.3f}",
    ]
    assert zoom.get_title() == "zoom on h₁ = 1: each run's ρ" and f"{lo:.3f}" not in zoom.get_title()
    box = key.get_window_extent(renderer)
    for k, (x, y) in px.items():  # the legend covers no mark
        assert not (box.x0 - size[k] / 2 < x < box.x1 + size[k] / 2 and box.y0 - size[k] / 2 < y < box.y1), k


def test_the_modes_headline_is_one_line_and_the_mark_key_is_readable(fig03):
    from dtsgd_viz.views.core import style
    from dtsgd_viz.views.core.figure import headline_texts

    finding, _ = headline_texts(fig03)
    assert "\n" not in finding and finding.startswith("Nesterov converges fastest: ")
    assert "0.925" in finding and "momentum 0.949" in finding and "plain 0.950" in finding
    title = fig03._suptitle.get_window_extent(fig03.canvas.get_renderer())
    assert title.width <= fig03.bbox.width
    key = {ax.get_label(): ax for ax in fig03.axes}["mode:0"].get_legend()
    assert all(t.get_fontsize() >= style.NOTE_SIZE for t in key.get_texts())


@pytest.mark.slow
def test_one_run_or_runs_far_apart_get_no_zoom(recs):
    from dtsgd_viz.views.rates.modes import modes_data, zoom_mode

    one = {"momentum": recs["momentum"]}
    assert [ax.get_label() for ax in dtsgd_viz.plot_modes(one, SURFACE).axes] == ["mode:0", "mode:1", "rates"]
    assert zoom_mode(modes_data(one, SURFACE)) is None


@pytest.mark.slow
def test_gone_runs_plunge_to_the_axis_and_the_top_panels_share_one_scale():
    """Tutorial 03: plain's and Nesterov's fast-direction curves were slivers ending at
    k 0-2. Each gone run's line is drawn on to the axis bottom where it leaves it (no
    note); both mode panels share one y scale."""
    from helpers.synthetic_paths import synthetic

    s = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    recs = {
        "plain": synthetic(s, 60, 0.05),
        "momentum": synthetic(s, 60, 0.05, 0.9),
        "nesterov": synthetic(s, 60, 0.05, 0.9, True),
    }
    fig = dtsgd_viz.plot_modes(recs, s)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    axes = {ax.get_label(): ax for ax in fig.axes}
    fast, slow = axes["mode:1"], axes["mode:0"]
    assert fast.get_ylim() == slow.get_ylim()
    assert [a.get_title().split()[0] for a in (slow, fast)] == ["flat", "steep"]  # the tutorial's words
    low = fast.get_ylim()[0]
    drawn = lines(fast)
    for key, last in (("plain", 1), ("nesterov", 2)):
        x, y = (np.asarray(v, float) for v in drawn[f"plunge:1:{key}"].get_data())
        assert x[-1] == last and y[-1] < low <= y[0]  # on down past the bottom, at its update
    assert not fast.texts  # no note: the line drawn down to the axis says it
    assert renderer is not None
    assert not [t for t in slow.texts if (t.get_gid() or "").startswith("hidden-envelope")]
