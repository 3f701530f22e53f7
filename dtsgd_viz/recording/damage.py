"""Finding damaged recordings: the checksums of a ``.npz`` file's members and of a store's
chunks, and what ``load_recording(path, on_damage=...)`` does when one does not match.

Every array ``Recording.save`` writes has its crc32 in the file's JSON header
(``"crc32": {member: value}``); every chunk a store writes ends with its crc32c (zarr v3's
``crc32c`` codec, ``store_format.plain``). A damaged, truncated or missing chunk raises
``ChunkDamageError`` (a ``RecordingFileError``) naming the array and the chunk's file;
``on_damage="truncate"`` keeps the steps before it instead (``store.StoreReader.read``).
Files and stores written before there were checksums load with a ``NoChecksumsWarning``.
Plain data: numpy, zlib, zarr.
"""

from __future__ import annotations

import itertools
import math
import os

import numpy as np

from .checksums import crc32
from .recording import RecordingFileError

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

    def __init__(self, message, array, chunk, row):
        super().__init__(message)
        self.array, self.chunk, self.row = array, chunk, row


def check_on_damage(on_damage) -> str:
    if on_damage not in ON_DAMAGE:
        raise ValueError(f"on_damage must be one of {list(ON_DAMAGE)}. "
                         f"Received: on_damage={on_damage!r}.")
    return on_damage


# ---- .npz members ------------------------------------------------------------------------


def verify_members(path, meta, arrays, on_damage="raise") -> None:
    """Check every member against the crc32 the header records (``RecordingFileError``
    naming the first that does not match); a header without checksums (a file written
    before them) is a ``NoChecksumsWarning``. A ``.npz`` member holds every step, so
    ``on_damage="truncate"`` cannot keep part of it: damage is always an error."""
    sums = meta.get("crc32") if isinstance(meta, dict) else None
    if sums is None:
        import warnings
        warnings.warn(
            f"{path} was written before dtsgd_viz kept checksums: it loads, but damage to "
            "its values cannot be detected. Save it again (Recording.save) to add them.",
            NoChecksumsWarning, stacklevel=4)
        return
    tail = (" (on_damage='truncate' cannot help: each member of a .npz file holds every "
            "step)" if on_damage == "truncate" else "")
    for name, want in sums.items():
        if name not in arrays:
            raise RecordingFileError(f"{path}: member {name + '.npy'!r}, which its header "
                                     f"lists, is missing.{tail}")
        got = crc32(arrays[name])
        if got != want:
            raise RecordingFileError(
                f"{path}: member {name + '.npy'!r} is damaged: its crc32 is {got:#010x}, "
                f"its header recorded {int(want):#010x}.{tail}")


# ---- store chunks ------------------------------------------------------------------------


def has_checksums(array) -> bool:
    """Whether a zarr array's chunks carry a crc32c (a store written before them not)."""
    return any(getattr(c, "to_dict", lambda: {})().get("name") == "crc32c"
               for c in array.metadata.codecs)


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
        f"{(coords[0] + 1) * array.chunks[0] - 1}) is {what}.", name, chunk, row)


def missing_chunk(part, name, array, start, stop) -> ChunkDamageError | None:
    """The first chunk of rows ``start:stop`` whose file is gone (zarr would read the fill
    value for it: every chunk a store writes is written, even all zeros)."""
    for coords in _chunk_coords(array, start, stop):
        key = array.metadata.encode_chunk_key(tuple(coords))
        if not os.path.exists(os.path.join(part, name, *key.split("/"))):
            return _damage(part, name, array, coords, start, "missing")
    return None


def read_rows(part, name, array, start, stop) -> np.ndarray:
    """``array[start:stop]``, or ``ChunkDamageError`` for the first damaged chunk."""
    if stop <= start:
        return array[start:stop]
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
                raise _damage(part, name, array, coords, start,
                              f"damaged ({type(e).__name__}: {e})") from e
        raise RecordingFileError(f"{part}: array {name!r} cannot be read ({error}).") from error
