"""Pure geometry of the communication view: where each device sits and the line or loop
joining each group of devices that reduce together (no TensorFlow, no drawing).

Devices sit on a grid in cell units, y growing downwards, as the layout view's mesh key
places them: columns are the last mesh dim, rows the one before, and the dims before
those stack row groups with a gap between. One panel per set of mesh dims the traffic
runs along (``traffic.dim_sets``)::

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
from ...specs import MeshSpec
from ..core.style import SUBTITLE_SIZE, SUPTITLE_SIZE, WIDTH
from .layout_labels import text_width_pt
from .traffic import dim_color, dim_sets, dims_text, headline, serves_lines, settings_text, traffic_items

ROW_GAP = 0.6  # cells between the row groups of a mesh of rank 3 or more
NODE_RADIUS = 0.33  # cells
LINE_IN = 0.19  # inches per line of the text under a panel


def device_positions(mesh: MeshSpec) -> tuple[np.ndarray, tuple[tuple[float, str], ...], tuple[float, float]]:
    """``(centres, rows, extent)``: each device's centre (x, y) in cell units (mesh device
    order); each row's centre and its coordinates on the dims before the last
    (``batch=1``); the grid's width and height."""
    sizes, names = mesh.dim_sizes, mesh.dim_names
    inner = sizes[-2] if len(sizes) >= 2 else 1
    centres, rows = np.zeros((mesh.num_devices, 2)), {}
    for d in range(mesh.num_devices):
        c: tuple[int, ...] = mesh.device_coords(d)
        col, row = c[-1], (c[-2] if len(c) >= 2 else 0)
        group = int(np.ravel_multi_index(c[:-2], sizes[:-2])) if len(c) > 2 else 0
        y = group * (inner + ROW_GAP) + row + 0.5
        centres[d] = (col + 0.5, y)
        if len(c) >= 2:
            rows[y] = ", ".join(f"{n}={i}" for n, i in zip(names[:-1], c[:-1]))
    groups = math.prod(sizes[:-2])
    return centres, tuple(sorted(rows.items())), (float(mesh.dim_sizes[-1]), groups * inner + (groups - 1) * ROW_GAP)


def _snake(sizes) -> list[tuple[int, ...]]:
    """Every index of a grid of ``sizes``, each a neighbour of the one before (rows back
    and forth)."""
    if not sizes:
        return [()]
    sub = _snake(sizes[1:])
    return [(v, *s) for v in range(sizes[0]) for s in (sub if v % 2 == 0 else sub[::-1])]


def arc(p: ArrayLike, q: ArrayLike, bulge: float, n: int = 13) -> list[tuple[float, float]]:
    """A quadratic curve from ``p`` to ``q`` whose apex is ``bulge`` cells to the left of
    the chord p->q (y grows downwards: to the right as drawn)."""
    p, q = np.asarray(p, float), np.asarray(q, float)
    d = q - p
    ctrl = (p + q) / 2 + 2 * bulge * np.array([d[1], -d[0]]) / max(float(np.hypot(*d)), 1e-9)
    t = np.linspace(0, 1, n)[:, None]
    pts = (1 - t) ** 2 * p + 2 * (1 - t) * t * ctrl + t**2 * q
    return [(round(float(x), 9), round(float(y), 9)) for x, y in pts]


@dataclasses.dataclass(frozen=True)
class GroupLine:
    """One group's devices in the order its line visits them, their centres and the
    drawn ``path``: straight between neighbouring cells, curved where it skips cells.
    ``closed``: a loop, for a group spanning rows and columns."""

    devices: tuple[int, ...]
    points: tuple[tuple[float, float], ...]
    path: tuple[tuple[float, float], ...]
    closed: bool


def ring_order(centres: np.ndarray | Sequence[Sequence[float]], group: Sequence[int]) -> tuple[tuple[int, ...], bool]:
    """The group's devices row by row, back and forth, and whether the line closes into
    a loop (the devices span two rows or more and two columns or more)."""
    pos = {d: (float(centres[d][0]), float(centres[d][1])) for d in group}
    xs, ys = sorted({p[0] for p in pos.values()}), sorted({p[1] for p in pos.values()})
    at: dict[tuple[int, ...], int] = {(ys.index(y), xs.index(x)): d for d, (x, y) in pos.items()}
    return tuple(at[k] for k in _snake([len(ys), len(xs)])), len(xs) > 1 and len(ys) > 1


