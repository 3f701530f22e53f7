"""The memory plan as bars: bytes per device, stacked by variable, slots hatched.

``memory_bars`` computes the segments (pure, tested); ``plot_memory`` draws them::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan, plot_memory
    >>> from dtsgd_viz.views.core.figure import headline_texts
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> fig = plot_memory(memory_plan({"w": ((8, 16), "float32", spec)}))
    >>> [" ".join(t.split()) for t in headline_texts(fig)]
    ["Sharding cuts each device's memory 4x: 256 B instead of 1 KiB", 'parameters + velocity slots (hatched) on Mesh(batch=2, model=4; 8 devices), float32']
    >>> [t.get_text() for t in fig.axes[0].texts if t.get_gid() == "segment-label-w"]
    ['w 128 B + 128 B slot']

Colours: ``style.VARIABLE_COLORS``, none of them a rule's colour (blue and vermilion
mean momentum and Nesterov in every other view); sizes on ``style``'s scale, at most
``style.WIDTH`` wide.
"""  # noqa: E501  (a doctest's expected output line)

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from ...recording.communication import CommunicationPlan, CommunicationReport, communication_plan
from ...recording.memory import MemoryPlan, format_bytes
from ..core.figure import axes_size_inches, fit, headline, root_figure
from ..core.style import DPI, LABEL_SIZE, NOTE_SIZE, TICK_SIZE, TITLE_SIZE, VARIABLE_COLORS, WIDTH
from ..text.direct import READABLE_GAP, axes_height_points, leaders, spread
from .traffic import dims_text, per_device, totals, traffic_items

if TYPE_CHECKING:
    from matplotlib.axes import Axes

_PALETTE = list(VARIABLE_COLORS)
_GREYS = ("#BBBBBB", "#888888", "#DDDDDD", "#666666")
LABEL_LIFT = 4.0  # points between a level's label and the bar top or line it sits on
BAR_WIDTH = 0.8
LEADER_END = 1.04  # axes fraction where a segment's leader line meets its label
_UNITS = (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3), ("TiB", 1024**4))


@dataclasses.dataclass(frozen=True)
class Segment:
    """One stacked piece of every device's bar: ``bottom`` and ``height`` per device (bytes)."""

    label: str
    kind: str  # "param" or "slot"
    color: str
    bottom: np.ndarray
    height: np.ndarray


def unit_for(nbytes: float) -> tuple[str, int]:
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


def traffic_bars(
    plan: MemoryPlan, traffic: CommunicationPlan | CommunicationReport, segments: Sequence[Segment]
) -> list[Segment]:
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
        raise ValueError(
            f"communication= is on {traffic.mesh}, the memory plan on {plan.mesh}: "
            "pass the traffic of the same devices."
        )
    return traffic


