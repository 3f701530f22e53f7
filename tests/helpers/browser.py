"""What the browser tests share: Chromium (skipped without it), JupyterLab and Voila
servers, screenshots taken into a temporary folder."""

import contextlib
import dataclasses
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
SHOTS_ENV = "DTSGD_VIZ_SCREENSHOTS"  # a folder to copy the screenshots into (make screenshots)
# the screenshots the README shows, and the tests that take them
SCREENSHOTS = {
    "jupyterlab_03_nesterov_vs_momentum.png": "test_notebook_03_in_jupyterlab",
    "app_dashboard.png": "test_app_in_voila",
}
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def browser_test(test):
    """Mark a test as a browser test, skipped (with the reason) without Chromium."""
    return pytest.mark.browser(
        pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} not installed (.ci/run installs it)")(test)
    )


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
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
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


def _lab_settings(folder):
    """JupyterLab's settings in ``folder``: windowing off (JupyterLab 4.6 leaves
    off-screen cells out of the DOM otherwise), and no "get notified about official
    Jupyter news?" toast over the figures."""
    settings = folder / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    notes = folder / "settings" / "@jupyterlab" / "apputils-extension"
    notes.mkdir(parents=True, exist_ok=True)
    (notes / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )


def _lab_command(folder, work, port, token):
    """The JupyterLab command serving ``work`` and its environment (settings, runtime
    files and workspaces in ``folder``)."""
    _lab_settings(folder)
    env = dict(
        os.environ,
        JUPYTERLAB_SETTINGS_DIR=str(folder / "settings"),
        JUPYTER_RUNTIME_DIR=str(folder / "runtime"),
        JUPYTERLAB_WORKSPACES_DIR=str(folder / "workspaces"),
    )
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--allow-root",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={work}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]
    return cmd, env


@contextlib.contextmanager
def _lab(tmp_path, work):
    """A JupyterLab of its own serving ``work``; yields its base URL and token (the
    browser tests share one instead: the ``lab`` fixture)."""
    port, token = _free_port(), "dtsgdtest"
    cmd, env = _lab_command(tmp_path, work, port, token)
    base = f"http://127.0.0.1:{port}"
    with _server(cmd, f"{base}/api?token={token}", env, tmp_path / "lab.log"):
        yield base, token


@dataclasses.dataclass(frozen=True)
class Lab:
    """The browser tests' shared JupyterLab: its base URL, token and root folder."""

    base: str
    token: str
    root: pathlib.Path

    def _api(self, method, path):
        url = f"{self.base}/api/{path}?token={self.token}"
        request = urllib.request.Request(url, method=method)
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    @contextlib.contextmanager
    def folder(self, name):
        """A new folder of the server's root for one test; the kernels of the notebooks
        opened from it are shut down when the test ends (it runs as alone as with a
        server of its own: own folder, own workspace, own kernel)."""
        work = pathlib.Path(tempfile.mkdtemp(prefix=f"{name}-", dir=self.root))
        try:
            yield work
        finally:
            self.shut_down(work)

    def sessions(self, work):
        """The server's sessions (a notebook and its kernel) of notebooks in ``work``."""
        rel = work.relative_to(self.root).as_posix() + "/"
        return [s for s in self._api("GET", "sessions") if s["path"].startswith(rel)]

    def shut_down(self, work):
        for session in self.sessions(work):
            with contextlib.suppress(urllib.error.HTTPError):  # already gone
                self._api("DELETE", f"sessions/{session['id']}")

    def url(self, notebook):
        """Where JupyterLab opens ``notebook`` (a file in a ``folder``) in a workspace of
        its own, so no other test's open tabs come back with it."""
        rel = notebook.relative_to(self.root).as_posix()
        workspace = re.sub(r"[^A-Za-z0-9_-]", "-", rel)
        return f"{self.base}/lab/workspaces/{workspace}/tree/{rel}?token={self.token}"


