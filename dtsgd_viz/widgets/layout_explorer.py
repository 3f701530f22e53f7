"""``LayoutExplorer``: try layouts on a mesh of your choosing and see blocks, copies, bytes.

    from dtsgd_viz.widgets import LayoutExplorer
    LayoutExplorer((1024, 512), mesh={"data": 4, "model": 16})   # a shape, no devices
    LayoutExplorer(model)            # a tf-keras model, a Recording, a DVariable, a plan

The mesh is typed (``batch=2, model=4``), each tensor dim picks a mesh dim or
``unsharded``. Every change goes through ``layout_explorer_state`` (pure: old state + one
change -> new state, holding the layout, its ``shard_geometry``, the memory plan of every
variable with its chosen layout and the gradient all-reduces they imply, or the reason
the choice is impossible), which the tests call directly; the widget only draws the state
(``plot_layout``, ``layout_table``, ``plot_memory`` with the traffic beside the memory).
Nothing needs devices: a layout is a plain ``LayoutSpec``.
"""

from __future__ import annotations

import dataclasses
import html
import io
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ..geometry import ShardGeometry, shard_geometry
from ..recording.communication import CommunicationPlan, communication_plan
from ..recording.memory import MemoryEntry, MemoryPlan, format_bytes, plan_of
from ..specs import UNSHARDED, Dims, LayoutSpec, MeshSpec
from ..views.core.style import DPI
from ..views.mesh.communication import ACTIVATION_NOTE, dims_text
from ..views.mesh.memory import plot_memory

MAX_DEVICES = 256
_DIM = re.compile(r"^\s*([A-Za-z_][\w-]*)\s*[=:]\s*(\d+)\s*$")


def mesh_text(mesh: MeshSpec) -> str:
    return ", ".join(f"{n}={s}" for n, s in zip(mesh.dim_names, mesh.dim_sizes))


def parse_mesh(text: str) -> MeshSpec:
    """``"batch=2, model=4"`` -> a ``MeshSpec``; ValueError saying what is wrong."""
    parts = [p for p in str(text).split(",") if p.strip()]
    pairs = []
    for p in parts:
        m = _DIM.match(p)
        if not m:
            raise ValueError(
                f"Write the mesh as name=size pairs separated by commas, e.g. "
                f"'batch=2, model=4'. Received: {p.strip()!r} in {text!r}."
            )
        pairs.append((m[1], int(m[2])))
    mesh = MeshSpec.create(pairs)  # empty, repeated names, size 0: its own errors
    if mesh.num_devices > MAX_DEVICES:
        raise ValueError(
            f"A mesh of {mesh.num_devices} devices is too many to draw; at most {MAX_DEVICES}. Received: {text!r}."
        )
    return mesh


