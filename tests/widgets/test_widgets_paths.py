"""PathExplorer, CompareWidget and PhaseDiagram: the pure state transitions and
numerics first, then the real widgets driven through their traits and checked
through what their figures then hold."""

import subprocess
import sys

import matplotlib
import numpy as np
import pytest
from helpers.phase_cells import at_runs

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.theory.convergence import diverged
from dtsgd_viz.theory.quadratic import iteration_matrix, spectral_radius
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.paths.plot import draw_paths
from dtsgd_viz.views.update import geometry as upd
from dtsgd_viz.widgets import (
    CompareParams,
    CompareWidget,
    PathExplorer,
    PathExplorerState,
    PhaseDiagram,
    compare_configs,
    compare_params,
    convergence_boundary,
    path_explorer_state,
    phase_grid,
    steps_to_tolerance,
)
from dtsgd_viz.widgets.compare import RunQueue, finished, request, table_rows
from dtsgd_viz.widgets.path_explorer import path_tracks, step_text
from dtsgd_viz.widgets.phase_diagram import REFERENCE_NOTE, cell_edges, phase_pick

matplotlib.use("Agg")

STEPS = 12
ROTATED = surfaces.RotatedQuadratic()  # Hessian eigenvalues 1 and 10
START = ROTATED.default_start.astype(np.float32)


@pytest.fixture(scope="module")
def recs():
    return dtsgd_viz.run(ROTATED, CONFIGS, STEPS)


@pytest.fixture(scope="module")
def _shared_explorer(recs):
    w = PathExplorer(recs, ROTATED)
    return w, w.slider.value


@pytest.fixture
def explorer(_shared_explorer):
    """``PathExplorer(recs, ROTATED)`` (zoomed, at the first update), built once for the
    module: each test gets it back at the update it was built at."""
    w, first = _shared_explorer
    w.slider.value = first
    assert w.state.update == first
    return w


@pytest.fixture(scope="module")
def bare(recs):
    """``PathExplorer(recs, ROTATED, step=2, zoom=False)``, built once: only read."""
    return PathExplorer(recs, ROTATED, step=2, zoom=False)


def by_gid(ax, prefix):
    return {
        a.get_gid()[len(prefix) :]: a
        for a in [*ax.lines, *ax.collections, *ax.patches]
        if (a.get_gid() or "").startswith(prefix)
    }


def reference_path(lr, mu, nesterov, steps=STEPS, start=START):
    return reference.run(ROTATED.grad_np, start, steps, lr, mu, nesterov).astype(np.float64)


def first_stay(losses, tol):
    """Steps to tolerance, written out as a loop (the test's own count)."""
    for k in range(len(losses)):
        if all(np.isfinite(x) and abs(x - ROTATED.min_value) <= tol for x in losses[k:]):
            return k
    return None


# ---- PathExplorer: pure ------------------------------------------------------------------


def test_path_explorer_state_transitions():
    s = PathExplorerState(tuple(range(1, STEPS + 1)), 0)
    s2 = path_explorer_state(s, {"name": "update", "new": 6})
    assert (s2.index, s2.update, s.update) == (5, 6, 1)  # update 6 is the 6th recorded
    with pytest.raises(ValueError, match=r"update must be an int in 1\.\.12 \(updates 1\.\.12\). Received: 13"):
        path_explorer_state(s, {"name": "update", "new": STEPS + 1})
    with pytest.raises(ValueError, match=r"Received: 0"):
        path_explorer_state(s, {"name": "update", "new": 0})
    with pytest.raises(ValueError, match="Unknown change 'zoom'"):
        path_explorer_state(s, {"name": "zoom", "new": 1})
    # every 5th update recorded: a value between two snaps to the nearest
    every5 = PathExplorerState((5, 10, 15, 20), 0)
    assert path_explorer_state(every5, {"name": "update", "new": 12}).update == 10
    assert path_explorer_state(every5, {"name": "update", "new": 13}).update == 15
    assert step_text(path_explorer_state(every5, {"name": "update", "new": 20})) == (
        "update 20  (4 of 4 recorded updates)"
    )


@pytest.mark.slow
def test_tracks_are_the_update_decomposition(recs):
    view = draw_paths(recs, ROTATED, 1)
    tracks = path_tracks(view.scene, arrows=True)
    for key, rec in recs.items():
        t = tracks[key]
        np.testing.assert_array_equal(t.coords, rec.path("w").astype(np.float64))
        # the loss after k = 0..N updates (the recorded loss of update k: after k - 1)
        np.testing.assert_array_equal(t.loss_steps, np.arange(len(rec) + 1))
        np.testing.assert_allclose(t.loss, ROTATED.value_np(rec.path("w").astype(np.float64)), rtol=1e-12)
        np.testing.assert_allclose(t.loss[:-1], rec.loss, rtol=1e-5)
        for i in range(STEPS):
            chain = upd.arrow_chain(upd.decompose_update(rec, "w", i), view.scene.plane)
            assert [term for term, *_ in chain] == [term for term, *_ in t.arrows]
            for (_, tail, uv), (_, tails, uvs) in zip(chain, t.arrows):
                np.testing.assert_allclose(tails[i], tail, rtol=1e-12, atol=1e-12)
                np.testing.assert_allclose(uvs[i], uv, rtol=1e-12, atol=1e-12)
        # Nesterov's iterate behind each look-ahead point: p - mu * v_prev
        if CONFIGS[key]["nesterov"]:
            v = rec.global_values("w", "velocity").astype(np.float64)
            v_prev = np.concatenate([np.zeros((1, 2)), v[:-1]])
            np.testing.assert_allclose(
                t.iterates, t.coords[:-1] - CONFIGS[key]["momentum"] * v_prev, rtol=1e-12, atol=1e-12
            )
        else:
            assert t.iterates is None


