"""Pure geometry and words of the layout view: each block's rectangle, colour and label
(every device holding it, in the first form that fits: ``device_forms``), each panel's
box, the mesh key, the title and the figure's size (no TensorFlow, no drawing).

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
from collections.abc import Iterable, Sequence

import numpy as np

from ...geometry import ShardGeometry, shard_geometry
from ...specs import UNSHARDED, LayoutSpec
from ..core.style import BLOCK_COLORS, LABEL_SIZE, NOTE_SIZE, SUPTITLE_SIZE, TICK_SIZE, WIDTH, block_styles
from .layout_colors import mesh_colors, text_color_for


def text_width_pt(text: str, fontsize: float) -> float:
    """About how wide ``text`` is in points (DejaVu Sans, slightly generous)."""
    return fontsize * sum(
        0.36 if ch in ",.:;'| " else 0.45 if ch in "[]()-=" else 0.74 if ch.isupper() or ch in "mw" else 0.64
        for ch in text
    )


def slice_text(slices: Iterable[slice]) -> str:
    """``[0:4, 2:4]``: the element ranges of a block."""
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in slices) + "]"


def compact_devices(devices: Iterable[int]) -> str:
    """``d0,d4`` for a few devices; runs of three or more as ``d0-d3``.

    >>> compact_devices([0, 1, 2, 3, 8, 9])
    'd0-d3,d8,d9'
    """
    runs: list[list[int]] = []
    for d in devices:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ",".join(f"d{a}" if a == b else f"d{a},d{b}" if b == a + 1 else f"d{a}-d{b}" for a, b in runs)


def device_forms(devices: Sequence[int], names: Sequence[str]) -> tuple[str, str, str]:
    """A replica group's names, most to least explicit: ``CPU:0, CPU:4``, JAX's
    ``CPU 0,4`` (runs of three or more as ``0-3``), the bare ids ``0,4``."""
    full = ", ".join(names[d] for d in devices)
    heads = {names[d].rsplit(":", 1)[0] for d in devices}
    ids = [names[d].rsplit(":", 1)[-1] for d in devices]
    if len(heads) != 1 or not all(i.isdigit() for i in ids):
        return full, full, ",".join(map(str, devices))
    jax = f"{heads.pop()} " + compact_devices(int(i) for i in ids).replace("d", "")
    return full, jax, ",".join(map(str, devices))


def bare_ids(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` names devices by bare id (``0,16``), which only a note can
    say are device ids."""
    return any(t and all(ch.isdigit() or ch in ",\n" for ch in t) for t in texts)


def ids_text(names: Sequence[str]) -> str:
    """``the numbers are device ids (0 = CPU:0, ..., 7 = CPU:7)``."""
    return f"the numbers are device ids (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})"


def dim_text(layout: LayoutSpec, dim: int, short: bool = False) -> str:
    """``tensor dim 1 — sharded over 'model' (4)`` or ``tensor dim 0 — not sharded``;
    ``short``: ``dim 1 — over 'model' (4)``, for small faceted panels."""
    spec = layout.sharding_specs[dim]
    over = "over" if short else "sharded over"
    how = "not sharded" if spec == UNSHARDED else f"{over} '{spec}' ({layout.mesh.dim_size(spec)})"
    return f"{'dim' if short else 'tensor dim'} {dim} — {how}"


