"""A multi-client store whose clients committed different updates (issue 30 item 1): the
run was killed, or is still writing, between one client's commit and another's.
``load_recording`` loads the updates every client committed, compared by update number
(after a resume they need not start at 1, nor be consecutive), and warns
(``PartialCommitWarning``) naming the others; saved ``.npz`` parts that differ are still
refused. Two clients' parts written with ``StoreWriter`` from seeded values (the real
launch is ``tests/cli/test_multiclient_partial.py``). Plain data: no TensorFlow."""

import os
import re
import warnings

import numpy as np
import pytest
from helpers.synthetic_store import KINDS, client_entries, client_header

import dtsgd_viz
from dtsgd_viz import MergeError
from dtsgd_viz.recording import RecordingDamagedWarning, store_writer
from dtsgd_viz.recording.store import PartialCommitWarning, StoreNotClosedWarning, StoreReader, StoreWriter

SHAPES = {"w": (8, 8), "b": (8,)}  # as helpers.synthetic_store draws them, in this order


def _truth(steps, seed=0):
    """``{(variable, kind): (len(steps), *shape)}``: the global values the writers were
    given for ``steps`` (``synthetic_store.client_entries``: a seeded draw per update)."""
    out = {key: [] for key in ((n, k) for n in SHAPES for k in KINDS)}
    for s in steps:
        rng = np.random.default_rng(seed * 100_003 + int(s))
        for name, shape in SHAPES.items():
            for k in KINDS:
                out[(name, k)].append(rng.normal(size=shape).astype(np.float32) * s)
    return {key: np.array(v) for key, v in out.items()}


def _write(path, client, *batches, resume_from=None):
    """``batches``: ``(first, last, seed)`` committed one after the other."""
    writer = StoreWriter(path, client_header(client), client, resume_from=resume_from)
    for first, last, seed in batches:
        writer.append(client_entries(client, range(first, last + 1), seed=seed))
    return writer


