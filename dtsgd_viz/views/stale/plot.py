"""``plot_stale``: one panel per run, updates by devices, each cell coloured by ``stale_hits``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.ticker import MaxNLocator

from ...theory.stale import CLASSES, TOL
from ..core import style
from ..core.figure import headline, new_figure
from .geometry import StaleGrid, stale_finding, stale_grid

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ...recording import Recording

__all__ = ["plot_stale"]

ROW_HEIGHT = 0.17  # inches per device row
BLOCK_GAP_LW = 0.8  # white line between blocks
VARIABLE_GAP_LW = 3.0  # white line between variables
UPDATE_LINES_UP_TO = 40  # thin white lines between updates while cells are this few


def settings_line(recording: Recording, what: str, rule: bool = True) -> str:
    """``what · mesh batch=2 x model=4 · Nesterov, lr 0.05, μ 0.9`` (``rule=False``: without the rule)."""
    hp = recording.hyperparameters
    lr = float(np.asarray(hp.learning_rate)[0]) if np.size(hp.learning_rate) else float("nan")
    name = ("Nesterov" if hp.nesterov else "momentum" if hp.momentum else "plain") + ", " if rule else ""
    mesh = " x ".join(f"{d}={s}" for d, s in zip(recording.mesh.dim_names, recording.mesh.dim_sizes))
    return f"{what} · mesh {mesh} · {name}lr {lr:.3g}, μ {hp.momentum:g}"


def _draw_panel(ax: Axes, grid: StaleGrid, run: str, colors: np.ndarray) -> None:
    verdict = grid.verdicts[run]
    steps = grid.steps[run]
    n_rows = len(grid.rows)
    left, right = float(steps[0]) - 0.5, float(steps[-1]) + 0.5
    # a column per update from the first to the last: one a loss scale skipped stays blank
    cells = np.ones((n_rows, int(steps[-1] - steps[0]) + 1, 3))
    cells[:, steps - steps[0]] = colors[verdict]
    ax.imshow(
        cells,
        aspect="auto",
        interpolation="nearest",
        extent=(left, right, n_rows - 0.5, -0.5),
        gid=f"cells|{run}",
    )
    if len(steps) <= UPDATE_LINES_UP_TO:
        ax.vlines(steps[:-1] + 0.5, -0.5, n_rows - 0.5, colors="white", lw=0.5)
    for i in range(1, n_rows):
        row, above = grid.rows[i], grid.rows[i - 1]
        if row.variable != above.variable:
            ax.axhline(i - 0.5, color="white", lw=VARIABLE_GAP_LW)
        elif row.block != above.block:
            ax.axhline(i - 0.5, color="white", lw=BLOCK_GAP_LW)
    ax.set_xlim(left, right)
    ax.set_ylim(n_rows - 0.5, -0.5)
    ax.set_title(run, fontsize=style.TITLE_SIZE)
    ax.set_xlabel("update", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE, length=2)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=8, integer=True))
    ax.spines[:].set_visible(False)


def plot_stale(runs: Mapping[str, Recording], variable: str | None = None, tol: float = TOL) -> Figure:
    """Per run, which velocity moved each device's shard at each update (``stale_grid``), titled ``stale_finding``.

    >>> fig = dtsgd_viz.plot_stale({"default": stale, "exact_update=True": exact})  # doctest: +SKIP
    """
    from matplotlib.patches import Patch

    grid = stale_grid(runs, variable, tol)
    colors = np.array([to_rgb(style.STALE_COLORS[kind]) for kind in CLASSES])  # (len(CLASSES), 3) RGB
    n_rows = len(grid.rows)
    fig = new_figure((style.WIDTH, 1.6 + ROW_HEIGHT * n_rows))
    what = grid.variables[0] if len(grid.variables) == 1 else f"{len(grid.variables)} variables"
    headline(fig, stale_finding(grid), settings_line(next(iter(runs.values())), what))
    axes = fig.subplots(1, len(grid.runs), sharey=True, squeeze=False)[0]
    for ax, run in zip(axes, grid.runs):
        _draw_panel(ax, grid, run, colors)
    for ax in axes[1:]:
        ax.tick_params(left=False)
    labels = [f"{row.block_name}  {row.device_name}" if row.first else row.device_name for row in grid.rows]
    axes[0].set_yticks(range(n_rows), labels, fontsize=style.TICK_SIZE)
    if len(grid.variables) > 1 or variable is None:
        centres = [np.mean(grid.variable_rows(k)) - 0.5 for k in range(len(grid.variables))]
        names = axes[-1].secondary_yaxis("right")
        names.set_yticks(centres, list(grid.variables), fontsize=style.LABEL_SIZE)
        names.tick_params(length=0)
        names.spines[:].set_visible(False)
    used = {int(c) for run in grid.runs for c in np.unique(grid.verdicts[run])}
    handles = [
        Patch(facecolor=colors[i], edgecolor="0.6", lw=0.5, label=kind) for i, kind in enumerate(CLASSES) if i in used
    ]
    axes[-1].legend(
        handles=handles, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False, fontsize=style.LABEL_SIZE
    )
    return fig
