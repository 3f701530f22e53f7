"""One ``load_recording`` for every format: a ``.npz`` file, a store folder, or the
parts of a multi-client run (a list of paths or a folder of ``.npz`` files)."""

from __future__ import annotations

import os

from .merge import MergeError, merge_recordings
from .npz import read_npz
from .recording import Recording


def is_parts_folder(path) -> bool:
    """Whether ``path`` is a folder holding ``.npz`` recordings (the parts of one run)."""
    return os.path.isdir(path) and any(f.endswith(".npz") for f in os.listdir(path))


def part_paths(folder) -> list[str]:
    """The ``.npz`` files of ``folder``, sorted."""
    folder = os.fspath(folder)
    return [os.path.join(folder, f) for f in sorted(os.listdir(folder)) if f.endswith(".npz")]


def load_parts(paths) -> Recording:
    """``merge_recordings`` of the files ``paths`` (a list, or a folder of ``.npz``)."""
    if not isinstance(paths, (list, tuple)):
        folder, paths = os.fspath(paths), part_paths(paths)
        if not paths:
            raise MergeError(f"{folder} holds no .npz recording parts.")
    return merge_recordings(paths)


def load_recording(path) -> Recording:
    """Read a file written by ``Recording.save``. Does not import TensorFlow.

    Raises ``RecordingFileError`` (a ``ValueError``) for truncated, corrupted or
    foreign files, for versions newer than this library reads, and for dtypes outside
    ``DTYPES``. bfloat16 values come back as ``ml_dtypes.bfloat16`` arrays.

    A list of paths, or a folder of ``.npz`` files, is the parts the clients of a
    multi-client run saved: they are merged into one recording (``merge_recordings``).
    """
    if isinstance(path, (list, tuple)) or is_parts_folder(path):
        return load_parts(path)
    path = os.fspath(path)
    if os.path.isdir(path):  # a store that Recorder(path=...) streamed (store.py)
        from .store import load_store
        return load_store(path)
    return read_npz(path)