def plot_memory(
    plan: MemoryPlan,
    *,
    ax: Axes | tuple[Axes, ...] | list[Axes] | None = None,
    max_named: int = 8,
    communication: bool | CommunicationPlan | CommunicationReport = False,
    batch_dims: Sequence[str] = ("batch",),
) -> Figure:
    """Bytes per device (mesh device order) stacked by variable, each variable's slots
    hatched above its parameter, with a dashed line at what every device would hold if
    nothing were sharded. Each variable is named at the right of the last bar, with its
    bytes there. ``communication=True`` adds a panel beside it: the gradient bytes each
    device all-reduces per update (``communication_plan(plan, batch_dims)``), in the same
    colours (then a legend names them); or pass a ``CommunicationPlan`` or measured
    ``CommunicationReport``. The finding heads the figure (the axes' title when ``ax`` is
    given). Returns the ``Figure`` (``ax.figure`` when ``ax`` is given: one axes, or two
    with ``communication``)."""
    n = plan.mesh.num_devices
    traffic = _traffic_of(plan, communication, batch_dims) if communication is not False else None
    segments = memory_bars(plan, max_named)
    labels = segment_labels(plan, segments) if traffic is None else []
    own = ax is None
    if own:
        from ..core.figure import new_figure

        if traffic is None:
            thin = _thin(plan, segments, labels, 3.9 * DPI * 0.7)  # about the axes' height
            room = (
                max([len(t) + len(THIN_NOTE) * (name in thin) + 1 for name, t, _, _ in labels] + [0])
                * LABEL_SIZE
                * 0.6
                / 72
                + 0.6
            )
            fig = new_figure((min(WIDTH, max(6.0, 2.5 + 0.45 * n) + room), 3.9), DPI)
            axes = (fig.add_subplot(),)
        else:
            fig = new_figure((WIDTH, 4.3), DPI)
            axes = tuple(fig.subplots(1, 2))
        headline(fig, _memory_title(plan), _memory_settings(plan))
    else:
        axes = tuple(ax) if isinstance(ax, (tuple, list)) else (ax,)
        if len(axes) != (1 if traffic is None else 2):
            raise ValueError(
                f"ax= takes {'one axes' if traffic is None else 'two axes (memory, traffic)'}"
                f" here. Received: {len(axes)}."
            )
        fig = root_figure(axes[0])
        axes[0].set_title(fit(_memory_title(plan), _width_pt(axes[0]), TITLE_SIZE), fontsize=TITLE_SIZE)
    handles = _draw_memory(axes[0], plan, segments, mesh_label=not own)
    if traffic is not None:
        handles += _draw_traffic(axes[-1], plan, traffic, segments, mesh_label=not own)  # the second of two
        if own:
            axes[0].set_title("memory per device", fontsize=TITLE_SIZE)
        axes[-1].legend(
            handles=handles,
            fontsize=NOTE_SIZE,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            title="variables",
            title_fontsize=NOTE_SIZE,
        )
    elif labels:
        texts = _draw_labels(axes[0], plan, labels, segments)
        if own:  # placed again at the axes' height once the layout has run
            fig.draw_without_rendering()
            _place_labels(axes[0], plan, texts, labels, segments)
    _fit_notes(axes)
    return fig


def _fit_notes(axes) -> None:
    """The "as laid out" notes inside their panel, as drawn: one wider than the panel
    (several mesh dims' traffic, past a legend beside it) takes a line per part, and the
    panel's top rises until the note stands under it."""
    fig = axes[0].figure
    if not hasattr(fig.canvas, "get_renderer"):
        return
    notes = [(ax, t) for ax in axes for t in ax.texts if t.get_gid() in ("sharded-text", "traffic-text")]
    if not notes:
        return
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    for ax, note in notes:
        for _ in range(6):
            box, frame = note.get_window_extent(renderer), ax.get_window_extent(renderer)
            if box.x1 > frame.x1 - 2 and ", " in note.get_text():
                head, _, rest = note.get_text().partition(": ")
                note.set_text(f"{head}:\n" + rest.replace(", ", ",\n"))
            elif box.y1 > frame.y1 - 2:
                lo, hi = ax.get_ylim()
                ax.set_ylim(lo, lo + (hi - lo) * 1.15)
            else:
                break
            fig.draw_without_rendering()


def segment_labels(plan: MemoryPlan, segments: Sequence[Segment]) -> list[tuple[str, str, float, str]]:
    """One ``(name, text, middle, colour)`` per variable of ``segments`` (``memory_bars``),
    bottom-up, for the last device's bar: ``d1/kernel 64 B + 64 B slot``, and the
    bytes at the middle of its stack there."""
    out, last = [], plan.mesh.num_devices - 1
    by: dict[str, list[Segment]] = {}
    for s in segments:
        by.setdefault(s.label, []).append(s)
    for label, parts in by.items():
        param = sum(int(s.height[last]) for s in parts if s.kind == "param")
        slot = sum(int(s.height[last]) for s in parts if s.kind == "slot")
        if param + slot:
            text = f"{label} {format_bytes(param)}" + (f" + {format_bytes(slot)} slot" if slot else "")
            out.append((label, text, float(parts[0].bottom[last]) + (param + slot) / 2, parts[0].color))
    return out


def _memory_unit(plan) -> tuple[str, int]:
    return unit_for(max(int(plan.bytes_per_device.max()), plan.unique_bytes))


