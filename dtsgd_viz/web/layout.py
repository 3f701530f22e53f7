"""``LayoutExplorer`` drawn by the browser: one dropdown per tensor dim (a mesh dim or
``unsharded``), the tensor cut into the blocks the devices hold, coloured by block, the
mesh drawn as its grid of devices, and hover: a block names its devices, slice, replica
group and bytes; a device lights the block it holds. Live with or without a kernel.

    dtsgd_viz.web.LayoutExplorer((1024, 512), mesh={"data": 4, "model": 16}, name="W")

A saved page runs no Python, so ``layout_state`` computes every layout the dropdowns can
pick, once: each assignment of a mesh dim or ``unsharded`` to each tensor dim. The
possible ones carry their blocks (``views.mesh.layout_geometry.layout_picture``: rects,
colours, labels, slices), bytes and the texts of ``widgets.layout_explorer``'s state
machine (summary, memory note, gradient traffic); the impossible ones (a mesh dim used
twice, a size it does not divide) carry that state machine's reason. The ES module
``js/layout.js`` only maps those numbers to pixels and switches between them.
"""

from __future__ import annotations

import io
import itertools
import math
from collections.abc import Sequence
from typing import Any

import traitlets
from matplotlib import colors as mcolors

from ..recording.memory import format_bytes, itemsize
from ..specs import UNSHARDED, Dims, LayoutSpec, MeshSpec
from ..views.core import style
from ..views.mesh.communication import ACTIVATION_NOTE
from ..views.mesh.layout_geometry import LayoutPicture, bare_ids, copies_text, ids_text, layout_picture, slice_text
from ..widgets.layout_explorer import (
    MAX_DEVICES,
    LayoutExplorerState,
    layout_explorer_state,
    mesh_text,
)
from . import encode
from .widget import BrowserWidget

__all__ = ["layout_state", "layout_key", "LayoutExplorer", "MAX_RANK", "MAX_LAYOUTS"]

MAX_RANK = 2  # the browser draws the tensor as one 2-D panel (ranks 3-4: plot_layout facets them)
MAX_LAYOUTS = 400  # every pickable layout is in the state; more would make it too large
DEFAULT_MESH = {"batch": 2, "model": 4}  # the kernel-drawn explorer's default
# the kernel-drawn explorer's hint about its 'batch over' box, which this one has not
_BATCH_BOX_HINT = " (type the mesh dims it is split over in 'batch over')"


def layout_key(specs: Sequence[str]) -> str:
    """The name of a layout in the state and in the ``specs`` trait.

    >>> layout_key(("unsharded", "model"))
    'unsharded, model'
    """
    return ", ".join(specs)


def _check_shape(shape: Any) -> tuple[int, ...]:
    try:
        dims = None if isinstance(shape, (str, bytes)) else tuple(shape)
    except TypeError:
        dims = None
    if dims is None or not dims or not all(hasattr(s, "__index__") and not isinstance(s, bool) for s in dims):
        raise ValueError(f"shape must be a tuple of 1 or {MAX_RANK} ints, e.g. (1024, 512). Received: {shape!r}.")
    out = tuple(int(s) for s in dims)
    if len(out) > MAX_RANK:
        raise ValueError(
            f"The browser's LayoutExplorer draws tensors of rank 1 or {MAX_RANK}. Received: shape {out} of rank "
            f"{len(out)}; use dtsgd_viz.widgets.LayoutExplorer or dtsgd_viz.plot_layout for ranks 3 and 4."
        )
    if any(s < 1 for s in out):
        raise ValueError(f"Every dim of shape must be >= 1. Received: shape {out}.")
    return out


def _check_mesh(mesh: Dims | MeshSpec) -> MeshSpec:
    if isinstance(mesh, MeshSpec):
        spec = mesh
    else:
        try:
            spec = MeshSpec.create(mesh)
        except (TypeError, ValueError) as err:
            raise ValueError(f"mesh must be a dict {{name: size}}, e.g. {{'data': 4, 'model': 16}}. {err}") from None
    if spec.num_devices > MAX_DEVICES:
        raise ValueError(
            f"A mesh of {spec.num_devices} devices is too many to draw; at most {MAX_DEVICES}. "
            f"Received: {mesh_text(spec)}."
        )
    return spec


def _check_specs(specs: Any, rank: int, options: Sequence[str]) -> tuple[str, ...]:
    """``specs`` (a sequence of names or ``"unsharded, model"``) as a tuple, one pickable
    option per tensor dim (a mesh dim twice is pickable: the state explains why it is
    impossible)."""
    if specs is None:
        return (UNSHARDED,) * rank
    parts = specs.strip().strip("[]").split(",") if isinstance(specs, str) else specs
    try:
        out = tuple(str(s).strip().strip("'\"") for s in parts)
    except TypeError:
        out = None
    if out is None or len(out) != rank or any(s not in options for s in out):
        raise ValueError(
            f"specs must name, for each of the tensor's {rank} dim(s), one of {list(options)}, "
            f"e.g. {layout_key((UNSHARDED,) * (rank - 1) + (options[-1],))!r}. Received: {specs!r}."
        )
    return out


