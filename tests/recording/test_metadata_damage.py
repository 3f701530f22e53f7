"""Every byte of metadata checksummed (issue 30 item 2): a real run of the real optimizer
is recorded into a store and saved to a ``.npz``; then single bits are flipped in each of
their metadata files (the store's root ``zarr.json``, the part's ``zarr.json`` holding the
recording's header, ``commit.json``, every array's ``zarr.json``, the ``.npz`` header),
files are truncated and emptied and a data type changed. Each load raises a
``RecordingFileError`` naming the file, or, where the change leaves every value alone (an
open store's array may have grown), returns the recording as written, field for field. A
reader that follows a store while its arrays grow, or while a resumed run reopens it, sees
no false alarm; stores and files of the previous format load, with a note."""

import collections.abc
import dataclasses
import io
import json
import os
import pathlib
import re
import shutil
import types
import warnings
import zipfile

import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import Problem, layout
from helpers.synthetic_store import entries, header

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.recording import NoChecksumsWarning, RecordingFileError
from dtsgd_viz.recording.store import StoreNotClosedWarning, StoreReader, StoreWriter, part_status, store_status
from dtsgd_viz.theory import reference

STEPS = 6
PREVIOUS_COMMIT_KEYS = (
    "n_steps",
    "n_dropped",
    "last_step",
    "closed",
    "started",
    "time",
    "n_superseded",
    "resumes",
)  # what commit.json held before checksums


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """6 updates of momentum SGD (the real optimizer, on a 2x4 mesh) of a sharded and a
    replicated variable, streamed to a store in two batches: ``open``, a copy of the
    store while the run still writes it (its arrays hold more rows than it committed),
    ``closed``, the store once the run closed it, ``npz``, its recording saved, and
    ``recording``, what the closed store loads as before any damage."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    w = Problem((8, 8), layout(mesh, "x", "y"), seed=0, name="w")
    b = Problem((4,), layout(mesh, "unsharded"), seed=1, name="b")
    folder = tmp_path_factory.mktemp("run")
    recorder = dtsgd_viz.Recorder(path=folder / "closed.zarr")
    opt = dtsgd_viz.SGD(**CONFIGS["momentum"], mesh=mesh, hooks=[recorder], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = w.loss() + b.loss()
        opt.apply_gradients(zip(tape.gradient(loss, [w.var, b.var]), [w.var, b.var]), loss=loss)

    for i in range(STEPS):
        step()
        if i % 3 == 2:
            recorder.flush()
    shutil.copytree(folder / "closed.zarr", folder / "open.zarr")
    recorder.close()
    recording = dtsgd_viz.load_recording(folder / "closed.zarr")
    assert len(recording) == STEPS and recording.hyperparameters.momentum == 0.9
    assert all(len(v) == 0 for v in reference.check_recording(recording).values())  # real updates
    assert not store_status(folder / "open.zarr")[0].closed
    return types.SimpleNamespace(
        open=folder / "open.zarr",
        closed=folder / "closed.zarr",
        npz=recording.save(folder / "run.npz"),
        recording=recording,
    )


def _same(a, b, where="recording") -> list[str]:
    """Where ``a`` and ``b`` differ, field by field (dataclasses, mappings, sequences and
    numpy arrays, dtypes included): an empty list when they are the same."""
    if dataclasses.is_dataclass(a) and not isinstance(a, type):
        if type(a) is not type(b):
            return [f"{where}: {type(a).__name__} vs {type(b).__name__}"]
        return [
            d for f in dataclasses.fields(a) for d in _same(getattr(a, f.name), getattr(b, f.name), f"{where}.{f.name}")
        ]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        same = a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        return [] if same else [f"{where}: {a.dtype}{a.shape} vs {b.dtype}{b.shape}"]
    if isinstance(a, collections.abc.Mapping):
        if not isinstance(b, collections.abc.Mapping) or set(a) != set(b):
            return [f"{where}: keys {sorted(a)} vs {sorted(b) if hasattr(b, 'keys') else b}"]
        return [d for k in a for d in _same(a[k], b[k], f"{where}[{k!r}]")]
    if isinstance(a, (tuple, list)):
        if not isinstance(b, (tuple, list)) or len(a) != len(b):
            return [f"{where}: {a!r} vs {b!r}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _same(x, y, f"{where}[{i}]")]
    return [] if (type(a) is type(b) and a == b) else [f"{where}: {a!r} vs {b!r}"]


def _metadata_files(store) -> list:
    """Every metadata file of the store's single part: the root's and the part's
    ``zarr.json``, ``commit.json`` and each array's ``zarr.json``."""
    part = store / "client-0"
    arrays = sorted(p / "zarr.json" for p in part.iterdir() if p.is_dir())
    assert {p.parent.name for p in arrays} >= {
        "steps",
        "learning_rate",
        "loss",
        "nonfinite",
        "mismatch",
        "dropped_steps",
        "superseded_steps",
        "v0.initial",
        "v0.param",
        "v0.velocity",
        "v0.grad",
        "v1.initial",
        "v1.param",
        "v1.velocity",
        "v1.grad",
    }
    return [store / "zarr.json", part / "zarr.json", part / "commit.json", *arrays]


