"""Shards on the rate curve (issue #12 item 7), checked through the figure's data: each
block's position against the spectral radius of the 2x2 iteration matrix computed here,
its measured decay against the recorded parameters, and the slider's state."""

import matplotlib
import numpy as np
import pytest
from helpers.theory_reference import radius

import dtsgd_viz
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.rates import block_rates as rv

matplotlib.use("Agg")

SURFACE = surfaces.ShardedQuadratic()  # (8, 8) on batch=2 x model=4: 8 blocks
LR, MU = 1.5, 0.6


@pytest.fixture(scope="module")
def recording():
    return dtsgd_viz.run(SURFACE, {"nesterov": dict(learning_rate=LR, momentum=MU, nesterov=True)}, steps=40)[
        "nesterov"
    ]


def _radius(a, mu, nesterov):
    return radius(a, mu, 1.0, nesterov)


@pytest.mark.slow
def test_blocks_sit_on_both_rate_curves_beside_their_measured_decay(recording):
    r = recording
    view = rv.draw_block_rates(r, SURFACE)
    rates = view.rates
    geometry = r.geometry("w")
    assert len(rates.groups) == 8 == geometry.num_unique
    path = np.concatenate([r.initial("w")[None], r.global_values("w", "param")]).astype(float)
    for g, devices in enumerate(geometry.replica_groups):
        block = geometry.blocks[devices[0]]
        assert rates.curvature[g] == pytest.approx(float(SURFACE.curvature[block].mean()))
        errors = np.sqrt(((path[(slice(None),) + block] - SURFACE.target) ** 2).reshape(len(path), -1).sum(1))
        np.testing.assert_allclose(rates.errors[:, g], errors, rtol=1e-9)
    a = LR * rates.curvature
    for nesterov in (False, True):
        theory = np.array([_radius(x, MU, nesterov) for x in a])
        shown = view.markers[nesterov].get_offsets()
        np.testing.assert_allclose(shown[:, 0], a)
        np.testing.assert_allclose(shown[:, 1], np.minimum(theory, 1.22), atol=1e-9)
    # Nesterov at lr=1.5: the stiffest block (h=1, a=1.5) is past 2(1+mu)/(1+2mu)=1.45
    assert list(view.unstable[True]) == [False] * 7 + [True]
    assert not view.unstable[False].any()
    # the run measured what theory says: the recorded errors follow the rule's two-term
    # recurrence, whose largest root is the spectral radius (a log-slope fit was off by up
    # to 0.04 on an oscillating 40-update run)
    theory = np.array([_radius(x, MU, True) for x in a])
    ok = np.isfinite(rates.measured)
    assert ok.all()
    np.testing.assert_allclose(rates.measured, theory, atol=1e-4)
    assert rates.measured[-1] > 1  # the unstable block grew
    stars = view.measured_marks.get_offsets()
    np.testing.assert_allclose(stars, np.column_stack([a, rates.measured]))
    assert "1 past Nesterov's limit" in view.curve_ax.get_title()
    lines = [ln for ln in view.error_ax.lines if ln.get_gid().startswith("error-")]
    assert len(lines) == 8 and list(lines[0].get_xdata()) == list(range(41))


