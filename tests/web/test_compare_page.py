"""The browser-drawn CompareWidget on a saved page, opened from a file in headless Chromium
with no kernel: each slider and a dragged start run tf-keras' rule in the browser, and its
three paths equal numpy's ``theory.reference`` to 1e-12; what the SVG draws is those
paths; the headline is ``dtsgd_viz.findings``' of them; the real optimizer's dots show
only while the controls show the settings it ran with."""

import json
import types

import numpy as np
import pytest
from helpers.browser import browser, browser_test  # noqa: F401
from helpers.web_page import open_saved

from dtsgd_viz import surfaces
from dtsgd_viz.theory import reference
from dtsgd_viz.views.paths import geometry as geo
from dtsgd_viz.views.paths.findings import findings_of
from dtsgd_viz.web import encode
from dtsgd_viz.web.compare import CompareWidget

pytestmark = pytest.mark.slow

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's
LR, MU, STEPS = 0.05, 0.9, 60
RULES = {"plain": (False, False), "momentum": (True, False), "nesterov": (True, True)}  # (momentum?, nesterov)


@pytest.fixture(scope="module")
def widget():
    return CompareWidget(SURFACE, learning_rate=LR, momentum=MU, steps=STEPS)


@pytest.fixture(scope="module")
def page(widget, browser, tmp_path_factory):  # noqa: F811
    page = open_saved(browser, widget, tmp_path_factory.mktemp("compare"), 1000, 700)
    yield page
    page.close()


def _numpy_paths(lr, mu, steps, start):
    grad = lambda p: p @ SURFACE.hessian.T  # noqa: E731
    p0 = np.asarray(start, np.float64)
    return {k: reference.run(grad, p0, steps, lr, mu if m else 0.0, n) for k, (m, n) in RULES.items()}


def _browser_paths(page):
    got = page.evaluate(
        "() => { const p = document.querySelector('.dtsgd-viz-compare').dtsgdRule.paths();"
        " return Object.fromEntries(Object.entries(p).map(([k, v]) =>"
        " [k, Array.from(v.path, (x) => (isFinite(x) ? x : String(x)))])); }"
    )  # NaN and Infinity as text: JSON has no such numbers
    return {k: np.asarray([float(x) for x in v]).reshape(-1, 2) for k, v in got.items()}


def _slide(page, key, value):
    """Move a control as the reader's release does: its value, an input, a change."""
    page.evaluate(
        "([key, v]) => { const s = document.querySelector('.dtsgd-viz-compare input.dv-' + key);"
        " s.value = String(v); s.dispatchEvent(new Event('input')); s.dispatchEvent(new Event('change')); }",
        [key, value],
    )


def _panel(page):
    g = page.locator("g.dv-paths")
    (x0, x1), (y0, y1) = json.loads(g.get_attribute("data-box"))
    rect = json.loads(g.get_attribute("data-rect"))
    return x0, y1, rect, rect["w"] / (x1 - x0)


def _drawn(page, rule):
    x0, y1, rect, s = _panel(page)
    pts = np.array(
        [
            [float(v) for v in p.split(",")]
            for p in page.locator(f"polyline.dv-path-{rule}").get_attribute("points").split()
        ]
    )
    return np.column_stack([x0 + (pts[:, 0] - rect["x"]) / s, y1 - (pts[:, 1] - rect["y"]) / s]), 0.006 / s


def _python_findings(paths):
    """``findings_of`` the paths as ``dtsgd_viz.findings`` reads recordings on the surface:
    the loss after 0..N updates at the path points, the runs that left the view."""
    n = len(next(iter(paths.values()))) - 1
    recordings = {k: types.SimpleNamespace(steps=np.arange(1, n + 1)) for k in paths}
    with np.errstate(over="ignore", invalid="ignore"):
        losses = {k: (np.arange(n + 1), SURFACE.value_np(p), True) for k, p in paths.items()}
    scene = types.SimpleNamespace(
        recordings=recordings,
        name=None,
        losses=losses,
        diverged=geo.diverged_runs(paths, SURFACE.view_box),
        surface=SURFACE,
    )
    return findings_of(scene, paths=False)  # type: ignore[arg-type]


def _check(page, lr, mu, steps, start):
    """The browser's paths are numpy's, the SVG draws them, the headline and the table
    are ``findings``' numbers of them."""
    want = _numpy_paths(lr, mu, steps, start)
    got = _browser_paths(page)
    for rule in want:
        np.testing.assert_allclose(got[rule], want[rule], rtol=1e-12, atol=1e-12, err_msg=rule)
    found = _python_findings(want)
    for rule in want:
        drawn, px = _drawn(page, rule)
        at = found.diverged.get(rule)
        n = geo.drawn_length(len(want[rule]), at)
        np.testing.assert_allclose(drawn, want[rule][:n], atol=px, err_msg=rule)
    head = page.locator(".dv-headline")
    assert json.loads(head.get_attribute("data-window")) == list(found.window)
    means = json.loads(head.get_attribute("data-means"))
    a, b = found.window
    for rule, path in want.items():
        tail = SURFACE.value_np(path)[a : b + 1]
        if np.all(np.isfinite(tail)):
            assert means[rule] == pytest.approx(float(np.mean(tail)), rel=1e-12)
            final = float(page.locator(f".dv-final-{rule}").get_attribute("data-value"))
            assert final == pytest.approx(float(SURFACE.value_np(path[-1])), rel=1e-12)
        else:
            assert means[rule] is None
    if not found.level:  # the level headline names where the paths part, from recordings
        assert head.text_content() == found.headline()
    return want, found


