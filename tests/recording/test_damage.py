"""Checksums (issue 21 item 2): every chunk of a store and every member of a ``.npz``
recording carries one; damage is found at load (``RecordingFileError`` naming the array
and the chunk, or the member), ``on_damage="truncate"`` keeps the steps before it, and
files written before checksums still load, with a note. Plain data: no TensorFlow."""

import json
import os
import shutil
import warnings
import zipfile

import numpy as np
import pytest
from helpers.parts import whole_recording
from helpers.synthetic_store import entries, header

import dtsgd_viz
from dtsgd_viz.recording import NoChecksumsWarning, RecordingDamagedWarning, RecordingFileError, store_writer
from dtsgd_viz.recording.store import StoreWriter

CHUNK_STEPS = 8  # small chunks: a 40-step store has five per array


@pytest.fixture
def small_chunks(monkeypatch):
    monkeypatch.setattr(store_writer, "MAX_CHUNK_STEPS", CHUNK_STEPS)


def _store(path, mode="stats", n=40, batch=7):
    writer = StoreWriter(path, header(mode))
    for first in range(1, n + 1, batch):
        writer.append(entries(range(first, min(n, first + batch - 1) + 1), mode))
    writer.close()
    return path


def _chunk(path, array, *coords):
    return os.path.join(str(path), "client-0", array, "c", *map(str, coords))


def _flip(file, n=40):
    data = bytearray(open(file, "rb").read())
    middle = len(data) // 2 - n // 2
    data[middle : middle + n] = bytes(b ^ 0xFF for b in data[middle : middle + n])
    open(file, "wb").write(bytes(data))


def _same_rows(got, want, n):
    """``got`` holds the first ``n`` steps of ``want``, value for value."""
    assert list(got.steps) == list(want.steps[:n])
    for a, b in zip(got.records, want.records):
        for k in want.kinds:
            src = (a.stats, b.stats) if want.mode == "stats" else (a.blocks, b.blocks)
            assert np.array_equal(src[0][k], src[1][k][:n])
    assert np.array_equal(got.loss_values, want.loss_values[:n])
    assert np.array_equal(got.hyperparameters.learning_rate, want.hyperparameters.learning_rate[:n])


def test_every_store_array_carries_a_checksum(tmp_path):
    path = _store(tmp_path / "s.zarr", "full", n=5)
    part = path / "client-0"
    for name in os.listdir(part):
        if os.path.isdir(part / name):
            meta = json.loads((part / name / "zarr.json").read_text())
            assert {"name": "crc32c"} in meta["codecs"], name
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a store with checksums loads without a note
        assert len(dtsgd_viz.load_recording(path)) == 5