# ---- PathExplorer: the widget ------------------------------------------------------------


def zoom_chain(w, key):
    """The thick arrows of ``key``'s zoomed panel: ``{term: (tail, uv)}``, ``uv`` the
    true term (every arrow is drawn at its true length)."""
    ax = w.view.artists.zoom_axes[key]
    return {
        q.get_gid().split(":")[2]: (np.asarray(q.get_offsets()[0]), np.array([q.U[0], q.V[0]]))
        for q in ax.collections
        if (q.get_gid() or "").startswith("zoom-arrow:")
    }


@pytest.mark.slow
def test_slider_updates_artists_in_place(recs, explorer, capsys):
    w = explorer  # PathExplorer(recs, ROTATED, zoom=True): zoomed by default
    art = w.view.artists
    assert w.state.update == 1 and w.slider.value == 1 and w.slider.description == "update"
    static, renders, png = w.static_state(), w.renders, w.image.value
    main_axes = (art.ax_path, art.ax_loss)
    counts = [(len(ax.lines), len(ax.collections), len(ax.texts)) for ax in main_axes]
    moving = (dict(art.positions), dict(art.arrows), dict(art.loss_markers), art.step_line)

    w.slider.value = 6  # update 6: its arrows from the parameter after update 5, its ring after it
    assert w.state.update == 6 and w.state.index == 5 and w.renders == renders + 1
    for key, rec in recs.items():
        path = rec.path("w").astype(np.float64)
        np.testing.assert_array_equal(art.positions[key].get_xydata(), path[6:7])  # the ring: after update 6
        total = np.zeros(2)
        for (k, _term), q in art.arrows.items():
            if k == key:
                total += [float(q.U[0]), float(q.V[0])]
        first = next(q for (k, _), q in art.arrows.items() if k == key)
        np.testing.assert_array_equal(first.get_offsets()[0], path[5])
        np.testing.assert_allclose(total, path[6] - path[5], rtol=1e-5, atol=1e-6)
        # update 6 at k = 6: the loss after 6 updates, as plot_paths and findings mark it
        np.testing.assert_allclose(art.loss_markers[key].get_xydata(), [[6, ROTATED.value_np(path[6])]], rtol=1e-12)
        # the zoomed panel follows: update 6's terms from the recorded values and the rule
        g = rec.global_values("w", "grad")[5].astype(np.float64)
        v = rec.global_values("w", "velocity").astype(np.float64)
        lr, mu = CONFIGS[key]["learning_rate"], CONFIGS[key]["momentum"]
        chain = zoom_chain(w, key)
        np.testing.assert_allclose(chain["gradient"][1], -lr * g, rtol=1e-6)
        if mu:
            term = "lookahead" if CONFIGS[key]["nesterov"] else "momentum"
            np.testing.assert_allclose(chain[term][1], mu * (v[5] if term == "lookahead" else v[4]), rtol=1e-6)
        assert art.zoom_axes[key].get_title() == rule_name(key)  # the one shared zoom: in the caption
        alpha = art.trails[key].get_colors()[:, 3]
        assert len(alpha) == 6 and np.all(np.diff(alpha) > 0)  # the trail up to the ring
    assert list(art.step_line.get_xdata()) == [6, 6]  # at the dots: k = 6, the loss after update 6
    assert dtsgd_viz.findings(recs, ROTATED, upto=6).window[1] == 6  # the headline's window ends there
    assert art.title.get_text().startswith("Update 6:")
    assert w.step_label.value == "update 6 of 12"
    assert w.frame().positions["nesterov"] == tuple(recs["nesterov"].path("w")[6].astype(float))
    # nothing re-plotted on the main panels: same artists, same static data, background once
    assert (dict(art.positions), dict(art.arrows), dict(art.loss_markers), art.step_line) == moving
    assert [(len(ax.lines), len(ax.collections), len(ax.texts)) for ax in main_axes] == counts
    assert w.static_state().same_as(static) and static.backgrounds == 1
    assert w.image.value != png and w.image.value == w.render()
    assert capsys.readouterr() == ("", "")


@pytest.mark.slow
def test_blitted_frames_match_a_full_draw(recs):
    w = PathExplorer(recs, ROTATED, step=3, zoom=True)
    first = w.pixels()
    w.slider.value = 10
    blit, full = w.pixels(), w.full_pixels()
    differ = np.abs(blit.astype(int) - full.astype(int)).max(axis=-1) > 8
    assert differ.mean() < 1e-4  # the same picture up to a few antialiased pixels
    assert (np.abs(first.astype(int) - blit.astype(int)).max(axis=-1) > 8).sum() > 50  # it moved
    w.slider.value = 3
    np.testing.assert_array_equal(w.pixels(), first)  # no stale pixels left behind


