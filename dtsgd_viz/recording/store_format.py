"""A store's file format, shared by its writer (``store_writer.py``) and its reader
(``store.py``; its docstring describes the layout and the commit protocol): constants,
small checksummed JSON files written atomically, the checksums a commit record keeps of
the metadata files, and the check that a folder is a store."""

from __future__ import annotations

import json
import os
import re
import zlib

from .checksums import json_crc32, resizable_crc32, with_crc32
from .damage import MetadataChecksums, StrPath, metadata_what, parse_json, verify_metadata
from .recording import RecordingFileError

FORMAT = "dtsgd_viz.store"
VERSION = 1
CHUNK_BYTES = 1 << 20
"""Chunks hold about this many bytes: one chunk per (step, block) for blocks at least
this large (written straight from the host's views of the device buffers), otherwise
as many steps as fit (at most ``MAX_CHUNK_STEPS``)."""
MAX_CHUNK_STEPS = 4096
COLUMNS: tuple[str, ...] = ("steps", "learning_rate", "loss", "nonfinite", "mismatch")
PART_FOLDER = re.compile(r"^client-(\d+)$")
ZARR_TEMPORARY = re.compile(r"^zarr\.[0-9a-f]+\.partial$")


def plain() -> dict:
    """How every array of a store is made: uncompressed (floats barely compress; the
    bytes go straight from the host's views to the file) but each chunk followed by its
    crc32c (``damage.py`` finds a damaged chunk with it), and every chunk written: zarr
    would otherwise scan each chunk for "all zeros" to skip it (and a missing chunk would
    read as zeros)."""
    from zarr.codecs import Crc32cCodec

    return dict(compressors=[Crc32cCodec()], fill_value=0, config={"write_empty_chunks": True})


COMMIT = (
    "the commit record of a store part (n_steps, n_dropped, closed, ...)",
    {"n_steps", "n_dropped", "last_step", "closed", "started", "time", "n_superseded", "resumes", "n_skipped"},
)
WRITING = (
    "the record of the batch a store part is writing (from, steps, first, last)",
    {"from", "steps", "first", "last"},
)
"""What ``commit.json`` and ``writing.json`` hold, and the keys they held before dtsgd_viz
checksummed them: a record without its ``"crc32"`` is read unchecked only if it holds no
other key (one flipped bit can rename that key, but not remove the others)."""
FIXED_SHAPE = re.compile(r"^v\d+\.initial$")
"""The arrays of a part that never grow (every other one is resized as steps come)."""


def write_json(path: StrPath, value: dict) -> None:
    """Write ``value`` to ``path`` as ``checksums.with_crc32`` of it (its canonical JSON
    holding its own crc32), atomically."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(with_crc32(value))
    os.replace(tmp, path)  # readers see the old file or the new one, never a torn one


def read_record(path: StrPath, kind: tuple[str, set[str]]) -> tuple[dict, bool]:
    """The record ``write_json`` wrote to ``path`` (without its ``"crc32"``), and whether
    it was checked: its bytes must be exactly what ``write_json`` writes for its values,
    and its crc32 theirs; a record without one (written before dtsgd_viz kept them) is
    read unchecked if it holds only the keys such records held. ``kind``: ``COMMIT`` or
    ``WRITING``, for the ``RecordingFileError`` that names the file when it is damaged.
    ``FileNotFoundError`` when it is not there."""
    what, unchecked_keys = kind
    with open(path, "rb") as f:
        raw = f.read()
    value = parse_json(path, raw, what)
    if not isinstance(value, dict):
        raise RecordingFileError(f"{path} holds a JSON {type(value).__name__}; expected {what}, a JSON object.")
    if "crc32" not in value:
        unknown = sorted(set(value) - unchecked_keys)
        if unknown:
            raise RecordingFileError(
                f"{path} is damaged: it carries no crc32, yet it holds "
                f"{unknown}, which only a checksummed record holds "
                f"(expected {what})."
            )
        return value, False
    want = value.pop("crc32")
    if with_crc32(value) == raw:
        return value, True
    got = json_crc32(value)
    detail = (
        f"the crc32 of its values is {got:#010x}, it records {f'{want:#010x}' if isinstance(want, int) else repr(want)}"
        if got != want
        else "its bytes are not the JSON dtsgd_viz writes for its values (keys sorted, no spaces): a byte of it changed"
    )
    raise RecordingFileError(f"{path} is damaged: {detail} (expected {what}).")


def part_checksums(part: StrPath) -> MetadataChecksums | None:
    """The checksums the commit record of the part folder ``part`` keeps of the store's
    metadata files (None: the part was written before dtsgd_viz kept them)."""
    commit = os.path.join(part, "commit.json")
    return MetadataChecksums.from_record(commit, read_record(commit, COMMIT)[0])


class MetadataSums:
    """What the writer of one part puts in each commit record about the store's metadata
    files (``damage.MetadataChecksums`` reads it back): the crc32 of the bytes of the root
    group's, the part group's and every array's ``zarr.json`` as they are at that commit,
    and, for each array that grows, the crc32 of its metadata but for its length. Every
    file is read again at each commit (about 20 µs each), so a resize anywhere, by
    any code, is in the next commit; the parsed form is redone only for a changed file."""

    def __init__(self, store: str | os.PathLike[str], client: int):
        self.store, self.folder = os.fspath(store), f"client-{int(client)}"
        self._resizable = {}  # key -> (crc32 of its bytes, crc32 but for its length)

    def record(self) -> dict:
        """``{"metadata": {path: crc32}, "resizable": {path: crc32}}``, paths relative to
        the store."""
        part = os.path.join(self.store, self.folder)
        keys = ["zarr.json", f"{self.folder}/zarr.json"]
        keys += [
            f"{self.folder}/{name}/zarr.json"
            for name in sorted(os.listdir(part))
            if os.path.isfile(os.path.join(part, name, "zarr.json"))
        ]
        files, resizable = {}, {}
        for key in keys:
            path = os.path.join(self.store, *key.split("/"))
            with open(path, "rb") as f:
                raw = f.read()
            files[key] = zlib.crc32(raw)
            parts = key.split("/")  # an array's: its part, its name, "zarr.json"
            if len(parts) == 3 and not FIXED_SHAPE.match(parts[1]):
                known = self._resizable.get(key)
                if known is None or known[0] != files[key]:
                    meta = parse_json(path, raw, metadata_what(key))
                    known = self._resizable[key] = (files[key], resizable_crc32(meta))
                resizable[key] = known[1]
        return {"metadata": files, "resizable": resizable}


def root_attributes(path: StrPath) -> dict | None:
    """The root group's attributes, or None when ``path`` holds no zarr group."""
    file = os.path.join(path, "zarr.json")
    try:
        with open(file, "rb") as f:
            meta = parse_json(file, f.read(), metadata_what("zarr.json"))
    except FileNotFoundError:
        return None
    except OSError as e:
        raise RecordingFileError(f"{file} cannot be read ({e}).") from e
    return meta.get("attributes", {}) if isinstance(meta, dict) else {}


