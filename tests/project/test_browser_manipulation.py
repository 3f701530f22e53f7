"""Direct manipulation in a real browser: JupyterLab runs a small notebook with a
PhaseDiagram and a CompareWidget, and headless Chromium clicks a phase-diagram cell
(the real run appears) and drags CompareWidget's start point (the paths move, then the
real run starts from where the pointer was released). ipyevents delivers the events.

The notebook prints, from the kernel, where on each PNG the targets are (computed with
the figures' own transforms); the test scales those pixels by the <img>'s size on the
page, as a user's pointer would land."""

import json
import re
import time

import pytest
from helpers.browser import _image_sources, _open_notebook, _run_all, _wait_changed, browser, browser_test, lab  # noqa: F401

SETUP = """\
import json
import numpy as np
import dtsgd_viz
_ = dtsgd_viz.setup_devices(8)
from dtsgd_viz import surfaces
from dtsgd_viz.widgets import CompareWidget, PhaseDiagram, _pointer
surface = surfaces.RotatedQuadratic()"""
PHASE = """\
phase = PhaseDiagram(surface, learning_rates=np.geomspace(0.02, 0.4, 6),
                     momenta=np.linspace(0.0, 0.9, 5), steps=20, tol=1e-2, dpi=70)
phase"""
COMPARE = """\
compare = CompareWidget(surface, learning_rate=0.05, momentum=0.9, steps=15, dpi=70)
compare"""
TARGETS = """\
def px(ax, x, y, image):
    return _pointer.data_to_pixel(ax, x, y, _pointer.png_size(image.value))
lr, mu = np.sqrt(phase.lr_edges[2] * phase.lr_edges[3]), (phase.mu_edges[3] + phase.mu_edges[4]) / 2
ax = compare.view.artists.ax_path
print("TARGETS " + json.dumps({
    "phase_png": _pointer.png_size(phase.image.value), "cell": px(phase.map_axes["ratio"], lr, mu, phase.image),
    "compare_png": _pointer.png_size(compare.image.value),
    "start": px(ax, -3.0, 1.5, compare.image), "mid": px(ax, -1.0, 2.0, compare.image),
    "to": px(ax, 1.0, 2.5, compare.image)}))"""


def _notebook(path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (SETUP, PHASE, COMPARE, TARGETS)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(path))


def _page_point(image, png_size, pixel):
    """Where on the page PNG pixel ``pixel`` of ``image`` (an <img> locator) is shown."""
    box = image.bounding_box()
    scale = box["width"] / png_size[0]
    return box["x"] + (pixel[0] + 0.5) * scale, box["y"] + (pixel[1] + 0.5) * scale


