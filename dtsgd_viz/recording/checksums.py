"""The crc32 of each member of a ``.npz`` recording, which ``Recording.save`` writes into
the file's JSON header (``"crc32": {member: value}``, the header's own in ``"header_crc32"``)
and ``damage.verify_members`` checks at load; and the crc32 of the JSON files of a store
(``store_format``). numpy, json and zlib only."""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike


def crc32(array: ArrayLike) -> int:
    """The crc32 of ``array``'s values as bytes in C order (how the member is stored does
    not matter: a Fortran-ordered ``.npy`` gives the same)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return zlib.crc32(flat.view(np.uint8).data) if flat.size else 0


def member_checksums(arrays: Mapping[str, ArrayLike]) -> dict[str, int]:
    """``{member: crc32}`` for the header of the file holding ``arrays``."""
    return {name: crc32(a) for name, a in arrays.items() if name != "meta"}


def canonical_json(value: Any) -> bytes:
    """``value`` as the bytes a checksummed JSON file holds (a store's ``commit.json`` and
    ``writing.json``, a ``.npz`` file's header): keys sorted, no spaces, so the bytes
    follow from the values and a reader can ask for exactly them."""
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def json_crc32(value: Any) -> int:
    """The crc32 of ``canonical_json(value)``."""
    return zlib.crc32(canonical_json(value))


def with_crc32(value: dict, key: str = "crc32") -> bytes:
    """``canonical_json`` of ``value`` with ``key`` holding the crc32 of the rest."""
    return canonical_json({**value, key: json_crc32(value)})


def checksummed_header(meta: dict, arrays: Mapping[str, ArrayLike]) -> bytes:
    """The bytes of a ``.npz`` file's JSON header: ``meta`` with ``"crc32"``, the crc32
    of each member of ``arrays``, and ``"header_crc32"``, that of the header itself (its
    ``canonical_json`` without that entry)."""
    meta = {**meta, "crc32": member_checksums(arrays)}
    return with_crc32(meta, "header_crc32")


def resizable_crc32(metadata: dict) -> int:
    """The crc32 of a zarr array's metadata (its parsed ``zarr.json``) with the length
    of its first axis left out: what stays the same while the array grows."""
    shape = metadata.get("shape")
    if isinstance(shape, list) and shape:
        metadata = {**metadata, "shape": [None, *shape[1:]]}
    return json_crc32(metadata)