def group_lines(
    centres: np.ndarray | Sequence[Sequence[float]], groups: Iterable[Sequence[int]]
) -> tuple[GroupLine, ...]:
    """One ``GroupLine`` per group. A hop that skips cells bows out, away from the grid's
    centre (a loop's, all to one side), each further hop along the same line further."""
    middle = np.asarray(centres).mean(axis=0)
    seen: list[tuple[tuple, float, float]] = []
    out = []
    for group in groups:
        order, closed = ring_order(centres, group)
        pts = [(float(centres[d][0]), float(centres[d][1])) for d in order]
        path = [pts[0]]
        for p, q in list(zip(pts, pts[1:])) + ([(pts[-1], pts[0])] if closed else []):
            if math.dist(p, q) <= 1.0 + 1e-9:
                path.append(q)
                continue
            u = np.subtract(q, p) / math.dist(p, q)
            u = -u if u[0] < -1e-9 or (abs(u[0]) <= 1e-9 and u[1] < 0) else u
            key = (round(float(u[0]), 6), round(float(u[1]), 6), round(float(p[0] * u[1] - p[1] * u[0]), 6))
            a, b = sorted((float(np.dot(p, u)), float(np.dot(q, u))))
            bulge = 0.5 + 0.22 * sum(1 for k, s, e in seen if k == key and s < b - 1e-9 and a < e - 1e-9)
            seen.append((key, a, b))
            if not closed and np.dot([q[1] - p[1], p[0] - q[0]], np.add(p, q) / 2 - middle) < 0:
                bulge = -bulge
            path += arc(p, q, bulge)[1:]
        out.append(GroupLine(tuple(order), tuple(pts), tuple(path), closed))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class DimPanel:
    """The traffic along one set of mesh dims: its colour, bytes per device per update,
    the groups that reduce together, its title and the lines saying what it serves."""

    mesh_dims: tuple[str, ...]
    color: str
    bytes_per_device: int
    groups: tuple[GroupLine, ...]
    title: str
    lines: tuple[str, ...]

    @property
    def devices(self) -> frozenset[int]:
        return frozenset(d for g in self.groups for d in g.devices)


@dataclasses.dataclass(frozen=True)
class CommunicationPicture:
    """Everything ``plot_communication`` draws: positions in cell units (``centres``:
    mesh device order), the figure's size in inches."""

    mesh: MeshSpec
    centres: np.ndarray
    rows: tuple[tuple[float, str], ...]
    xlim: tuple[float, float]
    ylim: tuple[float, float]  # (bottom, top): y grows downwards
    node_labels: tuple[str, ...]
    panels: tuple[DimPanel, ...]
    title: str
    subtitle: str
    note: str
    figsize: tuple[float, float]


def communication_geometry(
    obj: CommunicationPlan | CommunicationReport, *, max_items: int = 3, title: str | None = None
) -> CommunicationPicture:
    """The picture of a ``CommunicationPlan`` or ``CommunicationReport``: the devices, one
    panel per set of mesh dims (its groups, what the bytes serve: the top ``max_items``
    variables, then ``+N more``), the finding (``traffic.headline``), the settings
    (``traffic.settings_text``), a one-line note and the figure's size (at most ``WIDTH``)."""
    items, mesh = traffic_items(obj), obj.mesh
    centres, rows, _ = device_positions(mesh)
    panels = []
    for dims in dim_sets(mesh, items):
        mine = [i for i in items if i.mesh_dims == dims]
        times = [i.time_us for i in mine if i.time_us is not None]
        panels.append(
            DimPanel(
                dims,
                dim_color(mesh, dims),
                sum(i.bytes_per_device for i in mine),
                group_lines(centres, dict.fromkeys(g for i in mine for g in i.groups)),
                f"along {dims_text(dims)}" + (f" · {sum(times):.0f} us" if times else ""),
                serves_lines(mine, max_items),
            )
        )
    if not panels:
        panels.append(DimPanel((), dim_color(mesh, ()), 0, (), "nothing moves between devices", ()))
    pts = np.vstack([centres - 0.4, centres + 0.4, *[np.asarray(g.path) for p in panels for g in p.groups]])
    (x0, y0), (x1, y1) = pts.min(axis=0) - 0.06, pts.max(axis=0) + 0.06
    title = title or headline(obj)
    widths = [6.5, len(panels) * ((x1 - x0) * 0.5 + 1.3), 1.1 * text_width_pt(title, SUPTITLE_SIZE) / 72 + 0.4]
    widths.append(text_width_pt(settings_text(obj), SUBTITLE_SIZE) / 72 + 0.4)
    width = round(min(WIDTH, max(widths)), 3)
    # the cell that about fills a panel's width, at most 0.6 in: the height follows from it
    cell = min(0.6, (width / len(panels) - 1.7) / (x1 - x0))
    labels = tuple(
        str(d) if len(str(d)) * 0.62 * 9.5 <= 2 * NODE_RADIUS * cell * 72 - 2 else "" for d in range(mesh.num_devices)
    )
    names = mesh.short_device_names
    verb = "all-reduce" if all(i.kind == "all-reduce" for i in items) else "run one collective"
    note = f"circles: devices (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})" + (
        f"; a line joins each group of devices that {verb} together" if items else ""
    )
    lines = max(len(p.lines) for p in panels)
    height = 1.3 + (y1 - y0) * cell + 0.3 + LINE_IN * (lines + 1) + 0.45
    return CommunicationPicture(
        mesh,
        centres,
        rows,
        (float(x0), float(x1)),
        (float(y1), float(y0)),
        labels,
        tuple(panels),
        title,
        settings_text(obj),
        note,
        (width, round(height, 3)),
    )
