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
                                 (``Recording._header``: mesh, variables, kinds, mode, ...)
    run.zarr/client-0/commit.json  {"n_steps", "n_dropped", "last_step", "closed", ...}
    run.zarr/client-0/writing.json the batch being written (first/last update, its rows)
    run.zarr/client-0/steps, learning_rate, loss, nonfinite, mismatch, dropped_steps
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
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
import os
import re
import time
import warnings

import numpy as np

from .recording import DTYPES, Recording, RecordingFileError, _block_stats, _from_arrays

FORMAT = "dtsgd_viz.store"
VERSION = 1
CHUNK_BYTES = 1 << 20
"""Chunks hold about this many bytes: one chunk per (step, block) for blocks at least
this large (written straight from the host's views of the device buffers), otherwise
as many steps as fit (at most ``MAX_CHUNK_STEPS``)."""
MAX_CHUNK_STEPS = 4096
COLUMNS = ("steps", "learning_rate", "loss", "nonfinite", "mismatch")
_PART = re.compile(r"^client-(\d+)$")
# Uncompressed (floats barely compress; the bytes go straight from the host's views to
# the file), and every chunk written: zarr would otherwise scan each chunk for "all
# zeros" to skip it.
_PLAIN = dict(compressors=None, fill_value=0, config={"write_empty_chunks": True})


class StoreNotClosedWarning(UserWarning):
    """``load_recording`` of a store whose run did not close it (still running, or
    stopped without ``Recorder.close()``): it says after which update it stopped."""