@dataclasses.dataclass(frozen=True)
class LayoutExplorerState:
    """What the explorer shows. ``variables[i]`` is ``(name, shape, dtype)``, ``choices[i]``
    its sharding specs; ``batch_text`` the mesh dims the batch is split over (empty:
    ``batch`` or ``data``, those of them the mesh has). The rest is derived: ``mesh``,
    ``layout`` and ``geometry`` of the selected variable, the ``plan`` of them all, its
    gradient all-reduces ``traffic`` (a ``CommunicationPlan``) along ``batch_dims``,
    ``error`` (why the choice is impossible: then ``layout``, ``geometry``, ``plan`` and
    ``traffic`` are None), ``note`` and ``batch_note`` (batch dims the mesh lacks)."""

    mesh_text: str
    variables: tuple[tuple[str, tuple[int, ...], str], ...]
    choices: tuple[tuple[str, ...], ...]
    variable: int = 0
    momentum: bool = True
    mesh: MeshSpec | None = None
    layout: LayoutSpec | None = None
    geometry: ShardGeometry | None = None
    plan: MemoryPlan | None = None
    error: str = ""
    note: str = ""
    batch_text: str = ""
    batch_dims: tuple[str, ...] = ()
    traffic: CommunicationPlan | None = None
    batch_note: str = ""

    @property
    def name(self) -> str:
        return self.variables[self.variable][0]

    @property
    def shape(self) -> tuple[int, ...]:
        return self.variables[self.variable][1]

    @property
    def specs(self) -> tuple[str, ...]:
        return self.choices[self.variable]

    @property
    def options(self) -> tuple[str, ...]:
        """What each tensor dim may pick."""
        return (UNSHARDED, *(self.mesh.dim_names if self.mesh else ()))

    @classmethod
    def of(
        cls,
        obj: Any,
        shape: Sequence[int] | None = None,
        *,
        mesh: Dims | None = None,
        dtype: str = "float32",
        momentum: bool = True,
        name: str | None = None,
    ) -> LayoutExplorerState:
        """The starting state: ``obj`` is a shape (then ``mesh=`` a dict, default
        ``batch=2, model=4``, and ``name=`` what to call it, default ``tensor``), a ``LayoutSpec`` + ``shape``, a
        live ``DVariable``, a
        ``Recording``, a tf-keras model or optimizer, a ``MemoryPlan`` or
        ``{name: (shape, dtype, LayoutSpec)}``; its own layouts are the first choices."""
        entries = _entries(obj, shape, mesh, dtype, name)
        start = entries[0].layout.mesh if mesh is None else MeshSpec.create(mesh)
        state = cls(
            mesh_text(start),
            tuple((e.name, e.shape, e.dtype) for e in entries),
            tuple(e.layout.sharding_specs for e in entries),
            0,
            bool(momentum),
        )
        return _derive(state)

    def summary(self) -> str:
        """One line: the blocks, copies and bytes per device, or the error."""
        if self.error:
            return f"impossible: {self.error}"
        assert self.geometry is not None and self.plan is not None  # derived whenever there is no error
        g, e = self.geometry, self.plan.entry(self.name)
        copies = g.num_devices // g.num_unique
        return (
            f"{self.name} {self.shape} as [{', '.join(self.specs)}]: {g.num_unique} "
            f"block{'s' * (g.num_unique > 1)} of {g.local_shape}, {copies} "
            f"cop{'ies' if copies > 1 else 'y'} each; {format_bytes(e.bytes_per_device.max())}"
            f" per device{' with its velocity slot' if self.momentum else ''}"
            + (
                f"; all variables: {format_bytes(self.plan.bytes_per_device.max())} per device"
                if len(self.variables) > 1
                else ""
            )
        )

    def memory_note(self) -> str:
        """The picture's memory line: ``32 KiB/device incl. velocity`` ("" on an error)."""
        if self.error:
            return ""
        assert self.plan is not None  # derived whenever there is no error
        e = self.plan.entry(self.name)
        slot = e.slot_bytes_per_device.max()
        return f"{self.name}: {format_bytes(e.bytes_per_device.max())}/device" + (
            f" incl. velocity ({format_bytes(e.param_bytes_per_device.max())} parameter + "
            f"{format_bytes(slot)} velocity)"
            if slot
            else " (parameter only)"
        )

    def traffic_summary(self) -> str:
        """One line: what each device all-reduces per update for these layouts, and along
        which mesh dims ("" when the choice is impossible)."""
        if self.error:
            return ""
        if not self.batch_dims:
            return (
                "gradient all-reduce: none predicted, the batch is split over no mesh dim "
                "(type the mesh dims it is split over in 'batch over')"
            )
        assert self.traffic is not None  # derived whenever there is no error
        mine = self.traffic.entry(self.name)
        along = (
            "; ".join(f"{format_bytes(b)} per device along {dims_text(d)}" for d, b in self.traffic.totals().items())
            or "nothing"
        )
        return (
            f"gradient all-reduce per update (batch over {', '.join(self.batch_dims)}): "
            f"{self.name}: "
            + (
                f"{format_bytes(mine.bytes_per_device)} per device along {dims_text(mine.mesh_dims)}"
                if mine.mesh_dims
                else "none (the batch dims have size 1)"
            )
            + (
                f", after gathering it over {dims_text(mine.gathered_over)} (its layout uses a batch dim)"
                if mine.gathered_over
                else ""
            )
            + (f"; all variables: {along}" if len(self.variables) > 1 else "")
        )