@pytest.mark.slow
def test_the_learning_rate_moves_every_block_and_marks_the_unstable(recording):
    from dtsgd_viz.widgets.rate_explorer import RateExplorer, rate_state

    rates = rv.block_rates(recording, SURFACE)
    s = rate_state(rates, 0.5)
    np.testing.assert_allclose(s.a, 0.5 * rates.curvature)
    for nesterov in (False, True):
        theory = np.array([_radius(x, MU, nesterov) for x in s.a])
        np.testing.assert_allclose(s.rates[nesterov], theory, atol=1e-9)
        assert not s.unstable[nesterov].any()
    big = rate_state(rates, 4.0)  # a = 4 h: momentum's boundary 3.2, Nesterov's 1.45
    assert list(big.unstable[False]) == list(4.0 * rates.curvature >= 3.2)
    assert list(big.unstable[True]) == list(4.0 * rates.curvature >= 3.2 / 2.2)
    assert "momentum: 1 of 8 blocks unstable" in big.text()
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        rate_state(rates, 0.0)
    w = RateExplorer(recording, SURFACE)
    assert w.slider.value == pytest.approx(LR) and w.image.value
    renders = w.renders
    w.slider.value = 4.0
    assert w.renders == renders + 1 and w.state.learning_rate == pytest.approx(4.0, rel=1e-3)
    lr = w.slider.value
    np.testing.assert_allclose(w.view.markers[False].get_offsets()[:, 0], lr * rates.curvature)
    assert "unstable" in w.label.value and f"lr={lr:.3g}" in w.view.curve_ax.get_title()
    lo, hi = w.view.curve_ax.get_xlim()  # the slider's whole span stays in view
    assert lo <= LR / 100 * rates.curvature.min() and hi >= LR * 10 * rates.curvature.max()


def test_block_rates_refuses_what_it_cannot_read(recording):
    with pytest.raises(ValueError, match="Pass the surface the recording was run on"):
        rv.block_rates(recording, surfaces.ShardedQuadratic((8, 8), specs=("model", "batch")))
    with pytest.raises(TypeError, match="ShardedQuadratic"):
        rv.block_rates(recording, surfaces.RotatedQuadratic())
    assert rv.measured_decay([1.0, 0.5, 0.25, 0.125], [0, 1, 2, 3]) == pytest.approx(0.5)
    assert np.isnan(rv.measured_decay([1.0, 0.0], [0, 1]))


@pytest.mark.slow
def test_a_block_that_reaches_zero_at_once_has_no_measured_decay():
    """Nesterov at lr=1, momentum 0.9 on h=1 is nilpotent (rate 0): the error goes 2,
    1.8, 0, 0, ... and a fit through the two points before 0 said 0.9. Blocks that reach
    exactly 0 later decay as theory says once the float noise floor is the rounding of
    the values (not 1000 eps of the start error, which cut the fit to a dip)."""
    s = SURFACE  # 8 blocks, h from 0.05 to 1
    r = dtsgd_viz.run(s, {"n": dict(learning_rate=1.0, momentum=0.9, nesterov=True)}, steps=30)["n"]
    view = rv.draw_block_rates(r, s)
    rates = view.rates
    theory = np.array([_radius(a, 0.9, True) for a in rates.curvature])
    assert theory[-1] == pytest.approx(0, abs=1e-6)
    np.testing.assert_array_equal(rates.errors[2:, -1], 0)
    assert np.isnan(rates.measured[-1]) and np.isfinite(rates.measured[:-1]).all()
    assert len(view.measured_marks.get_offsets()) == 7  # no star for it
    # the block at rate 0 shows whole, above the bottom of the axes
    ((_, y),) = [p for p in view.markers[True].get_offsets() if p[1] < 1e-6]
    assert view.curve_ax.get_ylim()[0] < y - 0.02
    # the next-stiffest block reaches exactly 0 at update 30: fitted down to where the
    # values are rounding (not to 1000 eps of its start error), it measures what theory
    # says (a log-slope fit said 0.586 or 0.604 against 0.560)
    assert rates.errors[-1, 6] == 0
    assert abs(rates.measured[6] - theory[6]) < 1e-3
    assert rv.measured_decay([2.0, 1.8, 0.0, 0.0], [0, 1, 2, 3]) != rv.measured_decay(
        [2.0, 1.8, 0.0, 0.0], [0, 1, 2, 3]
    )  # NaN


