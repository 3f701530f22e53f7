"""Pure geometry of the communication view: where each device sits, the line or loop
joining each group of devices that reduce together, and every panel's place and text
(no TensorFlow, no drawing; ``views.mesh.communication`` only draws what this returns).

Devices sit on a grid in cell units, y growing downwards: columns are the last mesh
dim, rows the one before, and each index of the dims before those is a facet, side by
side. One panel per set of mesh dims the traffic runs along (``traffic.dim_sets``)::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> plan = communication_plan({"w": ((8, 16), "float32", LayoutSpec(("unsharded", "model"), mesh))})
    >>> pic = communication_geometry(plan)
    >>> pic.title, [g.devices for g in pic.panels[0].groups]
    ('Each update all-reduces 128 B of gradient per device along batch', [(0, 4), (1, 5), (2, 6), (3, 7)])
    >>> pic.panels[0].groups[0].path
    ((0.5, 0.5), (0.5, 1.5))
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Sequence

import numpy as np
from numpy.typing import ArrayLike

from ...recording.communication import CommunicationPlan, CommunicationReport
from ...recording.memory import format_bytes
from ...specs import MeshSpec
from ..core.style import SUBTITLE_SIZE, SUPTITLE_SIZE
from .layout_labels import text_width_pt
from .traffic import (
    ACTIVATION_NOTE,
    dim_color,
    dim_sets,
    dims_text,
    headline,
    serves_lines,
    settings_text,
    traffic_items,
)

FACET_GAP = 0.8  # cells between facets
FACET_TOP = 0.9  # cells above the facets for their titles
MAX_WIDTH = 9.5  # inches: 950 px at the figure's 100 dpi
NODE_RADIUS = 0.33  # cells
TEXT_WIDTH = 3.3  # inches of text saying what a panel's traffic serves
GAP = 0.3  # inches between panels
LINE = 0.17  # inches per line of that text
FONT = {
    "title": SUPTITLE_SIZE,
    "subtitle": SUBTITLE_SIZE,
    "panel": 10,
    "lines": 9,
    "ticks": 8.5,
    "node": 9.5,
    "note": 8.5,
}  # points; at 100 dpi the smallest reads 11.8 px (style.NOTE_SIZE)


@dataclasses.dataclass(frozen=True)
class Facet:
    """One 2-D slice of a mesh of rank 3 or more: its box in cell units and its title."""

    rect: tuple[float, float, float, float]  # x, y (top), w, h
    title: str


def device_positions(mesh: MeshSpec) -> tuple[np.ndarray, tuple[Facet, ...], tuple[float, float]]:
    """``(centres, facets, extent)``: each device's centre (x, y) in cell units (mesh
    device order); one ``Facet`` per index of the dims before the last two (none for a
    mesh of rank 1 or 2); the width and height of the whole grid."""
    sizes, names = mesh.dim_sizes, mesh.dim_names
    cols, rows = sizes[-1], (sizes[-2] if len(sizes) >= 2 else 1)
    lead = sizes[:-2]
    nf = math.prod(lead)
    fcols = lead[1] if len(lead) == 2 and lead[1] <= 4 else min(nf, 4)
    top = FACET_TOP if lead else 0.0
    origins, facets = [], []
    for f in range(nf):
        fr, fc = divmod(f, fcols)
        x0, y0 = fc * (cols + FACET_GAP), top + fr * (rows + FACET_GAP + top)
        origins.append((x0, y0))
        if lead:
            idx = np.unravel_index(f, lead)
            facets.append(Facet((x0, y0, cols, rows), ", ".join(f"{n}={int(i)}" for n, i in zip(names, idx))))
    centres = np.zeros((mesh.num_devices, 2))
    for d in range(mesh.num_devices):
        c = mesh.device_coords(d)
        x0, y0 = origins[int(np.ravel_multi_index(c[:-2], lead)) if lead else 0]
        centres[d] = (x0 + c[-1] + 0.5, y0 + (c[-2] if len(c) >= 2 else 0) + 0.5)
    nfr, nfc = math.ceil(nf / fcols), min(nf, fcols)
    extent = (nfc * cols + (nfc - 1) * FACET_GAP, nfr * (rows + top) + (nfr - 1) * FACET_GAP)
    return centres, tuple(facets), extent


# ---- the line or loop of each group --------------------------------------------------------


def varying_dims(mesh: MeshSpec, group: Sequence[int]) -> tuple[int, ...]:
    """The mesh dims (indices) along which the devices of ``group`` differ."""
    coords = [mesh.device_coords(d) for d in group]
    return tuple(i for i in range(len(mesh.dim_sizes)) if len({c[i] for c in coords}) > 1)


def _snake(sizes) -> list[tuple[int, ...]]:
    """Every index of a grid of ``sizes``, each a neighbour of the one before: along the
    first dim, the grid of the other dims is walked forwards, then backwards, ..."""
    if not sizes:
        return [()]
    sub = _snake(sizes[1:])
    return [(v, *s) for v in range(sizes[0]) for s in (sub if v % 2 == 0 else sub[::-1])]


def snake_order(mesh: MeshSpec, group: Sequence[int]) -> tuple[int, ...]:
    """The group's devices in ring order: along the one dim they differ on, or, over
    several, back and forth (row by row, every other row reversed), so each step moves
    to a neighbour."""
    coords = {d: mesh.device_coords(d) for d in group}
    varying = varying_dims(mesh, group)
    values = [sorted({c[i] for c in coords.values()}) for i in varying]
    rank = {k: n for n, k in enumerate(_snake([len(v) for v in values]))}
    return tuple(sorted(group, key=lambda d: rank[tuple(v.index(coords[d][i]) for i, v in zip(varying, values))]))


def arc(p: ArrayLike, q: ArrayLike, bulge: float, n: int = 13) -> list[tuple[float, float]]:
    """A quadratic curve from ``p`` to ``q`` whose apex is ``bulge`` cells to the left
    of the chord p->q (y grows downwards: to the right as drawn)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    d = q - p
    normal = np.array([d[1], -d[0]]) / max(float(np.hypot(*d)), 1e-9)
    ctrl = (p + q) / 2 + 2 * bulge * normal
    t = np.linspace(0, 1, n)[:, None]
    pts = (1 - t) ** 2 * p + 2 * (1 - t) * t * ctrl + t**2 * q
    return [(round(float(x), 9), round(float(y), 9)) for x, y in pts]


