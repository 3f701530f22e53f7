"""Pure geometry of the mesh layout view: where each block goes, its colours, its label.

No TensorFlow and no drawing. ``layout_picture`` turns a shape and a ``LayoutSpec``
into rectangles in tensor element units (x = last tensor dim, y = the one before,
growing downwards like a matrix), device colours, labels with font sizes chosen to fit
the block at the figure's size (``layout_labels``), and every panel's box in inches. ``views.mesh.layout``
only draws what it returns::

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> mesh = MeshSpec.create({"x": 2, "y": 2})
    >>> pic = layout_picture((4, 6), LayoutSpec(("x", "unsharded"), mesh))
    >>> [(b.rect, b.devices, b.label) for b in pic.panels[0].blocks]
    [((0, 0, 6, 2), (0, 1), 'CPU:0, CPU:1'), ((0, 2, 6, 2), (2, 3), 'CPU:2, CPU:3')]
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence

import numpy as np

from ...geometry import ShardGeometry, shard_geometry
from ...specs import UNSHARDED, LayoutSpec
from ..core.style import (
    BLOCK_COLORS,
    LABEL_SIZE,
    NOTE_SIZE,
    SUBTITLE_SIZE,
    SUPTITLE_SIZE,
    TICK_SIZE,
    WIDTH,
    block_styles,
)
from .layout_colors import mesh_colors, text_color_for  # noqa: F401
from .layout_labels import (  # noqa: F401
    MAX_LINES,
    MIN_FONT,
    PAD,
    bare_ids,
    coord_ticks,
    copies_text,
    dim_text,
    header_text,
    label_blocks,
    mesh_dim_role,
    note_text,
    text_width_pt,
)

Color = str | tuple[float, float, float]  # a block's colour: a palette name or an RGB from ``mesh_colors``
Coords = tuple[tuple[float, str], ...]  # (centre, label) of each block row's / column's mesh coordinate

MAX_FACETS = {3: (12,), 4: (4, 4)}  # panels per leading dim, by tensor rank
KEY_GAP = 0.22  # inches between the panels' x label and the mesh key's title
KEY_BOTTOM = 0.55  # inches under the mesh key, for its tick labels and x label
COLUMN_IN = 0.23  # inches a block column needs for a two-digit id at ``NOTE_SIZE``
ROW_IN = 0.2  # inches a block row needs for one line of label
MAX_PANEL = (6.4, 6.0)  # inches: the largest unfaceted panel


# ---- the picture ------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Block:
    """One replica group's block as drawn in one panel.

    ``rect`` is (x, y, w, h) in element units of the panel's plane; ``color`` and
    ``hatch`` are the block's (``block_looks``); the label lists every device holding
    a copy, in text.
    """

    group: int
    devices: tuple[int, ...]
    slices: tuple[slice, ...]
    rect: tuple[float, float, float, float]
    color: Color
    text_color: str
    hatch: str = ""
    label: str = ""
    fontsize: float = LABEL_SIZE
    rotation: int = 0
    label_xy: tuple[float, float] = (0.0, 0.0)
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Panel:
    index: tuple[int, ...]  # indices of the faceted leading dims
    title: str
    box: tuple[float, float, float, float]  # left, bottom, width, height (inches)
    xlim: tuple[float, float]
    ylim: tuple[float, float]  # (bottom, top): inverted, row 0 on top
    xticks: tuple[int, ...]
    yticks: tuple[int, ...]
    xlabel: str
    ylabel: str
    blocks: tuple[Block, ...]
    # one-copy layouts: each block row's / column's mesh coordinate (right, top)
    xcoords: tuple[tuple[float, str], ...] = ()
    ycoords: tuple[tuple[float, str], ...] = ()
    xcoord_label: str = ""


@dataclasses.dataclass(frozen=True)
class KeyCell:
    device: int
    rect: tuple[float, float, float, float]
    color: Color
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
    names: tuple[str, ...]  # device names as labels show them (CPU:3)
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]
    panels: tuple[Panel, ...]
    key: MeshKey | None  # None: one copy per block, the panel names the coordinates
    omitted_labels: int

    @property
    def layout(self) -> LayoutSpec:
        return self.geometry.layout


def block_looks(geom: ShardGeometry) -> tuple[tuple[Color, str], ...]:
    """``(colour, hatch)`` of every replica group: ``style.block_styles`` up to
    ``len(BLOCK_COLORS)`` blocks; past that each block's mesh coordinate
    (``layout_colors.mesh_colors``: hue along one mesh dim, red to purple without
    wrapping, lightness along the other) and no hatch, where repeated colours and
    hatches would mean nothing."""
    if geom.num_unique <= len(BLOCK_COLORS):
        return tuple((c, h) for c, h, _ in block_styles(geom))
    return tuple((c, "") for c in mesh_colors(geom))


def mesh_coloured(geom: ShardGeometry) -> bool:
    """Whether ``block_looks`` colours blocks by mesh coordinate."""
    return geom.num_unique > len(BLOCK_COLORS)


def _axis_label(layout, dim, length_pt, faceted):
    """On one line when it fits along the axis, else on two."""
    one = dim_text(layout, dim)
    return dim_text(layout, dim, two_lines=faceted or text_width_pt(one, LABEL_SIZE) > length_pt)


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
    """Panel (width, height) in inches: the tensor's aspect, clamped (``_aspect_size``),
    tall enough for its rows of blocks and its axis label. On a mesh with a dim of more
    than 4 devices the panel grows, keeping that aspect, until a two-digit device id fits
    each of that many block columns: every layout of one tensor on one mesh is drawn at
    one size and shape, whichever tensor dim the long mesh dim cuts."""
    if len(shape) == 1:
        return 6.4, 0.9
    pw, ph = _aspect_size(shape, layout, faceted)
    longest = max(layout.mesh.dim_sizes)
    if not faceted and longest > 4:
        scale = max(1.0, longest * COLUMN_IN / pw, longest * ROW_IN / ph)
        scale = min(scale, MAX_PANEL[0] / pw, MAX_PANEL[1] / ph)
        pw, ph = pw * scale, ph * scale
    return pw, ph


def _aspect_size(shape, layout, faceted):
    a = min(max(shape[-2] / shape[-1], 0.22), 1.5)
    base, tall, low = (2.2, 2.0, 0.8) if faceted else (6.4, 4.4, max(2.0, 0.4 * layout.num_shards(len(shape) - 2)))
    if a * base <= tall:
        return base, min(max(a * base, low), tall)
    return tall / a, tall


def _blocks(geom: ShardGeometry, index):
    """The blocks meeting panel ``index`` with rects and colours."""
    rank = len(geom.global_shape)
    looks = block_looks(geom)
    out = []
    for g, devices in enumerate(geom.replica_groups):
        sl = geom.blocks[devices[0]]
        if any(not (s.start <= i < s.stop) for s, i in zip(sl, index)):
            continue
        x, w = sl[-1].start, sl[-1].stop - sl[-1].start
        y, h = (sl[-2].start, sl[-2].stop - sl[-2].start) if rank >= 2 else (0, 1)
        color, hatch = looks[g]
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
    geom = geom or shard_geometry(tuple(layout.num_shards(i) for i in range(layout.rank)), layout)
    looks = block_looks(geom)
    # the blocks' notations: full names, else bare ids (the note says they are device ids)
    forms = (mesh.short_device_names, [str(d) for d in range(n)])
    texts, fs = next(
        (
            (t, f)
            for t in forms
            for f in (TICK_SIZE, MIN_FONT)
            if max(text_width_pt(s, f) for s in t) <= cell * 72 - 3 * PAD
        ),
        ([""] * n, MIN_FONT),
    )
    cells, yticks = [], []
    for d in range(n):
        c = mesh.device_coords(d)
        g = int(np.ravel_multi_index(c[:-2], sizes[:-2])) if len(c) > 2 else 0
        y = g * (inner + gap) + (c[-2] if len(c) >= 2 else 0)
        color, hatch = looks[geom.group_of[d]]
        cells.append(KeyCell(d, (c[-1], y, 1, 1), color, text_color_for(color), texts[d], fs, hatch))
        if c[-1] == 0 and len(sizes) >= 2:
            yticks.append((y + 0.5, ", ".join(f"{m}={i}" for m, i in zip(dims[:-1], c[:-1]))))
    xticks = tuple((i + 0.5, str(i)) for i in range(ncols))
    return MeshKey(
        (0.0, 0.0, cell * ncols, cell * nrows),
        tuple(cells),
        (0, ncols),
        (nrows, 0),
        xticks,
        tuple(yticks),
        f"mesh dim {mesh_dim_role(layout, dims[-1])}",
        title,
    )


def _facets(shape, layout):
    """The leading-dim indices drawn, one panel each, and the panels per row:
    ``(picks, indices, ncols, collapsed)``: ``picks`` the ``pick_indices`` of each
    sharded leading dim (``{dim: indices}``), ``collapsed`` the unsharded leading dims,
    drawn once (every index of them is laid out alike, as treescope draws them)."""
    rank = len(shape)
    lead = tuple(range(rank - 2))  # () below rank 3
    limits = MAX_FACETS.get(rank, ())
    picks = {
        d: pick_indices(shape[d], layout.num_shards(d), limits[d])
        for d in lead
        if layout.sharding_specs[d] != UNSHARDED
    }
    collapsed = tuple(d for d in lead if d not in picks)
    indices = [tuple(c) for c in itertools.product(*[picks.get(d, (0,)) for d in lead])]
    ncols = len(picks[lead[1]]) if len(picks) == 2 else min(4, len(indices))
    return picks, indices, ncols, collapsed


def _crowded(labelled) -> bool:
    """Whether some block label is stacked more than ``MAX_LINES`` deep, or left out."""
    return any(not b.label or b.label.count("\n") >= MAX_LINES for blocks in labelled for b in blocks)


def _frame(
    faceted,
    rank,
    grid,
    key: MeshKey | None,
    header,
    key_title,
    coords: tuple[Coords, Coords] | tuple[Coords, Coords, str] = ((), ()),
    xlabel_lines=1,
):
    """The figure's size around the panel grid (``grid``: its width and height), the
    header (``(title, subtitle, note)``) and the mesh key, at most ``style.WIDTH`` wide,
    and where the grid goes: ``(figsize, x0, top)``, the grid's left and top edges
    (inches, from the figure's bottom-left). Between the grid and the key: the tick
    labels, the ``xlabel_lines`` of the x label, a small gap and the key's title."""
    title, subtitle, note = header
    grid_w, grid_h = grid
    left_m, right_m, bottom_m = (1.0 if rank >= 2 else 0.5), 0.35, (1.0 if faceted else 0.75)
    if key is None:  # the mesh coordinates beside the panel instead: room right and on top
        key_w, key_h, key_ytick_in, key_title = 0.0, -0.6, 0.0, ""
        right_m += max((text_width_pt(t, NOTE_SIZE) for _, t in coords[1]), default=0) / 72 + 0.1
    else:
        key_w, key_h = key.box[2], key.box[3]
        key_ytick_in = max((text_width_pt(t, NOTE_SIZE) for _, t in key.yticks), default=0) / 72
    lines = title.count("\n") + 1 + subtitle.count("\n") + 1 + (note.count("\n") + 1 if note else 0)
    top_m = (
        0.3
        + 0.21 * lines
        + (0.35 if faceted else 0.1)
        + (0.1 if note else 0)
        + (0.25 if coords[0] else 0)
        + (0.2 if len(coords) > 2 and coords[2] else 0)
    )
    header_w = (
        max(
            *(1.2 * text_width_pt(t, SUPTITLE_SIZE) for t in title.split("\n")),  # bold
            *(text_width_pt(t, SUBTITLE_SIZE) for t in subtitle.split("\n")),
            *(text_width_pt(t, NOTE_SIZE) for t in [*note.split("\n"), *key_title.split("\n")]),
        )
        * 0.92
        / 72
        + 0.3
    )  # text_width_pt is generous: ~8% wide
    fig_w = min(WIDTH, max(left_m + grid_w + right_m, key_w + 2 * (key_ytick_in + 0.4), header_w, 4.0))
    if key is None:
        fig_h = top_m + grid_h + bottom_m + 0.05
    else:
        below = 0.3 + xlabel_lines * (TICK_SIZE if faceted else LABEL_SIZE) * 1.2 / 72
        key_title_h = (key_title.count("\n") + 1) * NOTE_SIZE * 1.25 / 72 + 0.1
        fig_h = top_m + grid_h + below + KEY_GAP + key_title_h + key_h + KEY_BOTTOM
    x0 = left_m + max(0.0, fig_w - left_m - right_m - grid_w) / 2
    return (fig_w, fig_h), x0, fig_h - top_m


def _panels(shape, layout, indices, labelled, ncols, size, x0, top, gaps, picks):
    """Every panel in its place: ``size`` (inches) each, ``gaps`` between them, the
    grid's left edge at ``x0`` and its top at ``top``; axis labels on the outer panels.
    A panel's title indexes its faceted dims (``picks``), ``:`` for the others."""
    rank, faceted = len(shape), bool(picks)
    (pw, ph), (gx, gy) = size, gaps
    xrange, yrange = shape[-1], (shape[-2] if rank >= 2 else 1)
    max_ticks = 5 if faceted else 9
    panels = []
    for k, (idx, blocks) in enumerate(zip(indices, labelled)):
        r, c = divmod(k, ncols)
        bottom_row = k + ncols >= len(indices)  # no panel below this one
        where = [str(i) if d in picks else ":" for d, i in enumerate(idx)]
        panels.append(
            Panel(
                idx,
                "[" + ", ".join([*where, ":", ":"][:rank]) + "]" if faceted else "",
                (x0 + c * (pw + gx), top - ph - r * (ph + gy), pw, ph),
                (0, xrange),
                (yrange, 0),
                boundary_ticks(shape[-1], layout.num_shards(rank - 1), max_ticks),
                boundary_ticks(shape[-2], layout.num_shards(rank - 2), max_ticks) if rank >= 2 else (),
                _axis_label(layout, rank - 1, pw * 72, faceted) if bottom_row else "",
                _axis_label(layout, rank - 2, ph * 72, faceted) if rank >= 2 and c == 0 else "",
                tuple(blocks),
            )
        )
    return tuple(panels)


def layout_picture(
    shape: Sequence[int],
    layout: LayoutSpec,
    *,
    name: str | None = None,
    title: str | None = None,
    panel_size: tuple[float, float] | None = None,
    note: str | None = None,
) -> LayoutPicture:
    """Everything the layout figure shows, computed. ``panel_size`` (inches) overrides
    the automatic size, e.g. to fit labels in an existing axes. Unsharded leading dims
    of a rank-3/4 tensor are drawn once (the subtitle names them); past
    ``len(BLOCK_COLORS)`` blocks, blocks take their mesh coordinate's colour
    (``block_looks``) and upright labels only, unless a block is held by several devices
    (its list of devices may turn along a tall block). ``note`` is added to the note line
    under the subtitle (e.g. the bytes per device)."""
    geom = shard_geometry(shape, layout)
    shape, rank = geom.global_shape, len(geom.global_shape)
    names = layout.mesh.short_device_names
    copies = geom.num_devices // geom.num_unique
    picks, indices, ncols, collapsed = _facets(shape, layout)
    faceted = bool(picks)
    nrows = math.ceil(len(indices) / ncols)
    gaps = (0.55, 0.7) if faceted else (0.0, 0.0)
    pw, ph = panel_size or _panel_size(shape, layout, faceted)
    room = WIDTH - 1.35 - (ncols - 1) * gaps[0]  # the grid within the figure's margins
    if panel_size is None and ncols * pw > room:
        pw, ph = room / ncols, ph * room / (ncols * pw)
    yrange = shape[-2] if rank >= 2 else 1

    def label_all(pw, ph):
        return [
            label_blocks(
                _blocks(geom, idx),
                names,
                (pw * 72, ph * 72),
                shape[-1],
                yrange,
                rotate=not mesh_coloured(geom) or copies > 1,
            )
            for idx in indices
        ]

    labelled = label_all(pw, ph)
    wide = room - (0.7 if geom.num_devices == geom.num_unique else 0.0)  # coords on the right
    if panel_size is None and not faceted and pw < wide and _crowded(labelled):
        pw = wide  # the column's width, for labels of one or two lines
        labelled = label_all(pw, ph)
    title, subtitle = header_text(geom, layout, name, title, picks, collapsed)
    key_title = (
        "devices on the mesh, coloured by the block they hold"
        if not mesh_coloured(geom)
        else "devices on the mesh: each block's colour is its mesh coordinate"
    ) + (f"\n(one colour: the {copies} copies of a block)" if copies > 1 else "")

    # placement (inches, from the figure's bottom-left)
    grid = (ncols * pw + (ncols - 1) * gaps[0], nrows * ph + (nrows - 1) * gaps[1])
    coords = ((), (), "")
    if copies == 1 and not faceted and panel_size is None:  # a key would repeat the panel
        key = None
        xc, xl = coord_ticks(layout, rank - 1, shape[-1], pw * 72, True)
        yc = coord_ticks(layout, rank - 2, shape[-2], ph * 72, False)[0] if rank >= 2 else ()
        coords = (xc, yc, xl)
    else:
        key = _mesh_key(layout, min(5.5, max(grid[0], 3.0)), key_title, geom)
    shown = [b.label for blocks in labelled for b in blocks] + ([c.label for c in key.cells] if key is not None else [])
    note, omitted = note_text(geom, picks, labelled, names if bare_ids(shown) else None, note)
    xlabel_lines = 1 + (faceted or text_width_pt(dim_text(layout, rank - 1), LABEL_SIZE) > pw * 72)
    figsize, x0, top = _frame(faceted, rank, grid, key, (title, subtitle, note), key_title, coords, xlabel_lines)
    panels = _panels(shape, layout, indices, labelled, ncols, (pw, ph), x0, top, gaps, picks)
    if key is None:
        panels = tuple(
            dataclasses.replace(p, xcoords=coords[0], ycoords=coords[1], xcoord_label=coords[2]) for p in panels
        )
    else:
        key_w, key_h = key.box[2], key.box[3]
        key = dataclasses.replace(key, box=((figsize[0] - key_w) / 2, KEY_BOTTOM, key_w, key_h))
    return LayoutPicture(geom, names, title, subtitle, note, figsize, panels, key, omitted)
