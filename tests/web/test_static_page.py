"""The browser-drawn PathExplorer on a saved page, opened from a file in headless Chromium
with no kernel and no widget manager (as the documentation site serves it): the slider,
hover, click and Play respond, and what the SVG draws is the recording's numbers."""

import json
import re

import numpy as np
import pytest
from helpers.browser import browser, browser_test  # noqa: F401
from helpers.builders import tutorial_03_runs
from helpers.web_page import open_saved, saved_page

from dtsgd_viz import web

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def runs():
    return tutorial_03_runs(40)


@pytest.fixture(scope="module")
def page(runs, browser, tmp_path_factory):  # noqa: F811
    surface, recs = runs
    page = open_saved(browser, web.PathExplorer(recs, surface, step=5), tmp_path_factory.mktemp("page"), 1000, 700)
    yield page
    page.close()


def _slide(page, index):
    page.locator("input.dv-slider").evaluate("(s, i) => { s.value = i; s.dispatchEvent(new Event('input')); }", index)


def _translate(node):
    return tuple(
        float(v) for v in re.match(r"translate\(([-\d.e]+),([-\d.e]+)\)", node.get_attribute("transform")).groups()
    )


def _fit(box, rect, x, y):
    """The paths panel's map: the box onto the rect at one scale, y downward."""
    (x0, x1), (y0, y1) = box
    s = min(rect["w"] / (x1 - x0), rect["h"] / (y1 - y0))
    return rect["x"] + (x - x0) * s, rect["y"] + (y1 - y) * s


@browser_test
def test_it_starts_with_no_kernel_at_the_update_asked(page):
    assert page.locator("div.dtsgd-live-ready").count() == 1 and page.problems == []
    assert page.locator(".dv-label").inner_text() == "update 5 of 40"


@browser_test
@pytest.mark.parametrize("index", [0, 17, 39])
def test_the_slider_draws_the_recorded_positions_losses_and_terms(page, runs, index):
    surface, recs = runs
    _slide(page, index)
    assert page.locator(".dv-label").inner_text() == f"update {index + 1} of 40"
    g = page.locator("g.dv-paths")
    box, rect = json.loads(g.get_attribute("data-box")), json.loads(g.get_attribute("data-rect"))
    for name, rec in recs.items():
        path = np.asarray(rec.path("w"), np.float64).reshape(-1, 2)
        marker = page.locator(f"path.dv-current[data-run={name}]")
        x, y = float(marker.get_attribute("data-x")), float(marker.get_attribute("data-y"))
        np.testing.assert_allclose([x, y], path[index], rtol=1e-12)  # the parameter before the update
        np.testing.assert_allclose(_translate(marker), _fit(box, rect, x, y), atol=0.01)
        loss = float(page.locator(f"circle.dv-loss-dot[data-run={name}]").get_attribute("data-loss"))
        # the loss at the marker's point (after `index` updates), where the update shown starts
        assert loss == pytest.approx(float(surface.value_np(path[index].reshape(surface.shape))), rel=1e-12)
        dot = page.locator(f"circle.dv-loss-dot[data-run={name}]")
        assert float(dot.get_attribute("cx")) == pytest.approx(
            float(page.locator("line.dv-update-line").get_attribute("x1")), abs=1e-6
        )
        # the trail grows with the slider: the start, every point up to the one shown
        points = page.locator(f"polyline.dv-trail[data-run={name}]").get_attribute("points").split()
        assert len(points) == index + 2
        # the arrows: the rule's terms from the recorded velocity and gradient (numpy)
        n = len(rec)
        g_ = np.asarray(rec.global_values("w", "grad"), np.float64).reshape(n, -1)[index]
        v = np.asarray(rec.global_values("w", "velocity"), np.float64).reshape(n, -1)
        hp = rec.hyperparameters
        lr, mu = float(np.asarray(hp.learning_rate).reshape(-1)[index]), float(hp.momentum)
        want = [-lr * g_]
        if mu:
            v_prev = v[index - 1] if index else np.zeros(2)
            want.insert(0, mu * (v[index] if hp.nesterov else v_prev))
        got = [json.loads(a.get_attribute("data-uv")) for a in page.locator(f"line.dv-arrow[data-run={name}]").all()]
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-15)
    sizes = {
        round(float(np.ptp(json.loads(c.get_attribute("data-box"))[0])), 12) for c in page.locator("g.dv-close").all()
    }
    assert len(sizes) == 1  # every run's close-up at one scale


