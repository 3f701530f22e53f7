"""Geometry and words of the layout view: blocks in tensor elements (y downwards), boxes in inches."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterable, Sequence

from ...geometry import ShardGeometry, shard_geometry
from ...specs import UNSHARDED, LayoutSpec
from ..core.style import BLOCK_COLORS, LABEL_SIZE, NOTE_SIZE, SUPTITLE_SIZE, TICK_SIZE, WIDTH, block_styles
from .communication import device_positions
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
    """``0,4`` for a few devices; runs of three or more as ``0-3``."""
    runs: list[list[int]] = []
    for d in devices:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ",".join(f"{a}" if a == b else f"{a},{b}" if b == a + 1 else f"{a}-{b}" for a, b in runs)


def device_forms(devices: Sequence[int], names: Sequence[str]) -> tuple[str, str]:
    """A replica group's names as ``plot_shards`` writes them (``CPU:0,4``, ``CPU:0-3``), else bare ids ``0,4``."""
    heads = {names[d].rsplit(":", 1)[0] for d in devices}
    ids = [names[d].rsplit(":", 1)[-1] for d in devices]
    if len(heads) != 1 or not all(i.isdigit() for i in ids):
        return ",".join(names[d] for d in devices), ",".join(map(str, devices))
    return f"{heads.pop()}:" + compact_devices(int(i) for i in ids), ",".join(map(str, devices))


