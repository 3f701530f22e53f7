"""The writing side of a store (``store.py`` describes the layout and the commit
protocol): ``StoreWriter``, which a ``Recorder(path=...)`` appends each flushed batch
with. Plain data: numpy and zarr."""

from __future__ import annotations

import json
import math
import os
import re
import time

import numpy as np

from .recording import DTYPES, Recording, RecordingFileError
from .store_format import (CHUNK_BYTES, COLUMNS, FORMAT, MAX_CHUNK_STEPS, PART_FOLDER, PLAIN, VERSION,
                           ZARR_TEMPORARY, check_store, root_attributes, stored_dtype, write_json)


def _check_streamable(header: Recording) -> None:
    """Every variable of ``header`` must be of a dtype a store holds (``DTYPES``)."""
    for r in header.records:
        if r.dtype not in DTYPES:
            raise ValueError(
                f"Cannot stream variable {r.name!r}: its values are {r.dtype}. A store "
                f"holds {', '.join(DTYPES)} (the dtypes tf-keras trains in).")


class StoreWriter:
    """Appends batches of host entries (``_hostlog.entry``) of one recorder to its part
    of a store, committing each (see the module docstring). ``header`` is the recording
    of no steps that names everything (``Recorder`` builds it when it is attached)."""

    def __init__(self, path, header: Recording, client: int = 0):
        self.path = os.fspath(path)
        self.client = int(client)
        self.part = os.path.join(self.path, f"client-{self.client}")
        self.header = header
        _check_streamable(header)
        self._check_folder()
        group = self._open_part(header)
        self.full = header.mode == "full"
        self._arrays = {}  # name -> (zarr array, chunked per block)
        self._initial = {}
        self._make_arrays(group, header)
        self.capacity = self.dropped_capacity = 0
        self.n_steps = self.n_dropped = 0
        self.last_step = None
        self.closed = self.at_exit = False
        self.started = time.time()
        self._write_initial(header)
        self._commit()

    def _check_folder(self) -> None:
        """``path`` must be a new folder, one being made by another client of the run, or
        a store; this client's part must not exist yet."""
        if os.path.isfile(self.path):
            raise ValueError(f"Recorder(path={self.path!r}): that is a file; a store is a folder.")
        if os.path.isdir(self.path):
            attrs = root_attributes(self.path)
            # another client of the run may be creating the store right now: its parts,
            # its zarr.json, or zarr's temporary "zarr.<hex>.partial" before the rename
            others = [f for f in os.listdir(self.path)
                      if not (PART_FOLDER.match(f) or f == "zarr.json" or ZARR_TEMPORARY.match(f))]
            if attrs is None and others:
                raise ValueError(
                    f"Recorder(path={self.path!r}): the folder is not empty and is not a "
                    "dtsgd_viz store. Give a new folder.")
            if attrs is not None:
                check_store(self.path)
        if os.path.exists(self.part):
            raise ValueError(
                f"Recorder(path={self.path!r}): {self.part} already holds a recording. Give "
                "each run a new folder (or remove the old one).")

    def _open_part(self, header):
        """Create the store's root group (unless there is one) and this client's part
        group, holding the recording's header; returns the part's group."""
        import zarr

        try:
            zarr.open_group(self.path, mode="a", zarr_format=3,
                            attributes={"format": FORMAT, "version": VERSION})
        except zarr.errors.ContainsGroupError:
            # another client created the root between our look and our write: use theirs
            check_store(self.path)
        meta = header.header()
        meta.pop("n_steps")
        return zarr.open_group(self.part, mode="w-", zarr_format=3,
                               attributes={"recording": meta, "client": self.client})

    def _make_arrays(self, group, header) -> None:
        """The part's arrays, of no steps yet: the columns, the dropped steps, and per
        variable its initial value and its blocks (``full``) or statistics per kind."""
        n_vars = len(header.records)
        self._make(group, "steps", (), "int64")
        self._make(group, "learning_rate", (), "float64")
        self._make(group, "loss", (), "float64")
        self._make(group, "nonfinite", (n_vars,), "uint8")
        self._make(group, "mismatch", (n_vars,), "uint8")
        self.dropped = group.create_array("dropped_steps", shape=(0,), dtype="int64",
                                          chunks=(MAX_CHUNK_STEPS,), **PLAIN)
        for i, r in enumerate(header.records):
            self._initial[i] = group.create_array(
                f"v{i}.initial", shape=r.shape, dtype=stored_dtype(r.dtype),
                chunks=tuple(max(1, d) for d in r.shape), **PLAIN)
            for k in header.kinds:
                if self.full:
                    row = r.blocks[k].shape[1:]
                    self._make(group, f"v{i}.{k}", row, stored_dtype(r.dtype),
                               per_block=math.prod(row[1:]) * np.dtype(
                                   stored_dtype(r.dtype)).itemsize >= CHUNK_BYTES)
                else:
                    self._make(group, f"v{i}.{k}.stats", r.stats[k].shape[1:], "float32")

    def _make(self, group, name, row, dtype, per_block=False):
        if per_block:
            chunks = (1, 1, *(max(1, d) for d in row[1:]))
        else:
            row_bytes = max(1, math.prod(row) * np.dtype(dtype).itemsize)
            steps = int(min(MAX_CHUNK_STEPS, max(1, CHUNK_BYTES // row_bytes)))
            chunks = (steps, *(max(1, d) for d in row))
        self._arrays[name] = (group.create_array(name, shape=(0, *row), dtype=dtype,
                                                 chunks=chunks, **PLAIN), per_block)

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
        write_json(os.path.join(self.part, "commit.json"), {
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
            write_json(os.path.join(self.part, "writing.json"),
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
