"""A two-client store read while one client has committed more updates than the other,
and after the run is killed there: `dtsgd-viz launch` starts 2 clients x 4 virtual CPUs
training with the real DTensor SGD on a mesh spanning both, each streaming its part to one
store; client 1 commits only the first 13 of the 15 updates it trains
(``helpers/multiclient_lag.py``). ``LiveMonitor`` follows each client's part while they
write; ``load_recording`` loads the 13 updates both committed, warns naming 14..15, and
loads the same after client 1 is SIGKILLed by its pid."""

import json
import os
import re
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz.recording.store import PartialCommitWarning, StoreReader
from dtsgd_viz.theory import reference

pytestmark = pytest.mark.slow  # launches clients (each starts TensorFlow)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(os.path.dirname(HERE), "helpers", "multiclient_lag.py")
STEPS, COMMITTED = 15, 13  # every client trains 15 updates; client 1 commits 13
LEFT_OUT = (
    r"Loaded the 13 update\(s\) every client committed and left out update\(s\) "
    r"14\.\.15, which only some clients committed \(client 0: 14\.\.15\)"
)


def _committed(store, client):
    try:
        with open(os.path.join(store, f"client-{client}", "commit.json")) as f:
            return json.load(f)["n_steps"]
    except (OSError, ValueError, KeyError):
        return 0