@pytest.mark.slow
def test_play_is_linked_and_steps_through_long_runs(recs, explorer, bare):
    w = PathExplorer(recs, ROTATED, arrows=False)
    assert not w.view.artists.arrows and (w.play.min, w.play.max) == (1, STEPS)
    assert not w.view.artists.zoom_axes
    assert explorer.view.artists.zoom_axes.keys() == recs.keys()  # PathExplorer(recs, ROTATED): zoom by default
    assert not bare.view.artists.zoom_axes  # PathExplorer(recs, ROTATED, step=2, zoom=False)
    w.play.value = 4
    assert w.slider.value == 4 and w.state.update == 4
    np.testing.assert_array_equal(w.view.artists.positions["plain"].get_xydata(), recs["plain"].path("w")[4:5])
    assert w.image in w.widget.children
    bundle = w._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == w.widget.model_id
    assert PathExplorer(recs, ROTATED, step=-1, arrows=False).state.update == STEPS
    with pytest.raises(ValueError, match=r"step=13 is out of range\. Allowed: a recorded update \(updates 1\.\.12\)"):
        PathExplorer(recs, ROTATED, step=STEPS + 1)
    with pytest.raises(ValueError, match="step=0 is the start"):
        PathExplorer(recs, ROTATED, step=0)
    with pytest.raises(ValueError, match="non-empty dict"):
        PathExplorer({}, ROTATED)


@pytest.mark.slow
def test_slider_counts_updates_of_a_thinned_recording():
    rec = dtsgd_viz.run(ROTATED, {"nesterov": CONFIGS["nesterov"]}, STEPS, every=3)["nesterov"]
    w = PathExplorer({"nesterov": rec}, ROTATED, arrows=False)
    assert (w.slider.min, w.slider.max, w.slider.step) == (3, 12, 3)
    w.slider.value = 7  # between recorded updates: the nearest one is shown
    assert w.slider.value == 6 and w.state.update == 6
    np.testing.assert_array_equal(
        w.view.artists.positions["nesterov"].get_xydata()[0], rec.path("w")[2]
    )  # the ring after update 6 (the recording's points: start, after 3, after 6, ...)
    assert w.view.artists.title.get_text().startswith("Update 6:")


# ---- CompareWidget: pure ---------------------------------------------------------------


def test_compare_params_and_configs():
    p = CompareParams(0.05, 0.9, (-3.0, 1.5), 20)
    p2 = compare_params(p, {"name": "momentum", "new": 0.5})
    assert (p2.momentum, p2.learning_rate, p.momentum) == (0.5, 0.05, 0.9)
    assert compare_params(p, {"name": "start_1", "new": -2}).start == (-3.0, -2.0)
    assert compare_params(p, {"name": "steps", "new": 7}).steps == 7
    assert compare_configs(p2) == {
        "plain": dict(learning_rate=0.05, momentum=0.0, nesterov=False),
        "momentum": dict(learning_rate=0.05, momentum=0.5, nesterov=False),
        "nesterov": dict(learning_rate=0.05, momentum=0.5, nesterov=True),
    }
    with pytest.raises(ValueError, match=r"momentum must be in \[0, 1\). Received: 1.0"):
        compare_params(p, {"name": "momentum", "new": 1.0})
    with pytest.raises(ValueError, match="learning_rate must be a finite number > 0"):
        compare_params(p, {"name": "learning_rate", "new": 0.0})
    with pytest.raises(ValueError, match="steps must be an integer >= 1"):
        compare_params(p, {"name": "steps", "new": 0})
    with pytest.raises(ValueError, match=r"Unknown change 'start_2'.*start_1"):
        compare_params(p, {"name": "start_2", "new": 0.0})


def test_run_queue_coalesces_to_the_latest():
    q = RunQueue()
    q, now = request(q, "a")
    assert now == "a" and q == RunQueue(True, None)
    for params in ("b", "c", "d"):  # arrive while "a" runs: only the latest is kept
        q, now = request(q, params)
        assert now is None
    assert q == RunQueue(True, "d")
    q, nxt = finished(q)
    assert nxt == "d" and q == RunQueue(True, None)
    q, nxt = finished(q)
    assert nxt is None and q == RunQueue(False, None)
    assert request(q, "e") == (RunQueue(True, None), "e")


@pytest.mark.slow
def test_steps_to_tolerance_and_table_rows(recs):
    losses = np.array([[5.0, 5.0], [1e-4, 2.0], [2e-3, 1e-4], [1e-4, np.nan]])
    steps = steps_to_tolerance(losses, 0.0, 1e-3)
    assert steps.tolist() == [3, -1] and diverged(losses, 0.0, steps).tolist() == [False, True]
    rows = table_rows(recs, ROTATED, tol=0.5)
    for row, (key, rec) in zip(rows, recs.items()):
        losses = [float(ROTATED.value_np(p)) for p in rec.path("w").astype(np.float64)]
        assert row.name == key and row.steps_to_tol == first_stay(losses, 0.5)
        assert row.final_loss == losses[-1]
    assert rows[0].steps_to_tol is not None