def _lab_state_folder(tmp_path_factory):
    """Where the shared server's files live: the run's temporary folder, which every
    pytest-xdist worker of the run shares (``popen-gwN`` are its subfolders)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _alive(pid):
    """Whether process ``pid`` runs (a zombie, stopped but not yet reaped, does not)."""
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


@contextlib.contextmanager
def _locked(path):
    import fcntl

    with open(path, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _stop(pid):
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, 15)
    deadline = time.time() + 20
    while time.time() < deadline and _alive(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)  # reap it when this process started it
        time.sleep(0.1)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, 9)


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab for every browser test of the run, whichever xdist worker runs
    them: the first to need it starts it, a state file (pid, port, users) under a file
    lock tells the others where it is, and the last user stops it."""
    folder = _lab_state_folder(tmp_path_factory) / "shared-lab"
    folder.mkdir(exist_ok=True)
    state_file, token = folder / "state.json", "dtsgdtest"
    with _locked(folder / "lock"):
        state = json.loads(state_file.read_text()) if state_file.exists() else None
        if state is None or not _alive(state["pid"]):
            root = folder / "root"
            root.mkdir(exist_ok=True)
            port = _free_port()
            cmd, env = _lab_command(folder, root, port, token)
            with open(folder / "lab.log", "a") as out:
                proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            state = {"pid": proc.pid, "port": port, "root": str(root), "users": 0}
            try:
                _wait_http(f"http://127.0.0.1:{port}/api?token={token}")
            except BaseException:
                _stop(proc.pid)
                raise
        state["users"] += 1
        state_file.write_text(json.dumps(state))
    try:
        yield Lab(f"http://127.0.0.1:{state['port']}", token, pathlib.Path(state["root"]))
    finally:
        with _locked(folder / "lock"):
            state = json.loads(state_file.read_text())
            state["users"] -= 1
            if state["users"] > 0:
                state_file.write_text(json.dumps(state))
            else:
                state_file.unlink()
                _stop(state["pid"])


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
        assert width is not None or 900 <= im.width <= 1400, im.size  # a cell: the column's width
        darkest, lightest = im.convert("L").getextrema()
    assert lightest - darkest > 100, (darkest, lightest)


def _docs_screenshots():
    """(size, mtime) of each image in docs/screenshots/."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in sorted((ROOT / "docs" / "screenshots").glob("*"))}


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
    return page.eval_on_selector_all(selector, "els => els.map(e => e.getBoundingClientRect().top + window.scrollY)")


def _page_bottom(page):
    """The bottom of the page's lowest widget, in page pixels."""
    return page.evaluate(
        "() => Math.max(...[...document.querySelectorAll('.widget-box, img, pre')]"
        ".map(e => e.getBoundingClientRect().bottom + window.scrollY))"
    )


def _boxes(page, selector):
    """(top, bottom) of every element ``selector`` matches, in page pixels."""
    return page.eval_on_selector_all(
        selector,
        "els => els.map(e => { const r = e.getBoundingClientRect(); "
        "return [r.top + window.scrollY, r.bottom + window.scrollY]; })",
    )


def _cut_by(boxes, end):
    """The boxes (top, bottom) that a crop at ``end`` cuts through."""
    return [(top, bottom) for top, bottom in boxes if top < end < bottom]


def _prompts(page):
    return page.locator(".jp-CodeCell .jp-InputArea-prompt").all_inner_texts()


def _run_all(page, started=30, tries=3):
    """Run > Run All Cells (JupyterLab's command through its menu: shortcuts differ
    between versions) until a cell shows that it runs or ran. On a loaded machine the
    command has been seen to run nothing (no prompt changed in 240 s, while alone it
    runs at once): it is issued again only when no cell's prompt changed in ``started``
    seconds, so a notebook never runs twice."""
    before = _prompts(page)
    for _ in range(tries):
        page.locator(".jp-Notebook").first.click()
        page.keyboard.press("Escape")
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
        deadline = time.time() + started
        while time.time() < deadline:
            now = _prompts(page)
            if now != before or any("*" in p for p in now):
                return
            time.sleep(0.25)
    raise AssertionError(f"Run All Cells ran no cell ({tries} tries, {started} s each)")


def _open_notebook(page, url, timeout=120_000):
    """Open a notebook in JupyterLab and wait until its kernel is connected and idle, as
    the status bar says ("Python 3 (ipykernel) | Idle"): the toolbar's execution
    indicator reads idle before any kernel is there, and a cell run then would ask which
    kernel to start."""
    page.goto(url, timeout=timeout)
    page.wait_for_selector(".jp-Notebook", timeout=timeout)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=timeout)
    page.wait_for_function(
        "() => /\\|\\s*Idle\\b/.test(document.querySelector('#jp-main-statusbar')?.innerText || '')", timeout=timeout
    )
