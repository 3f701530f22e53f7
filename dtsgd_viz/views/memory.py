"""The memory plan as bars: bytes per device, stacked by variable, slots hatched.

``memory_bars`` computes the segments (pure, tested); ``plot_memory`` draws them::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan, plot_memory
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> fig = plot_memory(memory_plan({"w": ((8, 16), "float32", spec)}))
    >>> " ".join(fig.axes[0].get_title().split())
    "sharding cuts each device's memory 4x: 256 B instead of 1 KiB; parameters + velocity slots (hatched)"

Colours: ``style.VARIABLE_COLORS``, none of them a rule's colour (blue and vermilion
mean momentum and Nesterov in every other view); sizes on ``style``'s scale, at most
``style.WIDTH`` wide.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ..recording.communication import CommunicationPlan, communication_plan
from ..recording.memory import MemoryPlan, format_bytes
from .style import (DPI, LABEL_SIZE, NOTE_SIZE, TICK_SIZE, TITLE_SIZE, VARIABLE_COLORS,
                    WIDTH)
from .figure import fit
from .traffic import dims_text, per_device, totals, traffic_items

_PALETTE = list(VARIABLE_COLORS)
_GREYS = ("#BBBBBB", "#888888", "#DDDDDD", "#666666")
LABEL_LIFT = 4.0   # points between a level's label and the bar top or line it sits on
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


def traffic_bars(plan: MemoryPlan, traffic, segments) -> list[Segment]:
    """The bytes each device contributes per update to ``traffic`` (a
    ``CommunicationPlan`` or ``CommunicationReport``), stacked bottom-up: each gradient
    in its variable's colour from ``segments`` (``memory_bars``; grey for the variables
    it groups as ``others``), then the rest grouped by what it serves (kind ``serves``)."""
    items = traffic_items(traffic)
    colors = {s.label: s.color for s in segments if s.kind == "param"}
    named = {e.name for e in plan.entries}
    n = plan.mesh.num_devices
    parts: dict[tuple[str, str], np.ndarray] = {}
    for i in items:
        if i.serves == "gradient" and i.label in colors:
            key = (i.label, "gradient")
        elif i.serves == "gradient":
            key = ("other gradients" if i.label in named else f"gradient of {i.label}", "gradient")
        else:
            key = (i.serves, "serves")
        parts[key] = parts.get(key, np.zeros(n, np.int64)) + per_device(plan.mesh, i)
    out, bottom = [], np.zeros(n, np.int64)
    for k, ((label, kind), height) in enumerate(parts.items()):
        if height.any():
            grey = _GREYS[k % len(_GREYS)]
            out.append(Segment(label, kind, colors.get(label, grey), bottom.copy(), height))
            bottom = bottom + height
    return out


def _traffic_of(plan: MemoryPlan, communication, batch_dims):
    """The ``CommunicationPlan`` or ``CommunicationReport`` to draw (``True``: the plan's
    own gradient all-reduces), checked to be on the plan's devices."""
    traffic = communication_plan(plan, batch_dims) if communication is True else communication
    traffic_items(traffic)  # a plan or a report, else a TypeError saying so
    if traffic.mesh.num_devices != plan.mesh.num_devices:
        raise ValueError(f"communication= is on {traffic.mesh}, the memory plan on {plan.mesh}: "
                         "pass the traffic of the same devices.")
    return traffic


def plot_memory(plan: MemoryPlan, *, ax=None, max_named: int = 8, communication=False,
                batch_dims=("batch",)) -> Figure:
    """Bytes per device (mesh device order) stacked by variable, each variable's slots
    hatched above its parameter, with a dashed line at what every device would hold if
    nothing were sharded. ``communication=True`` adds a panel beside it: the gradient
    bytes each device all-reduces per update (``communication_plan(plan, batch_dims)``), in
    the same colours; or pass a ``CommunicationPlan`` or measured ``CommunicationReport``.
    Returns the ``Figure`` (``ax.figure`` when ``ax`` is given: one axes, or two with
    ``communication``)."""
    n = plan.mesh.num_devices
    traffic = _traffic_of(plan, communication, batch_dims) if communication is not False else None
    if ax is None:
        from .figure import new_figure
        if traffic is None:
            fig = new_figure((min(WIDTH, max(6.0, 2.5 + 0.45 * n)), 3.8), DPI)
            axes = (fig.add_subplot(),)
        else:
            fig = new_figure((WIDTH, 4.0), DPI)
            axes = tuple(fig.subplots(1, 2))
    else:
        axes = tuple(ax) if isinstance(ax, (tuple, list)) else (ax,)
        if len(axes) != (1 if traffic is None else 2):
            raise ValueError(f"ax= takes {'one axes' if traffic is None else 'two axes (memory, traffic)'}"
                             f" here. Received: {len(axes)}.")
        fig = axes[0].figure
    segments = memory_bars(plan, max_named)
    handles = _draw_memory(axes[0], plan, segments)
    if traffic is not None:
        handles += _draw_traffic(axes[1], plan, traffic, segments)
    axes[-1].legend(handles=handles, fontsize=NOTE_SIZE, loc="upper left",
                    bbox_to_anchor=(1.01, 1.0), frameon=False, title="variables",
                    title_fontsize=NOTE_SIZE)
    return fig


def _width_pt(ax) -> float:
    """About how wide ``ax`` is in points (its place before the layout settles)."""
    return max(150.0, ax.get_position().width * ax.figure.get_figwidth() * 72 * 1.1)