@browser_test
def test_hover_names_a_point_and_a_click_shows_its_update(page, runs):
    surface, recs = runs
    _slide(page, 0)
    rec = recs["nesterov"]
    path = np.asarray(rec.path("w"), np.float64).reshape(-1, 2)
    g = page.locator("g.dv-paths")
    box, rect = json.loads(g.get_attribute("data-box")), json.loads(g.get_attribute("data-rect"))
    k = 12
    sx, sy = _fit(box, rect, *path[k])
    svg = page.locator("svg.dv-svg").bounding_box()
    scale = svg["width"] / 930
    page.mouse.move(svg["x"] + sx * scale, svg["y"] + sy * scale)
    tip = page.locator("div.dv-tip")
    text = tip.inner_text()
    assert tip.is_visible() and f"after {k} updates" in text, text
    loss = float(surface.value_np(path[k].reshape(surface.shape)))
    shown = float(re.search(r"loss ([-\d.e\u2212]+)", text).group(1).replace("\u2212", "-"))
    assert shown == pytest.approx(loss, rel=5e-3)  # 3 significant digits
    page.mouse.click(svg["x"] + sx * scale, svg["y"] + sy * scale)
    # the update that starts from the point clicked (a nearby point of another run may be nearer)
    shown = int(re.fullmatch(r"update (\d+) of 40", page.locator(".dv-label").inner_text()).group(1))
    clicked = int(re.search(r"after (\d+) update", text).group(1))
    assert shown == clicked + 1 or page.locator("div.dv-tip").inner_text() != text
    # clicking the marker of the update shown keeps it there
    for _ in range(3):
        marker = page.locator("path.dv-current[data-run=nesterov]")
        mx, my = _translate(marker)
        page.mouse.move(svg["x"] + mx * scale, svg["y"] + my * scale)
        page.mouse.click(svg["x"] + mx * scale, svg["y"] + my * scale)
    assert page.locator(".dv-label").inner_text() == f"update {shown} of 40"


@browser_test
def test_play_walks_the_updates_and_a_second_click_pauses(page):
    _slide(page, 0)
    page.locator("button.dv-play").click()
    page.wait_for_function("() => document.querySelector('.dv-label').innerText !== 'update 1 of 40'", timeout=5_000)
    page.locator("button.dv-play").click()
    paused = page.locator(".dv-label").inner_text()
    page.wait_for_timeout(400)
    assert page.locator(".dv-label").inner_text() == paused


@browser_test
def test_a_saved_page_opens_on_the_update_python_set_last(runs, browser, tmp_path):  # noqa: F811
    surface, recs = runs
    widget = web.PathExplorer(recs, surface, step=5)
    widget.update = 31  # as a notebook cell after the display does
    page = browser.new_page(viewport={"width": 1000, "height": 700})
    page.goto(saved_page(widget, tmp_path / "index.html").as_uri())
    page.wait_for_selector("div.dtsgd-live-ready", timeout=20_000)
    assert page.locator(".dv-label").inner_text() == "update 31 of 40"
    page.close()


@browser_test
def test_the_close_up_zoom_is_what_the_screen_shows(page):
    """The title's ×N is the close-ups' pixels per unit over the paths panel's."""
    for index in (0, 20, 39):
        _slide(page, index)
        g = page.locator("g.dv-paths")
        (x0, x1), (y0, y1) = json.loads(g.get_attribute("data-box"))
        rect = json.loads(g.get_attribute("data-rect"))
        main = rect["w"] / (x1 - x0)  # pixels per unit on the paths panel
        close = page.locator("g.dv-close").first
        span = np.ptp(json.loads(close.get_attribute("data-box"))[0])
        side = float(
            page.evaluate(
                "(id) => document.querySelector(id + ' rect').getAttribute('width')",
                "#" + close.get_attribute("clip-path")[len("url(#") : -1],
            )
        )
        shown = float(page.locator(".dv-close-title").get_attribute("data-zoom"))
        assert shown == pytest.approx((side / span) / main, rel=1e-9)
        text = page.locator(".dv-close-title").text_content()
        assert float(re.search(r"×([\d.]+)", text).group(1)) == pytest.approx(shown, rel=5e-3)
