"""The numbers of ``plot_blocks``, in pure numpy: each unique block's error after k
updates (k = 0..N) under each run, the devices holding each block and where each device
sits on the mesh, and the one-line finding the figure's title states."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core.empty import check_not_empty, check_same_layout

if TYPE_CHECKING:
    from ...recording import Recording

__all__ = ["BlockErrors", "block_errors", "blocks_finding", "tail_means"]

TAIL = 10
"""The finding compares each block's mean error over the last ``TAIL`` updates (fewer on a
shorter run), never one point of an oscillating curve."""
LEVEL = 1.1
"""Two runs whose tail means differ by less than this factor on every block end level."""


@dataclasses.dataclass(frozen=True)
class BlockErrors:
    """Per run, each unique block's error after k updates, and where the blocks live.

    ``errors[run]`` is ``(N + 1, n_blocks)``: row k is the error after k updates (row 0
    from ``Recording.initial``); ``updates`` is ``(N + 1,)``: 0 then the recording's
    ``steps``. ``measure`` is ``"target"`` (the norm of the block minus the same block of
    the target) or ``"gradient"`` (the block's recorded gradient norm; the gradient after
    the last update is not recorded, so the last row is NaN). Blocks are in
    ``ShardGeometry.replica_groups`` order: ``devices[b]`` are the mesh device numbers
    holding block ``b`` (first one first), ``device_names[b]`` their short names and
    ``slices[b]`` the block's slices of the global tensor. ``mesh_dims``/``mesh_sizes``
    are the mesh's, ``device_coords[d]`` device ``d``'s place on it, ``block_of[d]``
    the block device ``d`` holds, ``shape`` the variable's global shape."""

    variable: str
    measure: str
    updates: np.ndarray
    errors: Mapping[str, np.ndarray]
    devices: tuple[tuple[int, ...], ...]
    device_names: tuple[tuple[str, ...], ...]
    slices: tuple[tuple[slice, ...], ...]
    mesh_dims: tuple[str, ...]
    mesh_sizes: tuple[int, ...]
    device_coords: tuple[tuple[int, ...], ...]
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
        """The block's slice of the global tensor in the reader's words: ``rows 4-7``,
        ``cols 0-1``, ``entries 2-3`` (a vector), ``[4:8, 0:3]`` (a block cut along more
        than one dim or of a tensor of rank 3 or more), ``whole tensor`` (replicated)."""
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
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(
            f"runs must be a non-empty mapping of name -> Recording. Received: {type(runs).__name__} "
            f"{runs if isinstance(runs, Mapping) else ''}".rstrip()
            + "."
        )
    for name, rec in runs.items():
        check_not_empty(rec, name)
    check_same_layout(runs, variable, "Blocks compare only between runs of one layout.")
    first_name, first = next(iter(runs.items()))
    for name, rec in runs.items():
        if not np.array_equal(rec.steps, first.steps):
            raise ValueError(
                f"Runs {first_name!r} and {name!r} recorded different updates "
                f"({len(first.steps)} updates {first.steps[0]}..{first.steps[-1]} vs {len(rec.steps)} updates "
                f"{rec.steps[0]}..{rec.steps[-1]}). Record both runs at the same updates."
            )


def block_errors(runs: Mapping[str, Recording], variable: str, target: np.ndarray | None = None) -> BlockErrors:
    """Each unique block's error after k = 0..N updates under each run of ``runs``.

    With a ``target`` (an array of the variable's shape, e.g. the least-squares minimum)
    the error of block ``b`` after k updates is ``||w_k[b] - target[b]||`` over the
    block's entries, ``w_0`` being ``Recording.initial``. Without one the error is the
    norm of the block's recorded gradient at ``w_k`` (the gradient update k + 1 used):
    it falls to 0 at a minimum like the distance does, but needs no target; the gradient
    at ``w_N`` is never recorded, so the last row is NaN. The runs must record the same
    variable with the same shape and layout at the same updates.

    >>> import dtsgd_viz, numpy as np  # doctest: +SKIP
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
        mesh_dims=tuple(mesh.dim_names),
        mesh_sizes=tuple(mesh.dim_sizes),
        device_coords=tuple(mesh.device_coords(d) for d in range(mesh.num_devices)),
        block_of=tuple(geom.group_of),
        shape=shape,
    )


def tail_means(errors: BlockErrors, last: int = TAIL) -> dict[str, np.ndarray]:
    """``{run: (n_blocks,)}``: each block's mean error over the last ``last`` rows that
    hold one (NaN rows, the gradient after the last update, are skipped)."""
    if last < 1:
        raise ValueError(f"last must be at least 1 update. Received: {last}.")
    out: dict[str, np.ndarray] = {}
    for name, e in errors.errors.items():
        rows = e[np.all(np.isfinite(e), axis=1)]
        out[name] = rows[-last:].mean(axis=0) if len(rows) else np.full(e.shape[1], np.nan)
    return out


def blocks_finding(errors: BlockErrors, last: int = TAIL) -> str:
    """The figure's one-line finding: which run ends lower on which blocks, and by how
    much (the ratio of the other run's ``tail_means`` to the winner's, its range over the
    blocks where the winner is lower). Runs whose tail means differ by less than
    ``LEVEL`` on every block "end level", within the largest difference. With one run:
    how far its blocks fell from update 0; with more than two: the run lowest on most
    blocks against the next lowest.

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
        return f"{shown_name(names[0])}: blocks end {low:.2g}x-{high:.2g}x below their start {tail}"
    stacked = np.stack([means[n] for n in names])  # (runs, blocks)
    wins = np.argmin(stacked, axis=0)
    best = int(np.bincount(wins, minlength=len(names)).argmax())
    others = [i for i in range(len(names)) if i != best]
    rival = min(others, key=lambda i: float(np.nanmean(stacked[i] / stacked[best])))
    ratio = stacked[rival] / stacked[best]  # > 1 where the best run is lower
    a, b = shown_name(names[best]), shown_name(names[rival])
    if np.all(np.abs(np.log(ratio)) < np.log(LEVEL)):
        spread = float(np.max(np.abs(ratio - 1)))
        return f"{a[:1].upper() + a[1:]} and {b} end within {spread:.0%} on all {nb} blocks {tail}"
    won = ratio > 1
    k = int(won.sum())
    where = f"all {nb} blocks" if k == nb else f"{k} of {nb} blocks"
    span = f"{ratio[won].min():.2g}x" if k == 1 else f"{ratio[won].min():.2g}x-{ratio[won].max():.2g}x"
    return f"{a[:1].upper() + a[1:]} ends {span} lower than {b} on {where} {tail}"


def shown_name(name: str) -> str:
    """A run's name as every figure writes it (``"nesterov"`` is ``"Nesterov"``)."""
    from ..paths.geometry import rule_name

    return rule_name(name)