def test_the_key_lists_only_drawn_marks(recording):
    """The key names the rules, their limits and the stars, whatever the learning rate; the
    title counts the blocks past a limit (they sit over the rate-1 line)."""
    view = rv.draw_block_rates(recording, SURFACE)
    key = lambda: [t.get_text() for t in view.curve_ax.get_legend().get_texts()]  # noqa: E731
    view.set_learning_rate(0.01)
    assert not any(u.any() for u in view.unstable.values())
    before = key()
    assert len(before) == 3 and "past its limit" not in before
    assert view.curve_ax.get_title() == "8 blocks at lr=0.01: none past a limit"
    view.set_learning_rate(LR * 10)
    assert any(u.any() for u in view.unstable.values())
    assert key() == before
    past = [
        f"{int(view.unstable[n].sum())} past {rv.RULE_NAMES[n]}'s limit"
        for n in (False, True)
        if view.unstable[n].any()
    ]
    assert view.curve_ax.get_title().replace("\n", " ") == f"8 blocks at lr={LR * 10:.3g}: " + ", ".join(past)


@pytest.mark.slow
def test_each_error_line_is_named_in_the_key_right_of_the_panel():
    """The error panel's key, right of the axes: each block's line with its name and
    curvature, block by block (the rate panel's blocks), no text clashing; column-wide."""
    from dtsgd_viz.views.core import style
    from dtsgd_viz.views.text.clashes import clashes

    r = dtsgd_viz.run(SURFACE, {"n": dict(learning_rate=0.5, momentum=0.9, nesterov=True)}, steps=60)[
        "n"
    ]  # tutorial 01
    view = rv.draw_block_rates(r, SURFACE)
    fig, ax = view.figure, view.error_ax
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    rates, legend = view.rates, ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == [
        f"{label} h={h:.2g}" for label, h in zip(rates.labels, rates.curvature)
    ]
    for handle, line in zip(legend.legend_handles, view.error_lines):
        assert handle.get_color() == line.get_color() and handle.get_linestyle() == line.get_linestyle()
    assert min(t.get_fontsize() for t in legend.get_texts()) >= style.NOTE_SIZE
    assert legend.get_window_extent(renderer).x0 > ax.get_window_extent(renderer).x1
    assert clashes(ax, renderer) == []
    assert fig.get_tightbbox().width * fig.dpi <= 950


@pytest.mark.slow
def test_errors_at_the_rounding_floor_are_held_there_and_the_floor_is_named():
    """The steepest block of tutorial 01 falls to float32 round-off (exact zeros, single
    ulps) after ~37 updates: its line is held at the floor from the first error there on
    (no dropped points, no loose dashes), the floor is one float32 ulp of the target per
    entry, shaded and named."""
    r = dtsgd_viz.run(SURFACE, {"n": dict(learning_rate=0.5, momentum=0.9, nesterov=True)}, steps=60)["n"]
    view = rv.draw_block_rates(r, SURFACE)
    rates, ax = view.rates, view.error_ax
    n_entries = SURFACE.shape[0] * SURFACE.shape[1] // len(rates.labels)
    assert rates.floor == pytest.approx(np.finfo(np.float32).eps * np.sqrt(n_entries) * 1.0)  # target 1
    for g, line in enumerate(view.error_lines):
        y, e = np.asarray(line.get_ydata()), rates.errors[:, g]
        assert np.isfinite(y).all() and (y >= rates.floor * (1 - 1e-12)).all()
        hit = np.flatnonzero(e <= rates.floor)
        if hit.size:
            np.testing.assert_array_equal(y[: hit[0]], e[: hit[0]])
            assert (y[hit[0] :] == rates.floor).all()
        else:
            np.testing.assert_array_equal(y, e)
    steep = view.error_lines[-1].get_ydata()
    assert (rates.errors[:, -1] == 0).any() and (steep == rates.floor).sum() > 10
    from dtsgd_viz.views.rates.block_rates import floor_text

    label = [t for t in ax.texts if t.get_gid() == "floor-label"][0]
    assert label.get_text() == floor_text(rates.floor) == "float32 round-off (below 3e-7)"
    assert ax.get_ylim()[0] < label.get_position()[1] < rates.floor
    (band,) = [p for p in ax.patches if p.get_gid() == "floor"]
    assert band.get_extents().height > 0


