"""What the browser tests share: Chromium (skipped without it), JupyterLab and Voila
servers, screenshots taken into a temporary folder."""

import contextlib
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS_ENV = "DTSGD_VIZ_SCREENSHOTS"  # a folder to copy the screenshots into (make screenshots)
# the screenshots the README shows, and the tests that take them
SCREENSHOTS = {"jupyterlab_03_nesterov_vs_momentum.png": "test_notebook_03_in_jupyterlab",
               "app_dashboard.png": "test_app_in_voila"}
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def browser_test(test):
    """Mark a test as a browser test, skipped (with the reason) without Chromium."""
    return pytest.mark.browser(pytest.mark.skipif(
        not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed (.ci/run installs it)")(test))


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


@contextlib.contextmanager
def _lab(tmp_path, work):
    """JupyterLab serving ``work``, windowing off (JupyterLab 4.6 leaves
    off-screen cells out of the DOM otherwise); yields its base URL and token."""
    settings = tmp_path / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    # no "get notified about official Jupyter news?" toast over the figures
    notes = tmp_path / "settings" / "@jupyterlab" / "apputils-extension"
    notes.mkdir(parents=True)
    (notes / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = _free_port(), "dtsgdtest"
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(tmp_path / "settings"),
               JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
               JUPYTERLAB_WORKSPACES_DIR=str(tmp_path / "workspaces"))
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", f"--port={port}",
           "--ServerApp.ip=127.0.0.1", f"--IdentityProvider.token={token}",
           f"--ServerApp.root_dir={work}", "--LabApp.news_url=",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"]
    base = f"http://127.0.0.1:{port}"
    with _server(cmd, f"{base}/api?token={token}", env, tmp_path / "lab.log"):
        yield base, token


@pytest.fixture(scope="module")
def browser():
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory):
    """Where the screenshots go: a temporary folder, never the repository."""
    return tmp_path_factory.mktemp("screenshots")


def _shots_destination():
    """The folder $DTSGD_VIZ_SCREENSHOTS names (relative to the current one), or None."""
    dest = os.environ.get(SHOTS_ENV)
    return pathlib.Path(dest).resolve() if dest else None


def _check_screenshot(path, width, min_height):
    """The PNG Chromium wrote: the page's width (None: a notebook cell's), at least its
    height, not one flat colour."""
    from PIL import Image
    with Image.open(path) as im:
        assert im.format == "PNG"
        assert (width is None or im.width == width) and im.height >= min_height, im.size
        assert width is not None or 900 <= im.width <= 1400, im.size   # a cell: the column's width
        darkest, lightest = im.convert("L").getextrema()
    assert lightest - darkest > 100, (darkest, lightest)


def _docs_screenshots():
    """(size, mtime) of each image in docs/screenshots/."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted((ROOT / "docs" / "screenshots").glob("*"))}


def _publish(path, docs_before):
    """Copy a checked screenshot to $DTSGD_VIZ_SCREENSHOTS when set (make screenshots);
    otherwise check that the test left docs/screenshots/ as it found it."""
    dest = _shots_destination()
    if dest is None:
        assert _docs_screenshots() == docs_before, "a test wrote into docs/screenshots/"
        return
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, dest / path.name)


def _image_sources(page):
    return page.eval_on_selector_all("img", "els => els.map(e => e.src)")


def _move_slider(page, slider_index, key="ArrowRight"):
    """Move the n-th ipywidgets slider five notches right (``key="ArrowLeft"``: left) with
    the keyboard."""
    handle = page.locator(".widget-slider .noUi-handle").nth(slider_index)
    handle.scroll_into_view_if_needed()
    handle.focus()
    for _ in range(5):
        handle.press(key)
    return handle


def _wait_stable(page, quiet=1.5, timeout=60):
    """Wait until no figure's picture has changed for ``quiet`` seconds (a widget's last
    redraw has arrived)."""
    deadline, last, since = time.time() + timeout, _image_sources(page), time.time()
    while time.time() < deadline:
        time.sleep(0.25)
        now = _image_sources(page)
        if now != last:
            last, since = now, time.time()
        elif time.time() - since >= quiet:
            return now
    raise AssertionError(f"the figures kept changing for {timeout} s")


def _wait_changed(page, before, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        now = _image_sources(page)
        if now != before:
            return now
        time.sleep(0.5)
    raise AssertionError("no figure changed after moving the slider")


def _section_crop(heading_tops, page_bottom, sections):
    """Where a page's screenshot ends so that it shows its first ``sections`` sections
    whole: the top of the next section's heading (``heading_tops``: each section's
    heading, page pixels), or the page's bottom when it has no more sections."""
    import math
    tops = sorted(heading_tops)
    end = tops[sections] if len(tops) > sections else page_bottom
    return math.ceil(end) if len(tops) <= sections else math.floor(end)


def _heading_tops(page, selector="h2"):
    """The tops of the page's section headings, in page pixels."""
    return page.eval_on_selector_all(
        selector, "els => els.map(e => e.getBoundingClientRect().top + window.scrollY)")


def _page_bottom(page):
    """The bottom of the page's lowest widget, in page pixels."""
    return page.evaluate("() => Math.max(...[...document.querySelectorAll('.widget-box, img, pre')]"
                         ".map(e => e.getBoundingClientRect().bottom + window.scrollY))")


def _boxes(page, selector):
    """(top, bottom) of every element ``selector`` matches, in page pixels."""
    return page.eval_on_selector_all(
        selector, "els => els.map(e => { const r = e.getBoundingClientRect(); "
        "return [r.top + window.scrollY, r.bottom + window.scrollY]; })")


def _cut_by(boxes, end):
    """The boxes (top, bottom) that a crop at ``end`` cuts through."""
    return [(top, bottom) for top, bottom in boxes if top < end < bottom]