THIN_PX = 4.0  # a variable's stack thinner than this on the last bar cannot be seen
THIN_NOTE = "(too thin to see)"


def _thin(plan, segments, labels, axes_px: float) -> set:
    """The names of ``labels`` whose stack on the last bar is under ``THIN_PX`` pixels
    tall on an axes ``axes_px`` pixels high (its y axis: 0 to ``_draw_memory``'s top)."""
    last = plan.mesh.num_devices - 1
    top = plan.unique_bytes * 1.12
    size = {}
    for seg in segments:
        size[seg.label] = size.get(seg.label, 0) + int(seg.height[last])
    return {name for name, _, _, _ in labels if top > 0 and size.get(name, 0) / top * axes_px < THIN_PX}


def _draw_labels(ax, plan, labels, segments) -> list:
    """The variables named at the right of the last bar (in axes fractions); a name whose
    stack is too thin to see says so beside it (its own text, ``segment-thin-<name>``)."""
    texts = [
        ax.text(
            LEADER_END + 0.01,
            0.5,
            text,
            transform=ax.transAxes,
            ha="left",
            va="center",
            fontsize=LABEL_SIZE,
            color="#222222",
            clip_on=False,
            gid=f"segment-label-{name}",
        )
        for name, text, _, _ in labels
    ]
    for (name, _, _, _), t in zip(labels, texts):
        ax.annotate(
            THIN_NOTE,
            (1.0, 0.5),
            xycoords=t,
            xytext=(4, 0),
            textcoords="offset points",
            ha="left",
            va="center",
            fontsize=LABEL_SIZE,
            color="#555555",
            fontstyle="italic",
            annotation_clip=False,
            visible=False,
            gid=f"segment-thin-{name}",
        )
    _place_labels(ax, plan, texts, labels, segments)
    return texts


def _place_labels(ax, plan, texts, labels, segments) -> None:
    """Stack middles pushed apart at the axes' height now, with leader lines to them
    from the last bar's right edge; "too thin to see" beside the names of stacks under
    ``THIN_PX`` pixels at that height."""
    for line in [ln for ln in ax.lines if (ln.get_gid() or "").startswith("segment-leader")]:
        line.remove()
    thin = _thin(plan, segments, labels, ax.get_window_extent().height)
    for t in ax.texts:
        gid = t.get_gid() or ""
        if gid.startswith("segment-thin-"):
            t.set_visible(gid[len("segment-thin-") :] in thin)
    (lo, hi), (x0, x1) = ax.get_ylim(), ax.get_xlim()
    scale = _memory_unit(plan)[1]
    ends = [(mid / scale - lo) / (hi - lo) for _, _, mid, _ in labels]
    placed = spread(ends, READABLE_GAP * LABEL_SIZE / axes_height_points(ax), 0.02, 0.98)
    for t, f in zip(texts, placed):
        t.set_y(f)
    edge = plan.mesh.num_devices - 1 + BAR_WIDTH / 2
    leaders(
        ax,
        ends,
        placed,
        [c for _, _, _, c in labels],
        x0=(edge - x0) / (x1 - x0),
        x1=LEADER_END,
        min_shift=-1.0,
        gid="segment-leader",
    )


def _width_pt(ax) -> float:
    """About how wide ``ax`` is in points (its place before the layout settles)."""
    return max(150.0, axes_size_inches(ax)[0] * 72 * 1.1)


MANY_DEVICES = 16
"""Past this many devices the bars are named by device number alone ("CPU:" said once in
the axis label), every ``device_step``-th of them."""


def device_step(n: int, width_pt: float, fontsize: float = TICK_SIZE) -> int:
    """Every how many devices a bar is named on an axis ``width_pt`` points wide: the
    smallest power of two at which the device numbers (at most ``len(str(n - 1))`` digits,
    about 0.62 em each) stand a space apart.

    >>> device_step(8, 300), device_step(64, 300), device_step(256, 300)
    (1, 4, 32)
    """
    need = (len(str(n - 1)) * 0.62 + 0.8) * fontsize
    step = 1
    while step < n and step * width_pt / max(n, 1) < need:
        step *= 2
    return step


