"""One ``load_recording`` for every format: a ``.npz`` file, a store folder, or the
parts of a multi-client run (a list of paths or a folder of ``.npz`` files)."""

from __future__ import annotations

import os

from .damage import StrPath, check_on_damage
from .merge import MergeError, merge_recordings
from .npz import read_npz
from .recording import Recording


def is_parts_folder(path: StrPath) -> bool:
    """Whether ``path`` is a folder holding ``.npz`` recordings (the parts of one run)."""
    return os.path.isdir(path) and any(f.endswith(".npz") for f in os.listdir(path))


def part_paths(folder: StrPath) -> list[str]:
    """The ``.npz`` files of ``folder``, sorted."""
    folder = os.fspath(folder)
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".npz")]


def load_parts(paths: StrPath | list[StrPath] | tuple[StrPath, ...]) -> Recording:
    """``merge_recordings`` of the files ``paths`` (a list, or a folder of ``.npz``)."""
    if not isinstance(paths, (list, tuple)):
        folder, found = os.fspath(paths), part_paths(paths)
        if not found:
            raise MergeError(f"{folder} holds no .npz recording parts.")
        return merge_recordings(found)
    return merge_recordings(paths)


def load_recording(path: StrPath | list[StrPath] | tuple[StrPath, ...], on_damage: str = "raise") -> Recording:
    """Read a file written by ``Recording.save``. Does not import TensorFlow.

    Raises ``RecordingFileError`` (a ``ValueError``) for truncated, corrupted or
    foreign files, for versions newer than this library reads, and for dtypes outside
    ``DTYPES``. bfloat16 values come back as ``ml_dtypes.bfloat16`` arrays.

    A list of paths, or a folder of ``.npz`` files, is the parts the clients of a
    multi-client run saved: they are merged into one recording (``merge_recordings``;
    parts recording different steps are refused). A store folder's parts are cut to the
    updates every client committed first: a run killed, or still writing, between two
    clients' commits loads those and warns (``store.PartialCommitWarning``) naming the
    updates only some clients committed.

    Checksums (``damage.py``): every member of a ``.npz`` file and every chunk of a store
    is checked; a damaged one raises ``RecordingFileError`` naming the member, or the
    array and the chunk's file. ``on_damage="truncate"`` loads a store's steps before
    its first damaged chunk instead and warns (``RecordingDamagedWarning``) which it left
    out (a ``.npz`` member holds every step: damage there is always an error). Files
    and stores written before checksums load with a ``NoChecksumsWarning``.
    """
    check_on_damage(on_damage)
    if isinstance(path, (list, tuple)) or is_parts_folder(path):
        return load_parts(path)
    path = os.fspath(path)
    if os.path.isdir(path):  # a store that Recorder(path=...) streamed (store.py)
        from .store import load_store

        return load_store(path, on_damage)
    return read_npz(path, on_damage)
