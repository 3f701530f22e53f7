"""Finding damaged recordings: the checksums of a ``.npz`` file's members and header, of a
store's chunks and of its metadata files, and what ``load_recording(path, on_damage=...)``
does when one does not match.

Every array ``Recording.save`` writes has its crc32 in the file's JSON header
(``"crc32": {member: value}``) and the header its own (``"header_crc32"``); every chunk
a store writes ends with its crc32c (zarr v3's ``crc32c`` codec, ``store_format.plain``).
A damaged, truncated or missing chunk raises ``ChunkDamageError`` (a
``RecordingFileError``) naming the array and the chunk's file; ``on_damage="truncate"``
keeps the steps before it instead (``store.StoreReader.read``). A store's JSON files are
checked against the crc32 its commit record keeps of each (``MetadataChecksums``,
``verify_metadata``): damage there is always a ``RecordingFileError`` naming the file.
Files and stores written before there were checksums load with a ``NoChecksumsWarning``.
Plain data: numpy, zlib, zarr.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
import os
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .checksums import canonical_json, crc32, json_crc32, resizable_crc32
from .recording import READS, RecordingFileError

StrPath = str | os.PathLike[str]
"""A file or folder path, as the functions here take it."""

ON_DAMAGE = ("raise", "truncate")


class NoChecksumsWarning(UserWarning):
    """A recording file or store written before dtsgd_viz kept checksums: it loads, but
    damage to its values cannot be detected."""


class RecordingDamagedWarning(UserWarning):
    """``load_recording(path, on_damage="truncate")`` found damaged data and left out the
    steps from the damaged chunk on; the warning names the chunk and the steps."""


class ChunkDamageError(RecordingFileError):
    """A chunk of a store array that is missing, truncated, or fails its checksum.
    ``array``: the array's name; ``chunk``: its file; ``row``: the first step row
    (committed-step index) it holds."""

    def __init__(self, message: str, array: str, chunk: str, row: int):
        super().__init__(message)
        self.array, self.chunk, self.row = array, chunk, row


def check_on_damage(on_damage: str) -> str:
    if on_damage not in ON_DAMAGE:
        raise ValueError(f"on_damage must be one of {list(ON_DAMAGE)}. Received: on_damage={on_damage!r}.")
    return on_damage


# ---- .npz members ------------------------------------------------------------------------


def verify_header(path: StrPath, raw: bytes, meta: Any) -> None:
    """Check a ``.npz`` file's JSON header (member ``meta.npy``; ``raw``: its bytes,
    ``meta``: their parsed value) against the crc32 it records of itself
    (``"header_crc32"``, ``checksums.checksummed_header``): its bytes must be exactly the
    canonical JSON of its values, and the crc32 of the rest the one recorded; else a
    ``RecordingFileError`` naming the member. A header without it, or without the members'
    ``"crc32"`` (a file written before they were kept), is left to ``verify_members``. A
    header of a format version this dtsgd_viz does not read is refused as such: a newer
    writer may checksum it otherwise."""
    want = meta.get("header_crc32") if isinstance(meta, dict) and "crc32" in meta else None
    if want is None:
        return
    if raw != canonical_json(meta):
        problem = (
            "its bytes are not the JSON dtsgd_viz wrote for its values (keys sorted, no spaces): a byte of it changed"
        )
    else:
        got = json_crc32({k: v for k, v in meta.items() if k != "header_crc32"})
        if got == want:
            return
        problem = f"its crc32 is {got:#010x}, it records {f'{want:#010x}' if isinstance(want, int) else repr(want)}"
    version = meta.get("version")
    if version not in READS:
        raise RecordingFileError(
            f"{path} has recording format version {version!r}; this dtsgd_viz reads version "
            f"{' or '.join(map(str, READS))}. Upgrade dtsgd_viz to read it, unless its header "
            f"(member 'meta.npy') is damaged: {problem}."
        )
    raise RecordingFileError(f"{path}: member 'meta.npy' (the recording's JSON header) is damaged: {problem}.")


def verify_members(path: StrPath, meta: Any, arrays: Mapping[str, np.ndarray], on_damage: str = "raise") -> None:
    """Check every member against the crc32 the header records (``RecordingFileError``
    naming the first that does not match); a header without checksums (a file written
    before them) is a ``NoChecksumsWarning``, as is one without its own (written before
    ``verify_header`` had one to check). A ``.npz`` member holds every step, so
    ``on_damage="truncate"`` cannot keep part of it: damage is always an error."""
    import warnings

    sums = meta.get("crc32") if isinstance(meta, dict) else None
    if sums is None:
        warnings.warn(
            f"{path} was written before dtsgd_viz kept checksums: it loads, but damage to "
            "its values cannot be detected. Save it again (Recording.save) to add them.",
            NoChecksumsWarning,
            stacklevel=4,
        )
        return
    if "header_crc32" not in meta:
        warnings.warn(
            f"{path} was written before dtsgd_viz kept a checksum of a recording's header: "
            "its values are checked, but damage to its header (member 'meta.npy': the "
            "hyperparameters, the mesh, the variables) cannot be detected. Save it again "
            "(Recording.save) to add it.",
            NoChecksumsWarning,
            stacklevel=4,
        )
    if not isinstance(sums, dict):
        raise RecordingFileError(
            f"{path}: member 'meta.npy' (the recording's JSON header) is "
            f'damaged: its "crc32" is {sums!r}, not a table of checksums.'
        )
    tail = (
        " (on_damage='truncate' cannot help: each member of a .npz file holds every step)"
        if on_damage == "truncate"
        else ""
    )
    for name, want in sums.items():
        if name not in arrays:
            raise RecordingFileError(f"{path}: member {name + '.npy'!r}, which its header lists, is missing.{tail}")
        got = crc32(arrays[name])
        if got != want:
            raise RecordingFileError(
                f"{path}: member {name + '.npy'!r} is damaged: its crc32 is {got:#010x}, "
                f"its header recorded {int(want):#010x}.{tail}"
            )


# ---- store chunks ------------------------------------------------------------------------


def has_checksums(array: Any) -> bool:
    """Whether a zarr array's chunks carry a crc32c (a store written before them not)."""
    return any(getattr(c, "to_dict", lambda: {})().get("name") == "crc32c" for c in array.metadata.codecs)


