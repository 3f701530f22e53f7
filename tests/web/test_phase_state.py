"""``web.phase_state``: the browser PhaseDiagram's map, checked against theory computed
apart from it (the rule's own recurrence per cell, the spectral radius of the rule on the
stiffest mode at the drawn boundary) and against what the colours must mean."""

import numpy as np
import pytest
from matplotlib import colors as mcolors

from dtsgd_viz import surfaces
from dtsgd_viz.theory import reference
from dtsgd_viz.theory.convergence import steps_to_tolerance
from dtsgd_viz.theory.quadratic import convergence_boundary
from dtsgd_viz.views.core import style
from dtsgd_viz.web import encode
from dtsgd_viz.web.phase import phase_state, quadratic_terms

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's
LRS = np.geomspace(1e-3, 0.2, 12)
MUS = np.linspace(0.0, 0.95, 10)
STEPS, TOL = 120, 1e-3


@pytest.fixture(scope="module")
def state():
    return phase_state(SURFACE, learning_rates=LRS, momenta=MUS, steps=STEPS, tol=TOL, pick=(8, 7))


def test_each_cells_steps_are_the_rules_own_run_from_the_start(state):
    start = np.asarray(SURFACE.default_start, np.float32)
    for rule, nesterov in (("momentum", False), ("nesterov", True)):
        got = encode.decode(state["steps"][rule])
        assert got.shape == (len(MUS), len(LRS))
        for i in range(0, len(MUS), 3):
            for j in range(0, len(LRS), 2):
                path = reference.run(SURFACE.grad_np, start, STEPS, LRS[j], MUS[i], nesterov)
                want = steps_to_tolerance(SURFACE.value_np(path.astype(np.float64)), SURFACE.min_value, TOL)
                assert got[i, j] == want, (rule, i, j)


def test_the_colours_say_who_is_faster(state):
    ratio = encode.decode(state["ratio"])
    regions = encode.decode(state["regions"])
    m, n = (encode.decode(state["steps"][k]) for k in ("momentum", "nesterov"))
    rgb = np.array([mcolors.to_rgb(c) for c in state["colors"]]).reshape(*ratio.shape, 3)
    both = (m >= 0) & (n >= 0)
    assert np.array_equal(regions == state["region_order"].index("both"), both)
    # a tie (style.TIE_FACE, not the page's white) is what the finding counts as one: counts within 10%
    mf, nf = np.maximum(m, 1), np.maximum(n, 1)
    nesterov_faster, momentum_faster = both & (mf > nf * 1.1), both & (nf > mf * 1.1)
    assert nesterov_faster.any() and momentum_faster.any()
    assert np.all(rgb[nesterov_faster, 0] > rgb[nesterov_faster, 2] + 0.1)  # red, visibly
    assert np.all(rgb[momentum_faster, 2] > rgb[momentum_faster, 0] + 0.1)  # blue, visibly
    assert np.allclose(rgb[both & ~nesterov_faster & ~momentum_faster], mcolors.to_rgb(style.TIE_FACE))
    assert mcolors.to_rgb(style.TIE_FACE) != (1.0, 1.0, 1.0)
    # one rule within the cap (the other neither converged nor diverged): tinted towards it
    order = state["region_order"]
    cap_m, cap_n = regions == order.index("cap_momentum"), regions == order.index("cap_nesterov")
    assert cap_m.any() and cap_n.any()
    assert np.all(rgb[cap_n, 0] > rgb[cap_n, 2] + 0.05) and np.all(rgb[cap_m, 2] > rgb[cap_m, 0] + 0.05)
    neutral = rgb[~both & ~cap_m & ~cap_n]
    assert np.allclose(neutral[:, 0], neutral[:, 1]) and np.allclose(neutral[:, 1], neutral[:, 2])  # greys
    assert np.allclose(ratio[both], np.log2(np.maximum(n[both], 1) / np.maximum(m[both], 1)))


def _spectral_radius(a, mu, nesterov):
    """The rule on one mode of curvature h, with a = lr * h: (p, v) -> (p', v')."""
    if nesterov:
        t = np.array([[1 - a * (1 + mu), mu * mu], [-a, mu]])
    else:
        t = np.array([[1 - a, mu], [-a, mu]])
    return max(abs(np.linalg.eigvals(t)))


