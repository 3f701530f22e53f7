"""Real browser tests: JupyterLab runs the headline notebook, Voila serves the app, and
headless Chromium (Debian's, driven by Playwright) checks that the widgets render and
respond. Screenshots land in docs/screenshots/. `.ci/run` installs Chromium; without
/usr/bin/chromium these tests are skipped with that reason."""

import contextlib
import json
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium"
SHOTS = ROOT / "docs" / "screenshots"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed (.ci/run installs it)"),
]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except urllib.error.HTTPError as e:  # the server answers: it is up
            if e.code < 500:
                return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer within {timeout} s")


@contextlib.contextmanager
def _server(cmd, url, env, log):
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            _wait_http(url)
            yield proc
        finally:  # always stop the server, whatever happened
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def _image_sources(page):
    return page.eval_on_selector_all("img", "els => els.map(e => e.src)")


def _move_slider(page, slider_index):
    """Move the n-th ipywidgets slider one notch right with the keyboard."""
    handle = page.locator(".widget-slider .noUi-handle").nth(slider_index)
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(5):
        handle.press("ArrowRight")
    return handle


def _wait_changed(page, before, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = _image_sources(page)
        if now != before:
            return now
        time.sleep(0.5)
    raise AssertionError("no figure changed after moving the slider")


def test_notebook_03_in_jupyterlab(browser, tmp_path):
    work = tmp_path / "nb"
    work.mkdir()
    shutil.copy(ROOT / "notebooks" / "03_nesterov_vs_momentum.ipynb", work)
    settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    # JupyterLab 4.6 leaves off-screen cells out of the DOM unless windowing is off
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    port, token = _free_port(), "dtsgdtest"
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={work}", "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    base = f"http://127.0.0.1:{port}"
    with _server(cmd, f"{base}/api?token={token}", env, tmp_path / "lab.log"):
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(f"{base}/lab/tree/03_nesterov_vs_momentum.ipynb?token={token}", timeout=120_000)
        page.wait_for_selector(".jp-Notebook", timeout=120_000)
        page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=120_000)
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Escape")
        # Run > Run All Cells, through JupyterLab's command (menus differ between versions)
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        page.wait_for_function(
            "() => { const p = [...document.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')];"
            " return p.length > 0 && p.every(e => !e.innerText.includes('*') && /\\[\\d+\\]/.test(e.innerText)); }",
            timeout=240_000)
        page.wait_for_selector(".widget-slider", timeout=60_000)
        page.wait_for_function("() => !document.body.innerText.includes('Loading widget')", timeout=60_000)
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert page.locator(".jp-RenderedText .ansi-red-fg, .jp-OutputArea-output .jp-RenderedText[data-mime-type='application/vnd.jupyter.error']").count() == 0
        assert errors.count() == 0, errors.first.inner_text()
        n_sliders = page.locator(".widget-slider").count()
        assert n_sliders >= 3
        before = _image_sources(page)
        _move_slider(page, n_sliders - 1)
        _wait_changed(page, before)
        no_news = page.get_by_role("button", name="No", exact=True)
        if no_news.count():
            no_news.first.click()  # the "official Jupyter news?" toast would cover the figure
        page.screenshot(path=str(SHOTS / "jupyterlab_03_nesterov_vs_momentum.png"), full_page=False)


def test_app_in_voila(browser, tmp_path):
    from dtsgd_viz.app import voila_command
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
        page.screenshot(path=str(SHOTS / "app_dashboard.png"), full_page=True)
        before = _image_sources(page)
        _move_slider(page, page.locator(".widget-slider").count() - 1)  # the PathExplorer step
        _wait_changed(page, before)