def batch_dims_of(text: str, mesh: MeshSpec) -> tuple[tuple[str, ...], list[str]]:
    """The mesh dims the batch is split over, from ``"batch, data"`` (empty: ``batch``
    or ``data``, those the mesh has), and the names given that the mesh does not have."""
    names = [n.strip() for n in str(text).split(",") if n.strip()]
    if not names:
        return tuple(d for d in mesh.dim_names if d in ("batch", "data")), []
    return (tuple(d for d in mesh.dim_names if d in names), [n for n in names if n not in mesh.dim_names])


def _entries(obj, shape, mesh, dtype, name=None) -> tuple[MemoryEntry, ...]:
    from ..recording.memory import memory_plan

    if isinstance(obj, MemoryPlan):
        return obj.entries
    if isinstance(obj, (tuple, list)) and obj and all(isinstance(s, int) for s in obj):
        spec = MeshSpec.create(mesh or {"batch": 2, "model": 4})
        layout = LayoutSpec.replicated(spec, len(obj))
        return (MemoryEntry(name or "tensor", tuple(obj), str(dtype), layout),)
    if isinstance(obj, dict):
        return memory_plan(obj, momentum=False).entries
    from ..recording.recording import Recording

    if isinstance(obj, Recording) or hasattr(obj, "trainable_variables") or hasattr(obj, "apply_gradients"):
        return memory_plan(obj, momentum=False).entries
    from ..views.mesh.layout import resolve

    shape, layout, name = resolve(obj, shape, None, max_rank=None)
    return (MemoryEntry(name or "tensor", shape, getattr(getattr(obj, "dtype", None), "name", str(dtype)), layout),)


def _check(specs, shape, mesh: MeshSpec) -> str:
    """Why ``specs`` cannot lay out ``shape`` on ``mesh`` ("" when they can)."""
    for dim, spec in enumerate(specs):
        if spec != UNSHARDED and spec not in mesh.dim_names:
            return (
                f"tensor dim {dim} is on {spec!r}, which is not a dim of the mesh "
                f"({mesh_text(mesh)}). Allowed: {[UNSHARDED, *mesh.dim_names]}."
            )
    for spec in dict.fromkeys(s for s in specs if s != UNSHARDED):
        dims = [d for d, s in enumerate(specs) if s == spec]
        if len(dims) > 1:
            return (
                f"mesh dim {spec!r} is picked by tensor dims {', '.join(map(str, dims))}: a "
                "mesh dim can shard only one tensor dim (its devices hold one block each)."
            )
    for dim, (size, spec) in enumerate(zip(shape, specs)):
        if spec != UNSHARDED and size % mesh.dim_size(spec):
            k = mesh.dim_size(spec)
            return (
                f"tensor dim {dim} has size {size}, which {spec!r} ({k} devices) does not "
                f"divide: DTensor needs equal blocks ({size} = {size // k} x {k} + {size % k})."
            )
    return ""


def _derive(state: LayoutExplorerState) -> LayoutExplorerState:
    """Recompute everything the choices imply (mesh, layout, geometry, plan, traffic,
    error)."""
    blank = dict(mesh=None, layout=None, geometry=None, plan=None, traffic=None, error="")
    try:
        mesh = parse_mesh(state.mesh_text)
    except ValueError as err:
        return dataclasses.replace(state, **{**blank, "error": f"mesh: {err}"})
    error = _check(state.specs, state.shape, mesh)
    if error:
        return dataclasses.replace(state, **{**blank, "mesh": mesh, "error": error})
    for i, ((name, shape, _), specs) in enumerate(zip(state.variables, state.choices)):
        other = _check(specs, shape, mesh) if i != state.variable else ""
        if other:
            return dataclasses.replace(state, **{**blank, "mesh": mesh, "error": f"(another variable) {name}: {other}"})
    layout = LayoutSpec(state.specs, mesh)
    plan = plan_of(
        {
            name: (shape, dtype, LayoutSpec(specs, mesh))
            for (name, shape, dtype), specs in zip(state.variables, state.choices)
        },
        state.momentum,
        "the explorer's choices",
    )
    batch, unknown = batch_dims_of(state.batch_text, mesh)
    batch_note = (
        f"batch over: {', '.join(unknown)} not a dim of the mesh ({mesh_text(mesh)}), left out" if unknown else ""
    )
    return dataclasses.replace(
        state,
        mesh=mesh,
        layout=layout,
        geometry=shard_geometry(state.shape, layout),
        plan=plan,
        batch_dims=batch,
        traffic=communication_plan(plan, batch),
        batch_note=batch_note,
        error="",
    )


