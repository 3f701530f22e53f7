"""A recording streamed to disk while it is made: an appendable, chunked zarr v3 store.

``Recorder(path="run.zarr")`` writes every batch of steps that reaches the host (at each
flush) into the store, commits it, and keeps nothing of it in memory.
``load_recording("run.zarr")`` reads it back without TensorFlow, while the run is still
writing, after it closed the store, or after it was killed::

    rec = dtsgd_viz.Recorder(path="run.zarr")
    ...                                            # train; rec.close() at the end
    r = dtsgd_viz.load_recording("run.zarr")       # every committed step, in order
    dtsgd_viz.store.store_status("run.zarr")       # how far each part got, closed or not

Layout of the folder (a zarr v3 group; each client of a run writes its own part, a
single process writes ``client-0``)::

    run.zarr/zarr.json           root group, attributes {"format": "dtsgd_viz.store", ...}
    run.zarr/client-0/zarr.json  group; attributes: the recording's header
                                 (``Recording.header``: mesh, variables, kinds, mode, ...)
    run.zarr/client-0/commit.json  {"n_steps", "n_dropped", "last_step", "closed",
                                    "n_superseded", "resumes", ...}
    run.zarr/client-0/writing.json the batch being written (first/last update, its rows)
    run.zarr/client-0/steps, learning_rate, loss, nonfinite, mismatch, dropped_steps,
                      superseded_steps
    run.zarr/client-0/v0.initial, v0.param, v0.velocity, v0.grad   (full mode)
                      v0.param.stats, ...                           (stats mode)

The arrays are named like the members of a ``.npz`` recording file and hold the same
values (bfloat16 as uint16 bit patterns, stats as the float32 the host keeps them in).

Commit protocol: a batch of k steps after N committed ones is written as (1)
``writing.json`` names it, (2) every per-step array gets its rows N..N+k-1 (arrays grow
by doubling, so they may be longer than what was committed), (3) ``commit.json`` is
replaced, with ``os.replace``, by one saying ``n_steps: N + k``. Readers read
``commit.json`` first and trust only its counts, so a batch the writer never finished
(a run killed mid-write) is never read as data; ``writing.json`` lets the reader say
which updates it left out. Rows of committed steps are never changed by later batches
except where a small chunk is shared, and zarr (>= 3.1.3) replaces each chunk file
atomically, so they survive a kill at any point (a kill, not a power cut: nothing is
fsync'ed). ``close()`` trims the arrays to the committed length and commits with
``closed: true``.

Checksums: every chunk ends with its crc32c (zarr's ``crc32c`` codec on every array), so
a damaged, truncated or missing chunk is found when it is read (``damage.py``):
``load_recording`` raises a ``RecordingFileError`` naming the array and the chunk's file,
or with ``on_damage="truncate"`` keeps the steps before that chunk and warns
(``RecordingDamagedWarning``). Stores written before checksums load with a
``NoChecksumsWarning``.

Resuming (``Recorder(path=..., resume=True)``, ``StoreWriter(resume_from=iteration)``):
a run restored from a checkpoint at ``iteration`` continues its part. The steps committed
after ``iteration`` are appended to ``superseded_steps``, then one commit sets ``n_steps``
to the steps kept (those up to ``iteration``) and adds ``{"from", "kept", "superseded",
"time"}`` to ``resumes``; the new run's batches are then written over the superseded
rows. So the committed count can drop: a reader that follows the store (``LiveMonitor``)
drops its rows past ``kept`` of each resume it had not seen.
"""

from __future__ import annotations

import dataclasses
import os
import typing
import warnings

import numpy as np

from .damage import (ChunkDamageError, NoChecksumsWarning, RecordingDamagedWarning,
                     check_on_damage, has_checksums, read_rows)
from .merge import merge_recordings
from .npz import from_arrays
from .recording import Recording, RecordingFileError, block_stats
from .store_format import (CHUNK_BYTES, COLUMNS, FORMAT, MAX_CHUNK_STEPS, PART_FOLDER, VERSION,
                           check_store, read_json)
