"""``plot_blocks``' numbers in numpy: each block's error under each run, and the finding."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core.empty import check_runs
from ..paths.geometry import rule_name

if TYPE_CHECKING:
    from ...recording import Recording
    from ...specs import MeshSpec

__all__ = ["BlockErrors", "block_errors", "blocks_finding", "tail_means"]

TAIL = 10  # the finding compares mean errors over the last TAIL updates, never one point
LEVEL = 1.1  # runs whose tail means differ by less than this factor on every block end level


@dataclasses.dataclass(frozen=True)
class BlockErrors:
    """Per run, each unique block's error after k = 0..N updates (``errors[run]``: ``(N + 1, n_blocks)``)."""

    variable: str
    measure: str  # "target" or "gradient"
    updates: np.ndarray
    errors: Mapping[str, np.ndarray]
    devices: tuple[tuple[int, ...], ...]
    device_names: tuple[tuple[str, ...], ...]
    slices: tuple[tuple[slice, ...], ...]
    mesh: MeshSpec
    block_of: tuple[int, ...]
    shape: tuple[int, ...] = ()  # the variable's global shape

    @property
    def runs(self) -> tuple[str, ...]:
        """The run names, in the order they were given."""
        return tuple(self.errors)

    @property
    def num_blocks(self) -> int:
        """How many unique blocks the variable is cut into."""
        return len(self.devices)

    def block_name(self, block: int) -> str:
        """The block's slice: ``rows 4-7``, ``cols 0-1``, ``entries 2-3``, ``[4:8, 0:3]`` or ``whole tensor``."""
        sl = self.slices[block]
        cut = [i for i, s in enumerate(sl) if not (s.start == 0 and s.stop == self.shape[i])]
        if not cut:
            return "whole tensor"
        if len(cut) == 1 and len(sl) <= 2:
            s = sl[cut[0]]
            words = ("entries",) if len(sl) == 1 else ("rows", "cols")
            return f"{words[cut[0]]} {s.start}-{s.stop - 1}"
        return "[" + ", ".join(f"{s.start}:{s.stop}" for s in sl) + "]"


def _check_runs(runs: Mapping[str, Recording], variable: str) -> None:
    check_runs(runs, variable, "Blocks compare only between runs of one layout.")
    first_name, first = next(iter(runs.items()))
    for name, rec in runs.items():
        if not np.array_equal(rec.steps, first.steps):
            raise ValueError(
                f"Runs {first_name!r} and {name!r} recorded different updates "
                f"({len(first.steps)} updates {first.steps[0]}..{first.steps[-1]} vs {len(rec.steps)} updates "
                f"{rec.steps[0]}..{rec.steps[-1]}). Record both runs at the same updates."
            )


def block_errors(runs: Mapping[str, Recording], variable: str, target: np.ndarray | None = None) -> BlockErrors:
    """Each unique block's error after k = 0..N updates under each run: ``||w_k[b] - target[b]||``, or its
    gradient norm at ``w_k`` without a ``target`` (NaN at ``w_N``); the runs must share a layout and updates.

    >>> errs = block_errors(probes, "d2/kernel", bowl.minimum[0])  # doctest: +SKIP
    >>> errs.errors["nesterov"].shape  # doctest: +SKIP
    (61, 4)
    """
    _check_runs(runs, variable)
    first = next(iter(runs.values()))
    geom = first.geometry(variable)
    shape = tuple(first.shape(variable))
    if target is not None:
        target = np.asarray(target, np.float64)
        if target.shape != shape:
            raise ValueError(
                f"target has shape {target.shape}; {variable!r} has shape {shape}. Pass an array of that shape "
                "(e.g. bowl.minimum[0]) or None to use the gradient norm."
            )
    slices = tuple(geom.blocks[group[0]] for group in geom.replica_groups)
    errors: dict[str, np.ndarray] = {}
    for name, rec in runs.items():
        if target is not None:
            path = rec.path(variable).astype(np.float64)  # (N + 1, *shape)
            diffs = [path[(slice(None), *sl)] - target[sl] for sl in slices]
        else:
            grads = rec.global_values(variable, "grad").astype(np.float64)  # (N, *shape): at w_0..w_{N-1}
            nan = np.full((1, *shape), np.nan)
            grads = np.concatenate([grads, nan])
            diffs = [grads[(slice(None), *sl)] for sl in slices]
        errors[name] = np.stack([np.sqrt((d**2).reshape(len(d), -1).sum(axis=1)) for d in diffs], axis=1)
    mesh = first.layout(variable).mesh
    names = mesh.short_device_names
    return BlockErrors(
        variable=variable,
        measure="gradient" if target is None else "target",
        updates=np.concatenate([[0], np.asarray(first.steps, np.int64)]),
        errors=errors,
        devices=tuple(tuple(g) for g in geom.replica_groups),
        device_names=tuple(tuple(names[d] for d in g) for g in geom.replica_groups),
        slices=slices,
        mesh=mesh,
        block_of=tuple(geom.group_of),
        shape=shape,
    )


def tail_means(errors: BlockErrors, last: int = TAIL) -> dict[str, np.ndarray]:
    """``{run: (n_blocks,)}``: each block's mean error over the last ``last`` finite rows."""
    if last < 1:
        raise ValueError(f"last must be at least 1 update. Received: {last}.")
    out: dict[str, np.ndarray] = {}
    for name, e in errors.errors.items():
        rows = e[np.all(np.isfinite(e), axis=1)]
        out[name] = rows[-last:].mean(axis=0) if len(rows) else np.full(e.shape[1], np.nan)
    return out


def blocks_finding(errors: BlockErrors, last: int = TAIL) -> str:
    """Which run ends lower (``tail_means``) on which blocks, by how much; one run: how far its blocks fell.

    >>> blocks_finding(errs)  # doctest: +SKIP
    'nesterov ends 1.8x-3.1x lower than momentum on all 4 blocks (last 10 updates)'
    """
    means = tail_means(errors, last)
    names = list(means)
    n_rows = min(last, int(np.all(np.isfinite(next(iter(errors.errors.values()))), axis=1).sum()))
    tail = f"(last {n_rows} updates)"
    nb = errors.num_blocks
    if len(names) == 1:
        e = errors.errors[names[0]]
        drop = e[0] / means[names[0]]
        low, high = np.nanmin(drop), np.nanmax(drop)
        return f"{rule_name(names[0])}: blocks end {low:.2g}x-{high:.2g}x below their start {tail}"
    stacked = np.stack([means[n] for n in names])  # (runs, blocks)
    wins = np.argmin(stacked, axis=0)
    best = int(np.bincount(wins, minlength=len(names)).argmax())
    others = [i for i in range(len(names)) if i != best]
    rival = min(others, key=lambda i: float(np.nanmean(stacked[i] / stacked[best])))
    ratio = stacked[rival] / stacked[best]  # > 1 where the best run is lower
    a, b = rule_name(names[best]), rule_name(names[rival])
    if np.all(np.abs(np.log(ratio)) < np.log(LEVEL)):
        spread = float(np.max(np.abs(ratio - 1)))
        return f"{a[:1].upper() + a[1:]} and {b} end within {spread:.0%} on all {nb} blocks {tail}"
    won = ratio > 1
    k = int(won.sum())
    where = f"all {nb} blocks" if k == nb else f"{k} of {nb} blocks"
    span = f"{ratio[won].min():.2g}x" if k == 1 else f"{ratio[won].min():.2g}x-{ratio[won].max():.2g}x"
    return f"{a[:1].upper() + a[1:]} ends {span} lower than {b} on {where} {tail}"
