"""``dtsgd-viz app``: the comparison dashboard as a standalone page, served by Voila.

The page is ``dashboard.ipynb`` beside this file, run by Voila in a fresh kernel: a
``CompareWidget`` (re-runs the real DTensor optimizer for plain / momentum / Nesterov
as you move the sliders), a ``PathExplorer`` over one recorded run, and the parameter's
mesh layout. It listens on 127.0.0.1 only.

Each page's kernel (about 800 MB: it runs TensorFlow) is shut down when the page
closes (``_kernels.ShutdownWhenPageCloses``); the idle culler removes, after
``CULL_IDLE_TIMEOUT`` seconds, a kernel no page ever connected to. An open page's
kernel is never culled, however long it sits idle.
"""

from __future__ import annotations

import os
import shutil
import sys

DASHBOARD = os.path.join(os.path.dirname(__file__), "dashboard.ipynb")
CULL_IDLE_TIMEOUT = 120  # seconds
CULL_INTERVAL = 30  # seconds between the culler's checks


def voila_command(port: int = 8866, open_browser: bool = False) -> list[str]:
    """The Voila command line that serves the dashboard."""
    if not (isinstance(port, int) and 0 < port < 65536):
        raise ValueError(f"port must be an integer in 1..65535. Received: {port!r}.")
    voila = shutil.which("voila", path=os.path.dirname(sys.executable)) or shutil.which("voila")
    if voila is None:
        raise RuntimeError("Voila is not installed: pip install 'dtsgd_viz[notebook]' (or pip install voila).")
    cmd = [
        voila,
        DASHBOARD,
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--VoilaConfiguration.file_allowlist=['.*\\.(png|jpg|gif|svg)']",
        "--Voila.kernel_websocket_connection_class=dtsgd_viz.cli.app._kernels.ShutdownWhenPageCloses",
        f"--MappingKernelManager.cull_idle_timeout={CULL_IDLE_TIMEOUT}",
        f"--MappingKernelManager.cull_interval={CULL_INTERVAL}",
        "--MappingKernelManager.cull_connected=False",
    ]
    if not open_browser:
        cmd.append("--no-browser")
    return cmd


STOP_TIMEOUT = 10  # seconds Voila gets to shut its kernels down before they are killed


def serve(port: int = 8866, open_browser: bool = False) -> int:
    """Run Voila in the foreground until interrupted (Ctrl-C) or terminated (SIGTERM).

    Either signal is passed on to Voila (as SIGTERM: Voila then stops without asking for
    a confirmation, shutting its kernels down) and waited for; whatever Voila leaves after
    ``STOP_TIMEOUT`` seconds (a kernel, or Voila itself) is killed, so when ``serve``
    returns no Voila and no kernel is left and the port is free. Returns Voila's exit
    status, 0 after Ctrl-C, 143 after SIGTERM."""
    import signal
    import subprocess

    cmd = voila_command(port, open_browser)
    print(f"dtsgd-viz app: serving the dashboard on http://127.0.0.1:{port}/ (Ctrl-C stops)", flush=True)
    # its own session: a Ctrl-C in the terminal reaches this process only (Voila would
    # ask "Shutdown this server?"), and is passed on as below
    voila = subprocess.Popen(cmd, start_new_session=True)
    received = []

    def stop(signum, frame):
        if not received:
            received.append(signum)
            _signal(voila.pid, signal.SIGTERM)

    previous = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while True:
            try:
                status = voila.wait(timeout=0.5)
                break
            except subprocess.TimeoutExpired:
                if received:
                    status = _stop(voila)
                    break
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
    if not received:
        return status
    return 0 if received[0] == signal.SIGINT else 128 + signal.SIGTERM


def _signal(pid, signum) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _descendants(pid) -> list:
    try:
        import psutil  # installed with Voila (ipykernel needs it)

        return psutil.Process(pid).children(recursive=True)
    except Exception:  # psutil.Error, ImportError: nothing more to find
        return []


def _stop(voila) -> int:
    """Wait for Voila to end after a SIGTERM; kill what is left after ``STOP_TIMEOUT``."""
    import subprocess

    children = _descendants(voila.pid)  # its kernels, found while Voila still runs
    try:
        status = voila.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        voila.kill()
        status = voila.wait()
    for child in children:
        try:
            child.terminate()
            child.wait(timeout=3)
        except Exception:  # gone already, or it ignores SIGTERM
            try:
                child.kill()
            except Exception:
                pass
    return status
