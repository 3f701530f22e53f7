"""``Recorder(path=..., resume=True)`` (issue 21 item 1) with the real optimizer: a run
records 30 updates into a store with a checkpoint at update 20 and ends (closing the
store, or killed with SIGKILL); a fresh process restores the checkpoint and resumes the
store to update 50. The store then holds updates 1..50 once each, bit for bit those of an
uninterrupted run, and says 21..30 were superseded. Plain-data resume tests:
``tests/recording/test_resume.py``.

Two child processes do every run: the first runs the uninterrupted 50 updates, the first
30 closed and the first 30 killed (the kill last); the second, started after, resumes
copies of those stores (once per case) and runs the other run refused. Each run builds
its own variables, optimizer, recorder and step, and writes its own section of the
child's output, which its test reads."""

import json
import shutil
import signal
import subprocess
import sys
import textwrap
import warnings

import pytest

import dtsgd_viz
from dtsgd_viz.recording.store import StoreWriter, store_status

SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, traceback, warnings
    import numpy as np
    import dtsgd_viz
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    import tensorflow as tf
    from tensorflow.experimental import dtensor

    warnings.simplefilter("always")  # each run shows its own warnings, however many ran before

    def train(store, ckpt, what, end, steps, order, kinds):
        rng = np.random.default_rng(0)
        lay = dtensor.Layout(["x", "y"], mesh)
        w = dtsgd_viz.variable(rng.normal(size=(8, 8)).astype(np.float32), lay, name="w")
        b = dtsgd_viz.variable(rng.normal(size=(4,)).astype(np.float32),
                               dtensor.Layout.replicated(mesh, 1), name="b")
        c = dtsgd_viz.shard(rng.uniform(0.2, 1.0, (8, 8)).astype(np.float32), lay)
        rec = dtsgd_viz.Recorder(path=store, resume=what == "resume", kinds=tuple(kinds))
        opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec],
                            exact_update=True)
        checkpoint = tf.train.Checkpoint(w=w, b=b, optimizer=opt)
        if what == "resume":
            if order == "build":  # slots first, then every saved value has a place
                opt.build([w, b])
                checkpoint.read(ckpt).assert_consumed()
            else:  # restored before the optimizer is built: slots restored when made
                checkpoint.read(ckpt)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(c * w * w) / 2 + tf.reduce_sum(b * b)
            opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]), loss=loss)

        for i in rec.loop(int(steps)):
            step()
            if what == "first" and i == 19:
                checkpoint.write(ckpt)  # after update 20
        if end == "kill":  # a crash after the last commit: the store is never closed
            rec.flush()
            os.kill(os.getpid(), signal.SIGKILL)
        rec.close()
        print("iterations", int(dtsgd_viz.to_numpy(opt.iterations)))

    failed = False
    for job in json.load(open(sys.argv[1])):
        for out in (sys.stdout, sys.stderr):
            print("=== run", job["name"], file=out, flush=True)
        try:
            train(**{k: v for k, v in job.items() if k != "name"})
        except Exception:
            traceback.print_exc()
            print("run failed", flush=True)
            failed = True
        sys.stdout.flush()
        sys.stderr.flush()
    sys.exit(1 if failed else 0)
""")

KINDS = ["param", "velocity", "grad"]


def _job(name, store, ckpt, what, end, steps, order, kinds=KINDS):
    return dict(
        name=name, store=str(store), ckpt=str(ckpt), what=what, end=end, steps=steps, order=order, kinds=list(kinds)
    )


def _run_jobs(folder, jobs):
    """Run ``jobs`` in order in one child process: ``(returncode, {name: (stdout,
    stderr)})``, each run's own section of what the child printed."""
    script, table = folder / "train.py", folder / "jobs.json"
    script.write_text(SCRIPT)
    table.write_text(json.dumps(jobs))
    proc = subprocess.run(
        ["timeout", "-k", "10", "600", sys.executable, str(script), str(table)],
        cwd=folder,
        capture_output=True,
        text=True,
    )

    def sections(text):
        out, name = {}, None
        for line in text.splitlines(keepends=True):
            if line.startswith("=== run "):
                name = line[len("=== run ") :].strip()
                out[name] = ""
            elif name is not None:
                out[name] += line
        return out

    stdout, stderr = sections(proc.stdout), sections(proc.stderr)
    missing = [j["name"] for j in jobs if j["name"] not in stdout]
    assert not missing, (missing, proc.returncode, proc.stderr[-3000:])
    return proc.returncode, {j["name"]: (stdout[j["name"]], stderr.get(j["name"], "")) for j in jobs}