from .store_writer import StoreWriter

__all__ = [
    "CHUNK_BYTES", "FORMAT", "MAX_CHUNK_STEPS", "VERSION", "ChunkDamageError",
    "NoChecksumsWarning", "PartStatus", "RecordingDamagedWarning", "Resume",
    "StoreNotClosedWarning", "StoreReader", "StoreWriter", "load_store", "part_paths",
    "part_status", "store_status",
]


class StoreNotClosedWarning(UserWarning):
    """``load_recording`` of a store whose run did not close it (still running, or
    stopped without ``Recorder.close()``): it says after which update it stopped."""


class Resume(typing.NamedTuple):
    """A run that continued a part from iteration ``iteration`` (restored from a
    checkpoint): it kept the first ``kept`` committed steps and superseded the
    ``superseded`` after them, at ``time``."""

    iteration: int
    kept: int
    superseded: int
    time: float


@dataclasses.dataclass(frozen=True)
class PartStatus:
    """How far one client's part of a store got (read from its ``commit.json``).

    ``pending``: ``(steps, first update, last update)`` of a batch written after the
    last commit and never committed (being written now, or cut off by a kill), or None.
    ``resumes``: each ``Resume`` of the part, oldest first; ``n_superseded``: how many
    steps they superseded in all.
    """

    path: str
    client: int
    n_steps: int
    n_dropped: int
    last_step: int | None
    closed: bool
    started: float
    time: float
    pending: tuple[int, int, int] | None = None
    n_superseded: int = 0
    resumes: tuple[Resume, ...] = ()

    def __str__(self) -> str:
        where = (f"stopped after update {self.last_step}" if self.last_step is not None
                 else "stopped before its first update")
        text = f"{self.path}: {self.n_steps} step(s) committed, {where}"
        if self.resumes:
            r = self.resumes[-1]
            text += (f" (resumed from update {r.iteration}, superseding {r.superseded} "
                     "step(s) recorded after it)")
        if self.closed:
            return text + "; the run closed the store."
        text += ("; the run did not close the store (it is still running, or it was "
                 "stopped without Recorder.close())")
        if self.pending is not None:
            k, first, last = self.pending
            text += (f"; a batch of {k} step(s) (updates {first}..{last}) written after it "
                     "was never committed and is left out")
        return text + "."


def part_paths(path) -> list[str]:
    """The parts of the store at ``path`` that committed at least once, by client id."""
    path = os.fspath(path)
    check_store(path)
    found = []
    for name in os.listdir(path):
        m = PART_FOLDER.match(name)
        if m and os.path.exists(os.path.join(path, name, "commit.json")):
            found.append((int(m.group(1)), os.path.join(path, name)))
    return [p for _, p in sorted(found)]


def part_status(part) -> PartStatus:
    """The committed state of one part folder (``client-<id>``)."""
    try:
        c = read_json(os.path.join(part, "commit.json"))
    except (OSError, ValueError) as e:
        raise RecordingFileError(f"{part}: unreadable commit.json ({e}).") from e
    pending = None
    try:
        w = read_json(os.path.join(part, "writing.json"))
        if w["from"] >= c["n_steps"] and w["steps"]:
            pending = (int(w["steps"]), int(w["first"]), int(w["last"]))
    except (OSError, ValueError, KeyError):
        pass
    client = int(PART_FOLDER.match(os.path.basename(os.path.normpath(part))).group(1))
    resumes = tuple(Resume(int(r["from"]), int(r["kept"]), int(r["superseded"]),
                           float(r["time"])) for r in c.get("resumes", ()))
    return PartStatus(part, client, int(c["n_steps"]), int(c["n_dropped"]), c["last_step"],
                      bool(c["closed"]), float(c["started"]), float(c["time"]), pending,
                      int(c.get("n_superseded", 0)), resumes)


