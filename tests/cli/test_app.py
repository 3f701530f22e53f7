"""``dtsgd-viz app`` stopped by its PID (SIGTERM, as a service manager or ``kill`` stops it)
passes the signal on to Voila and waits: once it ends no Voila and no kernel is left, and
the port is free."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import psutil
import pytest

pytestmark = pytest.mark.slow


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_until(condition, timeout, what):
    deadline = time.time() + timeout
    while not condition():
        if time.time() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        time.sleep(0.25)


def _answers(url, timeout=2):
    try:
        urllib.request.urlopen(url, timeout=timeout)
        return True
    except urllib.error.HTTPError:  # an answer all the same (a 404)
        return True
    except OSError:
        return False


def _kernels(pid):
    return [p for p in psutil.Process(pid).children(recursive=True) if any("ipykernel" in a for a in p.cmdline())]


def test_sigterm_stops_voila_and_its_kernels_and_frees_the_port(tmp_path):
    port = _free_port()
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    app = subprocess.Popen(
        [sys.executable, "-m", "dtsgd_viz.cli", "app", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=open(tmp_path / "log", "w"),
    )
    try:
        _wait_until(lambda: _answers(f"http://127.0.0.1:{port}/voila/static/"), 120, "Voila answered")
        # a page request starts a kernel (it runs the dashboard: TensorFlow)
        threading.Thread(target=_answers, args=(f"http://127.0.0.1:{port}/", 300), daemon=True).start()
        _wait_until(lambda: _kernels(app.pid), 120, "a kernel started")
        family = psutil.Process(app.pid).children(recursive=True)
        assert any("voila" in " ".join(p.cmdline()) for p in family)
        os.kill(app.pid, signal.SIGTERM)
        assert app.wait(timeout=60) == 128 + signal.SIGTERM
        left = [p for p in family if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert left == [], [p.cmdline() for p in left]
        with socket.socket() as s:  # free again: nobody listens (as a new server binds it)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))
            s.listen()
    finally:
        if app.poll() is None:
            for p in psutil.Process(app.pid).children(recursive=True):
                p.kill()
            app.kill()
