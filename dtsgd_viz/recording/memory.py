"""Memory per device: what a layout costs each device, parameters plus optimizer slots.

Plain data (no TensorFlow, no matplotlib): a plan is computed from shapes, dtypes and
``LayoutSpec`` s, so a layout can be priced for a mesh you do not have::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan
    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> plan = memory_plan({"w": ((8, 8), "float32", LayoutSpec(("batch", "model"), mesh)),
    ...                     "b": ((8,), "float32", LayoutSpec(("unsharded",), mesh))})
    >>> plan.bytes_per_device.tolist()   # w: a 4x2 block, b: whole; each twice (velocity)
    [128, 128, 128, 128, 128, 128, 128, 128]
    >>> print(plan)                                          # doctest: +NORMALIZE_WHITESPACE
    memory plan: 2 variables on Mesh(batch=2, model=4; 8 devices), each with a velocity slot laid out like it
    variable  shape   dtype    layout          block   copies  block bytes  with slot  per device
    w         (8, 8)  float32  [batch, model]  (4, 2)  1       32 B         x2         64 B
    b         (8,)    float32  [unsharded]     (8,)    8       32 B         x2         64 B
    per device: 128 B (parameters 64 B + slots 64 B) on each of the 8 devices
    the whole mesh holds 1 KiB for 576 B of distinct values (1.78x: copies); fully replicated, each device would hold 576 B

``memory_plan`` also takes a tf-keras model (its optimizer's real slot layouts when built),
an optimizer (its slots; parameters share their layouts) or a ``Recording``; live objects
are read through ``dtsgd_viz.layout_of``. ``dtsgd_viz.plot_memory(plan)`` draws the bars
(``dtsgd_viz.views.mesh.memory``).
"""  # noqa: E501  (a doctest's expected output line)

from __future__ import annotations

import dataclasses
import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..geometry import shard_geometry
from ..specs import LayoutSpec, MeshSpec
from .text_table import TextTable

_ACCEPTS = "a tf-keras model, an optimizer, a Recording, a MemoryPlan, or {name: (shape, dtype, LayoutSpec)}"


def itemsize(dtype: Any) -> int:
    """Bytes per element of a numpy/TensorFlow dtype or its name (``bfloat16``: 2)."""
    name = getattr(dtype, "name", dtype)
    if name == "bfloat16":
        return 2
    if name in ("float", "int", "uint", "complex", float, int, complex):
        raise TypeError(
            f"dtype {name!r} is ambiguous (numpy reads 'float' as float64, "
            "TensorFlow as float32): pass a sized name such as 'float32', "
            "'float64', 'bfloat16' or 'int32'."
        )
    try:
        return int(np.dtype(name).itemsize)
    except TypeError as err:
        raise TypeError(f"Unknown dtype {dtype!r}: pass a numpy dtype or its name, e.g. 'float32'.") from err


def dtype_name(dtype: Any) -> str:
    """``'float32'`` for ``np.float32``, ``np.dtype('float32')``, ``tf.float32`` or the name."""
    name = getattr(dtype, "name", None)
    if isinstance(name, str):
        return name
    return "bfloat16" if dtype == "bfloat16" else np.dtype(dtype).name


def format_bytes(n: float) -> str:
    """``512 B``, ``1.5 KiB``, ``3 MiB`` (binary units, 3 significant digits)."""
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{int(n)} B" if unit == "B" else f"{n:.3g} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _device_bytes(shape, layout: LayoutSpec, size: int) -> np.ndarray:
    """Bytes of the block each device holds, in mesh device order."""
    geom = shard_geometry(shape, layout)
    return np.array([math.prod(s.stop - s.start for s in block) * size for block in geom.blocks], dtype=np.int64)


