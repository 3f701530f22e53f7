"""Pure geometry of the mesh layout view: where each block goes, its colours, its label.

No TensorFlow and no drawing. ``layout_picture`` turns a shape and a ``LayoutSpec``
into rectangles in tensor element units (x = last tensor dim, y = the one before,
growing downwards like a matrix), device colours, labels with font sizes chosen to fit
the block at the figure's size (``layout_labels``), and every panel's box in inches. ``views.layout``
only draws what it returns::

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> mesh = MeshSpec.create({"x": 2, "y": 2})
    >>> pic = layout_picture((4, 6), LayoutSpec(("x", "unsharded"), mesh))
    >>> [(b.rect, b.devices, b.label) for b in pic.panels[0].blocks]
    [((0, 0, 6, 2), (0, 1), 'CPU:0, CPU:1'), ((0, 2, 6, 2), (2, 3), 'CPU:2, CPU:3')]
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from matplotlib.colors import to_rgb

from ..geometry import ShardGeometry, shard_geometry
from ..specs import UNSHARDED, LayoutSpec
from .layout_labels import MIN_FONT, PAD, label_blocks, text_width_pt
from .style import FONT_SIZE, block_styles

MAX_FACETS = {3: (12,), 4: (4, 4)}  # panels per leading dim, by tensor rank


# ---- the picture ------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Block:
    """One replica group's block as drawn in one panel.

    ``rect`` is (x, y, w, h) in element units of the panel's plane; ``color`` and
    ``hatch`` are the block's (``style.block_styles``: one per unique block, the hatch
    telling apart blocks of a repeated colour); the label lists every device holding
    a copy, in text.
    """

    group: int
    devices: tuple[int, ...]
    slices: tuple[slice, ...]
    rect: tuple[float, float, float, float]
    color: object
    text_color: str
    hatch: str = ""
    label: str = ""
    fontsize: float = FONT_SIZE
    rotation: int = 0
    label_xy: tuple[float, float] = (0.0, 0.0)
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Panel:
    index: tuple[int, ...]               # indices of the faceted leading dims
    title: str
    box: tuple[float, float, float, float]  # left, bottom, width, height (inches)
    xlim: tuple[float, float]
    ylim: tuple[float, float]            # (bottom, top): inverted, row 0 on top
    xticks: tuple[int, ...]
    yticks: tuple[int, ...]
    xlabel: str
    ylabel: str
    blocks: tuple[Block, ...]


@dataclasses.dataclass(frozen=True)
class KeyCell:
    device: int
    rect: tuple[float, float, float, float]
    color: object
    text_color: str
    label: str
    fontsize: float
    hatch: str = ""


@dataclasses.dataclass(frozen=True)
class MeshKey:
    box: tuple[float, float, float, float]
    cells: tuple[KeyCell, ...]
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    xticks: tuple[tuple[float, str], ...]
    yticks: tuple[tuple[float, str], ...]
    xlabel: str
    title: str


@dataclasses.dataclass(frozen=True)
class LayoutPicture:
    geometry: ShardGeometry
    names: tuple[str, ...]        # device names as labels show them (CPU:3)
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]
    panels: tuple[Panel, ...]
    key: MeshKey
    omitted_labels: int

    @property
    def layout(self) -> LayoutSpec:
        return self.geometry.layout


def dim_text(layout: LayoutSpec, dim: int, two_lines: bool = False) -> str:
    """``tensor dim 1 — sharded over 'model' (4)``, or ``not sharded`` (each block spans
    the dim whole). Copies come from mesh dims, not tensor dims: see ``mesh_dim_role``."""
    spec = layout.sharding_specs[dim]
    how = ("not sharded" if spec == UNSHARDED
           else f"sharded over '{spec}' ({layout.mesh.dim_size(spec)})")
    return f"tensor dim {dim}" + ("\n" if two_lines else " — ") + how


def mesh_dim_role(layout: LayoutSpec, mesh_dim: str) -> str:
    """What a mesh dim does to the tensor: ``model: cuts tensor dim 1 (4 ways)``, or,
    when the layout does not use it, ``batch: unused -> 2 copies``: the devices along an
    unused mesh dim hold the same block, which is where every copy comes from.

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> [mesh_dim_role(spec, d) for d in ("batch", "model")]
    ['batch: unused -> 2 copies', 'model: cuts tensor dim 1 (4 ways)']
    """
    size = layout.mesh.dim_size(mesh_dim)
    if mesh_dim in layout.sharding_specs:
        return f"{mesh_dim}: cuts tensor dim {layout.sharding_specs.index(mesh_dim)} ({size} ways)"
    return f"{mesh_dim}: unused -> " + (f"{size} copies" if size > 1 else "no copies (size 1)")


def copies_text(layout: LayoutSpec) -> str:
    """Where the copies come from, one role per mesh dim (unused dims first)."""
    dims = layout.mesh.dim_names
    unused = [d for d in dims if d not in layout.sharding_specs]
    roles = [mesh_dim_role(layout, d) for d in unused + [d for d in dims if d not in unused]]
    return "mesh dims: " + " · ".join(roles)


def _axis_label(layout, dim, length_pt, faceted):
    """On one line when it fits along the axis, else on two."""
    one = dim_text(layout, dim)
    return dim_text(layout, dim, two_lines=faceted or text_width_pt(one, 9) > length_pt)


def text_color_for(color) -> str:
    r, g, b = to_rgb(color)
    return "white" if 0.299 * r + 0.587 * g + 0.114 * b < 0.5 else "black"


def pick_indices(size: int, shards: int, limit: int) -> tuple[int, ...]:
    """At most ``limit`` indices of a leading dim: all when few, else the first index
    of every shard first, so that every shard shows when it can."""
    if size <= limit:
        return tuple(range(size))
    local = size // shards
    starts = [k * local for k in range(shards)]
    if shards >= limit:
        return tuple(sorted({starts[round(k * (shards - 1) / (limit - 1))] for k in range(limit)}))
    return tuple(sorted([s + off for off in range(local) for s in starts][:limit]))


def boundary_ticks(size: int, shards: int, max_ticks: int) -> tuple[int, ...]:
    local = size // shards
    edges = list(range(0, size + 1, local))
    if len(edges) > max_ticks:
        step = math.ceil((len(edges) - 1) / (max_ticks - 1))
        edges = edges[::step]
        if edges[-1] != size:
            if size - edges[-1] < step * local / 2:
                edges[-1] = size
            else:
                edges.append(size)
    return tuple(edges)


def _panel_size(shape, layout, faceted) -> tuple[float, float]:
    """Panel (width, height) in inches: the tensor's aspect, clamped, tall enough for
    its rows of blocks and its axis label."""
    if len(shape) == 1:
        return 6.4, 0.9
    a = min(max(shape[-2] / shape[-1], 0.22), 1.5)
    base, tall, low = (2.2, 2.0, 0.8) if faceted else (
        6.4, 4.4, max(2.0, 0.4 * layout.num_shards(len(shape) - 2)))
    if a * base <= tall:
        return base, min(max(a * base, low), tall)
    return tall / a, tall


def _blocks(geom: ShardGeometry, index):
    """The blocks meeting panel ``index`` with rects and colours."""
    rank = len(geom.global_shape)
    styles = block_styles(geom)
    out = []
    for g, devices in enumerate(geom.replica_groups):
        sl = geom.blocks[devices[0]]
        if any(not (s.start <= i < s.stop) for s, i in zip(sl, index)):
            continue
        x, w = sl[-1].start, sl[-1].stop - sl[-1].start
        y, h = (sl[-2].start, sl[-2].stop - sl[-2].start) if rank >= 2 else (0, 1)
        color, hatch, _ = styles[g]
        out.append(Block(g, devices, sl, (x, y, w, h), color, text_color_for(color), hatch))
    return out


def _mesh_key(layout, width, title, geom=None, max_height=4.0):
    """Devices drawn as the mesh itself: columns = last mesh dim, rows = the one before,
    row groups (with a gap) = the dims before that. Each device takes the colour of the
    block it holds, so copies of one block share a colour on the key too."""
    mesh = layout.mesh
    sizes, dims, n = mesh.dim_sizes, mesh.dim_names, mesh.num_devices
    ncols, inner = sizes[-1], (sizes[-2] if len(sizes) >= 2 else 1)
    groups, gap = math.prod(sizes[:-2]), 0.4
    nrows = groups * inner + (groups - 1) * gap
    cell = min(0.5, max(0.12, width / ncols), max(0.16, max_height / nrows))
    geom = geom or shard_geometry(tuple(layout.num_shards(i) for i in range(layout.rank)),
                                  layout)
    styles = block_styles(geom)
    forms = (mesh.short_device_names, [f"d{d}" for d in range(n)], [str(d) for d in range(n)])
    texts, fs = next(((t, f) for t in forms for f in (8, 7, MIN_FONT)
                      if max(text_width_pt(s, f) for s in t) <= cell * 72 - 3 * PAD),
                     ([""] * n, MIN_FONT))
    cells, yticks = [], []
    for d in range(n):
        c = mesh.device_coords(d)
        g = int(np.ravel_multi_index(c[:-2], sizes[:-2])) if len(c) > 2 else 0
        y = g * (inner + gap) + (c[-2] if len(c) >= 2 else 0)
        color, hatch, _ = styles[geom.group_of[d]]
        cells.append(KeyCell(d, (c[-1], y, 1, 1), color, text_color_for(color), texts[d], fs,
                             hatch))
        if c[-1] == 0 and len(sizes) >= 2:
            yticks.append((y + 0.5, ", ".join(f"{m}={i}" for m, i in zip(dims[:-1], c[:-1]))))
    xticks = tuple((i + 0.5, str(i)) for i in range(ncols))
    return MeshKey((0.0, 0.0, cell * ncols, cell * nrows), tuple(cells), (0, ncols), (nrows, 0),
                   xticks, tuple(yticks), f"mesh dim {mesh_dim_role(layout, dims[-1])}", title)


def _facets(shape, layout):
    """The leading-dim indices drawn, one panel each, and the panels per row:
    ``(picks, indices, ncols)``, ``picks`` the ``pick_indices`` of each faceted dim."""
    rank = len(shape)
    picks = [pick_indices(shape[d], layout.num_shards(d), lim)
             for d, lim in enumerate(MAX_FACETS.get(rank, ()))]
    if rank == 3:
        indices = [(i,) for i in picks[0]]
        ncols = min(4, len(indices))
    elif rank == 4:
        indices = [(i, j) for i in picks[0] for j in picks[1]]
        ncols = len(picks[1])
    else:
        indices, ncols = [()], 1
    return picks, indices, ncols


def _header(geom, layout, name, title):
    """The title (``title`` when given) and the subtitle: the mesh, the unique blocks,
    where their copies come from and what the panels index."""
    shape, rank, mesh = geom.global_shape, len(geom.global_shape), layout.mesh
    spec_text = "[" + ", ".join(layout.sharding_specs) + "]"
    title = title or f"{name + ' ' if name else ''}{shape}: sharding {spec_text}"
    copies = geom.num_devices // geom.num_unique
    subtitle = (f"{mesh} · {geom.num_unique} unique block{'s' * (geom.num_unique > 1)} of "
                f"{geom.local_shape}, {copies} cop{'ies' if copies > 1 else 'y'} each"
                f"\n{copies_text(layout)}")
    if rank == 3:
        subtitle += f"\npanels: one per index of {dim_text(layout, 0)}"
    elif rank == 4:
        subtitle += (f"\npanel rows: {dim_text(layout, 0)}; panel columns: "
                     f"{dim_text(layout, 1).replace('tensor ', '')}")
    return title, subtitle


def _note(geom, picks, labelled):
    """What the panels leave out (indices of long leading dims, blocks, labels):
    ``(note, number of blocks left unlabelled)``."""
    shape = geom.global_shape
    notes = [f"showing indices {', '.join(map(str, p))} of {shape[d]} along tensor dim {d}"
             for d, p in enumerate(picks) if len(p) < shape[d]]
    if notes:
        missing = geom.num_unique - len({b.group for blocks in labelled for b in blocks})
        notes.append("every block appears" if not missing
                     else f"{missing} block(s) not shown (see layout_table)")
    omitted = sum(1 for blocks in labelled for b in blocks if not b.label)
    if omitted:
        notes.append(f"{omitted} label(s) left out for lack of room (see layout_table)")
    return "; ".join(notes), omitted


def _frame(rank, grid, key, title, subtitle, note, key_title):
    """The figure's size around the panel grid (``grid``: its width and height), the
    header and the mesh key, and where the grid goes: ``(figsize, x0, top)``, the grid's
    left and top edges (inches, from the figure's bottom-left)."""
    faceted = rank >= 3
    grid_w, grid_h = grid
    left_m, right_m, bottom_m = (1.0 if rank >= 2 else 0.5), 0.35, (1.0 if faceted else 0.75)
    key_w, key_h = key.box[2], key.box[3]
    key_ytick_in = max((text_width_pt(t, 8) for _, t in key.yticks), default=0) / 72
    header_lines = 2 + subtitle.count("\n") + bool(note)
    top_m = 0.3 + 0.2 * header_lines + (0.35 if faceted else 0.1) + (0.1 if note else 0)
    header_w = max(text_width_pt(title, 11), *(text_width_pt(s, 9) for s in subtitle.split("\n")),
                   text_width_pt(note, 8), text_width_pt(key_title, 8)) / 72 + 0.4
    fig_w = max(left_m + grid_w + right_m, key_w + 2 * (key_ytick_in + 0.4), header_w, 4.0)
    fig_h = top_m + grid_h + bottom_m + key_h + 0.95
    x0 = left_m + (fig_w - left_m - right_m - grid_w) / 2
    return (fig_w, fig_h), x0, fig_h - top_m


def _panels(shape, layout, indices, labelled, ncols, size, x0, top, gaps):
    """Every panel in its place: ``size`` (inches) each, ``gaps`` between them, the
    grid's left edge at ``x0`` and its top at ``top``; axis labels on the outer panels."""
    rank, faceted = len(shape), len(shape) >= 3
    (pw, ph), (gx, gy) = size, gaps
    xrange, yrange = shape[-1], (shape[-2] if rank >= 2 else 1)
    max_ticks = 5 if faceted else 9
    panels = []
    for k, (idx, blocks) in enumerate(zip(indices, labelled)):
        r, c = divmod(k, ncols)
        bottom_row = k + ncols >= len(indices)  # no panel below this one
        panels.append(Panel(
            idx, "[" + ", ".join([*map(str, idx), ":", ":"][:rank]) + "]" if faceted else "",
            (x0 + c * (pw + gx), top - ph - r * (ph + gy), pw, ph),
            (0, xrange), (yrange, 0),
            boundary_ticks(shape[-1], layout.num_shards(rank - 1), max_ticks),
            boundary_ticks(shape[-2], layout.num_shards(rank - 2), max_ticks) if rank >= 2 else (),
            _axis_label(layout, rank - 1, pw * 72, faceted) if bottom_row else "",
            _axis_label(layout, rank - 2, ph * 72, faceted) if rank >= 2 and c == 0 else "",
            tuple(blocks)))
    return tuple(panels)


def layout_picture(shape, layout: LayoutSpec, *, name=None, title=None,
                   panel_size=None) -> LayoutPicture:
    """Everything the layout figure shows, computed. ``panel_size`` (inches) overrides
    the automatic size, e.g. to fit labels in an existing axes."""
    geom = shard_geometry(shape, layout)
    shape, rank = geom.global_shape, len(geom.global_shape)
    names = layout.mesh.short_device_names
    faceted = rank >= 3
    picks, indices, ncols = _facets(shape, layout)
    nrows = math.ceil(len(indices) / ncols)
    pw, ph = panel_size or _panel_size(shape, layout, faceted)
    yrange = shape[-2] if rank >= 2 else 1
    labelled = [label_blocks(_blocks(geom, idx), names, (pw * 72, ph * 72), shape[-1], yrange)
                for idx in indices]
    title, subtitle = _header(geom, layout, name, title)
    note, omitted = _note(geom, picks, labelled)
    copies = geom.num_devices // geom.num_unique
    key_title = "devices on the mesh, coloured by the block they hold" + (
        f"\n(one colour: the {copies} copies of a block)" if copies > 1 else "")

    # placement (inches, from the figure's bottom-left)
    gaps = (0.55, 0.7) if faceted else (0.0, 0.0)
    grid = (ncols * pw + (ncols - 1) * gaps[0], nrows * ph + (nrows - 1) * gaps[1])
    key = _mesh_key(layout, min(5.5, max(grid[0], 3.0)), key_title, geom)
    figsize, x0, top = _frame(rank, grid, key, title, subtitle, note, key_title)
    panels = _panels(shape, layout, indices, labelled, ncols, (pw, ph), x0, top, gaps)
    key_w, key_h = key.box[2], key.box[3]
    key = dataclasses.replace(key, box=((figsize[0] - key_w) / 2, 0.55, key_w, key_h))
    return LayoutPicture(geom, names, title, subtitle, note, figsize, panels, key, omitted)
