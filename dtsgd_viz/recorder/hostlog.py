"""Host side of a recording: one entry per recorded step (``entry``), kept bounded in a
``HostLog`` (a ring of the last N steps, or an evenly thinned history whose stride doubles
whenever it fills), and turned into a ``Recording`` when it is read (``assemble``)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..recording.recording import (
    KINDS,
    NONFINITE_GRAD,
    NONFINITE_PARAM,
    Hyperparameters,
    Recording,
    VariableRecord,
)


class HostLog:
    """Per-step entries (dicts of numpy arrays) in step order.

    ``max_steps=None`` keeps everything. With ``decimate=False`` the oldest entries are
    dropped beyond ``max_steps``; with ``decimate=True`` every other entry is dropped and
    the stride doubles, so the kept steps stay evenly spaced over the whole run.
    """

    def __init__(self, max_steps: int | None = None, decimate: bool = False, every: int = 1):
        self.max_steps, self.decimate, self.every = max_steps, decimate, every
        self.stride = 1
        self.entries: list[tuple[int, dict]] = []
        self.version = 0

    def wants(self, step: int) -> bool:
        return not self.decimate or (step // self.every) % self.stride == 0

    def append(self, step: int, entry: dict) -> None:
        if not self.wants(step):
            return
        self.entries.append((step, entry))
        self.version += 1
        if self.max_steps is None or len(self.entries) <= self.max_steps:
            return
        if self.decimate:
            while len(self.entries) > self.max_steps:
                self.stride *= 2
                self.entries = [e for e in self.entries if (e[0] // self.every) % self.stride == 0]
        else:
            del self.entries[: len(self.entries) - self.max_steps]

    def __len__(self) -> int:
        return len(self.entries)


class StatsLog(HostLog):
    """A ``HostLog`` for stats mode that keeps its steps in columns: per step the
    iteration, learning rate and loss, and 3 float32 (L2 norm, mean, max |x|) per unique
    block of each recorded (variable, kind) in one growing array, so a long run costs
    12 bytes per block and kind plus 24 bytes per step on the host (a dict of small
    arrays per step cost ~2.7 KB: ``benchmarks/keep_every_step.py``). ``entries`` builds
    the usual ``(step, entry)`` pairs when the recording is read."""

    def __init__(self, max_steps: int | None = None, decimate: bool = False, every: int = 1):
        super().__init__(max_steps, decimate, every)
        self._n = 0
        self._keys: dict[tuple[str, str], tuple[int, int]] | None = None  # (name, kind) -> rows
        self._steps = np.zeros(0, np.int64)
        self._meta = np.zeros((0, 2))
        self._stats = np.zeros((0, 0, 3), np.float32)

    def _grow(self, need):
        cap = max(16, need, 2 * len(self._steps))
        if self.max_steps is not None and not self.decimate:
            cap = min(cap, 2 * self.max_steps)  # a ring compacts itself at 2x
        for name in ("_steps", "_meta", "_stats"):
            old = getattr(self, name)
            new = np.empty((cap, *old.shape[1:]), old.dtype)
            new[: self._n] = old[: self._n]
            setattr(self, name, new)

    def _keep(self, mask):
        n = int(mask.sum())
        for name in ("_steps", "_meta", "_stats"):
            arr = getattr(self, name)
            arr[:n] = arr[: self._n][mask]
        self._n = n

    def append(self, step: int, entry: dict) -> None:
        if not self.wants(step):
            return
        stats = entry["stats"]
        if self._keys is None:
            self._keys, row = {}, 0
            for key, value in stats.items():
                self._keys[key] = (row, len(value))
                row += len(value)
            self._stats = np.zeros((0, row, 3), np.float32)
        if self._n == len(self._steps):
            if self.max_steps is not None and not self.decimate and self._n >= self.max_steps:
                self._keep(np.arange(self._n) >= self._n - self.max_steps + 1)
            else:
                self._grow(self._n + 1)
        i = self._n
        self._steps[i] = step
        self._meta[i] = (entry["lr"], entry["loss"])
        for key, (row, rows) in self._keys.items():
            self._stats[i, row : row + rows] = stats[key]
        self._n += 1
        self.version += 1
        if self.decimate and self.max_steps is not None and self._n > self.max_steps:
            while self._n > self.max_steps:
                self.stride *= 2
                self._keep((self._steps[: self._n] // self.every) % self.stride == 0)

    @property
    def _first(self) -> int:
        over = 0 if self.max_steps is None or self.decimate else self._n - self.max_steps
        return max(0, over)

    def __len__(self) -> int:
        return self._n - self._first

    @property
    def entries(self) -> list[tuple[int, dict]]:
        out = []
        for i in range(self._first, self._n):
            stats = {key: self._stats[i, row : row + rows] for key, (row, rows) in (self._keys or {}).items()}
            out.append(
                (
                    int(self._steps[i]),
                    {"lr": self._meta[i, 0], "loss": self._meta[i, 1], "mismatch": None, "stats": stats},
                )
            )
        return out

    @entries.setter
    def entries(self, value: list) -> None:
        if value:
            raise ValueError("StatsLog keeps its steps in columns; append to it")

    @property
    def nbytes(self) -> int:
        return self._steps.nbytes + self._meta.nbytes + self._stats.nbytes


def entry(meta: Any, data: dict, watched: list, kinds: Sequence[str], mode: str) -> dict:
    """One recorded step. ``meta``: (iteration, learning rate, loss); ``data[(name,
    kind)]``: the shards of this process's devices, as ``unpack`` gives them (full mode:
    replicas compared, then kept once, as the read-only views they arrived as; ``w.held``
    says where each block's copies are: in a multi-client run a client holds some blocks
    only) or the ``(n_held, 3)`` stats."""
    out = {"lr": meta[1], "loss": meta[2], "mismatch": np.zeros(len(watched), np.uint8)}
    if mode != "full":
        out["stats"] = data
        return out
    blocks = {}
    for wi, w in enumerate(watched):
        for ki, kind in enumerate(KINDS):
            if kind not in kinds:
                continue
            parts = data[(w.name, kind)]
            if any(not np.array_equal(parts[p], parts[at[0]], equal_nan=True) for _, at in w.held for p in at[1:]):
                out["mismatch"][wi] |= 1 << ki
            blocks[(w.name, kind)] = [parts[at[0]] for _, at in w.held]
    out["values"] = blocks
    return out


def stats_range_warning(name: str, kind: str, stats: Any, steps: Any) -> None:
    """Warn (once per variable, kind and kind of trouble) where stats mode's float32 sum
    of squares or sum left float32's range although every value was finite (max|x|, exact,
    says so): a block norm above ~1.8e19 or a sum above ~3.4e38 shows inf, a block whose
    squares all underflow (|x| below ~1e-19) shows a norm of 0."""
    if not len(stats):
        return
    norm, mean, max_abs = stats[..., 0], stats[..., 1], stats[..., 2]
    finite = np.isfinite(max_abs)
    for what, hit in (
        (
            "overflowed float32 (block norm above ~1.8e19 or sum above ~3.4e38): the norm or mean shows inf",
            finite & (np.isinf(norm) | np.isinf(mean)),
        ),
        ("underflowed float32 (every |x| below ~1e-19): the norm shows 0", finite & (norm == 0) & (max_abs > 0)),
    ):
        rows = np.flatnonzero(hit.any(axis=1))
        if len(rows):
            import warnings

            warnings.warn(
                f"Recorder(mode='stats'): the statistics of {name!r} ({kind}) {what} at "
                f"update {int(steps[rows[0]])} ({len(rows)} update(s)), although every value "
                "was finite; max_abs is exact. Record with mode='full' for exact values.",
                RuntimeWarning,
                stacklevel=3,
            )


def assemble(
    entries: list,
    watched: list,
    kinds: tuple[str, ...],
    mode: str,
    initial: Any,
    *,
    mesh: Any,
    momentum: float,
    nesterov: bool,
    dropped: Sequence[int],
    applied_momentum: Any = None,
    part: Any = None,
    skipped: Sequence = (),
    **hyper: Any,
) -> Recording:
    """The ``Recording`` of ``entries`` (``(step, entry)`` pairs): full-mode blocks are
    copied once from the staged views into the recording's own arrays. ``part``: the
    ``Part`` a client of a multi-client run holds (its blocks only); ``skipped``: the
    ``(step, loss scale)`` of each update a dynamic loss scale skipped."""
    n, v = len(entries), len(watched)
    records = []
    nonfinite = np.zeros((n, v), np.uint8)
    for i, w in enumerate(watched):
        local = w.geometry.local_shape
        blocks, stats = {}, {}
        held = len(w.held)
        for k in kinds:
            if mode == "full":
                out = np.empty((n, held, *local), w.dtype)
                if n:
                    np.stack(
                        [b for _, e in entries for b in e["values"][(w.name, k)]], out=out.reshape(n * held, *local)
                    )
                blocks[k] = out
                # NaN and Inf reach the max or the min (sizes spelled out: n may be 0)
                flat = out.reshape(n, held * math.prod(local))
                bad = ~np.isfinite(flat.max(axis=1, initial=0)) | ~np.isfinite(flat.min(axis=1, initial=0))
            else:
                vals = [e["stats"][(w.name, k)] for _, e in entries]
                # float32, as the host log and the store keep them (computed in float64
                # from the devices' float32 sums, then rounded: float64 would add no digit)
                stats[k] = (np.stack(vals) if vals else np.zeros((0, held, 3))).astype(np.float32, copy=False)
                # NaN reaches the mean and max|x|, Inf max|x| (exact); a mean or norm that
                # overflowed float32 while every value is finite is not a NaN/Inf
                bad = (np.isnan(stats[k][..., 1]) | ~np.isfinite(stats[k][..., 2])).any(axis=1)
                stats_range_warning(w.name, k, stats[k], [s for s, _ in entries])
            bit = {"grad": NONFINITE_GRAD, "param": NONFINITE_PARAM}.get(k, 0)
            nonfinite[:, i] |= bad.astype(np.uint8) * np.uint8(bit)
        records.append(VariableRecord(w.name, w.geometry.global_shape, w.dtype, w.layout, initial[i], blocks, stats))
    lr = np.array([e["lr"] for _, e in entries], np.float64).reshape(n)
    return Recording(
        mesh=mesh,
        records=tuple(records),
        kinds=kinds,
        steps=np.array([s for s, _ in entries], np.int64).reshape(n),
        hyperparameters=Hyperparameters(lr, momentum, nesterov, applied_momentum, **hyper),
        loss_values=np.array([e["loss"] for _, e in entries], np.float64).reshape(n),
        nonfinite=nonfinite,
        mismatch=np.array(
            [np.zeros(v, np.uint8) if e["mismatch"] is None else e["mismatch"] for _, e in entries], np.uint8
        ).reshape(n, v),
        dropped_steps=np.asarray(dropped, np.int64),
        mode=mode,
        part=part,
        skipped_steps=np.array([s for s, _ in skipped], np.int64),
        skipped_loss_scale=np.array([scale for _, scale in skipped], np.float64),
    )