def test_the_drawn_boundaries_are_where_the_stiffest_mode_stops_shrinking(state):
    h_max = float(np.max(SURFACE.hessian_eigenvalues))
    for rule, nesterov in (("momentum", False), ("nesterov", True)):
        lr = encode.decode(state["boundaries"][rule]["lr"])
        mu = encode.decode(state["boundaries"][rule]["mu"])
        for k in range(0, len(mu), 17):
            a = lr[k] * h_max
            assert _spectral_radius(a * 0.99, mu[k], nesterov) < 1 < _spectral_radius(a * 1.01, mu[k], nesterov)


def test_the_quadratic_the_browser_runs_is_the_surfaces(state):
    H, m = np.asarray(state["hessian"]).reshape(2, 2), np.asarray(state["minimum"])
    x = np.array([[0.7, -1.3], [2.0, 0.5]])
    assert np.allclose((x - m) @ H.T, SURFACE.grad_np(x), rtol=1e-6)
    assert state["start"] == [float(v) for v in SURFACE.default_start]
    assert state["pick"] == [8, 7]
    (x0, x1), (y0, y1) = state["box"]
    assert x0 <= state["start"][0] <= x1 and y0 <= state["start"][1] <= y1


def test_the_axes_ticks_lie_on_the_map(state):
    lr_e, mu_e = encode.decode(state["lr_edges"]), encode.decode(state["mu_edges"])
    assert len(lr_e) == len(LRS) + 1 and len(mu_e) == len(MUS) + 1
    assert state["lr_ticks"] and all(lr_e[0] <= t <= lr_e[-1] for t in state["lr_ticks"])
    assert state["mu_labels"] == ["0", "0.2", "0.4", "0.6", "0.8"]
    assert state["scale"]["labels"][len(state["scale"]["labels"]) // 2] == "tie ±10%"


def test_cells_cut_by_a_boundary_show_the_nearest_run_on_their_side(state):
    """As ``plot_phase`` draws them (``views.phase.side_cells``): where a boundary cuts a cell, the part on the
    other side of it from the cell's own run shows a neighbour's run on that side."""
    h_max = float(np.linalg.eigvalsh(quadratic_terms(SURFACE)[0]).max())
    lr_e, mu_e = (encode.decode(state[k]) for k in ("lr_edges", "mu_edges"))

    def side(lr, mu):
        return [bool(lr > convergence_boundary(np.clip(mu, 0, 0.9999), h_max, nz)) for nz in (False, True)]

    assert len(state["cuts"]) >= len(MUS)  # each row of cells: a boundary cuts one or more
    for l0, l1, m0, m1, k in state["cuts"]:
        lr, mu = np.sqrt(l0 * l1), (m0 + m1) / 2
        j, i = int(np.searchsorted(lr_e, lr)) - 1, int(np.searchsorted(mu_e, mu)) - 1  # the cell it lies in
        kj, ki = k % len(LRS), k // len(LRS)
        assert (ki, kj) != (i, j) and abs(ki - i) <= 1 and abs(kj - j) <= 1
        assert side(lr, mu) == side(LRS[kj], MUS[ki]) != side(LRS[j], MUS[i]), (lr, mu, k)


def test_the_state_is_small():
    import json

    st = phase_state(SURFACE, learning_rates=np.geomspace(1e-3, 0.2, 24), momenta=MUS, steps=150)
    size = len(json.dumps(st, default=lambda b: "x" * (4 * len(b) // 3)))
    assert size < 300_000, size


def test_surfaces_the_browser_cannot_run_are_refused_by_name():
    with pytest.raises(ValueError, match=r"Rosenbrock with 2 parameter\(s\) and no hessian.*widgets.PhaseDiagram"):
        quadratic_terms(surfaces.Rosenbrock())
    with pytest.raises(ValueError, match=r"ShardedQuadratic with \d+ parameter"):
        quadratic_terms(surfaces.ShardedQuadratic())
    with pytest.raises(TypeError, match="must be a dtsgd_viz.surfaces surface. Received: 3"):
        quadratic_terms(3)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("pick", [(12, 0), (0, 10), (-1, 2), (1,)])
def test_a_pick_off_the_grid_is_refused_with_the_ranges(pick):
    with pytest.raises(ValueError, match=r"lr_index in 0\.\.11 and mu_index in 0\.\.9\. Received"):
        phase_state(SURFACE, learning_rates=LRS, momenta=MUS, steps=20, pick=pick)