def _device_axis(ax, plan, fontsize=TICK_SIZE, mesh=True):
    n, names = plan.mesh.num_devices, plan.mesh.short_device_names
    from ..shards.geometry import device_ticks

    numbers, prefix = device_ticks(names)
    what = "devices in mesh order"
    if n > MANY_DEVICES:  # numbers only, as many as stand apart (the axes' width, about)
        width = 0.85 * axes_size_inches(ax)[0] * 72
        step = device_step(n, width, fontsize)
        at = np.arange(0, n, step)
        ax.set_xticks(at, [numbers[i] for i in at], fontsize=fontsize, rotation=0)
        said = [f"{prefix}k"] if prefix else []
        said += [f"one in {step} named"] if step > 1 else []
        what += f" ({'; '.join(said)})" if said else ""
    else:
        # names that would touch side by side are turned
        crowded = n * max(map(len, names)) * fontsize * 0.62 > 0.8 * _width_pt(ax)
        ax.set_xticks(
            np.arange(n),
            names,
            fontsize=fontsize,
            rotation=35 if crowded else 0,
            ha="right" if crowded else "center",
            rotation_mode="anchor" if crowded else "default",
        )
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel(fit(what + (f": {plan.mesh}" if mesh else ""), _width_pt(ax), LABEL_SIZE), fontsize=LABEL_SIZE)
    ax.tick_params(labelsize=fontsize)


def _edge_width(n: int) -> float:
    """The white edge between stacked pieces: none past ``4 * MANY_DEVICES`` bars, whose
    few pixels each it would wash out."""
    return 0.6 if n <= 4 * MANY_DEVICES else 0.0


def _draw_memory(ax, plan, segments, mesh_label=True) -> list:
    n = plan.mesh.num_devices
    unit, scale = _memory_unit(plan)
    x = np.arange(n)
    edge = _edge_width(n)
    for s in segments:
        ax.bar(
            x,
            s.height / scale,
            bottom=s.bottom / scale,
            color=s.color,
            width=BAR_WIDTH,
            edgecolor="white",
            linewidth=edge,
            hatch="///" if s.kind == "slot" else None,
            gid=f"{s.kind}-{s.label}",
            label=s.label if s.kind == "param" else None,
        )
    full = plan.unique_bytes / scale
    ax.axhline(full, color="#444444", linestyle="--", linewidth=1, gid="replicated-line")
    ax.annotate(
        f"nothing sharded: {format_bytes(plan.unique_bytes)} on every device",
        (n - 0.5, full),
        xytext=(0, LABEL_LIFT),
        textcoords="offset points",
        ha="right",
        va="bottom",
        fontsize=NOTE_SIZE,
        color="#444444",
        gid="replicated-text",
    )
    per = plan.bytes_per_device
    if per.max() < 0.85 * plan.unique_bytes:  # else the bars reach the line: it says enough
        ax.annotate(
            f"as laid out: {format_bytes(per.max())}"
            + ("" if per.min() == per.max() else f" (min {format_bytes(per.min())})")
            + " per device",
            (-0.5, per.max() / scale),
            xytext=(0, LABEL_LIFT),
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=NOTE_SIZE,
            gid="sharded-text",
        )
        if n > 1:  # the empty space above the bars is the saving: say so there
            at = n - 1 - (n > 2)  # over the bars, clear of the label at the left
            ax.annotate(
                "",
                (at, per.max() / scale),
                xytext=(at, full),
                gid="saving-arrow",
                arrowprops=dict(arrowstyle="<->", color="#444444", lw=1.0, shrinkA=1, shrinkB=1),
            )
            ax.annotate(
                f"{format_bytes(plan.unique_bytes - per.max())} less per device",
                (at, (per.max() / scale + full) / 2),
                xytext=(-5, 0),
                textcoords="offset points",
                ha="right",
                va="center",
                fontsize=LABEL_SIZE,
                color="#444444",
                gid="saving-text",
            )
    _device_axis(ax, plan, mesh=mesh_label)
    ax.set_ylim(0, full * 1.12)
    for side in ("top", "right"):  # the names' leaders run out of the axes: no spine to cross
        ax.spines[side].set_visible(False)
    ax.set_ylabel(f"{unit} per device", fontsize=LABEL_SIZE)
    handles = [Patch(facecolor=s.color, label=s.label) for s in segments if s.kind == "param"]
    if plan.slots:
        handles.append(Patch(facecolor="white", edgecolor="#444444", hatch="///", label="velocity slot"))
    return handles


