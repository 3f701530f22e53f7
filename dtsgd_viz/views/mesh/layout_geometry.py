"""Pure geometry of the layout view: each block's rectangle, colour and label, each
panel's box, the mesh key, and the figure's size (no TensorFlow, no drawing).

Rectangles are in tensor element units (x = last tensor dim, y = the one before,
growing downwards like a matrix); boxes in inches from the figure's bottom-left::

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> pic = layout_picture((4, 6), LayoutSpec(("x", "unsharded"), MeshSpec.create({"x": 2, "y": 2})))
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
from ..core.style import BLOCK_COLORS, LABEL_SIZE, NOTE_SIZE, SUPTITLE_SIZE, TICK_SIZE, WIDTH, block_styles
from .layout_colors import mesh_colors, text_color_for
from .layout_labels import (
    bare_ids,
    copies_text,  # noqa: F401 - the shard views import it from here
    device_forms,
    dim_text,
    finding_text,
    ids_text,
    mesh_dim_role,
    text_width_pt,
)

Color = str | tuple[float, float, float]
MAX_FACETS = {3: (12,), 4: (4, 4)}  # panels per leading dim, by tensor rank
PAD = 2.0  # points kept free around a label inside its block
COLUMN_IN = 0.22  # inches per block column along a long mesh dim: one turned line of note-size text


@dataclasses.dataclass(frozen=True)
class Block:
    """One replica group's block in one panel: ``rect`` (x, y, w, h) in elements, its
    colour and hatch (``block_looks``) and the label naming every device holding it."""

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


@dataclasses.dataclass(frozen=True)
class Panel:
    index: tuple[int, ...]  # indices of the faceted leading dims
    title: str
    box: tuple[float, float, float, float]  # left, bottom, width, height (inches)
    xlim: tuple[float, float]
    ylim: tuple[float, float]  # (bottom, top): row 0 on top
    xticks: tuple[int, ...]
    yticks: tuple[int, ...]
    xlabel: str
    ylabel: str
    blocks: tuple[Block, ...]


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
    """The devices drawn as the mesh, each in the colour of the block it holds."""

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
    names: tuple[str, ...]
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]
    panels: tuple[Panel, ...]
    key: MeshKey | None  # None: one copy per block (the key would repeat the panel)
    omitted_labels: int

    @property
    def layout(self) -> LayoutSpec:
        return self.geometry.layout


def block_looks(geom: ShardGeometry) -> tuple[tuple[Color, str], ...]:
    """``(colour, hatch)`` of every replica group: ``style.block_styles`` up to
    ``len(BLOCK_COLORS)`` blocks, past that each block's mesh coordinate
    (``layout_colors.mesh_colors``) and no hatch."""
    if geom.num_unique <= len(BLOCK_COLORS):
        return tuple((c, h) for c, h, _ in block_styles(geom))
    return tuple((c, "") for c in mesh_colors(geom))


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


def boundary_ticks(size: int, shards: int, length_pt: float, across: bool) -> tuple[int, ...]:
    """Every block boundary when the ticks stand apart on an axis ``length_pt`` long
    (``across``: the labels run along it, as on x), else every k-th, always both ends."""
    local = size // shards
    need = (text_width_pt(str(size), TICK_SIZE) + 6) if across else 1.6 * TICK_SIZE
    step = max(1, math.ceil(need / (length_pt / shards)))
    edges = list(range(0, size + 1, local * step))
    return tuple(
        edges if edges[-1] == size else [*edges[:-1], size] if size - edges[-1] < local * step / 2 else [*edges, size]
    )


def _panel_size(shape, layout, faceted) -> tuple[float, float]:
    """The panel's (width, height) in inches: the tensor's aspect within limits; along a
    mesh dim of more than 4 devices, wide enough for one turned line per block column."""
    if len(shape) == 1:
        return 6.4, 0.9
    a = min(max(shape[-2] / shape[-1], 0.2), 2.5)
    base, tall = (2.2, 2.0) if faceted else (4.4, 5.0)
    w, h = (base, base * a) if base * a <= tall else (tall / a, tall)
    if not faceted:
        w = max(w, COLUMN_IN * max(layout.mesh.dim_sizes))
        h = max(h, 0.3 * layout.num_shards(len(shape) - 2))
    return round(w, 3), round(h, 3)


def axis_label(layout: LayoutSpec, dim: int, length_in: float) -> str:
    """``dim_text`` on one line along an axis ``length_in`` long: in full when it fits,
    else short, else short on two lines."""
    for text in (dim_text(layout, dim), dim_text(layout, dim, short=True)):
        if text_width_pt(text, LABEL_SIZE) <= length_in * 72:
            return text
    return dim_text(layout, dim, short=True).replace(" — ", "\n")


def _fits(text, fs, w, h, rotation) -> bool:
    if rotation:
        w, h = h, w
    lines = text.split("\n")
    return max(text_width_pt(s, fs) for s in lines) <= w - 2 * PAD and 1.25 * len(lines) * fs <= h - 2 * PAD


def _two_lines(text: str) -> str:
    """``text`` broken at the separator nearest its middle (unchanged without one)."""
    cuts = [i for i, ch in enumerate(text) if ch == ","]
    if not cuts:
        return text
    i = min(cuts, key=lambda c: abs(2 * c - len(text)))
    return text[: i + 1] + "\n" + text[i + 1 :].lstrip()


def label_blocks(blocks: Sequence[Block], names: Sequence[str], px: float, py: float) -> list[Block]:
    """The blocks labelled in the first way that fits them all (most explicit form
    first, one line before two, upright before turned, larger before smaller type), else
    each in the first way that fits it, else unlabelled. ``px``, ``py``: points per element."""
    candidates = [
        (form, lines, rot, fs)
        for form in range(3)
        for lines in (1, 2)
        for rot in (0, 90)
        for fs in (LABEL_SIZE, NOTE_SIZE)
    ]

    def label(b, form, lines, rot, fs) -> tuple[str, float, int] | None:
        text = device_forms(b.devices, names)[form]
        text = _two_lines(text) if lines == 2 else text
        return (text, fs, rot) if _fits(text, fs, b.rect[2] * px, b.rect[3] * py, rot) else None

    def first(b) -> tuple[str, float, int]:
        return next((x for c in candidates if (x := label(b, *c))), ("", NOTE_SIZE, 0))

    shared = next((c for c in candidates if all(label(b, *c) for b in blocks)), None)
    chosen = [first(b) for b in blocks] if shared is None else [label(b, *shared) or first(b) for b in blocks]
    return [dataclasses.replace(b, label=t, fontsize=fs, rotation=r) for b, (t, fs, r) in zip(blocks, chosen)]


def _blocks(geom: ShardGeometry, index, looks) -> list[Block]:
    """The blocks meeting the panel at leading indices ``index``."""
    out = []
    for g, devices in enumerate(geom.replica_groups):
        sl = geom.blocks[devices[0]]
        if any(not (s.start <= i < s.stop) for s, i in zip(sl, index)):
            continue
        x, w = sl[-1].start, sl[-1].stop - sl[-1].start
        y, h = (sl[-2].start, sl[-2].stop - sl[-2].start) if len(sl) >= 2 else (0, 1)
        color, hatch = looks[g]
        out.append(Block(g, devices, sl, (x, y, w, h), color, text_color_for(color), hatch))
    return out


def _mesh_key(layout: LayoutSpec, geom: ShardGeometry, looks, width: float) -> MeshKey:
    """Columns = the last mesh dim, rows = the one before, row groups (a gap between)
    = the dims before that; each device in its block's colour."""
    mesh = layout.mesh
    sizes, dims, n = mesh.dim_sizes, mesh.dim_names, mesh.num_devices
    ncols, inner, groups, gap = sizes[-1], (sizes[-2] if len(sizes) >= 2 else 1), math.prod(sizes[:-2]), 0.4
    nrows = groups * inner + (groups - 1) * gap
    cell = min(0.45, max(0.16, width / ncols), max(0.16, 3.0 / nrows))
    texts, fs = next(
        (
            (t, f)
            for t in (mesh.short_device_names, [str(d) for d in range(n)])
            for f in (TICK_SIZE, NOTE_SIZE)
            if max(text_width_pt(s, f) for s in t) <= cell * 72 - 2 * PAD
        ),
        ([""] * n, NOTE_SIZE),
    )
    cells, yticks = [], []
    for d in range(n):
        c: tuple[int, ...] = mesh.device_coords(d)
        col, row = c[-1], (c[-2] if len(c) >= 2 else 0)
        y = (int(np.ravel_multi_index(c[:-2], sizes[:-2])) * (inner + gap) if len(c) > 2 else 0) + row
        color, hatch = looks[geom.group_of[d]]
        cells.append(KeyCell(d, (col, y, 1, 1), color, text_color_for(color), texts[d], fs, hatch))
        if col == 0 and len(sizes) >= 2:
            yticks.append((y + 0.5, ", ".join(f"{m}={i}" for m, i in zip(dims[:-1], c[:-1]))))
    return MeshKey(
        (0.0, 0.0, cell * ncols, cell * nrows),
        tuple(cells),
        (0, ncols),
        (nrows, 0),
        tuple((i + 0.5, str(i)) for i in range(ncols)),
        tuple(yticks),
        f"mesh dim {mesh_dim_role(layout, dims[-1])}",
        "devices on the mesh, coloured by the block they hold",
    )