def _alive(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie nobody reaps is gone too
        return f.read().split(")")[-1].split()[0] != "Z"


def _load(store, on_damage="raise"):
    """``load_recording(store)`` and its warnings, ``{category: message}``: one
    ``PartialCommitWarning`` and a ``StoreNotClosedWarning`` per part, nothing else."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = dtsgd_viz.load_recording(store, on_damage=on_damage)
    kinds = [w.category for w in caught]
    assert sorted(k.__name__ for k in kinds) == [
        "PartialCommitWarning",
        "StoreNotClosedWarning",
        "StoreNotClosedWarning",
    ], kinds
    return r, {w.category: str(w.message) for w in caught}


def _pids(launcher_output):
    return [int(p) for p in re.findall(r"client \d+: pid (\d+)", launcher_output.read_text())]


def _raw_part(store, client):
    """A part's header and per-step arrays, read with zarr itself (not ``StoreReader``)."""
    import zarr

    group = zarr.open_group(os.path.join(store, f"client-{client}"), mode="r")
    n, header = _committed(store, client), group.attrs["recording"]
    names = ["steps", "loss", "learning_rate"] + [
        f"v{i}.{kind}" for i in range(len(header["variables"])) for kind in header["kinds"]
    ]
    return header, {name: group[name][:n] for name in names}


def _shows(monitor, store, client):
    """The monitor's lines hold exactly what its client's part committed so far."""
    s = monitor.state
    r = StoreReader(store, client).read(stop=s.n_steps)
    assert np.array_equal(s.steps, r.steps) and np.array_equal(s.loss, r.loss_values)
    assert np.array_equal(monitor.loss_line.get_xdata(), r.steps - 1)  # the loss after k - 1 updates at k - 1
    blocks = r.record("w").blocks["velocity"]  # this client's blocks of w
    norms = np.sqrt((blocks.astype(np.float64) ** 2).sum(axis=(2, 3)))
    assert len(monitor.norm_lines) == 4  # w is split across the clients: 4 blocks each
    for i, line in enumerate(monitor.norm_lines):
        np.testing.assert_allclose(line.get_ydata(), norms[:, i], rtol=1e-12)


def test_a_two_client_store_killed_between_the_clients_commits_loads_what_both_committed(tmp_path):
    from dtsgd_viz.widgets import LiveMonitor, readout

    store, logs = str(tmp_path / "store"), str(tmp_path / "logs")
    out = open(tmp_path / "launcher.txt", "w")
    launcher = subprocess.Popen(
        [
            "timeout",
            "-k",
            "5",
            "300",
            sys.executable,
            "-m",
            "dtsgd_viz.cli",
            "launch",
            "--clients",
            "2",
            "--devices-per-client",
            "4",
            "--timeout",
            "280",
            "--logs",
            logs,
            SCRIPT,
            store,
            "--steps",
            str(STEPS),
            "--commit-until",
            str(COMMITTED),
            "--pause",
            "0.4",
        ],
        stdout=out,
        stderr=subprocess.STDOUT,
        cwd=ROOT,
    )
    monitors = [LiveMonitor(store, "w", client=c, start=False) for c in (0, 1)]
    seen = {0: [], 1: []}
    pids = []
    try:
        deadline = time.monotonic() + 240
        while _committed(store, 0) < STEPS:
            assert launcher.poll() is None, (tmp_path / "launcher.txt").read_text()
            assert time.monotonic() < deadline, "the clients committed too little"
            for c, monitor in enumerate(monitors):  # follow both parts as they are written
                if monitor.poll_now():
                    seen[c].append(monitor.state.n_steps)
                    _shows(monitor, store, c)
            assert monitors[0].error is None and monitors[1].error is None
            time.sleep(0.05)
        pids = _pids(tmp_path / "launcher.txt")
        assert len(pids) == 2 and all(_alive(p) for p in pids)
        for c, monitor in enumerate(monitors):
            monitor.poll_now()
            seen[c].append(monitor.state.n_steps)
            _shows(monitor, store, c)
        assert _committed(store, 1) == COMMITTED  # it trained 15 but committed 13

        # while both clients still run: what both committed, and a warning naming the rest
        live, caught = _load(store)
        assert re.search(LEFT_OUT, caught[PartialCommitWarning])

        os.kill(pids[1], signal.SIGKILL)  # client 1 is killed; the launcher stops client 0
        launcher.wait(timeout=60)
    finally:
        if launcher.poll() is None:  # timeout passes SIGTERM on: the launcher stops the clients
            launcher.terminate()
            try:
                launcher.wait(timeout=30)
            except subprocess.TimeoutExpired:
                launcher.kill()
                launcher.wait(timeout=30)
        for pid in pids or _pids(tmp_path / "launcher.txt"):
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        out.close()
    assert launcher.returncode == 128 + signal.SIGKILL, (tmp_path / "launcher.txt").read_text()
    assert not any(_alive(p) for p in pids)
    assert "client 1/2: update 15" in open(os.path.join(logs, "client-1.log")).read()

    # each monitor followed its part as it grew, and ends with exactly what it committed
    assert seen[0][-1] == STEPS and seen[1][-1] == COMMITTED
    assert len(set(seen[0])) >= 3 and len(set(seen[1])) >= 3
    assert readout(monitors[0].state).startswith("15 updates recorded (1-15; loss taken before each)")
    assert readout(monitors[1].state).startswith("13 updates recorded (1-13; loss taken before each)")
    for m in monitors:
        m.close()

    for on_damage in ("raise", "truncate"):
        r, caught = _load(store, on_damage)
        assert re.search(LEFT_OUT, caught[PartialCommitWarning])
    assert r.part is None and list(r.steps) == list(range(1, COMMITTED + 1))
    np.testing.assert_array_equal(r.steps, live.steps)

    # step by step, the updates both committed: each part's own stored values (zarr read
    # directly), its blocks where the merged recording keeps them
    for c in (0, 1):
        header, raw = _raw_part(store, c)
        assert len(raw["steps"]) == (STEPS if c == 0 else COMMITTED)
        np.testing.assert_array_equal(raw["steps"][:COMMITTED], r.steps)
        np.testing.assert_array_equal(raw["loss"][:COMMITTED], r.loss_values)
        np.testing.assert_array_equal(raw["learning_rate"][:COMMITTED], r.hyperparameters.learning_rate)
        devices = header["part"]["devices"]
        assert devices == list(range(4 * c, 4 * c + 4))
        for i, name in enumerate(r.variables):
            geom = r.geometry(name)
            for kind in dtsgd_viz.KINDS:
                stored = raw[f"v{i}.{kind}"][:COMMITTED]
                for j, (g, _) in enumerate(geom.held_groups(devices)):
                    np.testing.assert_array_equal(r.record(name).blocks[kind][:, g], stored[:, j])
                    np.testing.assert_array_equal(live.record(name).blocks[kind][:, g], stored[:, j])
    assert not r.mismatch.any() and not r.nonfinite.any()  # b's copies agree on both clients
    # every merged update follows the Nesterov rule (numpy reference, recorded gradients)
    violations = reference.check_recording(r)
    assert set(violations) == set(r.variables)
    assert all(len(steps) == 0 for steps in violations.values())
    # the whole mesh: w put together from both clients' blocks
    assert r.global_values("w", "param").shape == (COMMITTED, 8, 16)