# ---- CompareWidget: the widget -----------------------------------------------------------


@pytest.fixture(scope="module")
def compare():
    return CompareWidget(ROTATED, learning_rate=0.05, momentum=0.9, steps=STEPS, tol=0.05)


def drawn_paths(widget):
    return {k: np.asarray(line.get_xydata()) for k, line in widget.view.artists.paths.items()}


def check_table(widget):
    for row, (key, rec) in zip(widget.rows, widget.recordings.items()):
        losses = [float(ROTATED.value_np(p)) for p in rec.path("w").astype(np.float64)]
        k = first_stay(losses, widget.tol)
        assert (row.name, row.steps_to_tol, row.final_loss) == (key, k, losses[-1])
        assert f">{losses[-1]:.2e}<" in widget.table.value  # one format, 3 significant digits
        assert row.diverged == (k is None and not losses[-1] <= losses[0])
        assert (
            f">{k}<" if k is not None else ">diverged<" if row.diverged else f">&gt; {len(losses) - 1}<"
        ) in widget.table.value


def headline_text(fig):
    """The figure's headline (its finding) and the settings line under it."""
    from dtsgd_viz.views.core.figure import headline_texts

    return "\n".join(t for t in headline_texts(fig) if t)


@pytest.mark.slow
def test_compare_widget_draws_the_real_runs(compare):
    w = compare
    assert w.error is None and len(w.runs) >= 1
    assert [c.continuous_update for c in (w.learning_rate, w.momentum, w.steps, *w.start)] == [False] * 5
    for key, path in drawn_paths(w).items():
        np.testing.assert_array_equal(path, w.recordings[key].path("w").astype(np.float64))
    check_table(w)
    assert "μ 0.90" in headline_text(w.figure) and "drag the start point" in headline_text(w.figure)
    assert f"{STEPS} updates" in headline_text(w.figure) and w.steps.description == "updates"
    assert w.view.artists.ax_loss.get_lines()[-1].get_gid() == "tolerance"
    assert (w.view.artists.ax_loss.get_xlabel(), w.view.artists.ax_loss.get_ylabel()) == (
        "updates made (k)",
        "loss after k updates",
    )