@pytest.mark.parametrize(
    "config",
    [
        dict(learning_rate=0.5, momentum=0.9, steps=60),  # tutorial 01
        dict(learning_rate=LR, momentum=MU, steps=40),
        dict(learning_rate=1.0, momentum=0.9, steps=30),
    ],
)  # a block at rate 0
@pytest.mark.slow
def test_the_rate_panel_key_names_each_rule_and_its_limit_clear_of_the_blocks(config):
    """One legend names each rule (its curve, its blocks' mark) with its stability limit's
    value and the stars; it covers no block or star, and no text overprints another."""
    from dtsgd_viz.views.core import style
    from dtsgd_viz.views.text.clashes import clashes

    steps = config.pop("steps")
    r = dtsgd_viz.run(SURFACE, {"n": dict(nesterov=True, **config)}, steps=steps)["n"]
    view = rv.draw_block_rates(r, SURFACE)
    view.figure.draw_without_rendering()  # the layout the PNG has
    renderer = view.figure.canvas.get_renderer()
    ax = view.curve_ax
    key = ax.get_legend()
    texts = [t.get_text() for t in key.get_texts()]
    for n, name in rv.RULE_NAMES.items():
        b = view.boundaries[n]
        assert b == pytest.approx(2 * (1 + config["momentum"]) / ((1 + 2 * config["momentum"]) if n else 1))
        assert texts[int(n)] == f"{name}, limit lr·h {b:.3g} (dotted)"
        (dotted,) = [ln for ln in ax.lines if ln.get_gid() == f"boundary-{name}"]
        assert dotted.get_xdata()[0] == b
    assert texts[2].startswith("measured")
    box = key.get_window_extent(renderer)
    marks = [ax.transData.transform(m.get_offsets()) for m in (*view.markers.values(), view.measured_marks)]
    for xy in marks:
        assert not [p for p in xy if box.x0 - 4 < p[0] < box.x1 + 4 and box.y0 - 4 < p[1] < box.y1 + 4]
    assert min(t.get_fontsize() for t in key.get_texts()) >= style.NOTE_SIZE
    assert clashes(ax, renderer) == []


@pytest.mark.slow
def test_the_headline_says_which_blocks_converge_fastest_and_the_settings():
    """The finding on one line, the settings on one line; how close the stars came to
    theory in the key (``theory_gap``)."""
    from dtsgd_viz.views.core.figure import headline_texts

    r = dtsgd_viz.run(SURFACE, {"n": dict(learning_rate=0.5, momentum=0.9, nesterov=True)}, steps=20)["n"]
    fig = dtsgd_viz.plot_block_rates(r, SURFACE)
    finding, settings = headline_texts(fig)
    h = np.sort(np.unique(SURFACE.curvature))
    nesterov = [_radius(0.5 * x, 0.9, True) for x in h]
    assert "\n" not in finding
    assert finding == (
        f"Nesterov: steep blocks converge fastest ({nesterov[-1]:.2f} vs {nesterov[0]:.2f}); "
        f"under momentum all {_radius(0.5 * h[0], 0.9, False):.2f}"
    )
    view = rv.draw_block_rates(r, SURFACE)
    off = np.max(np.abs(view.rates.measured - [_radius(0.5 * c, 0.9, True) for c in view.rates.curvature]))
    run = "real DTensor SGD, Nesterov, lr 0.5, μ 0.9, 20 updates"
    assert settings == f"{run} · sharded quadratic 8x8 on a 2x4 mesh (curvature 0.05..1)"
    assert rv.theory_gap(view.rates) == pytest.approx(off)
    star = [t.get_text() for t in view.curve_ax.get_legend().get_texts()][2]
    assert star == f"measured, within {max(off, 1e-4):.1g} of theory"
    # the finding's first line is drawn on one line as wide as the figure at most
    fig.draw_without_rendering()
    title = fig._suptitle.get_window_extent(fig.canvas.get_renderer())
    assert title.width <= fig.bbox.width


