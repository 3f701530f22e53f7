"""The phase maps' iso-rate contours and layout, checked through the artists: no contour
vertex outside the stable region or in the band along its boundary, labels apart from
each other and off the boundary and critical-damping lines, the ratio map at full
width, the legends off the maps, no text under 8.5 pt."""

import matplotlib
import numpy as np
import pytest
from helpers.phase_names import assert_boundary_names_clear
from helpers.readable import overlapping

import dtsgd_viz
from dtsgd_viz.theory import quadratic as theory
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.phase.contours import EDGE_BAND, MIN_PIECE

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
        assert len(pieces) >= 2
        for level, piece in pieces:
            lr, mu = piece[:, 0], piece[:, 1]
            rho = np.array([max(theory.rate(a * hh, m, nesterov) for hh in h) for a, m in zip(lr, mu)])
            assert np.all(rho < 1.0), (key, level)
            edge = theory.convergence_boundary(np.clip(mu, 0, 0.9999), h.max(), nesterov)
            # off the band along the boundary (one fine-grid step of slack: 1.8% in lr)
            assert np.all(lr <= (1 - EDGE_BAND) * edge * 1.02), (key, level, (lr / edge).max())
            # short pieces are not drawn, unless a label's gap cut a longer one short
            xy = ax.transData.transform(piece)
            if np.sum(np.hypot(*np.diff(xy, axis=0).T)) * 72 / fig.dpi < MIN_PIECE * 0.99:
                centres = [
                    ax.transData.transform(t.get_position()) for t in ax.texts if t.get_gid() == f"rate-label:{key}"
                ]
                assert any(min(np.hypot(*(xy[[0, -1]] - c).T)) < 60 for c in centres), (key, level)


@pytest.mark.slow
def test_contour_labels_are_apart_and_off_the_lines(drawn):
    fig, _ = drawn
    renderer = fig.canvas.get_renderer()
    shown = 0
    for key in ("momentum", "nesterov"):
        ax = maps(fig)[f"phase:{key}"]
        labels = [t for t in ax.texts if t.get_gid() == f"rate-label:{key}"]
        shown += len(labels)
        assert all(t.get_text().startswith("ρ=") and t.get_fontsize() >= style.NOTE_SIZE for t in labels)
        boxes = [t.get_window_extent(renderer) for t in labels]
        names = [t.get_window_extent(renderer) for t in ax.texts if (t.get_gid() or "").startswith("region-label:")]
        assert not overlapping(boxes + names, pad=0.0)
        lines = [a for a in ax.lines if (a.get_gid() or "").startswith(("boundary:", "critical:"))]
        assert len(lines) == 2
        for box in boxes:
            box = box.shrunk(0.9, 0.8)  # the label's rotated box holds some air at its corners
            for line in lines:
                xy = ax.transData.transform(np.column_stack(line.get_data()))
                dense = np.concatenate([np.linspace(a, b, 8) for a, b in zip(xy[:-1], xy[1:])])
                inside = (
                    (dense[:, 0] > box.x0) & (dense[:, 0] < box.x1) & (dense[:, 1] > box.y0) & (dense[:, 1] < box.y1)
                )
                assert not inside.any(), (key, line.get_gid())
    assert shown >= 2


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
        assert len(leg.get_texts()) <= 4  # what the maps cannot name in place
        assert not overlapping(
            [leg.get_window_extent(renderer)] + [ax.get_window_extent(renderer) for ax in m.values()], pad=0.0
        )[: len(m)]
    sizes = [t.get_fontsize() for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()]
    assert min(sizes) >= style.NOTE_SIZE


def test_regions_named_in_place_leave_the_legend(drawn):
    fig, _ = drawn
    texts = [t.get_text() for sub in [fig, *fig.subfigs] for leg in sub.legends for t in leg.get_texts()]
    named = {t.get_gid() for ax in fig.axes for t in ax.texts}
    if {"region-label:cap:momentum", "region-label:cap:nesterov"} <= named:
        assert not any(t.startswith("more than") for t in texts)
    if any((g or "").startswith("region-label:diverged:") for g in named):
        assert "diverges" not in texts
    if "region-label:neither" in named:
        assert not any(t.startswith("neither") for t in texts)