FIELDS = ("mesh", "variable", "momentum", "dim", "batch")


def layout_explorer_state(state: LayoutExplorerState, change: Mapping[str, Any]) -> LayoutExplorerState:
    """The state after one change: ``{"name": "mesh", "new": "batch=2, model=4"}``,
    ``{"name": "variable", "new": name}``, ``{"name": "momentum", "new": bool}``,
    ``{"name": "dim", "dim": i, "new": spec}`` (a mesh dim name or ``"unsharded"``) or
    ``{"name": "batch", "new": "batch, data"}`` (the mesh dims the batch is split over).
    An impossible choice is kept and explained in ``.error``; a mesh that loses a dim
    some variable used moves that tensor dim to ``unsharded`` (said in ``.note``)."""
    name, new = change["name"], change["new"]
    if name == "mesh":
        state = dataclasses.replace(state, mesh_text=str(new), note="")
        try:
            dims = parse_mesh(new).dim_names
        except ValueError:
            return _derive(state)
        moved = [
            f"{v[0]} dim {d} ('{s}')"
            for v, specs in zip(state.variables, state.choices)
            for d, s in enumerate(specs)
            if s != UNSHARDED and s not in dims
        ]
        choices = tuple(
            tuple(s if s == UNSHARDED or s in dims else UNSHARDED for s in specs) for specs in state.choices
        )
        note = "now unsharded (the mesh no longer has their mesh dim): " + ", ".join(moved) if moved else ""
        return _derive(dataclasses.replace(state, choices=choices, note=note))
    if name == "variable":
        names = [v[0] for v in state.variables]
        if new not in names:
            raise ValueError(f"Unknown variable {new!r}. Allowed: {names}.")
        return _derive(dataclasses.replace(state, variable=names.index(new), note=""))
    if name == "momentum":
        return _derive(dataclasses.replace(state, momentum=bool(new)))
    if name == "batch":
        return _derive(dataclasses.replace(state, batch_text=str(new), note=""))
    if name == "dim":
        dim, rank = change.get("dim"), len(state.shape)
        if isinstance(dim, bool) or not isinstance(dim, int) or not 0 <= dim < rank:
            raise ValueError(f"dim must be an int in 0..{rank - 1} for {state.name} {state.shape}. Received: {dim!r}.")
        specs = list(state.specs)
        specs[dim] = str(new)
        choices = list(state.choices)
        choices[state.variable] = tuple(specs)
        return _derive(dataclasses.replace(state, choices=tuple(choices), note=""))
    raise ValueError(f"Unknown change {name!r}. Allowed: {list(FIELDS)}.")


# ---- the widget ---------------------------------------------------------------------------


def _png(fig, dpi) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