def _ran(outputs, name, iterations):
    """Run ``name`` ended normally after ``iterations`` updates: its stdout section."""
    stdout, stderr = outputs[name]
    assert "run failed" not in stdout and f"iterations {iterations}" in stdout, (name, stderr[-3000:])
    return stdout, stderr


def _same(a, b):
    """The same steps and values, bit for bit."""
    assert a.variables == b.variables and a.kinds == b.kinds and a.mesh == b.mesh
    for x, y in [
        (a.steps, b.steps),
        (a.loss_values, b.loss_values),
        (a.nonfinite, b.nonfinite),
        (a.mismatch, b.mismatch),
        (a.dropped_steps, b.dropped_steps),
        (a.hyperparameters.learning_rate, b.hyperparameters.learning_rate),
    ]:
        assert x.dtype == y.dtype and x.tobytes() == y.tobytes()
    for r, s in zip(a.records, b.records):
        assert r.initial.tobytes() == s.initial.tobytes()
        for k in a.kinds:
            assert r.blocks[k].dtype == s.blocks[k].dtype
            assert r.blocks[k].tobytes() == s.blocks[k].tobytes(), (r.name, k)


@pytest.fixture(scope="module")
def first_process(tmp_path_factory):
    """One child: an uninterrupted 50-update run, then the first 30 updates once per way
    of ending (closed, or killed after its last commit: the kill ends the child, so it
    runs last), each with its checkpoint at update 20."""
    tmp = tmp_path_factory.mktemp("first")
    jobs = [_job("straight", tmp / "straight.zarr", tmp / "unused", "straight", "close", 50, "build")]
    for end in ("close", "kill"):
        (tmp / end).mkdir()
        jobs.append(_job(f"first-{end}", tmp / end / "run.zarr", tmp / end / "ckpt", "first", end, 30, "build"))
    returncode, outputs = _run_jobs(tmp, jobs)
    assert returncode == -signal.SIGKILL, outputs["first-kill"][1][-3000:]  # the kill, and no run failed
    _ran(outputs, "straight", 50)
    _ran(outputs, "first-close", 30)
    return tmp


@pytest.fixture(scope="module")
def straight(first_process):
    """The uninterrupted 50-update run."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return dtsgd_viz.load_recording(first_process / "straight.zarr")


@pytest.fixture(scope="module")
def first_runs(first_process):
    """The first 30 updates, once per way of ending, each with its checkpoint at update 20.
    Which order the resume restores in does not touch the first run, so both ``kill``
    resumes start from copies of one run."""
    runs = {}
    for end in ("close", "kill"):
        store, ckpt = first_process / end / "run.zarr", first_process / end / "ckpt"
        first = store_status(store)[0]
        assert (first.n_steps, first.last_step, first.closed) == (30, 30, end == "close")
        runs[end] = (store, ckpt)
    return runs


def _copy_run(store, ckpt, into):
    """A copy of a first run's store and checkpoint files under ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    shutil.copytree(store, into / "run.zarr")
    for f in ckpt.parent.glob(ckpt.name + "*"):
        shutil.copy2(f, into / f.name)
    return into / "run.zarr", into / ckpt.name


RESUMES = [("close", "build"), ("kill", "build"), ("kill", "restore")]