def _facets(shape, layout):
    """``(picks, indices, ncols, collapsed)``: the indices drawn of each sharded leading
    dim, every panel's leading indices, panels per row, and the unsharded leading dims
    (drawn once: each of their indices is laid out alike)."""
    lead = tuple(range(len(shape) - 2))
    limits = MAX_FACETS.get(len(shape), ())
    picks = {
        d: pick_indices(shape[d], layout.num_shards(d), limits[d])
        for d in lead
        if layout.sharding_specs[d] != UNSHARDED
    }
    indices = [tuple(c) for c in itertools.product(*[picks.get(d, (0,)) for d in lead])]
    ncols = len(picks[lead[1]]) if len(picks) == 2 else min(4, len(indices))
    return picks, indices, ncols, tuple(d for d in lead if d not in picks)


def _subtitle(geom, layout, picks, collapsed) -> str:
    """The settings on one line: sharding, mesh, what the panels index, what is drawn once."""
    out = f"sharding [{', '.join(layout.sharding_specs)}] on {layout.mesh}"
    if picks:
        out += "; panels: " + " x ".join(f"tensor dim {d}" for d in sorted(picks))
    if collapsed:
        sizes = "x".join(str(geom.global_shape[d]) for d in collapsed)
        what = "taps" if len(collapsed) == 2 else "slices"
        out += f"; the {sizes} {what} (dim{'s' * (len(collapsed) > 1)} {', '.join(map(str, collapsed))}) drawn once"
    return out