def bare_ids(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` names devices by bare id (``0,16``)."""
    return any(t and all(ch.isdigit() or ch in ",\n" for ch in t) for t in texts)


def ids_text(names: Sequence[str]) -> str:
    return f"the numbers are device ids (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})"


def dim_text(layout: LayoutSpec, dim: int) -> str:
    """A tensor dim as every layout picture words it: ``dim 1 — over 'model' (4)`` or ``dim 0 — not sharded``."""
    spec = layout.sharding_specs[dim]
    how = "not sharded" if spec == UNSHARDED else f"over '{spec}' ({layout.mesh.dim_size(spec)})"
    return f"dim {dim} — {how}"


def mesh_dim_role(layout: LayoutSpec, mesh_dim: str) -> str:
    """What a mesh dim does to the tensor: ``model: cuts tensor dim 1 (4 ways)``, ``batch: unused -> 2 copies``."""
    size = layout.mesh.dim_size(mesh_dim)
    if mesh_dim in layout.sharding_specs:
        return f"{mesh_dim}: cuts tensor dim {layout.sharding_specs.index(mesh_dim)} ({size} ways)"
    return f"{mesh_dim}: unused -> " + (f"{size} copies" if size > 1 else "no copies (size 1)")


def copies_text(layout: LayoutSpec) -> str:
    """Where the copies come from, one role per mesh dim (unused dims first)."""
    dims = layout.mesh.dim_names
    unused = [d for d in dims if d not in layout.sharding_specs]
    return "mesh dims: " + " · ".join(mesh_dim_role(layout, d) for d in unused + [d for d in dims if d not in unused])


def finding_text(geom: ShardGeometry, layout: LayoutSpec, prefix: str) -> str:
    """The layout figure's title: how many distinct blocks, on how many devices, copied over which mesh dims."""
    n, unique = geom.num_devices, geom.num_unique
    blocks = "x".join(map(str, geom.local_shape))
    mesh = layout.mesh
    over = ", ".join(d for d in mesh.dim_names if d not in layout.sharding_specs and mesh.dim_size(d) > 1)
    if n == 1:
        return f"{prefix}: 1 device holds the whole tensor"
    if n == unique:
        return f"{prefix}: {n} devices, {n} distinct {blocks} blocks"
    if unique == 1:
        return f"{prefix}: all {n} devices hold the whole tensor (copied over {over})"
    return f"{prefix}: {unique} distinct {blocks} blocks, each on {n // unique} devices (copied over {over})"


Color = str | tuple[float, float, float]
MAX_FACETS = {3: (12,), 4: (4, 4)}  # panels per leading dim, by tensor rank
PAD = 2.0  # points kept free around a label inside its block
COLUMN_IN = 0.22  # inches per block column along a long mesh dim: one turned line of note-size text


@dataclasses.dataclass(frozen=True)
class Block:
    """One replica group's block in one panel: ``rect`` (x, y, w, h) in elements, looks, label."""

    group: int
    devices: tuple[int, ...]
    slices: tuple[slice, ...]
    rect: tuple[float, float, float, float]
    color: Color
    text_color: str
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


@dataclasses.dataclass(frozen=True)
class MeshKey:
    """The devices drawn as the mesh (rows and columns its last two dims), each in its block's colour."""

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
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]
    panels: tuple[Panel, ...]
    key: MeshKey | None  # None: one copy per block (the key would repeat the panel)


def block_colors(geom: ShardGeometry) -> tuple[Color, ...]:
    """Each replica group's colour: ``block_styles`` (one round, no hatch), past ``BLOCK_COLORS`` ``mesh_colors``."""
    if geom.num_unique <= len(BLOCK_COLORS):
        return tuple(c for c, _, _ in block_styles(geom))
    return mesh_colors(geom)


def pick_indices(size: int, shards: int, limit: int) -> tuple[int, ...]:
    """At most ``limit`` indices of a leading dim, the first of every shard first."""
    if size <= limit:
        return tuple(range(size))
    local = size // shards
    starts = [k * local for k in range(shards)]
    if shards >= limit:
        return tuple(sorted({starts[round(k * (shards - 1) / (limit - 1))] for k in range(limit)}))
    return tuple(sorted([s + off for off in range(local) for s in starts][:limit]))


def boundary_ticks(size: int, shards: int, length_pt: float, across: bool) -> tuple[int, ...]:
    """Every block boundary when the ticks stand apart on an axis ``length_pt`` long, else every k-th."""
    local = size // shards
    need = (text_width_pt(str(size), TICK_SIZE) + 6) if across else 3.0 * TICK_SIZE
    step = max(1, math.ceil(need / (length_pt / shards)))
    edges = list(range(0, size + 1, local * step))
    return tuple(
        edges if edges[-1] == size else [*edges[:-1], size] if size - edges[-1] < local * step / 2 else [*edges, size]
    )


def _panel_size(shape, layout, faceted) -> tuple[float, float]:
    """The panel's (width, height) in inches: the tensor's aspect within limits, room for labels."""
    if len(shape) == 1:
        return 6.4, 0.9
    a = min(max(shape[-2] / shape[-1], 0.2), 2.5)
    base, tall = (2.2, 2.0) if faceted else (4.4, 5.0)
    w, h = (base, base * a) if base * a <= tall else (tall / a, tall)
    if not faceted:
        w = max(w, COLUMN_IN * max(layout.mesh.dim_sizes))
        h = max(h, 0.3 * layout.num_shards(len(shape) - 2))
    need = text_width_pt(dim_text(layout, len(shape) - 2), LABEL_SIZE) / 72 + 0.1
    return round(w, 3), round(max(h, need), 3)


def _fits(text, fs, w, h, rotation) -> bool:
    if rotation:
        w, h = h, w
    return text_width_pt(text, fs) <= w - 2 * PAD and 1.25 * fs <= h - 2 * PAD


def label_blocks(blocks: Sequence[Block], names: Sequence[str], px: float, py: float) -> list[Block]:
    """The blocks labelled in the first way that fits them all (explicit, upright, large first), else each in its
    first that fits; small turned text last, the hardest to read. ``px``, ``py``: points per element."""
    sizes = {0: (LABEL_SIZE, NOTE_SIZE), 90: (LABEL_SIZE,)}
    candidates = [(form, rot, fs) for form in range(2) for rot in (0, 90) for fs in sizes[rot]]
    candidates += [(form, 90, NOTE_SIZE) for form in range(2)]

    def label(b, form, rot, fs) -> tuple[str, float, int] | None:
        text = device_forms(b.devices, names)[form]
        return (text, fs, rot) if _fits(text, fs, b.rect[2] * px, b.rect[3] * py, rot) else None

    def first(b) -> tuple[str, float, int]:
        return next((x for c in candidates if (x := label(b, *c))), ("", NOTE_SIZE, 0))

    shared = next((c for c in candidates if all(label(b, *c) for b in blocks)), None)
    chosen = [first(b) for b in blocks] if shared is None else [label(b, *shared) or first(b) for b in blocks]
    return [dataclasses.replace(b, label=t, fontsize=fs, rotation=r) for b, (t, fs, r) in zip(blocks, chosen)]


def _blocks(geom: ShardGeometry, index, colors) -> list[Block]:
    """The blocks meeting the panel at leading indices ``index``."""
    out = []
    for g, devices in enumerate(geom.replica_groups):
        sl = geom.blocks[devices[0]]
        if any(not (s.start <= i < s.stop) for s, i in zip(sl, index)):
            continue
        x, w = sl[-1].start, sl[-1].stop - sl[-1].start
        y, h = (sl[-2].start, sl[-2].stop - sl[-2].start) if len(sl) >= 2 else (0, 1)
        out.append(Block(g, devices, sl, (x, y, w, h), colors[g], text_color_for(colors[g])))
    return out


def _mesh_key(layout: LayoutSpec, geom: ShardGeometry, colors, width: float) -> MeshKey:
    mesh, n, ncols = layout.mesh, layout.mesh.num_devices, layout.mesh.dim_sizes[-1]
    centres, rows, (_, nrows) = device_positions(mesh, gap=0.4)
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
    cells = []
    for d, (x, y) in enumerate(centres):
        color = colors[geom.group_of[d]]
        cells.append(KeyCell(d, (x - 0.5, y - 0.5, 1, 1), color, text_color_for(color), texts[d], fs))
    return MeshKey(
        (0.0, 0.0, cell * ncols, cell * nrows),
        tuple(cells),
        (0, ncols),
        (nrows, 0),
        tuple((i + 0.5, str(i)) for i in range(ncols)),
        rows,
        f"mesh dim {mesh.dim_names[-1]}",
        "devices on the mesh, coloured by the block they hold"
        + (f" (k = {mesh.short_device_names[0].rsplit(':', 1)[0]}:k)" if bare_ids(texts) else ""),
    )


def _facets(shape, layout):
    """``(picks, indices, ncols, collapsed)``: the facets of the leading dims (unsharded ones drawn once)."""
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
        out += "; panels: " + " x ".join(dim_text(layout, d) for d in sorted(picks))
    if collapsed:
        sizes = "x".join(str(geom.global_shape[d]) for d in collapsed)
        out += f"; dim{'s' * (len(collapsed) > 1)} {', '.join(map(str, collapsed))} ({sizes}) drawn once"
    return out


def layout_picture(
    shape: Sequence[int],
    layout: LayoutSpec,
    *,
    name: str | None = None,
    note: str | None = None,
) -> LayoutPicture:
    """Everything ``plot_layout`` draws: panels, labelled blocks, mesh key, texts and boxes (inches)."""
    geom = shard_geometry(shape, layout)
    shape, rank, names = geom.global_shape, len(geom.global_shape), layout.mesh.short_device_names
    picks, indices, ncols, collapsed = _facets(shape, layout)
    faceted = bool(picks)
    pw, ph = _panel_size(shape, layout, faceted)
    gx, gy = (0.45, 0.8) if faceted else (0.0, 0.0)
    if ncols * pw + (ncols - 1) * gx > WIDTH - 1.3:
        scale = (WIDTH - 1.3 - (ncols - 1) * gx) / (ncols * pw)
        pw, ph = pw * scale, ph * scale
    yrange = shape[-2] if rank >= 2 else 1
    colors = block_colors(geom)
    labelled = [label_blocks(_blocks(geom, i, colors), names, pw * 72 / shape[-1], ph * 72 / yrange) for i in indices]
    prefix = f"{name + ' ' if name else ''}{shape}"
    title = finding_text(geom, layout, prefix)
    subtitle = _subtitle(geom, layout, picks, collapsed)
    nrows = math.ceil(len(indices) / ncols)
    grid_w, grid_h = ncols * pw + (ncols - 1) * gx, nrows * ph + (nrows - 1) * gy
    key = None if geom.num_devices == geom.num_unique else _mesh_key(layout, geom, colors, min(5.5, max(grid_w, 3.0)))
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
        2 * 0.75 + grid_w,  # the grid centred, its tick labels and y label in the left margin
        1.1 * text_width_pt(title, SUPTITLE_SIZE) / 72 + 0.8,
        text_width_pt(subtitle, 10) / 72 + 0.3,
        text_width_pt(note_line, NOTE_SIZE) / 72 + 0.3,
        (key.box[2] + 2 * key_tick_w + 0.6) if key else 0,
        5.2,
    ]
    fig_w = round(min(WIDTH, max(widths)), 3)
    x0 = (fig_w - grid_w) / 2  # the grid on the figure's centre line, as the titles and the key
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
                dim_text(layout, rank - 1) if k + ncols >= len(indices) else "",
                dim_text(layout, rank - 2) if rank >= 2 and c == 0 else "",
                tuple(blocks),
            )
        )
    if key:
        key = dataclasses.replace(key, box=((fig_w - key.box[2]) / 2, 0.55, key.box[2], key.box[3]))
    return LayoutPicture(geom, title, subtitle, note_line, (fig_w, round(fig_h, 3)), tuple(panels), key)