def store_status(path) -> tuple[PartStatus, ...]:
    """Each part's ``PartStatus``, by client id."""
    return tuple(part_status(p) for p in part_paths(path))



class StoreReader:
    """Reads one part of a store (``client``; a single process wrote ``client-0``),
    as it stands: also while another process writes it. ``status()`` is None until the
    part exists. A damaged chunk raises ``ChunkDamageError`` (``damage.py``)."""

    def __init__(self, path, client: int = 0):
        self.path = os.fspath(path)
        self.client = int(client)
        self.part = os.path.join(self.path, f"client-{self.client}")
        self._group = None
        self._arrays = {}
        self._checksums = None
        self.damage = None  # the damage the last read(on_damage="truncate") left out

    def status(self) -> PartStatus | None:
        if not os.path.exists(os.path.join(self.part, "commit.json")):
            return None
        return part_status(self.part)

    @property
    def header(self) -> dict:
        """The recording's header (``Recording.header`` without ``n_steps``)."""
        return self._open().attrs["recording"]

    def _open(self):
        if self._group is None:
            check_store(self.path)
            import zarr
            self._group = zarr.open_group(self.part, mode="r", zarr_format=3)
        return self._group

    def _array(self, name, stop=0):
        array = self._arrays.get(name)
        if array is None or array.shape[0] < stop:  # the writer grew it since
            array = self._arrays[name] = self._open()[name]
        return array

    def rows(self, name, start, stop) -> np.ndarray:
        """Rows ``start:stop`` of a per-step array (the caller keeps within the
        committed count)."""
        return read_rows(self.part, name, self._array(name, stop), start, stop)

    def per_step_arrays(self) -> list[str]:
        """The names of the arrays with one row per committed step."""
        meta, names = self.header, list(COLUMNS)
        for i, _ in enumerate(meta["variables"]):
            names += [f"v{i}.{kind}" if meta["mode"] == "full" else f"v{i}.{kind}.stats"
                      for kind in meta["kinds"]]
        return names

    @property
    def checksums(self) -> bool:
        """Whether every per-step array's chunks carry a checksum (stores written before
        dtsgd_viz kept them, and arrays a resumed run kept from one, do not)."""
        if self._checksums is None:
            self._checksums = all(has_checksums(self._array(n)) for n in self.per_step_arrays())
        return self._checksums

    def variable_index(self, variable) -> int:
        names = [v["name"] for v in self.header["variables"]]
        if variable not in names:
            raise ValueError(f"Unknown variable {variable!r}. This store has: {names}.")
        return names.index(variable)

    def block_norms(self, variable, kind, start, stop) -> np.ndarray:
        """``(stop - start, n_blocks)``: the L2 norm of each stored block (replicas
        stored once) of ``variable``'s ``kind`` per step, in float64."""
        i = self.variable_index(variable)
        if kind not in self.header["kinds"]:
            raise ValueError(f"Kind {kind!r} was not recorded. Recorded kinds: "
                             f"{self.header['kinds']}.")
        if self.header["mode"] == "stats":
            return self.rows(f"v{i}.{kind}.stats", start, stop)[..., 0].astype(np.float64)
        blocks = self.rows(f"v{i}.{kind}", start, stop)
        dtype = self.header["variables"][i]["dtype"]
        if dtype == "bfloat16":
            import ml_dtypes
            blocks = blocks.view(ml_dtypes.bfloat16)
        return block_stats(blocks)[..., 0]

    def read(self, start=0, stop=None, status=None, on_damage="raise") -> Recording:
        """The committed steps ``start:stop`` (all of them by default) as a
        ``Recording``; ``status``: read as of that ``PartStatus``. A damaged chunk of a
        per-step array raises ``ChunkDamageError``, or with ``on_damage="truncate"`` the
        steps from its first row on are left out, with a ``RecordingDamagedWarning``
        (``self.damage`` keeps it); damage elsewhere (initial values, dropped steps) is
        always an error."""
        check_on_damage(on_damage)
        status = status or self.status()
        if status is None:
            raise RecordingFileError(f"{self.part} does not exist (yet).")
        n = status.n_steps
        stop = n if stop is None else max(0, min(stop, n))
        start = max(0, min(start, stop))
        if not self.checksums:
            warnings.warn(f"{self.part} was written before dtsgd_viz kept checksums: it "
                          "loads, but damage to its chunks cannot be detected.",
                          NoChecksumsWarning, stacklevel=3)
        arrays, self.damage, cut = self._read_steps(start, stop, on_damage)
        if self.damage is not None:
            self._warn_damage(start, cut, stop)
        meta = dict(self.header, n_steps=cut - start)
        arrays["dropped_steps"] = self.rows("dropped_steps", 0, status.n_dropped)
        arrays["superseded_steps"] = np.unique(
            self.rows("superseded_steps", 0, status.n_superseded) if status.n_superseded
            else np.zeros(0, np.int64))
        for i, _ in enumerate(meta["variables"]):
            initial = self._array(f"v{i}.initial")
            arrays[f"v{i}.initial"] = (read_rows(self.part, f"v{i}.initial", initial, 0,
                                                 initial.shape[0])
                                       if initial.ndim else initial[...])
            if meta["mode"] == "stats":
                for kind in meta["kinds"]:
                    arrays[f"v{i}.{kind}.stats"] = arrays[f"v{i}.{kind}.stats"].astype(np.float64)
        return from_arrays(self.part, meta, arrays)

    def _read_steps(self, start, stop, on_damage):
        """Rows ``start:stop`` of every per-step array, or (``truncate``) the rows before
        the first damaged chunk: ``(arrays, the damage or None, where they end)``."""
        arrays, damage = {}, None
        for name in self.per_step_arrays():
            try:
                arrays[name] = self.rows(name, start, stop)
            except ChunkDamageError as d:
                if on_damage == "raise":
                    raise
                damage, stop = d, max(start, d.row)  # the chunks before it are whole
                arrays[name] = self.rows(name, start, stop)
        return {k: v[:stop - start] for k, v in arrays.items()}, damage, stop

    def _warn_damage(self, start, cut, stop) -> None:
        try:
            left = self.rows("steps", cut, stop)
            span = f"updates {left[0]}..{left[-1]}"
        except ChunkDamageError:
            span = f"step rows {cut}..{stop - 1}"
        warnings.warn(
            f"{self.damage} on_damage='truncate': loaded the {cut - start} step(s) before "
            f"it and left out the {stop - cut} committed step(s) from it on ({span}).",
            RecordingDamagedWarning, stacklevel=5)


