"""A recording: what an instrumented optimizer did, step by step, as plain numpy data.

No TensorFlow objects live here: a recording saves, loads and draws anywhere::

    rec = dtsgd_viz.load_recording("run.npz")
    rec.global_values("w", "velocity")     # (n_steps, *global_shape)
    rec.shard_values("w", "velocity")      # (n_steps, n_devices, *local_shape)
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import math
import os
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from ..geometry import ShardGeometry, shard_geometry
from ..specs import LayoutSpec, MeshSpec
from .checksums import checksummed_header

KINDS = ("param", "velocity", "grad")
"""What can be recorded: the parameter after the update, the momentum slot after
it, and the gradient applied in it."""

FORMAT = "dtsgd_viz.recording"
VERSION = 2
"""The newest file format this library writes and reads. A file gets the lowest version
that holds its data, as numpy's ``.npy`` does: version 2 only when a variable is
bfloat16 (stored as uint16 bit patterns, which a version-1 reader would take for
integers); everything else stays version 1, so older dtsgd_viz reads it."""
READS = (1, VERSION)

DTYPES = ("float16", "bfloat16", "float32", "float64")
"""What a recording file holds: the dtypes tf-keras trains in (numpy has no bfloat16;
``ml_dtypes``, which TensorFlow depends on, provides it and is imported only for it)."""

NONFINITE_GRAD, NONFINITE_PARAM = 1, 2


def block_stats(blocks: np.ndarray, chunk_elements: int = 2**22) -> np.ndarray:
    """``(n_steps, n_blocks, 3)`` float64 L2 norm, mean and max |x| of each block, a few
    steps at a time (float64 temporaries stay small however long the recording)."""
    n, nb = blocks.shape[:2]
    flat = blocks.reshape(n, nb, math.prod(blocks.shape[2:]))  # not -1: n may be 0
    out = np.zeros((n, nb, 3))
    if flat.shape[-1] == 0:
        return out
    per = max(1, chunk_elements // max(1, nb * flat.shape[-1]))
    for start in range(0, n, per):
        x = flat[start : start + per].astype(np.float64)
        out[start : start + per, :, 0] = np.sqrt(np.einsum("ijk,ijk->ij", x, x))
        out[start : start + per, :, 1] = x.mean(axis=-1)
        out[start : start + per, :, 2] = np.maximum(x.max(axis=-1), -x.min(axis=-1))
    return out


class RecordingFileError(ValueError):
    """A recording file that cannot be read: truncated, corrupted, or not a recording."""


def check_kinds(kinds: str | Iterable[str]) -> tuple[str, ...]:
    if isinstance(kinds, str):
        kinds = (kinds,)
    kinds = tuple(kinds)
    bad = [k for k in kinds if k not in KINDS]
    if bad or not kinds:
        raise ValueError(f"Unknown kind(s) {bad or '(none given)'}. Allowed: {list(KINDS)}.")
    return tuple(k for k in KINDS if k in kinds)


@dataclasses.dataclass(frozen=True)
class Hyperparameters:
    """``learning_rate`` per recorded step (schedules change it; as the optimizer holds
    it, a float32 variable, in float64), ``momentum`` (as given), ``nesterov``, and
    ``applied_momentum``: the momentum tf-keras really multiplies by, read from
    TensorFlow (``tf.cast`` turns the Python float into float32 first, so a float64
    variable moves with ``float64(float32(0.9))``). Both are then cast to each
    variable's dtype, as tf-keras does (``reference.sgd_step`` does the same)."""

    learning_rate: np.ndarray
    momentum: float
    nesterov: bool
    applied_momentum: float | None = None
    weight_decay: float | None = None
    """What tf-keras multiplies by (float32 first, as for the momentum): before each update
    it does ``p -= p * weight_decay * learning_rate`` for the variables in ``decayed``."""
    decayed: tuple[str, ...] = ()
    ema_overwrite_frequency: int | None = None
    """With ``use_ema``: every this many updates the weights are overwritten with their
    moving averages (those updates follow no SGD rule; ``check_recording`` skips them)."""


