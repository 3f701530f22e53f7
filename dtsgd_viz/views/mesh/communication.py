"""What each update moves between devices, drawn on the mesh: one panel per set of mesh dims."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
from matplotlib.figure import Figure
from matplotlib.patches import Circle, FancyBboxPatch

from ...recording.communication import CommunicationPlan, CommunicationReport
from ...recording.memory import format_bytes
from ...specs import MeshSpec
from ..core.figure import headline as draw_headline
from ..core.figure import new_figure
from ..core.style import MESH_DIM_COLORS, MESH_DIMS_COLORS, NOTE_SIZE, TICK_SIZE, TITLE_SIZE, WIDTH

ACTIVATION_NOTE = (
    "activation traffic (e.g. the all-reduce of a layer's output when its "
    "kernel is sharded over model) is not predictable from layouts alone: "
    "measure it with dtsgd_viz.communication(step)"
)
ROW_GAP = 0.6  # cells between the row groups of a mesh of rank 3 or more
NODE_RADIUS = 0.36  # cells
HULL = 0.43  # cells from a device's centre to its group's box


@dataclasses.dataclass(frozen=True)
class Item:
    """One collective or gradient all-reduce: each device of ``groups`` sends ``bytes_per_device``."""

    kind: str
    mesh_dims: tuple[str, ...]
    bytes_per_device: int
    serves: str
    label: str  # the variable of a gradient, else what the collective is for
    groups: tuple[tuple[int, ...], ...]
    time_us: float | None = None


def mesh_groups(mesh: MeshSpec, dims: Iterable[str]) -> tuple[tuple[int, ...], ...]:
    """The device groups whose members differ only along ``dims``, by first device."""
    axes = [mesh.dim_names.index(d) for d in dims]
    groups: dict[tuple, list[int]] = {}
    for d in range(mesh.num_devices):
        key = tuple(x for i, x in enumerate(mesh.device_coords(d)) if i not in axes)
        groups.setdefault(key, []).append(d)
    return tuple(sorted(tuple(g) for g in groups.values()))


def traffic_items(obj: CommunicationPlan | CommunicationReport) -> tuple[Item, ...]:
    """The traffic of a plan or report along at least one mesh dim, in plan or program order."""
    if isinstance(obj, CommunicationPlan):
        return tuple(
            Item(
                "all-reduce",
                e.mesh_dims,
                e.bytes_per_device,
                "gradient",
                e.variable,
                mesh_groups(obj.mesh, e.mesh_dims),
            )
            for e in obj.entries
            if e.mesh_dims
        )
    if not isinstance(obj, CommunicationReport):
        raise TypeError(
            "Expected a CommunicationPlan (dtsgd_viz.communication_plan or communication_plan(memory_plan)) "
            f"or a CommunicationReport (dtsgd_viz.communication(step)). Received: {type(obj).__name__}."
        )
    return tuple(
        Item(
            c.kind,
            c.mesh_dims,
            c.bytes_per_device,
            c.serves,
            c.variable if c.serves == "gradient" and c.variable else c.what,
            c.groups or mesh_groups(obj.mesh, c.mesh_dims),
            c.time_us,
        )
        for c in obj.collectives
        if c.mesh_dims
    )


def per_device(mesh: MeshSpec, item: Item) -> np.ndarray:
    """Bytes each device (mesh device order) contributes to ``item``."""
    out = np.zeros(mesh.num_devices, np.int64)
    for g in item.groups:
        out[list(g)] = item.bytes_per_device
    return out


def totals(mesh: MeshSpec, items: Sequence[Item]) -> dict[tuple[str, ...], int]:
    """Bytes per device per update by set of mesh dims: single dims first, in mesh order."""
    order = sorted({i.mesh_dims for i in items}, key=lambda ds: (len(ds) > 1, [mesh.dim_names.index(d) for d in ds]))
    return {dims: sum(i.bytes_per_device for i in items if i.mesh_dims == dims) for dims in order}


def dim_color(mesh: MeshSpec, dims: Iterable[str]) -> str:
    """One colour per mesh dim; a set of dims its own (by its mesh-order bitmask)."""
    index = [mesh.dim_names.index(d) for d in dims]
    if len(index) <= 1:
        return MESH_DIM_COLORS[index[0] % len(MESH_DIM_COLORS)] if index else "#888888"
    return MESH_DIMS_COLORS[sum(1 << i for i in index) % len(MESH_DIMS_COLORS)]


def dims_text(dims: Sequence[str]) -> str:
    """``batch × model``: a set of mesh dims in words."""
    return " × ".join(dims) if dims else "no mesh dim"


def headline(obj: CommunicationPlan | CommunicationReport) -> str:
    """The finding: ``Each update all-reduces 3.6 KiB per device along batch, 2 KiB along model``."""
    items, plan = traffic_items(obj), isinstance(obj, CommunicationPlan)
    if not items:
        if plan:
            return "Each update all-reduces no gradient: the batch is not split over devices"
        return "Each update moves nothing between devices"
    verb = "all-reduces" if all(i.kind == "all-reduce" for i in items) else "moves"
    parts = [
        format_bytes(b) + (" of gradient" * plan + " per device" if k == 0 else "") + f" along {dims_text(d)}"
        for k, (d, b) in enumerate(totals(obj.mesh, items).items())
    ]
    return f"Each update {verb} " + ", ".join(parts)


def settings_text(obj: CommunicationPlan | CommunicationReport) -> str:
    """The subtitle: what was measured or predicted, on which mesh, how many collectives."""
    traffic_items(obj)  # a plan or a report, else a TypeError saying so
    mesh = obj.mesh
    if isinstance(obj, CommunicationPlan):
        src, n = f" of {obj.source}" if obj.source else "", len(obj.entries)
        batch = ", ".join(obj.batch_dims) or "no mesh dim"
        return f"predicted from the layouts{src}: {n} variable{'s' * (n != 1)} on {mesh}, batch split over {batch}"
    kinds: dict[str, int] = {}
    for c in obj.collectives:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    counted = ", ".join(f"{n} {k}{'s' * (n != 1)}" for k, n in kinds.items())
    return f"measured on the compiled {obj.function or 'step'} on {mesh}: {counted or 'no collectives'}"


def serves_lines(items: Iterable[Item], max_items: int = 3) -> tuple[str, ...]:
    """What the items are for, biggest first: a line per purpose, then the ``max_items`` largest gradients."""
    by: dict[str, list[Item]] = {}
    for i in items:
        by.setdefault(i.serves, []).append(i)
    lines = []
    for serves, group in sorted(by.items(), key=lambda kv: -sum(i.bytes_per_device for i in kv[1])):
        total = format_bytes(sum(i.bytes_per_device for i in group))
        kinds = sorted({i.kind for i in group})
        how = ", ".join(f"{sum(i.kind == k for i in group)} {k}" for k in kinds)
        if serves != "gradient":
            lines.append(f"{serves}: {total} ({how})")
            continue
        head = f"gradient of {group[0].label}" if len(group) == 1 else f"gradients of {len(group)} variables"
        lines.append(f"{head}: {total}" + ("" if kinds == ["all-reduce"] else f" ({how})"))
        if len(group) > 1:
            top = sorted(group, key=lambda i: -i.bytes_per_device)
            shown = top[: max_items + (len(top) == max_items + 1)]  # "+1 more": name it
            named = [f"{i.label}: {format_bytes(i.bytes_per_device)}" for i in shown]
            if rest := top[len(shown) :]:
                named.append(f"+{len(rest)} more: {format_bytes(sum(i.bytes_per_device for i in rest))}")
            lines.append(", ".join(named))
    return tuple(lines)


def device_positions(
    mesh: MeshSpec, gap: float = ROW_GAP
) -> tuple[np.ndarray, tuple[tuple[float, str], ...], tuple[float, float]]:
    """``(centres, rows, extent)`` in cells: columns the last mesh dim, rows the one before, groups ``gap`` apart."""
    sizes: tuple[int, ...] = tuple(mesh.dim_sizes)
    names, ncols = mesh.dim_names, sizes[-1]
    inner = sizes[-2] if len(sizes) >= 2 else 1
    centres, rows = np.zeros((mesh.num_devices, 2)), {}
    for d in range(mesh.num_devices):
        c: tuple[int, ...] = mesh.device_coords(d)
        col, row = c[-1], (c[-2] if len(c) >= 2 else 0)
        group = int(np.ravel_multi_index(c[:-2], sizes[:-2])) if len(c) > 2 else 0
        y = group * (inner + gap) + row + 0.5
        centres[d] = (col + 0.5, y)
        if len(c) >= 2:
            rows[y] = ", ".join(f"{n}={i}" for n, i in zip(names[:-1], c[:-1]))
    groups = math.prod(sizes[:-2])
    return centres, tuple(sorted(rows.items())), (float(ncols), groups * inner + (groups - 1) * gap)


@dataclasses.dataclass(frozen=True)
class GroupBox:
    """One group of devices that reduce together and its ``boxes`` (x, y, w, h in cells)."""

    devices: tuple[int, ...]
    boxes: tuple[tuple[float, float, float, float], ...]


def group_boxes(centres: np.ndarray, group: Sequence[int]) -> GroupBox:
    """The group's bounding box when it holds no other device, else one box per member."""
    pts = centres[list(group)]
    (x0, y0), (x1, y1) = pts.min(axis=0) - HULL, pts.max(axis=0) + HULL
    inside = (centres[:, 0] > x0) & (centres[:, 0] < x1) & (centres[:, 1] > y0) & (centres[:, 1] < y1)
    if inside.sum() == len(group):
        boxes = [(x0, y0, x1 - x0, y1 - y0)]
    else:
        boxes = [(x - HULL, y - HULL, 2 * HULL, 2 * HULL) for x, y in pts]
    rounded = [[round(float(v), 9) for v in box] for box in boxes]
    return GroupBox(tuple(group), tuple((x, y, w, h) for x, y, w, h in rounded))


