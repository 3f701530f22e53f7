"""``plot_timeline``: a row per device, a box per phase, coloured by mesh dims as ``plot_communication``."""

from __future__ import annotations

from collections.abc import Mapping

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ...recording.communication import CommunicationReport
from ...recording.memory import format_bytes
from ..core.figure import headline, new_figure
from ..core.style import LABEL_SIZE, NOTE_SIZE, TICK_SIZE, TITLE_SIZE, WIDTH
from ..mesh.communication import dim_color
from ..mesh.layout_colors import text_color_for
from ..paths.geometry import rule_name
from .geometry import UpdateTimeline, same_collectives, timeline_finding, update_timeline

LOCAL_FACE = "0.92"
BOX_W, BOX_H = 0.86, 0.72


def _tick(phase_name: str, groups: int, size: int) -> str:
    """The phase's name on at most three lines: the collective, what it serves, its groups."""
    name = phase_name.replace(" (activations)", "\nof activations").replace("local gradient", "local\ngradient")
    return name + (f"\n{groups} groups of {size}" if groups else "")


def _panels(reports: Mapping[str, CommunicationReport]) -> dict[str, UpdateTimeline]:
    """``{panel title: timeline}``: one panel for identical runs, else one per run."""
    names = list(reports)
    if all(same_collectives(reports[names[0]], reports[n]) for n in names[1:]):
        t = update_timeline(reports[names[0]])
        runs = " and ".join(map(rule_name, names))
        return {f"{runs} (identical): {format_bytes(t.bytes_per_device)} per device": t}
    return {
        f"{rule_name(n)}: {format_bytes(t.bytes_per_device)} per device": t
        for n, t in ((n, update_timeline(reports[n])) for n in names)
    }


def plot_timeline(reports: Mapping[str, CommunicationReport]) -> Figure:
    """One update per run: a row per device, a box per ``update_timeline`` phase; identical runs share a panel."""
    finding = timeline_finding(reports)  # checks the reports
    panels = _panels(reports)
    first = next(iter(panels.values()))
    n_dev = first.mesh.num_devices
    fig = new_figure((WIDTH, 0.9 + len(panels) * (0.26 * n_dev + 0.45) + 0.7))
    axes = fig.subplots(len(panels), 1, squeeze=False)[:, 0]
    for k, (ax, (head, t)) in enumerate(zip(axes, panels.items())):
        for col, phase in enumerate(t.phases):
            face = LOCAL_FACE if phase.local else dim_color(t.mesh, phase.mesh_dims)
            for device in range(n_dev):
                group = phase.group_of(device)
                corner = (col - BOX_W / 2, device - BOX_H / 2)
                gid = f"{k}|{device}|{phase.name}|{group}"
                ax.add_patch(Rectangle(corner, BOX_W, BOX_H, facecolor=face, edgecolor="0.5", lw=0.5, gid=gid))
                ax.text(
                    col,
                    device,
                    format_bytes(phase.bytes_per_device),
                    ha="center",
                    va="center",
                    fontsize=NOTE_SIZE,
                    color="#777777" if phase.local else text_color_for(face),
                    gid=f"bytes|{k}|{device}|{phase.name}",
                )
        ax.set_xlim(-0.5, len(t.phases) - 0.5)
        ax.set_ylim(n_dev - 0.5, -0.5)
        ax.set_yticks(range(n_dev), t.labels, fontsize=TICK_SIZE)
        if len(panels) > 1:  # one panel: the suptitle says it all
            ax.set_title(head, fontsize=TITLE_SIZE, loc="left")
        ax.tick_params(length=0)
        ax.spines[:].set_visible(False)
        ticks = [_tick(p.name, len(p.groups), len(p.groups[0]) if p.groups else 0) for p in t.phases]
        ax.set_xticks(range(len(t.phases)), ticks, fontsize=TICK_SIZE)
    axes[-1].set_xlabel("phases of one update, in order (not time)", fontsize=LABEL_SIZE)
    one = len(panels) == 1 and len(reports) > 1  # the runs compared equal: the first is drawn
    drawn = f"{rule_name(next(iter(reports)))}'s compiled step drawn" if one else "compiled steps"
    return headline(fig, finding, f"{drawn}, on {first.mesh}")