def _hex(color: Any) -> str:
    return mcolors.to_hex(color)


def _layout_entry(state: LayoutExplorerState, shape: tuple[int, ...], name: str, size: int) -> dict[str, Any]:
    """One pickable layout: its error, or its blocks (rects in element units, x along the
    last tensor dim, y along the one before, growing down), each device's block, the
    colours, labels and slices, the bytes and the texts."""
    entry: dict[str, Any] = {"specs": list(state.specs), "error": state.error}
    if state.error:
        return entry
    assert state.layout is not None and state.geometry is not None and state.plan is not None
    pic: LayoutPicture = layout_picture(shape, state.layout, name=name)
    panel = pic.panels[0]
    blocks = sorted(panel.blocks, key=lambda b: b.group)
    geom = pic.geometry
    assert [b.group for b in blocks] == list(range(geom.num_unique))  # one panel holds every block (rank <= 2)
    nbytes = [math.prod(s.stop - s.start for s in b.slices) * size for b in blocks]
    plan_entry = state.plan.entry(state.name)
    entry.update(
        title=pic.title,
        roles=copies_text(state.layout),
        summary=state.summary(),
        memory=state.memory_note(),
        traffic=state.traffic_summary().replace(_BATCH_BOX_HINT, ""),
        rects=encode.array([b.rect for b in blocks], "<i4"),
        group_of=encode.array(geom.group_of, "<i4"),
        colors=[_hex(b.color) for b in blocks],
        text_colors=[_hex(b.text_color) for b in blocks],
        labels=[b.label for b in blocks],
        # blocks named by bare device ids (0,16) say so, as the figure's note does
        ids_note=ids_text(state.layout.mesh.device_names) if bare_ids(b.label for b in blocks) else None,
        label_sizes=[round(float(b.fontsize), 2) for b in blocks],
        label_rotations=[int(b.rotation) for b in blocks],
        slices=[slice_text(b.slices) for b in blocks],
        bytes=encode.array(nbytes),
        bytes_text=format_bytes(max(nbytes)),
        device_bytes_text=format_bytes(float(plan_entry.bytes_per_device.max())),
        local_shape=list(geom.local_shape),
        copies=geom.num_devices // geom.num_unique,
        xticks=list(panel.xticks),
        yticks=list(panel.yticks),
        xlabel=panel.xlabel.replace("\n", " — "),
        ylabel=panel.ylabel.replace("\n", " — "),
    )
    return entry


def _mesh_grid(mesh: MeshSpec, shape: tuple[int, ...]) -> dict[str, Any]:
    """The devices as the layout figure's mesh key places them (columns: the last mesh
    dim; rows: the one before; row groups with a gap: the dims before that), taken from
    the fully replicated layout's key, which every layout's key shares."""
    pic = layout_picture(shape, LayoutSpec.replicated(mesh, len(shape)))
    if pic.key is None:  # one device: no copies, no key
        cells, labels, yticks, xticks, box = [(0.0, 0.0)], [mesh.short_device_names[0]], [], [(0.5, "0")], (1, 1)
    else:
        key = sorted(pic.key.cells, key=lambda c: c.device)
        cells = [c.rect[:2] for c in key]
        labels = [c.label for c in key]
        yticks, xticks = list(pic.key.yticks), list(pic.key.xticks)
        box = (pic.key.xlim[1], pic.key.ylim[0])
    names = mesh.short_device_names
    return {
        "cells": encode.array(cells),
        "cell_labels": labels,
        "size": [float(box[0]), float(box[1])],
        "xticks": [[float(t), s] for t, s in xticks],
        "yticks": [[float(t), s] for t, s in yticks],
        "xlabel": f"mesh dim {mesh.dim_names[-1]}",
        "devices": list(names),
        "coords": [
            ", ".join(f"{m}={i}" for m, i in zip(mesh.dim_names, mesh.device_coords(d)))
            for d in range(mesh.num_devices)
        ],
    }


