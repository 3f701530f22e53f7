"""What an update moves between devices, read the same way from a prediction and a
measurement, and said in a few words (pure: no TensorFlow, no drawing).

``traffic_items`` reads a ``CommunicationPlan`` (predicted gradient all-reduces) or a
``CommunicationReport`` (measured collectives) as one list of ``Item`` s, each with the
device groups it joins (``mesh_groups``); ``headline`` and ``serves_lines`` say how much
moves along which mesh dims and what for::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> plan = communication_plan({"w": ((8, 16), "float32", LayoutSpec(("unsharded", "model"), mesh))})
    >>> mesh_groups(mesh, ("batch",))
    ((0, 4), (1, 5), (2, 6), (3, 7))
    >>> [(i.mesh_dims, i.bytes_per_device, i.label) for i in traffic_items(plan)]
    [(('batch',), 128, 'w')]
    >>> headline(plan)
    'Each update all-reduces 128 B of gradient per device along batch'
    >>> settings_text(CommunicationReport(mesh, (), function="step")).replace("\u00a0", " ")
    'measured on the compiled step on Mesh(batch=2, model=4; 8 devices): no collectives'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import numpy as np

from ...recording.communication import CommunicationPlan, CommunicationReport
from ...recording.memory import format_bytes
from ...specs import MeshSpec

# Okabe-Ito, one per mesh dim in mesh order, without the blue and vermilion that mean
# momentum and Nesterov in every other view; sets of two or more dims take COMBO_COLORS
DIM_COLORS = ("#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
COMBO_COLORS = ("#882255", "#117733", "#332288", "#999933")
ACTIVATION_NOTE = (
    "activation traffic (e.g. the all-reduce of a layer's output when its "
    "kernel is sharded over model) is not predictable from layouts alone: "
    "measure it with dtsgd_viz.communication(step)"
)


@dataclasses.dataclass(frozen=True)
class Item:
    """One collective (measured) or gradient all-reduce (predicted), as the views count
    it: each device of each of ``groups`` contributes ``bytes_per_device``."""

    kind: str
    mesh_dims: tuple[str, ...]
    bytes_per_device: int
    serves: str
    label: str  # the variable of a gradient, else what the collective is for
    groups: tuple[tuple[int, ...], ...]
    time_us: float | None = None


def mesh_groups(mesh: MeshSpec, dims: Iterable[str]) -> tuple[tuple[int, ...], ...]:
    """The device groups (mesh device order) whose members differ only along ``dims``:
    one per position on the other dims, ordered by their first device."""
    axes = [mesh.dim_names.index(d) for d in dims]
    groups: dict[tuple, list[int]] = {}
    for d in range(mesh.num_devices):
        key = tuple(x for i, x in enumerate(mesh.device_coords(d)) if i not in axes)
        groups.setdefault(key, []).append(d)
    return tuple(sorted(tuple(g) for g in groups.values()))


def _check(obj):
    if not isinstance(obj, (CommunicationPlan, CommunicationReport)):
        raise TypeError(
            "Expected a CommunicationPlan (dtsgd_viz.communication_plan or "
            "communication_plan(memory_plan)) or a CommunicationReport "
            f"(dtsgd_viz.communication(step)). Received: {type(obj).__name__}."
        )


def traffic_items(obj: CommunicationPlan | CommunicationReport) -> tuple[Item, ...]:
    """The traffic of a plan or report along at least one mesh dim (a collective along
    none moves nothing between devices), in plan or program order."""
    _check(obj)
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
    """Bytes each device (mesh device order) contributes to ``item``: its own bytes on
    the devices of its groups, 0 elsewhere."""
    out = np.zeros(mesh.num_devices, np.int64)
    for g in item.groups:
        out[list(g)] = item.bytes_per_device
    return out


def dim_sets(mesh: MeshSpec, items: Iterable[Item]) -> tuple[tuple[str, ...], ...]:
    """The sets of mesh dims the items run along: single dims in mesh order, then sets
    of two or more (by the mesh order of their dims)."""
    found = {i.mesh_dims for i in items}
    return tuple(sorted(found, key=lambda dims: (len(dims) > 1, [mesh.dim_names.index(d) for d in dims])))


def totals(mesh: MeshSpec, items: Sequence[Item]) -> dict[tuple[str, ...], int]:
    """Bytes per device per update by set of mesh dims (in ``dim_sets`` order)."""
    return {dims: sum(i.bytes_per_device for i in items if i.mesh_dims == dims) for dims in dim_sets(mesh, items)}


def dim_color(mesh: MeshSpec, dims: Iterable[str]) -> str:
    """One colour per mesh dim; a set of dims its own (by its mesh-order bitmask)."""
    index = [mesh.dim_names.index(d) for d in dims]
    if len(index) <= 1:
        return DIM_COLORS[index[0] % len(DIM_COLORS)] if index else "#888888"
    return COMBO_COLORS[sum(1 << i for i in index) % len(COMBO_COLORS)]


def dims_text(dims: Sequence[str]) -> str:
    return " × ".join(dims) if dims else "no mesh dim"


# ---- in words ---------------------------------------------------------------------------


def headline(obj: CommunicationPlan | CommunicationReport) -> str:
    """The finding: ``Each update all-reduces 3.6 KiB per device along batch, 2 KiB along
    model`` (``of gradient`` for a plan, ``moves`` when not every collective is an
    all-reduce)."""
    items = traffic_items(obj)
    plan = isinstance(obj, CommunicationPlan)
    if not items:
        if plan:
            return "Each update all-reduces no gradient: the batch is not split over devices"
        return "Each update moves nothing between devices"
    verb = "all-reduces" if all(i.kind == "all-reduce" for i in items) else "moves"
    parts = [
        f"{format_bytes(b)}"
        + (" of gradient" if plan and k == 0 else "")
        + (" per device" if k == 0 else "")
        + f" along {dims_text(d)}"
        for k, (d, b) in enumerate(totals(obj.mesh, items).items())
    ]
    return f"Each update {verb} " + ", ".join(parts)


def settings_text(obj: CommunicationPlan | CommunicationReport) -> str:
    """The subtitle: what was measured or predicted, on which mesh (never broken inside
    the mesh: its spaces are no-break spaces), and how many collectives of each kind."""
    _check(obj)
    mesh = _nb(str(obj.mesh))
    if isinstance(obj, CommunicationPlan):
        src = f" of {obj.source}" if obj.source else ""
        n = len(obj.entries)
        return (
            f"predicted from the layouts{src}: {n} variable{'s' * (n != 1)} on {mesh}, "
            f"batch split over {', '.join(obj.batch_dims) or 'no mesh dim'}"
        )
    kinds = {}
    for c in obj.collectives:
        kinds[c.kind] = kinds.get(c.kind, 0) + 1
    counted = ", ".join(_nb(f"{n} {k}{'s' * (n != 1)}") for k, n in kinds.items())
    return f"measured on the compiled {obj.function or 'step'} on {mesh}: {counted or 'no collectives'}"


def _nb(text: str) -> str:
    """``text`` with no-break spaces: a line wraps between items, never inside one."""
    return text.replace(" ", "\u00a0")


def serves_lines(items: Iterable[Item], max_items: int = 3) -> tuple[str, ...]:
    """What the items are for, biggest first: one line per purpose (bytes per device;
    how many collectives of which kind unless all are all-reduces) and, for several
    gradients, one indented line for each of the ``max_items`` largest, then ``+N more``.
    Spaces inside a figure or a count are no-break spaces (U+00A0)."""
    by: dict[str, list[Item]] = {}
    for i in items:
        by.setdefault(i.serves, []).append(i)
    lines = []
    for serves, group in sorted(by.items(), key=lambda kv: -sum(i.bytes_per_device for i in kv[1])):
        total = _nb(format_bytes(sum(i.bytes_per_device for i in group)))
        kinds = sorted({i.kind for i in group})
        how = ", ".join(_nb(f"{sum(i.kind == k for i in group)} {k}") for k in kinds)
        if serves != "gradient":
            lines.append(f"{serves}: {total} ({how})")
            continue
        head = (
            f"gradient of {group[0].label}: {total}"
            if len(group) == 1
            else f"gradients of {len(group)} variables: {total}"
        )
        lines.append(head + ("" if kinds == ["all-reduce"] else f" ({how})"))
        if len(group) > 1:
            top = sorted(group, key=lambda i: -i.bytes_per_device)
            shown = top[: max_items + (len(top) == max_items + 1)]  # "+1 more": name it
            lines += [f"  {i.label}: {_nb(format_bytes(i.bytes_per_device))}" for i in shown]
            rest = top[len(shown) :]
            if rest:
                lines.append(f"  +{len(rest)} more: {_nb(format_bytes(sum(i.bytes_per_device for i in rest)))}")
    return tuple(lines)