@pytest.fixture(scope="module")
def resumed(tmp_path_factory, first_runs):
    """One child, started after the first runs ended: each case of ``RESUMES`` resumes a
    copy of its first run's store to update 50; ``new`` resumes from the checkpoint at
    update 20 into a path with no store yet, 5 updates; ``other`` then resumes ``new``'s
    store recording other kinds. ``(returncode, outputs, folder)``."""
    tmp = tmp_path_factory.mktemp("resumed")
    jobs = []
    for end, order in RESUMES:
        store, ckpt = _copy_run(first_runs[end][0], first_runs[end][1], tmp / f"{end}-{order}")
        jobs.append(_job(f"{end}-{order}", store, ckpt, "resume", "close", 30, order))
    # the checkpoint at update 20 of a first run (the same whether that run went on to 20
    # or 30 updates: it is written after update 20)
    _, ckpt = _copy_run(first_runs["close"][0], first_runs["close"][1], tmp / "new")
    new = tmp / "new" / "new.zarr"
    jobs.append(_job("new", new, ckpt, "resume", "close", 5, "build"))
    jobs.append(_job("other", new, ckpt, "resume", "close", 3, "build", kinds=("param", "grad")))
    returncode, outputs = _run_jobs(tmp, jobs)
    return returncode, outputs, tmp


@pytest.mark.slow
@pytest.mark.parametrize("end, order", RESUMES)
def test_a_run_resumed_from_its_checkpoint_records_each_update_once(straight, resumed, end, order):
    _, outputs, tmp = resumed
    _, stderr = _ran(outputs, f"{end}-{order}", 50)
    assert "never saw" not in stderr  # a restore is not a step the recorder missed
    store = tmp / f"{end}-{order}" / "run.zarr"
    status = store_status(store)[0]
    assert status.closed and status.n_steps == 50 and status.resumes[0][:3] == (20, 20, 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # closed, with checksums: no warning
        r = dtsgd_viz.load_recording(store)
    assert list(r.steps) == list(range(1, 51))  # once each, in order
    assert list(r.superseded_steps) == list(range(21, 31))
    _same(r, straight)
    assert all(len(v) == 0 for v in dtsgd_viz.reference.check_recording(r).values())


@pytest.mark.slow
def test_resume_without_a_store_starts_one_and_a_store_of_another_run_is_refused(resumed):
    returncode, outputs, tmp = resumed
    store = tmp / "new" / "new.zarr"
    _ran(outputs, "new", 25)  # no store yet: one starts
    r = dtsgd_viz.load_recording(store)
    assert list(r.steps) == list(range(21, 26)) and len(r.superseded_steps) == 0
    assert len(store_status(store)[0].resumes) == 0
    stdout, stderr = outputs["other"]
    assert returncode != 0 and "run failed" in stdout
    assert (
        "records another run; the recorded kinds (the store has ['param', 'velocity', "
        "'grad'], this run ['param', 'grad']) differ"
    ) in stderr
    with pytest.raises(ValueError, match="already holds a recording"):
        StoreWriter(store, r)


def test_resume_needs_a_path_and_a_bool(tmp_path):
    with pytest.raises(
        ValueError,
        match=r"resume=True continues the store at path=\.\.\.; "
        r"resume must be True or False. Received: resume=True, path=None",
    ):
        dtsgd_viz.Recorder(resume=True)
    with pytest.raises(ValueError, match="Received: resume='yes'"):
        dtsgd_viz.Recorder(path=tmp_path / "s", resume="yes")


@pytest.mark.slow
def test_a_store_that_ends_before_the_restored_iteration_is_warned_about(tmp_path):
    """Eagerly, in this process: the store has updates 1..20, the optimizer resumes from
    25 (its last batch was never committed): 21..25 are missing, and said so."""
    import tensorflow as tf

    path = tmp_path / "run.zarr"

    def run(steps, resume, start=0):
        var = tf.Variable(tf.constant([1.0, -2.0, 0.5]), name="w")
        rec = dtsgd_viz.Recorder(path=path, resume=resume)
        opt = dtsgd_viz.SGD(0.1, momentum=0.9)
        opt.build([var])
        opt.iterations.assign(start)  # as a restored checkpoint sets it
        opt.add_hook(rec)
        for _ in range(steps):
            opt.minimize(lambda: tf.reduce_sum(var**2) / 2, [var])
        rec.close()
        return rec

    run(20, False)
    with pytest.warns(
        RuntimeWarning,
        match=r"the store ends at update 20 but the optimizer "
        r"resumes from iteration 25: the recorded update\(s\) 21..25",
    ):
        rec = run(3, True, start=25)
    r = rec.recording
    assert list(r.steps) == [*range(1, 21), 26, 27, 28] and len(r.superseded_steps) == 0
    assert store_status(path)[0].resumes[0][:3] == (25, 20, 0)
