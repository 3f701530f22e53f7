"""Voila's app in headless Chromium (as tests/project/test_browser.py drives it): each
page runs its own kernel, and however the page goes, its kernel stops. A file of its own
so that pytest-xdist (``--dist loadfile``) can run it beside the other browser tests."""

import contextlib
import os
import time

from helpers.browser import _free_port, _server, browser, browser_test  # noqa: F401


def _kernels(server):
    """{pid: RSS in bytes} of the kernels a server started (its ipykernel processes)."""
    import psutil

    found = {}
    for child in psutil.Process(server.pid).children(recursive=True):
        with contextlib.suppress(psutil.Error):
            if any("ipykernel" in arg for arg in child.cmdline()):
                found[child.pid] = child.memory_info().rss
    return found


def _wait_until(condition, timeout, message):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"{message} within {timeout} s")
        time.sleep(0.25)


@browser_test
def test_app_kernels_end_with_their_pages(browser, tmp_path):  # noqa: F811
    """Each page of the app runs its own kernel (TensorFlow: about 800 MB); however the
    page goes, its kernel stops within seconds, so three pages opened and closed leave none."""
    from dtsgd_viz.cli.app import voila_command

    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    ways_to_leave = {
        "closed": lambda page: page.close(),  # no beforeunload, as when a browser is killed
        "closed by the user": lambda page: page.close(run_before_unload=True),
        "navigated away from": lambda page: (page.goto("about:blank"), page.close()),
    }
    with _server(voila_command(port), f"http://127.0.0.1:{port}/voila/static/", env, tmp_path / "voila.log") as server:
        assert _kernels(server) == {}
        for how, leave in ways_to_leave.items():
            page = browser.new_page(viewport={"width": 1300, "height": 1000})
            page.goto(f"http://127.0.0.1:{port}/", timeout=180_000)
            page.wait_for_selector(".widget-slider", timeout=180_000)
            kernels = _kernels(server)
            assert len(kernels) == 1, kernels  # this page's: the pages before it left none
            assert min(kernels.values()) > 200 * 2**20  # a real one, TensorFlow loaded
            leave(page)
            _wait_until(lambda: not _kernels(server), 30, f"the kernel of a page {how} did not stop")
    log = (tmp_path / "voila.log").read_text()
    assert log.count("its page closed; shutting it down") == 3, log  # not culled: shut down
