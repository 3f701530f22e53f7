"""Multi-client runs: `dtsgd-viz launch` starts 2 clients x 4 virtual CPUs that train with
the real DTensor SGD on a mesh spanning both; each saves the part it recorded, and the
merged parts equal a single-process 8-device run of the same script. The launcher stops
every client when one fails; merging refuses missing and mismatched parts."""

import dataclasses
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz import MergeError, merge_recordings
from dtsgd_viz.theory import reference

pytestmark = pytest.mark.slow  # launches clients (each starts TensorFlow)

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "helpers", "multiclient_train.py")


def _launcher(tmp, name, clients, devices, script=SCRIPT, args=None, timeout=150):
    out = os.path.join(tmp, name)
    cmd = [
        sys.executable,
        "-m",
        "dtsgd_viz.cli",
        "launch",
        "--clients",
        str(clients),
        "--devices-per-client",
        str(devices),
        "--timeout",
        str(timeout),
        "--logs",
        os.path.join(out, "logs"),
        script,
        *(args if args is not None else [out]),
    ]
    return out, subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=os.path.dirname(HERE)
    )


def _finish(proc, timeout=180):
    try:
        output, _ = proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:  # the clients die with it (PR_SET_PDEATHSIG)
            proc.kill()
            proc.communicate()
    pids = [int(p) for p in re.findall(r"client \d+: pid (\d+)", output)]
    return proc.returncode, output, pids


