"""Resuming a store (issue 21 item 1) on plain data: ``StoreWriter(resume_from=...)``, as
``Recorder(path=..., resume=True)`` opens it, supersedes what an earlier run recorded
after the restored iteration, keeps the steps in order, refuses a store of another run,
resumes each client's part of a multi-client store, and ``LiveMonitor`` follows it. The
real optimizer, checkpoint and processes: ``tests/recorder/test_resume_run.py``."""

import dataclasses

import numpy as np
import pytest
from helpers.synthetic_store import KINDS, MESH, client_entries, client_header, entries, header

import dtsgd_viz
from dtsgd_viz.recording import Part
from dtsgd_viz.recording.store import StoreNotClosedWarning, StoreReader, StoreWriter, store_status
from dtsgd_viz.specs import LayoutSpec


def _same(a, b):
    assert list(a.steps) == list(b.steps)
    for x, y in [
        (a.loss_values, b.loss_values),
        (a.nonfinite, b.nonfinite),
        (a.hyperparameters.learning_rate, b.hyperparameters.learning_rate),
    ]:
        assert np.array_equal(x, y)
    for r, s in zip(a.records, b.records):
        assert np.array_equal(r.initial, s.initial, equal_nan=True)
        for k in a.kinds:
            got, want = (r.blocks, s.blocks) if a.mode == "full" else (r.stats, s.stats)
            assert np.array_equal(got[k], want[k])


def _first_run(path, mode="full", close=True):
    """Updates 1..30 (a checkpoint at 20; 21..30 of another seed, as a run whose
    updates after its checkpoint the resumed run redoes differently would record)."""
    writer = StoreWriter(path, header(mode))
    writer.append(entries(range(1, 21), mode), dropped=[9])
    writer.append(entries(range(21, 31), mode, seed=7), dropped=[25])
    if close:
        writer.close()
    else:  # killed while writing the next batch
        writer.append(entries(range(31, 34), mode, seed=7), commit=False)
    return writer


@pytest.mark.parametrize("mode", ["full", "stats"])
@pytest.mark.parametrize("close", [True, False])
@pytest.mark.slow
def test_a_resumed_store_holds_each_update_once(tmp_path, mode, close):
    path = tmp_path / "run.zarr"
    _first_run(path, mode, close)
    writer = StoreWriter(path, header(mode), resume_from=20)
    assert writer.resumed[:2] == (20, 20) and list(writer.resumed[2]) == list(range(21, 31))
    status = store_status(path)[0]
    assert (status.n_steps, status.last_step, status.closed, status.pending) == (20, 20, False, None)
    assert status.resumes[0][:3] == (20, 20, 10) and status.n_superseded == 10
    for first in range(21, 51, 6):  # the resumed run's batches
        writer.append(entries(range(first, first + 6), mode))
    writer.close()
    r = dtsgd_viz.load_recording(path)
    straight = StoreWriter(tmp_path / "straight.zarr", header(mode))
    straight.append(entries(range(1, 51), mode), dropped=[9])
    straight.close()
    _same(r, dtsgd_viz.load_recording(tmp_path / "straight.zarr"))
    assert list(r.superseded_steps) == list(range(21, 31)) and r.superseded_steps.dtype == np.int64
    assert list(r.dropped_steps) == [9]  # 25 was dropped by the earlier run, then run again
    assert "resumed from update 20, superseding 10 step(s)" in str(store_status(path)[0])
    back = dtsgd_viz.load_recording(r.save(tmp_path / "r.npz"))  # and through a file
    assert list(back.superseded_steps) == list(range(21, 31))


@pytest.mark.slow
def test_resuming_twice_and_resuming_before_any_step(tmp_path):
    path = tmp_path / "run.zarr"
    _first_run(path)
    writer = StoreWriter(path, header(), resume_from=20)
    writer.append(entries(range(21, 28)))  # killed again at 27, checkpoint at 24
    writer = StoreWriter(path, header(), resume_from=24)
    writer.append(entries(range(25, 41)))
    writer.close()
    r = dtsgd_viz.load_recording(path)
    assert list(r.steps) == list(range(1, 41))
    assert list(r.superseded_steps) == list(range(21, 31))  # 25..27 replaced once more
    assert [x.kept for x in store_status(path)[0].resumes] == [20, 24]
    again = StoreWriter(path, header(), resume_from=0)  # no checkpoint: from the start
    assert again.n_steps == 0 and again.last_step is None
    again.append(entries(range(1, 4)))
    assert list(StoreReader(path).read().steps) == [1, 2, 3]


def test_resume_without_a_store_starts_one_and_without_resume_refuses(tmp_path):
    path = tmp_path / "new.zarr"
    writer = StoreWriter(path, header(), resume_from=20)
    assert writer.resumed is None and writer.n_steps == 0
    writer.append(entries(range(21, 24)))
    writer.close()
    assert list(dtsgd_viz.load_recording(path).steps) == [21, 22, 23]
    with pytest.raises(ValueError, match="client-0 already holds a recording.*resume=True"):
        StoreWriter(path, header())