def test_contour_labels_are_larger_than_the_smallest_text_where_they_fit(drawn):
    from dtsgd_viz.views.phase.contours import LABEL_SIZE

    fig, _ = drawn
    sizes = [
        t.get_fontsize() for ax in maps(fig).values() for t in ax.texts if (t.get_gid() or "").startswith("rate-label:")
    ]
    assert sizes and set(sizes) <= {LABEL_SIZE, style.NOTE_SIZE}
    assert LABEL_SIZE >= 9.5 and sizes.count(LABEL_SIZE) >= sizes.count(style.NOTE_SIZE)


@pytest.mark.slow
def test_the_few_cells_momentum_wins_by_far_are_pointed_at_with_their_counts():
    # tutorial 03's grid: at lr 0.08, mu 0.3, just inside Nesterov's boundary, momentum
    # needs 30 updates and Nesterov 125: too few cells for a name, so a note points there
    from dtsgd_viz.theory.convergence import phase_grid

    surface, lrs, mus, steps, tol = CASES["tutorial"]
    fig = dtsgd_viz.plot_phase(surface, lrs, mus, steps, tol)
    ax = maps(fig)["phase:ratio"]
    m, n = (phase_grid(surface, lrs, mus, steps, tol, nest).steps for nest in (False, True))
    both = (m >= 0) & (n >= 0)
    wins = both & (n > 1.1 * m)
    ratio = np.where(wins, n / np.maximum(m, 1), 0)
    i, j = np.unravel_index(np.argmax(ratio), ratio.shape)
    (note,) = [t for t in ax.texts if t.get_gid() == "region-note:momentum faster"]
    assert note.xy == (lrs[j], mus[i])
    assert f"{m[i, j]} updates vs Nesterov's {n[i, j]}" in note.get_text()
    edge = theory.convergence_boundary(np.array([mus[i]]), 20.0, True)[0]
    assert lrs[j] > 0.85 * edge and "just inside Nesterov's" in note.get_text()
    # the note sits on the near-tie white or the grey, not on a coloured or hatched cell,
    # and off the boundaries' names
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    box = note.get_bbox_patch().get_window_extent(renderer)
    names = [t.get_window_extent(renderer) for t in ax.texts if (t.get_gid() or "").startswith("boundary-label:")]
    assert not any(box.overlaps(b) for b in names)
    (x0, y0), (x1, y1) = ax.transData.inverted().transform(box.get_points())
    inside = (lrs[None, :] > x0) & (lrs[None, :] < x1) & (mus[:, None] > y0) & (mus[:, None] < y1)
    assert inside.any()
    assert not (inside & both & ~(np.abs(np.log2(np.maximum(n, 1) / np.maximum(m, 1))) <= np.log2(1.1))).any()


def test_the_ratio_maps_boundaries_are_named_in_clear_space_with_leaders():
    from dtsgd_viz.theory.convergence import phase_grid

    surface, lrs, mus, steps, tol = CASES["tutorial"]
    fig = dtsgd_viz.plot_phase(surface, lrs, mus, steps, tol, show="ratio")
    grids = {
        key: phase_grid(surface, lrs, mus, steps, tol, nest) for key, nest in (("momentum", False), ("nesterov", True))
    }
    assert_boundary_names_clear(fig, maps(fig)["phase:ratio"], grids)


