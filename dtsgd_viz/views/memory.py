"""The memory plan as bars: bytes per device, stacked by variable, slots hatched.

``memory_bars`` computes the segments (pure, tested); ``plot_memory`` draws them::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan, plot_memory
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> fig = plot_memory(memory_plan({"w": ((8, 16), "float32", spec)}))
    >>> fig.axes[0].get_title()
    'bytes per device: parameters + velocity slots (hatched)'
"""

from __future__ import annotations

import dataclasses

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..recording.memory import MemoryPlan, format_bytes
from .style import DEVICE_COLORS

_PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442",
            *DEVICE_COLORS[:8]]
_UNITS = (("B", 1), ("KiB", 1024), ("MiB", 1024 ** 2), ("GiB", 1024 ** 3), ("TiB", 1024 ** 4))


@dataclasses.dataclass(frozen=True)
class Segment:
    """One stacked piece of every device's bar: ``bottom`` and ``height`` per device (bytes)."""

    label: str
    kind: str            # "param" or "slot"
    color: str
    bottom: np.ndarray
    height: np.ndarray


def unit_for(nbytes) -> tuple[str, int]:
    """The binary unit in which ``nbytes`` reads as 1 to 1023."""
    return next(((u, s) for u, s in reversed(_UNITS) if nbytes >= s), _UNITS[0])


def memory_bars(plan: MemoryPlan, max_named: int = 8) -> list[Segment]:
    """Segments stacked bottom-up: the ``max_named`` variables holding most per device,
    each as its parameter then its slots, then the rest as ``others``."""
    order = sorted(plan.entries, key=lambda e: -int(e.bytes_per_device.max()))
    named, rest = order[:max_named], order[max_named:]
    n = plan.mesh.num_devices
    bottom = np.zeros(n, np.int64)
    out = []

    def add(label, kind, color, height):
        nonlocal bottom
        if height.any():
            out.append(Segment(label, kind, color, bottom.copy(), height))
            bottom = bottom + height

    for i, e in enumerate(named):
        color = _PALETTE[i % len(_PALETTE)]
        add(e.name, "param", color, e.param_bytes_per_device)
        add(e.name, "slot", color, e.slot_bytes_per_device)
    if rest:
        label = f"{len(rest)} others"
        add(label, "param", "#BBBBBB", sum(e.param_bytes_per_device for e in rest))
        add(label, "slot", "#BBBBBB", sum(e.slot_bytes_per_device for e in rest))
    return out


def plot_memory(plan: MemoryPlan, *, ax=None, max_named: int = 8) -> Figure:
    """Bytes per device (mesh device order) stacked by variable, each variable's slots
    hatched above its parameter, with a dashed line at what every device would hold if
    nothing were sharded. Returns the ``Figure`` (``ax.figure`` when ``ax`` is given)."""
    n = plan.mesh.num_devices
    if ax is None:
        from .figure import new_figure
        fig = new_figure((min(11.5, max(6.0, 2.5 + 0.45 * n)), 3.6), 100)
        ax = fig.add_subplot()
    fig = ax.figure
    segments = memory_bars(plan, max_named)
    top = max(int(plan.bytes_per_device.max()), plan.unique_bytes)
    unit, scale = unit_for(top)
    x = np.arange(n)
    for s in segments:
        ax.bar(x, s.height / scale, bottom=s.bottom / scale, color=s.color, width=0.8,
               edgecolor="white", linewidth=0.6, hatch="///" if s.kind == "slot" else None,
               gid=f"{s.kind}-{s.label}", label=s.label if s.kind == "param" else None)
    full = plan.unique_bytes / scale
    ax.axhline(full, color="#444444", linestyle="--", linewidth=1, gid="replicated-line")
    ax.text(n - 0.5, full, f"nothing sharded: {format_bytes(plan.unique_bytes)} on every device",
            ha="right", va="bottom", fontsize=8, color="#444444", gid="replicated-text")
    per = plan.bytes_per_device
    if per.max() < 0.85 * plan.unique_bytes:  # else the bars reach the line: it says enough
        ax.text(-0.5, per.max() / scale, f"as laid out: {format_bytes(per.max())}" + (
            "" if per.min() == per.max() else f" (min {format_bytes(per.min())})") +
            " per device", ha="left", va="bottom", fontsize=8, gid="sharded-text")
    ax.set_xticks(x, plan.mesh.short_device_names, fontsize=8, rotation=90 if n > 16 else 0)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(0, full * 1.12)
    ax.set_ylabel(f"{unit} per device", fontsize=9)
    ax.set_xlabel(f"devices in mesh order: {plan.mesh}", fontsize=9)
    ax.set_title("bytes per device: parameters" + (" + velocity slots (hatched)" if plan.slots
                                                     else ""), fontsize=10)
    handles = [Patch(facecolor=s.color, label=s.label) for s in segments if s.kind == "param"]
    if plan.slots:
        handles.append(Patch(facecolor="white", edgecolor="#444444", hatch="///",
                             label="velocity slot"))
    ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0),
              frameon=False, title="variables", title_fontsize=8)
    ax.tick_params(labelsize=8)
    return fig
