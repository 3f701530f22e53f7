"""Real browser tests: JupyterLab runs the headline notebook, Voila serves the app, and
headless Chromium (Debian's, driven by Playwright) checks that the widgets render and
respond (test_browser_app_kernels.py: the app's kernels end with their pages; the
JupyterLab tests share one server, helpers.browser's ``lab``). `.ci/run` installs Chromium;
without /usr/bin/chromium these tests are skipped with that reason.

The screenshots are taken into a temporary folder and checked there: the test command
leaves the repository as it was. `make screenshots` runs the two screenshot tests with
DTSGD_VIZ_SCREENSHOTS=docs/screenshots, which copies them into the docs once they pass."""

import os
import pathlib
import re
import shutil
import sys

import pytest
from helpers.browser import (  # noqa: F401
    ARGS,
    CHROMIUM,
    ROOT,
    SCREENSHOTS,
    SHOTS_ENV,
    _boxes,
    _check_screenshot,
    _cut_by,
    _docs_screenshots,
    _free_port,
    _heading_tops,
    _image_sources,
    _move_slider,
    _open_notebook,
    _page_bottom,
    _publish,
    _run_all,
    _section_crop,
    _server,
    _shots_destination,
    _wait_changed,
    _wait_http,
    _wait_stable,
    browser,
    browser_test,
    lab,
    shots,
)


@browser_test
def test_notebook_03_in_jupyterlab(browser, lab, shots):  # noqa: F811
    docs_before = _docs_screenshots()
    with lab.folder("nb03") as work:
        notebook = work / "03_nesterov_vs_momentum.ipynb"
        shutil.copy(ROOT / "notebooks" / notebook.name, notebook)
        # tall enough for the whole PathExplorer cell (code, slider, paths and close-ups)
        page = browser.new_page(viewport={"width": 1400, "height": 1400})
        _open_notebook(page, lab.url(notebook))
        _run_all(page)
        page.wait_for_function(
            "() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];"
            " return p.length > 0 && p.every(e => !e.innerText.includes('*') && /\\[\\d+\\]/.test(e.innerText)); }",
            timeout=240_000,
        )
        # the notebook's explorers are all browser-drawn (dtsgd_viz.web): each one draws
        for explorer in (
            ".dtsgd-viz-phase rect[data-cell]",
            ".dtsgd-viz-compare input[type=range]",
            ".dtsgd-viz-paths",
        ):
            page.wait_for_selector(explorer, timeout=60_000)
        page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=60_000)
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert (
            page.locator(
                ".jp-RenderedText .ansi-red-fg, .jp-OutputArea-output "
                ".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']"
            ).count()
            == 0
        )
        assert errors.count() == 0, errors.first.inner_text()
        # the browser-drawn PathExplorer (dtsgd_viz.web, anywidget) runs live in JupyterLab:
        # its slider moves the picture and the label, and comes back to the cell's step=20
        live = page.locator(".dtsgd-viz-paths")
        live.wait_for(timeout=60_000)
        assert page.locator(".dtsgd-viz-paths .dv-label").inner_text() == "update 20 of 60"
        marker = page.locator(".dtsgd-viz-paths circle.dv-current").first  # a ring, after the update shown
        before = marker.get_attribute("cx"), marker.get_attribute("cy")
        # (set as a reader's drag sets it: JupyterLab keeps the arrow keys for the notebook)
        slide = "(s, i) => { s.value = i; s.dispatchEvent(new Event('input')); }"
        slider = page.locator(".dtsgd-viz-paths input.dv-slider")
        slider.evaluate(slide, 20)  # the slider's index: update 21
        page.wait_for_function("() => document.body.innerText.includes('update 21 of 60')", timeout=60_000)
        assert (marker.get_attribute("cx"), marker.get_attribute("cy")) != before
        slider.evaluate(slide, 19)
        page.wait_for_function("() => document.body.innerText.includes('update 20 of 60')", timeout=60_000)
        assert (marker.get_attribute("cx"), marker.get_attribute("cy")) == before
        _wait_stable(page)
        # the settings turn the "official Jupyter news?" toast off: none may cover the figure
        assert page.get_by_text("official Jupyter news").count() == 0
        # the README's picture: the PathExplorer's cell as JupyterLab shows it (its code,
        # the slider, the picture), cropped to the cell
        cell = page.locator(".jp-CodeCell").filter(has=page.locator(".dtsgd-viz-paths")).last
        cell.scroll_into_view_if_needed()
        shot = shots / "jupyterlab_03_nesterov_vs_momentum.png"
        cell.screenshot(path=str(shot))
        # the whole cell is on screen: the picture is not cut by the status bar under it
        box, bar = cell.bounding_box(), page.locator("#jp-main-statusbar").bounding_box()
        assert box["y"] >= 0 and box["y"] + box["height"] <= bar["y"], (box, bar)
        page.close()
    _check_screenshot(shot, None, 500)
    _publish(shot, docs_before)