def _load(path, file, want):
    """``load_recording(path)`` with ``file`` damaged: "caught" when it raises a
    ``RecordingFileError`` naming ``file``, "same" when it returns ``want`` field for field,
    else what went wrong."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the open store is not closed
            got = dtsgd_viz.load_recording(path)
    except RecordingFileError as e:
        return "caught" if str(file) in str(e) else f"an error naming another file: {e}"
    except Exception as e:  # noqa: BLE001 - reported by the test
        return f"{type(e).__name__}: {e}"
    differ = _same(got, want)
    return "same" if not differ else f"loaded wrong values silently: {differ[:3]}"


def _flip_every_byte(path, files, want, stride):
    """Flip one bit of every ``stride``-th byte of each of ``files`` (the bit and the
    first byte vary from file to file), load, put the byte back: ``{outcome: count}``,
    the first few flips that neither raised naming the file nor loaded ``want``, and
    ``(file, byte)`` of each that loaded ``want``."""
    outcomes, bad, same = collections.Counter(), [], []
    for n, file in enumerate(files):
        raw = file.read_bytes()
        try:
            for i in range(n % stride, len(raw), stride):
                flipped = bytearray(raw)
                flipped[i] ^= 1 << ((i + n) % 8)
                file.write_bytes(bytes(flipped))
                outcome = _load(path, file, want)
                outcomes[outcome if outcome in ("caught", "same") else "wrong"] += 1
                if outcome == "same":
                    same.append((file, i))
                if outcome not in ("caught", "same") and len(bad) < 5:
                    bad.append((str(file), i, raw[max(0, i - 20) : i + 20], outcome))
        finally:
            file.write_bytes(raw)
    return outcomes, bad, same


def _strides():
    """Every byte. (A sparser stride flipped a subset of the same bits, the same bit per
    byte, and the tests are slow either way: the full sweep alone checks all it did.)"""
    return [pytest.param(1, id="every-byte")]


@pytest.mark.parametrize("stride", _strides())
@pytest.mark.slow
def test_a_bit_flipped_in_any_metadata_file_of_a_closed_store_is_an_error_naming_it(run, ram_path, stride):
    """A closed store's metadata files are held to the bytes it committed: every flip,
    even one that would leave the values alone, is an error naming the file."""
    store = shutil.copytree(run.closed, ram_path / "closed.zarr")
    files = _metadata_files(store)
    outcomes, bad, _ = _flip_every_byte(store, files, run.recording, stride)
    assert bad == [] and set(outcomes) == {"caught"}, (outcomes, bad)
    assert outcomes["caught"] == sum(len(range(n % stride, f.stat().st_size, stride)) for n, f in enumerate(files))


@pytest.mark.parametrize("stride", _strides())
@pytest.mark.slow
def test_a_bit_flipped_in_the_metadata_of_a_store_being_written_never_loads_wrong_values(run, ram_path, stride):
    """While a run writes, its arrays hold more rows than it committed and grow between
    commits, so an array's length is not held to its committed bytes (only to holding
    the committed steps): a flip there may load, and then loads the values as written."""
    store = shutil.copytree(run.open, ram_path / "open.zarr")
    with pytest.warns(StoreNotClosedWarning):
        assert _same(dtsgd_viz.load_recording(store), run.recording) == []
    outcomes, bad, same = _flip_every_byte(store, _metadata_files(store), run.recording, stride)
    assert bad == [] and outcomes["caught"] > 0, (outcomes, bad)
    for file, i in same:  # each in the length of an array that grows
        length = re.search(rb'"shape": \[\s*(\d+)', file.read_bytes()).span(1)
        assert length[0] <= i < length[1] and not file.parent.name.endswith(".initial"), (file, i, outcomes)


@pytest.mark.slow
def test_the_flips_a_user_found_momentum_and_the_committed_count(run, tmp_path):
    """The flips the issue reports: one bit turns momentum 0.9 into 0.8 in the part's
    header, another n_steps 6 into 4 in commit.json; each is an error naming the file, for
    ``load_recording`` and for ``store_status`` (what a ``LiveMonitor`` polls)."""
    store = shutil.copytree(run.closed, tmp_path / "closed.zarr")
    part = store / "client-0"
    for file, pattern, bit in (
        (part / "zarr.json", rb'"momentum": 0\.(9)', 0x01),
        (part / "commit.json", rb'"n_steps": ?(6)', 0x02),
    ):
        raw = file.read_bytes()
        i = re.search(pattern, raw).start(1)
        flipped = bytearray(raw)
        flipped[i] ^= bit  # "9" -> "8", "6" -> "4"
        file.write_bytes(bytes(flipped))
        assert bytes(flipped[i : i + 1]) in (b"8", b"4")
        with pytest.raises(RecordingFileError, match=re.escape(str(file)) + " is damaged"):
            dtsgd_viz.load_recording(store)
        if file.name == "commit.json":
            with pytest.raises(RecordingFileError, match=re.escape(str(file)) + " is damaged"):
                store_status(store)
        file.write_bytes(raw)
    assert _same(dtsgd_viz.load_recording(store), run.recording) == []


def _previous_format(store):
    """``store`` as dtsgd_viz wrote it before it checksummed metadata: ``commit.json``
    without its checksums, in ``json.dump``'s default form."""
    commit = store / "client-0" / "commit.json"
    record = json.loads(commit.read_text())
    commit.write_text(json.dumps({k: record[k] for k in PREVIOUS_COMMIT_KEYS}))
    return store