@dataclasses.dataclass(frozen=True)
class MemoryEntry:
    """One parameter and its optimizer slots (``slot_layouts``: one per slot)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    layout: LayoutSpec
    slot_layouts: tuple[LayoutSpec, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", self.layout.check_shape(self.shape))
        object.__setattr__(self, "slot_layouts", tuple(self.slot_layouts))
        for slot in self.slot_layouts:
            slot.check_shape(self.shape)

    @property
    def itemsize(self) -> int:
        return itemsize(self.dtype)

    @property
    def nbytes(self) -> int:
        """Bytes of the whole tensor, once."""
        return math.prod(self.shape) * self.itemsize

    @property
    def block_shape(self) -> tuple[int, ...]:
        return self.layout.shard_shape(self.shape)

    @property
    def block_bytes(self) -> int:
        return math.prod(self.block_shape) * self.itemsize

    @property
    def copies(self) -> int:
        """Devices holding each block: the product of the mesh dims the layout leaves unused."""
        return self.layout.mesh.num_devices // shard_geometry(self.shape, self.layout).num_unique

    @property
    def param_bytes_per_device(self) -> np.ndarray:
        return _device_bytes(self.shape, self.layout, self.itemsize)

    @property
    def slot_bytes_per_device(self) -> np.ndarray:
        out = np.zeros(self.layout.mesh.num_devices, np.int64)
        for slot in self.slot_layouts:
            out += _device_bytes(self.shape, slot, self.itemsize)
        return out

    @property
    def bytes_per_device(self) -> np.ndarray:
        return self.param_bytes_per_device + self.slot_bytes_per_device


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """What each device holds: ``bytes_per_device`` (mesh device order) is parameters
    (``param_bytes_per_device``) plus optimizer slots (``slot_bytes_per_device``).
    ``str(plan)`` is a table (HTML in Jupyter); ``dtsgd_viz.plot_memory(plan)`` a bar chart."""

    mesh: MeshSpec
    entries: tuple[MemoryEntry, ...]
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "entries", tuple(self.entries))
        for e in self.entries:
            for lay in (e.layout, *e.slot_layouts):
                if lay.mesh.device_names != self.mesh.device_names:
                    raise ValueError(
                        f"Every variable of a memory plan must be on the same devices. Received: "
                        f"{e.name!r} on {lay.mesh}, others on {self.mesh}."
                    )

    def _sum(self, attr) -> np.ndarray:
        out = np.zeros(self.mesh.num_devices, np.int64)
        for e in self.entries:
            out += getattr(e, attr)
        return out

    @property
    def param_bytes_per_device(self) -> np.ndarray:
        return self._sum("param_bytes_per_device")

    @property
    def slot_bytes_per_device(self) -> np.ndarray:
        return self._sum("slot_bytes_per_device")

    @property
    def bytes_per_device(self) -> np.ndarray:
        """Bytes on each device, in mesh device order: parameters plus slots."""
        return self._sum("bytes_per_device")

    @property
    def unique_bytes(self) -> int:
        """Bytes of every parameter and slot once (the values the mesh must hold)."""
        return sum(e.nbytes * (1 + len(e.slot_layouts)) for e in self.entries)

    @property
    def total_bytes(self) -> int:
        """Bytes over all devices, copies included."""
        return int(self.bytes_per_device.sum())

    @property
    def slots(self) -> bool:
        return any(e.slot_layouts for e in self.entries)

    def entry(self, name: str) -> MemoryEntry:
        for e in self.entries:
            if e.name == name:
                return e
        raise ValueError(f"Unknown variable {name!r}. This plan has: {[e.name for e in self.entries]}.")

    # ---- text ---------------------------------------------------------------------

    def _parts(self):
        n = self.mesh.num_devices
        slot_note = (
            ", each with a velocity slot laid out like it"
            if self.slots and all(e.slot_layouts == (e.layout,) for e in self.entries)
            else ", with optimizer slots"
            if self.slots
            else ", no optimizer slots"
        )
        header = [
            f"memory plan{' of ' + self.source if self.source else ''}: "
            f"{len(self.entries)} variable{'s' * (len(self.entries) != 1)} on "
            f"{self.mesh}{slot_note}"
        ]
        columns = ["variable", "shape", "dtype", "layout", "block", "copies", "block bytes", "with slot", "per device"]
        rows = []
        for e in self.entries:
            per = e.bytes_per_device
            rows.append(
                [
                    e.name,
                    str(e.shape),
                    str(e.dtype),
                    "[" + ", ".join(e.layout.sharding_specs) + "]",
                    str(e.block_shape),
                    str(e.copies),
                    format_bytes(e.block_bytes),
                    f"x{1 + len(e.slot_layouts)}"
                    + ("" if all(s == e.layout for s in e.slot_layouts) else " (slot differs)"),
                    format_bytes(per.max()) + ("" if per.min() == per.max() else f" (min {format_bytes(per.min())})"),
                ]
            )
        per = self.bytes_per_device
        spread = (
            f"on each of the {n} devices"
            if per.min() == per.max()
            else f"from {format_bytes(per.min())} to {format_bytes(per.max())} (device {int(per.argmax())} holds most)"
        )
        ratio = self.total_bytes / self.unique_bytes if self.unique_bytes else 1.0
        footer = [
            f"per device: {format_bytes(per.max())} (parameters "
            f"{format_bytes(self.param_bytes_per_device.max())} + slots "
            f"{format_bytes(self.slot_bytes_per_device.max())}) {spread}",
            f"the whole mesh holds {format_bytes(self.total_bytes)} for "
            f"{format_bytes(self.unique_bytes)} of distinct values ({ratio:.3g}x: copies); "
            f"fully replicated, each device would hold {format_bytes(self.unique_bytes)}",
        ]
        return header, columns, rows, footer

    def __str__(self) -> str:
        return str(TextTable(*self._parts()))

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))

    def _repr_html_(self) -> str:
        return TextTable(*self._parts())._repr_html_()


def plan_of(variables: Mapping, momentum: bool = True, source: str = "") -> MemoryPlan:
    """A plan from ``{name: (shape, dtype, LayoutSpec)}``; with ``momentum``, each
    parameter has one velocity slot laid out like it (tf-keras' DTensor SGD)."""
    entries = []
    for name, value in variables.items():
        if (
            isinstance(value, (tuple, list)) and len(value) == 3 and type(value[2]).__name__ == "Layout"
        ):  # a live dtensor.Layout
            from ..dtensor import layout_spec

            value = (value[0], value[1], layout_spec(value[2]))
        if not (isinstance(value, (tuple, list)) and len(value) == 3 and isinstance(value[2], LayoutSpec)):
            got = (
                f"a {type(value).__name__} of {len(value)}: (" + ", ".join(type(v).__name__ for v in value) + ")"
                if isinstance(value, (tuple, list))
                else f"a {type(value).__name__}"
            )
            raise TypeError(f"Each variable must be (shape, dtype, LayoutSpec). Received for {name!r}: {got}.")
        shape, dtype, layout = value
        try:
            shape = tuple(int(d) for d in shape)
        except (TypeError, ValueError):
            shape = None
        if shape is None or any(d < 1 for d in shape):
            raise ValueError(f"The shape of {name!r} must be a tuple of ints >= 1. Received: {value[0]!r}.")
        if len(shape) != len(layout.sharding_specs):
            raise ValueError(
                f"{name!r} has shape {shape} ({len(shape)} dims) but its layout names "
                f"{len(layout.sharding_specs)} dims: {list(layout.sharding_specs)}."
            )
        itemsize(dtype)
        entries.append(MemoryEntry(str(name), tuple(shape), dtype_name(dtype), layout, (layout,) if momentum else ()))
    if not entries:
        raise ValueError("A memory plan needs at least one variable. Received: none.")
    return MemoryPlan(entries[0].layout.mesh, tuple(entries), source)


def _live_entries(obj, momentum: bool):
    """(entries, source) of a tf-keras model or optimizer, read through ``layout_of``."""
    from .. import dtensor as _dtensor
    from ..dtensor.model import optimizer_parts, slot_of, unique_names

    variables, opt, what, _ = optimizer_parts(obj)
    slots_only = opt is None and hasattr(obj, "apply_gradients")
    entries = []
    for name, var in zip(unique_names(variables), variables):
        layout = _dtensor.layout_of(var)
        slot = None if slots_only else slot_of(opt, var)
        slot_layout = layout if slots_only or slot is None else _dtensor.layout_of(slot)
        entries.append(MemoryEntry(name, tuple(var.shape), var.dtype.name, layout, (slot_layout,) if momentum else ()))
    return entries, what


def memory_plan(obj: Any, momentum: bool = True) -> MemoryPlan:
    """Bytes per device of ``obj``'s parameters and optimizer slots, in mesh device order.

    ``obj``: ``{name: (shape, dtype, LayoutSpec)}`` (no devices needed), a ``Recording``,
    a ``MemoryPlan`` (itself; its slots dropped with ``momentum=False``), a tf-keras model
    (with its compiled optimizer's slot layouts once built), or an optimizer (its slots:
    a tf-keras optimizer keeps no reference to its parameters, which have the slots'
    shapes and layouts). ``momentum=True`` counts one velocity slot per parameter
    (momentum SGD); ``False``, parameters only (plain SGD has no slots).

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan
    >>> spec = LayoutSpec(("batch", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> memory_plan({"w": ((8, 16), "float32", spec)}).bytes_per_device[0]   # 2 x 4*4*4 B
    128
    """
    from .recording import Recording

    if isinstance(obj, MemoryPlan):
        return (
            obj
            if momentum or not obj.slots
            else dataclasses.replace(obj, entries=tuple(dataclasses.replace(e, slot_layouts=()) for e in obj.entries))
        )
    if isinstance(obj, Mapping):
        return plan_of(obj, momentum)
    if isinstance(obj, Recording):
        return plan_of(
            {r.name: (r.shape, r.dtype, r.layout) for r in obj.records}, momentum, f"a recording ({len(obj)} steps)"
        )
    if "tensorflow" in sys.modules and any(
        (getattr(c, "__module__", "") or "").startswith(("tensorflow", "tf_keras", "keras")) for c in type(obj).__mro__
    ):
        entries, what = _live_entries(obj, momentum)
        if not entries:
            raise ValueError(f"The {what} has no variables.")
        return MemoryPlan(entries[0].layout.mesh, tuple(entries), what)
    raise TypeError(f"memory_plan takes {_ACCEPTS}. Received: {type(obj).__name__}.")