def check_store(path: StrPath) -> None:
    """``path`` must be a dtsgd_viz store of a version this dtsgd_viz reads, its root
    ``zarr.json`` the one each part's commit record keeps the crc32 of (else a
    ``RecordingFileError`` naming it)."""
    attrs = root_attributes(path)
    if attrs is not None and os.path.isdir(path):
        for name in sorted(os.listdir(path)):
            part = os.path.join(path, name)
            if PART_FOLDER.match(name) and os.path.exists(os.path.join(part, "commit.json")):
                sums = part_checksums(part)
                if sums is not None:
                    verify_metadata(path, sums, "zarr.json", grown=lambda: False)
    if attrs is None or attrs.get("format") != FORMAT:
        raise RecordingFileError(
            f"{path} is a folder but not a dtsgd_viz store (no zarr.json with format "
            f"{FORMAT!r}). load_recording reads a .npz file or a folder Recorder(path=...) "
            "wrote."
        )
    if attrs.get("version") != VERSION:
        raise RecordingFileError(
            f"{path} has store version {attrs.get('version')!r}; this dtsgd_viz reads "
            f"version {VERSION}. Upgrade dtsgd_viz to read it."
        )


def stored_dtype(dtype: str) -> str:
    return "uint16" if dtype == "bfloat16" else dtype


HYPERPARAMETERS = ("momentum", "applied_momentum", "nesterov", "weight_decay", "decayed", "ema_overwrite_frequency")


def header_differences(stored: dict, new: dict) -> list[str]:
    """What differs between a store part's header and the header of a run that would
    resume it (``Recording.header`` without ``n_steps``), one phrase per difference."""
    stored, new = json.loads(json.dumps(stored)), json.loads(json.dumps(new))
    out = []
    for key in sorted(set(stored) | set(new)):
        a, b = stored.get(key), new.get(key)
        if a == b or key in ("n_steps", "version"):  # the version follows the dtypes
            continue
        if key == "variables" and [v["name"] for v in a or ()] == [v["name"] for v in b or ()]:
            for va, vb in zip(a or (), b or ()):
                for field in ("shape", "dtype", "layout"):
                    if va.get(field) != vb.get(field):
                        out.append(
                            f"the {field} of variable {va['name']!r} (the store has "
                            f"{va.get(field)}, this run {vb.get(field)})"
                        )
            continue
        what = {
            "variables": "the variables",
            "part": "the client's part",
            "mesh": "the mesh",
            "kinds": "the recorded kinds",
            "mode": "the mode",
        }.get(key, f"the hyperparameter {key!r}" if key in HYPERPARAMETERS else repr(key))
        if key == "variables":
            a, b = [v["name"] for v in a or ()], [v["name"] for v in b or ()]
        out.append(f"{what} (the store has {a}, this run {b})")
    return out
