"""``plot_blocks``: small multiples laid out like the mesh, each a block's error under every run."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.figure import headline, new_figure
from ..core.log_ticks import use_log_ticks
from ..paths.geometry import rule_name
from ..shards.geometry import device_label
from ..stale.plot import settings_line
from .geometry import TAIL, BlockErrors, block_errors, blocks_finding

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording import Recording

__all__ = ["plot_blocks"]

PANEL_HEIGHT = 2.2  # inches per mesh row
AXIS_LABELS = {"target": "distance to the target", "gradient": "block's gradient norm"}


def _mesh_place(errors: BlockErrors, device: int) -> tuple[int, int]:
    """``(row, col)`` of ``device``: its last mesh coordinate across, the others' row-major index down."""
    *lead, col = errors.mesh.device_coords(device)
    return int(np.ravel_multi_index(lead, errors.mesh.dim_sizes[:-1])) if lead else 0, col


def plot_blocks(
    runs: Mapping[str, Recording],
    variable: str,
    target: np.ndarray | None = None,
    last: int = TAIL,
) -> Figure:
    """Each block's error under each run (``block_errors``), a panel per block, titled ``blocks_finding``.

    >>> fig = dtsgd_viz.plot_blocks(probes, "d2/kernel", bowl.minimum[0])  # doctest: +SKIP
    """
    from matplotlib.ticker import LogLocator

    errors = block_errors(runs, variable, target)
    cols = errors.mesh.dim_sizes[-1]
    owners = [errors.devices[b][0] for b in range(len(errors.devices))]
    place = {d: _mesh_place(errors, d) for d in owners}
    rows = sorted({place[d][0] for d in owners})
    at = {d: (rows.index(place[d][0]), place[d][1]) for d in owners}
    looks = style.run_looks(errors.runs)
    fig = new_figure((style.WIDTH, 1.5 + PANEL_HEIGHT * len(rows)))
    headline(fig, blocks_finding(errors, last), settings_line(next(iter(runs.values())), variable, rule=False))
    axes = fig.subplots(len(rows), cols, sharex=True, sharey=True, squeeze=False)
    taken = set(at.values())
    for place_rc, unused in np.ndenumerate(axes):
        if place_rc not in taken:
            unused.set_visible(False)
    # thick solid lines under thinner dashed ones: those show them through their gaps
    z = {name: 3.0 + 0.1 * k for k, name in enumerate(sorted(errors.runs, key=lambda n: -looks[n].lw))}
    for device in owners:
        r, c = at[device]
        ax, block = axes[r, c], errors.block_of[device]
        for name in errors.runs:
            line = looks[name].line(label=rule_name(name), gid=f"{name}|{block}")
            ax.plot(errors.updates, errors.errors[name][:, block], **{**line, "zorder": z[name]})
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        use_log_ticks(ax.yaxis)
        names = errors.device_names[block]
        ax.set_title(f"{device_label(names)} · {errors.block_name(block)}", fontsize=style.LABEL_SIZE)
        ax.set_gid(f"device {device} block {block}")
        ax.tick_params(labelsize=style.TICK_SIZE, labelbottom=(r + 1, c) not in taken)
        if (r + 1, c) not in taken:
            ax.set_xlabel("update", fontsize=style.LABEL_SIZE)
        if c == min(cc for rr, cc in taken if rr == r):
            ax.set_ylabel(AXIS_LABELS[errors.measure], fontsize=style.LABEL_SIZE)
    handles, labels = axes[at[owners[0]]].get_legend_handles_labels()  # the runs in their order
    axes[0, -1].legend(handles, labels, fontsize=style.NOTE_SIZE, loc="upper right", frameon=False)
    return fig