class LayoutExplorer:
    """A mesh text box (``batch=2, model=4``), a variable picker, one dropdown per tensor
    dim (a mesh dim or ``unsharded``), a velocity-slot checkbox and the mesh dims the batch
    is split over; below, ``plot_layout`` of the choice (or why it is impossible), its
    ``layout_table``, and the memory plan of every variable (table, and bars beside the
    gradient bytes each device all-reduces per update). ``.state`` is the current ``LayoutExplorerState``;
    ``.layout_figure`` and ``.memory_figure`` the figures last drawn, as PNGs at ``dpi``
    (``style.DPI``: the notebook column's scale, as every other figure)."""

    def __init__(
        self,
        obj: Any,
        shape: Sequence[int] | None = None,
        *,
        mesh: Dims | None = None,
        dtype: str = "float32",
        momentum: bool = True,
        name: str | None = None,
        dpi: float = DPI,
    ):
        import ipywidgets as widgets

        self._w = widgets
        self.dpi = dpi
        self.state = LayoutExplorerState.of(obj, shape, mesh=mesh, dtype=dtype, momentum=momentum, name=name)
        s = self.state
        self.mesh = widgets.Text(
            value=s.mesh_text, description="mesh", continuous_update=False, placeholder="batch=2, model=4"
        )
        names = [v[0] for v in s.variables]
        self.variable = widgets.Dropdown(
            options=names,
            value=s.name,
            description="variable",
            layout=widgets.Layout(display="" if len(names) > 1 else "none"),
        )
        self.momentum = widgets.Checkbox(value=s.momentum, description="velocity slot", indent=False)
        self.batch = widgets.Text(
            value=s.batch_text,
            description="batch over",
            continuous_update=False,
            placeholder=", ".join(s.batch_dims) or "batch",
            layout=widgets.Layout(width="220px"),
        )
        self.dims = widgets.HBox([])
        self.message = widgets.HTML()
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.memory_image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.table = widgets.HTML()
        self.memory_table = widgets.HTML()
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.mesh, self.variable, self.momentum, self.batch]),
                self.dims,
                self.message,
                self.image,
                self.table,
                self.memory_image,
                self.memory_table,
            ]
        )
        self.mesh.observe(lambda c: self._on_change({"name": "mesh", "new": c["new"]}), "value")
        self.variable.observe(lambda c: self._on_change({"name": "variable", "new": c["new"]}), "value")
        self.momentum.observe(lambda c: self._on_change({"name": "momentum", "new": c["new"]}), "value")
        self.batch.observe(lambda c: self._on_change({"name": "batch", "new": c["new"]}), "value")
        self.layout_figure = self.memory_figure = None
        self.renders = 0
        self._build_dims()
        self._draw()

    def _build_dims(self):
        """One dropdown per tensor dim of the selected variable, options from the mesh."""
        s, widgets = self.state, self._w
        self._syncing = True
        options = list(dict.fromkeys([*s.options, *s.specs]))
        self.dim_pickers = []
        for d, (size, spec) in enumerate(zip(s.shape, s.specs)):
            picker = widgets.Dropdown(
                options=options,
                value=spec,
                description=f"dim {d} ({size})",
                layout=widgets.Layout(width="220px"),
                style={"description_width": "80px"},
            )
            picker.observe(lambda c, d=d: self._on_change({"name": "dim", "dim": d, "new": c["new"]}), "value")
            self.dim_pickers.append(picker)
        self.dims.children = tuple(self.dim_pickers)
        self._syncing = False

    def _on_change(self, change):
        if getattr(self, "_syncing", False):
            return
        old, self.state = self.state, layout_explorer_state(self.state, change)
        if change["name"] in ("mesh", "variable") and (old.options, old.variable, old.choices) != (
            self.state.options,
            self.state.variable,
            self.state.choices,
        ):
            self._build_dims()
        self._draw()

    def _draw(self):
        from ..views.mesh.layout import layout_table, plot_layout

        s = self.state
        notes = [html.escape(n) for n in (s.note, s.batch_note) if n]
        shown = "none" if s.error else ""
        for part in (self.image, self.table, self.memory_image, self.memory_table):
            part.layout.display = shown  # no stale picture beside the reason
        if s.error:
            self.message.value = (
                "<div style='color:#CC3311;font-weight:bold'>impossible: "
                f"{html.escape(s.error)}</div>" + "<br>".join(notes)
            )
            return
        self.message.value = (
            f"<div>{html.escape(s.summary())}</div>"
            f"<div>{html.escape(s.traffic_summary())}</div>"
            + "".join(
                f"<div style='color:#555'>{n}</div>"
                for n in [*notes, html.escape(ACTIVATION_NOTE[0].upper() + ACTIVATION_NOTE[1:] + ".")]
            )
        )
        assert s.plan is not None and s.traffic is not None  # derived whenever there is no error
        rank = len(s.shape)
        if rank <= 4:
            self.layout_figure = plot_layout(s.layout, s.shape, name=s.name, note=s.memory_note())
            self.image.value = _png(self.layout_figure, self.dpi)
        self.table.value = layout_table(s.layout, s.shape, name=s.name)._repr_html_()
        self.memory_figure = plot_memory(s.plan, communication=s.traffic)
        self.memory_image.value = _png(self.memory_figure, self.dpi)
        self.memory_table.value = s.plan._repr_html_()
        self.renders += 1

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