def _gone(pid) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with open(f"/proc/{pid}/stat") as f:  # a zombie nobody reaps is gone too
        return f.read().split(")")[-1].split()[0] == "Z"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The script as 2 clients x 4 devices and, meanwhile, as one 8-device process (this
    one: the test process has 8 virtual CPUs; a third TensorFlow start would cost more
    than the run)."""
    tmp = str(tmp_path_factory.mktemp("multiclient"))
    two_dir, two = _launcher(tmp, "two", 2, 4)
    one_dir = os.path.join(tmp, "one")
    try:
        from helpers import multiclient_train

        multiclient_train.main([one_dir])
    finally:
        results = {"two": (two_dir, *_finish(two))}
    results["one"] = one_dir
    return results


def test_two_clients_record_what_one_process_records(runs):
    two_dir, rc, output, pids = runs["two"]
    assert rc == 0, output
    assert len(pids) == 2 and all(_gone(p) for p in pids)
    log = open(os.path.join(two_dir, "logs", "client-1.log")).read()
    assert "client 1/2: step 6 loss" in log and "client 1: holds 4 blocks of w" in log
    assert "This client (1 of 2) holds 4 of the 8 blocks of this value" in log
    one_dir = runs["one"]
    parts = [dtsgd_viz.load_recording(os.path.join(two_dir, f"part-{i}.npz")) for i in (0, 1)]
    assert [p.part for p in parts] == [dtsgd_viz.Part(0, 2, (0, 1, 2, 3)), dtsgd_viz.Part(1, 2, (4, 5, 6, 7))]
    # w is split across the clients (x spans them): each holds half its blocks; v and b
    # are replicated across clients: both hold every one of their blocks
    assert parts[0].record("w").blocks["param"].shape == (6, 4, 4, 4)
    assert parts[1].record("v").blocks["param"].shape == (6, 4, 8, 4)
    assert parts[0].record("b").blocks["param"].shape == (6, 1, 16)
    with pytest.raises(ValueError, match=r"part of client 0 of 2 .*merge_recordings"):
        parts[0].global_values("w")

    merged = dtsgd_viz.load_recording(two_dir)  # the folder of parts
    single = dtsgd_viz.load_recording(one_dir)  # one whole recording: returned as it is
    assert single.part is None and merged.part is None
    assert merged.mesh.device_names[4] == "/job:worker/replica:0/task:1/device:CPU:0"
    assert merged.mesh.shape == single.mesh.shape and merged.variables == ("w", "v", "b")
    np.testing.assert_array_equal(merged.steps, single.steps)
    np.testing.assert_allclose(merged.loss, single.loss, rtol=1e-6)
    for name in merged.variables:
        assert merged.layout(name).sharding_specs == single.layout(name).sharding_specs
        np.testing.assert_allclose(merged.initial(name), single.initial(name), rtol=1e-6)
        for kind in dtsgd_viz.KINDS:
            np.testing.assert_allclose(
                merged.global_values(name, kind), single.global_values(name, kind), rtol=1e-5, atol=1e-7
            )
    assert not merged.mismatch.any() and not merged.nonfinite.any()
    assert str(reference.check_recording(merged)) == str(reference.check_recording(single))
    assert all(len(steps) == 0 for steps in reference.check_recording(merged).values())
    # each client streamed its part into one store (client-0/, client-1/): merged on load
    store = dtsgd_viz.load_recording(os.path.join(two_dir, "store"))
    assert store.part is None and store.variables == merged.variables
    np.testing.assert_array_equal(store.steps, merged.steps)
    for name in merged.variables:
        for kind in dtsgd_viz.KINDS:
            np.testing.assert_array_equal(store.global_values(name, kind), merged.global_values(name, kind))
    # stats mode records its part too
    stats = dtsgd_viz.load_recording(os.path.join(two_dir, "stats"))
    stats1 = dtsgd_viz.load_recording(os.path.join(one_dir, "stats"))
    for name in merged.variables:
        np.testing.assert_allclose(
            stats.shard_stats(name, "velocity"), stats1.shard_stats(name, "velocity"), rtol=1e-4, atol=1e-7
        )
        np.testing.assert_allclose(
            stats.shard_stats(name, "param")[:, :, 0],
            np.sqrt((merged.shard_values(name, "param") ** 2).reshape(6, 8, -1).sum(-1)),
            rtol=1e-4,
        )


def test_merge_refuses_missing_repeated_and_mismatched_parts(runs):
    two_dir = runs["two"][0]
    paths = [os.path.join(two_dir, f"part-{i}.npz") for i in (0, 1)]
    a, b = (dtsgd_viz.load_recording(p) for p in paths)
    with pytest.raises(
        MergeError,
        match=r"client\(s\) \[1\] of 2 are missing; received "
        r"client 0 \(.*part-0.npz\)",
    ):
        merge_recordings(paths[:1])
    with pytest.raises(MergeError, match=r"are both the part of client 0"):
        merge_recordings([a, a])
    fewer = dataclasses.replace(b, steps=b.steps + 1)
    with pytest.raises(
        MergeError,
        match=r"part of client 1 does not belong with the part "
        r"of client 0: the recorded steps differ",
    ):
        merge_recordings([a, fewer])
    other_mesh = dataclasses.replace(b, mesh=dtsgd_viz.MeshSpec.create({"x": 4, "y": 2}, a.mesh.device_names))
    with pytest.raises(MergeError, match=r"the meshes differ \(Mesh\(x=4, y=2; 8 devices\)"):
        merge_recordings([other_mesh, a])
    with pytest.raises(MergeError, match=r"whole recording"):
        merge_recordings([a, dataclasses.replace(b, part=None)])
    with pytest.raises(MergeError, match=r"received no parts"):
        merge_recordings([])
    # a copy that disagrees on another client is kept once (the lowest client's) and flagged
    v = b.record("v")
    bad = {**v.blocks, "grad": v.blocks["grad"].copy()}
    bad["grad"][3, 2] += 1.0
    records = tuple(dataclasses.replace(r, blocks=bad) if r.name == "v" else r for r in b.records)
    merged = merge_recordings([dataclasses.replace(b, records=records), a])
    assert list(merged.replica_mismatch) == [4]
    assert merged.mismatch[3].tolist() == [0, 1 << dtsgd_viz.KINDS.index("grad"), 0]
    np.testing.assert_array_equal(merged.record("v").blocks["grad"], a.record("v").blocks["grad"])


FLAKY_CLIENTS = textwrap.dedent("""
    import os, signal, sys, time
    me = int(os.environ["DTENSOR_CLIENT_ID"])
    print("client", me, "of", os.environ["DTENSOR_NUM_CLIENTS"], "devices",
          os.environ["DTSGD_VIZ_CPU_DEVICES"], os.environ["DTENSOR_JOBS"], flush=True)
    if me == int(sys.argv[1]):
        time.sleep(0.5)
        sys.exit(3)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # like a client waiting for a lost peer
    time.sleep(120)