@pytest.fixture(scope="module")
def tutorial01():
    r = dtsgd_viz.run(SURFACE, {"n": dict(learning_rate=0.5, momentum=0.9, nesterov=True)}, steps=60)["n"]
    view = rv.draw_block_rates(r, SURFACE)
    view.figure.draw_without_rendering()
    return view


@pytest.mark.slow
def test_the_rate_axis_ends_just_past_the_last_data(tutorial01):
    """Tutorial 01: nothing right of momentum's limit (3.8) but its curve leaving the top:
    the axis ends within 20% of it (it ran on to 20, empty)."""
    view = tutorial01
    ax = view.curve_ax
    b = view.boundaries[False]
    lo, hi = ax.get_xlim()
    assert b < hi <= 1.2 * b
    # the curve leaves the top before the axis ends: no empty range past it
    x, y = next(ln for ln in ax.lines if ln.get_gid() == "curve-momentum").get_data()
    x, y = np.asarray(x), np.asarray(y)
    assert x[(y > ax.get_ylim()[1]) & (x > b)].min() < hi


def test_momentum_rings_nest_round_the_stars(tutorial01):
    """At lr·h 0.025 and 0.038 Nesterov's star covered momentum's dot: momentum's blocks
    are open rings in the block's colour, wider than a star and under it and under
    Nesterov's marks (they covered them), so a star at the same place shows inside its
    ring."""
    from matplotlib.colors import to_rgba

    from dtsgd_viz.views.core import style

    view = tutorial01
    ax = view.curve_ax
    rings, stars = view.markers[False], view.measured_marks
    assert len(rings.get_facecolors()) == 0 or all(c[3] == 0 for c in rings.get_facecolors())
    np.testing.assert_allclose(rings.get_edgecolors(), [to_rgba(c) for c in view.rates.colors])
    assert rings.get_zorder() < stars.get_zorder()
    ring_px = np.sqrt(rings.get_sizes()[0]) * view.figure.dpi / 72  # diameter
    star_px = np.sqrt(stars.get_sizes()[0]) * view.figure.dpi / 72
    assert ring_px >= star_px + 4
    rp = ax.transData.transform(rings.get_offsets())
    sp = ax.transData.transform(stars.get_offsets())
    near = np.hypot(*(rp[:, None, :] - sp[None, :, :]).transpose(2, 0, 1)).min(axis=1)
    assert (near + star_px / 2 <= ring_px / 2 + 0.5).sum() >= 2  # the two smallest lr·h: the star inside its ring
    handles = dict(zip([t.get_text() for t in ax.get_legend().get_texts()], ax.get_legend().legend_handles))
    # Nesterov's squares: open, white inside, wider than the star on them and under it
    # (the stars hid filled squares the key named), inside the ring at the smallest lr·h
    squares = view.markers[True]
    assert all(tuple(c) == (1.0, 1.0, 1.0, 1.0) for c in squares.get_facecolors())
    np.testing.assert_allclose(squares.get_edgecolors(), [to_rgba(c) for c in view.rates.colors])
    sq_px = np.sqrt(squares.get_sizes()[0]) * view.figure.dpi / 72  # side
    assert sq_px >= star_px + 2 and rings.get_zorder() < squares.get_zorder() < stars.get_zorder()
    np.testing.assert_allclose(squares.get_offsets(), stars.get_offsets(), atol=1e-3)
    # the key draws each rule's mark as on the chart: momentum's square, Nesterov's triangle
    for n, name in rv.RULE_NAMES.items():
        (handle,) = [h for t, h in handles.items() if t.startswith(name)]
        assert handle.get_marker() == style.RULE_LOOKS["nesterov" if n else "momentum"].marker
