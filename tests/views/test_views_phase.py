"""plot_phase: the two step maps, the log2 ratio map and the theory on them, checked
through the figure's data against grids and spectral radii computed here."""

import matplotlib
import numpy as np
import pytest
from helpers.phase_cells import at_runs
from helpers.readable import check_readable, overlapping, x_tick_label_boxes  # noqa: F401
from helpers.theory_reference import radius

import dtsgd_viz
from dtsgd_viz.theory import quadratic as theory
from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.theory.convergence import phase_grid
from dtsgd_viz.views.core import style
from dtsgd_viz.views.phase.geometry import REGIONS, TIE_WITHIN, flat_mode_loss
from dtsgd_viz.views.phase.plot import cap_rate, cell_edges, phase_ratio

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic()  # Hessian eigenvalues 1 and 10
H = (1.0, 10.0)
LRS, MUS, STEPS, TOL = np.geomspace(0.01, 0.35, 9), np.linspace(0.0, 0.95, 8), 40, 1e-2


@pytest.fixture(scope="module")
def fig():
    return dtsgd_viz.plot_phase(SURFACE, LRS, MUS, STEPS, TOL)


def axes_by_label(fig):
    return {ax.get_label(): ax for ax in fig.axes}


def by_gid(ax, gid):
    found = [a for a in [*ax.lines, *ax.collections] if a.get_gid() == gid]
    assert len(found) == 1, (gid, len(found))
    return found[0]


def hatched_runs(collection, lrs=LRS, mus=MUS):
    """Which runs' centres a hatched region's rectangles cover, ``(len(mus), len(lrs))``."""
    lr, mu = np.meshgrid(lrs, mus)
    boxes = [p.get_extents() for p in collection.get_paths()]
    return np.array(
        [[any(b.x0 < x < b.x1 and b.y0 < y < b.y1 for b in boxes) for x, y in zip(*r)] for r in zip(lr, mu)]
    )


def steps_grids():
    return {
        key: phase_grid(SURFACE, LRS, MUS, STEPS, TOL, nesterov)
        for key, nesterov in (("momentum", False), ("nesterov", True))
    }


@pytest.mark.slow
def test_step_maps_are_the_grids(fig):
    axes = axes_by_label(fig)
    for key, grid in steps_grids().items():
        shown = at_runs(by_gid(axes[f"phase:{key}"], f"phase:{key}"), LRS, MUS)  # each run, at its centre
        np.testing.assert_array_equal(shown.data, grid.steps)
        np.testing.assert_array_equal(np.ma.getmaskarray(shown), grid.steps < 0)
        ii, jj = np.nonzero(grid.diverged)
        np.testing.assert_array_equal(
            by_gid(axes[f"phase:{key}"], f"diverged:{key}").get_xydata(), np.c_[LRS[jj], MUS[ii]]
        )