@dataclasses.dataclass(frozen=True)
class DimPanel:
    """The traffic along one set of mesh dims."""

    mesh_dims: tuple[str, ...]
    color: str
    bytes_per_device: int
    groups: tuple[GroupBox, ...]
    title: str
    lines: tuple[str, ...]

    @property
    def devices(self) -> frozenset[int]:
        return frozenset(d for g in self.groups for d in g.devices)


@dataclasses.dataclass(frozen=True)
class CommunicationPicture:
    """Everything ``plot_communication`` draws, in cell units; ``figsize`` in inches."""

    mesh: MeshSpec
    centres: np.ndarray
    rows: tuple[tuple[float, str], ...]
    xlim: tuple[float, float]
    ylim: tuple[float, float]  # (bottom, top): y grows downwards
    node_labels: tuple[str, ...]
    panels: tuple[DimPanel, ...]
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]


def communication_geometry(obj: CommunicationPlan | CommunicationReport, *, max_items: int = 3) -> CommunicationPicture:
    """Everything ``plot_communication`` draws for a plan or report, in cells."""
    items, mesh = traffic_items(obj), obj.mesh
    centres, rows, (gw, gh) = device_positions(mesh)
    panels = []
    for dims, nbytes in totals(mesh, items).items():
        mine = [i for i in items if i.mesh_dims == dims]
        times = [i.time_us for i in mine if i.time_us is not None]
        groups = tuple(group_boxes(centres, g) for g in dict.fromkeys(g for i in mine for g in i.groups))
        when = f" · {sum(times):.0f} us" if times else ""
        lines = serves_lines(mine, max_items)
        panels.append(DimPanel(dims, dim_color(mesh, dims), nbytes, groups, f"along {dims_text(dims)}{when}", lines))
    if not panels:
        panels.append(DimPanel((), dim_color(mesh, ()), 0, (), "nothing moves between devices", ()))
    cell = min(0.6, (WIDTH / len(panels) - 1.4) / gw)
    names = mesh.short_device_names
    fits = max(map(len, names)) * 0.62 * TICK_SIZE <= 2 * NODE_RADIUS * cell * 72 - 2
    labels = tuple(names) if fits else tuple(str(d) for d in range(mesh.num_devices))
    note = "" if fits else f"circles: devices (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})"
    if items:
        verb = "all-reduce" if all(i.kind == "all-reduce" for i in items) else "run one collective"
        note += ("; " if note else "") + f"a shaded box holds each group of devices that {verb} together"
    lines = max(len(p.lines) for p in panels)
    height = 0.8 + gh * cell + 0.5 + 0.19 * (lines + 1) + 0.4  # cells at their size, else the layout resizes them
    return CommunicationPicture(
        mesh,
        centres,
        rows,
        (0.0, gw),
        (gh, 0.0),
        labels,
        tuple(panels),
        headline(obj),
        settings_text(obj),
        note,
        (WIDTH, round(height, 3)),
    )


