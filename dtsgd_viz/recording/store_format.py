"""A store's file format, shared by its writer (``store_writer.py``) and its reader
(``store.py``; its docstring describes the layout and the commit protocol): constants,
small JSON files written atomically, and the check that a folder is a store."""

from __future__ import annotations

import json
import os
import re

from .recording import RecordingFileError

FORMAT = "dtsgd_viz.store"
VERSION = 1
CHUNK_BYTES = 1 << 20
"""Chunks hold about this many bytes: one chunk per (step, block) for blocks at least
this large (written straight from the host's views of the device buffers), otherwise
as many steps as fit (at most ``MAX_CHUNK_STEPS``)."""
MAX_CHUNK_STEPS = 4096
COLUMNS = ("steps", "learning_rate", "loss", "nonfinite", "mismatch")
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


def write_json(path, value) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)  # readers see the old file or the new one, never a torn one


def read_json(path):
    with open(path) as f:
        return json.load(f)


def root_attributes(path) -> dict | None:
    """The root group's attributes, or None when ``path`` holds no zarr group."""
    try:
        meta = read_json(os.path.join(path, "zarr.json"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RecordingFileError(f"{path}: unreadable zarr.json ({e}).") from e
    return meta.get("attributes", {}) if isinstance(meta, dict) else {}


def check_store(path) -> None:
    attrs = root_attributes(path)
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


HYPERPARAMETERS = ("momentum", "applied_momentum", "nesterov", "weight_decay", "decayed",
                   "ema_overwrite_frequency")


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
            for va, vb in zip(a, b):
                for field in ("shape", "dtype", "layout"):
                    if va.get(field) != vb.get(field):
                        out.append(f"the {field} of variable {va['name']!r} (the store has "
                                   f"{va.get(field)}, this run {vb.get(field)})")
            continue
        what = {"variables": "the variables", "part": "the client's part",
                "mesh": "the mesh", "kinds": "the recorded kinds", "mode": "the mode"}.get(
                    key, f"the hyperparameter {key!r}" if key in HYPERPARAMETERS else repr(key))
        if key == "variables":
            a, b = [v["name"] for v in a or ()], [v["name"] for v in b or ()]
        out.append(f"{what} (the store has {a}, this run {b})")
    return out