def _image_with_size(page, size, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        imgs = page.locator("img.widget-image")
        for i in range(imgs.count()):
            if imgs.nth(i).evaluate("e => [e.naturalWidth, e.naturalHeight]") == list(size):
                return imgs.nth(i)
        time.sleep(0.5)
    raise AssertionError(f"no widget image of {size} px on the page")


def _readout(page, label):
    text = page.locator(".widget-slider", has_text=label).locator(".widget-readout").inner_text()
    return float(text.replace("\u2212", "-"))  # d3-format writes a minus sign


@browser_test
def test_click_a_phase_cell_and_drag_the_start_in_jupyterlab(browser, lab):  # noqa: F811
    with lab.folder("manipulate") as work:
        _notebook(work / "manipulate.ipynb")
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        _open_notebook(page, lab.url(work / "manipulate.ipynb"))
        page.wait_for_function(
            "() => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length == 4", timeout=60_000
        )  # every cell rendered before Run All
        _run_all(page)
        page.wait_for_function("() => document.body.innerText.includes('TARGETS {')", timeout=300_000)
        page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=60_000)
        text = page.locator(".jp-OutputArea-output", has_text="TARGETS").first.inner_text()
        targets = json.loads(re.search(r"TARGETS (\{.*\})", text).group(1))
        no_news = page.get_by_role("button", name="No", exact=True)
        if no_news.count():
            no_news.first.click()

        # click a cell of the (ratio) map: the real optimizer runs there
        phase = _image_with_size(page, targets["phase_png"])
        phase.scroll_into_view_if_needed()
        before = phase.get_attribute("src")
        assert "grid:" not in page.inner_text("body")
        page.mouse.click(*_page_point(phase, targets["phase_png"], targets["cell"]))
        page.wait_for_function("() => document.body.innerText.includes('(grid:')", timeout=120_000)
        body = page.inner_text("body")
        assert re.search(r"real DTensor SGD \([\d.]+ s\): momentum: .*\(grid: .*nesterov: ", body), body[-2000:]
        assert phase.get_attribute("src") != before

        # drag the start point of the compare widget's paths
        compare = _image_with_size(page, targets["compare_png"])
        compare.scroll_into_view_if_needed()
        assert _readout(page, "start w[0]") == pytest.approx(-3.0)
        before = _image_sources(page)
        page.mouse.move(*_page_point(compare, targets["compare_png"], targets["start"]))
        page.mouse.down()
        page.mouse.move(*_page_point(compare, targets["compare_png"], targets["mid"]), steps=4)
        page.mouse.move(*_page_point(compare, targets["compare_png"], targets["to"]), steps=4)
        during = _wait_changed(page, before, timeout=30)  # the preview redrew the paths
        assert _readout(page, "start w[0]") == pytest.approx(-3.0)  # not run yet
        page.mouse.up()
        deadline = time.time() + 120
        while time.time() < deadline and abs(_readout(page, "start w[0]") - 1.0) > 0.1:
            time.sleep(0.5)
        assert _readout(page, "start w[0]") == pytest.approx(1.0, abs=0.1)
        assert _readout(page, "start w[1]") == pytest.approx(2.5, abs=0.1)
        page.wait_for_function("() => document.body.innerText.includes('real DTensor SGD: 3 runs')", timeout=120_000)
        _wait_changed(page, during, timeout=120)  # the real run's picture
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert errors.count() == 0, errors.first.inner_text()
        page.close()


def _live_cell(browser, lab, work, name, code, ready):  # noqa: F811
    """A one-cell notebook of ``code`` in ``work``, run in JupyterLab until ``ready`` (a
    selector) shows; the page, with the news toast dismissed."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(code)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, str(work / f"{name}.ipynb"))
    page = browser.new_page(viewport={"width": 1300, "height": 1000})
    _open_notebook(page, lab.url(work / f"{name}.ipynb"))
    page.wait_for_function("() => document.querySelectorAll('.jp-Notebook .jp-CodeCell').length == 1", timeout=60_000)
    _run_all(page)
    page.wait_for_selector(ready, timeout=300_000)
    no_news = page.get_by_role("button", name="No", exact=True)
    if no_news.count():
        no_news.first.click()
    return page


WEB_PHASE = """\
import numpy as np
import dtsgd_viz
_ = dtsgd_viz.setup_devices(8)
from dtsgd_viz import surfaces
phase = dtsgd_viz.web.PhaseDiagram(surfaces.RotatedQuadratic(), learning_rates=np.geomspace(0.02, 0.4, 6),
                                   momenta=np.linspace(0.0, 0.9, 5), steps=20, tol=1e-2, pick=(1, 1))