@browser_test
def test_app_in_voila(browser, shots, tmp_path):  # noqa: F811
    from dtsgd_viz.cli.app import voila_command

    docs_before = _docs_screenshots()
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    with _server(voila_command(port), f"http://127.0.0.1:{port}/voila/static/", env, tmp_path / "voila.log"):
        page = browser.new_page(viewport={"width": 1300, "height": 1000})
        page.goto(f"http://127.0.0.1:{port}/", timeout=180_000)
        page.wait_for_selector(".widget-slider", timeout=180_000)
        page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=60_000)
        assert "Compare: plain, momentum, Nesterov" in page.inner_text("body")
        assert page.locator(".widget-slider").count() >= 5
        assert "real DTensor SGD" in page.inner_text("body")
        # the README's picture: the first two sections whole (CompareWidget, PathExplorer),
        # ending where the third's heading starts, so no panel is cut through
        shot = shots / "app_dashboard.png"
        tops = _heading_tops(page)
        assert len(tops) == 3, tops  # compare, step through one run, the mesh layout
        end = _section_crop(tops, _page_bottom(page), sections=2)
        page.set_viewport_size({"width": 1300, "height": max(end, 1000)})
        _wait_stable(page)
        end = _section_crop(_heading_tops(page), _page_bottom(page), sections=2)
        cut = _cut_by(_boxes(page, "img, .widget-slider, table, pre, h2"), end)
        assert not cut, (end, cut)  # every figure, slider and text wholly in or out
        assert end <= page.viewport_size["height"]
        page.screenshot(path=str(shot), clip={"x": 0, "y": 0, "width": 1300, "height": end})
        # every figure keeps its size and aspect ratio (none is stretched to the page width)
        images = page.eval_on_selector_all(
            "img",
            "els => els.filter(e => e.naturalWidth > 0).map(e => "
            "[e.naturalWidth, e.naturalHeight, e.clientWidth, e.clientHeight])",
        )
        assert len(images) >= 3
        for nw, nh, w, h in images:
            assert w <= nw + 1 and w / h == pytest.approx(nw / nh, rel=0.02), (nw, nh, w, h)
        # each table's headers sit side by side without overlapping (the results table,
        # then the step-through's table of the update's terms)
        tables = page.eval_on_selector_all(
            "table",
            "els => els.map(t => Array.from(t.querySelectorAll('th'))"
            ".map(e => { const r = e.getBoundingClientRect(); "
            "return [r.left, r.right]; }))",
        )
        assert len(tables) == 2 and len(tables[0]) >= 3 and len(tables[1]) == 5, tables
        for heads in tables:
            for (_, right), (left, _) in zip(heads, heads[1:]):
                assert right <= left + 1, heads
        # the results table's every header and cell wholly in its column and on the page, at
        # the page's own type size (no header cut at the page's edge)
        cells = page.eval_on_selector_all(
            "table",
            "els => Array.from(els[0].querySelectorAll('th, td')).map(e => [e.textContent, e.scrollWidth, "
            "e.clientWidth, e.getBoundingClientRect().right, parseFloat(getComputedStyle(e).fontSize)])",
        )
        body_size = page.evaluate(
            "() => parseFloat(getComputedStyle(document.querySelector('.widget-label')).fontSize)"
        )
        for text, scroll, client, right, size in cells:
            assert scroll <= client + 1 and right <= 1300, (text, scroll, client, right)
            assert size >= body_size, (text, size, body_size)
        # the terms table stands beside the step-through figure (not wrapped under it) and
        # follows the slider
        step_img = page.eval_on_selector_all(
            "img",
            "els => els.map(e => { const r = e.getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; })",
        )[1]
        table_box = page.eval_on_selector_all(
            "table", "els => { const r = els[1].getBoundingClientRect(); return [r.left, r.right, r.top, r.bottom]; }"
        )
        assert table_box[0] >= step_img[1] and table_box[1] <= 1300 and table_box[2] < step_img[3], (
            step_img,
            table_box,
        )
        assert "Update 1, each run's terms" in page.inner_text("body")
        before = _image_sources(page)
        _move_slider(page, page.locator(".widget-slider").count() - 1)  # the PathExplorer step
        _wait_changed(page, before)
        page.wait_for_function("() => document.body.innerText.includes('Update 6, each run')", timeout=30_000)
        page.close()
    _check_screenshot(shot, 1300, 1000)
    _publish(shot, docs_before)