@dataclasses.dataclass(frozen=True)
class Part:
    """The part of a multi-client run one client recorded: client ``client_id`` of
    ``num_clients``, whose devices ``devices`` (mesh device numbers, in the order the
    client holds their shards) hold the blocks it kept. A part's ``blocks`` and ``stats``
    hold only the replica groups of those devices (``geometry.held_groups(devices)``, in
    group order); its ``initial`` values are NaN outside them. ``merge_recordings``
    puts the parts together into the recording of the whole mesh."""

    client_id: int
    num_clients: int
    devices: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "devices", tuple(int(d) for d in self.devices))

    def __str__(self) -> str:
        return f"client {self.client_id} of {self.num_clients} (devices {list(self.devices)})"

    def to_dict(self) -> dict:
        return {"client_id": self.client_id, "num_clients": self.num_clients, "devices": list(self.devices)}

    @classmethod
    def from_dict(cls, d: Mapping) -> Part:
        return cls(int(d["client_id"]), int(d["num_clients"]), tuple(d["devices"]))


@dataclasses.dataclass(frozen=True, eq=False)
class VariableRecord:
    """One variable's history: unique blocks only (replicas stored once).

    ``blocks[kind]`` has shape ``(n_steps, n_unique_blocks, *local_shape)``, blocks in
    the order of ``geometry.replica_groups`` (full mode). ``stats[kind]`` has shape
    ``(n_steps, n_unique_blocks, 3)``: L2 norm, mean, max |x| (stats mode).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    layout: LayoutSpec
    initial: np.ndarray
    blocks: Mapping[str, np.ndarray]
    stats: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)

    @functools.cached_property
    def geometry(self) -> ShardGeometry:
        return shard_geometry(self.shape, self.layout)


@dataclasses.dataclass(frozen=True, eq=False)
class Recording:
    """Per-step, per-shard history of an optimizer run (see the module docstring).

    ``nonfinite[i, v]`` holds bits (1: gradient, 2: parameter) for step ``i`` and
    variable ``v`` that held NaN/Inf; ``mismatch[i, v]`` holds one bit per kind
    (in ``KINDS`` order) whose replicated copies disagreed. ``part`` is None for a
    whole recording; in a multi-client run each client records its ``Part``.
    """

    mesh: MeshSpec
    """The device mesh the run's variables were laid out on (dim names, sizes, devices)."""
    records: tuple[VariableRecord, ...]
    """One ``VariableRecord`` per recorded variable, in the recorder's order (``variables``
    names them; ``record(name)`` finds one)."""
    kinds: tuple[str, ...]
    """What was recorded of each variable: some of ``KINDS`` (``"param"``, ``"velocity"``,
    ``"grad"``), in that order."""
    steps: np.ndarray
    """``(n_steps,)`` int64: the update each recorded step is, by the optimizer's
    ``iterations`` once it is applied (1 for the first update; ``every=k`` keeps k, 2k, ...)."""
    hyperparameters: Hyperparameters
    """The optimizer's settings: learning rate per recorded step, momentum, Nesterov."""
    loss_values: np.ndarray
    """``(n_steps,)`` float64: the loss reported at each recorded step, NaN where none was
    (``loss`` is None when none ever was)."""
    nonfinite: np.ndarray
    """``(n_steps, n_variables)`` bits: 1 if the gradient, 2 if the parameter of variable
    ``v`` held NaN/Inf at step ``i`` (``nonfinite_steps`` lists those steps)."""
    mismatch: np.ndarray
    """``(n_steps, n_variables)`` bits, one per kind in ``KINDS`` order, set where the
    replicated copies of a block of that kind disagreed (``replica_mismatch``)."""
    dropped_steps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    """Updates the recorder should have kept but lost: overwritten in the device buffers
    before a flush read them (the recorder warns); they are not in ``steps``."""
    mode: str = "full"
    """``"full"``: every block's values (``blocks``); ``"stats"``: only each block's L2
    norm, mean and max |x| (``stats``), as ``Recorder(mode=...)`` was given."""
    part: Part | None = None
    """None for a whole recording; in a multi-client run, the ``Part`` one client recorded
    (``merge_recordings`` puts the parts together)."""
    superseded_steps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    """Steps an earlier run recorded after the checkpoint a resumed run restored
    (``Recorder(path=..., resume=True)``): replaced by the resumed run's, never read twice."""
    communication: Any = None  # a CommunicationReport (not imported: it imports this module)
    """The ``CommunicationReport`` of the run's training-step function: the collectives of
    one update (``with_communication`` attaches it), or None."""
    skipped_steps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    """Updates a dynamic loss scale (``MeshLossScaleOptimizer``, ``mixed_float16``) skipped
    because a gradient overflowed, by the optimizer's iteration (tf-keras counts a skipped
    update: the next applied one is the iteration after it, as ``steps`` numbers it). A
    skipped update changes no parameter and no velocity; it is in neither ``steps`` nor
    ``dropped_steps``."""
    skipped_loss_scale: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.float64))
    """The loss scale each of ``skipped_steps`` multiplied the loss by (the scale it then
    halved)."""

    # ---- lookup -------------------------------------------------------------------

    @property
    def variables(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.records)

    def __len__(self) -> int:
        return len(self.steps)

    def record(self, name: str) -> VariableRecord:
        for r in self.records:
            if r.name == name:
                return r
        raise ValueError(f"Unknown variable {name!r}. This recording has: {list(self.variables)}.")

    def _whole(self) -> None:
        if self.part is not None:
            raise ValueError(
                f"This recording is the part of {self.part}: it holds only the blocks of "
                "those devices. Put the parts of all clients together with "
                "dtsgd_viz.merge_recordings(parts) or dtsgd_viz.load_recording(folder)."
            )

    def _blocks(self, name: str, kind: str) -> tuple[VariableRecord, np.ndarray]:
        self._whole()
        rec = self.record(name)
        if kind not in KINDS:
            raise ValueError(f"Unknown kind {kind!r}. Allowed: {list(KINDS)}.")
        if self.mode == "stats":
            raise ValueError(
                f"This recording was made with Recorder(mode='stats'): it holds per-shard "
                f"norm/mean/max only, not the values of {name!r}. Use shard_stats(), or "
                "record with mode='full' for this view."
            )
        if kind not in rec.blocks:
            raise ValueError(
                f"Kind {kind!r} was not recorded (Recorder kinds={list(self.kinds)}). "
                f"Record it with Recorder(kinds=(..., {kind!r}))."
            )
        return rec, rec.blocks[kind]

    def layout(self, name: str) -> LayoutSpec:
        return self.record(name).layout

    def shape(self, name: str) -> tuple[int, ...]:
        return self.record(name).shape

    def geometry(self, name: str) -> ShardGeometry:
        return self.record(name).geometry

    def initial(self, name: str) -> np.ndarray:
        """The parameter before the first update the recorder saw."""
        return self.record(name).initial

    def global_values(self, name: str, kind: str = "param") -> np.ndarray:
        """``(n_steps, *global_shape)``: the shards of each step put back together."""
        rec, blocks = self._blocks(name, kind)
        return rec.geometry.assemble(blocks)

    def shard_values(self, name: str, kind: str = "param") -> np.ndarray:
        """``(n_steps, n_devices, *local_shape)`` in mesh device order (replicas repeated)."""
        rec, blocks = self._blocks(name, kind)
        return blocks[:, list(rec.geometry.group_of)]

    def shard_stats(self, name: str, kind: str = "param") -> np.ndarray:
        """``(n_steps, n_devices, 3)``: each shard's L2 norm, mean and max |x| per step, in
        mesh device order. Stored in stats mode, computed from the values in full mode."""
        self._whole()
        rec = self.record(name)
        if self.mode == "stats":
            if kind not in KINDS:
                raise ValueError(f"Unknown kind {kind!r}. Allowed: {list(KINDS)}.")
            if kind not in rec.stats:
                raise ValueError(f"Kind {kind!r} was not recorded (Recorder kinds={list(self.kinds)}).")
            stats = rec.stats[kind]
        else:
            stats = block_stats(self._blocks(name, kind)[1])
        return stats[:, list(rec.geometry.group_of)]

    def shard_devices(self, name: str) -> tuple[str, ...]:
        """The device holding each shard of ``shard_values``."""
        return self.record(name).layout.mesh.device_names

    def path(self, name: str) -> np.ndarray:
        """``(n_steps + 1, *shape)``: the initial parameter then each recorded one."""
        return np.concatenate([self.initial(name)[None], self.global_values(name, "param")])

    # ---- step flags ------------------------------------------------------------------

    @property
    def loss(self) -> np.ndarray | None:
        """Loss per recorded step (NaN where not reported); None if never reported."""
        if np.all(np.isnan(self.loss_values)):
            return None
        return self.loss_values

    @property
    def nonfinite_steps(self) -> np.ndarray:
        """Steps where a gradient or parameter held NaN/Inf."""
        return self.steps[np.any(self.nonfinite != 0, axis=1)] if len(self) else self.steps

    @property
    def replica_mismatch(self) -> np.ndarray:
        """Steps where copies of a replicated block disagreed."""
        return self.steps[np.any(self.mismatch != 0, axis=1)] if len(self) else self.steps

    @property
    def nbytes(self) -> int:
        total = sum(
            a.nbytes
            for a in (self.steps, self.loss_values, self.nonfinite, self.mismatch, self.hyperparameters.learning_rate)
        )
        for r in self.records:
            total += r.initial.nbytes + sum(b.nbytes for b in r.blocks.values())
            total += sum(b.nbytes for b in r.stats.values())
        return total

    def __repr__(self) -> str:
        span = f"steps {self.steps[0]}..{self.steps[-1]}" if len(self) else "no steps"
        hp = self.hyperparameters
        return (
            f"<Recording {len(self)} updates ({span}) of {len(self.records)} variable(s) "
            f"on {self.mesh}; {self.mode} mode, kinds={list(self.kinds)}; momentum={hp.momentum}, "
            f"nesterov={hp.nesterov}{'' if self.part is None else f'; part of {self.part}'}>"
        )

    # ---- files ---------------------------------------------------------------------------

    def header(self) -> dict:
        """The JSON header of a recording file (and of a store part: ``store.py``)."""
        return {
            "format": FORMAT,
            "version": VERSION if any(r.dtype == "bfloat16" for r in self.records) else 1,
            "mesh": self.mesh.to_dict(),
            "kinds": list(self.kinds),
            "mode": self.mode,
            "momentum": float(self.hyperparameters.momentum),
            "applied_momentum": (
                None if self.hyperparameters.applied_momentum is None else float(self.hyperparameters.applied_momentum)
            ),
            "nesterov": bool(self.hyperparameters.nesterov),
            **(
                {}
                if self.hyperparameters.weight_decay is None
                else {
                    "weight_decay": float(self.hyperparameters.weight_decay),
                    "decayed": list(self.hyperparameters.decayed),
                }
            ),
            **(
                {}
                if self.hyperparameters.ema_overwrite_frequency is None
                else {"ema_overwrite_frequency": int(self.hyperparameters.ema_overwrite_frequency)}
            ),
            "n_steps": len(self),
            **({} if self.communication is None else {"communication": self.communication.to_dict()}),
            **({} if self.part is None else {"part": self.part.to_dict()}),
            "variables": [
                {"name": r.name, "shape": list(r.shape), "dtype": r.dtype, "layout": r.layout.to_dict()}
                for r in self.records
            ],
        }

    def with_communication(self, report: Any) -> Recording:
        """This recording with ``report`` (``dtsgd_viz.communication(step)``: what each
        update moved between devices) attached: saved and loaded with it, read without
        TensorFlow (``recording.communication``)."""
        if not (hasattr(report, "to_dict") and hasattr(report, "collectives")):
            raise TypeError(
                "with_communication takes a CommunicationReport (dtsgd_viz."
                f"communication(step)). Received: {type(report).__name__}."
            )
        if report.mesh != self.mesh:
            raise ValueError(f"The report is of a step on {report.mesh}; this recording is on {self.mesh}.")
        return dataclasses.replace(self, communication=report)

    def to_tensorboard(
        self,
        logdir: str | os.PathLike[str],
        *,
        run: str | None = None,
        overwrite: bool = False,
        histograms: bool = True,
        max_histograms: int = 200,
    ) -> str:
        """Write this recording as TensorBoard events in ``logdir`` (or ``logdir/run``, a
        run of that name): per-block norms, means and max |x| as scalars and each
        variable's values as histograms, by update (``dtsgd_viz.recording.tensorboard``).
        Returns the event file's path. An earlier export in that folder raises
        ``FileExistsError``, or is replaced with ``overwrite=True``."""
        from .tensorboard import write_tensorboard

        return write_tensorboard(
            self, logdir, run=run, overwrite=overwrite, histograms=histograms, max_histograms=max_histograms
        )

    def save(self, path: str | os.PathLike[str]) -> str:
        """Write a portable ``.npz`` (zip of ``.npy`` + a JSON header; no pickle).

        Values keep their dtype (``DTYPES``: float16, bfloat16, float32, float64);
        any other dtype is a ``ValueError`` before anything is written."""
        path = os.fspath(path)
        values = [_encode(r) for r in self.records]
        meta = self.header()
        arrays = {
            "meta": np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8),
            "steps": self.steps,
            "learning_rate": self.hyperparameters.learning_rate,
            "loss": self.loss_values,
            "nonfinite": self.nonfinite,
            "mismatch": self.mismatch,
            "dropped_steps": self.dropped_steps,
            "superseded_steps": self.superseded_steps,
            "skipped_steps": self.skipped_steps,
            "skipped_loss_scale": self.skipped_loss_scale,
        }
        for i, r in enumerate(self.records):
            for key, array in values[i].items():
                arrays[f"v{i}.{key}"] = array
            for kind, stats in r.stats.items():
                arrays[f"v{i}.{kind}.stats"] = stats
        # the crc32 of every member and of the header itself: load_recording checks them
        arrays["meta"] = np.frombuffer(checksummed_header(meta, arrays), dtype=np.uint8)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            os.makedirs(folder, exist_ok=True)  # "parts/part-0.npz" into a new folder
        tmp = f"{path}.{os.getpid()}.partial"
        try:
            with open(tmp, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)  # readers see the old file or the new one
        except OSError as e:
            with contextlib.suppress(OSError):
                os.remove(tmp)
            raise OSError(e.errno, f"Cannot save the recording to {path}: {e.strerror}") from e
        return path


def dtype_list() -> str:
    return ", ".join(DTYPES[:-1]) + f" or {DTYPES[-1]}"


def _encode(r: VariableRecord) -> dict[str, np.ndarray]:
    """``{"initial" or kind: array}``: one variable's values as a file stores them
    (bfloat16 as its uint16 bit patterns: ``.npy`` knows no bfloat16)."""
    values = {"initial": r.initial, **r.blocks}
    if r.dtype not in DTYPES:
        raise ValueError(
            f"Cannot save variable {r.name!r}: its values are {r.dtype}. A recording file "
            f"holds {dtype_list()} (the dtypes tf-keras trains in)."
        )
    for key, array in values.items():
        got = np.asarray(array).dtype.name
        if got != r.dtype:
            what = "initial value is" if key == "initial" else f"{key!r} values are"
            raise ValueError(
                f"Cannot save variable {r.name!r}: its dtype is {r.dtype} but its {what} "
                f"{got}. Every array of a variable has the variable's dtype."
            )
    if r.dtype == "bfloat16":
        return {key: np.asarray(a).view(np.uint16) for key, a in values.items()}
    return values
