"""The browser-drawn PhaseDiagram on a saved page, opened from a file in headless Chromium
with no kernel: a clicked cell and a dragged start run tf-keras' rule in the browser, and
its paths equal numpy's ``theory.reference`` to 1e-12; what the SVG draws is those paths;
hover gives the cell's steps from the map; the real optimizer's dots are the recording's."""

import json
import re

import numpy as np
import pytest
from helpers.browser import browser, browser_test  # noqa: F401
from helpers.web_page import open_saved

from dtsgd_viz import surfaces
from dtsgd_viz.theory import reference
from dtsgd_viz.theory.convergence import diverged, steps_to_tolerance
from dtsgd_viz.web import encode
from dtsgd_viz.web.phase import PhaseDiagram

pytestmark = pytest.mark.slow

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
LRS = np.geomspace(1e-3, 0.2, 16)
MUS = np.linspace(0.0, 0.95, 12)
STEPS = 120


@pytest.fixture(scope="module")
def widget():
    return PhaseDiagram(SURFACE, learning_rates=LRS, momenta=MUS, steps=STEPS, pick=(12, 9))


@pytest.fixture(scope="module")
def page(widget, browser, tmp_path_factory):  # noqa: F811
    page = open_saved(browser, widget, tmp_path_factory.mktemp("phase"), 1000, 640)
    yield page
    page.close()


def _numpy_paths(lr, mu, start):
    grad = lambda p: p @ SURFACE.hessian.T  # noqa: E731
    p0 = np.asarray(start, np.float64)
    return {k: reference.run(grad, p0, STEPS, lr, mu, n) for k, n in (("momentum", False), ("nesterov", True))}


def _browser_paths(page):
    got = page.evaluate(
        "() => { const p = document.querySelector('.dtsgd-viz-phase').dtsgdRule.paths();"
        " return Object.fromEntries(Object.entries(p).map(([k, v]) =>"
        " [k, Array.from(v.path, (x) => (isFinite(x) ? x : String(x)))])); }"
    )  # NaN and Infinity as text: JSON has no such numbers
    return {k: np.asarray([float(x) for x in v]).reshape(-1, 2) for k, v in got.items()}


def _check_against_numpy(page, lr, mu, start):
    want = _numpy_paths(lr, mu, start)
    got = _browser_paths(page)
    for rule in want:
        np.testing.assert_allclose(got[rule], want[rule], rtol=1e-12, atol=1e-12, err_msg=rule)
    return want


def _drawn(page, rule):
    g = page.locator("g.dv-paths")
    (x0, x1), (y0, y1) = json.loads(g.get_attribute("data-box"))
    rect = json.loads(g.get_attribute("data-rect"))
    s = rect["width"] / (x1 - x0) if "width" in rect else rect["w"] / (x1 - x0)
    pts = np.array(
        [
            [float(v) for v in p.split(",")]
            for p in page.locator(f"polyline.dv-path-{rule}").get_attribute("points").split()
        ]
    )
    return np.column_stack([x0 + (pts[:, 0] - rect["x"]) / s, y1 - (pts[:, 1] - rect["y"]) / s]), 0.006 / s


def _outcome_text(path):
    losses = SURFACE.value_np(path)
    k = int(steps_to_tolerance(losses, SURFACE.min_value, 1e-3))
    if diverged(losses, SURFACE.min_value, k):
        return "diverges"
    return f"not within tol in {STEPS}" if k < 0 else f"{k} updates"


@browser_test
def test_it_opens_with_no_kernel_on_the_cell_asked(page):
    assert page.locator("div.dtsgd-live-ready").count() == 1 and page.problems == []
    assert page.locator(".dv-cell-title").text_content() == f"lr {LRS[12]:.3g}, μ {MUS[9]:.3g}"
    _check_against_numpy(page, LRS[12], MUS[9], SURFACE.default_start)


@browser_test
def test_the_real_optimizers_dots_are_its_recording(page, widget):
    assert widget.real["pick"] == [12, 9]
    real = {k: encode.decode(v) for k, v in widget.real["paths"].items()}
    numpy = _numpy_paths(LRS[12], MUS[9], SURFACE.default_start)
    for rule, path in real.items():
        # float32 on the mesh against the float64 rule: the same path to float32's precision
        np.testing.assert_allclose(path, numpy[rule], rtol=0, atol=1e-4)
        dots = page.locator(f"g.dv-real-{rule} circle")
        assert dots.count() > 10
        first = dots.first
        g = page.locator("g.dv-paths")
        (x0, _), (_, y1) = json.loads(g.get_attribute("data-box"))
        rect = json.loads(g.get_attribute("data-rect"))
        s = rect["w"] / np.ptp(json.loads(g.get_attribute("data-box"))[0])
        assert float(first.get_attribute("cx")) == pytest.approx(rect["x"] + (path[0, 0] - x0) * s, abs=0.01)
        assert float(first.get_attribute("cy")) == pytest.approx(rect["y"] + (y1 - path[0, 1]) * s, abs=0.01)
    assert page.locator(".dv-real-note").text_content() == "dots: the real DTensor SGD"


