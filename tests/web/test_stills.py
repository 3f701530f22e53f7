"""The still pictures of ``web.PhaseDiagram`` and ``web.CompareWidget`` (what a page that
runs no scripts shows): each shows what its widget adds, not a copy of a figure beside it.
The PhaseDiagram's still outlines the picked cell on the ratio map and draws the real
runs' losses there, titled by ``pick_finding()`` (the map's counts, checked against
``phase_grid``); the CompareWidget's is the table of its real runs, whose numbers are
``findings``' (checked against numpy on the recorded paths). Both are real DTensor SGD
runs on the 8-device mesh."""

import re

import numpy as np
import pytest
from matplotlib.table import Table

from dtsgd_viz import surfaces
from dtsgd_viz.theory.convergence import phase_grid
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.phase.plot import cell_edges
from dtsgd_viz.views.text.clashes import clashes
from dtsgd_viz.web.compare import CompareWidget
from dtsgd_viz.web.phase import PhaseDiagram

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's
LRS, MUS, STEPS = np.geomspace(0.01, 0.1, 6), np.linspace(0.0, 0.9, 4), 40


@pytest.fixture(scope="module")
def phase():
    return PhaseDiagram(SURFACE, learning_rates=LRS, momenta=MUS, steps=STEPS, pick=(4, 2))


@pytest.fixture(scope="module")
def phase_still(phase):
    fig = phase.still_figure()
    fig.canvas.draw()
    return fig


@pytest.mark.slow
def test_the_phase_still_titles_the_picked_cell_with_the_maps_counts(phase, phase_still):
    title, _ = headline_texts(phase_still)
    assert title == phase.pick_finding()
    m, n = (phase_grid(SURFACE, LRS, MUS, STEPS, 1e-3, nz, SURFACE.default_start).steps for nz in (False, True))
    want = {"momentum": int(m[2, 4]), "nesterov": int(n[2, 4])}
    assert min(want.values()) >= 0
    said = {k.lower(): int(v) for k, v in re.findall(r"(Nesterov|momentum)(?: reaches tol)? in (\d+)", title)}
    assert said == want


@pytest.mark.slow
def test_the_phase_still_outlines_the_picked_cell_and_draws_its_real_runs(phase, phase_still):
    ratio_ax, _, loss_ax = phase_still.axes[:3]
    (outline,) = [p for p in ratio_ax.patches if p.get_gid() == "pick:ratio"]
    lr_e, mu_e = cell_edges(LRS, log=True), cell_edges(MUS, log=False)
    x0, y0 = outline.get_xy()
    assert (x0, y0) == pytest.approx((lr_e[4], mu_e[2]))
    assert outline.get_width() == pytest.approx(lr_e[5] - lr_e[4]) and outline.get_height() == pytest.approx(
        mu_e[3] - mu_e[2]
    )
    assert phase.recordings is not None
    for key, rec in phase.recordings.items():
        (line,) = [ln for ln in loss_ax.lines if ln.get_gid() == f"cell-loss:{key}"]
        path = np.asarray(rec.path("w"), np.float64).reshape(-1, 2)
        gap = SURFACE.value_np(path) - SURFACE.min_value
        y = np.asarray(line.get_ydata(), np.float64)
        np.testing.assert_allclose(y[np.isfinite(y)], gap[: len(y)][np.isfinite(y)], rtol=1e-5)
    assert {ax.get_label() or str(i): clashes(ax) for i, ax in enumerate(phase_still.axes)} == {
        ax.get_label() or str(i): [] for i, ax in enumerate(phase_still.axes)
    }


@pytest.fixture(scope="module")
def compare():
    return CompareWidget(SURFACE, learning_rate=0.05, momentum=0.9, steps=20)


@pytest.mark.slow
def test_the_compare_still_is_the_table_of_the_real_runs(compare):
    from dtsgd_viz.views.paths.findings import findings

    fig = compare.still_figure()
    assert fig is not None and compare.recordings is not None
    fig.canvas.draw()
    (table,) = fig.axes[0].findobj(Table)
    cells = table.get_celld()
    rows = {cells[r, 0].get_text().get_text(): [cells[r, c].get_text().get_text() for c in (1, 2)] for r in (1, 2, 3)}
    found = findings(compare.recordings, SURFACE)
    a, b = found.window
    for key, rec in compare.recordings.items():
        loss = SURFACE.value_np(np.asarray(rec.path("w"), np.float64).reshape(-1, 2))  # after k = 0..20 updates
        name = "Nesterov" if key == "nesterov" else key
        assert float(rows[name][0]) == pytest.approx(loss[-1], rel=6e-3)
        assert float(rows[name][1]) == pytest.approx(np.mean(loss[a : b + 1]), rel=6e-3)
    assert cells[0, 1].get_text().get_text() == "loss after 20 updates"
    # the mean's column in the headline's words: "... mean loss over k = a–b: ..."
    assert cells[0, 2].get_text().get_text() == f"mean loss over k\u00a0=\u00a0{a}–{b}"
    assert cells[0, 2].get_text().get_text() in found.headline()
    title, settings = headline_texts(fig)
    assert title == found.headline() and "lr 0.05 · μ 0.9" in settings