def _load_damaged(store):
    """``(message, None)`` of the ``RecordingFileError`` that loading ``store`` raises, or
    ``(None, recording)`` when it loads."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoChecksumsWarning)
            return None, dtsgd_viz.load_recording(store)
    except RecordingFileError as e:
        return str(e), None


def _unread_arrays(written):
    """The arrays whose damage leaves every value alone: a store of the previous format
    never opens an array of no committed rows (``superseded_steps`` of a run never
    resumed); a checksummed one checks every file."""
    if written == "now":
        return set()
    return {"superseded_steps", "skipped_steps", "skipped_loss_scale"}


@pytest.mark.parametrize("written", ["now", "before"])
@pytest.mark.slow
def test_truncated_or_emptied_metadata_names_the_file_and_what_it_holds(run, tmp_path, written):
    store = shutil.copytree(run.closed, tmp_path / "s.zarr")
    if written == "before":
        _previous_format(store)
    for file in _metadata_files(store):
        raw = file.read_bytes()
        for size in (len(raw) // 2, len(raw) - 1, 0):
            file.write_bytes(raw[:size])
            message, loaded = _load_damaged(store)
            if message is None and file.parent.name in _unread_arrays(written):
                assert _same(loaded, run.recording) == []
                continue
            assert message is not None, (file, size)
            assert str(file) in message and "expected the " in message, (size, message)
            assert ("is empty" if size == 0 else "not valid JSON") in message, message
        file.write_bytes(raw)


@pytest.mark.parametrize("written", ["now", "before"])
@pytest.mark.slow
def test_an_unknown_data_type_names_the_array_s_metadata_file(run, tmp_path, written):
    store = shutil.copytree(run.closed, tmp_path / "s.zarr")
    if written == "before":
        _previous_format(store)
    arrays = _metadata_files(store)[3:]
    for file in arrays:
        raw = file.read_bytes()
        data_type = json.loads(raw)["data_type"]
        file.write_bytes(raw.replace(f'"data_type": "{data_type}"'.encode(), b'"data_type": "float31"'))
        assert json.loads(file.read_bytes())["data_type"] == "float31"
        message, loaded = _load_damaged(store)
        if message is None and file.parent.name in _unread_arrays(written):
            assert _same(loaded, run.recording) == []
            file.write_bytes(raw)
            continue
        assert message is not None and str(file) in message, (file, message)
        assert ("is damaged: its crc32 is" if written == "now" else "No Zarr data type found") in message, message
        file.write_bytes(raw)


@pytest.mark.slow
def test_a_store_of_the_previous_format_loads_with_a_note(run, tmp_path):
    store = _previous_format(shutil.copytree(run.closed, tmp_path / "old.zarr"))
    with pytest.warns(
        NoChecksumsWarning,
        match=r"client-0 was written before dtsgd_viz kept "
        r"checksums of its metadata \(commit.json, zarr.json\): it loads, but "
        "damage to them cannot be detected",
    ):
        old = dtsgd_viz.load_recording(store)
    assert _same(old, run.recording) == []
    # a bit flip cannot pass a checksummed commit.json off as one of the previous format
    commit = run.closed / "client-0" / "commit.json"
    renamed = commit.read_bytes().replace(b'"crc32":', b'"crc33":')
    (store / "client-0" / "commit.json").write_bytes(renamed)
    with pytest.raises(
        RecordingFileError,
        match=re.escape(str(store / "client-0" / "commit.json"))
        + r" is damaged: it carries no crc32, yet it holds \['crc33', 'metadata'",
    ):
        dtsgd_viz.load_recording(store)


def _part(path):
    return os.path.join(path, "client-0")


def _edit_metadata(file, **changes):
    """Rewrite the zarr metadata ``file`` with ``changes`` (``length``: its first axis)."""
    meta = json.loads(file.read_text())
    if "length" in changes:
        meta["shape"][0] = changes.pop("length")
    meta.update(changes)
    file.write_text(json.dumps(meta, indent=2))


def test_arrays_that_grew_after_the_last_commit_are_no_false_alarm_but_damage_is_found(tmp_path):
    """The writer grows its arrays (their ``zarr.json`` rewritten) before the commit that
    names the new rows: a reader in between checks what an array's growth leaves alone
    (data type, chunk grid, codecs) and that it holds the committed steps."""
    path = tmp_path / "s.zarr"
    writer = StoreWriter(path, header("full"))
    writer.append(entries(range(1, 4)))
    reader = StoreReader(path)  # one that follows the store, as LiveMonitor does
    status = reader.status()
    assert list(reader.rows("steps", 0, status.n_steps)) == [1, 2, 3]
    grown = path / "client-0" / "loss" / "zarr.json"
    before = grown.read_bytes()
    writer.append(entries(range(4, 24)), commit=False)  # 20 more rows: the arrays double
    assert grown.read_bytes() != before and json.loads(grown.read_bytes())["shape"] == [32]
    with pytest.warns(StoreNotClosedWarning):
        assert list(dtsgd_viz.load_recording(path).steps) == [1, 2, 3]
    assert list(reader.read(status=status).steps) == [1, 2, 3]
    assert list(StoreReader(path).read().steps) == [1, 2, 3]

    _edit_metadata(grown, data_type="float32")  # was float64: not what growing changes
    with pytest.raises(RecordingFileError, match=re.escape(str(grown)) + " is damaged"):
        StoreReader(path).read()
    _edit_metadata(grown, data_type="float64", length=2)  # fewer rows than committed
    with pytest.raises(
        RecordingFileError,
        match=re.escape(str(grown)) + r": array 'loss' "
        r"holds 2 row\(s\), but 3 are committed",
    ):
        StoreReader(path).read()
    _edit_metadata(grown, length=32)
    writer.append(entries(range(4, 24)))  # the commit: its checksums are of the grown files
    writer.close()
    assert list(dtsgd_viz.load_recording(path).steps) == list(range(1, 24))
    _edit_metadata(grown, length=33)  # closed: every byte is held to the commit's
    with pytest.raises(RecordingFileError, match=re.escape(str(grown)) + " is damaged"):
        dtsgd_viz.load_recording(path)


class Killed(Exception):
    """What a run killed at that point would leave."""


def test_a_resume_reopens_a_closed_part_before_it_changes_it(tmp_path, monkeypatch):
    """A reader holds a closed part to the bytes of its metadata; a resumed run grows
    ``superseded_steps`` before its commit, so it first commits the part as reopened
    (still every step, not closed): a reader that read the closed commit, and one that
    reads after a kill right before the resume's commit, see no false alarm."""
    path = tmp_path / "s.zarr"
    writer = StoreWriter(path, header("full"))
    writer.append(entries(range(1, 6)))
    writer.close()
    closed = part_status(_part(path))
    want = dtsgd_viz.load_recording(path)
    superseded = path / "client-0" / "superseded_steps" / "zarr.json"
    before = superseded.read_bytes()

    def killed(self):
        raise Killed

    monkeypatch.setattr(StoreWriter, "_commit", killed)
    with pytest.raises(Killed):
        StoreWriter(path, header("full"), resume_from=2)  # supersedes updates 3..5
    monkeypatch.undo()
    assert superseded.read_bytes() != before  # it grew, and no commit names it
    now = part_status(_part(path))
    assert (now.closed, now.n_steps, now.resumes) == (False, 5, ())
    assert _same(StoreReader(path).read(status=closed), want) == []
    with pytest.warns(StoreNotClosedWarning, match="5 step"):
        assert _same(dtsgd_viz.load_recording(path), want) == []
    _edit_metadata(superseded, codecs=[{"name": "bytes", "configuration": {"endian": "big"}}])
    with (
        pytest.raises(RecordingFileError, match=re.escape(str(superseded)) + " is damaged"),
        pytest.warns(StoreNotClosedWarning),
    ):
        dtsgd_viz.load_recording(path)