def plot_communication(report_or_plan: CommunicationReport | CommunicationPlan, *, max_items: int = 3) -> Figure:
    """The collectives of one update on the mesh, measured or predicted: a shaded box per reducing group."""
    pic = communication_geometry(report_or_plan, max_items=max_items)
    fig = new_figure(pic.figsize)
    draw_headline(fig, pic.title, pic.subtitle)
    fig.texts[0].set_gid("title")  # the suptitle
    axes = fig.subplots(1, len(pic.panels), squeeze=False)[0]
    for k, (ax, panel) in enumerate(zip(axes, pic.panels)):
        ax.set_gid(f"panel-{k}")
        _draw_panel(ax, pic, panel, k)
    if pic.note:
        fig.supxlabel(pic.note, fontsize=NOTE_SIZE, color="#555555", style="italic", gid="note")
    return fig


def _draw_panel(ax, pic: CommunicationPicture, panel: DimPanel, k: int) -> None:
    for i, g in enumerate(panel.groups):
        for j, (x, y, w, h) in enumerate(g.boxes):
            ax.add_patch(
                FancyBboxPatch(
                    (x, y),
                    w,
                    h,
                    boxstyle="round,pad=0,rounding_size=0.4",
                    facecolor=panel.color,
                    alpha=0.28,
                    edgecolor="none",
                    zorder=1,
                    gid=f"group-{k}-{i}" + (f"-{j}" if len(g.boxes) > 1 else ""),
                )
            )
    for d, (x, y) in enumerate(pic.centres):
        on = d in panel.devices
        ink = panel.color if on else "#999999"
        circle = Circle((x, y), NODE_RADIUS, facecolor="white", edgecolor=ink, linewidth=1.5, zorder=3)
        ax.add_patch(circle).set_gid(f"device-{d}")
        ax.text(
            x,
            y,
            pic.node_labels[d],
            ha="center",
            va="center",
            fontsize=TICK_SIZE,
            color="black" if on else "#777777",
            zorder=4,
            gid=f"device-label-{d}",
        )
    ax.set_xlim(*pic.xlim)
    ax.set_ylim(*pic.ylim)
    ax.set_aspect("equal")
    ax.set_anchor("S")  # its foot where the layout put it, so the texts under it land where it measured them
    mesh = pic.mesh
    ax.set_xticks([i + 0.5 for i in range(mesh.dim_sizes[-1])], [str(i) for i in range(mesh.dim_sizes[-1])])
    ax.set_yticks([y for y, _ in pic.rows], [s for _, s in pic.rows])
    ax.tick_params(length=0, labelsize=TICK_SIZE, pad=2)
    ax.set_xlabel(f"mesh dim {mesh.dim_names[-1]}", fontsize=TICK_SIZE, labelpad=2)
    for spine in ax.spines.values():
        spine.set_visible(False)
    ax.set_title(
        panel.title,
        fontsize=TITLE_SIZE,
        fontweight="bold",
        color=panel.color,
        loc="left",
        gid=f"panel-title-{k}",
    )
    if panel.lines:  # what the bytes serve, under the axis name
        ax.annotate(
            "\n".join(panel.lines),
            xy=(0.5, 0),
            xycoords=ax.xaxis.label,
            xytext=(0, -8),
            textcoords="offset points",
            ha="center",
            va="top",
            fontsize=TICK_SIZE,
            linespacing=1.4,
            gid=f"serves-{k}",
        )
