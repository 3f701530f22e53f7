"""The crc32 of each member of a ``.npz`` recording, which ``Recording.save`` writes into
the file's JSON header (``"crc32": {member: value}``) and ``damage.verify_members``
checks at load. numpy and zlib only."""

from __future__ import annotations

import zlib

import numpy as np


def crc32(array) -> int:
    """The crc32 of ``array``'s values as bytes in C order (how the member is stored does
    not matter: a Fortran-ordered ``.npy`` gives the same)."""
    flat = np.ascontiguousarray(array).reshape(-1)
    return zlib.crc32(flat.view(np.uint8)) if flat.size else 0


def member_checksums(arrays) -> dict[str, int]:
    """``{member: crc32}`` for the header of the file holding ``arrays``."""
    return {name: crc32(a) for name, a in arrays.items() if name != "meta"}