@dataclasses.dataclass(frozen=True)
class GroupLine:
    """The devices of one group in ring order, their centres (``points``) and the
    drawn ``path``: straight between neighbouring cells, curved where it skips cells
    (each further curve along the same line bows further out). ``closed``: a loop, for
    a group spanning several mesh dims."""

    devices: tuple[int, ...]
    points: tuple[tuple[float, float], ...]
    path: tuple[tuple[float, float], ...]
    closed: bool


def _line_key(p, q):
    """The infinite line through p and q (unit direction, offset) and the hop's extent
    along it, to tell curves on one line apart."""
    d = np.subtract(q, p) / math.dist(p, q)
    if d[0] < -1e-9 or (abs(d[0]) <= 1e-9 and d[1] < 0):
        d = -d
    key = (round(float(d[0]), 6), round(float(d[1]), 6), round(float(p[0] * d[1] - p[1] * d[0]), 6))
    a, b = sorted((float(np.dot(p, d)), float(np.dot(q, d))))
    return key, a, b


def ring_order(
    mesh: MeshSpec, centres: np.ndarray | Sequence[Sequence[float]], group: Sequence[int]
) -> tuple[tuple[int, ...], bool]:
    """The group's devices in the order its line visits them, and whether it closes
    into a loop: where the devices fill a grid as drawn, row by row back and forth (a
    loop when that grid has two rows or more and columns); else ``snake_order``."""
    pos = {d: (float(centres[d][0]), float(centres[d][1])) for d in group}
    xs, ys = sorted({p[0] for p in pos.values()}), sorted({p[1] for p in pos.values()})
    if len(xs) * len(ys) == len(pos) == len(set(pos.values())):
        at: dict[tuple[int, ...], int] = {(ys.index(y), xs.index(x)): d for d, (x, y) in pos.items()}
        return tuple(at[k] for k in _snake([len(ys), len(xs)])), len(xs) > 1 and len(ys) > 1
    order = snake_order(mesh, group)
    return order, len(order) > 2 and len(varying_dims(mesh, order)) > 1