def load_store(path, on_damage="raise") -> Recording:
    """``load_recording`` of a store folder: every committed step of each part, in
    order; the parts of a multi-client run merged with ``merge_recordings``. Warns
    (``StoreNotClosedWarning``) when the run did not close the store, saying where each
    part stopped. ``on_damage``: see ``StoreReader.read`` (a part cut short by damage
    cuts the other parts to the same steps)."""
    check_on_damage(on_damage)
    path = os.fspath(path)
    parts = part_paths(path)
    if not parts:
        raise RecordingFileError(
            f"{path} is a dtsgd_viz store with no part yet (no client-<id>/commit.json): "
            "the run has not written its header.")
    read = []
    for part in parts:
        status = part_status(part)
        if not status.closed:
            warnings.warn(str(status), StoreNotClosedWarning, stacklevel=3)
        reader = StoreReader(path, status.client)
        read.append((reader, status, reader.read(status=status, on_damage=on_damage)))
    if len(read) == 1:
        return read[0][2]
    if any(reader.damage is not None for reader, _, _ in read):
        shortest = min(len(r) for _, _, r in read)
        read = [(reader, status, r if len(r) == shortest else
                 reader.read(stop=shortest, status=status, on_damage=on_damage))
                for reader, status, r in read]
    return merge_recordings([r for _, _, r in read])
