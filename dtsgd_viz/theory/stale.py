"""Which shards moved with the previous update's velocity, update by update, in numpy.

tf-keras' SGD assigns the new velocity ``v`` to its slot and then reads the slot again to
move the parameter. Inside a DTensor ``tf.function`` that read can see the *old* velocity
``v_prev`` on some devices and updates (a race). With recorded gradient ``g``, learning
rate ``lr`` and momentum ``mu``, a shard's parameter moves from ``p_prev`` by::

                 with the new velocity (the rule)   with the previous one (stale)
    plain/heavy  v                                  v_prev
    nesterov     mu * v - lr * g                    mu * v_prev - lr * g

(less ``p_prev * weight_decay * lr`` for a decayed variable). ``stale_hits`` compares
each device's recorded move with both and says which one it made.

    >>> import numpy as np
    >>> v_prev, v, g = np.float32(-0.1), np.float32(-0.19), np.float32(1.0)
    >>> rule, stale = moves(v_prev, v, g, 0.1, 0.9, nesterov=True, p_prev=np.float32(1.0))
    >>> float(rule), float(stale)  # 0.9 * v - 0.1 * g, 0.9 * v_prev - 0.1 * g
    (-0.271, -0.19)
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .reference import applied_momentum

if TYPE_CHECKING:
    from ..recording.recording import Recording

__all__ = ["CLASSES", "RULE", "STALE", "NEITHER", "CANNOT_TELL", "TOL", "StaleHits", "moves", "stale_hits"]

RULE, STALE, NEITHER, CANNOT_TELL = "rule", "stale", "neither", "cannot tell"
CLASSES = (RULE, STALE, NEITHER, CANNOT_TELL)
"""What a shard's update is, by its index in ``StaleHits.verdict``: it moved with the new
velocity (``RULE``), with the previous one (``STALE``), with neither, or the two moves
are too close to tell apart (``CANNOT_TELL``)."""

TOL = 1e-4
"""How far a shard's move may be from a candidate move and still match it, as a fraction
of the larger candidate's size (after float rounding); the candidates must differ by more
than twice this for an update to be told apart."""


def moves(
    v_prev: ArrayLike,
    v: ArrayLike,
    grad: ArrayLike,
    learning_rate: float,
    momentum: float,
    nesterov: bool,
    p_prev: ArrayLike,
    weight_decay: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """``(rule_move, stale_move)``: how far the parameter moves from ``p_prev`` with the
    new velocity ``v`` and with the previous one ``v_prev``, in float64."""
    v64, vp64, g64 = (np.asarray(x, np.float64) for x in (v, v_prev, grad))
    if nesterov:
        step = -np.float64(learning_rate) * g64
        rule, stale = momentum * v64 + step, momentum * vp64 + step
    else:
        rule, stale = v64, vp64
    if weight_decay:
        decay = np.float64(weight_decay) * np.float64(learning_rate) * np.asarray(p_prev, np.float64)
        rule, stale = rule - decay, stale - decay
    return rule, stale


@dataclasses.dataclass(frozen=True)
class StaleHits:
    """Per recorded update and per device, which velocity moved that device's shard.

    ``verdict[i, d]`` indexes ``CLASSES`` for update ``steps[i]`` on device ``d`` (mesh
    device order; ``devices[d]`` its name, ``block_of[d]`` the replica group it holds,
    ``block_names[b]`` that block's slice). ``rule_residual`` and ``stale_residual``
    (same shape) are how far the recorded move is from each candidate, as a fraction of
    the larger candidate's size after rounding (NaN where not measured); ``gap`` is how
    far the two candidates are apart on that scale. The recording keeps one copy of a
    replicated block (its first device's), so replicas show that copy's verdict;
    where the copies disagreed (``Recording.replica_mismatch``) the other copies are
    ``CANNOT_TELL``."""

    variable: str
    steps: np.ndarray
    devices: tuple[str, ...]
    block_of: tuple[int, ...]
    block_names: tuple[str, ...]
    verdict: np.ndarray
    rule_residual: np.ndarray
    stale_residual: np.ndarray
    gap: np.ndarray
    tol: float

    def count(self, kind: str) -> int:
        """How many shard-updates are ``kind`` (one of ``CLASSES``)."""
        if kind not in CLASSES:
            raise ValueError(f"Unknown class {kind!r}. Allowed: {list(CLASSES)}.")
        return int(np.sum(self.verdict == CLASSES.index(kind)))

    @property
    def counts(self) -> dict[str, int]:
        """``{class: number of shard-updates}`` for every class in ``CLASSES``."""
        return {kind: self.count(kind) for kind in CLASSES}

    @property
    def total(self) -> int:
        """Shard-updates classified: updates times devices."""
        return int(self.verdict.size)

    def where(self, kind: str) -> list[tuple[int, int]]:
        """``[(update, device), ...]`` classified ``kind``, by update then device."""
        if kind not in CLASSES:
            raise ValueError(f"Unknown class {kind!r}. Allowed: {list(CLASSES)}.")
        rows, cols = np.nonzero(self.verdict == CLASSES.index(kind))
        return [(int(self.steps[i]), int(d)) for i, d in zip(rows, cols)]


def _ulp_norm(x: np.ndarray, eps: float, tiny: float) -> np.ndarray:
    """Per leading index, the L2 norm of one unit in the last place of each element."""
    spacing = np.maximum(np.abs(x) * eps, tiny)
    return np.sqrt(np.sum(np.square(spacing).reshape(len(x), -1), axis=1))


def _norms(x: np.ndarray) -> np.ndarray:
    return np.sqrt(np.sum(np.square(x).reshape(len(x), -1), axis=1))


def _block_name(slices: tuple[slice, ...], shape: tuple[int, ...]) -> str:
    cut = [i for i, s in enumerate(slices) if not (s.start == 0 and s.stop == shape[i])]
    if not cut:
        return "whole"
    return "[" + ", ".join(f"{s.start}:{s.stop}" if i in cut else ":" for i, s in enumerate(slices)) + "]"


def _check(recording: Recording, variable: str, tol: float) -> None:
    if not (isinstance(tol, (int, float)) and not isinstance(tol, bool) and 0 <= tol < 0.5):
        raise ValueError(f"tol must be a number in [0, 0.5). Received: tol={tol!r}.")
    if variable not in recording.variables:
        raise ValueError(f"Unknown variable {variable!r}. This recording has: {list(recording.variables)}.")
    missing = [k for k in ("param", "velocity", "grad") if k not in recording.kinds]
    if missing or recording.mode != "full":
        raise ValueError(
            "stale_hits needs every value of kinds param, velocity and grad (Recorder(mode='full')). "
            f"Received: mode={recording.mode!r}, kinds={list(recording.kinds)}."
        )
    steps = np.asarray(recording.steps)
    ran = np.union1d(steps, recording.skipped_steps)
    if len(steps) and (np.any(np.diff(ran) != 1) or len(recording.dropped_steps)):
        raise ValueError(
            "stale_hits needs consecutive updates (Recorder(every=1), nothing dropped). "
            f"Received: steps {steps[:5].tolist()}... with {len(recording.dropped_steps)} dropped."
        )


def stale_hits(recording: Recording, variable: str, tol: float = TOL) -> StaleHits:
    """Classify every update of every device's shard of ``variable``: did the parameter
    move with the new velocity (``RULE``), the previous one (``STALE``), neither
    (``NEITHER``), or can the two not be told apart (``CANNOT_TELL``)?

    Per device, ``Recording.shard_values`` gives the shard's parameter, velocity and
    gradient after each update; the previous parameter is the one before (the
    recording's initial value at the first), the previous velocity likewise (zero before
    update 1; unknown, so ``CANNOT_TELL``, for a recording that began later). ``moves``
    gives the two candidate moves with the learning rate of each update and the momentum,
    Nesterov flag and weight decay of ``recording.hyperparameters``. With
    ``scale = max(|rule_move|, |stale_move|)`` (L2 norms over the shard) and the float
    rounding of the values taken off, a move within ``tol * scale`` of a candidate
    matches it; where the candidates are within ``2 * tol * scale`` of each other (the
    velocity did not change, as with Nesterov at ``momentum=0``, or a shard whose
    gradient is zero) the update is ``CANNOT_TELL``, as are non-finite ones and EMA
    overwrites (``hyperparameters.ema_overwrite_frequency``: no SGD move). The recording
    keeps one copy of a replicated block, so where the copies disagreed
    (``Recording.mismatch``, for the parameter or the velocity) the other copies are
    ``CANNOT_TELL`` at that update and the next.

    >>> hits = dtsgd_viz.stale_hits(stale, "d1/kernel")  # doctest: +SKIP
    >>> hits.counts  # doctest: +SKIP
    {'rule': 0, 'stale': 80, 'neither': 0, 'cannot tell': 0}
    """
    _check(recording, variable, tol)
    record = recording.record(variable)
    geometry = record.geometry
    p = recording.shard_values(variable, "param").astype(np.float64)
    v = recording.shard_values(variable, "velocity").astype(np.float64)
    g = recording.shard_values(variable, "grad").astype(np.float64)
    n, devices = p.shape[:2]
    initial = np.stack([np.asarray(record.initial, np.float64)[geometry.blocks[d]] for d in range(devices)])
    p_prev = np.concatenate([initial[None], p[:-1]])
    known_start = n == 0 or int(np.union1d(recording.steps, recording.skipped_steps)[0]) == 1
    v_prev = np.concatenate([np.zeros_like(v[:1]) if known_start else np.full_like(v[:1], np.nan), v[:-1]])
    hp = recording.hyperparameters
    mu = applied_momentum(hp)
    wd = hp.weight_decay if variable in hp.decayed else None
    if record.dtype == "bfloat16":  # numpy's finfo does not know ml_dtypes' bfloat16
        eps, smallest = 2.0**-7, 2.0**-126
    else:
        info = np.finfo(np.dtype(record.dtype))
        eps, smallest = float(info.eps), float(info.smallest_normal)
    tiny = smallest * eps

    verdict = np.full((n, devices), CLASSES.index(CANNOT_TELL), np.int8)
    rule_res, stale_res, gaps = (np.full((n, devices), np.nan) for _ in range(3))
    lrs = np.asarray(hp.learning_rate, np.float64)
    for i in range(n):
        rule, stale = moves(v_prev[i], v[i], g[i], float(lrs[i]), mu, hp.nesterov, p_prev[i], wd)
        moved = p[i] - p_prev[i]
        finite = np.all(np.isfinite((moved + rule + stale).reshape(devices, -1)), axis=1)
        # a float32 result is off by up to half a unit in its last place; the candidates
        # add the rounding of the velocities they are made of
        floor = (
            _ulp_norm(p[i], eps, tiny) + _ulp_norm(p_prev[i], eps, tiny) + 2 * _ulp_norm(v[i], eps, tiny)
        ) + 2 * _ulp_norm(np.nan_to_num(v_prev[i]), eps, tiny)
        scale = np.maximum(_norms(rule), _norms(stale))
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.maximum(0.0, _norms(moved - rule) - floor) / scale
            s = np.maximum(0.0, _norms(moved - stale) - floor) / scale
            gap = np.maximum(0.0, _norms(rule - stale) - floor) / scale
        told = finite & (scale > 0) & (gap > 2 * tol)
        rule_res[i], stale_res[i], gaps[i] = (np.where(finite & (scale > 0), x, np.nan) for x in (r, s, gap))
        verdict[i] = np.where(
            told,
            np.where(r <= tol, CLASSES.index(RULE), np.where(s <= tol, CLASSES.index(STALE), CLASSES.index(NEITHER))),
            CLASSES.index(CANNOT_TELL),
        )
    # copies that disagreed: only the first device's was recorded (bits 1: param, 2: velocity)
    index = recording.variables.index(variable)
    disagreed = (np.asarray(recording.mismatch)[:, index] & 0b11) != 0
    disagreed = disagreed | np.concatenate([[False], disagreed[:-1]])  # the next update starts from them
    others = [d for d in range(devices) if geometry.replica_groups[geometry.group_of[d]][0] != d]
    if others and np.any(disagreed):
        verdict[np.ix_(disagreed, others)] = CLASSES.index(CANNOT_TELL)
        for x in (rule_res, stale_res, gaps):
            x[np.ix_(disagreed, others)] = np.nan
    overwrite = hp.ema_overwrite_frequency
    if overwrite:  # the weights were replaced by their moving averages
        verdict[np.asarray(recording.steps) % overwrite == 0] = CLASSES.index(CANNOT_TELL)
    names = tuple(name.split("device:")[-1] for name in recording.shard_devices(variable))
    block_names = tuple(
        _block_name(geometry.blocks[group[0]], geometry.global_shape) for group in geometry.replica_groups
    )
    return StaleHits(
        variable,
        np.asarray(recording.steps, np.int64),
        names,
        tuple(geometry.group_of),
        block_names,
        verdict,
        rule_res,
        stale_res,
        gaps,
        float(tol),
    )