def group_lines(
    mesh: MeshSpec, centres: np.ndarray | Sequence[Sequence[float]], groups: Iterable[Sequence[int]]
) -> tuple[GroupLine, ...]:
    """One ``GroupLine`` per group (``centres``: ``device_positions``' first result). The
    curves of a line bow out of the grid (away from its centre); those of a loop all
    to one side of their direction, so that the loop reads as one."""
    middle = np.asarray(centres).mean(axis=0)
    seen: list[tuple[tuple, float, float]] = []
    out = []
    for group in groups:
        order, closed = ring_order(mesh, centres, group)
        pts = [(float(centres[d][0]), float(centres[d][1])) for d in order]
        path = [pts[0]]
        for p, q in list(zip(pts, pts[1:])) + ([(pts[-1], pts[0])] if closed else []):
            if math.dist(p, q) <= 1.0 + 1e-9:
                path.append(q)
                continue
            key, a, b = _line_key(p, q)
            slot = sum(1 for k, s, e in seen if k == key and s < b - 1e-9 and a < e - 1e-9)
            seen.append((key, a, b))
            bulge = 0.5 + 0.22 * slot
            if not closed and np.dot([q[1] - p[1], p[0] - q[0]], np.add(p, q) / 2 - middle) < 0:
                bulge = -bulge  # the left of p->q faces the centre: bow the other way
            path += arc(p, q, bulge)[1:]
        out.append(GroupLine(tuple(order), tuple(pts), tuple(path), closed))
    return tuple(out)


# ---- the picture ----------------------------------------------------------------------------


def wrap(text: str, width_pt: float, fontsize: float) -> list[str]:
    """``text`` broken at spaces into lines at most ``width_pt`` wide (a line's leading
    spaces are kept on its continuations)."""
    out = []
    for para in text.split("\n"):
        indent = para[: len(para) - len(para.lstrip(" "))]
        cur = ""
        for word in para.split(" "):
            if not word:
                continue
            trial = f"{cur} {word}" if cur else indent + word
            if cur and text_width_pt(trial, fontsize) > width_pt:
                out.append(cur)
                cur = indent + word
            else:
                cur = trial
        out.append(cur)
    return out


@dataclasses.dataclass(frozen=True)
class DimPanel:
    """The traffic along one set of mesh dims: its colour, bytes per device per update,
    the groups that reduce together, the title and the lines saying what it serves;
    in figure inches: ``box`` (left, bottom, width, height) of the grid, its title's
    left edge ``text_left`` (above the grid) and the top-left corner of the lines
    ``text_xy``."""

    mesh_dims: tuple[str, ...]
    color: str
    bytes_per_device: int
    groups: tuple[GroupLine, ...]
    title: str
    lines: tuple[str, ...]
    box: tuple[float, float, float, float] = (0.0, 0.0, 1.0, 1.0)
    text_left: float = 0.0
    text_xy: tuple[float, float] = (0.0, 0.0)

    @property
    def devices(self) -> frozenset[int]:
        return frozenset(d for g in self.groups for d in g.devices)


