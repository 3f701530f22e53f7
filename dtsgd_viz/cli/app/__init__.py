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
        raise RuntimeError(
            "Voila is not installed: pip install 'dtsgd_viz[notebook]' (or pip install voila).")
    cmd = [voila, DASHBOARD, f"--port={port}", "--Voila.ip=127.0.0.1",
           "--VoilaConfiguration.file_allowlist=['.*\\.(png|jpg|gif|svg)']",
           "--Voila.kernel_websocket_connection_class=dtsgd_viz.cli.app._kernels.ShutdownWhenPageCloses",
           f"--MappingKernelManager.cull_idle_timeout={CULL_IDLE_TIMEOUT}",
           f"--MappingKernelManager.cull_interval={CULL_INTERVAL}",
           "--MappingKernelManager.cull_connected=False"]
    if not open_browser:
        cmd.append("--no-browser")
    return cmd


def serve(port: int = 8866, open_browser: bool = False) -> int:
    """Run Voila in the foreground until interrupted (Ctrl-C)."""
    import subprocess
    cmd = voila_command(port, open_browser)
    print(f"dtsgd-viz app: serving the dashboard on http://127.0.0.1:{port}/ (Ctrl-C stops)")
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0
