"""Streaming a recording to disk (``Recorder(path=...)``, ``store.py``) and following it
live (``widgets.LiveMonitor``): the real optimizer on a real mesh, a training run killed
with SIGKILL mid-way, and a monitor following a store another process writes."""

import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time
import warnings

import numpy as np
import pytest
import tensorflow as tf
from helpers.synthetic_store import entries as synthetic_entries
from helpers.synthetic_store import header as synthetic_header
from tensorflow.experimental import dtensor

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.recording.store import StoreNotClosedWarning, StoreReader, StoreWriter, store_status
from dtsgd_viz.theory import reference

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent


def _same(a, b):
    """Two recordings hold the same steps and values, array for array."""
    assert (a.mode, a.kinds, a.variables, a.mesh) == (b.mode, b.kinds, b.variables, b.mesh)
    for x, y in [
        (a.steps, b.steps),
        (a.loss_values, b.loss_values),
        (a.nonfinite, b.nonfinite),
        (a.mismatch, b.mismatch),
        (a.dropped_steps, b.dropped_steps),
        (a.hyperparameters.learning_rate, b.hyperparameters.learning_rate),
    ]:
        assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
    ha, hb = a.hyperparameters, b.hyperparameters
    assert (ha.momentum, ha.nesterov, ha.applied_momentum) == (hb.momentum, hb.nesterov, hb.applied_momentum)
    for r, s in zip(a.records, b.records):
        assert (r.name, r.shape, r.dtype, r.layout) == (s.name, s.shape, s.dtype, s.layout)
        assert np.array_equal(r.initial, s.initial)
        for got, want in [(r.blocks, s.blocks), (r.stats, s.stats)]:
            assert set(got) == set(want)
            for k in got:
                assert got[k].dtype == want[k].dtype and np.array_equal(got[k], want[k])


@pytest.mark.parametrize("mode", ["full", "stats"])
@pytest.mark.slow
def test_streamed_store_equals_the_in_memory_recording(tmp_path, mode):
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    rng = np.random.default_rng(0)
    lay_w = dtensor.Layout(["x", "y"], mesh)
    lay_b = dtensor.Layout.replicated(mesh, 1)
    w = _dtensor.variable(rng.normal(size=(8, 8)).astype(np.float32), lay_w, name="w")
    b = _dtensor.variable(rng.normal(size=(4,)).astype(np.float32), lay_b, name="b")
    c = _dtensor.put(rng.uniform(0.2, 1.0, (8, 8)).astype(np.float32), lay_w)
    path = tmp_path / "run.zarr"
    streamed = dtsgd_viz.Recorder(mode=mode, path=path)
    in_memory = dtsgd_viz.Recorder(mode=mode)
    opt = dtsgd_viz.SGD(**CONFIGS["nesterov"], mesh=mesh, hooks=[streamed, in_memory], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(c * w * w) / 2 + tf.reduce_sum(b * b)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]), loss=loss)

    committed = []
    for i in range(14):
        step()
        if i % 4 == 3:  # batches of different sizes reach the store
            streamed.flush()
            in_memory.flush()
            committed.append(store_status(path)[0].n_steps)
            assert len(streamed._log) == 0  # the host keeps nothing once a batch is written
    assert committed == sorted(committed) and committed[0] > 0 and len(set(committed)) > 2
    with pytest.warns(StoreNotClosedWarning, match=f"stopped after update {committed[-1]};"):
        live = dtsgd_viz.load_recording(path)  # a store still open reads as far as it got
    assert len(live) == committed[-1]
    streamed.close()
    status = store_status(path)[0]
    assert status.closed and status.n_steps == 14 and status.last_step == 14
    assert os.path.basename(status.path) == "client-0"  # a single process writes client-0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a closed store loads without a warning
        loaded = dtsgd_viz.load_recording(path)
    want = in_memory.recording
    assert len(want) == 14
    _same(loaded, want)
    _same(streamed.recording, want)
    if mode == "full":
        assert all(len(v) == 0 for v in reference.check_recording(loaded).values())


def test_recorder_path_refuses_what_it_cannot_keep(tmp_path):
    with pytest.raises(ValueError, match="max_steps and decimate do not apply"):
        dtsgd_viz.Recorder(path=tmp_path / "a", max_steps=8)
    with pytest.raises(ValueError, match="max_steps and decimate do not apply"):
        dtsgd_viz.Recorder(path=tmp_path / "a", mode="stats", decimate=True)
    StoreWriter(tmp_path / "s", synthetic_header())
    with pytest.raises(ValueError, match="client-0 already holds a recording"):
        StoreWriter(tmp_path / "s", synthetic_header())
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(ValueError, match="not empty and is not a dtsgd_viz store"):
        StoreWriter(tmp_path / "other", synthetic_header())