@dataclasses.dataclass(frozen=True)
class CommunicationPicture:
    """Everything ``plot_communication`` draws, computed. Positions are in cell units
    inside each panel (``centres``: mesh device order), boxes in figure inches."""

    mesh: MeshSpec
    centres: np.ndarray
    facets: tuple[Facet, ...]
    xlim: tuple[float, float]
    ylim: tuple[float, float]  # (bottom, top): y grows downwards
    node_labels: tuple[str, ...]
    xticks: tuple[tuple[float, str], ...]
    yticks: tuple[tuple[float, str], ...]
    xlabel: str
    ylabel: str
    panels: tuple[DimPanel, ...]
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]
    cell: float  # inches per cell


def _panels(obj, centres, max_items) -> list[DimPanel]:
    items, mesh = traffic_items(obj), obj.mesh
    out = []
    for dims in dim_sets(mesh, items):
        mine = [i for i in items if i.mesh_dims == dims]
        groups = tuple(dict.fromkeys(g for i in mine for g in i.groups))
        total = sum(i.bytes_per_device for i in mine)
        times = [i.time_us for i in mine if i.time_us is not None]
        title = f"along {dims_text(dims)}: {format_bytes(total)} per device" + (
            f" · {sum(times):.0f} us" if times else ""
        )
        out.append(
            DimPanel(
                dims,
                dim_color(mesh, dims),
                total,
                group_lines(mesh, centres, groups),
                title,
                serves_lines(mine, max_items),
            )
        )
    if not out:
        out.append(
            DimPanel(
                (),
                dim_color(mesh, ()),
                0,
                (),
                "nothing moves between devices",
                ("no collective along any mesh dim of size > 1",),
            )
        )
    return out


def _note(obj, max_items) -> str:
    parts = []
    if isinstance(obj, CommunicationPlan):
        parts.append(ACTIVATION_NOTE)
    names = obj.mesh.short_device_names
    parts.append(f"circles: devices in mesh order (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})")
    items = traffic_items(obj)
    if items:  # what a line means, in the figure (not only in the text beside it)
        verb = "all-reduce" if all(i.kind == "all-reduce" for i in items) else "run one collective"
        parts.append(f"lines: each joins one group of devices that {verb} together")
    return "\n".join(parts)


def _ticks(mesh, centres):
    """Column indices under the first row of every facet, row indices beside the first
    column: ``(xticks, yticks)`` as (position, label)."""
    coords = [mesh.device_coords(d) for d in range(mesh.num_devices)]
    xticks = sorted({(float(centres[d][0]), str(c[-1])) for d, c in enumerate(coords) if c[-2:-1] in ((0,), ())})
    yticks = sorted({(float(centres[d][1]), str(c[-2])) for d, c in enumerate(coords) if len(c) >= 2 and c[-1] == 0})
    return tuple(xticks), tuple(yticks)


def _limits(centres, facets, panels):
    """``(xlim, ylim)`` (cells; ylim top-down) holding every device, facet and its
    title, and every drawn path of every panel, so the panels share one scale."""
    pts = [np.asarray(centres) - NODE_RADIUS, np.asarray(centres) + NODE_RADIUS]
    for f in facets:
        x, y, w, h = f.rect
        pts.append(np.array([[x - 0.1, y - 0.65], [x + w + 0.1, y + h + 0.1]]))
    pts += [np.asarray(g.path) for p in panels for g in p.groups]
    allp = np.vstack(pts)
    (x0, y0), (x1, y1) = allp.min(axis=0) - 0.06, allp.max(axis=0) + 0.06
    return (float(x0), float(x1)), (float(y1), float(y0))


