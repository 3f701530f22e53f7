"""``plot_blocks``: small multiples laid out like the mesh, one panel per device, each
drawing the error of the block that device holds under every run (log scale, one y scale
for all panels so blocks compare). A block's first device titles its panel with the block's
slice and the other devices holding it; a device holding a copy of a block drawn elsewhere
shows the same lines lighter, titled ``= CPU:k`` after the block's first device."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.figure import headline, new_figure
from .geometry import TAIL, BlockErrors, block_errors, blocks_finding, shown_name

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording import Recording

__all__ = ["plot_blocks", "panel_grid"]

REPLICA_ALPHA = 0.3  # a copy's lines: the same data, drawn faint so the eye skips them
COPIES_NAMED = 2  # a block's panel names up to this many other holders, then counts them
PANEL_HEIGHT = 1.9  # inches per mesh row


def panel_grid(errors: BlockErrors) -> tuple[int, int, tuple[tuple[int, int], ...]]:
    """``(rows, cols, place)``: the panel grid and each device's ``(row, col)`` in it. A
    2-D mesh maps its first dim to rows and its second to columns; a 1-D mesh is one row;
    a deeper mesh stacks all dims but the last into rows."""
    sizes = errors.mesh_sizes
    cols = sizes[-1]
    rows = math.prod(sizes[:-1]) if len(sizes) > 1 else 1
    place = []
    for coords in errors.device_coords:
        row = 0
        for c, s in zip(coords[:-1], sizes[:-1]):
            row = row * s + c
        place.append((row, coords[-1]))
    return rows, cols, tuple(place)


def _axis_label(errors: BlockErrors) -> str:
    return "‖block − target‖" if errors.measure == "target" else "block's gradient norm"


def plot_blocks(
    runs: Mapping[str, Recording],
    variable: str,
    target: np.ndarray | None = None,
    last: int = TAIL,
) -> Figure:
    """Each block's error under each run of ``runs``, one panel per device at its mesh
    position.

    The numbers are ``block_errors(runs, variable, target)``: with a ``target`` the norm
    of the block minus the same block of the target, without one the block's recorded
    gradient norm (the y label says which). Each run's line has its rule's look
    (``style.run_looks``: momentum dashed, Nesterov solid); y is log and shared by all
    panels. A panel's title names its device and the block's slice; the first device of
    a block draws it, the others holding a copy draw the same lines faint and are
    titled ``= <first device>``. The title is ``blocks_finding(errors, last)``.

    >>> fig = dtsgd_viz.plot_blocks(probes, "d2/kernel", bowl.minimum[0])  # doctest: +SKIP
    """
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    errors = block_errors(runs, variable, target)
    rows, cols, place = panel_grid(errors)
    looks = style.run_looks(errors.runs)
    fig = new_figure((style.WIDTH, 1.4 + PANEL_HEIGHT * rows))
    first = next(iter(runs.values()))
    hp = first.hyperparameters
    lr = float(np.asarray(hp.learning_rate)[0]) if np.size(hp.learning_rate) else float("nan")
    settings = f"{variable} on mesh {_mesh_text(errors)} · lr {lr:.3g}, μ {hp.momentum:g}"
    headline(fig, blocks_finding(errors, last), settings)
    axes = fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)
    for device, (r, c) in enumerate(place):
        ax = axes[r, c]
        block = errors.block_of[device]
        owner = errors.devices[block][0]
        copy = device != owner
        for name in errors.runs:
            look = looks[name]
            ax.plot(
                errors.updates,
                errors.errors[name][:, block],
                **look.line(alpha=REPLICA_ALPHA if copy else 1.0, label=shown_name(name), gid=f"{name}|{block}"),
            )
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(NullFormatter())
        names = errors.device_names[block]
        if copy:
            title = f"{names[errors.devices[block].index(device)]} = {names[0]}"
        else:
            title = f"{names[0]} · {errors.block_name(block)}" + _copies(names[1:])
        ax.set_title(title, fontsize=style.NOTE_SIZE + 0.5, color="0.55" if copy else "0.0")
        ax.set_gid(f"device {device} block {block}{' copy' if copy else ''}")
        ax.tick_params(labelsize=style.TICK_SIZE)
        if copy:
            for spine in ax.spines.values():
                spine.set_alpha(REPLICA_ALPHA + 0.2)
        if r == rows - 1:
            ax.set_xlabel("update", fontsize=style.LABEL_SIZE)
        if c == 0:
            ax.set_ylabel(_axis_label(errors), fontsize=style.LABEL_SIZE)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    axes[0, -1].legend(handles, labels, fontsize=style.NOTE_SIZE, loc="upper right", frameon=False)
    return fig


def _copies(names: tuple[str, ...]) -> str:
    """`` (also CPU:4)``: the other holders of a block, counted past two."""
    if not names:
        return ""
    return f" (also {', '.join(names)})" if len(names) <= COPIES_NAMED else f" (+{len(names)} copies)"


def _mesh_text(errors: BlockErrors) -> str:
    return " x ".join(f"{d}={s}" for d, s in zip(errors.mesh_dims, errors.mesh_sizes))