def _chunk_coords(array, start, stop):
    """The grid coordinates of the chunks holding rows ``start:stop``, row chunks first."""
    chunks = array.chunks
    grid = [range(start // chunks[0], -(-stop // chunks[0]))]
    grid += [range(math.ceil(d / c)) for d, c in zip(array.shape[1:], chunks[1:])]
    return itertools.product(*grid)


def _damage(part, name, array, coords, start, what) -> ChunkDamageError:
    key = array.metadata.encode_chunk_key(tuple(coords))
    chunk = os.path.join(part, name, *key.split("/"))
    row = max(start, coords[0] * array.chunks[0])
    return ChunkDamageError(
        f"{part}: chunk {chunk} of array {name!r} (step rows {row}.."
        f"{(coords[0] + 1) * array.chunks[0] - 1}) is {what}.",
        name,
        chunk,
        row,
    )


def missing_chunk(part: StrPath, name: str, array: Any, start: int, stop: int) -> ChunkDamageError | None:
    """The first chunk of rows ``start:stop`` whose file is gone (zarr would read the fill
    value for it: every chunk a store writes is written, even all zeros)."""
    for coords in _chunk_coords(array, start, stop):
        key = array.metadata.encode_chunk_key(tuple(coords))
        if not os.path.exists(os.path.join(part, name, *key.split("/"))):
            return _damage(part, name, array, coords, start, "missing")
    return None


def read_rows(part: StrPath, name: str, array: Any, start: int, stop: int) -> np.ndarray:
    """``array[start:stop]``, or ``ChunkDamageError`` for the first damaged chunk; an
    array shorter than ``stop`` (the steps committed) is a ``RecordingFileError`` naming
    its metadata file."""
    if stop <= start:
        return array[start:stop]
    if array.shape[0] < stop:
        raise RecordingFileError(
            f"{os.path.join(part, name, 'zarr.json')}: array {name!r} holds "
            f"{array.shape[0]} row(s), but {stop} are committed: its metadata is damaged."
        )
    gone = missing_chunk(part, name, array, start, stop)
    if gone is not None:
        raise gone
    try:
        return array[start:stop]
    except Exception as error:  # noqa: BLE001 - zarr's decoders raise several kinds
        for coords in _chunk_coords(array, start, stop):
            try:
                array.blocks[tuple(coords)]
            except Exception as e:  # noqa: BLE001
                raise _damage(part, name, array, coords, start, f"damaged ({type(e).__name__}: {e})") from e
        raise RecordingFileError(f"{part}: array {name!r} cannot be read ({error}).") from error


# ---- store metadata ----------------------------------------------------------------------


def parse_json(path: StrPath, raw: bytes, what: str) -> Any:
    """The value of the JSON ``raw`` (the bytes of ``path``), or a ``RecordingFileError``
    naming the file and ``what`` it should hold."""
    if not raw:
        raise RecordingFileError(f"{path} is empty: expected {what}.")
    try:
        return json.loads(raw.decode())
    except UnicodeDecodeError as e:
        reason = f"byte {e.start} is not UTF-8"
    except json.JSONDecodeError as e:
        reason = f"{e.msg} at byte {e.pos}"
    raise RecordingFileError(
        f"{path} is not valid JSON ({reason}, in {len(raw)} bytes: truncated or damaged); expected {what}."
    )


def metadata_what(key: str) -> str:
    """What the metadata file ``key`` (a path relative to the store) holds, in words."""
    parts = key.split("/")
    if len(parts) == 1:
        return "the store's root zarr group, with attributes format 'dtsgd_viz.store'"
    if len(parts) == 2:
        return f"the zarr group of part {parts[0]}, holding the recording's header"
    return f"the zarr metadata of array {parts[1]!r} of part {parts[0]} (its shape, data type, chunk grid and codecs)"


@dataclasses.dataclass(frozen=True)
class MetadataChecksums:
    """What a store part's commit record keeps of the store's metadata files, each by its
    path relative to the store (``"zarr.json"``, ``"client-0/zarr.json"``,
    ``"client-0/steps/zarr.json"``, ...). ``commit``: the record's file; ``files``: the
    crc32 of each file's bytes at that commit; ``resizable``: for each array that grows,
    the crc32 of its metadata with its length left out (``checksums.resizable_crc32``)."""

    commit: str
    files: tuple[tuple[str, int], ...]
    resizable: tuple[tuple[str, int], ...] = ()

    @classmethod
    def from_record(cls, commit: str, record: dict) -> MetadataChecksums | None:
        """The checksums of the commit record ``record`` (read from the file ``commit``),
        or None when it keeps none (a part written before dtsgd_viz kept them)."""
        if "metadata" not in record:
            return None
        try:
            return cls(
                commit,
                tuple(sorted((str(k), int(v)) for k, v in record["metadata"].items())),
                tuple(sorted((str(k), int(v)) for k, v in record.get("resizable", {}).items())),
            )
        except (AttributeError, TypeError, ValueError) as e:
            raise RecordingFileError(
                f"{commit}: its metadata checksums are unreadable ({type(e).__name__}: {e})."
            ) from e


def verify_metadata(
    store: StrPath, sums: MetadataChecksums, key: str, grown: Callable[[], bool] = lambda: True
) -> None:
    """Check the metadata file ``key`` of the store at ``store`` against ``sums``: its
    bytes must be the ones the commit recorded, or, for an array that grows, hold the
    same metadata but for its length when ``grown()`` says it may have grown since that
    commit (the part is open, or a resumed run reopened it). Anything else is a
    ``RecordingFileError`` naming the file and what it holds. (Whether a grown array
    still holds the committed steps is checked where they are read: ``read_rows``.)"""
    path = os.path.join(os.fspath(store), *key.split("/"))
    what = metadata_what(key)
    want = dict(sums.files).get(key)
    if want is None:
        raise RecordingFileError(
            f"{path}: {sums.commit} keeps no checksum of it, yet it "
            f"should hold {what}: the part's files do not match its "
            "commit record."
        )
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        raise RecordingFileError(f"{path} is missing: expected {what}.") from None
    except OSError as e:
        raise RecordingFileError(f"{path} cannot be read ({e}): expected {what}.") from e
    got = zlib.crc32(raw)
    if got == want:
        return
    meta = parse_json(path, raw, what)
    fixed = dict(sums.resizable).get(key)
    if fixed is not None and isinstance(meta, dict) and resizable_crc32(meta) == fixed and grown():
        return
    raise RecordingFileError(
        f"{path} is damaged: its crc32 is {got:#010x}, {sums.commit} recorded {want:#010x} (it holds {what})."
    )


def verify_part(store: StrPath, sums: MetadataChecksums, grown: Callable[[], bool] = lambda: True) -> None:
    """``verify_metadata`` of every metadata file ``sums`` names (``grown`` asked at most
    once)."""
    answer = []

    def grown_once():
        if not answer:
            answer.append(bool(grown()))
        return answer[0]

    for key, _ in sums.files:
        verify_metadata(store, sums, key, grown_once)
