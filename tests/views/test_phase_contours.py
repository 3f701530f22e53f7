"""The phase maps' iso-rate contour (the cap's edge) and layout, checked through the
artists: no contour vertex outside the stable region or in the band along its boundary,
no text clashing on a map, the ratio map at full width, the legends off the maps, no text
under 8.5 pt."""

import matplotlib
import numpy as np
import pytest
from helpers.readable import overlapping

import dtsgd_viz
from dtsgd_viz.theory import quadratic as theory
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.phase.geometry import EDGE_BAND
from dtsgd_viz.views.phase.plot import MIN_PIECE

matplotlib.use("Agg")

CASES = {
    "tutorial": (
        surfaces.RotatedQuadratic(condition=20.0, angle=30.0),
        np.geomspace(1e-3, 0.2, 24),
        np.linspace(0.0, 0.95, 20),
        150,
        1e-3,
    ),
    "small": (surfaces.RotatedQuadratic(), np.geomspace(0.01, 0.35, 9), np.linspace(0.0, 0.95, 8), 40, 1e-2),
}


@pytest.fixture(scope="module", params=list(CASES))
def drawn(request):
    surface, lrs, mus, steps, tol = CASES[request.param]
    fig = dtsgd_viz.plot_phase(surface, lrs, mus, steps, tol)
    fig.draw_without_rendering()
    return fig, surface


def maps(fig):
    return {ax.get_label(): ax for ax in fig.axes if ax.get_label().startswith("phase:")}


def contour_pieces(ax, key):
    (cs,) = [c for c in ax.collections if c.get_gid() == f"rate:{key}"]
    for level, path in zip(cs.levels, cs.get_paths()):
        if not len(path.vertices):
            continue
        starts = np.flatnonzero(path.codes == 1) if path.codes is not None else [0]
        for piece in np.split(path.vertices, starts[1:]):
            yield level, piece


@pytest.mark.slow
def test_no_contour_vertex_lies_outside_the_stable_region_or_along_its_edge(drawn):
    fig, surface = drawn
    h = np.asarray(surface.hessian_eigenvalues, np.float64)
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        ax = maps(fig)[f"phase:{key}"]
        pieces = list(contour_pieces(ax, key))
        assert pieces  # the cap's edge crosses each map
        for level, piece in pieces:
            lr, mu = piece[:, 0], piece[:, 1]
            rho = np.array([max(theory.rate(a * hh, m, nesterov) for hh in h) for a, m in zip(lr, mu)])
            assert np.all(rho < 1.0), (key, level)
            edge = theory.convergence_boundary(np.clip(mu, 0, 0.9999), h.max(), nesterov)
            # off the band along the boundary (one fine-grid step of slack: 1.8% in lr)
            assert np.all(lr <= (1 - EDGE_BAND) * edge * 1.02), (key, level, (lr / edge).max())
            # short pieces are not drawn (their length in axes fractions)
            f = ax.transAxes.inverted().transform(ax.transData.transform(piece))
            assert np.sum(np.hypot(*np.diff(f, axis=0).T)) >= MIN_PIECE * 0.99, (key, level)


@pytest.mark.slow
def test_no_text_on_a_map_clashes(drawn):
    from dtsgd_viz.views.text.clashes import clashes

    fig, _ = drawn
    for key in ("momentum", "nesterov"):
        assert clashes(maps(fig)[f"phase:{key}"]) == [], key


def test_the_ratio_map_is_full_width_and_the_legends_cover_no_map(drawn):
    fig, _ = drawn
    renderer = fig.canvas.get_renderer()
    m = maps(fig)
    top = m["phase:momentum"].get_window_extent(renderer).union([m["phase:nesterov"].get_window_extent(renderer)])
    ratio = m["phase:ratio"].get_window_extent(renderer)
    assert ratio.width >= 0.9 * top.width  # not half width beside a legend
    legends = [leg for sub in [fig, *fig.subfigs] for leg in sub.legends]
    assert legends
    for leg in legends:
        assert len(leg.get_texts()) <= 6  # a short legend
        assert not overlapping(
            [leg.get_window_extent(renderer)] + [ax.get_window_extent(renderer) for ax in m.values()], pad=0.0
        )[: len(m)]
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()]
    assert min(sizes) >= style.NOTE_SIZE


def test_the_tutorials_maps_draw_the_caps_edge_alone_left_of_the_flat_directions_critical_damping():
    """Tutorial 03's grid: each map draws one contour, the cap's 0.975, unlabelled (the
    legend names it); it runs only left of the flattest direction's critical damping (past
    it the steep direction decides where the cap ends)."""
    surface, lrs, mus, steps, tol = CASES["tutorial"]
    fig = dtsgd_viz.plot_phase(surface, lrs, mus, steps, tol, show="steps")
    h = np.unique(np.asarray(surface.hessian_eigenvalues, np.float64))
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        ax = maps(fig)[f"phase:{key}"]
        assert not [t for t in ax.texts if (t.get_gid() or "").startswith("rate-label")], key
        assert {float(lv) for lv, _ in contour_pieces(ax, key)} == {0.975}, key
        cap = np.concatenate([p for lv, p in contour_pieces(ax, key) if lv == 0.975])
        assert np.all(cap[:, 0] * h[0] < theory.critical_damping(np.clip(cap[:, 1], 0, 0.9999), nesterov) + 1e-9)