def _memory_title(plan) -> str:
    """The finding: what the layout saves each device against holding everything
    (identical bars say nothing bar by bar: the title says it once)."""
    per, n = plan.bytes_per_device, plan.mesh.num_devices
    full = plan.unique_bytes
    same = per.min() == per.max() and n > 1
    if 0 < per.max() < full:
        saving = f"{full / per.max():.3g}x"
        return (
            f"Sharding cuts {'each' if same else 'the fullest'} device's memory {saving}: "
            f"{format_bytes(per.max())} instead of {format_bytes(full)}"
        )
    if same:
        return f"Every device holds the same {format_bytes(per.max())}"
    return f"Bytes per device: up to {format_bytes(per.max())}"


def _memory_settings(plan) -> str:
    """The subtitle: what is counted, on which mesh, in which dtypes."""
    held = "parameters" + (" + velocity slots (hatched)" if plan.slots else "")
    dtypes = ", ".join(dict.fromkeys(e.dtype for e in plan.entries))
    return f"{held} on {plan.mesh}" + (f", {dtypes}" if dtypes else "")


def _draw_traffic(ax, plan, traffic, segments, mesh_label=True) -> list:
    """The traffic panel; returns legend handles for what the memory panel's lack."""
    bars = traffic_bars(plan, traffic, segments)
    n = plan.mesh.num_devices
    predicted = isinstance(traffic, CommunicationPlan)
    # what a fully replicated model all-reduces: every gradient whole, on every device
    full = (
        sum(e.nbytes for e in plan.entries)
        if predicted and any(plan.mesh.dim_size(d) > 1 for d in traffic.batch_dims)
        else 0
    )
    top = int(np.max(sum(s.height for s in bars))) if bars else 0
    unit, scale = unit_for(max(top, full, 1))
    x = np.arange(n)
    for s in bars:
        ax.bar(
            x,
            s.height / scale,
            bottom=s.bottom / scale,
            color=s.color,
            width=0.8,
            edgecolor="white",
            linewidth=_edge_width(n),
            hatch=".." if s.kind == "serves" else None,
            gid=f"traffic-{s.label}",
        )
    if full:
        ax.axhline(full / scale, color="#444444", linestyle="--", linewidth=1, gid="traffic-replicated-line")
        ax.annotate(
            f"nothing sharded: {format_bytes(full)}",
            (n - 0.5, full / scale),
            xytext=(0, LABEL_LIFT),
            textcoords="offset points",
            ha="right",
            va="bottom",
            fontsize=NOTE_SIZE,
            color="#444444",
            gid="traffic-replicated-text",
        )
    items = traffic_items(traffic)
    along = (
        ", ".join(f"{format_bytes(b)} along {dims_text(d)}" for d, b in totals(traffic.mesh, items).items())
        or "nothing"
    )
    ax.annotate(
        f"as laid out: {along}",
        (-0.5, top / scale),
        xytext=(0, LABEL_LIFT),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontsize=NOTE_SIZE,
        gid="traffic-text",
    )
    _device_axis(ax, plan, mesh=mesh_label)
    ax.set_ylim(0, max(top, full, 1) / scale * 1.18)
    ax.set_ylabel(f"{unit} per device per update", fontsize=LABEL_SIZE)
    ax.set_title(
        "gradient all-reduce per update (predicted)" if predicted else "collectives per update (measured)",
        fontsize=TITLE_SIZE,
    )
    named = {s.label for s in segments if s.kind == "param"}
    return [
        Patch(facecolor=s.color, hatch=".." if s.kind == "serves" else None, label=s.label)
        for s in bars
        if s.label not in named
    ]