@pytest.mark.parametrize("how", ["flip", "truncate", "remove"])
def test_a_damaged_chunk_is_an_error_naming_the_array_and_the_chunk(tmp_path, small_chunks, how):
    path = _store(tmp_path / "s.zarr")
    chunk = _chunk(path, "v0.velocity.stats", 2, 0, 0)  # step rows 16..23
    if how == "flip":
        _flip(chunk)
    elif how == "truncate":
        data = open(chunk, "rb").read()
        open(chunk, "wb").write(data[: len(data) // 3])
    else:
        os.remove(chunk)
    what = {"flip": "damaged", "truncate": "damaged", "remove": "missing"}[how]
    with pytest.raises(RecordingFileError) as e:
        dtsgd_viz.load_recording(path)
    message = str(e.value)
    assert f"chunk {chunk} of array 'v0.velocity.stats' (step rows 16..23) is {what}" in message
    assert (e.value.array, e.value.chunk, e.value.row) == ("v0.velocity.stats", chunk, 16)


def test_truncate_loads_the_steps_before_the_damaged_chunk(tmp_path, small_chunks):
    path = _store(tmp_path / "s.zarr")
    intact = dtsgd_viz.load_recording(shutil.copytree(path, tmp_path / "copy.zarr"))
    _flip(_chunk(path, "v1.grad.stats", 3, 0, 0))  # rows 24..31
    _flip(_chunk(path, "loss", 4))  # rows 32..39: after it, left out as well
    with pytest.warns(RecordingDamagedWarning) as caught:
        r = dtsgd_viz.load_recording(path, on_damage="truncate")
    message = str(caught[0].message)
    assert "array 'v1.grad.stats'" in message and _chunk(path, "v1.grad.stats", 3, 0, 0) in message
    assert (
        "loaded the 24 step(s) before it and left out the 16 committed step(s) from it on (updates 25..40)"
    ) in message
    _same_rows(r, intact, 24)
    assert r.record("b").stats["grad"].shape == (24, 1, 3)


@pytest.mark.slow
def test_truncate_in_full_mode_and_in_the_steps_themselves(tmp_path, small_chunks):
    path = _store(tmp_path / "f.zarr", "full", n=20, batch=5)
    intact = dtsgd_viz.load_recording(shutil.copytree(path, tmp_path / "copy.zarr"))
    _flip(_chunk(path, "steps", 1), n=4)  # rows 8..15
    with pytest.raises(RecordingFileError, match="array 'steps'"):
        dtsgd_viz.load_recording(path)
    with pytest.warns(
        RecordingDamagedWarning,
        match=r"left out the 12 committed step\(s\) "
        r"from it on \(step rows 8..19\)",
    ):
        r = dtsgd_viz.load_recording(path, on_damage="truncate")
    _same_rows(r, intact, 8)
    np.testing.assert_array_equal(r.global_values("w", "param"), intact.global_values("w", "param")[:8])


@pytest.mark.slow
def test_damage_that_no_truncation_can_leave_out_is_always_an_error(tmp_path, small_chunks):
    path = _store(tmp_path / "s.zarr")
    _flip(_chunk(path, "v0.initial", 0, 0), n=8)
    for on_damage in ("raise", "truncate"):
        with pytest.raises(RecordingFileError, match="array 'v0.initial'"):
            dtsgd_viz.load_recording(path, on_damage=on_damage)


def test_truncating_one_part_of_a_multi_client_store_cuts_the_others_alike(tmp_path, small_chunks):
    from helpers.synthetic_store import client_entries, client_header

    path = tmp_path / "mc.zarr"
    for c in range(2):
        writer = StoreWriter(path, client_header(c), c)
        writer.append(client_entries(c, range(1, 31)))
        writer.close()
    intact = dtsgd_viz.load_recording(path)
    _flip(_chunk(path, "loss", 2).replace("client-0", "client-1"), n=8)  # rows 16..23
    with pytest.raises(RecordingFileError, match="client-1.*array 'loss'"):
        dtsgd_viz.load_recording(path)
    with pytest.warns(RecordingDamagedWarning, match="client-1"):
        r = dtsgd_viz.load_recording(path, on_damage="truncate")
    assert list(r.steps) == list(range(1, 17)) and r.part is None
    np.testing.assert_array_equal(r.global_values("w", "param"), intact.global_values("w", "param")[:16])


def test_a_store_written_before_checksums_loads_with_a_note(tmp_path, monkeypatch):
    monkeypatch.setattr(
        store_writer,
        "plain",
        lambda: dict(  # the old code path
            compressors=None, fill_value=0, config={"write_empty_chunks": True}
        ),
    )
    old = _store(tmp_path / "old.zarr", "full", n=6)
    monkeypatch.undo()
    new = _store(tmp_path / "new.zarr", "full", n=6)
    meta = json.loads((old / "client-0" / "v0.param" / "zarr.json").read_text())
    assert [c["name"] for c in meta["codecs"]] == ["bytes"]
    with pytest.warns(NoChecksumsWarning, match="written before dtsgd_viz kept checksums"):
        r = dtsgd_viz.load_recording(old)
    _same_rows(r, dtsgd_viz.load_recording(new), 6)


def test_npz_members_carry_a_crc32_and_damage_names_the_member(tmp_path):
    r = whole_recording(2, 16, 4, "both")
    path = r.save(tmp_path / "r.npz")
    with np.load(path, allow_pickle=False) as f:
        meta = json.loads(f["meta"].tobytes())
        assert set(meta["crc32"]) == set(f.files) - {"meta"}
    data = bytearray(open(path, "rb").read())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo("v0.param.npy")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + info.compress_size - 9] ^= 0x01  # one bit inside the values
    flipped = tmp_path / "flipped.npz"
    flipped.write_bytes(bytes(data))
    with pytest.raises(RecordingFileError, match=r"member 'v0\.param\.npy'"):
        dtsgd_viz.load_recording(flipped)

    # a member rewritten with a valid zip CRC (copied by a tool, re-zipped): the crc32 of
    # the header still finds it
    arrays = dict(np.load(path, allow_pickle=False))
    arrays["v1.grad"] = arrays["v1.grad"].copy()
    arrays["v1.grad"].reshape(-1)[5] += 1
    np.savez(tmp_path / "rezipped.npz", **arrays)
    for on_damage, hint in (("raise", ""), ("truncate", "cannot help")):
        with pytest.raises(
            RecordingFileError,
            match=r"member 'v1\.grad\.npy' is damaged: its "
            rf"crc32 is 0x[0-9a-f]{{8}}, its header recorded 0x[0-9a-f]{{8}}.*{hint}",
        ):
            dtsgd_viz.load_recording(tmp_path / "rezipped.npz", on_damage=on_damage)


def test_an_npz_written_before_checksums_loads_with_a_note(tmp_path):
    r = whole_recording(2, 16, 3, "sharded")
    arrays = dict(np.load(r.save(tmp_path / "r.npz"), allow_pickle=False))
    meta = json.loads(arrays["meta"].tobytes())
    del meta["crc32"]
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    arrays.pop("superseded_steps")  # nor did it know of resumes
    np.savez(tmp_path / "old.npz", **arrays)
    with pytest.warns(NoChecksumsWarning, match="old.npz was written before dtsgd_viz kept checksums"):
        back = dtsgd_viz.load_recording(tmp_path / "old.npz")
    np.testing.assert_array_equal(back.records[0].blocks["param"], r.records[0].blocks["param"])
    assert back.superseded_steps.dtype == np.int64 and len(back.superseded_steps) == 0


@pytest.mark.parametrize("bad", ["ignore", None, "Truncate"])
def test_on_damage_takes_raise_or_truncate(tmp_path, bad):
    path = _store(tmp_path / "s.zarr", n=3)
    with pytest.raises(
        ValueError,
        match=r"on_damage must be one of \['raise', 'truncate'\]. "
        rf"Received: on_damage={bad!r}",
    ):
        dtsgd_viz.load_recording(path, on_damage=bad)