def _place(panels, extent, cell, left, header_h, note_h, fig_w):
    """Every panel's boxes (inches): the grid, its title above; what it serves beside
    the grid for a single panel that leaves room, else below it, panels side by side
    as they fit. Returns ``(panels, figure height)``."""
    grid_w, grid_h = extent[0] * cell, extent[1] * cell
    beside = len(panels) == 1 and left + grid_w + 0.4 + TEXT_WIDTH <= MAX_WIDTH - 0.3
    col_w = left + grid_w + 0.4 + TEXT_WIDTH if beside else max(left + grid_w + 0.15, TEXT_WIDTH)
    ncols = max(1, min(len(panels), int((MAX_WIDTH - 0.3 + GAP) // (col_w + GAP))))
    rows = [panels[i : i + ncols] for i in range(0, len(panels), ncols)]
    lines = [LINE * max(len(p.lines) for p in r) for r in rows]
    # under the grid: its tick labels and mesh dim name (~0.32 in), then the lines if below
    row_h = [0.35 + (max(grid_h + 0.32, n) if beside else grid_h + 0.5 + n) + 0.08 for n in lines]
    fig_h = header_h + sum(row_h) + note_h
    placed, top = [], fig_h - header_h
    for r, h in zip(rows, row_h):
        x = max(0.15, (fig_w - (len(r) * col_w + (len(r) - 1) * GAP)) / 2)
        for p in r:
            box = (x + left, top - 0.35 - grid_h, grid_w, grid_h)
            text = (box[0] + grid_w + 0.4, box[1] + grid_h) if beside else (x, box[1] - 0.5)
            placed.append(dataclasses.replace(p, box=box, text_left=x, text_xy=text))
            x += col_w + GAP
        top -= h
    return tuple(placed), fig_h


def communication_geometry(
    obj: CommunicationPlan | CommunicationReport, *, max_items: int = 3, title: str | None = None
) -> CommunicationPicture:
    """The picture of a ``CommunicationPlan`` or ``CommunicationReport``: devices, one
    panel per set of mesh dims (its groups, bytes per device per update, what the bytes
    serve: top ``max_items`` variables, then ``+N more``), a title saying the finding, a
    subtitle with the settings, and every box at a figure width of at most 9.5 in."""
    traffic_items(obj)  # the type check
    mesh = obj.mesh
    centres, facets, _ = device_positions(mesh)
    panels = _panels(obj, centres, max_items)
    xlim, ylim = _limits(centres, facets, panels)
    extent = (xlim[1] - xlim[0], ylim[0] - ylim[1])
    cell = max(0.08, min(0.55, (MAX_WIDTH - 1.0) / extent[0]))
    node_pt = 2 * NODE_RADIUS * cell * 72 - 2
    labels = tuple(str(d) if text_width_pt(str(d), FONT["node"]) <= node_pt else "" for d in range(mesh.num_devices))
    left = 0.6 if len(mesh.dim_sizes) >= 2 else 0.3
    title = title or headline(obj)
    need = (
        max(
            left + extent[0] * cell + 0.4 + TEXT_WIDTH
            if len(panels) == 1
            else min(len(panels), 2) * (max(left + extent[0] * cell, TEXT_WIDTH) + GAP),
            text_width_pt(title, FONT["title"]) / 72,
            text_width_pt(settings_text(obj), FONT["subtitle"]) / 72,
        )
        + 0.4
    )
    fig_w = round(min(MAX_WIDTH, max(need, 6.0)), 3)
    width = (fig_w - 0.3) * 72
    header = wrap(title, width, FONT["title"])
    subtitle = wrap(settings_text(obj), width, FONT["subtitle"])
    note = wrap(_note(obj, max_items), width, FONT["note"])
    panels = [
        dataclasses.replace(p, lines=tuple(s for line in p.lines for s in wrap(line, TEXT_WIDTH * 72, FONT["lines"])))
        for p in panels
    ]
    header_h = 0.2 + 0.24 * len(header) + 0.19 * len(subtitle) + 0.1
    placed, fig_h = _place(panels, extent, cell, left, header_h, 0.16 * len(note) + 0.15, fig_w)
    xticks, yticks = _ticks(mesh, centres)
    return CommunicationPicture(
        mesh,
        centres,
        facets,
        xlim,
        ylim,
        labels,
        xticks,
        yticks,
        mesh.dim_names[-1],
        mesh.dim_names[-2] if len(mesh.dim_sizes) >= 2 else "",
        placed,
        "\n".join(header),
        "\n".join(subtitle),
        "\n".join(note),
        (fig_w, round(fig_h, 3)),
        cell,
    )