def _dots(page):
    return page.locator("g.dv-real-momentum circle").count()


@browser_test
def test_it_opens_with_no_kernel_on_the_settings_and_the_real_runs_dots(page, widget):
    assert page.locator("div.dtsgd-live-ready").count() == 1 and page.problems == []
    assert page.locator("input.dv-learning-rate ~ .dv-learning-rate-value").text_content() == "0.05"
    assert page.locator(".dv-momentum-value").text_content() == "0.90"
    assert page.locator(".dv-steps-value").text_content() == "60"
    _, found = _check(page, LR, MU, STEPS, SURFACE.default_start)
    said = page.locator(".dv-headline").text_content()
    a, b = found.window  # the window stated, then the best run after the colon
    assert found.ranking[0] == "nesterov"
    assert said.startswith(f"Lowest mean loss over k\u00a0=\u00a0{a}–{b}: Nesterov, ")
    x0, y1, rect, s = _panel(page)
    for rule in RULES:
        real = encode.decode(widget.real["paths"][rule])
        dots = page.locator(f"g.dv-real-{rule} circle")
        assert dots.count() > 10
        assert float(dots.first.get_attribute("cx")) == pytest.approx(rect["x"] + (real[0, 0] - x0) * s, abs=0.01)
        assert float(dots.first.get_attribute("cy")) == pytest.approx(rect["y"] + (y1 - real[0, 1]) * s, abs=0.01)
    assert page.locator(".dv-real-note").text_content() == "dots: the real DTensor SGD"


@browser_test
def test_each_slider_runs_the_rule_with_its_setting_and_the_dots_wait_for_a_match(page):
    _slide(page, "learning-rate", np.log10(0.02))
    assert page.locator(".dv-learning-rate-value").text_content() == "0.02"
    _check(page, 0.02, MU, STEPS, SURFACE.default_start)
    assert _dots(page) == 0 and page.locator(".dv-real-note").count() == 0
    _slide(page, "momentum", 0.5)
    _check(page, 0.02, 0.5, STEPS, SURFACE.default_start)
    _slide(page, "steps", 150)
    assert page.locator(".dv-steps-value").text_content() == "150"
    _check(page, 0.02, 0.5, 150, SURFACE.default_start)
    _slide(page, "learning-rate", np.log10(0.12))  # past heavy-ball's stability limit at μ 0.5
    _, found = _check(page, 0.12, 0.5, 150, SURFACE.default_start)
    assert found.diverged and "diverged at update" in page.locator(".dv-headline").text_content()
    # back to the settings the notebook ran with: the real run's dots again
    _slide(page, "learning-rate", np.log10(LR))
    _slide(page, "momentum", MU)
    _slide(page, "steps", STEPS)
    _check(page, LR, MU, STEPS, SURFACE.default_start)
    assert _dots(page) > 10


@browser_test
def test_a_slider_moved_with_the_mouse_redraws_at_once(page):
    slider = page.locator("input.dv-steps")
    box = slider.bounding_box()
    page.mouse.click(box["x"] + box["width"] * 0.25, box["y"] + box["height"] / 2)
    steps = int(page.locator(".dv-steps-value").text_content())
    assert 60 < steps < 140 and steps == int(slider.input_value())
    _check(page, LR, MU, steps, SURFACE.default_start)
    _slide(page, "steps", STEPS)


@browser_test
def test_a_dragged_start_runs_the_rule_from_there(page):
    start = page.locator("circle.dv-start")
    box = start.bounding_box()
    cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(cx, cy)
    page.mouse.down()
    page.mouse.move(cx + 60, cy + 90, steps=5)
    page.mouse.up()
    x0, y1, rect, s = _panel(page)
    moved = np.array(
        [
            x0 + (float(start.get_attribute("cx")) - rect["x"]) / s,
            y1 - (float(start.get_attribute("cy")) - rect["y"]) / s,
        ]
    )
    assert np.linalg.norm(moved - SURFACE.default_start) > 0.5  # it moved
    got = _browser_paths(page)
    np.testing.assert_allclose(got["plain"][0], moved, atol=0.01 / s)
    _check(page, LR, MU, STEPS, got["plain"][0])
    assert _dots(page) == 0  # the real run was from the notebook's start


@browser_test
def test_hover_on_a_path_point_gives_the_run_the_update_and_its_loss(page):
    _slide(page, "steps", STEPS)
    paths = _browser_paths(page)
    x0, y1, rect, s = _panel(page)
    k = 7
    p = paths["plain"][k]
    svg = page.locator(".dtsgd-viz-compare svg").first.bounding_box()
    scale = svg["width"] / 930
    page.mouse.move(svg["x"] + (rect["x"] + (p[0] - x0) * s) * scale, svg["y"] + (rect["y"] + (y1 - p[1]) * s) * scale)
    tip = page.locator(".dtsgd-viz-compare .dv-tip").inner_text()
    head, loss = tip.split("\n")
    name, at = head.split(", after update ")
    rule = {"plain": "plain", "momentum": "momentum", "Nesterov": "nesterov"}[name]
    shown = paths[rule][int(at)]
    assert np.linalg.norm(shown - p) * s < 10  # the point under the pointer (within 10 px)
    assert float(loss.removeprefix("loss ").replace("\u2212", "-")) == pytest.approx(SURFACE.value_np(shown), rel=5e-3)