TRAIN = textwrap.dedent("""
    import sys
    import numpy as np
    import dtsgd_viz
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    import tensorflow as tf
    from tensorflow.experimental import dtensor
    from dtsgd_viz import dtensor as _dtensor
    lay = dtensor.Layout(["x", "y"], mesh)
    rng = np.random.default_rng(0)
    w = _dtensor.variable(rng.normal(size=(8, 8)).astype(np.float32), lay, name="w")
    c = _dtensor.put(rng.uniform(0.2, 1.0, (8, 8)).astype(np.float32), lay)
    rec = dtsgd_viz.Recorder(path=sys.argv[1], mode=sys.argv[2])
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec],
                        exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(c * w * w) / 2
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]), loss=loss)

    for _ in rec.loop(10**9):  # runs until it is killed
        step()
""")


def _committed(path):
    try:
        with open(os.path.join(path, "client-0", "commit.json")) as f:
            return json.load(f)["n_steps"]
    except (OSError, ValueError):
        return 0


@pytest.mark.slow
def test_run_killed_with_sigkill_keeps_every_committed_step_in_order(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(TRAIN)
    path = str(tmp_path / "run.zarr")
    with open(tmp_path / "log.txt", "w") as log:
        proc = subprocess.Popen(
            [sys.executable, str(script), path, "full"], cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT
        )
    try:
        deadline = time.monotonic() + 120
        while _committed(path) < 20:  # several flushes (7 steps each) have been committed
            assert proc.poll() is None, (tmp_path / "log.txt").read_text()[-3000:]
            assert time.monotonic() < deadline, "the training run committed too little"
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    status = store_status(path)[0]
    n = status.n_steps
    assert n >= 20 and not status.closed and status.last_step == n
    with pytest.warns(StoreNotClosedWarning, match=f"stopped after update {n}; the run did not close the store"):
        r = dtsgd_viz.load_recording(path)
    assert np.array_equal(r.steps, np.arange(1, n + 1))  # every committed step, in order
    assert r.loss is not None and np.all(np.isfinite(r.loss))
    assert all(len(v) == 0 for v in reference.check_recording(r).values())  # real updates

    # A batch written after the last commit (a kill mid-write) is left out, and named.
    import zarr

    group = zarr.open_group(os.path.join(path, "client-0"), mode="r+")
    for name in ("steps", "loss", "v0.param"):
        array = group[name]
        if array.shape[0] < n + 3:
            array.resize((n + 3, *array.shape[1:]))
        array[n : n + 3] = 10**6  # garbage where the next batch would go
    with open(os.path.join(path, "client-0", "writing.json"), "w") as f:
        json.dump({"from": n, "steps": 3, "first": n + 1, "last": n + 3}, f)
    with pytest.warns(
        StoreNotClosedWarning,
        match=rf"a batch of 3 step\(s\) \(updates {n + 1}..{n + 3}\) written "
        "after it was never committed and is left out",
    ):
        again = dtsgd_viz.load_recording(path)
    _same(again, r)

    # load_recording (and the monitor) read the store without TensorFlow
    code = (
        "import sys, warnings, dtsgd_viz; warnings.simplefilter('ignore');"
        f"r = dtsgd_viz.load_recording({path!r}); assert len(r) == {n};"
        f"from dtsgd_viz.widgets import LiveMonitor; m = LiveMonitor({path!r}, start=False);"
        f"assert m.state.n_steps == {n};"
        "print(sorted(k for k in ('tensorflow', 'tf_keras') if k in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


def test_a_batch_written_but_not_committed_is_dropped(tmp_path):
    path = tmp_path / "s.zarr"
    writer = StoreWriter(path, synthetic_header("stats"))
    writer.append(synthetic_entries(range(1, 4), "stats"))
    writer.append(synthetic_entries(range(4, 9), "stats"), dropped=[9])
    writer.append(synthetic_entries(range(10, 13), "stats"), commit=False)
    with pytest.warns(
        StoreNotClosedWarning,
        match=r"8 step\(s\) committed, stopped after "
        r"update 8; .* a batch of 3 step\(s\) \(updates 10..12\)",
    ):
        r = dtsgd_viz.load_recording(path)
    assert list(r.steps) == list(range(1, 9)) and list(r.dropped_steps) == [9]
    assert r.record("w").stats["param"].shape == (8, 8, 3)


def _wait(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def _writer(path, *args):
    return subprocess.Popen(
        [sys.executable, str(HERE.parent / "helpers" / "synthetic_store.py"), str(path), *args], cwd=ROOT
    )


@pytest.mark.slow
def test_live_monitor_follows_a_store_another_process_writes(tmp_path):
    from dtsgd_viz.widgets import LiveMonitor, poll, readout

    path = tmp_path / "run.zarr"
    proc = _writer(path, "--batches", "6", "--per-batch", "3", "--pause", "0.4")
    try:
        monitor = LiveMonitor(path, start=False)
        assert not monitor.polling
        seen = []
        deadline = time.monotonic() + 60
        while not monitor.state.closed:
            assert time.monotonic() < deadline, "the store was never closed"
            if monitor.poll_now():
                s = monitor.state
                seen.append(s.n_steps)
                # the lines hold exactly what the store committed up to now
                r = StoreReader(path).read(stop=s.n_steps)
                # the loss recorded at update k, the loss after k - 1 updates, drawn at k - 1
                assert np.array_equal(monitor.loss_line.get_xdata(), r.steps - 1)
                assert np.array_equal(monitor.loss_line.get_ydata(), r.loss_values)
                norms = r.shard_stats("w", "velocity")[..., 0]  # one block per device
                assert len(monitor.norm_lines) == 8
                for d, line in enumerate(monitor.norm_lines):
                    assert np.array_equal(line.get_xdata(), r.steps)
                    assert np.allclose(line.get_ydata(), norms[:, d], rtol=1e-12)
                # the median line: the median block's norm (of 8: the mean of the middle two)
                mid = np.sort(norms, axis=1)[:, 3:5].mean(1)
                assert np.allclose(monitor.median_line.get_ydata(), mid, rtol=1e-9)
            time.sleep(0.05)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert seen[-1] == 18 and len(set(seen)) >= 2  # it followed the store as it grew
    assert readout(monitor.state).startswith("18 updates recorded (1-18; loss taken before each)")
    assert "closed" in monitor.label.value
    assert monitor.ax_norms.get_title() == "‖velocity‖ of each block of 'w'; black: their median"
    assert poll(monitor.state, monitor.store) is monitor.state  # nothing new: same state
    monitor.close()


@pytest.mark.slow
def test_live_monitor_stops_polling_when_the_store_closes_or_it_is_closed(tmp_path):
    from dtsgd_viz.widgets import LiveMonitor

    path = tmp_path / "run.zarr"
    go = tmp_path / "close-now"  # the writer closes the store only once this exists
    proc = _writer(
        path, "--mode", "stats", "--batches", "3", "--per-batch", "4", "--pause", "0.2", "--close-after", str(go)
    )
    try:
        _wait(lambda: (path / "client-0" / "commit.json").exists(), 60, "no store")
        monitor = LiveMonitor(path, variable="b", kind="grad", interval=0.05)
        assert monitor.polling
        go.touch()
        _wait(lambda: not monitor.polling, 60, "polling did not stop at the close")
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert monitor.state.closed and monitor.state.n_steps == 12
    assert monitor.state.norms.shape == (12, 1)  # b is replicated: one block
    assert monitor.norm_lines[0].get_label() == "CPU:0-7"

    # a store that stays open: polling goes on until the widget is closed
    open_path = tmp_path / "open.zarr"
    writer = StoreWriter(open_path, synthetic_header())
    writer.append(synthetic_entries([1, 2]))
    monitor = LiveMonitor(open_path, interval=0.05)
    assert monitor.polling and monitor.state.n_steps == 2
    writer.append(synthetic_entries([3]))
    _wait(lambda: monitor.state.n_steps == 3, 30, "the monitor missed a commit")
    monitor.close()
    assert not monitor.polling and monitor.widget.comm is None


def test_live_monitor_refuses_a_file(tmp_path):
    from dtsgd_viz.widgets import LiveMonitor

    path = tmp_path / "run.npz"
    path.write_bytes(b"not a store")
    with pytest.raises(ValueError, match="is a file .*load_recording"):
        LiveMonitor(str(path), start=False)


def _create_part(path, client, barrier, errors):
    from helpers.synthetic_store import header

    from dtsgd_viz.recording.store import StoreWriter

    barrier.wait()
    try:
        StoreWriter(path, header(), client).close()
    except Exception as e:  # noqa: BLE001 - reported by the test
        errors.put(f"client {client}: {type(e).__name__}: {e}")


@pytest.mark.slow
def test_clients_creating_one_store_at_once_all_get_their_part(tmp_path):
    """Every client of a run creates the store's root when it is not there yet; when two
    do it at the same moment, one finds the other's root (a clean 2-client run once
    failed with zarr's ContainsGroupError). Eight processes start together, four times."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    for attempt in range(4):
        path = str(tmp_path / f"run{attempt}.zarr")
        barrier, errors = ctx.Barrier(8), ctx.Queue()
        procs = [ctx.Process(target=_create_part, args=(path, c, barrier, errors)) for c in range(8)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
        found = []
        while not errors.empty():
            found.append(errors.get())
        assert found == []
        assert sorted(p for p in os.listdir(path) if p.startswith("client-")) == [f"client-{c}" for c in range(8)]


def test_a_peer_writing_the_root_right_now_is_not_a_foreign_folder(tmp_path):
    """zarr writes zarr.json as "zarr.<hex>.partial" and renames it; a client that looks
    at that moment sees only the temporary file (CI once failed on it, 1 run in ~30)."""
    from helpers.synthetic_store import header

    from dtsgd_viz.recording.store import StoreWriter

    path = tmp_path / "run.zarr"
    path.mkdir()
    (path / "zarr.0123456789abcdef0123456789abcdef.partial").write_text("{")
    (path / "client-3").mkdir()
    StoreWriter(path, header(), 0).close()
    assert (path / "zarr.json").exists() and (path / "client-0").is_dir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not empty and is not a dtsgd_viz store"):
        StoreWriter(other, header(), 0)
