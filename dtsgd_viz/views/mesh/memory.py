"""The memory plan as bars: bytes per device, stacked by variable, slots hatched."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ...recording.communication import CommunicationPlan, CommunicationReport, communication_plan
from ...recording.memory import MemoryPlan, format_bytes
from ..core.figure import axes_size_inches, headline, new_figure
from ..core.style import DPI, LABEL_SIZE, NOTE_SIZE, TICK_SIZE, TITLE_SIZE, VARIABLE_COLORS, WIDTH
from .communication import per_device, traffic_items

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_GREYS = ("#BBBBBB", "#888888", "#DDDDDD", "#666666")
_UNITS = (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3), ("TiB", 1024**4))
HATCH = {"slot": "///", "serves": ".."}


@dataclasses.dataclass(frozen=True)
class Segment:
    """One stacked piece of every device's bar: ``bottom`` and ``height`` per device (bytes)."""

    label: str
    kind: str  # "param", "slot", "gradient" or "serves"
    color: str
    bottom: np.ndarray
    height: np.ndarray


def unit_for(nbytes: float) -> tuple[str, int]:
    """The binary unit in which ``nbytes`` reads as 1 to 1023."""
    return next(((u, s) for u, s in reversed(_UNITS) if nbytes >= s), _UNITS[0])


def _stack(n: int, parts: Sequence[tuple[str, str, str, np.ndarray]]) -> list[Segment]:
    out, bottom = [], np.zeros(n, np.int64)
    for label, kind, color, height in parts:
        if height.any():
            out.append(Segment(label, kind, color, bottom.copy(), height))
            bottom = bottom + height
    return out


def memory_bars(plan: MemoryPlan, max_named: int = 8) -> list[Segment]:
    """Segments stacked bottom-up: the ``max_named`` largest variables (parameter, then slots), then ``others``."""
    order = sorted(plan.entries, key=lambda e: -int(e.bytes_per_device.max()))
    named, rest = order[:max_named], order[max_named:]
    parts = []
    for i, e in enumerate(named):
        color = VARIABLE_COLORS[i % len(VARIABLE_COLORS)]
        parts += [(e.name, "param", color, e.param_bytes_per_device), (e.name, "slot", color, e.slot_bytes_per_device)]
    if rest:
        label = f"{len(rest)} others"
        parts.append((label, "param", "#BBBBBB", sum(e.param_bytes_per_device for e in rest)))
        parts.append((label, "slot", "#BBBBBB", sum(e.slot_bytes_per_device for e in rest)))
    return _stack(plan.mesh.num_devices, parts)


def traffic_bars(
    plan: MemoryPlan, traffic: CommunicationPlan | CommunicationReport, segments: Sequence[Segment]
) -> list[Segment]:
    """The bytes each device sends per update, stacked: gradients in their variable's colour, the rest in greys."""
    colors = {s.label: s.color for s in segments if s.kind == "param"}
    named = {e.name for e in plan.entries}
    parts: dict[tuple[str, str], np.ndarray] = {}
    for i in traffic_items(traffic):
        if i.serves != "gradient":
            key = (i.serves, "serves")
        elif i.label in colors:
            key = (i.label, "gradient")
        else:
            key = ("other gradients" if i.label in named else f"gradient of {i.label}", "gradient")
        parts[key] = parts.get(key, 0) + per_device(plan.mesh, i)
    return _stack(
        plan.mesh.num_devices,
        [(lab, kind, colors.get(lab, _GREYS[k % len(_GREYS)]), h) for k, ((lab, kind), h) in enumerate(parts.items())],
    )


def _traffic_of(plan: MemoryPlan, communication):
    """The traffic to draw (``True``: the plan's own gradient all-reduces), on the plan's devices."""
    traffic = communication_plan(plan) if communication is True else communication
    traffic_items(traffic)  # a plan or a report, else a TypeError saying so
    if traffic.mesh.num_devices != plan.mesh.num_devices:
        raise ValueError(
            f"communication= is on {traffic.mesh}, the memory plan on {plan.mesh}: "
            "pass the traffic of the same devices."
        )
    return traffic