""")


@pytest.mark.parametrize("fail, status", [(1, 3), (-1, 124)], ids=["a client fails", "timeout"])
def test_launcher_stops_every_client_and_returns_the_first_failure(tmp_path, fail, status):
    script = tmp_path / "clients.py"
    script.write_text(FLAKY_CLIENTS)
    started = time.monotonic()
    out, proc = _launcher(str(tmp_path), "run", 3, 2, script=str(script), args=[str(fail)], timeout=3)
    rc, output, pids = _finish(proc, timeout=60)
    assert rc == status, output
    assert time.monotonic() - started < 20
    assert len(pids) == 3 and all(_gone(p) for p in pids), output
    if fail >= 0:
        assert f"client {fail} failed (exit status 3): stopped the others" in output
    else:
        assert "timed out after 3 s: stopped every client" in output
    logs = [open(os.path.join(out, "logs", f"client-{i}.log")).read() for i in range(3)]
    assert [log.split()[:4] for log in logs] == [["client", str(i), "of", "3"] for i in range(3)]
    assert all(" devices 2 127.0.0.1:" in log for log in logs)


def test_make_mesh_splits_the_mesh_over_the_clients(monkeypatch):
    """The client count comes from DTENSOR_JOBS; a mesh that does not split evenly over
    the clients is refused before anything connects."""
    monkeypatch.setenv("DTENSOR_JOBS", "127.0.0.1:1,127.0.0.1:2")
    monkeypatch.setenv("DTENSOR_CLIENT_ID", "1")
    assert dtsgd_viz.client_info() == dtsgd_viz.ClientInfo(1, 2)
    assert dtsgd_viz.client_info().multi_client
    with pytest.raises(
        ValueError,
        match=r"has 3 devices, which cannot be split evenly over "
        r"the 2 clients of this run",
    ):
        dtsgd_viz.make_mesh({"x": 3})
    monkeypatch.delenv("DTENSOR_JOBS")
    monkeypatch.delenv("DTENSOR_CLIENT_ID")
    assert dtsgd_viz.client_info() == dtsgd_viz.ClientInfo(0, 1)


def test_launch_refuses_what_it_cannot_run(tmp_path, capsys):
    from dtsgd_viz.cli.main import main

    for argv, message in [
        (["--clients", "0", "x.py"], "clients must be an integer >= 1. Received: 0"),
        (["--clients", "2", str(tmp_path / "nope.py")], "No such script"),
        (["--clients", "2", "--timeout", "0", __file__], "timeout must be > 0 seconds"),
    ]:
        with pytest.raises(SystemExit) as e:
            main(["launch", "--logs", str(tmp_path), *argv])
        assert e.value.code == 2 and message in capsys.readouterr().err


def test_launch_without_logs_writes_nothing_in_the_current_folder(tmp_path, monkeypatch):
    """The client logs go to a new temporary folder, named first in the output."""
    import io

    from dtsgd_viz.cli.launch import launch

    script = tmp_path / "hello.py"
    script.write_text("import os\nprint('hello from client', os.environ.get('DTENSOR_CLIENT_ID'))\n")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    out = io.StringIO()
    assert launch(str(script), clients=1, devices_per_client=1, timeout=60, out=out) == 0
    assert list(work.iterdir()) == []
    folder = re.match(r"logs: (\S+)\n", out.getvalue()).group(1)
    try:
        assert os.path.basename(folder).startswith("dtsgd-viz-logs-")
        assert "hello from client" in open(os.path.join(folder, "client-0.log")).read()
        assert f"log {os.path.join(folder, 'client-0.log')}" in out.getvalue()
    finally:
        shutil.rmtree(folder)