@pytest.mark.slow
def test_table_has_fixed_columns_and_headers_of_whole_lines(compare):
    import re

    table = compare.table.value
    assert "table-layout:fixed" in table
    widths = re.findall(r"<col style='width:([\d.]+)em'>", table)
    assert len(widths) == 4 and sum(map(float, widths)) <= 27.5  # beside the figure on the app's page
    heads = re.findall(r"<th style='([^']*)'>(.*?)</th>", table)
    n = compare.params.steps
    a = n - max(1, min(10, n // 5)) + 1  # the mean the headline compares: over the last fifth, 1 to 10
    # the mean's header on two lines (at a <br>, never wrapped inside a line): it fits its column
    assert [h for _, h in heads] == ["optimizer", "to tol", f"k = {n}", f"mean over<br>k = {a}–{n}"]
    assert all("white-space:nowrap" in css and "padding" in css for css, _ in heads)
    caption = re.search(r"<caption[^>]*>([^<]*)</caption>", table)[1]
    assert "loss after k updates" in caption and f"{compare.tol:g}" in caption  # said once, for every column
    # each name cell keeps its swatch and name on one line, the name as the figure writes it
    names = re.findall(r"<tr><td style='([^']*)'><span[^>]*></span>([^<]*)</td>", table)
    assert [n for _, n in names] == [rule_name(k) for k in compare.recordings]
    assert "Nesterov" in [n for _, n in names]
    assert all("white-space:nowrap" in css for css in re.findall(r"<td style='([^']*)'>", table))


def test_compare_paths_have_no_per_update_markers(compare):
    paths = compare.view.artists.paths
    assert set(paths) == set(compare.recordings)
    assert all(line.get_marker() in ("", "None", None) for line in paths.values())
    for key, line in paths.items():  # still every update's point, only undotted
        np.testing.assert_array_equal(line.get_xydata(), compare.recordings[key].path("w").astype(np.float64))


@pytest.mark.slow
def test_momentum_change_reruns_the_real_optimizer(compare):
    w = compare
    runs = len(w.runs)
    w.momentum.value = 0.5
    w.wait()
    assert w.error is None and len(w.runs) == runs + 1 and w.shown.momentum == 0.5
    fresh = dtsgd_viz.run(ROTATED, compare_configs(w.shown), STEPS)
    for key, path in drawn_paths(w).items():
        np.testing.assert_array_equal(path, fresh[key].path("w").astype(np.float64))
        config = compare_configs(w.shown)[key]
        np.testing.assert_allclose(
            path, reference_path(0.05, config["momentum"], config["nesterov"]), rtol=1e-5, atol=1e-6
        )
    check_table(w)
    assert "μ 0.50" in headline_text(w.figure)


@pytest.mark.slow
def test_changes_during_a_run_are_coalesced(compare):
    w = compare
    w.learning_rate.value, w.momentum.value, w.start[0].value = 0.05, 0.5, -3.0  # wherever tests before left it
    w.wait()
    runs = len(w.runs)
    w.learning_rate.value = 0.02  # starts a run in the background
    w.momentum.value = 0.6  # arrive while it runs ...
    w.start[0].value = -2.0
    assert w.queue.pending == CompareParams(0.02, 0.6, (-2.0, 1.5), STEPS)  # ... only the latest kept
    w.wait()
    assert w.error is None and not w.queue.running
    assert w.runs[runs:] == [CompareParams(0.02, 0.5, (-3.0, 1.5), STEPS), CompareParams(0.02, 0.6, (-2.0, 1.5), STEPS)]
    start = np.array([-2.0, 1.5], np.float32)
    for key, path in drawn_paths(w).items():
        config = compare_configs(w.shown)[key]
        np.testing.assert_allclose(
            path, reference_path(0.02, config["momentum"], config["nesterov"], start=start), rtol=1e-5, atol=1e-6
        )
    check_table(w)


# ---- PhaseDiagram: pure ------------------------------------------------------------------


def test_phase_grid_cells_are_reference_runs():
    lrs, mus = np.array([0.02, 0.1, 0.25]), np.array([0.0, 0.5, 0.9])
    for nesterov in (False, True):
        grid = phase_grid(ROTATED, lrs, mus, 30, 1e-2, nesterov)
        assert grid.steps.shape == (3, 3)
        for i, mu in enumerate(mus):
            for j, lr in enumerate(lrs):
                path = reference.run(ROTATED.grad_np, START, 30, lr, mu, nesterov)
                with np.errstate(over="ignore", invalid="ignore"):
                    losses = ROTATED.value_np(path)
                np.testing.assert_array_equal(grid.losses[:, i, j], losses)
                k = first_stay(losses, 1e-2)
                assert grid.steps[i, j] == (-1 if k is None else k)


def test_iteration_matrix_is_the_reference_rule_linearised():
    for nesterov in (False, True):
        for lr, mu, h in ((0.1, 0.9, 10.0), (0.03, 0.0, 1.0), (0.5, 0.5, 2.0)):
            cols = []
            for p, v in ((1.0, 0.0), (0.0, 1.0)):  # images of the basis vectors
                p_new, v_new = reference.sgd_step(np.float64(p), h * p, np.float64(v), lr, mu, nesterov)
                cols.append([p_new, v_new])
            np.testing.assert_allclose(iteration_matrix(lr, mu, h, nesterov), np.array(cols).T, rtol=1e-12, atol=1e-12)


def test_analytic_boundary_is_where_the_spectral_radius_reaches_one():
    h = 10.0
    mus = np.linspace(0.0, 0.98, 25)
    for nesterov in (False, True):
        bound = convergence_boundary(mus, h, nesterov)
        expected = 2 * (1 + mus) / h / ((1 + 2 * mus) if nesterov else 1)
        np.testing.assert_allclose(bound, expected, rtol=1e-15)
        for mu, b in zip(mus, bound):
            for lr in b * np.array([0.02, 0.3, 0.7, 0.97, 0.999]):
                assert spectral_radius(lr, mu, h, nesterov) < 1
            for lr in b * np.array([1.001, 1.03, 1.5, 3.0]):
                assert spectral_radius(lr, mu, h, nesterov) > 1
            assert spectral_radius(b, mu, h, nesterov) == pytest.approx(1.0, abs=1e-6)


def test_cells_inside_the_boundary_converge_and_outside_diverge():
    lrs, mus = np.geomspace(0.05, 0.6, 12), np.linspace(0.0, 0.9, 7)
    for nesterov in (False, True):
        grid = phase_grid(ROTATED, lrs, mus, 120, 1e-3, nesterov)
        bound = convergence_boundary(mus, 10.0, nesterov)[:, None]
        rho = np.array([[max(spectral_radius(lr, mu, h, nesterov) for h in (1.0, 10.0)) for lr in lrs] for mu in mus])
        fast, outside = rho <= 0.85, lrs[None, :] >= 1.05 * bound
        assert fast.sum() >= 10 and outside.sum() >= 10
        assert np.all(grid.steps[fast] >= 0) and not grid.diverged[fast].any()
        assert np.all(grid.diverged[outside]) and np.all(grid.steps[outside] == -1)


# ---- PhaseDiagram: the widget -------------------------------------------------------------

PD_LRS, PD_MUS, PD_STEPS, PD_TOL = np.geomspace(0.02, 0.5, 8), np.linspace(0.0, 0.9, 6), 40, 1e-2


@pytest.fixture(scope="module")
def phase():
    return PhaseDiagram(ROTATED, learning_rates=PD_LRS, momenta=PD_MUS, steps=PD_STEPS, tol=PD_TOL)


@pytest.mark.slow
def test_phase_diagram_shows_the_grid_and_the_boundary(phase):
    """The widget's map is the ratio map (plot_phase's two rule maps are not repeated):
    log2 of Nesterov's updates over momentum's from two independent numpy grids,
    coloured only where both converge, with each rule's stability boundary."""
    pd = phase
    fig = pd.figure
    ax = pd.map_axes["ratio"]
    assert list(pd.map_axes) == ["ratio"]
    m, n = (phase_grid(ROTATED, PD_LRS, PD_MUS, PD_STEPS, PD_TOL, nesterov) for nesterov in (False, True))
    both = (m.steps >= 0) & (n.steps >= 0)
    image = at_runs(by_gid(ax, "phase:")["ratio"], PD_LRS, PD_MUS)  # each run, at its centre
    np.testing.assert_array_equal(~np.ma.getmaskarray(image), both)
    np.testing.assert_allclose(image.data[both], np.log2(np.maximum(n.steps, 1) / np.maximum(m.steps, 1))[both])
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        lr_b, mu_b = by_gid(ax, "ratio-boundary:")[key].get_data()
        np.testing.assert_allclose(lr_b, 2 * (1 + mu_b) / 10.0 / ((1 + 2 * mu_b) if nesterov else 1), rtol=1e-14)
        assert mu_b.min() == PD_MUS[0] and mu_b.max() == PD_MUS[-1]
    assert ax.get_xscale() == "log" and ax.get_xlabel().startswith("learning rate")
    assert REFERENCE_NOTE in headline_text(fig).replace("\n", " ")
    np.testing.assert_allclose(cell_edges(PD_LRS, log=True)[1:-1], np.sqrt(PD_LRS[1:] * PD_LRS[:-1]))


def test_picking_a_cell_moves_the_marker_only(phase):
    pd = phase
    renders, recordings = pd.renders, pd.recordings
    pd.lr_pick.value = 2
    assert pd.pick.lr_index == 2 and pd.renders == renders + 1 and pd.recordings is recordings
    edges = cell_edges(PD_LRS, log=True)
    for rect in pd.pick_rects:
        assert rect.get_x() == edges[2] and rect.get_width() == edges[3] - edges[2]
    with pytest.raises(ValueError, match=r"lr_index must be an int in 0\.\.7"):
        phase_pick(pd.pick, {"name": "lr_index", "new": 8})


@pytest.mark.slow
def test_selecting_a_cell_runs_the_real_optimizer_there(phase):
    pd = phase
    pd.select(4, 3)
    lr, mu = PD_LRS[4], PD_MUS[3]
    assert pd.error is None and (pd.lr_pick.value, pd.mu_pick.value) == (4, 3)
    ax_p = pd.figure.axes[2]
    paths = by_gid(ax_p, "path:")
    assert sorted(paths) == ["momentum", "nesterov"]
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        rec = pd.recordings[key]
        assert (rec.hyperparameters.momentum, rec.hyperparameters.nesterov) == (pytest.approx(mu), nesterov)
        np.testing.assert_allclose(rec.hyperparameters.learning_rate, lr, rtol=1e-7)
        drawn = np.asarray(paths[key].get_xydata())
        np.testing.assert_array_equal(drawn, rec.path("w").astype(np.float64))
        np.testing.assert_allclose(drawn, reference_path(lr, mu, nesterov, PD_STEPS), rtol=1e-5, atol=1e-6)
        losses = [float(ROTATED.value_np(p)) for p in rec.path("w").astype(np.float64)]
        real = first_stay(losses, PD_TOL)
        assert abs((-1 if real is None else real) - pd.grids[key].steps[3, 4]) <= 1
    assert f"lr = {lr:.3g}" in ax_p.get_title()
    assert "real DTensor SGD" in pd.status.value and "grid:" in pd.status.value


@pytest.mark.slow
def test_views_stay_free_of_ipywidgets():
    code = (
        "import sys, dtsgd_viz.views.paths.plot; "
        "print(sorted(m for m in ('ipywidgets', 'IPython', 'tensorflow') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


@pytest.mark.slow
def test_path_explorer_and_plot_paths_agree_without_the_update_before():
    # both draw the update without arrows and say why (every=3: the update before is not recorded)
    from helpers.synthetic_paths import note_text, synthetic

    every3 = {"m": synthetic(ROTATED, 12, 0.05, 0.9, every=3)}
    w = PathExplorer(every3, ROTATED, step=3)
    fig = dtsgd_viz.plot_paths(every3, ROTATED, step=3)
    assert not w.view.artists.arrows and not [
        a for ax in fig.axes for a in ax.collections if (a.get_gid() or "").startswith("arrow:")
    ]
    assert w.view.arrows is False
    assert (
        w.view.artists.note.get_text()
        == note_text(fig)
        == (
            "no update arrows: update 2, just before update 3, is not recorded (every 3); record every "
            "update to see them"
        )
    )
    assert PathExplorer(every3, ROTATED, arrows=False).view.artists.note is None


@pytest.mark.parametrize("step", [2.0, "3", True])
@pytest.mark.slow
def test_path_explorer_refuses_steps_that_are_not_ints(recs, step):
    with pytest.raises(
        ValueError,
        match=r"step must be an int: .*Received: step=.* \(\w+\)\. Allowed: a recorded "
        r"update \(updates 1\.\.12\)",
    ):
        PathExplorer(recs, ROTATED, step=step)


@pytest.mark.slow
def test_path_explorer_says_when_it_shows_only_the_updates_all_runs_share(recs, explorer):
    mixed = dict(recs)
    mixed["short"] = dtsgd_viz.run(ROTATED, {"s": dict(learning_rate=0.05)}, steps=5)["s"]
    pe = PathExplorer(mixed, ROTATED)
    longer = [k for k in recs]
    assert pe.slider.max == 5
    names = ", ".join(longer[:-1]) + " and " + longer[-1]
    want = f"showing the 5 updates all runs share; {names} have {STEPS}"
    assert want in pe.step_label.value and pe.step_label.value.startswith("update 1 of 5")
    pe.slider.value = 3
    assert pe.step_label.value.startswith("update 3 of 5") and want in pe.step_label.value
    assert "share" not in explorer.step_label.value  # PathExplorer(recs, ROTATED), same lengths: no note


@pytest.mark.slow
def test_compare_widget_draws_diverged_runs_to_the_edge_and_marks_the_loss():
    cw = CompareWidget(ROTATED, learning_rate=0.5, momentum=0.9, steps=STEPS, background=False)
    assert cw.error is None and all(r.diverged for r in cw.rows)
    ax_path, ax_loss = cw.view.artists.ax_path, cw.view.artists.ax_loss
    box = np.array(ROTATED.view_box)
    for key, line in cw.view.artists.paths.items():
        path = cw.recordings[key].path("w").astype(np.float64)
        with np.errstate(invalid="ignore"):
            outside = ~np.all(np.isfinite(path) & (path >= box[:, 0]) & (path <= box[:, 1]), axis=1)
        k = int(np.argmax(outside))
        assert k > 0
        np.testing.assert_array_equal(line.get_xydata(), path[: k + 1])
        note = [t.get_text() for t in ax_path.texts if t.get_gid() == "diverged-note"]
        assert len(note) == 1 and f"{key}: diverged at update {k}" in note[0]
        x = by_gid(ax_loss, "loss-diverged:")[key]
        loss = np.asarray(cw.recordings[key].loss, np.float64)
        last = np.flatnonzero(np.isfinite(loss))[-1]
        # the mark sits on the drawn curve's last finite point (the loss after that many updates)
        drawn = by_gid(ax_loss, "loss:")[key].get_xydata()
        drawn = drawn[np.isfinite(drawn[:, 1])]
        assert drawn[-1, 0] == cw.recordings[key].steps[last]
        np.testing.assert_array_equal(x.get_xydata(), drawn[-1:])
    assert (ax_path.get_xlim(), ax_path.get_ylim()) == ROTATED.view_box


@pytest.mark.slow
def test_compare_widget_with_one_update_draws_loss_markers():
    cw = CompareWidget(ROTATED, learning_rate=0.05, momentum=0.9, steps=1, background=False)
    lines = by_gid(cw.view.artists.ax_loss, "loss:")
    assert set(lines) == {"plain", "momentum", "nesterov"}
    # the loss after 0 and after 1 update: a segment, no longer a lone point needing a marker
    assert all(len(ln.get_xydata()) == 2 for ln in lines.values())


# ---- one scale and one look per rule (issue 19) -----------------------------------------


@pytest.mark.slow
def test_widgets_fit_a_notebook_column_and_draw_each_rule_in_its_one_look(recs, compare, phase, explorer):
    from views.test_export import run_lines, smallest_text_px  # tests/ is on the path

    from dtsgd_viz.views.core import style
    from dtsgd_viz.widgets import RateExplorer
    from dtsgd_viz.widgets._pointer import png_size

    phase.select(4, 3)
    sharded = dtsgd_viz.surfaces.ShardedQuadratic()
    rate_rec = dtsgd_viz.run(sharded, {"nesterov": dict(learning_rate=1.5, momentum=0.6, nesterov=True)}, steps=10)[
        "nesterov"
    ]
    widgets_ = {
        "compare": compare,
        "phase": phase,
        "paths": explorer,  # PathExplorer(recs, ROTATED, zoom=True)
        "rates": RateExplorer(rate_rec, sharded),
    }
    reference = run_lines(dtsgd_viz.plot_paths(recs, ROTATED, step=3))
    for name, w in widgets_.items():
        assert png_size(w.image.value)[0] <= style.MAX_WIDTH_PX, name  # shown at its pixels
        px, text = smallest_text_px(w.figure)
        assert px >= style.MIN_TEXT_PX, (name, px, text)
        for rule, looks in run_lines(w.figure).items():
            assert looks == reference[rule], (name, rule, looks)
    lines = {
        ln.get_gid()[5:]: ln for ln in compare.view.artists.ax_path.lines if (ln.get_gid() or "").startswith("path:")
    }
    assert lines["nesterov"].get_linewidth() == max(ln.get_linewidth() for ln in lines.values())
    bottom_up = sorted(lines.values(), key=lambda ln: ln.get_zorder())  # the narrower over the wider
    assert [ln.get_linewidth() for ln in bottom_up] == sorted((ln.get_linewidth() for ln in bottom_up), reverse=True)


def test_compare_widget_headline_leaves_room_for_its_settings_line(compare):
    """The finding, then the settings line under it, then the panels' titles: none
    overlaps another (the finding drawn after the paths once lost the settings' room)."""
    from helpers.readable import overlapping

    from dtsgd_viz.views.core.figure import headline_texts

    fig = compare.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    finding, settings = headline_texts(fig)
    assert finding.strip() and "updates" in settings
    sub = next(t for t in [*fig.texts, *fig.artists] if t.get_gid() == "subtitle")
    boxes = [
        fig._suptitle.get_window_extent(renderer),
        sub.get_window_extent(renderer),
        *[ax.title.get_window_extent(renderer) for ax in fig.axes if ax.get_title()],
    ]
    # the suptitle's box holds its blank lines: compare its first line's text only
    title_top = fig._suptitle.get_window_extent(renderer).y1
    assert sub.get_window_extent(renderer).y1 < title_top
    assert not overlapping(boxes[1:], pad=0.0), [b.bounds for b in boxes]
    assert all(b.y1 <= fig.bbox.y1 + 1 for b in boxes)


def test_compare_widget_names_the_runs_and_marks_in_one_legend_under_the_figure(compare):
    """As plot_paths: one legend under the panels names each run in its rule's look, the
    start, the minimum and the tolerance line; no name stands on the paths panel."""
    from matplotlib.colors import to_rgba

    art = compare.view.artists
    assert not [t for t in art.ax_path.texts if t.get_visible() and t.get_text()]
    assert art.ax_path.get_legend() is None and len(compare.figure.legends) == 1
    legend = compare.figure.legends[0]
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == [*(rule_name(k) for k in art.paths), "start", "minimum", "minimum + tol (0.05)"]
    for key, handle in zip(art.paths, legend.legend_handles):
        assert to_rgba(handle.get_color()) == to_rgba(art.paths[key].get_color())
        assert handle.get_linestyle() == art.paths[key].get_linestyle()


@pytest.mark.parametrize("zoom", [True, False])
@pytest.mark.slow
def test_path_explorer_names_the_runs_and_marks_in_one_legend_under_the_figure(recs, zoom):
    """As plot_paths: one legend under the panels names each run in its rule's look, the
    start, the minimum and the ring; no text tag (start, minimum, zoom factor) on the
    paths panel, and the legend inside the figure under every axes."""
    from dtsgd_viz.views.core import style

    pe = PathExplorer(recs, ROTATED, step=4, zoom=zoom)
    ax = pe.view.artists.ax_path
    assert ax.get_legend() is None and len(pe.figure.legends) == 1
    legend = pe.figure.legends[0]
    renderer = pe.figure.canvas.get_renderer()
    spots = {t.get_text(): t.get_window_extent(renderer) for t in legend.get_texts()}
    texts = sorted(spots, key=lambda t: (round(spots[t].x0 / 8), -spots[t].y0))  # read column by column
    # a group to a column: the runs, the paths' marks, the close-ups' own marks where they are drawn, then the
    # pale later updates (each run's rest line under its path) named once and the means' bars
    want = [*(rule_name(k) for k in recs), "start", "minimum", "after the update shown"]
    want += ["before the update: g taken here", "step (the arrows' sum)", "path so far"] if zoom else []
    assert texts == [*want, "later updates", "mean over the shaded k"]
    assert sorted(pe.view.artists.rests) == sorted(recs)
    handles = dict(zip((t.get_text() for t in legend.get_texts()), legend.legend_handles))
    for key in recs:
        look, handle = style.RULE_LOOKS[key], handles[rule_name(key)]
        assert (handle.get_color(), handle.get_linewidth()) == (look.color, look.lw)  # pyright: ignore[reportOptionalMemberAccess, reportAttributeAccessIssue]
    if zoom:  # the step keyed in the runs' colours end to end, as drawn (its first: the first run's), not in grey
        step = handles["step (the arrows' sum)"]
        assert step.get_color() == style.RULE_LOOKS[next(iter(recs))].color  # pyright: ignore[reportOptionalMemberAccess, reportAttributeAccessIssue]
    assert not [t.get_text() for t in ax.texts if t.get_visible() and t.get_text()]
    box = legend.get_window_extent(renderer)
    assert pe.figure.bbox.contains(box.x0, box.y0) and pe.figure.bbox.contains(box.x1, box.y1)
    assert all(box.y1 <= a.get_window_extent(renderer).y0 + 1 for a in pe.figure.axes if a.get_visible())


@pytest.mark.slow
def test_path_explorer_draws_the_terms_in_its_close_ups_not_on_the_paths(recs, explorer, bare):
    """With close-ups the update's arrows are drawn there, not on the paths panel (a
    speck or a tangle at its scale), and its title says so; without close-ups every
    arrow stays on the paths."""
    pe = explorer  # PathExplorer(recs, ROTATED): close-ups; the slider takes it to each update
    art = pe.view.artists
    for update in (2, 6, 12):
        pe.slider.value = update
        assert pe.state.update == update
        assert art.arrows and not any(q.get_visible() for q in art.arrows.values())
        assert art.title.get_text() == f"Update {update}: its terms up close below"
        assert all(zoom_chain(pe, k) for k in recs)  # each close-up draws the terms
    # PathExplorer(recs, ROTATED, step=2, zoom=False)
    assert bare.state.update == 2 and all(q.get_visible() for q in bare.view.artists.arrows.values())
