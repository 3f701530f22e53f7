"""``dtsgd-viz launch``: run one script as the N clients of a DTensor run on this machine.

Each client runs ``python script.py args...`` with the environment of a multi-client
DTensor run on 127.0.0.1: ``DTENSOR_JOBS`` (one free port per client),
``DTENSOR_CLIENT_ID``, ``DTENSOR_NUM_CLIENTS``, ``DTENSOR_JOB_NAME``, and
``DTSGD_VIZ_CPU_DEVICES``, the virtual CPU devices ``dtsgd_viz.make_mesh`` makes in each
client. Each client writes to its own log file; the launcher shows every client's last
line while they run, stops all of them as soon as one fails or the timeout passes, and
returns the first failing client's exit status (124 on timeout). Clients are stopped
with SIGKILL, by process group: a client waiting for a peer that never comes ignores
SIGTERM. Nothing here imports TensorFlow.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from typing import TextIO, cast

JOB_NAME = "worker"
DTENSOR_VARS = ("DTENSOR_CLIENT_ID", "DTENSOR_NUM_CLIENTS", "DTENSOR_JOB_NAME", "DTENSOR_JOBS")
TIMEOUT_STATUS = 124  # as coreutils' timeout


def free_ports(n: int, host: str = "127.0.0.1") -> list[int]:
    """``n`` distinct ports free on ``host`` now (all bound at once, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def client_env(
    client_id: int, jobs: list[str], devices_per_client: int, base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The environment of client ``client_id`` of ``len(jobs)`` (``host:port`` each);
    one job is a single-process run (no DTensor variables)."""
    env = {k: v for k, v in (os.environ if base is None else base).items() if k not in DTENSOR_VARS}
    env["DTSGD_VIZ_CPU_DEVICES"] = str(devices_per_client)
    env["PYTHONUNBUFFERED"] = "1"  # each log's last line is the client's progress
    if len(jobs) > 1:
        env.update(
            DTENSOR_CLIENT_ID=str(client_id),
            DTENSOR_NUM_CLIENTS=str(len(jobs)),
            DTENSOR_JOB_NAME=JOB_NAME,
            DTENSOR_JOBS=",".join(jobs),
        )
    return env


def _die_with_parent():  # pragma: no cover - runs in the child before exec
    """Linux: the client gets SIGKILL if the launcher itself dies (even by SIGKILL)."""
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


@dataclasses.dataclass
class Client:
    id: int
    process: subprocess.Popen
    log: str
    status: int | None = None
    killed: bool = False

    @property
    def pid(self) -> int:
        return self.process.pid

    def last_line(self, limit: int = 4096) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(max(0, os.path.getsize(self.log) - limit))
                tail = f.read().decode(errors="replace")
        except OSError:
            return ""
        lines = [ln.strip() for ln in tail.replace("\r", "\n").split("\n") if ln.strip()]
        return lines[-1] if lines else ""

    def kill(self) -> None:
        """SIGKILL the client's process group (it runs in a session of its own)."""
        if self.process.poll() is None:
            self.killed = True
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait()


def _status(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


class _Progress:
    """Each client's last line: redrawn in place on a terminal, printed when it changes
    (at most every ``every`` seconds) otherwise."""

    def __init__(self, clients, out, every=2.0):
        self.clients, self.out, self.every = clients, out, every
        self.tty = hasattr(out, "isatty") and out.isatty()
        self.shown: dict[int, str] = {}
        self.drawn = False
        self.last = 0.0

    def _line(self, c) -> str:
        state = "running" if c.status is None else "killed" if c.killed else f"exit {c.status}"
        width = shutil.get_terminal_size().columns if self.tty else 160
        return f"[client {c.id} {state}] {c.last_line()}"[: width - 1]

    def update(self, force=False) -> None:
        now = time.monotonic()
        if self.tty:
            if self.drawn:
                self.out.write(f"\x1b[{len(self.clients)}F")
            self.out.write("".join(f"\x1b[2K{self._line(c)}\n" for c in self.clients))
            self.drawn = True
        elif force or now - self.last >= self.every:
            for c in self.clients:
                line = self._line(c)
                if self.shown.get(c.id) != line:
                    self.shown[c.id] = line
                    self.out.write(line + "\n")
            self.last = now
        self.out.flush()


def launch(
    script: str | os.PathLike[str],
    args: Sequence[str] = (),
    *,
    clients: int,
    devices_per_client: int,
    timeout: float | None = None,
    log_dir: str | os.PathLike[str] | None = None,
    python: str | None = None,
    out: TextIO | None = None,
    poll: float = 0.2,
) -> int:
    """Run ``python script args...`` as ``clients`` DTensor clients on 127.0.0.1, with
    ``devices_per_client`` virtual CPU devices each; returns 0 when all succeed, else the
    first failing client's exit status (``128 + signal`` if a signal ended it; 124 when
    ``timeout`` seconds passed first). Every client is stopped before it returns.

    Each client's output goes to ``log_dir/client-<i>.log``; without ``log_dir``, to a new
    temporary folder (``dtsgd-viz-logs-*`` under the system's temporary folder), so a
    launch leaves nothing in the current folder. The folder is printed first."""
    for name, value in (("clients", clients), ("devices_per_client", devices_per_client)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an integer >= 1. Received: {value!r}.")
    if timeout is not None and timeout <= 0:
        raise ValueError(f"timeout must be > 0 seconds. Received: {timeout!r}.")
    if not os.path.isfile(script):
        raise ValueError(f"No such script: {script!r}.")
    out = cast(TextIO, sys.stderr) if out is None else out  # typeshed: TextIO | Any
    if log_dir is None:
        log_dir = tempfile.mkdtemp(prefix="dtsgd-viz-logs-")
    os.makedirs(log_dir, exist_ok=True)
    out.write(f"logs: {log_dir}\n")
    jobs = [f"127.0.0.1:{p}" for p in free_ports(clients)]
    command = [python or sys.executable, script, *args]
    running: list[Client] = []
    restore = _stop_on_signals()
    try:
        for i in range(clients):
            log = os.path.join(log_dir, f"client-{i}.log")
            with open(log, "wb") as f:
                proc = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=f,
                    stderr=subprocess.STDOUT,
                    env=client_env(i, jobs, devices_per_client),
                    start_new_session=True,
                    preexec_fn=_die_with_parent if sys.platform == "linux" else None,
                )
            running.append(Client(i, proc, log))
            out.write(f"client {i}: pid {proc.pid}, log {log}\n")
        out.write(
            f"{clients} client(s) x {devices_per_client} device(s): "
            f"DTENSOR_JOBS={','.join(jobs) if clients > 1 else '(single process)'}\n"
        )
        return _watch(running, timeout, _Progress(running, out), out, poll)
    finally:
        for c in running:
            c.kill()
        restore()


def _watch(clients, timeout, progress, out, poll) -> int:
    start = time.monotonic()
    while True:
        failed = None
        for c in clients:
            if c.status is None and c.process.poll() is not None:
                c.status = _status(c.process.returncode)
                if c.status and failed is None:
                    failed = c
        if failed is not None:
            for c in clients:
                c.kill()
            progress.update(force=True)
            out.write(
                f"client {failed.id} failed (exit status {failed.status}): stopped the others. Its log: {failed.log}\n"
            )
            return failed.status
        if all(c.status is not None for c in clients):
            progress.update(force=True)
            return 0
        if timeout is not None and time.monotonic() - start > timeout:
            for c in clients:
                c.kill()
            progress.update(force=True)
            out.write(f"timed out after {timeout:g} s: stopped every client.\n")
            return TIMEOUT_STATUS
        progress.update()
        time.sleep(poll)


def _stop_on_signals():
    """SIGTERM/SIGHUP end the launcher like Ctrl-C does (its ``finally`` kills the
    clients); returns what puts the old handlers back."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def stop(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    old = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    return lambda: [signal.signal(s, h) for s, h in old.items()]
