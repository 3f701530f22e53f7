"""The writing side of a store (``store.py`` describes the layout and the commit
protocol): ``StoreWriter``, which a ``Recorder(path=...)`` appends each flushed batch
with, and which resumes the part of an earlier run (``resume_from``). Plain data: numpy
and zarr."""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .damage import MetadataChecksums, read_rows, verify_part
from .recording import DTYPES, Recording, RecordingFileError
from .store_format import (
    CHUNK_BYTES,
    COMMIT,
    FORMAT,
    MAX_CHUNK_STEPS,
    PART_FOLDER,
    VERSION,
    ZARR_TEMPORARY,
    MetadataSums,
    check_store,
    header_differences,
    plain,
    read_record,
    root_attributes,
    stored_dtype,
    write_json,
)


def _check_streamable(header: Recording) -> None:
    """Every variable of ``header`` must be of a dtype a store holds (``DTYPES``)."""
    for r in header.records:
        if r.dtype not in DTYPES:
            raise ValueError(
                f"Cannot stream variable {r.name!r}: its values are {r.dtype}. A store "
                f"holds {', '.join(DTYPES)} (the dtypes tf-keras trains in)."
            )


class StoreWriter:
    """Appends batches of host entries (``recorder.hostlog.entry``) of one recorder to its part
    of a store, committing each (see the module docstring). ``header`` is the recording
    of no steps that names everything (``Recorder`` builds it when it is attached).

    ``resume_from``: the iteration a resumed run continues from (its optimizer's,
    restored from a checkpoint). If this client's part exists, it is continued: its
    header must be ``header``'s (else a ``ValueError`` naming what differs), the steps it
    committed after that iteration are superseded (listed in ``superseded_steps``, their
    rows written over by the new run's), and ``resumed`` says what was kept. Without a
    part yet, a new one is started."""

    def __init__(
        self, path: str | os.PathLike[str], header: Recording, client: int = 0, *, resume_from: int | None = None
    ):
        self.path = os.fspath(path)
        self.client = int(client)
        self.part = os.path.join(self.path, f"client-{self.client}")
        self.header = header
        _check_streamable(header)
        self.full = header.mode == "full"
        self._arrays = {}  # name -> (zarr array, chunked per block)
        self._initial = {}
        self.capacity = self.dropped_capacity = self.superseded_capacity = 0
        self.n_steps = self.n_dropped = self.n_superseded = 0
        self.skipped_capacity = self.n_skipped = 0
        self.last_step = None
        self.closed = self.at_exit = False
        self.started = time.time()
        self.resumes, self.resumed = [], None
        self._sums = MetadataSums(self.path, self.client)  # each commit keeps them
        if resume_from is not None and os.path.exists(os.path.join(self.part, "commit.json")):
            self._resume(int(resume_from))
            return
        self._check_folder(resume=resume_from is not None)
        group = self._open_part(header)
        self._make_arrays(group, header)
        self._write_initial(header)
        self._commit()

    def _check_folder(self, resume=False) -> None:
        """``path`` must be a new folder, one being made by another client of the run, or
        a store; this client's part must not exist yet (``resume``: or never have
        committed, as when its run was killed while creating it)."""
        if os.path.isfile(self.path):
            raise ValueError(f"Recorder(path={self.path!r}): that is a file; a store is a folder.")
        if os.path.isdir(self.path):
            attrs = root_attributes(self.path)
            # another client of the run may be creating the store right now: its parts,
            # its zarr.json, or zarr's temporary "zarr.<hex>.partial" before the rename
            others = [
                f
                for f in os.listdir(self.path)
                if not (PART_FOLDER.match(f) or f == "zarr.json" or ZARR_TEMPORARY.match(f))
            ]
            if attrs is None and others:
                raise ValueError(
                    f"Recorder(path={self.path!r}): the folder is not empty and is not a "
                    "dtsgd_viz store. Give a new folder."
                )
            if attrs is not None:
                check_store(self.path)
        if os.path.exists(self.part) and not resume:
            raise ValueError(
                f"Recorder(path={self.path!r}): {self.part} already holds a recording. Give "
                "each run a new folder (or remove the old one), or continue it from a "
                "restored checkpoint with Recorder(path=..., resume=True)."
            )

    def _open_part(self, header):
        """Create the store's root group (unless there is one) and this client's part
        group, holding the recording's header; returns the part's group."""
        import zarr
        import zarr.errors

        try:
            zarr.open_group(self.path, mode="a", zarr_format=3, attributes={"format": FORMAT, "version": VERSION})
        except zarr.errors.ContainsGroupError:
            # another client created the root between our look and our write: use theirs
            check_store(self.path)
        meta = header.header()
        meta.pop("n_steps")
        # mode "w": a part that never committed (only a resume gets here with one)
        return zarr.open_group(
            self.part, mode="w", zarr_format=3, attributes={"recording": meta, "client": self.client}
        )

    def _specs(self, header):
        """``(name, row shape, dtype, chunked per block)`` of each per-step array: the
        columns, and per variable its blocks (``full``) or statistics per kind."""
        n_vars = len(header.records)
        out = [
            ("steps", (), "int64", False),
            ("learning_rate", (), "float64", False),
            ("loss", (), "float64", False),
            ("nonfinite", (n_vars,), "uint8", False),
            ("mismatch", (n_vars,), "uint8", False),
        ]
        for i, r in enumerate(header.records):
            dtype = stored_dtype(r.dtype)
            for k in header.kinds:
                if self.full:
                    row = r.blocks[k].shape[1:]
                    out.append((f"v{i}.{k}", row, dtype, math.prod(row[1:]) * np.dtype(dtype).itemsize >= CHUNK_BYTES))
                else:
                    out.append((f"v{i}.{k}.stats", r.stats[k].shape[1:], "float32", False))
        return out

    def _make_arrays(self, group, header) -> None:
        """The part's arrays, of no steps yet: the per-step ones (``_specs``), the dropped
        and superseded steps, and each variable's initial value."""
        for name, row, dtype, per_block in self._specs(header):
            self._make(group, name, row, dtype, per_block)
        self.dropped = self._make_list(group, "dropped_steps")
        self.superseded = self._make_list(group, "superseded_steps")
        self.skipped = self._make_list(group, "skipped_steps")
        self.skipped_scale = self._make_list(group, "skipped_loss_scale", "float64")
        for i, r in enumerate(header.records):
            self._initial[i] = group.create_array(
                f"v{i}.initial",
                shape=r.shape,
                dtype=stored_dtype(r.dtype),
                chunks=tuple(max(1, d) for d in r.shape),
                **plain(),
            )

    @staticmethod
    def _make_list(group, name, dtype="int64"):
        return group.create_array(name, shape=(0,), dtype=dtype, chunks=(MAX_CHUNK_STEPS,), **plain())

    def _make(self, group, name, row, dtype, per_block=False):
        if per_block:
            chunks = (1, 1, *(max(1, d) for d in row[1:]))
        else:
            row_bytes = max(1, math.prod(row) * np.dtype(dtype).itemsize)
            steps = int(min(MAX_CHUNK_STEPS, max(1, CHUNK_BYTES // row_bytes)))
            chunks = (steps, *(max(1, d) for d in row))
        self._arrays[name] = (
            group.create_array(name, shape=(0, *row), dtype=dtype, chunks=chunks, **plain()),
            per_block,
        )

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
        write_json(
            os.path.join(self.part, "commit.json"),
            {
                "n_steps": self.n_steps,
                "n_dropped": self.n_dropped,
                "last_step": self.last_step,
                "closed": self.closed,
                "started": self.started,
                "time": time.time(),
                "n_superseded": self.n_superseded,
                "resumes": self.resumes,
                "n_skipped": self.n_skipped,
                **self._sums.record(),
            },
        )

    @staticmethod
    def _extend(array, count, capacity, values) -> int:
        """Write ``values`` at ``count`` of a 1-D list of steps (grown by doubling, as the
        per-step arrays are); returns its capacity."""
        need = count + len(values)
        if need > capacity:
            capacity = max(need, 2 * capacity, 16)
            array.resize((capacity,))
        array[count:need] = values
        return capacity

    # ---- resuming -------------------------------------------------------------------------

    def _resume(self, iteration) -> None:
        """Continue this client's part from ``iteration`` (see the class docstring): the
        superseded steps are written, then one commit says what is kept (a kill before it
        leaves the part as it was). The part's metadata is checked first; a part its run
        closed is reopened (committed again, not closed) before anything in it changes,
        as readers of a closed part hold its metadata to the bytes it committed."""
        import zarr

        check_store(self.path)
        commit = os.path.join(self.part, "commit.json")
        c, _ = read_record(commit, COMMIT)
        sums = MetadataChecksums.from_record(commit, c)
        if sums is not None:  # an open part's arrays may have grown after its last commit
            verify_part(self.path, sums, grown=lambda: not c["closed"])
        group = zarr.open_group(self.part, mode="r+", zarr_format=3)
        meta = self.header.header()
        meta.pop("n_steps")
        stored = group.attrs["recording"]
        if not isinstance(stored, dict):
            raise RecordingFileError(
                f"{os.path.join(self.part, 'zarr.json')} holds a JSON "
                f"{type(stored).__name__} as its recording header; "
                "expected a JSON object."
            )
        differ = header_differences(stored, meta)
        if differ:
            raise ValueError(
                f"Recorder(path={self.path!r}, resume=True): {self.part} records another run; "
                f"{'; '.join(differ)} differ. Resume with the same model, mesh, layouts, "
                "Recorder kinds/mode and optimizer settings, or give a new folder."
            )
        if c["closed"]:
            write_json(commit, {**c, "closed": False, "time": time.time(), **self._sums.record()})
        self._open_arrays(group)
        n = int(c["n_steps"])
        steps = read_rows(self.part, "steps", self._arrays["steps"][0], 0, n)
        kept = int(np.searchsorted(steps, iteration, side="right"))  # steps are in order
        dropped = read_rows(self.part, "dropped_steps", self.dropped, 0, int(c["n_dropped"]))
        # steps dropped after it are run again: forgotten
        self.n_dropped = int(np.searchsorted(dropped, iteration, side="right"))
        skipped = read_rows(self.part, "skipped_steps", self.skipped, 0, int(c.get("n_skipped", 0)))
        self.n_skipped = int(np.searchsorted(skipped, iteration, side="right"))  # the same
        self.n_superseded = int(c.get("n_superseded", 0))
        superseded = steps[kept:]
        self.superseded_capacity = self._extend(
            self.superseded, self.n_superseded, self.superseded_capacity, superseded
        )
        self.n_superseded += len(superseded)
        try:  # the batch a killed run was writing: never committed, written over
            os.remove(os.path.join(self.part, "writing.json"))
        except FileNotFoundError:
            pass
        self.n_steps, self.last_step = kept, (int(steps[kept - 1]) if kept else None)
        self.started = float(c["started"])
        self.resumes = [
            *c.get("resumes", ()),
            {"from": iteration, "kept": kept, "superseded": len(superseded), "time": time.time()},
        ]
        self.resumed = (iteration, kept, superseded, c["last_step"])
        self._commit()

    def _open_arrays(self, group) -> None:
        """The arrays of an existing part (``_make_arrays`` made them), at their sizes."""

        def opened(name):  # zarr keeps write_empty_chunks per handle, not in the store
            return group[name].with_config({"write_empty_chunks": True})

        try:
            for name, _, _, per_block in self._specs(self.header):
                self._arrays[name] = (opened(name), per_block)
            self.dropped = opened("dropped_steps")
            self.superseded = (
                opened("superseded_steps")
                if "superseded_steps" in group
                else self._make_list(group, "superseded_steps")
            )  # older stores
            self.skipped, self.skipped_scale = (
                (opened("skipped_steps"), opened("skipped_loss_scale"))
                if "skipped_steps" in group
                else (self._make_list(group, "skipped_steps"), self._make_list(group, "skipped_loss_scale", "float64"))
            )
            for i, _ in enumerate(self.header.records):
                self._initial[i] = opened(f"v{i}.initial")
        except KeyError as e:
            raise RecordingFileError(f"{self.part}: array {e} is missing.") from e
        self.capacity = min(a.shape[0] for a, _ in self._arrays.values())
        self.dropped_capacity = self.dropped.shape[0]
        self.superseded_capacity = self.superseded.shape[0]
        self.skipped_capacity = min(self.skipped.shape[0], self.skipped_scale.shape[0])

    def append(
        self,
        entries: Sequence[tuple[int, Any]],
        dropped: ArrayLike = (),
        initial: Sequence[ArrayLike] | None = None,
        *,
        commit: bool = True,
        skipped: ArrayLike = (),
    ) -> None:
        """Write ``entries`` (``(step, entry)`` pairs, in step order), ``dropped``
        (steps overwritten on the devices before a flush) and ``skipped`` (``(step, loss
        scale)`` pairs of updates a dynamic loss scale skipped) and commit them.
        ``initial``: the variables' starting values (``Recording.initial`` order),
        rewritten while nothing is committed (a recorder attached to a traced step
        starts later than it was built). ``commit=False`` leaves the batch written but
        not committed, as a run killed mid-write would."""
        if self.closed:
            if self.at_exit:  # the process is ending: a last flush finds it closed
                return
            raise ValueError(f"The store part {self.part} is closed; nothing more can be written to it.")
        dropped = np.asarray(dropped, np.int64).reshape(-1)
        skipped = np.asarray(skipped, np.float64).reshape(-1, 2)
        k, n0 = len(entries), self.n_steps
        if not k and not len(dropped) and not len(skipped):
            return
        if initial is not None and n0 == 0:
            for i, r in enumerate(self.header.records):
                value = np.asarray(initial[i])
                self._initial[i][...] = value.view(np.uint16) if r.dtype == "bfloat16" else value
        if k:
            write_json(
                os.path.join(self.part, "writing.json"),
                {"from": n0, "steps": k, "first": int(entries[0][0]), "last": int(entries[-1][0])},
            )
            self._grow(n0 + k)
            self._write_rows(entries, n0)
        if len(dropped):
            self.dropped_capacity = self._extend(self.dropped, self.n_dropped, self.dropped_capacity, dropped)
        if len(skipped):
            self._extend(self.skipped, self.n_skipped, self.skipped_capacity, skipped[:, 0].astype(np.int64))
            self.skipped_capacity = self._extend(
                self.skipped_scale, self.n_skipped, self.skipped_capacity, skipped[:, 1]
            )
        if commit:
            self.n_steps += k
            self.n_dropped += len(dropped)
            self.n_skipped += len(skipped)
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
                            if any(
                                not (np.isfinite(b.max(initial=0)) and np.isfinite(b.min(initial=0))) for b in blocks
                            ):
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
            "mismatch": np.array(
                [np.zeros(v, np.uint8) if e["mismatch"] is None else e["mismatch"] for _, e in entries], np.uint8
            ).reshape(k, v),
        }
        for name, values in columns.items():
            self._arrays[name][0][rows] = values

    @staticmethod
    def _stored(r, values):
        values = np.asarray(values)
        if values.dtype.name != r.dtype:
            raise ValueError(f"Variable {r.name!r} is {r.dtype} but a recorded block is {values.dtype.name}.")
        return values.view(np.uint16) if r.dtype == "bfloat16" else values

    def close(self, trim: bool = True) -> None:
        """Trim the arrays to what was committed and commit with ``closed: true``
        (``trim=False``, at the end of the process: only commit; readers trust the
        committed counts, and zarr may already have shut its I/O down)."""
        if self.closed:
            return
        if trim:
            for array, _ in self._arrays.values():
                array.resize((self.n_steps, *array.shape[1:]))
            self.dropped.resize((self.n_dropped,))
            self.superseded.resize((self.n_superseded,))
            self.skipped.resize((self.n_skipped,))
            self.skipped_scale.resize((self.n_skipped,))
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
        except (OSError, RecordingFileError):  # RecordingFileError: a damaged zarr.json
            pass
