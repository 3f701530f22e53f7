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
                                    "n_superseded", "resumes", "n_skipped", ...,
                                    "metadata", "resizable", "crc32"}: see Checksums
    run.zarr/client-0/writing.json the batch being written (first/last update, its rows)
    run.zarr/client-0/steps, learning_rate, loss, nonfinite, mismatch, dropped_steps,
                      superseded_steps, skipped_steps, skipped_loss_scale
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
``closed: true``. The clients of a multi-client run commit each on its own, so a run
killed (or read while it writes) between one client's commit and another's has parts
holding different updates: ``load_recording`` loads the updates every part committed and
warns (``PartialCommitWarning``) naming the ones only some parts committed.

Checksums: every chunk ends with its crc32c (zarr's ``crc32c`` codec on every array), so
a damaged, truncated or missing chunk is found when it is read (``damage.py``):
``load_recording`` raises a ``RecordingFileError`` naming the array and the chunk's file,
or with ``on_damage="truncate"`` keeps the steps before that chunk and warns
(``RecordingDamagedWarning``). Every byte of metadata is checked too. ``commit.json`` and
``writing.json`` hold their own crc32 (``"crc32"``, of their JSON with keys sorted and no
spaces, which their bytes must be exactly). Each commit keeps the crc32 of the bytes of
the root's, the part's (the recording's header) and every array's ``zarr.json`` as they
are at that commit (``"metadata"``, by path in the store) and, for each array that grows,
the crc32 of its metadata but for its length (``"resizable"``). A reader checks every one
against the commit it reads before zarr opens anything: a flipped bit, a truncated or
emptied file or an unknown data type is a ``RecordingFileError`` naming the file and what
it should hold, whatever ``on_damage``. The writer grows an array (zarr rewrites its
``zarr.json``) before the commit that names the new rows, so while a part is open an
array's metadata may differ from its committed bytes in its length only, and must then
still hold the committed rows (``damage.read_rows``). A closed part's files are held to
their committed bytes: a resumed run first commits the part again as not closed, before
it grows anything, and a reader that finds a closed part's array changed reads
``commit.json`` again to tell a resume from damage. Stores written before checksums load
with a ``NoChecksumsWarning`` (of their chunks, or of their metadata).

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
import functools
import os
import typing
import warnings

import numpy as np

from .damage import (
    ChunkDamageError,
    MetadataChecksums,
    NoChecksumsWarning,
    RecordingDamagedWarning,
    StrPath,
    check_on_damage,
    has_checksums,
    metadata_what,
    parse_json,
    read_rows,
    verify_metadata,
    verify_part,
)
from .merge import merge_recordings
from .npz import from_arrays
from .recording import Recording, RecordingFileError, block_stats
from .store_format import (
    CHUNK_BYTES,
    COLUMNS,
    COMMIT,
    FORMAT,
    MAX_CHUNK_STEPS,
    PART_FOLDER,
    VERSION,
    WRITING,
    check_store,
    read_record,
)
from .store_writer import StoreWriter

if typing.TYPE_CHECKING:
    import zarr

__all__ = [
    "CHUNK_BYTES",
    "FORMAT",
    "MAX_CHUNK_STEPS",
    "VERSION",
    "ChunkDamageError",
    "NoChecksumsWarning",
    "PartStatus",
    "RecordingDamagedWarning",
    "Resume",
    "PartialCommitWarning",
    "StoreNotClosedWarning",
    "StoreReader",
    "StoreWriter",
    "load_store",
    "part_paths",
    "part_status",
    "store_status",
]


class StoreNotClosedWarning(UserWarning):
    """``load_recording`` of a store whose run did not close it (still running, or
    stopped without ``Recorder.close()``): it says after which update it stopped."""


class PartialCommitWarning(UserWarning):
    """``load_recording`` of a multi-client store whose clients committed different
    updates (the run was killed, or is still writing, between one client's commit and
    another's): it loads the updates every client committed and names the ones only
    some clients committed, which it left out."""


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
    steps they superseded in all. ``n_skipped``: the updates a dynamic loss scale skipped
    (``skipped_steps``, with ``skipped_loss_scale``). ``checksums``: the crc32 of each
    metadata file the commit keeps (``damage.MetadataChecksums``; None for a part written
    before dtsgd_viz kept them).
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
    n_skipped: int = 0
    checksums: MetadataChecksums | None = dataclasses.field(default=None, repr=False)

    def __str__(self) -> str:
        where = (
            f"stopped after update {self.last_step}"
            if self.last_step is not None
            else "stopped before its first update"
        )
        text = f"{self.path}: {self.n_steps} step(s) committed, {where}"
        if self.resumes:
            r = self.resumes[-1]
            text += f" (resumed from update {r.iteration}, superseding {r.superseded} step(s) recorded after it)"
        if self.closed:
            return text + "; the run closed the store."
        text += "; the run did not close the store (it is still running, or it was stopped without Recorder.close())"
        if self.pending is not None:
            k, first, last = self.pending
            text += (
                f"; a batch of {k} step(s) (updates {first}..{last}) written after it "
                "was never committed and is left out"
            )
        return text + "."


def part_paths(path: StrPath) -> list[str]:
    """The parts of the store at ``path`` that committed at least once, by client id."""
    path = os.fspath(path)
    check_store(path)
    found = []
    for name in os.listdir(path):
        m = PART_FOLDER.match(name)
        if m and os.path.exists(os.path.join(path, name, "commit.json")):
            found.append((int(m.group(1)), os.path.join(path, name)))
    return [p for _, p in sorted(found)]


def part_status(part: StrPath) -> PartStatus:
    """The committed state of one part folder (``client-<id>``). A damaged or truncated
    ``commit.json`` or ``writing.json`` (``store_format.read_record``) raises a
    ``RecordingFileError`` naming it."""
    commit = os.path.join(part, "commit.json")
    try:
        c, _ = read_record(commit, COMMIT)
    except OSError as e:
        raise RecordingFileError(f"{commit} cannot be read ({e}).") from e
    pending = None
    try:
        w, _ = read_record(os.path.join(part, "writing.json"), WRITING)
    except FileNotFoundError:
        w = None
    try:
        if w is not None and w["from"] >= c["n_steps"] and w["steps"]:
            pending = (int(w["steps"]), int(w["first"]), int(w["last"]))
    except (KeyError, TypeError):  # a writing.json from before its checksum, incomplete
        pass
    try:
        return _status(part, c, pending)
    except (KeyError, TypeError, ValueError) as e:
        raise RecordingFileError(f"{commit} does not hold {COMMIT[0]} ({type(e).__name__}: {e}).") from e


def _status(part, c, pending) -> PartStatus:
    """The ``PartStatus`` of the commit record ``c`` of ``part``."""
    folder = PART_FOLDER.match(os.path.basename(os.path.normpath(part)))
    if folder is None:
        raise ValueError(f"{part} is not a store part folder (client-<id>).")
    client = int(folder.group(1))
    resumes = tuple(
        Resume(int(r["from"]), int(r["kept"]), int(r["superseded"]), float(r["time"])) for r in c.get("resumes", ())
    )
    return PartStatus(
        part,
        client,
        int(c["n_steps"]),
        int(c["n_dropped"]),
        c["last_step"],
        bool(c["closed"]),
        float(c["started"]),
        float(c["time"]),
        pending,
        int(c.get("n_superseded", 0)),
        resumes,
        int(c.get("n_skipped", 0)),
        checksums=MetadataChecksums.from_record(os.path.join(part, "commit.json"), c),
    )


def store_status(path: StrPath) -> tuple[PartStatus, ...]:
    """Each part's ``PartStatus``, by client id."""
    return tuple(part_status(p) for p in part_paths(path))


class StoreReader:
    """Reads one part of a store (``client``; a single process wrote ``client-0``),
    as it stands: also while another process writes it. ``status()`` is None until the
    part exists. A damaged chunk raises ``ChunkDamageError`` (``damage.py``)."""

    def __init__(self, path: str | os.PathLike[str], client: int = 0):
        self.path = os.fspath(path)
        self.client = int(client)
        self.part = os.path.join(self.path, f"client-{self.client}")
        self._group = None
        self._arrays = {}
        self._checksums = None
        self._status = None  # the last status read: the metadata is checked against it
        self.damage = None  # the damage the last read(on_damage="truncate") left out

    def status(self) -> PartStatus | None:
        if not os.path.exists(os.path.join(self.part, "commit.json")):
            return None
        self._status = part_status(self.part)
        return self._status

    @property
    def header(self) -> dict[str, typing.Any]:
        """The recording's header (``Recording.header`` without ``n_steps``)."""
        try:
            header = self._open().attrs["recording"]
        except KeyError as e:
            what = metadata_what(f"client-{self.client}/zarr.json")
            raise RecordingFileError(f"{os.path.join(self.part, 'zarr.json')} holds no {e}: expected {what}.") from e
        if not isinstance(header, dict):
            raise RecordingFileError(
                f"{os.path.join(self.part, 'zarr.json')} holds a JSON "
                f"{type(header).__name__} as its recording header; "
                "expected a JSON object."
            )
        return header

    def _open(self):
        """The part's zarr group, once the store's metadata files are checked against the
        last status's checksums (``damage.verify_part``)."""
        if self._group is None:
            check_store(self.path)
            status = self._status or self.status()
            if status is not None and status.checksums is not None:
                verify_part(self.path, status.checksums, self._grown(status))
            import zarr

            self._group = self._zarr(None, lambda: zarr.open_group(self.part, mode="r", zarr_format=3))
        return self._group

    def _array(self, name: str, stop: int = 0) -> zarr.Array:
        array = self._arrays.get(name)
        if array is None or array.shape[0] < stop:  # the writer grew it since
            group, status = self._open(), self._status
            if status is not None and status.checksums is not None:
                verify_metadata(
                    self.path, status.checksums, f"client-{self.client}/{name}/zarr.json", self._grown(status)
                )
            import zarr

            opened = self._zarr(name, lambda: group[name])
            if not isinstance(opened, zarr.Array):
                raise RecordingFileError(f"{os.path.join(self.part, name)} is a zarr group; expected an array.")
            array = self._arrays[name] = opened
        return array

    def _grown(self, status):
        """Whether the part's arrays may have grown since ``status``: the part is open,
        or it was closed and a resumed run reopened it since (asked only when an
        array's metadata is not the one ``status`` has the crc32 of)."""
        return lambda: not status.closed or part_status(self.part) != status

    def _zarr(self, name, opener):
        """``opener()``, zarr's errors for metadata it cannot read (in a part without
        checksums) as a ``RecordingFileError`` naming the file (of array ``name``, or of
        the part's group)."""
        key = f"client-{self.client}/{'' if name is None else name + '/'}zarr.json"
        try:
            return opener()
        except Exception as e:  # noqa: BLE001 - zarr raises several kinds for bad metadata
            file = os.path.join(self.path, *key.split("/"))
            if not os.path.exists(file):
                raise RecordingFileError(f"{file} is missing: expected {metadata_what(key)}.") from e
            with open(file, "rb") as f:
                parse_json(file, f.read(), metadata_what(key))  # raises for what is not JSON
            raise RecordingFileError(
                f"{file} cannot be read by zarr ({type(e).__name__}: {e}): expected {metadata_what(key)}."
            ) from e

    def rows(self, name: str, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of a per-step array (the caller keeps within the
        committed count)."""
        return read_rows(self.part, name, self._array(name, stop), start, stop)

    def per_step_arrays(self) -> list[str]:
        """The names of the arrays with one row per committed step."""
        meta, names = self.header, list(COLUMNS)
        for i, _ in enumerate(meta["variables"]):
            names += [f"v{i}.{kind}" if meta["mode"] == "full" else f"v{i}.{kind}.stats" for kind in meta["kinds"]]
        return names

    @property
    def checksums(self) -> bool:
        """Whether every per-step array's chunks carry a checksum (stores written before
        dtsgd_viz kept them, and arrays a resumed run kept from one, do not)."""
        if self._checksums is None:
            self._checksums = all(has_checksums(self._array(n)) for n in self.per_step_arrays())
        return self._checksums

    def variable_index(self, variable: str) -> int:
        names = [v["name"] for v in self.header["variables"]]
        if variable not in names:
            raise ValueError(f"Unknown variable {variable!r}. This store has: {names}.")
        return names.index(variable)

    def block_norms(self, variable: str, kind: str, start: int, stop: int) -> np.ndarray:
        """``(stop - start, n_blocks)``: the L2 norm of each stored block (replicas
        stored once) of ``variable``'s ``kind`` per step, in float64."""
        i = self.variable_index(variable)
        if kind not in self.header["kinds"]:
            raise ValueError(f"Kind {kind!r} was not recorded. Recorded kinds: {self.header['kinds']}.")
        if self.header["mode"] == "stats":
            return self.rows(f"v{i}.{kind}.stats", start, stop)[..., 0].astype(np.float64)
        blocks = self.rows(f"v{i}.{kind}", start, stop)
        dtype = self.header["variables"][i]["dtype"]
        if dtype == "bfloat16":
            import ml_dtypes

            blocks = blocks.view(ml_dtypes.bfloat16)
        return block_stats(blocks)[..., 0]

    def read(
        self, start: int = 0, stop: int | None = None, status: PartStatus | None = None, on_damage: str = "raise"
    ) -> Recording:
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
        self._status = status
        n = status.n_steps
        stop = n if stop is None else max(0, min(stop, n))
        start = max(0, min(start, stop))
        unchecked = [
            what
            for what, kept in (
                ("its chunks", self.checksums),
                ("its metadata (commit.json, zarr.json)", status.checksums is not None),
            )
            if not kept
        ]
        if unchecked:
            warnings.warn(
                f"{self.part} was written before dtsgd_viz kept checksums of "
                f"{' and '.join(unchecked)}: it loads, but damage to them cannot "
                "be detected.",
                NoChecksumsWarning,
                stacklevel=3,
            )
        arrays, self.damage, cut = self._read_steps(start, stop, on_damage)
        if self.damage is not None:
            self._warn_damage(start, cut, stop)
        meta = dict(self.header, n_steps=cut - start)
        arrays["dropped_steps"] = self.rows("dropped_steps", 0, status.n_dropped)
        arrays["superseded_steps"] = np.unique(
            self.rows("superseded_steps", 0, status.n_superseded) if status.n_superseded else np.zeros(0, np.int64)
        )
        if status.n_skipped:  # stores from before skipped updates were recorded have none
            arrays["skipped_steps"] = self.rows("skipped_steps", 0, status.n_skipped)
            arrays["skipped_loss_scale"] = self.rows("skipped_loss_scale", 0, status.n_skipped)
        for i, _ in enumerate(meta["variables"]):
            initial = self._array(f"v{i}.initial")
            arrays[f"v{i}.initial"] = (
                read_rows(self.part, f"v{i}.initial", initial, 0, initial.shape[0]) if initial.ndim else initial[...]
            )
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
        return {k: v[: stop - start] for k, v in arrays.items()}, damage, stop

    def _warn_damage(self, start, cut, stop) -> None:
        try:
            left = self.rows("steps", cut, stop)
            span = f"updates {left[0]}..{left[-1]}"
        except ChunkDamageError:
            span = f"step rows {cut}..{stop - 1}"
        warnings.warn(
            f"{self.damage} on_damage='truncate': loaded the {cut - start} step(s) before "
            f"it and left out the {stop - cut} committed step(s) from it on ({span}).",
            RecordingDamagedWarning,
            stacklevel=5,
        )


def load_store(path: StrPath, on_damage: str = "raise") -> Recording:
    """``load_recording`` of a store folder: every committed step of each part, in
    order; the parts of a multi-client run merged with ``merge_recordings``, each cut to
    the updates every part committed (a run killed, or still writing, between two
    clients' commits warns with ``PartialCommitWarning`` naming the updates only some
    clients committed). Warns (``StoreNotClosedWarning``) when the run did not close the
    store, saying where each part stopped. ``on_damage``: see ``StoreReader.read`` (a part
    cut short by damage cuts the other parts to the same steps)."""
    check_on_damage(on_damage)
    path = os.fspath(path)
    parts = part_paths(path)
    if not parts:
        raise RecordingFileError(
            f"{path} is a dtsgd_viz store with no part yet (no client-<id>/commit.json): "
            "the run has not written its header."
        )
    read = []
    for part in parts:
        status = part_status(part)
        if not status.closed:
            warnings.warn(str(status), StoreNotClosedWarning, stacklevel=3)
        reader = StoreReader(path, status.client)
        read.append((reader, status, reader.read(status=status, on_damage=on_damage)))
    if len(read) == 1:
        return read[0][2]
    return merge_recordings(_common_updates(path, read))


def _common_updates(path, read) -> list[Recording]:
    """Each part's recording cut to the updates every part holds. ``read``: ``(reader,
    status, recording)`` per part, the recording read as of ``status``.

    A part holds the updates it committed (with ``on_damage="truncate"``, those before
    its first damaged chunk), but none after the iteration of a resume that another part
    made and it has not made yet: those are from the run the resume superseded. The
    updates kept are the intersection of what the parts hold (compared by update number,
    not by count: after a resume the steps need not start at 1). Warns
    (``PartialCommitWarning``) naming the committed updates some parts hold and others
    not; updates left out only because a part's chunk is damaged are the
    ``RecordingDamagedWarning``'s to name. The dropped and skipped updates kept are
    those every part committed."""
    caps = _resume_caps([status for _, status, _ in read])
    held = [_up_to(r.steps, cap) for (_, _, r), cap in zip(read, caps)]
    common = functools.reduce(np.intersect1d, held)
    committed = [
        h if reader.damage is None else _committed(reader, status, cap)
        for (reader, status, _), h, cap in zip(read, held, caps)
    ]
    known = [c for c in committed if c is not None]
    partial = np.setdiff1d(functools.reduce(np.union1d, known), functools.reduce(np.intersect1d, known))
    if len(partial):
        warnings.warn(_partial_text(path, read, committed, common, partial), PartialCommitWarning, stacklevel=4)
    dropped, skipped = (
        functools.reduce(np.intersect1d, [getattr(r, name) for _, _, r in read])
        for name in ("dropped_steps", "skipped_steps")
    )
    return [_take(r, common, dropped, skipped) for _, _, r in read]


def _resume_caps(statuses) -> list[int | None]:
    """Per part: the lowest iteration of a resume another part made and this one has
    not (the parts' resumes compared in order), or None."""
    made = [{(i, r.iteration) for i, r in enumerate(s.resumes)} for s in statuses]
    every = set().union(*made)
    return [min((it for _, it in every - own), default=None) for own in made]


def _up_to(steps, cap) -> np.ndarray:
    return steps if cap is None else steps[steps <= cap]


def _committed(reader, status, cap) -> np.ndarray | None:
    """The updates a part cut short by damage committed, or None when its ``steps``
    array itself is damaged there."""
    try:
        return _up_to(reader.rows("steps", 0, status.n_steps), cap)
    except ChunkDamageError:
        return None


def _take(r: Recording, common, dropped, skipped) -> Recording:
    """``r`` with only its steps in ``common`` (views when they are its first rows), its
    dropped steps in ``dropped`` and its skipped updates in ``skipped`` (those every
    part committed)."""
    rows = np.flatnonzero(np.isin(r.steps, common))
    drop, skip = np.isin(r.dropped_steps, dropped), np.isin(r.skipped_steps, skipped)
    if len(rows) == len(r) and drop.all() and skip.all():
        return r
    index = slice(0, len(rows)) if not len(rows) or rows[-1] == len(rows) - 1 else rows
    records = tuple(
        dataclasses.replace(
            v, blocks={k: b[index] for k, b in v.blocks.items()}, stats={k: s[index] for k, s in v.stats.items()}
        )
        for v in r.records
    )
    hp = r.hyperparameters
    return dataclasses.replace(
        r,
        records=records,
        steps=r.steps[index],
        hyperparameters=dataclasses.replace(hp, learning_rate=hp.learning_rate[index]),
        loss_values=r.loss_values[index],
        nonfinite=r.nonfinite[index],
        mismatch=r.mismatch[index],
        dropped_steps=r.dropped_steps[drop],
        skipped_steps=r.skipped_steps[skip],
        skipped_loss_scale=r.skipped_loss_scale[skip],
    )


def _partial_text(path, read, committed, common, partial) -> str:
    clients = [status.client for _, status, _ in read]
    counts = "; ".join(
        f"client {c} committed {len(steps)}" + (f", up to update {steps[-1]}" if len(steps) else "")
        for c, steps in zip(clients, committed)
        if steps is not None
    )
    has = "; ".join(
        f"client {c}: {_steps_text(np.intersect1d(steps, partial))}"
        for c, steps in zip(clients, committed)
        if steps is not None and np.isin(partial, steps).any()
    )
    return (
        f"{path}: its clients did not all commit the same updates ({counts}): the run "
        "was killed, or is still writing, between their commits. Loaded the "
        f"{len(common)} update(s) every client committed and left out update(s) "
        f"{_steps_text(partial)}, which only some clients committed ({has})."
    )


def _steps_text(steps, runs=6) -> str:
    """Update numbers as runs: ``14..15, 20``; past ``runs`` runs, how many in all."""
    steps = np.asarray(steps, np.int64)
    if not len(steps):
        return "none"
    cuts = np.flatnonzero(np.diff(steps) != 1) + 1
    spans = [(int(a[0]), int(a[-1])) for a in np.split(steps, cuts)]
    text = ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in spans[:runs])
    return text + (f", ... ({len(steps)} in all)" if len(spans) > runs else "")