def mesh_dim_role(layout: LayoutSpec, mesh_dim: str) -> str:
    """What a mesh dim does to the tensor: ``model: cuts tensor dim 1 (4 ways)``, or
    ``batch: unused -> 2 copies`` (devices along an unused mesh dim hold the same block).

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
    return "mesh dims: " + " · ".join(mesh_dim_role(layout, d) for d in unused + [d for d in dims if d not in unused])


def copied_over(layout: LayoutSpec) -> tuple[str, ...]:
    """The mesh dims (of size > 1) the layout does not use: where every copy comes from."""
    return tuple(d for d in layout.mesh.dim_names if d not in layout.sharding_specs and layout.mesh.dim_size(d) > 1)


def finding_text(geom: ShardGeometry, layout: LayoutSpec, prefix: str) -> str:
    """The layout figure's title: how many distinct blocks there are and, with copies,
    on how many devices each lives and over which mesh dims it is copied.

    >>> from dtsgd_viz.geometry import shard_geometry
    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> finding_text(shard_geometry((8, 8), spec), spec, "c (8, 8)")
    'c (8, 8): 4 distinct 8x2 blocks, each on 2 devices (copied over batch)'
    """
    n, unique = geom.num_devices, geom.num_unique
    blocks = "x".join(map(str, geom.local_shape))
    over = ", ".join(copied_over(layout))
    if n == unique:
        return (
            f"{prefix}: 1 device holds the whole tensor"
            if n == 1
            else f"{prefix}: {n} devices, {n} distinct {blocks} blocks"
        )
    if unique == 1:
        return f"{prefix}: all {n} devices hold the whole tensor (copied over {over})"
    return f"{prefix}: {unique} distinct {blocks} blocks, each on {n // unique} devices (copied over {over})"


def short_finding(geom: ShardGeometry, prefix: str) -> str:
    """The finding in a few words, over one small axes: ``w (8, 8): 4 blocks x 2 copies``."""
    copies, s = geom.num_devices // geom.num_unique, "s" * (geom.num_unique > 1)
    if copies == 1:
        return f"{prefix}: {geom.num_unique} distinct block{s}"
    return f"{prefix}: {geom.num_unique} block{s} x {copies} copies"


# ---- geometry -----------------------------------------------------------------------------

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
    need = (text_width_pt(str(size), TICK_SIZE) + 6) if across else 3.0 * TICK_SIZE
    step = max(1, math.ceil(need / (length_pt / shards)))
    edges = list(range(0, size + 1, local * step))
    return tuple(
        edges if edges[-1] == size else [*edges[:-1], size] if size - edges[-1] < local * step / 2 else [*edges, size]
    )


def _panel_size(shape, layout, faceted) -> tuple[float, float]:
    """The panel's (width, height) in inches: the tensor's aspect within limits; along a
    mesh dim of more than 4 devices, wide enough for one turned line per block column;
    tall enough for the y axis's name on one line (``axis_label``)."""
    if len(shape) == 1:
        return 6.4, 0.9
    a = min(max(shape[-2] / shape[-1], 0.2), 2.5)
    base, tall = (2.2, 2.0) if faceted else (4.4, 5.0)
    w, h = (base, base * a) if base * a <= tall else (tall / a, tall)
    if not faceted:
        w = max(w, COLUMN_IN * max(layout.mesh.dim_sizes))
        h = max(h, 0.3 * layout.num_shards(len(shape) - 2))
    need = text_width_pt(dim_text(layout, len(shape) - 2, short=True), LABEL_SIZE) / 72 + 0.1
    return round(w, 3), round(max(h, need), 3)


def axis_label(layout: LayoutSpec, dim: int, length_in: float) -> str:
    """``dim_text`` on one line along an axis ``length_in`` long: in full when it fits,
    else short."""
    text = dim_text(layout, dim)
    return text if text_width_pt(text, LABEL_SIZE) <= length_in * 72 else dim_text(layout, dim, short=True)


def _fits(text, fs, w, h, rotation) -> bool:
    if rotation:
        w, h = h, w
    return text_width_pt(text, fs) <= w - 2 * PAD and 1.25 * fs <= h - 2 * PAD


def label_blocks(blocks: Sequence[Block], names: Sequence[str], px: float, py: float) -> list[Block]:
    """The blocks labelled on one line in the first way that fits them all (most explicit
    form first, upright before turned, larger before smaller type), else each in the first
    way that fits it, else unlabelled. ``px``, ``py``: points per element."""
    candidates = [(form, rot, fs) for form in range(3) for rot in (0, 90) for fs in (LABEL_SIZE, NOTE_SIZE)]

    def label(b, form, rot, fs) -> tuple[str, float, int] | None:
        text = device_forms(b.devices, names)[form]
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
        "devices on the mesh, coloured by the block they hold"
        + (f" (k = {mesh.short_device_names[0].rsplit(':', 1)[0]}:k)" if bare_ids(texts) else ""),
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
        out += "; panels: " + " x ".join(dim_text(layout, d, short=True) for d in sorted(picks))
    if collapsed:
        sizes = "x".join(str(geom.global_shape[d]) for d in collapsed)
        out += f"; dim{'s' * (len(collapsed) > 1)} {', '.join(map(str, collapsed))} ({sizes}) drawn once"
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
    omitted = sum(not b.label for bl in labelled for b in bl)
    notes = [ids_text(names)] if bare_ids(b.label for bl in labelled for b in bl) else []  # the key says its own
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
        1.1 * text_width_pt(title, SUPTITLE_SIZE) / 72 + 0.8,
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