def test_screenshots_reach_the_docs_only_through_make_screenshots(monkeypatch):
    """`make test` leaves docs/screenshots/ alone; `make screenshots` refreshes the images
    the README shows, from the browser tests that take them."""
    monkeypatch.delenv(SHOTS_ENV, raising=False)
    assert _shots_destination() is None  # the default: screenshots stay in a temporary folder
    monkeypatch.setenv(SHOTS_ENV, "docs/screenshots")
    assert _shots_destination() == pathlib.Path("docs/screenshots").resolve()
    makefile = (ROOT / "Makefile").read_text()
    recipes = dict(re.findall(r"^([\w-]+):[^\n]*\n((?:\t[^\n]*\n)*)", makefile, re.M))
    assert SHOTS_ENV not in recipes["test"]
    assert f"{SHOTS_ENV}=docs/screenshots" in recipes["screenshots"]
    assert all(f"tests/project/test_browser.py::{test}" in recipes["screenshots"] for test in SCREENSHOTS.values())
    readme = (ROOT / "README.md").read_text()
    shown = set(re.findall(r"docs/screenshots/([\w.-]+\.png)", readme))
    assert shown == set(SCREENSHOTS)
    assert all((ROOT / "docs" / "screenshots" / name).is_file() for name in shown)
    assert all(f"def {test}(" in pathlib.Path(__file__).read_text() for test in SCREENSHOTS.values())


def test_the_dashboard_picture_ends_on_a_section_boundary():
    """The app's screenshot ends where its third section's heading starts (the first two
    whole), or at the page's end when there are only two; nothing it keeps is cut."""
    tops = [170.4, 805.6, 1521.9]  # the dashboard's three headings (unsorted input is fine)
    assert _section_crop(tops[::-1], 2600.0, sections=2) == 1521
    assert _section_crop(tops[:2], 1400.2, sections=2) == 1401
    assert _section_crop(tops, 2600.0, sections=1) == 805
    panels = [(250.0, 700.0), (880.0, 1480.0), (1560.0, 2500.0)]
    assert _cut_by(panels, 1521) == [] and _cut_by(panels, 1000) == [(880.0, 1480.0)]


@browser_test
def test_a_browser_drawn_explorer_in_voila_runs_the_real_optimizer(browser, tmp_path):  # noqa: F811
    """Voila serves a notebook holding the browser-drawn PhaseDiagram (an anywidget): it
    draws, a clicked cell's lines come at once, and the kernel's real DTensor SGD run
    there arrives as dots."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import numpy as np\nimport dtsgd_viz\n_ = dtsgd_viz.setup_devices(8)\n"
            "from dtsgd_viz import surfaces\n"
            "dtsgd_viz.web.PhaseDiagram(surfaces.RotatedQuadratic(), learning_rates=np.geomspace(0.02, 0.4, 5),\n"
            "                           momenta=np.linspace(0.0, 0.9, 4), steps=20, tol=1e-2, pick=(1, 1))"
        )
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "phase.ipynb"
    nbformat.write(nb, str(path))
    voila = shutil.which("voila", path=os.path.dirname(sys.executable)) or "voila"
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    cmd = [voila, str(path), f"--port={port}", "--Voila.ip=127.0.0.1", "--no-browser"]
    with _server(cmd, f"http://127.0.0.1:{port}/voila/static/", env, tmp_path / "voila.log"):
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.goto(f"http://127.0.0.1:{port}/", timeout=180_000)
        page.wait_for_selector(".dtsgd-viz-phase g.dv-real-momentum circle", timeout=180_000)
        page.locator('.dtsgd-viz-phase rect[data-cell="3,2"]').click()
        page.wait_for_function(
            "() => document.querySelectorAll('.dtsgd-viz-phase g.dv-real-momentum circle').length === 0",
            timeout=10_000,
        )
        page.wait_for_selector(".dtsgd-viz-phase g.dv-real-momentum circle", timeout=120_000)
        assert page.locator(".dtsgd-viz-phase .dv-real-note").text_content() == "dots: the real DTensor SGD"
        page.close()