def _device_axis(ax, plan, fontsize=TICK_SIZE):
    n, names = plan.mesh.num_devices, plan.mesh.short_device_names
    # names that would touch side by side are turned
    crowded = n * max(map(len, names)) * fontsize * 0.62 > 0.8 * _width_pt(ax)
    ax.set_xticks(np.arange(n), names, fontsize=fontsize,
                  rotation=90 if n > 16 else 35 if crowded else 0,
                  ha="right" if crowded and n <= 16 else "center",
                  rotation_mode="anchor" if crowded and n <= 16 else "default")
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel(fit(f"devices in mesh order: {plan.mesh}", _width_pt(ax), LABEL_SIZE),
                  fontsize=LABEL_SIZE)
    ax.tick_params(labelsize=fontsize)


def _draw_memory(ax, plan, segments) -> list:
    n = plan.mesh.num_devices
    top = max(int(plan.bytes_per_device.max()), plan.unique_bytes)
    unit, scale = unit_for(top)
    x = np.arange(n)
    for s in segments:
        ax.bar(x, s.height / scale, bottom=s.bottom / scale, color=s.color, width=0.8,
               edgecolor="white", linewidth=0.6, hatch="///" if s.kind == "slot" else None,
               gid=f"{s.kind}-{s.label}", label=s.label if s.kind == "param" else None)
    full = plan.unique_bytes / scale
    ax.axhline(full, color="#444444", linestyle="--", linewidth=1, gid="replicated-line")
    ax.annotate(f"nothing sharded: {format_bytes(plan.unique_bytes)} on every device",
                (n - 0.5, full), xytext=(0, LABEL_LIFT), textcoords="offset points",
                ha="right", va="bottom", fontsize=NOTE_SIZE, color="#444444",
                gid="replicated-text")
    per = plan.bytes_per_device
    if per.max() < 0.85 * plan.unique_bytes:  # else the bars reach the line: it says enough
        ax.annotate(f"as laid out: {format_bytes(per.max())}" + (
            "" if per.min() == per.max() else f" (min {format_bytes(per.min())})") +
            " per device", (-0.5, per.max() / scale), xytext=(0, LABEL_LIFT),
            textcoords="offset points", ha="left", va="bottom", fontsize=NOTE_SIZE,
            gid="sharded-text")
    _device_axis(ax, plan)
    ax.set_ylim(0, full * 1.12)
    ax.set_ylabel(f"{unit} per device", fontsize=LABEL_SIZE)
    held = ("parameters" + (" + velocity slots (hatched)" if plan.slots else ""))
    # identical bars said nothing bar by bar: the title says it once
    ax.set_title(fit(_memory_title(plan, held), _width_pt(ax), TITLE_SIZE), fontsize=TITLE_SIZE)
    handles = [Patch(facecolor=s.color, label=s.label) for s in segments if s.kind == "param"]
    if plan.slots:
        handles.append(Patch(facecolor="white", edgecolor="#444444", hatch="///",
                             label="velocity slot"))
    return handles


def _memory_title(plan, held: str) -> str:
    """The finding: what the layout saves each device against holding everything."""
    per, n = plan.bytes_per_device, plan.mesh.num_devices
    full = plan.unique_bytes
    same = per.min() == per.max() and n > 1
    if 0 < per.max() < full:
        saving = f"{full / per.max():.3g}x"
        return (f"sharding cuts {'each' if same else 'the fullest'} device's memory {saving}: "
                f"{format_bytes(per.max())} instead of {format_bytes(full)}; {held}")
    if same:
        return f"every device holds the same {format_bytes(per.max())}: {held}"
    return f"bytes per device: {held}"


def _draw_traffic(ax, plan, traffic, segments) -> list:
    """The traffic panel; returns legend handles for what the memory panel's lack."""
    bars = traffic_bars(plan, traffic, segments)
    n = plan.mesh.num_devices
    predicted = isinstance(traffic, CommunicationPlan)
    # what a fully replicated model all-reduces: every gradient whole, on every device
    full = (sum(e.nbytes for e in plan.entries)
            if predicted and any(plan.mesh.dim_size(d) > 1 for d in traffic.batch_dims) else 0)
    top = int(sum(s.height for s in bars).max()) if bars else 0
    unit, scale = unit_for(max(top, full, 1))
    x = np.arange(n)
    for s in bars:
        ax.bar(x, s.height / scale, bottom=s.bottom / scale, color=s.color, width=0.8,
               edgecolor="white", linewidth=0.6, hatch=".." if s.kind == "serves" else None,
               gid=f"traffic-{s.label}")
    if full:
        ax.axhline(full / scale, color="#444444", linestyle="--", linewidth=1,
                   gid="traffic-replicated-line")
        ax.annotate(f"nothing sharded: {format_bytes(full)}", (n - 0.5, full / scale),
                    xytext=(0, LABEL_LIFT), textcoords="offset points", ha="right",
                    va="bottom", fontsize=NOTE_SIZE, color="#444444",
                    gid="traffic-replicated-text")
    items = traffic_items(traffic)
    along = ", ".join(f"{format_bytes(b)} along {dims_text(d)}"
                      for d, b in totals(traffic.mesh, items).items()) or "nothing"
    ax.annotate(f"as laid out: {along}", (-0.5, top / scale), xytext=(0, LABEL_LIFT),
                textcoords="offset points", ha="left", va="bottom", fontsize=NOTE_SIZE,
                gid="traffic-text")
    _device_axis(ax, plan)
    ax.set_ylim(0, max(top, full, 1) / scale * 1.18)
    ax.set_ylabel(f"{unit} per device per update", fontsize=LABEL_SIZE)
    ax.set_title("gradient all-reduce per update (predicted)" if predicted else
                 "collectives per update (measured)", fontsize=TITLE_SIZE)
    named = {s.label for s in segments if s.kind == "param"}
    return [Patch(facecolor=s.color, hatch=".." if s.kind == "serves" else None, label=s.label)
            for s in bars if s.label not in named]
