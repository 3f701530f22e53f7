"""The numbers of ``plot_stale`` in pure numpy: ``stale_hits`` as devices by updates, and the finding."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ...theory.stale import CLASSES, STALE, TOL, StaleHits, stale_hits
from ..core.empty import check_runs

if TYPE_CHECKING:
    from ...recording import Recording

__all__ = ["Row", "StaleGrid", "stale_grid", "stale_finding"]


@dataclasses.dataclass(frozen=True)
class Row:
    """One row of the grid: a device holding ``block``."""

    variable: int
    device: int
    device_name: str
    block: int
    block_name: str
    first: bool  # the block is named on this row


@dataclasses.dataclass(frozen=True)
class StaleGrid:
    """Per run, which velocity moved each device's shard of each variable at each update."""

    runs: tuple[str, ...]
    variables: tuple[str, ...]
    hits: Mapping[str, tuple[StaleHits, ...]]
    rows: tuple[Row, ...]
    verdicts: Mapping[str, np.ndarray]  # (len(rows), n_updates): indices into CLASSES
    steps: Mapping[str, np.ndarray]

    def counts(self, run: str) -> dict[str, int]:
        """``{class: shard-updates}`` of ``run`` over every variable shown."""
        if run not in self.hits:
            raise ValueError(f"Unknown run {run!r}. This grid has: {list(self.runs)}.")
        return {kind: sum(h.count(kind) for h in self.hits[run]) for kind in CLASSES}

    def total(self, run: str) -> int:
        """Shard-updates of ``run`` over every variable shown: updates times devices."""
        return sum(self.counts(run).values())

    def variable_rows(self, variable: int) -> tuple[int, int]:  # (first, stop): the rows of that variable
        at = [i for i, row in enumerate(self.rows) if row.variable == variable]
        return at[0], at[-1] + 1


def stale_grid(runs: Mapping[str, Recording], variable: str | None = None, tol: float = TOL) -> StaleGrid:
    """``stale_hits`` of every run and variable (``variable``, or all of the first run's), as ``plot_stale`` draws it.

    >>> grid = stale_grid({"default": stale, "exact_update=True": exact})  # doctest: +SKIP
    >>> grid.counts("default")["stale"]  # doctest: +SKIP
    240
    """
    variables = check_runs(runs, variable, "The rows are devices of one layout.")
    hits = {name: tuple(stale_hits(rec, v, tol) for v in variables) for name, rec in runs.items()}
    rows: list[Row] = []
    first = next(iter(hits.values()))
    for k, h in enumerate(first):
        for block in range(len(h.block_names)):
            devices = [d for d, b in enumerate(h.block_of) if b == block]
            for i, d in enumerate(devices):
                rows.append(Row(k, d, h.devices[d], block, h.block_names[block], i == 0))
    verdicts = {}
    for name, per in hits.items():
        verdicts[name] = np.stack([per[row.variable].verdict[:, row.device] for row in rows])
    return StaleGrid(
        tuple(runs),
        variables,
        hits,
        tuple(rows),
        verdicts,
        {name: np.asarray(rec.steps) for name, rec in runs.items()},
    )


def stale_finding(grid: StaleGrid) -> str:
    """``plot_stale``'s title: per run, the shard-updates moved by the stale velocity."""
    counts = {name: grid.counts(name)[STALE] for name in grid.runs}
    parts = [f"{name}: {n} of {grid.total(name)} shard-updates" if n else f"{name}: none" for name, n in counts.items()]
    return "Stale velocity in " + "; ".join(parts)