@dataclasses.dataclass(frozen=True)
class PartStatus:
    """How far one client's part of a store got (read from its ``commit.json``).

    ``pending``: ``(steps, first update, last update)`` of a batch written after the
    last commit and never committed (being written now, or cut off by a kill), or None.
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

    def __str__(self) -> str:
        where = (f"stopped after update {self.last_step}" if self.last_step is not None
                 else "stopped before its first update")
        text = f"{self.path}: {self.n_steps} step(s) committed, {where}"
        if self.closed:
            return text + "; the run closed the store."
        text += ("; the run did not close the store (it is still running, or it was "
                 "stopped without Recorder.close())")
        if self.pending is not None:
            k, first, last = self.pending
            text += (f"; a batch of {k} step(s) (updates {first}..{last}) written after it "
                     "was never committed and is left out")
        return text + "."


def _write_json(path, value) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)  # readers see the old file or the new one, never a torn one


def _read_json(path):
    with open(path) as f:
        return json.load(f)


def _root_attributes(path) -> dict | None:
    """The root group's attributes, or None when ``path`` holds no zarr group."""
    try:
        meta = _read_json(os.path.join(path, "zarr.json"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        raise RecordingFileError(f"{path}: unreadable zarr.json ({e}).") from e
    return meta.get("attributes", {}) if isinstance(meta, dict) else {}


def _check_store(path) -> None:
    attrs = _root_attributes(path)
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


def part_paths(path) -> list[str]:
    """The parts of the store at ``path`` that committed at least once, by client id."""
    path = os.fspath(path)
    _check_store(path)
    found = []
    for name in os.listdir(path):
        m = _PART.match(name)
        if m and os.path.exists(os.path.join(path, name, "commit.json")):
            found.append((int(m.group(1)), os.path.join(path, name)))
    return [p for _, p in sorted(found)]


def part_status(part) -> PartStatus:
    """The committed state of one part folder (``client-<id>``)."""
    try:
        c = _read_json(os.path.join(part, "commit.json"))
    except (OSError, ValueError) as e:
        raise RecordingFileError(f"{part}: unreadable commit.json ({e}).") from e
    pending = None
    try:
        w = _read_json(os.path.join(part, "writing.json"))
        if w["from"] >= c["n_steps"] and w["steps"]:
            pending = (int(w["steps"]), int(w["first"]), int(w["last"]))
    except (OSError, ValueError, KeyError):
        pass
    client = int(_PART.match(os.path.basename(os.path.normpath(part))).group(1))
    return PartStatus(part, client, int(c["n_steps"]), int(c["n_dropped"]), c["last_step"],
                      bool(c["closed"]), float(c["started"]), float(c["time"]), pending)


def store_status(path) -> tuple[PartStatus, ...]:
    """Each part's ``PartStatus``, by client id."""
    return tuple(part_status(p) for p in part_paths(path))


def _stored_dtype(dtype: str) -> str:
    return "uint16" if dtype == "bfloat16" else dtype


class StoreWriter:
    """Appends batches of host entries (``_hostlog.entry``) of one recorder to its part
    of a store, committing each (see the module docstring). ``header`` is the recording
    of no steps that names everything (``Recorder`` builds it when it is attached)."""

    def __init__(self, path, header: Recording, client: int = 0):
        import zarr

        self.path = os.fspath(path)
        self.client = int(client)
        self.part = os.path.join(self.path, f"client-{self.client}")
        self.header = header
        for r in header.records:
            if r.dtype not in DTYPES:
                raise ValueError(
                    f"Cannot stream variable {r.name!r}: its values are {r.dtype}. A store "
                    f"holds {', '.join(DTYPES)} (the dtypes tf-keras trains in).")
        if os.path.isfile(self.path):
            raise ValueError(f"Recorder(path={self.path!r}): that is a file; a store is a folder.")
        if os.path.isdir(self.path):
            attrs = _root_attributes(self.path)
            # another client of the run may be creating the store right now
            others = [f for f in os.listdir(self.path)
                      if not (_PART.match(f) or f.startswith("zarr.json"))]
            if attrs is None and others:
                raise ValueError(
                    f"Recorder(path={self.path!r}): the folder is not empty and is not a "
                    "dtsgd_viz store. Give a new folder.")
            if attrs is not None:
                _check_store(self.path)
        if os.path.exists(self.part):
            raise ValueError(
                f"Recorder(path={self.path!r}): {self.part} already holds a recording. Give "
                "each run a new folder (or remove the old one).")
        zarr.open_group(self.path, mode="a", zarr_format=3,
                        attributes={"format": FORMAT, "version": VERSION})
        meta = header._header()
        meta.pop("n_steps")
        group = zarr.open_group(self.part, mode="w-", zarr_format=3,
                                attributes={"recording": meta, "client": self.client})
        self.full = header.mode == "full"
        self._arrays = {}  # name -> (zarr array, chunked per block)
        n_vars = len(header.records)
        self._make(group, "steps", (), "int64")
        self._make(group, "learning_rate", (), "float64")
        self._make(group, "loss", (), "float64")
        self._make(group, "nonfinite", (n_vars,), "uint8")
        self._make(group, "mismatch", (n_vars,), "uint8")
        self.dropped = group.create_array("dropped_steps", shape=(0,), dtype="int64",
                                          chunks=(MAX_CHUNK_STEPS,), **_PLAIN)
        self._initial = {}
        for i, r in enumerate(header.records):
            self._initial[i] = group.create_array(
                f"v{i}.initial", shape=r.shape, dtype=_stored_dtype(r.dtype),
                chunks=tuple(max(1, d) for d in r.shape), **_PLAIN)
            for k in header.kinds:
                if self.full:
                    row = r.blocks[k].shape[1:]
                    self._make(group, f"v{i}.{k}", row, _stored_dtype(r.dtype),
                               per_block=math.prod(row[1:]) * np.dtype(
                                   _stored_dtype(r.dtype)).itemsize >= CHUNK_BYTES)
                else:
                    self._make(group, f"v{i}.{k}.stats", r.stats[k].shape[1:], "float32")
        self.capacity = self.dropped_capacity = 0
        self.n_steps = self.n_dropped = 0
        self.last_step = None
        self.closed = self.at_exit = False
        self.started = time.time()
        self._write_initial(header)
        self._commit()

    def _make(self, group, name, row, dtype, per_block=False):
        if per_block:
            chunks = (1, 1, *(max(1, d) for d in row[1:]))
        else:
            row_bytes = max(1, math.prod(row) * np.dtype(dtype).itemsize)
            steps = int(min(MAX_CHUNK_STEPS, max(1, CHUNK_BYTES // row_bytes)))
            chunks = (steps, *(max(1, d) for d in row))
        self._arrays[name] = (group.create_array(name, shape=(0, *row), dtype=dtype,
                                                 chunks=chunks, **_PLAIN), per_block)

    def _write_initial(self, rec) -> None:
        for i, r in enumerate(rec.records):
            value = np.asarray(r.initial)
            self._initial[i][...] = value.view(np.uint16) if r.dtype == "bfloat16" else value

    def _grow(self, need) -> None:
        if need <= self.capacity:
            return
        self.capacity = max(need, 2 * self.capacity, 16)
        for array, _ in self._arrays.values():
            array.resize((self.capacity, *array.shape[1:]))

    def _commit(self) -> None:
        _write_json(os.path.join(self.part, "commit.json"), {
            "n_steps": self.n_steps, "n_dropped": self.n_dropped, "last_step": self.last_step,
            "closed": self.closed, "started": self.started, "time": time.time()})

    def append(self, entries, dropped=(), initial=None, *, commit=True) -> None:
        """Write ``entries`` (``(step, entry)`` pairs, in step order) and ``dropped``
        (steps overwritten on the devices before a flush) and commit them.
        ``initial``: the variables' starting values (``Recording.initial`` order),
        rewritten while nothing is committed (a recorder attached to a traced step
        starts later than it was built). ``commit=False`` leaves the batch written but
        not committed, as a run killed mid-write would."""
        if self.closed:
            if self.at_exit:  # the process is ending: a last flush finds it closed
                return
            raise ValueError(f"The store part {self.part} is closed; nothing more can be "
                             "written to it.")
        dropped = np.asarray(dropped, np.int64).reshape(-1)
        k, n0 = len(entries), self.n_steps
        if not k and not len(dropped):
            return
        if initial is not None and n0 == 0:
            for i, r in enumerate(self.header.records):
                value = np.asarray(initial[i])
                self._initial[i][...] = value.view(np.uint16) if r.dtype == "bfloat16" else value
        if k:
            _write_json(os.path.join(self.part, "writing.json"),
                        {"from": n0, "steps": k, "first": int(entries[0][0]),
                         "last": int(entries[-1][0])})
            self._grow(n0 + k)
            self._write_rows(entries, n0)
        if len(dropped):
            need = self.n_dropped + len(dropped)
            if need > self.dropped_capacity:
                self.dropped_capacity = max(need, 2 * self.dropped_capacity, 16)
                self.dropped.resize((self.dropped_capacity,))
            self.dropped[self.n_dropped:need] = dropped
        if commit:
            self.n_steps += k
            self.n_dropped += len(dropped)
            if k:
                self.last_step = int(entries[-1][0])
            self._commit()

    def _write_rows(self, entries, n0) -> None:
        rec, k = self.header, len(entries)
        rows = slice(n0, n0 + k)
        nonfinite = np.zeros((k, len(rec.records)), np.uint8)
        for i, r in enumerate(rec.records):
            for kind in rec.kinds:
                bit = {"grad": 1, "param": 2}.get(kind, 0)  # recording.NONFINITE_*
                if self.full:
                    array, per_block = self._arrays[f"v{i}.{kind}"]
                    parts = [e["values"][(r.name, kind)] for _, e in entries]
                    if bit:  # NaN and Inf reach the max or the min
                        for j, blocks in enumerate(parts):
                            if any(not (np.isfinite(b.max(initial=0)) and np.isfinite(b.min(initial=0)))
                                   for b in blocks):
                                nonfinite[j, i] |= bit
                    if per_block:  # straight from the host's views: no copy in memory
                        for j, blocks in enumerate(parts):
                            for b, block in enumerate(blocks):
                                array[n0 + j, b] = self._stored(r, block)
                    else:
                        array[rows] = self._stored(r, np.stack([np.stack(b) for b in parts]))
                else:
                    array, _ = self._arrays[f"v{i}.{kind}.stats"]
                    stats = np.stack([e["stats"][(r.name, kind)] for _, e in entries])
                    array[rows] = stats.astype(np.float32)
                    if bit:  # a NaN/Inf reaches the mean
                        nonfinite[:, i] |= (~np.isfinite(stats[..., 1]).all(axis=1)) * np.uint8(bit)
        v = len(rec.records)
        columns = {
            "steps": np.array([s for s, _ in entries], np.int64),
            "learning_rate": np.array([e["lr"] for _, e in entries], np.float64),
            "loss": np.array([e["loss"] for _, e in entries], np.float64),
            "nonfinite": nonfinite,
            "mismatch": np.array([np.zeros(v, np.uint8) if e["mismatch"] is None
                                  else e["mismatch"] for _, e in entries], np.uint8).reshape(k, v),
        }
        for name, values in columns.items():
            self._arrays[name][0][rows] = values

    @staticmethod
    def _stored(r, values):
        values = np.asarray(values)
        if values.dtype.name != r.dtype:
            raise ValueError(f"Variable {r.name!r} is {r.dtype} but a recorded block is "
                             f"{values.dtype.name}.")
        return values.view(np.uint16) if r.dtype == "bfloat16" else values

    def close(self, trim=True) -> None:
        """Trim the arrays to what was committed and commit with ``closed: true``
        (``trim=False``, at the end of the process: only commit; readers trust the
        committed counts, and zarr may already have shut its I/O down)."""
        if self.closed:
            return
        if trim:
            for array, _ in self._arrays.values():
                array.resize((self.n_steps, *array.shape[1:]))
            self.dropped.resize((self.n_dropped,))
        try:
            os.remove(os.path.join(self.part, "writing.json"))
        except FileNotFoundError:
            pass
        self.closed = True
        self._commit()

    def close_at_exit(self) -> None:
        """``close(trim=False)`` when the process (or the recorder) ends: never raises
        (the folder may be gone by then)."""
        self.at_exit = True
        try:
            self.close(trim=False)
        except OSError:
            pass

    def read(self) -> Recording:
        """Everything committed so far."""
        return StoreReader(self.path, self.client).read()


class StoreReader:
    """Reads one part of a store (``client``; a single process wrote ``client-0``),
    as it stands: also while another process writes it. ``status()`` is None until the
    part exists."""

    def __init__(self, path, client: int = 0):
        self.path = os.fspath(path)
        self.client = int(client)
        self.part = os.path.join(self.path, f"client-{self.client}")
        self._group = None
        self._arrays = {}

    def status(self) -> PartStatus | None:
        if not os.path.exists(os.path.join(self.part, "commit.json")):
            return None
        return part_status(self.part)

    @property
    def header(self) -> dict:
        """The recording's header (``Recording._header`` without ``n_steps``)."""
        return self._open().attrs["recording"]

    def _open(self):
        if self._group is None:
            _check_store(self.path)
            import zarr
            self._group = zarr.open_group(self.part, mode="r", zarr_format=3)
        return self._group

    def rows(self, name, start, stop) -> np.ndarray:
        """Rows ``start:stop`` of a per-step array (the caller keeps within the
        committed count)."""
        array = self._arrays.get(name)
        if array is None or array.shape[0] < stop:  # the writer grew it since
            array = self._arrays[name] = self._open()[name]
        return array[start:stop]

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
        return _block_stats(blocks)[..., 0]

    def read(self, start=0, stop=None, status=None) -> Recording:
        """The committed steps ``start:stop`` (all of them by default) as a
        ``Recording``; ``status``: read as of that ``PartStatus``."""
        status = status or self.status()
        if status is None:
            raise RecordingFileError(f"{self.part} does not exist (yet).")
        n = status.n_steps
        stop = n if stop is None else max(0, min(stop, n))
        start = max(0, min(start, stop))
        meta = dict(self.header, n_steps=stop - start)
        arrays = {name: self.rows(name, start, stop) for name in COLUMNS}
        arrays["dropped_steps"] = self.rows("dropped_steps", 0, status.n_dropped)
        for i, _ in enumerate(meta["variables"]):
            arrays[f"v{i}.initial"] = self._open()[f"v{i}.initial"][...]
            for kind in meta["kinds"]:
                if meta["mode"] == "full":
                    arrays[f"v{i}.{kind}"] = self.rows(f"v{i}.{kind}", start, stop)
                else:
                    arrays[f"v{i}.{kind}.stats"] = self.rows(
                        f"v{i}.{kind}.stats", start, stop).astype(np.float64)
        return _from_arrays(self.part, meta, arrays)


def load_store(path) -> Recording:
    """``load_recording`` of a store folder: every committed step of each part, in
    order; the parts of a multi-client run merged with ``merge_recordings``. Warns
    (``StoreNotClosedWarning``) when the run did not close the store, saying where each
    part stopped."""
    path = os.fspath(path)
    parts = part_paths(path)
    if not parts:
        raise RecordingFileError(
            f"{path} is a dtsgd_viz store with no part yet (no client-<id>/commit.json): "
            "the run has not written its header.")
    recordings = []
    for part in parts:
        status = part_status(part)
        if not status.closed:
            warnings.warn(str(status), StoreNotClosedWarning, stacklevel=3)
        recordings.append(StoreReader(path, status.client).read(status=status))
    if len(recordings) == 1:
        return recordings[0]
    merge = getattr(importlib.import_module("dtsgd_viz"), "merge_recordings", None)
    if merge is None:
        raise NotImplementedError(
            f"{path} holds {len(recordings)} client parts; putting them together needs "
            "dtsgd_viz.merge_recordings, which this version does not have yet. Read one "
            "part with dtsgd_viz.store.StoreReader(path, client).read().")
    return merge(recordings)