def layout_picture(
    shape: Sequence[int],
    layout: LayoutSpec,
    *,
    name: str | None = None,
    title: str | None = None,
    panel_size: tuple[float, float] | None = None,
    note: str | None = None,
) -> LayoutPicture:
    """Everything the layout figure shows, computed: the panels (one per index of the
    sharded leading dims of a rank-3/4 tensor, unsharded leading dims drawn once), their
    labelled blocks, the mesh key (none with one copy per block), the one-line title,
    subtitle and note (what is left out, bare ids, the caller's ``note``), and every box.
    ``panel_size`` (inches) overrides the panel's size."""
    geom = shard_geometry(shape, layout)
    shape, rank, names = geom.global_shape, len(geom.global_shape), layout.mesh.short_device_names
    picks, indices, ncols, collapsed = _facets(shape, layout)
    faceted = bool(picks)
    pw, ph = panel_size or _panel_size(shape, layout, faceted)
    gx, gy = (0.45, 0.8) if faceted else (0.0, 0.0)
    if panel_size is None and ncols * pw + (ncols - 1) * gx > WIDTH - 1.3:
        scale = (WIDTH - 1.3 - (ncols - 1) * gx) / (ncols * pw)
        pw, ph = pw * scale, ph * scale
    yrange = shape[-2] if rank >= 2 else 1
    looks = block_looks(geom)
    labelled = [label_blocks(_blocks(geom, i, looks), names, pw * 72 / shape[-1], ph * 72 / yrange) for i in indices]
    prefix = f"{name + ' ' if name else ''}{shape}"
    title = title or finding_text(geom, layout, prefix)
    subtitle = _subtitle(geom, layout, picks, collapsed)
    nrows = math.ceil(len(indices) / ncols)
    grid_w, grid_h = ncols * pw + (ncols - 1) * gx, nrows * ph + (nrows - 1) * gy
    key = None if geom.num_devices == geom.num_unique else _mesh_key(layout, geom, looks, min(5.5, max(grid_w, 3.0)))
    shown = [b.label for bl in labelled for b in bl] + ([c.label for c in key.cells] if key else [])
    omitted = sum(not b.label for bl in labelled for b in bl)
    notes = [ids_text(names)] if bare_ids(shown) else []
    notes += [
        f"showing indices {', '.join(map(str, p))} of {shape[d]} along tensor dim {d}"
        for d, p in picks.items()
        if len(p) < shape[d]
    ]
    notes += [f"{omitted} label(s) left out for lack of room (see layout_table)"] * bool(omitted)
    notes += [note] if note else []
    note_line = "; ".join(notes)
    # inches: title, subtitle, note, panel titles | grid | ticks and x label | key
    top = 0.6 + (0.25 if note_line else 0) + (0.35 if faceted else 0.2)
    key_h = (0.35 + key.box[3] + 0.55) if key else 0.0
    fig_h = top + grid_h + (0.55 if key else 0.7) + key_h + 0.05
    key_tick_w = max((text_width_pt(t, NOTE_SIZE) for _, t in key.yticks), default=0) / 72 if key else 0
    widths = [
        1.05 + grid_w + 0.35,
        1.1 * text_width_pt(title, SUPTITLE_SIZE) / 72 + 0.3,
        text_width_pt(subtitle, 10) / 72 + 0.3,
        text_width_pt(note_line, NOTE_SIZE) / 72 + 0.3,
        (key.box[2] + 2 * key_tick_w + 0.6) if key else 0,
        5.2,
    ]
    fig_w = round(min(WIDTH, max(widths)), 3)
    x0 = (fig_w - grid_w) / 2 + 0.35
    length = pw * 72
    panels = []
    for k, (idx, blocks) in enumerate(zip(indices, labelled)):
        r, c = divmod(k, ncols)
        where = [str(i) if d in picks else ":" for d, i in enumerate(idx)]
        panels.append(
            Panel(
                idx,
                "[" + ", ".join([*where, ":", ":"][:rank]) + "]" if faceted else "",
                (x0 + c * (pw + gx), fig_h - top - ph - r * (ph + gy), pw, ph),
                (0, shape[-1]),
                (yrange, 0),
                boundary_ticks(shape[-1], layout.num_shards(rank - 1), length, True),
                boundary_ticks(shape[-2], layout.num_shards(rank - 2), ph * 72, False) if rank >= 2 else (),
                axis_label(layout, rank - 1, pw) if k + ncols >= len(indices) else "",
                axis_label(layout, rank - 2, ph) if rank >= 2 and c == 0 else "",
                tuple(blocks),
            )
        )
    if key:
        key = dataclasses.replace(key, box=((fig_w - key.box[2]) / 2, 0.55, key.box[2], key.box[3]))
    return LayoutPicture(geom, names, title, subtitle, note_line, (fig_w, round(fig_h, 3)), tuple(panels), key, omitted)