@browser_test
def test_a_clicked_cell_runs_the_rule_there(page):
    outcomes = set()
    for j, i in ((3, 2), (14, 10), (15, 11)):  # slow, fast, past a stability boundary
        page.locator(f'rect[data-cell="{j},{i}"]').click()
        assert page.locator(".dv-cell-title").text_content() == f"lr {LRS[j]:.3g}, μ {MUS[i]:.3g}"
        want = _check_against_numpy(page, LRS[j], MUS[i], SURFACE.default_start)
        for rule in want:
            assert page.locator(f".dv-outcome-{rule}").text_content() == _outcome_text(want[rule])
            outcomes.add(_outcome_text(want[rule]).split()[-1])
            drawn, px = _drawn(page, rule)
            (x0, x1), (y0, y1) = SURFACE.view_box
            inside = np.all((want[rule] >= [x0, y0]) & (want[rule] <= [x1, y1]), axis=1)
            # a run that diverges is drawn up to where it leaves the view box
            n = (
                int(np.argmin(inside)) + 1
                if "diverges" in _outcome_text(want[rule]) and not inside.all()
                else len(inside)
            )
            np.testing.assert_allclose(drawn, want[rule][:n], atol=px)
        # no real run on a saved page: no dots for a cell the notebook did not run
        assert page.locator("g.dv-real-momentum circle").count() == 0
    assert {"updates", "diverges"} <= outcomes, outcomes


@browser_test
def test_hover_gives_the_maps_steps(page, widget):
    steps = {k: encode.decode(widget.data["steps"][k]) for k in ("momentum", "nesterov")}
    j, i = 9, 6
    page.locator(f'rect[data-cell="{j},{i}"]').hover()
    text = page.locator(".dv-tip").inner_text()
    for rule, name in (("momentum", "momentum"), ("nesterov", "Nesterov")):
        s = int(steps[rule][i, j])
        assert f"{name}: {s} updates" in text or (s < 0 and f"{name}: " in text), text
    assert re.search(r"(Nesterov|momentum) [\d.]+× faster|a tie", text), text


@browser_test
def test_cells_cut_by_a_boundary_show_the_nearest_run_on_each_side(page, widget):
    """The browser draws ``phase_state``'s cuts over the cells, as ``plot_phase`` does: each in the colour of the
    run it shows, and hovering one gives that run's steps."""
    cuts, colors = widget.data["cuts"], widget.data["colors"]
    drawn = page.locator("rect[data-shows]")
    assert cuts and drawn.count() == len(cuts)
    for q in range(0, len(cuts), max(1, len(cuts) // 6)):
        k = cuts[q][4]
        assert drawn.nth(q).get_attribute("fill") == colors[k]
        assert drawn.nth(q).get_attribute("data-shows") == f"{k % len(LRS)},{k // len(LRS)}"
    steps = {r: encode.decode(widget.data["steps"][r]) for r in ("momentum", "nesterov")}
    widest = max(range(len(cuts)), key=lambda q: cuts[q][1] / cuts[q][0])
    k = cuts[widest][4]
    drawn.nth(widest).hover(force=True)
    text = page.locator(".dv-tip").inner_text()
    for rule, name in (("momentum", "momentum"), ("nesterov", "Nesterov")):  # the shown run's, not its cell's
        s = int(steps[rule][k // len(LRS), k % len(LRS)])
        assert (f"{name}: {s} updates" if s >= 0 else f"{name}: ") in text, text


@browser_test
def test_a_dragged_start_runs_the_rule_from_there(page):
    page.locator('rect[data-cell="12,9"]').click()
    box = page.locator("circle.dv-start").bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 40, cy + 25, steps=5)
    page.mouse.up()
    start = page.evaluate(
        "() => { const c = document.querySelector('circle.dv-start');"
        " return [+c.getAttribute('cx'), +c.getAttribute('cy')]; }"
    )
    g = page.locator("g.dv-paths")
    (x0, x1), (y0, y1) = json.loads(g.get_attribute("data-box"))
    rect = json.loads(g.get_attribute("data-rect"))
    s = rect["w"] / (x1 - x0)
    moved = np.array([x0 + (start[0] - rect["x"]) / s, y1 - (start[1] - rect["y"]) / s])
    assert np.linalg.norm(moved - SURFACE.default_start) > 0.3  # it moved
    got = _browser_paths(page)
    np.testing.assert_allclose(got["momentum"][0], moved, atol=0.01 / s)
    _check_against_numpy(page, LRS[12], MUS[9], got["momentum"][0])
    # the real run was from the notebook's start: its dots are gone from a new start
    assert page.locator("g.dv-real-momentum circle").count() == 0