def plot_memory(plan: MemoryPlan, *, communication: bool | CommunicationPlan | CommunicationReport = False) -> Figure:
    """Bytes per device stacked by variable, slots hatched; ``communication=`` (True, a plan, a report) adds traffic."""
    traffic = _traffic_of(plan, communication) if communication is not False else None
    segments = memory_bars(plan)
    n = plan.mesh.num_devices
    fig = new_figure((WIDTH if traffic else min(WIDTH, 5.0 + 0.4 * n), 4.0 if traffic else 3.6), DPI)
    axes: tuple[Axes, ...] = tuple(fig.subplots(1, 2)) if traffic else (fig.add_subplot(),)
    headline(fig, _memory_title(plan), _memory_settings(plan))
    _bars(axes[0], plan, segments, "")
    # the top of the legend names the top of the stack
    handles = [Patch(facecolor=s.color, label=s.label) for s in segments if s.kind == "param"][::-1]
    if plan.slots:
        handles.append(Patch(facecolor="white", edgecolor="#444444", hatch=HATCH["slot"], label="velocity slot"))
    if traffic is not None:
        bars = traffic_bars(plan, traffic, segments)
        _bars(axes[-1], plan, bars, "traffic-")
        predicted = isinstance(traffic, CommunicationPlan)
        axes[-1].set_title(
            "gradient all-reduce per update (predicted)" if predicted else "collectives per update (measured)",
            fontsize=TITLE_SIZE,
        )
        axes[0].set_title("memory per device", fontsize=TITLE_SIZE)
        named = {s.label for s in segments if s.kind == "param"}
        handles += [
            Patch(facecolor=s.color, hatch=HATCH.get(s.kind), label=s.label) for s in bars if s.label not in named
        ]
    axes[-1].legend(handles=handles, fontsize=NOTE_SIZE, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return fig


def _bars(ax, plan: MemoryPlan, segments: Sequence[Segment], prefix: str) -> None:
    """The stacked bars, one per device, in the unit of the tallest, and the device axis under them."""
    n, names = plan.mesh.num_devices, plan.mesh.short_device_names
    top = max((int((s.bottom + s.height).max()) for s in segments), default=0)
    unit, scale = unit_for(max(top, 1))
    x = np.arange(n)
    for s in segments:
        ax.bar(
            x,
            s.height / scale,
            bottom=s.bottom / scale,
            color=s.color,
            width=0.8,
            edgecolor="white",
            linewidth=0.6 if n <= 64 else 0.0,
            hatch=HATCH.get(s.kind),
            gid=f"{prefix}{s.label}" if prefix else f"{s.kind}-{s.label}",
        )
    ax.set_ylim(0, top / scale * 1.1 or 1)
    ax.set_ylabel(f"{unit} per device", fontsize=LABEL_SIZE)
    from ..shards.geometry import device_ticks

    numbers, head = device_ticks(names)
    wide = max(150.0, axes_size_inches(ax)[0] * 72 * 1.1)  # about the axes' points (before the layout settles)
    if n * max(map(len, names)) * TICK_SIZE * 0.62 <= 0.8 * wide:  # the names fit under the bars
        ax.set_xticks(x, names, fontsize=TICK_SIZE)
        what = "devices in mesh order"
    else:  # numbers, every step-th device, at most 16 ticks
        step = 1 << max(0, math.ceil(math.log2(n / 16)))
        ax.set_xticks(x[::step], numbers[::step], fontsize=TICK_SIZE)
        what = f"devices in mesh order ({head}k)" if head else "devices in mesh order"
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel(what, fontsize=LABEL_SIZE)
    ax.tick_params(labelsize=TICK_SIZE)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _memory_title(plan: MemoryPlan) -> str:
    """The finding: what the layout saves each device against holding everything."""
    per, n, full = plan.bytes_per_device, plan.mesh.num_devices, plan.unique_bytes
    same = per.min() == per.max() and n > 1
    if 0 < per.max() < full:
        return (
            f"Sharding cuts {'each' if same else 'the fullest'} device's memory {full / per.max():.3g}x: "
            f"{format_bytes(per.max())} instead of {format_bytes(full)}"
        )
    if same:
        return f"Every device holds the same {format_bytes(per.max())}"
    return f"Bytes per device: up to {format_bytes(per.max())}"


def _memory_settings(plan: MemoryPlan) -> str:
    held = "parameters" + (" + velocity slots" if plan.slots else "")
    dtypes = ", ".join(dict.fromkeys(e.dtype for e in plan.entries))
    return f"{held} on {plan.mesh}" + (f", {dtypes}" if dtypes else "")