phase"""


@browser_test
def test_the_browser_phase_diagram_runs_the_real_optimizer_on_a_click_and_a_drag(browser, lab):  # noqa: F811
    """The browser-drawn PhaseDiagram in JupyterLab: a clicked cell's lines come at once
    (the rule in the browser); the kernel then runs the real DTensor SGD there, and its
    dots arrive on the lines; a released drag does the same from the new start."""
    import numpy as np

    with lab.folder("web_phase") as work:
        page = _live_cell(browser, lab, work, "web_phase", WEB_PHASE, ".dtsgd-viz-phase g.dv-real-momentum circle")
        cell = page.locator('.dtsgd-viz-phase rect[data-cell="3,2"]')
        cell.scroll_into_view_if_needed()
        cell.click()
        # the browser's lines at once, for the new cell; the old real run's dots gone
        lr, mu = np.geomspace(0.02, 0.4, 6)[3], np.linspace(0.0, 0.9, 5)[2]
        assert page.locator(".dtsgd-viz-phase .dv-cell-title").text_content() == f"lr {lr:.3g}, μ {mu:.3g}"
        page.wait_for_function(
            "() => document.querySelectorAll('.dtsgd-viz-phase g.dv-real-momentum circle').length === 0",
            timeout=10_000,
        )
        # then the kernel's real run at the clicked cell
        page.wait_for_selector(".dtsgd-viz-phase g.dv-real-momentum circle", timeout=120_000)
        assert page.locator(".dtsgd-viz-phase .dv-real-note").text_content() == "dots: the real DTensor SGD"
        box = page.locator(".dtsgd-viz-phase circle.dv-start").bounding_box()
        cx, cy = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.move(cx, cy)
        page.mouse.down()
        page.mouse.move(cx + 30, cy + 20, steps=4)
        page.mouse.up()
        page.wait_for_function(
            "() => document.querySelectorAll('.dtsgd-viz-phase g.dv-real-momentum circle').length === 0",
            timeout=10_000,
        )
        page.wait_for_selector(".dtsgd-viz-phase g.dv-real-momentum circle", timeout=120_000)
        first = page.locator(".dtsgd-viz-phase g.dv-real-momentum circle").first
        start = page.locator(".dtsgd-viz-phase circle.dv-start")
        # the real run starts where the drag was released
        assert float(first.get_attribute("cx")) == pytest.approx(float(start.get_attribute("cx")), abs=0.05)
        assert float(first.get_attribute("cy")) == pytest.approx(float(start.get_attribute("cy")), abs=0.05)
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert errors.count() == 0, errors.first.inner_text()
        page.close()


WEB_COMPARE = """\
import dtsgd_viz
_ = dtsgd_viz.setup_devices(8)
from dtsgd_viz import surfaces
from dtsgd_viz.web.compare import CompareWidget
compare = CompareWidget(surfaces.RotatedQuadratic(), learning_rate=0.05, momentum=0.9, steps=15)
compare"""


@browser_test
def test_the_browser_compare_widget_runs_the_real_optimizer_on_a_released_slider(browser, lab):  # noqa: F811
    """The browser-drawn CompareWidget in JupyterLab: a moved slider's lines come at once
    (the rule in the browser), the old real run's dots go; on release the kernel runs the
    real DTensor SGD with the new setting, and its dots arrive on the lines."""
    with lab.folder("web_compare") as work:
        page = _live_cell(
            browser, lab, work, "web_compare", WEB_COMPARE, ".dtsgd-viz-compare g.dv-real-momentum circle"
        )
        slider = page.locator(".dtsgd-viz-compare input.dv-momentum")
        slider.scroll_into_view_if_needed()
        box = slider.bounding_box()
        page.mouse.click(box["x"] + box["width"] * 0.5, box["y"] + box["height"] / 2)  # a press and a release
        mu = page.locator(".dtsgd-viz-compare .dv-momentum-value").text_content()
        assert mu != "0.90" and 0.3 < float(mu) < 0.7, mu
        # the browser's lines at once; the old real run's dots gone
        page.wait_for_function(
            "() => document.querySelectorAll('.dtsgd-viz-compare g.dv-real-momentum circle').length === 0",
            timeout=10_000,
        )
        # then the kernel's real run with the released momentum
        page.wait_for_selector(".dtsgd-viz-compare g.dv-real-momentum circle", timeout=120_000)
        assert page.locator(".dtsgd-viz-compare .dv-real-note").text_content() == "dots: the real DTensor SGD"
        first = page.locator(".dtsgd-viz-compare g.dv-real-nesterov circle").first
        start = page.locator(".dtsgd-viz-compare circle.dv-start")
        assert float(first.get_attribute("cx")) == pytest.approx(float(start.get_attribute("cx")), abs=0.05)
        assert float(first.get_attribute("cy")) == pytest.approx(float(start.get_attribute("cy")), abs=0.05)
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert errors.count() == 0, errors.first.inner_text()
        page.close()