# ---- the .npz header ---------------------------------------------------------------------


def _members(npz) -> dict[str, bytes]:
    with zipfile.ZipFile(npz) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def _rezip(members, out):
    """A zip of ``members``, as a tool that copies a file member by member would write it:
    every zip CRC valid for the bytes it holds."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out


@pytest.mark.parametrize("stride", _strides())
@pytest.mark.slow
def test_a_bit_flipped_in_the_npz_header_is_an_error_naming_it(run, ram_path, stride):
    """Flipped in the file, the zip's CRC finds it; flipped in a copy whose zip CRCs were
    made again for the new bytes (the members' crc32 in the header cannot check the
    header itself), the header's own crc32 does. Either way the error names the member,
    unless the flip leaves the values alone (the ``.npy`` header's byte order marks ``|``
    and ``<`` of uint8 are one bit apart)."""
    members = _members(run.npz)
    header_bytes = members["meta.npy"]
    with zipfile.ZipFile(run.npz) as zf:
        info = zf.getinfo("meta.npy")
    raw = pathlib.Path(run.npz).read_bytes()
    local = raw[info.header_offset : info.header_offset + 30]  # the member's local header
    start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    assert raw[start : start + info.compress_size] == header_bytes
    outcomes, bad, same = collections.Counter(), [], []
    target = ram_path / "flipped.npz"
    for i in range(0, len(header_bytes), stride):
        flipped = bytearray(header_bytes)
        flipped[i] ^= 1 << (i % 8)
        for how in ("in the file", "re-zipped"):
            if how == "in the file":
                whole = bytearray(raw)
                whole[start + i] = flipped[i]
                target.write_bytes(bytes(whole))
            else:
                _rezip({**members, "meta.npy": bytes(flipped)}, target)
            outcome = _load(target, "member 'meta.npy'", run.recording)
            outcomes[how, outcome if outcome in ("caught", "same") else "wrong"] += 1
            if outcome == "same":
                same.append(i)
            if outcome not in ("caught", "same") and len(bad) < 5:
                bad.append((how, i, header_bytes[max(0, i - 20) : i + 20], outcome))
    assert bad == [], (outcomes, bad)
    assert outcomes["in the file", "caught"] == len(range(0, len(header_bytes), stride))
    # re-zipped, a flip that loads is in the .npy header, or renames a checksum's key (the
    # file then reads as one written before it, with a NoChecksumsWarning)
    json_start = 10 + int.from_bytes(header_bytes[8:10], "little")  # .npy format 1.0
    assert header_bytes[json_start : json_start + 2] == b'{"'
    keys = [
        range(k + 1, k + n - 1)
        for key in (b'"crc32"', b'"header_crc32"')
        for k, n in [(header_bytes.index(key), len(key))]
    ]
    assert all(i < json_start or any(i in k for k in keys) for i in same), same


@pytest.mark.slow
def test_a_truncated_npz_header_and_one_of_the_previous_version(run, tmp_path):
    members = _members(run.npz)
    meta = np.lib.format.read_array(io.BytesIO(members["meta.npy"]))
    for size in (len(meta) // 2, len(meta) - 1, 0):
        out = io.BytesIO()
        np.lib.format.write_array(out, meta[:size])
        _rezip({**members, "meta.npy": out.getvalue()}, tmp_path / "cut.npz")
        with pytest.raises(RecordingFileError, match="member 'meta.npy'.* expected the recording's JSON header"):
            dtsgd_viz.load_recording(tmp_path / "cut.npz")
    # a file written before the header had its own crc32: its members are checked
    header_value = json.loads(meta.tobytes())
    del header_value["header_crc32"]
    out = io.BytesIO()
    np.lib.format.write_array(out, np.frombuffer(json.dumps(header_value).encode(), np.uint8))
    _rezip({**members, "meta.npy": out.getvalue()}, tmp_path / "previous.npz")
    with pytest.warns(
        NoChecksumsWarning,
        match="previous.npz was written before dtsgd_viz "
        r"kept a checksum of a recording's header: its values are checked, but "
        r"damage to its header \(member 'meta.npy'",
    ):
        assert _same(dtsgd_viz.load_recording(tmp_path / "previous.npz"), run.recording) == []
