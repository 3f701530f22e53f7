"""Which block of a tensor each device holds, as a figure (``plot_layout``) or as text (``layout_table``)."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from ...dtensor.model import is_tensorflow_object, optimizer_parts, slot_of, unique_names, variable_name
from ...geometry import shard_geometry
from ...recording.recording import Recording, VariableRecord
from ...recording.text_table import TextTable
from ...specs import LayoutSpec
from ..core.style import DPI, LABEL_SIZE, NOTE_SIZE, SUBTITLE_COLOR, SUBTITLE_SIZE, SUPTITLE_SIZE, TICK_SIZE
from .layout_geometry import MeshKey, Panel, block_colors, layout_picture, slice_text

MAX_RANK = 4
_ACCEPTS = "a DTensor Layout + shape, a DVariable or DTensor, a dtsgd_viz.LayoutSpec + shape, or a Recording + name="


def _check_shape(shape, layout: LayoutSpec, max_rank: int | None = MAX_RANK) -> tuple[int, ...]:
    try:
        dims = None if isinstance(shape, (str, bytes)) else tuple(shape)
    except TypeError:
        dims = None
    if dims is None or not all(hasattr(s, "__index__") and not isinstance(s, bool) for s in dims):
        raise TypeError(f"shape must be a tuple of ints, e.g. (4, 8). Received: {shape!r}.")
    shape = tuple(int(s) for s in dims)
    if not 1 <= len(shape) <= (max_rank or len(shape)):
        allowed = f"1 to {max_rank}" if max_rank else "1 or more"
        raise ValueError(f"Tensors of rank {allowed} can be shown. Received: shape {shape} of rank {len(shape)}.")
    if any(s < 1 for s in shape):
        raise ValueError(f"Every dim of shape must be >= 1. Received: shape {shape}.")
    return layout.check_shape(shape)


def resolve(
    obj: Any, shape: Sequence[int] | None = None, name: str | None = None, max_rank: int | None = MAX_RANK
) -> tuple[tuple[int, ...], LayoutSpec, str | None]:
    """``(shape, LayoutSpec, name)`` of anything the layout views accept."""
    from ...dtensor.keras3 import check

    check(obj, "The object to draw")
    given_shape = shape
    if isinstance(obj, Recording):
        if name is None:
            raise ValueError(f"Pass name= to pick a variable of the recording. Allowed: {list(obj.variables)}.")
        obj = obj.record(name)
    if isinstance(obj, VariableRecord):
        shape, layout, name = obj.shape, obj.layout, name or obj.name
    elif isinstance(obj, LayoutSpec):
        layout = obj
    elif is_tensorflow_object(obj):
        from ... import dtensor as _dtensor

        if hasattr(obj, "sharding_specs") and hasattr(obj, "mesh"):
            layout = _dtensor.layout_spec(obj)
        elif hasattr(obj, "shape") and hasattr(obj, "dtype"):
            shape, layout = tuple(obj.shape), _dtensor.layout_of(obj)
            name = name or (variable_name(obj) if hasattr(obj, "name") else None)
        else:
            raise TypeError(f"Cannot show the layout of a {type(obj).__name__}. Pass {_ACCEPTS}.")
    else:
        raise TypeError(f"Expected {_ACCEPTS}. Received: {type(obj).__name__}.")
    if isinstance(obj, LayoutSpec) or (shape is None):
        if given_shape is None:
            raise ValueError(
                f"A layout alone has no size: pass shape=, e.g. (8, 16) for a rank-"
                f"{layout.rank} tensor with layout {list(layout.sharding_specs)}."
            )
        shape = given_shape
    elif given_shape is not None and tuple(given_shape) != tuple(shape):
        raise ValueError(
            f"shape={tuple(given_shape)} differs from the {type(obj).__name__}'s own "
            f"shape {tuple(shape)}; leave shape out."
        )
    return _check_shape(shape, layout, max_rank), layout, name


def plot_layout(
    obj: Any, shape: Sequence[int] | None = None, *, name: str | None = None, note: str | None = None
) -> Figure:
    """The global tensor cut into the block each device holds, each labelled with its devices; with copies,
    a key of the devices on the mesh. Ranks 3 and 4: a panel per sharded leading index; ``note`` joins the note.
    ``obj``: a DTensor ``Layout`` + ``shape``, a ``DVariable``, a ``LayoutSpec`` + ``shape`` or a ``Recording``
    + ``name=``."""
    shape, layout, name = resolve(obj, shape, name)
    pic = layout_picture(shape, layout, name=name, note=note)
    fig = Figure(figsize=pic.figsize, dpi=DPI)
    fw, fh = pic.figsize
    heads = [
        (0.12, pic.title, {"fontsize": SUPTITLE_SIZE, "fontweight": "bold"}),
        (0.42, pic.subtitle, {"fontsize": SUBTITLE_SIZE, "color": SUBTITLE_COLOR, "gid": "subtitle"}),
        (0.68, pic.note, {"fontsize": NOTE_SIZE, "style": "italic", "color": "#444444", "gid": "note"}),
    ]
    for y, text, looks in heads[: 2 + bool(pic.note)]:
        fig.text(0.5, 1 - y / fh, text, ha="center", va="top", **looks)
    for panel in pic.panels:
        left, bottom, w, h = panel.box
        _draw_panel(fig.add_axes((left / fw, bottom / fh, w / fw, h / fh)), panel)
    if pic.key is not None:
        _draw_key(fig, pic.key, pic.figsize)
    return fig


def _cells(ax, cells, box_gid: str, label_gid: str, lw: float) -> None:
    for c in cells:
        key = getattr(c, "group", getattr(c, "device", 0))
        x, y, w, h = c.rect
        patch = Rectangle((x, y), w, h, facecolor=c.color, edgecolor="white", linewidth=lw)
        ax.add_patch(patch).set_gid(f"{box_gid}-{key}")
        if c.label:
            ax.text(
                x + w / 2,
                y + h / 2,
                c.label,
                ha="center",
                va="center",
                rotation=getattr(c, "rotation", 0),
                fontsize=c.fontsize,
                color=c.text_color,
                linespacing=1.1,
                gid=f"{label_gid}-{key}",
            )


def _draw_panel(ax, panel: Panel) -> None:
    small = bool(panel.index)
    _cells(ax, panel.blocks, "block", "label", 1.5)
    ax.set_xlim(*panel.xlim)
    ax.set_ylim(*panel.ylim)
    ax.set_xticks(panel.xticks)
    ax.set_yticks(panel.yticks)
    ax.tick_params(labelsize=NOTE_SIZE if small else TICK_SIZE, length=3)
    ax.set_xlabel(panel.xlabel, fontsize=TICK_SIZE if small else LABEL_SIZE)
    ax.set_ylabel(panel.ylabel, fontsize=TICK_SIZE if small else LABEL_SIZE)
    if panel.title:
        ax.set_title(panel.title, fontsize=TICK_SIZE, family="monospace")


def _draw_key(fig, key: MeshKey, figsize) -> None:
    (fw, fh), (left, bottom, w, h) = figsize, key.box
    ax = fig.add_axes((left / fw, bottom / fh, w / fw, h / fh), gid="mesh-key")
    _cells(ax, key.cells, "key", "key-label", 1.0)
    ax.set_xlim(*key.xlim)
    ax.set_ylim(*key.ylim)
    ax.set_xticks([t for t, _ in key.xticks], [s for _, s in key.xticks], fontsize=NOTE_SIZE)
    ax.set_yticks([t for t, _ in key.yticks], [s for _, s in key.yticks], fontsize=NOTE_SIZE)
    ax.tick_params(length=0)
    ax.set_xlabel(key.xlabel, fontsize=NOTE_SIZE)
    ax.set_title(key.title, fontsize=NOTE_SIZE)
    for spine in ax.spines.values():
        spine.set_visible(False)


def _specs(layout: LayoutSpec) -> str:
    return "[" + ", ".join(layout.sharding_specs) + "]"


def layout_table(obj: Any, shape: Sequence[int] | None = None, *, name: str | None = None) -> TextTable:
    """The layout as text: a header line, then a row per unique block; takes what ``plot_layout`` takes."""
    shape, layout, name = resolve(obj, shape, name, max_rank=None)
    geom = shard_geometry(shape, layout)
    names, n = layout.mesh.short_device_names, layout.mesh.num_devices
    copies = n // geom.num_unique
    header = (
        f"{name + ': ' if name else ''}shape {shape}, sharding {_specs(layout)}, "
        f"{layout.mesh}: {geom.num_unique} unique block{'s' * (geom.num_unique > 1)} of "
        f"{geom.local_shape}, {copies} cop{'ies' if copies > 1 else 'y'} each"
    )
    rows, cells = [], {}
    colors = block_colors(geom)
    for g, devices in enumerate(geom.replica_groups):
        rows.append((g, slice_text(geom.blocks[devices[0]]), geom.local_shape, ", ".join(names[d] for d in devices)))
        cells[(g, 3)] = (
            f"<span style='background:{to_hex(colors[g])};display:inline-block;"
            f"width:0.8em;height:0.8em'></span>&nbsp;" + html.escape(", ".join(names[d] for d in devices))
        )
    return TextTable([header], ("block", "slices", "local shape", "devices"), rows, html_cells=cells)


def _memory_line(entries, with_slots) -> str:
    """Bytes per device of the variables (and their slots), from ``memory.MemoryPlan``."""
    from ...recording.memory import MemoryEntry, MemoryPlan, format_bytes

    try:
        plan = MemoryPlan(
            entries[0][3].mesh,
            tuple(
                MemoryEntry(name, shape, dtype, layout, () if slot is None else (slot,))
                for name, shape, dtype, layout, slot in entries
            ),
        )
    except ValueError:
        return "memory per device: the variables are on different devices"
    per = plan.bytes_per_device
    return (
        f"memory per device: {format_bytes(per.max())}"
        + (
            f" (parameters {format_bytes(plan.param_bytes_per_device.max())} + velocity slots "
            f"{format_bytes(plan.slot_bytes_per_device.max())})"
            if with_slots
            else " (parameters; dtsgd_viz.memory_plan adds the velocity slots)"
        )
        + ("" if per.min() == per.max() else f", least {format_bytes(per.min())}")
    )


def model_table(obj: Any, *, memory: bool = False) -> TextTable:
    """Every variable of a tf-keras model, optimizer or Recording with its shape, layout and velocity slot's
    layout (``DIFFERS`` where not its parameter's); ``memory=True`` adds the bytes each device holds."""
    from ...dtensor.keras3 import check

    check(obj, "The object model_table was given")
    if isinstance(obj, Recording):
        entries = [(r.name, r.shape, r.dtype, r.layout, None) for r in obj.records]
        what, opt, footer = f"recording ({len(obj)} steps, kinds {list(obj.kinds)})", None, []
    else:
        if not is_tensorflow_object(obj) and not isinstance(obj, (list, tuple)):
            raise TypeError(
                f"model_table takes a tf-keras model, an optimizer, a list of "
                f"variables or a Recording. Received: {type(obj).__name__}."
            )
        from ... import dtensor as _dtensor

        variables, opt, what, footer = optimizer_parts(obj)
        entries = []
        for vname, var in zip(unique_names(variables), variables):
            slot = slot_of(opt, var)
            entries.append(
                (
                    vname,
                    tuple(var.shape),
                    var.dtype.name,
                    _dtensor.layout_of(var),
                    None if slot is None else _dtensor.layout_of(slot),
                )
            )
    if not entries:
        raise ValueError(f"The {what} has no variables to list.")
    mesh = entries[0][3].mesh
    params = sum(math.prod(e[1]) for e in entries)

    def on(layout):
        return _specs(layout) + ("" if layout.mesh == mesh else f" on {layout.mesh}")

    with_slots = opt is not None
    columns = ["variable", "shape", "dtype", "layout", "block shape"]
    if with_slots:
        columns += ["velocity slot", "flag"]
    rows, differs, missing = [], 0, 0
    for vname, shape, dtype, layout, slot in entries:
        row = [vname, shape, dtype, on(layout), layout.shard_shape(shape)]
        if with_slots:
            differs += slot is not None and slot != layout
            missing += slot is None
            row += ["(none)" if slot is None else on(slot), "DIFFERS" if slot is not None and slot != layout else ""]
        rows.append(row)
    header = [f"{what}: {len(entries)} variable{'s' * (len(entries) > 1)}, {params} values, on {mesh}"]
    if with_slots:
        have = len(entries) - missing
        footer.append(
            f"velocity slots: {differs} of {have} laid out differently from their parameter (flag DIFFERS)"
            if differs
            else f"velocity slots: all {have} share their parameter's layout"
        )
        if missing:
            footer.append(f"{missing} variable(s) have no velocity slot (optimizer not built for them)")
    if memory:
        footer.append(_memory_line(entries, with_slots))
    return TextTable(header, columns, rows, footer)