def test_side_cells_show_each_run_at_its_centre_and_the_nearest_run_on_its_side_elsewhere():
    from dtsgd_viz.views.phase.geometry import side_cells

    lrs, mus, h = np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20), (1.0, 20.0)
    lr_e, mu_e, (i, j) = side_cells(lrs, mus, h, {"momentum": False, "nesterov": True})
    si, sj = i.shape[0] // len(mus), j.shape[1] // len(lrs)
    assert si % 2 == sj % 2 == 1 and i.shape == (len(mu_e) - 1, len(lr_e) - 1) and i.size >= 200 * 100 * 0.8
    np.testing.assert_allclose(np.sqrt(lr_e[:-1] * lr_e[1:])[sj // 2 :: sj], lrs)  # a fine cell on each run
    np.testing.assert_array_equal(i[si // 2 :: si, sj // 2 :: sj], np.arange(len(mus))[:, None].repeat(24, 1))
    np.testing.assert_array_equal(j[si // 2 :: si, sj // 2 :: sj], np.arange(len(lrs))[None, :].repeat(20, 0))
    own_i, own_j = np.arange(len(mus)).repeat(si)[:, None], np.arange(len(lrs)).repeat(sj)[None, :]
    assert np.abs(i - own_i).max() <= 1 and np.abs(j - own_j).max() <= 1  # a neighbour at most

    def side(lr, mu):
        mu = np.clip(mu, 0, 0.9999)
        return sum((lr > theory.convergence_boundary(mu, 20.0, nz)) * (1 + nz) for nz in (False, True))

    lr_c, mu_c = np.meshgrid(np.sqrt(lr_e[:-1] * lr_e[1:]), (mu_e[:-1] + mu_e[1:]) / 2)
    same = side(lrs[j], mus[i]) == side(lr_c, mu_c)
    cut = (i != own_i) | (j != own_j)
    assert same.mean() > 0.999 and cut.any() and same[cut].all()  # cut cells show a run on their side
    # left of both boundaries and off them, a fine cell shows its own run
    far = (lr_c < 0.8 * theory.convergence_boundary(np.clip(mu_c, 0, 0.9999), 20.0, True)) & ~cut
    assert far.sum() > 0.5 * far.size


@pytest.mark.slow
def test_the_ratio_map_is_log2_of_the_two_step_grids_with_ties_in_the_tie_face(fig):
    grids = steps_grids()
    m, n = grids["momentum"].steps, grids["nesterov"].steps
    ax = axes_by_label(fig)["phase:ratio"]
    mesh = by_gid(ax, "phase:ratio")
    shown = at_runs(mesh, LRS, MUS)
    both, only_m, only_n = (m >= 0) & (n >= 0), (m >= 0) & (n < 0), (m < 0) & (n >= 0)
    assert both.sum() >= 10 and only_m.sum() >= 1  # the grid shows every case
    np.testing.assert_allclose(shown.data[both], np.log2(np.maximum(n[both], 1) / np.maximum(m[both], 1)))
    norm, cmap = mesh.norm, mesh.cmap
    assert norm.vmin == -norm.vmax  # centred on a tie
    # the colour map covers the cells where both converge, nothing else: the others are
    # the regions, drawn apart in neutrals, never in the colour bar's colours
    np.testing.assert_array_equal(np.ma.getmaskarray(shown), ~both)
    rgba = cmap(norm(shown))
    # the tie face is what phase_finding counts as a tie: counts within TIE_WITHIN of each other
    mf, nf = np.maximum(m, 1), np.maximum(n, 1)
    nesterov_faster, momentum_faster = both & (mf > nf * (1 + TIE_WITHIN)), both & (nf > mf * (1 + TIE_WITHIN))
    ties = both & ~nesterov_faster & ~momentum_faster
    assert ties.any() and nesterov_faster.any()
    tie_face = np.array(matplotlib.colors.to_rgba(style.TIE_FACE))
    np.testing.assert_allclose(rgba[ties], np.tile(tie_face, (ties.sum(), 1)), atol=1e-6)
    assert not np.allclose(tie_face, matplotlib.colors.to_rgba(fig.get_facecolor()))  # told from the page
    (tie_key,) = [t.get_text() for t in legend_texts(fig) if t.get_text().startswith("a tie")]  # in the key
    assert tie_key == f"a tie: counts within {TIE_WITHIN:.0%}"
    assert np.all(rgba[nesterov_faster][:, 0] > rgba[nesterov_faster][:, 2] + 0.1)  # red side, visibly
    assert np.all(rgba[momentum_faster][:, 2] > rgba[momentum_faster][:, 0] + 0.1)  # blue side, visibly
    regions = at_runs(by_gid(ax, "phase:regions"), LRS, MUS)
    np.testing.assert_array_equal(np.ma.getmaskarray(regions), both)
    div = {k: g.diverged for k, g in grids.items()}
    # one rule converges, the other diverged: a stability verdict, hatched; the other
    # only ran into the step cap: the cap's own dots, one key per rule that converged
    expect = {
        "only_momentum": only_m & div["nesterov"],
        "only_nesterov": only_n & div["momentum"],
        "cap_momentum": only_m & ~div["nesterov"],
        "cap_nesterov": only_n & ~div["momentum"],
    }
    assert expect["only_momentum"].any()
    for region, cells in expect.items():
        np.testing.assert_array_equal(regions.data[cells], REGIONS.index(region))
        hatched = [c for c in ax.collections if c.get_gid() == f"region:{region}"]
        if not cells.any():
            assert not hatched
            continue
        (hatched,) = hatched
        assert hatched.get_hatch() == style.HATCHES[region]
        np.testing.assert_array_equal(hatched_runs(hatched), cells)  # the hatch covers these runs' centres
    # neither converges: both diverged (the step maps' x marks, on their pale grey), or
    # at least one only ran into the cap (the darker grey, named for the cap)
    both_div = (m < 0) & (n < 0) & div["momentum"] & div["nesterov"]
    neither = (m < 0) & (n < 0) & ~both_div
    assert both_div.any() and neither.any()
    np.testing.assert_array_equal(regions.data[neither], REGIONS.index("neither"))
    np.testing.assert_array_equal(regions.data[both_div], REGIONS.index("diverged"))
    ii, jj = np.nonzero(both_div)
    np.testing.assert_array_equal(by_gid(ax, "diverged:ratio").get_xydata(), np.c_[LRS[jj], MUS[ii]])
    faces = by_gid(ax, "phase:regions")
    rgba = faces.cmap(faces.norm(regions.data))
    assert np.all(rgba[both_div][:, 0] < rgba[neither][0, 0] - 0.15)  # darker than neither's grey
    # no extension colours on the bar
    cbars = [a for a in fig.axes if a.get_label() == "<colorbar>"]
    assert all(getattr(c, "_colorbar", None) is None or c._colorbar.extend == "neither" for c in cbars)


@pytest.mark.slow
def test_the_step_cap_cells_say_which_rule_converged():
    # tutorial 03's ratio map: at lr 0.015, mu 0.35 momentum converges in 150 updates and
    # Nesterov just misses the cap; along mu 0.95 only Nesterov converges within the cap.
    # Each kind has its own key, and its cells are tinted towards that rule's end of the
    # ratio scale (blue: momentum, red: Nesterov), dotted apart from the scale's cells.
    s = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    lrs, mus = np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20)
    fig = dtsgd_viz.plot_phase(s, lrs, mus, steps=150, tol=1e-3, show="ratio", mark=(0.05, 0.9))
    m, n = (phase_grid(s, lrs, mus, 150, 1e-3, nest) for nest in (False, True))
    cells = {
        "momentum": (m.steps >= 0) & (n.steps < 0) & ~n.diverged,
        "nesterov": (n.steps >= 0) & (m.steps < 0) & ~m.diverged,
    }
    assert cells["momentum"][int(np.argmin(np.abs(mus - 0.35))), int(np.argmin(np.abs(np.log(lrs / 0.015))))]
    assert cells["nesterov"][-1].sum() >= 10
    ax = axes_by_label(fig)["phase:ratio"]
    faces = by_gid(ax, "phase:regions")
    regions = at_runs(faces, lrs, mus)
    rgba = faces.cmap(faces.norm(regions.data))
    keys = {t.get_text(): h for t, h in zip(legend_texts(fig), fig.legends[0].legend_handles)}
    for rule, name in (("momentum", "momentum"), ("nesterov", "Nesterov")):
        region = f"cap_{rule}"
        np.testing.assert_array_equal(regions.data == REGIONS.index(region), cells[rule])
        red, blue = rgba[cells[rule]][:, 0], rgba[cells[rule]][:, 2]
        assert np.all(red > blue + 0.05) if rule == "nesterov" else np.all(blue > red + 0.05)
        (dots,) = [c for c in ax.collections if c.get_gid() == f"region:{region}"]
        assert dots.get_hatch() == style.HATCHES[region]
        np.testing.assert_array_equal(hatched_runs(dots, lrs, mus), cells[rule])
        handle = keys[f"only {name} within 150 updates"]
        np.testing.assert_allclose(handle.get_facecolor(), rgba[cells[rule]][0], atol=1e-6)  # the key's look
        assert handle.get_hatch() == style.HATCHES[region]


def test_phase_ratio_cases():
    out = phase_ratio(np.array([8, 4, 0, 3, -1, -1]), np.array([4, 8, 0, -1, 5, -1]))
    np.testing.assert_array_equal(out[:5], [-1.0, 1.0, 0.0, np.inf, -np.inf])
    assert np.isnan(out[5])


@pytest.mark.slow
def test_iso_rate_contours_lie_where_the_spectral_radius_has_their_level(fig):
    axes = axes_by_label(fig)
    # the cap's level comes from the flat direction's share of the starting loss
    loss0 = flat_mode_loss(SURFACE)
    cap = round(cap_rate(loss0, TOL, STEPS), 3)
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        cs = by_gid(axes[f"phase:{key}"], f"rate:{key}")
        levels = list(cs.levels)
        assert levels == [cap]  # the cap's edge alone
        near, inside = [], []
        for level, segs in zip(levels, cs.allsegs):
            for seg in segs:
                for lr, mu in seg[:: max(1, len(seg) // 60)]:  # inline labels cut the segments
                    rho = max(radius(lr, mu, h, nesterov) for h in H)
                    near.append(abs(rho - level) < 0.01)
                    # the level set passes within a small box around the vertex (the
                    # radius has square-root kinks where eigenvalues meet)
                    box = [
                        max(radius(lr * f, mu + d, h, nesterov) for h in H)
                        for f in (1 / 1.03, 1, 1.03)
                        for d in (-0.01, 0, 0.01)
                    ]
                    inside.append(min(box) - 1e-6 <= level <= max(box) + 1e-6)
        assert len(near) > 30 and np.mean(near) > 0.9 and all(inside), (len(near), np.mean(near))


def test_boundary_and_critical_damping_are_the_theory(fig):
    axes = axes_by_label(fig)
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        ax = axes[f"phase:{key}"]
        lr_b, mu_b = by_gid(ax, f"boundary:{key}").get_data()
        for lr, mu in zip(lr_b[::20], mu_b[::20]):
            assert max(radius(lr, mu, h, nesterov) for h in H) == pytest.approx(1.0, abs=1e-6)
            assert max(radius(lr * 1.02, mu, h, nesterov) for h in H) > 1
        # critical damping of the slowest mode (h = 1): the iteration matrix's two
        # eigenvalues meet (discriminant 0), real below, complex above
        lr_c, mu_c = by_gid(ax, f"critical:{key}").get_data()
        for lr, mu in zip(lr_c[5:-5:20], mu_c[5:-5:20]):
            a = lr * H[0]
            T, D = ((1 + mu) * (1 - a), mu * (1 - a)) if nesterov else (1 + mu - a, mu)
            assert T * T - 4 * D == pytest.approx(0.0, abs=1e-9)
            lam = np.linalg.eigvals(
                np.array([[1 - a * 0.9, mu], [-a * 0.9, mu]])
                if not nesterov
                else np.array([[1 - (1 + mu) * a * 0.9, mu * mu], [-a * 0.9, mu]])
            )
            assert np.all(np.isreal(lam))  # a little less learning rate: over-damped
    assert "ratio-boundary:nesterov" in {a.get_gid() for a in axes["phase:ratio"].lines}


def legend_texts(fig):
    # the legends sit under the maps they explain: in the figure's subfigures
    subs = [fig, *fig.subfigs]
    return [
        t
        for leg in [*(leg for sub in subs for leg in sub.legends), *(ax.get_legend() for ax in fig.axes)]
        if leg
        for t in leg.get_texts()
    ]


def test_the_fewest_updates_the_title_states_are_marked_on_their_cells():
    """``steps_finding``'s counts (the step maps' title) are the cells the diamonds mark, each map its own."""
    import re

    from dtsgd_viz.views.phase.geometry import steps_finding

    fig = dtsgd_viz.plot_phase(SURFACE, LRS, MUS, STEPS, TOL, show="steps")
    axes = axes_by_label(fig)
    grids = {n: phase_grid(SURFACE, LRS, MUS, STEPS, TOL, n) for n in (False, True)}
    title = steps_finding(grids[False].steps, grids[True].steps)
    assert title in [t.get_text().strip() for t in fig.texts]
    stated = [int(v) for v in re.findall(r"(?:momentum|Nesterov) (\d+)", title)]
    for (key, nesterov), fewest in zip((("momentum", False), ("nesterov", True)), stated):
        marks = by_gid(axes[f"phase:{key}"], f"fewest:{key}")
        cells = {(float(x), float(y)) for x, y in zip(marks.get_xdata(), marks.get_ydata())}
        steps = grids[nesterov].steps
        want = {(float(LRS[j]), float(MUS[i])) for i, j in zip(*np.nonzero(steps == fewest))}
        assert cells == want and steps[steps >= 0].min() == fewest


def test_the_legend_says_the_grey_edge_is_the_cap_and_names_the_theory(fig):
    labels = [t.get_text() for t in legend_texts(fig)]
    assert f"more than {STEPS} updates (the cap)" in labels
    assert {"momentum's stability boundary", "Nesterov's stability boundary"} <= set(labels)
    assert any(t.startswith("critical damping (h = 1)") for t in labels)
    # the cap's level is said for what it is, its value the cap's rate from the flat
    # direction's share of the starting loss
    cap = round(cap_rate(flat_mode_loss(SURFACE), TOL, STEPS), 3)
    (iso,) = [t for t in labels if t.startswith("iso-rate")]
    assert iso.endswith(f"{cap:g} (the cap's edge)") and "\n" not in iso
    assert all("\n" not in t for t in labels) and len(labels) <= 11
    # critical damping is black on both step maps
    axes = axes_by_label(fig)
    for key in ("momentum", "nesterov"):
        assert by_gid(axes[f"phase:{key}"], f"critical:{key}").get_color() == "black"


def test_each_boundary_is_drawn_one_way_on_every_map(fig):
    """A rule's stability boundary has the rule's colour, dash and width on its step map
    and on the ratio map alike (they were drawn two ways)."""
    from matplotlib.colors import to_hex

    axes = axes_by_label(fig)
    for key in ("momentum", "nesterov"):
        look = style.RULE_LOOKS[key]
        drawn = [by_gid(axes[f"phase:{key}"], f"boundary:{key}"), by_gid(axes["phase:ratio"], f"ratio-boundary:{key}")]
        for line in drawn:
            assert to_hex(line.get_color()) == to_hex(look.color) and line.get_linewidth() == look.lw
        assert drawn[0].get_linestyle() == drawn[1].get_linestyle()
        np.testing.assert_allclose(drawn[0].get_xydata(), drawn[1].get_xydata())


def test_no_region_is_named_on_the_maps_and_no_text_overlaps(fig):
    """Regions are named in the legend only; what the maps write (one label per
    iso-rate level) overprints nothing (``text.clashes``)."""
    from dtsgd_viz.views.text.clashes import clashes

    fig.canvas.draw()
    for ax in fig.axes:
        assert not [t for t in ax.texts if (t.get_gid() or "").startswith(("region-", "boundary-label"))]
        assert clashes(ax) == [], ax.get_label()


def test_cells_agree_with_the_reference_run():
    grid = phase_grid(SURFACE, LRS[:2], MUS[:2], 10, TOL, True)
    path = reference.run(SURFACE.grad_np, SURFACE.default_start.astype(np.float32), 10, LRS[1], MUS[1], True)
    np.testing.assert_array_equal(grid.losses[:, 1, 1], SURFACE.value_np(path))


def test_a_surface_without_a_hessian_draws_the_maps_without_theory():
    fig = dtsgd_viz.plot_phase(surfaces.Rosenbrock(), np.geomspace(1e-4, 1e-3, 3), [0.0, 0.5], 10, 1e-1)
    gids = {a.get_gid() for ax in fig.axes for a in [*ax.lines, *ax.collections]}
    assert "phase:ratio" in gids and not any((g or "").startswith(("boundary", "rate:", "critical")) for g in gids)


def test_bad_grids_are_refused():
    with pytest.raises(ValueError, match=r"momenta must be .* in \[0, 1\)"):
        dtsgd_viz.plot_phase(SURFACE, LRS, [0.5, 1.2], 10, 1e-2)
    with pytest.raises(ValueError, match="learning_rates must be strictly increasing"):
        dtsgd_viz.plot_phase(SURFACE, [0.1, 0.05], MUS, 10, 1e-2)
    np.testing.assert_allclose(cell_edges(LRS, log=True)[1:-1], np.sqrt(LRS[1:] * LRS[:-1]))


@pytest.mark.slow
def test_the_theory_and_the_figures_need_neither_tensorflow_nor_ipywidgets():
    import subprocess
    import sys

    code = (
        "import sys, dtsgd_viz.views.phase.plot, dtsgd_viz.views.rates.modes, dtsgd_viz.theory; "
        "print(sorted(m for m in ('ipywidgets', 'IPython', 'tensorflow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize(
    "steps, tol, match",
    [
        (0, 1e-2, r"steps must be an integer >= 1 .*Received: steps=0\."),
        (-3, 1e-2, r"steps must be an integer >= 1 .*Received: steps=-3\."),
        (2.0, 1e-2, r"steps must be an integer >= 1 .*Received: steps=2\.0\."),
        (True, 1e-2, r"steps must be an integer >= 1 .*Received: steps=True\."),
        (10, 0.0, r"tol must be a finite number > 0 .*Received: tol=0\.0\."),
        (10, -1e-3, r"tol must be a finite number > 0 .*Received: tol=-0\.001\."),
        (10, float("nan"), r"tol must be a finite number > 0 .*Received: tol=nan\."),
        (10, "small", r"tol must be a finite number > 0 .*Received: tol='small'\."),
    ],
)
def test_bad_steps_and_tol_are_refused_with_what_was_received(steps, tol, match):
    with pytest.raises(ValueError, match=match):
        dtsgd_viz.plot_phase(SURFACE, [0.05, 0.1], [0.5, 0.9], steps=steps, tol=tol)
    with pytest.raises(ValueError, match=match):
        phase_grid(SURFACE, [0.05, 0.1], [0.5, 0.9], steps, tol, False)


@pytest.mark.parametrize(
    "call, match",
    [
        (
            lambda: theory.convergence_boundary([-0.5], 1.0, True),
            r"momentum must be finite, in \[0, 1\)\. "
            r"Received: momentum=\[-0\.5\]\.",
        ),
        (
            lambda: theory.convergence_boundary([0.5], 0.0, False),
            r"h_max must be finite and > 0\. Received: h_max=0\.0",
        ),
        (
            lambda: theory.critical_damping(1.0, False),
            r"momentum must be finite, in \[0, 1\)\. Received: momentum=1\.0",
        ),
        (lambda: theory.rate(0.1, float("nan"), True), r"momentum must be finite, in \[0, 1\)"),
        (lambda: theory.rate([0.1, np.inf], 0.5, True), r"a must be finite .*Received: a=\[0\.1, inf\]"),
        (lambda: theory.spectral_radius(0.1, 1.5, 1.0, False), r"momentum must be finite, in \[0, 1\)"),
        (lambda: theory.iteration_matrix("x", 0.5, 1.0, False), r"learning_rate must be finite"),
        (lambda: theory.problem_rate([0.1], [0.5], [1.0, np.nan], True), r"hessian_eigenvalues must be finite"),
        (lambda: theory.critical_damping(0.5, "yes"), r"nesterov must be True or False\. Received: nesterov='yes'"),
    ],
)
def test_theory_refuses_momenta_outside_0_1_and_non_finite_inputs(call, match):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.slow
def test_tick_labels_never_overlap():
    from dtsgd_viz.views.phase.geometry import log_ticks

    assert log_ticks(0.015, 0.5) == ([0.1], [0.02, 0.05, 0.2, 0.5])
    assert log_ticks(0.0009, 0.23) == ([0.001, 0.01, 0.1], [])  # tutorial 03's grid: decades only
    assert log_ticks(1e-4, 1e-1) == ([1e-4, 1e-3, 1e-2, 1e-1], [])
    assert log_ticks(0.05, 0.09) == ([], [0.05, 0.06, 0.07, 0.08, 0.09])
    check_readable(dtsgd_viz.plot_phase(SURFACE, np.geomspace(0.02, 0.4, 6), MUS, 60, TOL), 3)
    check_readable(dtsgd_viz.plot_phase(SURFACE, steps=60, tol=TOL), 3)
    check_readable(
        dtsgd_viz.plot_phase(surfaces.RotatedQuadratic(condition=20.0), np.geomspace(1e-3, 0.2, 24), MUS, 60, TOL),
        3,
    )


@pytest.mark.slow
def test_the_legend_names_the_caps_edge_only_where_a_map_draws_it():
    """The tutorial's surface: over small learning rates the cap's contour crosses the
    maps and the legend names it; under 1e-4 (every rate above the cap's) no contour
    is drawn and the legend does not name one."""
    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    cap = round(cap_rate(flat_mode_loss(surface), 1e-2, 30), 3)
    for lrs, drawn in ((np.geomspace(1e-3, 0.2, 8), True), (np.geomspace(1e-5, 1e-4, 6), False)):
        fig = dtsgd_viz.plot_phase(surface, lrs, np.linspace(0.0, 0.95, 6), 30, 1e-2)
        cs = by_gid(axes_by_label(fig)["phase:momentum"], "rate:momentum")
        assert bool(len(cs.get_paths()[0].vertices)) == drawn
        iso = [t.get_text() for t in legend_texts(fig) if t.get_text().startswith("iso-rate")]
        assert iso == ([f"iso-rate ρ = {cap:g} (the cap's edge)"] if drawn else []), iso


@pytest.mark.slow
def test_the_ratio_scale_fits_the_data_and_extends_only_past_it():
    """The colour limit is the smallest of 2x, 4x, 8x (log2 1, 2, 3) holding the 98th
    percentile of |log2 ratio| where both converge; arrows only where cells lie past."""
    from dtsgd_viz.views.phase.geometry import ratio_limit

    assert ratio_limit([0.3, -0.8]) == (1, "neither")
    assert ratio_limit([0.1] * 99 + [1.5]) == (1, "max")  # one outlier: the 98th stays in 2x
    assert ratio_limit([-1.5] * 10 + [0.1] * 90) == (2, "neither")
    assert ratio_limit([5.0] * 10 + [0.1] * 90) == (3, "max")  # the largest limit, an arrow
    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    fig = dtsgd_viz.plot_phase(surface, np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20), 150, 1e-3)
    ax = axes_by_label(fig)["phase:ratio"]
    mesh = by_gid(ax, "phase:ratio")
    values = np.abs(mesh.get_array().compressed())
    vmax = mesh.norm.vmax
    assert mesh.norm.vmin == -vmax and vmax in (1, 2, 3)
    assert np.percentile(values, 98) <= vmax and (vmax == 1 or np.percentile(values, 98) > vmax - 1)
    assert vmax == 2 and values.max() > vmax  # 2.1 at most: 4x, not 8x
    (bar,) = [a for a in fig.axes if getattr(a, "_colorbar", None) is not None and a._colorbar.mappable is mesh]
    assert bar._colorbar.extend == "max"  # only momentum's side reaches past 4x
    # the hatched single-rule regions are still there, and the cap cells
    assert {c.get_gid() for c in ax.collections} >= {
        "region:only_momentum",
        "region:cap_momentum",
        "region:cap_nesterov",
    }


def _drawn_marks(fig):
    """What some map draws, by the legend label it would have."""
    axes = axes_by_label(fig)
    drawn = set()
    for key in ("momentum", "nesterov"):
        ax = axes[f"phase:{key}"]
        mesh = by_gid(ax, f"phase:{key}")
        if np.ma.getmaskarray(mesh.get_array()).any():
            drawn.add("not within tol")
        if len(by_gid(ax, f"diverged:{key}").get_xdata()):
            drawn.add("diverged")
        if any(len(ln.get_xdata()) for ln in ax.lines if ln.get_gid() == f"fewest:{key}"):  # show="steps" only
            drawn.add("fewest")
        for gid, name in ((f"boundary:{key}", "stability boundary"), (f"critical:{key}", "critical damping")):
            line = [a for a in ax.lines if a.get_gid() == gid]
            x0, x1 = ax.get_xlim()
            if line and np.any((line[0].get_xdata() >= x0) & (line[0].get_xdata() <= x1)):
                drawn.add(name)
        if any(len(p.vertices) for c in ax.collections if c.get_gid() == f"rate:{key}" for p in c.get_paths()):
            drawn.add("iso-rate")
    ratio = axes["phase:ratio"]
    drawn |= {c.get_gid().split(":")[1] for c in ratio.collections if c.get_gid().startswith("region:")}
    drawn.add("neither")
    shown = by_gid(ratio, "phase:ratio").get_array()
    if (np.abs(shown.compressed()) <= np.log2(1.0 + TIE_WITHIN)).any():  # cells in the tie face
        drawn.add("tie")
    if len(by_gid(ratio, "diverged:ratio").get_xdata()):
        drawn.add("both diverge")
    return drawn


@pytest.mark.parametrize("lrs", [LRS, np.geomspace(0.002, 0.05, 6)], ids=["wide", "stable-only"])
@pytest.mark.slow
def test_the_legend_lists_only_marks_some_map_draws(lrs):
    fig = dtsgd_viz.plot_phase(SURFACE, lrs, MUS, STEPS, TOL)
    drawn = _drawn_marks(fig)
    keys = {
        "more than": "not within tol",
        "diverges": "diverged",
        "momentum's stability": "stability boundary",
        "Nesterov's stability": "stability boundary",
        "iso-rate": "iso-rate",
        "critical": "critical damping",
        "only momentum converges": "only_momentum",
        "only Nesterov converges": "only_nesterov",
        "only momentum within": "cap_momentum",
        "only Nesterov within": "cap_nesterov",
        "neither": "neither",
        "both diverge": "both diverge",
        "a tie": "tie",
        "fewest updates": "fewest",
    }
    for label in (t.get_text() for t in legend_texts(fig)):
        (mark,) = [v for k, v in keys.items() if label.startswith(k)]
        assert mark in drawn, (label, drawn)
    if not any(phase_grid(SURFACE, lrs, MUS, STEPS, TOL, n).diverged.any() for n in (False, True)):
        assert "diverges" not in [t.get_text() for t in legend_texts(fig)]


SURFACE_20 = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)


@pytest.fixture(scope="module")
def split_figs():
    s = SURFACE_20
    lrs, mus = np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20)
    return {show: dtsgd_viz.plot_phase(s, lrs, mus, steps=150, tol=1e-3, show=show) for show in ("steps", "ratio")}


@pytest.mark.slow
def test_show_splits_the_step_maps_and_the_ratio_map_each_with_its_finding(split_figs):
    from dtsgd_viz.views.core.figure import headline_texts

    steps, ratio = (split_figs[k] for k in ("steps", "ratio"))
    maps = lambda f: {k for k in axes_by_label(f) if k.startswith("phase:")}  # noqa: E731
    assert maps(steps) == {"phase:momentum", "phase:nesterov"} and maps(ratio) == {"phase:ratio"}
    (s_title, _), (r_title, _) = headline_texts(steps), headline_texts(ratio)
    # the titles are the public findings of the grids (the counts the tutorial prints)
    from dtsgd_viz.views.phase.geometry import phase_finding, steps_finding

    lrs, mus = np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20)
    m, n = (phase_grid(SURFACE_20, lrs, mus, 150, 1e-3, nesterov).steps for nesterov in (False, True))
    assert (
        s_title
        == steps_finding(m, n)
        == f"Fewest updates in the 480 cells: momentum {m[m >= 0].min()}, Nesterov {n[n >= 0].min()}"
    )
    both = (m >= 0) & (n >= 0)
    assert (
        r_title
        == phase_finding(m, n)
        == (
            f"Both converge in {both.sum()} cells: Nesterov >10% faster in {(both & (m > 1.1 * n)).sum()}, "
            f"momentum in {(both & (n > 1.1 * m)).sum()}, ties {(both & (m <= 1.1 * n) & (n <= 1.1 * m)).sum()}"
        )
    )
    with pytest.raises(ValueError, match="show must be one of"):
        dtsgd_viz.plot_phase(SURFACE, LRS, MUS, STEPS, TOL, show="maps")


def test_divergence_is_dark_grey_apart_from_the_cap_and_named_so(split_figs):
    from matplotlib.colors import to_rgb

    from dtsgd_viz.views.phase.regions import DIVERGED_FACE

    fig = split_figs["steps"]
    assert sum(to_rgb(DIVERGED_FACE)) / 3 < sum(to_rgb(style.NOT_CONVERGED_COLOR)) / 3 - 0.3
    for ax in fig.axes[:2]:
        cells = by_gid(ax, f"diverged-cells:{ax.get_label().split(':')[1]}")
        assert to_rgb(cells.cmap(0.0)) == to_rgb(DIVERGED_FACE)
    labels = {t.get_text() for t in legend_texts(fig)} | {t.get_text() for ax in fig.axes for t in ax.texts}
    assert "diverges" in labels and any(t.startswith("more than 150") for t in labels)


def test_notes_and_legends_are_at_least_9_5_points(split_figs):
    for fig in split_figs.values():
        texts = [t for sub in [fig, *fig.subfigs] for leg in sub.legends for t in leg.get_texts()]
        assert texts and min(t.get_fontsize() for t in texts) >= 9.5