def _variant(**changes):
    h = header()
    hp = {k: changes.pop(k) for k in ("momentum", "nesterov") if k in changes}
    if hp:
        changes["hyperparameters"] = dataclasses.replace(h.hyperparameters, **hp)
    return dataclasses.replace(h, **changes)


@pytest.mark.parametrize(
    "change, named",
    [
        (dict(momentum=0.5), "the hyperparameter 'momentum' (the store has 0.9, this run 0.5)"),
        (dict(nesterov=False), "the hyperparameter 'nesterov'"),
        (dict(kinds=("param",)), "the recorded kinds (the store has ['param', 'velocity', 'grad']"),
        (dict(mode="stats"), "the mode (the store has full, this run stats)"),
        (dict(part=Part(0, 2, (0, 1, 2, 3))), "the client's part (the store has None"),
    ],
)
def test_resuming_the_store_of_another_run_names_what_differs(tmp_path, change, named):
    path = tmp_path / "run.zarr"
    _first_run(path)
    with pytest.raises(ValueError, match="resume=True") as e:
        StoreWriter(path, _variant(**change), resume_from=20)
    assert named in str(e.value)
    assert store_status(path)[0].n_steps == 30  # left as it was


def test_a_different_layout_or_mesh_is_named(tmp_path):
    path = tmp_path / "run.zarr"
    _first_run(path)
    h = header()
    w = h.records[0]
    other = dataclasses.replace(w, layout=LayoutSpec(("y", "x"), MESH))
    with pytest.raises(ValueError, match=r"the layout of variable 'w' \(the store has"):
        StoreWriter(path, dataclasses.replace(h, records=(other, *h.records[1:])), resume_from=20)
    renamed = dataclasses.replace(w, name="w2")
    with pytest.raises(
        ValueError,
        match=r"the variables \(the store has \['w', 'b'\], this "
        r"run \['w2', 'b'\]\)",
    ):
        StoreWriter(path, dataclasses.replace(h, records=(renamed, *h.records[1:])), resume_from=20)


# ---- the parts of a multi-client store -----------------------------------------------


@pytest.mark.slow
def test_each_client_resumes_its_own_part(tmp_path):
    path, straight = tmp_path / "run.zarr", tmp_path / "straight.zarr"
    for c in range(2):  # updates 1..35, a checkpoint at 28, then killed
        writer = StoreWriter(path, client_header(c), c)
        writer.append(client_entries(c, range(1, 29)))
        writer.append(client_entries(c, range(29, 36), seed=3))
        StoreWriter(straight, client_header(c), c).append(client_entries(c, range(1, 46)))
    for c in range(2):  # each client restores the checkpoint and resumes its own part
        writer = StoreWriter(path, client_header(c), c, resume_from=28)
        assert writer.client == c and writer.n_steps == 28
        writer.append(client_entries(c, range(29, 46)))
    with pytest.warns(StoreNotClosedWarning):
        r = dtsgd_viz.load_recording(path)
    with pytest.warns(StoreNotClosedWarning):
        want = dtsgd_viz.load_recording(straight)
    assert r.part is None and list(r.steps) == list(range(1, 46))
    assert list(r.superseded_steps) == list(range(29, 36))
    for kind in KINDS:
        np.testing.assert_array_equal(r.global_values("w", kind), want.global_values("w", kind))
    assert not r.mismatch.any()  # b's copies on both clients agree


# ---- following a resumed store -------------------------------------------------------


def _shows(monitor, path):
    """The monitor's lines hold exactly what the store holds now."""
    r = StoreReader(path).read()
    assert np.array_equal(monitor.state.steps, r.steps)
    assert np.array_equal(monitor.loss_line.get_ydata(), r.loss_values)
    norms = r.shard_stats("w", "velocity")[..., 0]
    for d, line in enumerate(monitor.norm_lines):
        assert np.allclose(line.get_ydata(), norms[:, d], rtol=1e-12)


@pytest.mark.slow
def test_live_monitor_follows_a_resumed_store(tmp_path):
    from dtsgd_viz.widgets import LiveMonitor, readout

    path = tmp_path / "run.zarr"
    _first_run(path, close=False)
    seen = LiveMonitor(path, start=False)  # polls as the count drops and grows again
    missed = LiveMonitor(path, start=False)  # misses the drop: sees only the new count
    assert seen.state.n_steps == missed.state.n_steps == 30
    writer = StoreWriter(path, header(), resume_from=20)
    assert seen.poll_now() and seen.state.n_steps == 20
    _shows(seen, path)
    writer.append(entries(range(21, 26)))
    assert seen.poll_now() and list(seen.state.steps) == list(range(1, 26))
    _shows(seen, path)
    writer.append(entries(range(26, 41)))
    for monitor in (seen, missed):
        assert monitor.poll_now()
        assert list(monitor.state.steps) == list(range(1, 41))  # no superseded step twice
        _shows(monitor, path)
        assert "resumed from update 20" in readout(monitor.state)
        rate = monitor.state.steps_per_second
        assert rate is None or rate > 0
    seen.close()
    missed.close()
