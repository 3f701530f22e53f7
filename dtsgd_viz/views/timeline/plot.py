"""Draws one update on every device: one panel per run (shared x), one row per device in
mesh order, one box per phase left to right (an order, not time). A collective's boxes
show its bytes per device and share one colour per group of devices that take part
together; local phases are pale grey."""

from __future__ import annotations

from collections.abc import Mapping

from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ...recording.communication import CommunicationReport
from ...recording.memory import format_bytes
from ..core.style import (
    BLOCK_COLORS,
    DPI,
    LABEL_SIZE,
    NOTE_SIZE,
    SUPTITLE_SIZE,
    TICK_SIZE,
    TITLE_SIZE,
    WIDTH,
    run_looks,
)
from ..paths.geometry import rule_name
from .geometry import UpdateTimeline, timeline_finding, update_timeline

LOCAL_FACE = "0.9"
BOX_W, BOX_H = 0.86, 0.72


def _columns(timelines: Mapping[str, UpdateTimeline]) -> list[str]:
    """Every phase name of the runs, in order of first appearance, the local phases after
    the last collective at the end."""
    names: list[str] = []
    for t in timelines.values():
        for p in t.phases[:-2]:
            if p.name not in names:
                names.append(p.name)
    return names + [p.name for p in next(iter(timelines.values())).phases[-2:]]


def _tick(name: str) -> str:
    return (
        name.replace(" (forward, backward)", "\n(forward, backward)")
        .replace(" over ", "\nover ")
        .replace("local gradient", "local\ngradient")
    )


def plot_timeline(reports: Mapping[str, CommunicationReport], *, title: str | None = None) -> Figure:
    """One update on every device, for each run of ``reports`` (``{"momentum": report,
    "nesterov": report}``): rows are devices (labelled with their mesh coordinates), boxes
    the phases of ``update_timeline``; the title is ``timeline_finding(reports)``."""
    finding = timeline_finding(reports)  # checks the reports
    timelines = {name: update_timeline(r) for name, r in reports.items()}
    columns = _columns(timelines)
    looks = run_looks(list(timelines))
    n_dev = max(t.mesh.num_devices for t in timelines.values())
    height = 0.9 + len(timelines) * (0.26 * n_dev + 0.45) + 0.55
    fig = Figure(figsize=(WIDTH, height), dpi=DPI, layout="constrained")
    axes = fig.subplots(len(timelines), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (name, t) in zip(axes, timelines.items()):
        color = looks[name].color
        for col, phase_name in enumerate(columns):
            phase = next((p for p in t.phases if p.name == phase_name), None)
            if phase is None:
                continue
            for device in range(t.mesh.num_devices):
                group = phase.group_of(device)
                face = LOCAL_FACE if group is None else BLOCK_COLORS[group % len(BLOCK_COLORS)]
                box = Rectangle(
                    (col - BOX_W / 2, device - BOX_H / 2), BOX_W, BOX_H, facecolor=face, edgecolor="0.4", lw=0.6
                )
                box.set_gid(f"{name}|{device}|{phase.name}|{group}")
                ax.add_patch(box)
                if group is not None:
                    ink = "white" if group % len(BLOCK_COLORS) in (0, 3, 7, 8) else "black"
                    ax.text(
                        col,
                        device,
                        format_bytes(phase.bytes_per_device),
                        ha="center",
                        va="center",
                        fontsize=NOTE_SIZE,
                        color=ink,
                        gid=f"bytes|{name}|{device}|{phase.name}",
                    )
        ax.set_xlim(-0.5, len(columns) - 0.5)
        ax.set_ylim(t.mesh.num_devices - 0.5, -0.5)
        ax.set_yticks(range(t.mesh.num_devices), t.labels, fontsize=TICK_SIZE)
        ax.set_title(
            f"{rule_name(name)}: {format_bytes(t.bytes_per_device)} per device",
            fontsize=TITLE_SIZE,
            color=color,
            loc="left",
        )
        ax.tick_params(length=0)
        for side in ("top", "right", "left", "bottom"):
            ax.spines[side].set_visible(False)
    axes[-1].set_xticks(range(len(columns)), [_tick(c) for c in columns], fontsize=TICK_SIZE)
    axes[-1].set_xlabel("phases of one update (order, not time); one colour per group of devices", fontsize=LABEL_SIZE)
    fig.suptitle(finding if title is None else title, fontsize=SUPTITLE_SIZE)
    return fig
