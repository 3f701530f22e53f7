"""Pure label fitting for the mesh layout view: which device names fit in a block.

A block is labelled with every device holding a copy of it, in the most explicit form
that fits (``label_forms``: full names, JAX's ``CPU 0-3`` style, ``d0-d3``, the
shortest, the bare ids ``0,16``), upright or turned, at a font size from ``LABEL_SIZE``
down to ``MIN_FONT`` (``NOTE_SIZE``; never smaller: no label rather than an unreadable one); one form
and size for every block of a panel where they can share one (``label_blocks``). Text
is measured with fixed per-character widths, slightly generous, so no renderer is
needed::

    >>> label_forms((0, 1, 2, 3), ["CPU:0", "CPU:1", "CPU:2", "CPU:3"])[1]
    (['CPU 0-3'], '')
    >>> shortest_devices(range(0, 16, 2))
    'd0,d2..d14'
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ...specs import UNSHARDED
from ..core.style import LABEL_SIZE, NOTE_SIZE, SUBTITLE_SIZE, SUPTITLE_SIZE, TICK_SIZE, WIDTH

if TYPE_CHECKING:
    from ...geometry import ShardGeometry
    from ...specs import LayoutSpec
    from .layout_geometry import Block

MIN_FONT = NOTE_SIZE  # 8.5 pt: 11.8 px as displayed (``style``'s smallest text)
PAD = 2.0  # points kept free around a label inside its block
MAX_LINES = 2  # lines of a block label that read at a glance (more only when nothing else fits)


# ---- text measures (DejaVu Sans, matplotlib's default; slightly generous) ----------


def text_width_pt(text: str, fontsize: float) -> float:
    return fontsize * sum(
        0.36 if ch in ",.:;'| " else 0.45 if ch in "[]()-=" else 0.74 if ch.isupper() or ch in "mw" else 0.64
        for ch in text
    )


def text_height_pt(n_lines: int, fontsize: float) -> float:
    return 1.25 * n_lines * fontsize


def slice_text(slices: Iterable[slice]) -> str:
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in slices) + "]"


# ---- device labels ------------------------------------------------------------------


def compact_devices(devices: Iterable[int]) -> str:
    """``d0,d4`` for a few devices; runs of three or more as ``d0-d3``."""
    runs: list[list[int]] = []
    for d in devices:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    parts = []
    for a, b in runs:
        parts.append(f"d{a}" if a == b else f"d{a},d{b}" if b == a + 1 else f"d{a}-d{b}")
    return ",".join(parts)


def shortest_devices(devices: Iterable[int]) -> str:
    """The shortest form: ``d0,d2..d14`` for evenly spaced devices, else ``d3+7``."""
    devices = list(devices)
    if len(devices) <= 2:
        return compact_devices(devices)
    steps = {b - a for a, b in zip(devices, devices[1:])}
    if len(steps) == 1:
        return compact_devices(devices) if steps == {1} else f"d{devices[0]},d{devices[1]}..d{devices[-1]}"
    return f"d{devices[0]}+{len(devices) - 1}"


def _wrap(tokens, sep, width, fontsize) -> list[str]:
    lines, cur = [], ""
    for t in tokens:
        trial = f"{cur}{sep}{t}" if cur else t
        if cur and text_width_pt(trial, fontsize) > width:
            lines.append(cur + sep.rstrip())
            cur = t
        else:
            cur = trial
    return lines + [cur]


def _fit(tokens, sep, fontsize, w_pt, h_pt, rotation=0):
    """The label text if ``tokens`` fit the box at ``fontsize`` (wrapped), else None."""
    if rotation and h_pt <= w_pt:
        return None  # rotate only in blocks taller than wide
    w, h = (h_pt, w_pt) if rotation else (w_pt, h_pt)
    w, h = w - 2 * PAD, h - 2 * PAD
    lines = _wrap(tokens, sep, w, fontsize)
    if max(text_width_pt(s, fontsize) for s in lines) <= w and text_height_pt(len(lines), fontsize) <= h:
        return "\n".join(lines)
    return None


# (label form, rotation, font sizes), tried in order: full names upright, then compact
# upright, then rotated, then smaller; the first that fits every block of a panel wins.
_SIZES = (LABEL_SIZE, TICK_SIZE, NOTE_SIZE)
_ATTEMPTS = [
    (0, 0, _SIZES),
    (1, 0, _SIZES),
    (0, 90, _SIZES),
    (1, 90, _SIZES),
    (2, 0, _SIZES),
    (2, 90, _SIZES),
    (3, 0, _SIZES),
    (3, 90, _SIZES),
    (4, 0, _SIZES),
    (4, 90, _SIZES),
]


def jax_devices(devices: Sequence[int], names: Sequence[str]) -> list[str]:
    """Tokens of ``CPU 0,8,16`` (as JAX's ``visualize_array_sharding`` lists replicas;
    runs of three or more as ``0-3``), each with its trailing comma, for wrapping."""
    heads = {names[d].rsplit(":", 1)[0] for d in devices}
    ids = [names[d].rsplit(":", 1)[-1] for d in devices]
    if len(heads) != 1 or not all(i.isdigit() for i in ids):
        return [names[d] + "," for d in devices[:-1]] + [names[devices[-1]]]
    parts = compact_devices([int(i) for i in ids]).replace("d", "").split(",")
    tokens = [p + "," for p in parts[:-1]] + [parts[-1]]
    tokens[0] = f"{heads.pop()} {tokens[0]}"
    return tokens


def label_forms(devices: Sequence[int], names: Sequence[str]) -> list[tuple[list[str], str]]:
    """Label forms of a replica group, most to least explicit: (tokens, separator)."""
    compact = compact_devices(devices)
    return [
        ([names[d] for d in devices], ", "),
        (jax_devices(devices, names), ""),
        ([t + "," for t in compact.split(",")[:-1]] + [compact.split(",")[-1]], ""),
        ([shortest_devices(devices)], ""),
        ([f"{d}," for d in devices[:-1]] + [str(devices[-1])], ""),
    ]


# ---- labelling a panel's blocks -------------------------------------------------------


def label_blocks(
    blocks: Sequence[Block],
    names: Sequence[str],
    size_pt: tuple[float, float],
    xrange: float,
    yrange: float,
    rotate: bool = True,
) -> list[Block]:
    """Label the blocks (``layout_geometry.Block``) with one form and font size that fits
    them all (else, block by block, the first that fits; no label where nothing does).
    ``size_pt`` is the panel's (width, height) in points, spanning ``xrange`` x
    ``yrange`` elements. ``rotate=False``: upright labels only."""
    px, py = size_pt[0] / xrange, size_pt[1] / yrange

    def box_pt(b):
        return b.rect[2] * px, b.rect[3] * py

    candidates = [(form, rot, fs) for form, rot, sizes in _ATTEMPTS for fs in sizes if rotate or not rot]
    if any(len(b.devices) > 2 for b in blocks):  # many copies: "CPU 0-3" reads before a list
        candidates.sort(key=lambda c: c[0] != 1)
    forms = [label_forms(b.devices, names) for b in blocks]
    chosen = None
    # labels of one or two lines read at a glance: a later form that fits in two lines
    # beats an earlier one stacked three or four deep
    for max_lines in (MAX_LINES, None):
        for form, rot, fs in candidates:
            fits = [_fit(*f[form], fs, *box_pt(b), rot) for b, f in zip(blocks, forms)]
            if all(fits) and (max_lines is None or max(t.count("\n") + 1 for t in fits if t) <= max_lines):
                chosen = [((text, rot), fs) for text in fits]
                break
        if chosen is not None:
            break
    if chosen is None:
        chosen = [
            next(
                (((text, rot), fs) for form, rot, fs in candidates if (text := _fit(*f[form], fs, *box_pt(b), rot))),
                (("", 0), MIN_FONT),
            )
            for b, f in zip(blocks, forms)
        ]
    fs_detail = max(MIN_FONT, min(s for _, s in chosen) - 1)

    def detail_fits(b, fit, fs):
        w, h = box_pt(b)
        text = slice_text(b.slices)
        lines = fit[0].count("\n") + 1
        # label above the centre line, slices below it: each gets half the block
        return (
            fit[1] == 0
            and text_width_pt(text, fs_detail) <= w - 2 * PAD
            and 2 * max(text_height_pt(lines, fs), text_height_pt(1, fs_detail)) <= h - 2 * PAD
        )

    with_detail = all(detail_fits(b, f, fs) for b, (f, fs) in zip(blocks, chosen) if f[0])
    out = []
    for b, ((text, rotation), fs) in zip(blocks, chosen):
        x, y, w, h = b.rect
        out.append(
            dataclasses.replace(
                b,
                label=text,
                fontsize=fs,
                rotation=rotation,
                label_xy=(x + w / 2, y + h / 2),
                detail=slice_text(b.slices) if with_detail and text else "",
            )
        )
    return out


# ---- the layout figure's header ---------------------------------------------------------


def dim_text(layout: LayoutSpec, dim: int, two_lines: bool = False) -> str:
    """``tensor dim 1 — sharded over 'model' (4)``, or ``not sharded`` (each block spans
    the dim whole). Copies come from mesh dims, not tensor dims: see ``mesh_dim_role``."""
    spec = layout.sharding_specs[dim]
    how = "not sharded" if spec == UNSHARDED else f"sharded over '{spec}' ({layout.mesh.dim_size(spec)})"
    return f"tensor dim {dim}" + ("\n" if two_lines else " — ") + how


def coord_ticks(
    layout: LayoutSpec, dim: int, size: int, length_pt: float, across: bool
) -> tuple[tuple[tuple[float, str], ...], str]:
    """The mesh coordinate of each block along tensor dim ``dim`` (``size`` long, drawn
    ``length_pt`` points): ``((centre, "batch=0"), ...)`` and a label for the axis
    ("" when each tick names its mesh dim). ``across``: the labels run across the
    axis (x), so a long form that does not fit a block falls back to the bare index;
    too many blocks for their labels: every k-th block. Unsharded: ``((), "")``.

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("batch", "model"), MeshSpec.create({"batch": 2, "model": 16}))
    >>> coord_ticks(spec, 0, 8, 300, False)[0], coord_ticks(spec, 1, 32, 300, True)[1]
    (((2.0, 'batch=0'), (6.0, 'batch=1')), "mesh coordinate along 'model'")
    """
    mesh_dim = layout.sharding_specs[dim]
    if mesh_dim == UNSHARDED:
        return (), ""
    k = layout.mesh.dim_size(mesh_dim)
    block_pt, long = length_pt / k, f"{mesh_dim}={k - 1}"
    need = text_width_pt(long, NOTE_SIZE) + 4 if across else 1.4 * NOTE_SIZE
    short = across and need > block_pt
    if short:
        need = text_width_pt(str(k - 1), NOTE_SIZE) + 4
    step = max(1, math.ceil(need / block_pt))
    ticks = tuple(((i + 0.5) * size / k, str(i) if short else f"{mesh_dim}={i}") for i in range(0, k, step))
    return ticks, (f"mesh coordinate along '{mesh_dim}'" if short else "")


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


def _wrap_text(text: str, fontsize: float, width_in: float = WIDTH - 0.4) -> str:
    """``text`` broken between words into lines at most ``width_in`` wide at ``fontsize``."""
    out = []
    for part in text.split("\n"):
        out += _wrap(part.split(" "), " ", width_in * 72, fontsize) if part else [""]
    return "\n".join(line.rstrip() for line in out)


def collapsed_text(shape: Sequence[int], collapsed: Sequence[int]) -> str:
    """The note of leading dims drawn once: ``3x3 taps (tensor dims 0, 1: not sharded),
    each laid out alike: one panel shows them all``."""
    if not collapsed:
        return ""
    sizes = "x".join(str(shape[d]) for d in collapsed)
    what = "taps" if len(collapsed) == 2 else "slices"
    dims = ", ".join(map(str, collapsed))
    return (
        f"{sizes} {what} (tensor dim{'s' * (len(collapsed) > 1)} {dims}: not sharded), "
        "each laid out alike: one panel shows them all"
    )


def copied_over(layout: LayoutSpec) -> tuple[str, ...]:
    """The mesh dims (of size > 1) the layout does not use: the devices along them hold
    the same block, so they are where every copy comes from."""
    return tuple(d for d in layout.mesh.dim_names if d not in layout.sharding_specs and layout.mesh.dim_size(d) > 1)


def finding_text(geom: ShardGeometry, layout: LayoutSpec, prefix: str) -> str:
    """The title's finding: how many devices hold how many distinct blocks and, with
    replicas, on how many devices each block lives and over which mesh dims it is copied
    (a second line when one line would be wider than ``style.WIDTH``).

    >>> from dtsgd_viz.geometry import shard_geometry
    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> print(finding_text(shard_geometry((8, 8), spec), spec, "c (8, 8)"))
    c (8, 8): 8 devices hold 4 distinct 8x2 blocks:
    each on 2 devices (copied over batch)
    """
    n, unique = geom.num_devices, geom.num_unique
    copies = n // unique
    blocks = "x".join(map(str, geom.local_shape))
    over = ", ".join(copied_over(layout))
    if copies == 1:
        if unique == 1:
            return f"{prefix}: 1 device holds the whole tensor"
        return f"{prefix}: {n} devices, {n} distinct {blocks} blocks"
    if unique == 1:
        head, tail = f"{prefix}:", f"all {n} devices hold the whole tensor (copied over {over})"
    else:
        head = f"{prefix}: {n} devices hold {unique} distinct {blocks} blocks:"
        tail = f"each on {copies} devices (copied over {over})"
    # bold type is about 10% wider than ``text_width_pt`` measures
    one = f"{head} {tail}"
    return one if 1.1 * text_width_pt(one, SUPTITLE_SIZE) <= (WIDTH - 0.4) * 72 else f"{head}\n{tail}"


def short_finding(geom: ShardGeometry, prefix: str) -> str:
    """The finding in a few words, for a title over one small axes (``plot_layout(ax=)``):
    ``w (8, 8): 4 blocks x 2 copies``, ``w (8, 8): 8 distinct blocks``."""
    copies = geom.num_devices // geom.num_unique
    if copies == 1:
        return f"{prefix}: {geom.num_unique} distinct block{'s' * (geom.num_unique > 1)}"
    return f"{prefix}: {geom.num_unique} block{'s' * (geom.num_unique > 1)} x {copies} copies"


def header_text(
    geom: ShardGeometry,
    layout: LayoutSpec,
    name: str | None,
    title: str | None,
    picks: Mapping[int, Sequence[int]] | None = None,
    collapsed: Sequence[int] = (),
) -> tuple[str, str]:
    """The title (``title`` when given, else the finding: ``finding_text``) and the
    subtitle: the sharding and mesh, where the copies come from, what the panels index
    (``picks``: the faceted dims) and which leading dims are drawn once (``collapsed``),
    wrapped to ``style.WIDTH``."""
    shape, mesh = geom.global_shape, layout.mesh
    picks = picks or {}
    spec_text = "[" + ", ".join(layout.sharding_specs) + "]"
    copies = geom.num_devices // geom.num_unique
    prefix = f"{name + ' ' if name else ''}{shape}"
    title = title or finding_text(geom, layout, prefix)
    # the title already counts the blocks and copies; the subtitle gives the settings
    subtitle = f"sharding {spec_text} on {mesh}" + (" · 1 copy of each block" if copies == 1 else "")
    subtitle += f"\n{copies_text(layout)}"
    faceted = sorted(picks)
    if len(faceted) == 1:
        subtitle += f"\npanels: one per index of {dim_text(layout, faceted[0])}"
    elif len(faceted) == 2:
        subtitle += f"\npanel rows: {dim_text(layout, 0)}; panel columns: {dim_text(layout, 1).replace('tensor ', '')}"
    if collapsed:
        subtitle += "\n" + collapsed_text(shape, collapsed)
    return title, _wrap_text(subtitle, SUBTITLE_SIZE)


def bare_ids(texts: Iterable[str]) -> bool:
    """Whether any of the label ``texts`` names devices by bare id (``0,16``), which only a
    note can say are device ids."""
    return any(t and all(ch.isdigit() or ch in ",\n" for ch in t) for t in texts)


def ids_text(names: Sequence[str]) -> str:
    """``the numbers are device ids (0 = CPU:0, ..., 7 = CPU:7)``: on the blocks and the key."""
    return f"the numbers are device ids (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})"


def note_text(
    geom: ShardGeometry,
    picks: Mapping[int, Sequence[int]] | None,
    labelled: Sequence[Sequence[Block]],
    names: Sequence[str] | None = None,
    extra: str | None = None,
) -> tuple[str, int]:
    """What the panels leave out (indices of long leading dims, blocks, labels), when
    ``names`` is given, that bare numbers are device ids, and last the caller's ``extra``
    (e.g. the bytes per device): ``(note, number of blocks left unlabelled)``."""
    shape = geom.global_shape
    notes = [ids_text(names)] if names else []
    notes += [
        f"showing indices {', '.join(map(str, p))} of {shape[d]} along tensor dim {d}"
        for d, p in sorted((picks or {}).items())
        if len(p) < shape[d]
    ]
    if len(notes) > bool(names):
        missing = geom.num_unique - len({b.group for blocks in labelled for b in blocks})
        notes.append("every block appears" if not missing else f"{missing} block(s) not shown (see layout_table)")
    omitted = sum(1 for blocks in labelled for b in blocks if not b.label)
    if omitted:
        notes.append(f"{omitted} label(s) left out for lack of room (see layout_table)")
    if extra:
        notes.append(extra)
    return _wrap_text("; ".join(notes), NOTE_SIZE), omitted