def layout_state(
    shape: Sequence[int],
    mesh: Dims | MeshSpec,
    *,
    name: str = "W",
    dtype: str = "float32",
    specs: Sequence[str] | str | None = None,
    momentum: bool = True,
) -> dict[str, Any]:
    """Everything the browser's ``LayoutExplorer`` draws, as plain data (arrays as
    ``encode.array``): the tensor and mesh, the dropdowns' options, the devices as the
    mesh grid places them, and every layout the dropdowns can pick (``layouts``, by
    ``layout_key``, in ``order``), possible or not (``error``: why, as
    ``layout_explorer_state`` says). ``specs``: the layout shown first (None: every dim
    unsharded); ``momentum``: the bytes include the velocity slot."""
    shape = _check_shape(shape)
    mesh_spec = _check_mesh(mesh)
    size = itemsize(dtype)
    rank = len(shape)
    options = (UNSHARDED, *mesh_spec.dim_names)
    if len(options) ** rank > MAX_LAYOUTS:
        raise ValueError(
            f"{len(options)} options for each of {rank} dims make {len(options) ** rank} layouts; at most "
            f"{MAX_LAYOUTS} fit the page. Received: mesh {mesh_text(mesh_spec)}, shape {shape}."
        )
    first = _check_specs(specs, rank, options)
    base = LayoutExplorerState.of(shape, mesh=mesh_spec.shape, dtype=str(dtype), momentum=momentum, name=name)
    layouts, order = {}, []
    for combo in itertools.product(options, repeat=rank):
        state = base
        for dim, spec in enumerate(combo):
            state = layout_explorer_state(state, {"name": "dim", "dim": dim, "new": spec})
        key = layout_key(combo)
        layouts[key] = _layout_entry(state, shape, name, size)
        order.append(key)
    panel = layout_picture(shape, LayoutSpec.replicated(mesh_spec, rank)).panels[0]
    return {
        "kind": "layout",
        "name": name,
        "shape": list(shape),
        "dtype": str(dtype),
        "itemsize": size,
        "momentum": bool(momentum),
        "mesh_text": mesh_text(mesh_spec),
        "mesh_names": list(mesh_spec.dim_names),
        "mesh_sizes": list(mesh_spec.dim_sizes),
        "dim_labels": [f"dim {d} ({n})" for d, n in enumerate(shape)],
        "options": list(options),
        "panel": [float(panel.box[2]), float(panel.box[3])],  # inches: one size for every layout
        "mesh": _mesh_grid(mesh_spec, shape),
        "order": order,
        "layouts": layouts,
        "specs": layout_key(first),
        "notes": [ACTIVATION_NOTE[0].upper() + ACTIVATION_NOTE[1:] + "."],
        "font_px": {"title": style.TITLE_SIZE * style.DPI / 72, "tick": style.TICK_SIZE * style.DPI / 72},
    }


class LayoutExplorer(BrowserWidget):
    """The tensor's blocks on the mesh for the layout the dropdowns pick, drawn by the
    browser from ``layout_state``; ``specs`` (synced both ways) is the layout shown, as
    ``"unsharded, model"`` (set it to switch; read it after the reader picked one). The
    ``update`` trait means nothing here.

    Args:
      shape: the tensor's shape (rank 1 or 2).
      mesh: the mesh dims, ``{name: size}`` (default ``batch=2, model=4``).
      name: what to call the tensor.
      dtype: its element type (the bytes).
      specs: the layout shown first, one mesh dim or ``unsharded`` per tensor dim (None:
        every dim unsharded).
      momentum: count the velocity slot in the bytes per device.
    """

    _module = "layout.js"
    specs = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        shape: Sequence[int],
        mesh: Dims | MeshSpec | None = None,
        *,
        name: str = "W",
        dtype: str = "float32",
        specs: Sequence[str] | str | None = None,
        momentum: bool = True,
    ):
        state = layout_state(
            shape, DEFAULT_MESH if mesh is None else mesh, name=name, dtype=dtype, specs=specs, momentum=momentum
        )
        super().__init__(data=state, specs=state["specs"])

    @traitlets.validate("specs")
    def _valid_specs(self, proposal: Any) -> str:
        value = proposal["value"]
        data = self.data
        if not data:  # before the state is set
            return value
        return layout_key(_check_specs(value, len(data["shape"]), data["options"]))

    @property
    def layout(self) -> dict[str, Any]:
        """The state's entry of the layout shown."""
        return self.data["layouts"][self.specs]

    @property
    def layout_spec(self) -> LayoutSpec:
        """The layout shown as a ``LayoutSpec`` (it may be impossible: see ``layout["error"]``)."""
        d = self.data
        mesh = MeshSpec.create(list(zip(d["mesh_names"], d["mesh_sizes"])))
        return LayoutSpec(tuple(self.layout["specs"]), mesh)

    def still_caption(self) -> str:
        """The still's caption: the tensor, the mesh and each dropdown's pick, as the controls show them."""
        d = self.data
        mesh = " x ".join(f"{n}={s}" for n, s in zip(d["mesh_names"], d["mesh_sizes"]))
        picks = ", ".join(f"dim {k} = {spec}" for k, spec in enumerate(self.layout["specs"]))
        shown = f"{d['name']} {tuple(d['shape'])} on mesh {mesh} with {picks}"
        return f"Still picture of {shown} (live in Jupyter and on the docs site)"

    def snapshot_png(self) -> bytes:
        """The still picture of the layout shown (``plot_layout``), or its reason when it
        is impossible, for readers that run no scripts."""
        from matplotlib.figure import Figure

        from ..views.mesh.layout import plot_layout

        d, entry = self.data, self.layout
        if entry["error"]:
            import textwrap

            fig = Figure(figsize=(style.WIDTH, 1.2), dpi=style.DPI)
            message = f"{d['name']} {tuple(d['shape'])} as [{self.specs}]: impossible: {entry['error']}"
            fig.text(0.02, 0.5, textwrap.fill(message, 110), va="center", fontsize=style.TICK_SIZE, color="#CC3311")
        else:
            fig = plot_layout(self.layout_spec, tuple(d["shape"]), name=d["name"], note=entry["memory"])
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=style.DPI, bbox_inches="tight", pad_inches=style.PAD)  # no empty margins
        return buf.getvalue()