def _load(path, **kw):
    """``load_recording`` and the messages of its warnings, by category name."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        r = dtsgd_viz.load_recording(path, **kw)
    found = {}
    for w in caught:
        found.setdefault(w.category.__name__, []).append(str(w.message))
    return r, found


def _holds(r, steps, truth):
    assert r.part is None and list(r.steps) == list(steps)
    for (name, kind), want in truth.items():
        np.testing.assert_array_equal(r.global_values(name, kind), want)
    assert not r.mismatch.any()  # b's copies on both clients agree


@pytest.mark.parametrize("first", [1, 101], ids=["from update 1", "from update 101"])
@pytest.mark.slow
def test_the_updates_every_client_committed_load_and_the_others_are_named(tmp_path, first):
    path = tmp_path / "run.zarr"
    _write(path, 0, (first, first + 6, 0), (first + 7, first + 14, 0))  # 15 updates
    _write(path, 1, (first, first + 6, 0), (first + 7, first + 12, 0))  # 13
    r, warned = _load(path)
    steps = range(first, first + 13)
    _holds(r, steps, _truth(steps))
    assert len(warned["StoreNotClosedWarning"]) == 2
    (text,) = warned["PartialCommitWarning"]
    assert text == (
        f"{path}: its clients did not all commit the same updates (client 0 committed 15, "
        f"up to update {first + 14}; client 1 committed 13, up to update {first + 12}): the "
        "run was killed, or is still writing, between their commits. Loaded the 13 "
        "update(s) every client committed and left out update(s) "
        f"{first + 13}..{first + 14}, which only some clients committed (client 0: "
        f"{first + 13}..{first + 14})."
    )
    # each part still reads whole on its own
    assert len(StoreReader(path, 0).read()) == 15 and len(StoreReader(path, 1).read()) == 13

    # saved parts are closed files, not a store being written: different steps are refused
    saved = [StoreReader(path, c).read().save(tmp_path / "parts" / f"part-{c}.npz") for c in (0, 1)]
    for parts in (saved, tmp_path / "parts"):
        with pytest.raises(
            MergeError,
            match=r"the recorded steps differ \(13 steps; not in "
            rf"both: \[{first + 13}, {first + 14}\]",
        ):
            dtsgd_viz.load_recording(parts)


def test_a_client_that_committed_nothing_yet_loads_no_update(tmp_path):
    path = tmp_path / "run.zarr"
    _write(path, 0, (1, 3, 0))
    _write(path, 1)  # its header only
    r, warned = _load(path)
    assert len(r) == 0 and r.record("w").blocks["param"].shape == (0, 8, 4, 2)  # the whole mesh
    assert (
        "left out update(s) 1..3, which only some clients committed (client 0: 1..3)"
        in (warned["PartialCommitWarning"][0])
    )


@pytest.mark.slow
def test_a_client_not_resumed_yet_holds_no_update_after_the_resume(tmp_path):
    """Both clients committed updates 1..35 and were killed; restored from the checkpoint
    at 28, client 0 has resumed (and recommitted 29..32), client 1 not yet: its 29..35
    are the superseded run's, and the same numbers must not be merged with client 0's."""
    path = tmp_path / "run.zarr"
    for c in (0, 1):
        _write(path, c, (1, 28, 0), (29, 35, 3))  # seed 3: the run the resume supersedes
    _write(path, 0, (29, 32, 0), resume_from=28)
    r, warned = _load(path)
    _holds(r, range(1, 29), _truth(range(1, 29)))
    assert re.search(
        r"left out update\(s\) 29\.\.32, which only some clients committed "
        r"\(client 0: 29\.\.32\)",
        warned["PartialCommitWarning"][0],
    )
    assert list(r.superseded_steps) == list(range(29, 36))

    writer = _write(path, 1, (29, 32, 0), resume_from=28)  # client 1 resumes too
    r, warned = _load(path)
    _holds(r, range(1, 33), _truth(range(1, 33)))
    assert "PartialCommitWarning" not in warned
    writer.close()


def test_a_resume_from_an_update_one_client_never_committed_loads_around_it(tmp_path):
    """Killed with client 0 at update 35 and client 1 at 33, both restored from the
    checkpoint at 34: client 0 keeps 1..34, client 1 only 1..33, and both go on from 35.
    Every update both hold loads (after the gap too); 34 is named."""
    path = tmp_path / "run.zarr"
    _write(path, 0, (1, 35, 0))
    _write(path, 1, (1, 33, 0))
    for c in (0, 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # client 1's part ends before update 34
            _write(path, c, (35, 45, 0), resume_from=34)
    r, warned = _load(path)
    steps = [*range(1, 34), *range(35, 46)]
    _holds(r, steps, _truth(steps))
    assert re.search(
        r"left out update\(s\) 34, which only some clients committed \(client 0: "
        r"34\)",
        warned["PartialCommitWarning"][0],
    )


@pytest.mark.filterwarnings("ignore::dtsgd_viz.recording.store.StoreNotClosedWarning")
def test_damage_cuts_every_part_and_only_the_uncommitted_updates_are_partial(tmp_path, monkeypatch):
    monkeypatch.setattr(store_writer, "MAX_CHUNK_STEPS", 8)  # rows 16..23: chunk 2
    path = tmp_path / "run.zarr"
    _write(path, 0, (1, 30, 0))
    _write(path, 1, (1, 28, 0))
    loss = os.path.join(path, "client-1", "loss", "c", "2")
    data = bytearray(open(loss, "rb").read())
    data[8] ^= 0xFF
    open(loss, "wb").write(bytes(data))
    with pytest.raises(dtsgd_viz.RecordingFileError, match="client-1.*array 'loss'"):
        dtsgd_viz.load_recording(path)
    r, warned = _load(path, on_damage="truncate")
    _holds(r, range(1, 17), _truth(range(1, 17)))
    assert "client-1" in warned["RecordingDamagedWarning"][0]
    # 17..28 are committed by both (left out for the damage); 29..30 by client 0 only
    (text,) = warned["PartialCommitWarning"]
    assert (
        "Loaded the 16 update(s) every client committed and left out update(s) 29..30, "
        "which only some clients committed (client 0: 29..30)"
    ) in text
    assert issubclass(PartialCommitWarning, UserWarning)
    assert not issubclass(PartialCommitWarning, (RecordingDamagedWarning, StoreNotClosedWarning))


def test_dropped_and_skipped_updates_of_a_batch_not_every_client_committed_are_left_out(tmp_path):
    path = tmp_path / "run.zarr"
    for c in (0, 1):
        writer = StoreWriter(path, client_header(c), c)
        writer.append(client_entries(c, range(1, 5)))
        # update 9, after this batch's last step, skipped by a dynamic loss scale
        writer.append(client_entries(c, range(6, 9)), dropped=[5], skipped=[(9, 1024.0)])
        if c == 0:
            writer.append(client_entries(c, range(11, 13)), dropped=[10], skipped=[(13, 512.0)])
    r, warned = _load(path)
    assert list(r.steps) == [1, 2, 3, 4, 6, 7, 8] and list(r.dropped_steps) == [5]
    assert list(r.skipped_steps) == [9] and list(r.skipped_loss_scale) == [1024.0]
    assert (
        "left out update(s) 11..12, which only some clients committed (client 0: "
        "11..12)" in warned["PartialCommitWarning"][0]
    )