def test_each_rate_label_sits_on_cells_whose_rate_is_its_level(drawn):
    # through the Text positions and an independent numpy radius: the map cell under a
    # label "ρ=0.9" spans 0.9 in its worst mode's rate (over a 9 x 9 grid across the
    # cell); a "ρ=0.9=√μ" label sits where the rate is sqrt(mu) = 0.9 across the label's
    # whole width (the plateau, whatever the learning rate); the module's own rate grid agrees
    from helpers.theory_reference import radius

    fig, surface = drawn
    renderer = fig.canvas.get_renderer()
    h = np.unique(np.asarray(surface.hessian_eigenvalues, np.float64))
    checked = plateau = 0
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        ax = maps(fig)[f"phase:{key}"]
        (mesh,) = [c for c in ax.collections if c.get_gid() == f"phase:{key}"]
        corners = mesh.get_coordinates()
        lr_e, mu_e = corners[0, :, 0], corners[:, 0, 1]
        for t in [t for t in ax.texts if t.get_gid() == f"rate-label:{key}"]:
            level = float(t.get_text().split("=")[1])
            x, y = t.get_position()
            j, i = np.searchsorted(lr_e, x) - 1, np.searchsorted(mu_e, y) - 1
            lr = np.geomspace(lr_e[j], lr_e[j + 1], 9)
            mu = np.linspace(max(mu_e[i], 0.0), min(mu_e[i + 1], 0.999), 9)
            rho = np.array([[max(radius(a, m, hh, nesterov) for hh in h) for a in lr] for m in mu])
            assert np.allclose(rho, theory.problem_rate(lr, mu, h, nesterov), atol=1e-9)
            assert rho.min() <= level <= rho.max(), (key, t.get_text(), rho.min(), rho.max())
            checked += 1
            if t.get_text().endswith("=√μ"):
                assert not nesterov and np.sqrt(y) == pytest.approx(level, abs=2e-3)
                (x0, _), (x1, _) = ax.transData.inverted().transform(t.get_window_extent(renderer).get_points())
                across = [max(radius(a, y, hh, False) for hh in h) for a in np.geomspace(x0, x1, 15)]
                assert np.allclose(across, level, atol=2e-3), (t.get_text(), across)
                plateau += 1
    assert checked >= 4
    if CASES["tutorial"][0] is surface:  # heavy ball's 0.9 contour runs flat past critical damping
        assert plateau >= 1


def test_labels_take_the_curved_stretch_and_leave_no_stubs(drawn):
    # a contour's label sits where its line curves (the flattest direction overdamped)
    # where it fits there; no piece of a line shorter than MIN_STUB (the ends a label's
    # gap would leave beside it); the flat stretch's label says why it is flat
    from dtsgd_viz.views.phase.contours import MIN_STUB

    fig, surface = drawn
    h = np.unique(np.asarray(surface.hessian_eigenvalues, np.float64))
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        ax = maps(fig)[f"phase:{key}"]
        for level, piece in contour_pieces(ax, key):
            xy = ax.transData.transform(piece)
            length = np.sum(np.hypot(*np.diff(xy, axis=0).T)) * 72 / fig.dpi
            # the layout shrinks the axes a little (up to ~12%) after the contours are drawn
            assert length >= MIN_STUB * 0.8, (key, level, length)
        for t in [t for t in ax.texts if t.get_gid() == f"rate-label:{key}"]:
            x, y = t.get_position()
            past = x * h[0] >= theory.critical_damping(np.array([y]), nesterov)[0] * 0.999
            if t.get_text().endswith("=√μ"):  # only on heavy ball's plateau
                assert past and not nesterov, (key, t.get_text())
    if CASES["tutorial"][0] is surface:
        texts = {
            key: sorted(t.get_text() for t in maps(fig)[f"phase:{key}"].texts if t.get_gid() == f"rate-label:{key}")
            for key in ("momentum", "nesterov")
        }
        want = {"momentum": ["ρ=0.8", "ρ=0.9", "ρ=0.9=√μ", "ρ=0.975"], "nesterov": ["ρ=0.9", "ρ=0.9", "ρ=0.975"]}
        assert texts == {key: sorted(v) for key, v in want.items()}
        for key, nesterov in (("momentum", False), ("nesterov", True)):
            # one on the curve; Nesterov's second on its piece past critical damping
            spots = [t.get_position() for t in maps(fig)[f"phase:{key}"].texts if t.get_text() == "ρ=0.9"]
            over = [x * h[0] < theory.critical_damping(np.array([y]), nesterov)[0] for x, y in spots]
            assert sorted(over) == ([False, True] if nesterov else [True]), key
