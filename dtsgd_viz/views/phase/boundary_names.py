"""The ratio map's stability boundaries, named: each name in a clear stretch beside its
line (on near-white ties, the hatch of one rule converging or the grey of neither,
never on coloured cells, x marks or another line), joined to it by a short leader;
and the few cells a note points at kept readable where a boundary crosses them (the
cells drawn over the line, the line thin across them). ``views.phase.plot`` calls these.

    >>> box_cells(np.array([1.0, 2.0, 4.0, 8.0]), np.array([0.0, 1.0, 2.0]), (1.5, 0.2, 3.0, 0.8)).tolist()
    [[True, True, False], [False, False, False]]
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, cast

import numpy as np

from ...theory.quadratic import RULES
from ..core import style
from ..core.figure import root_figure
from ..text.direct import text_size
from .axes import PHASE_NOTE_SIZE
from .geometry import REGIONS
from .regions import shown_cells

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.collections import QuadMesh
    from matplotlib.lines import Line2D
    from matplotlib.text import Annotation
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from .plot import PhaseView, _MapGrid

__all__ = ["name_ratio_boundaries", "name_boundaries", "box_cells", "bare_cells", "GAP", "MARGIN", "APART"]

GAP = 14.0  # points from the line to the name's near edge (the leader's length, about)
MARGIN = 4.0  # points of air kept around a name: from lines, other names, the frame
APART = 40.0  # points: names side by side at least this far apart (else one moves up or down)


def box_cells(lr_e: np.ndarray, mu_e: np.ndarray, box: tuple[float, float, float, float]) -> np.ndarray:
    """The map cells (edges ``lr_e``, ``mu_e``) a data box ``(x0, y0, x1, y1)`` touches."""
    x0, y0, x1, y1 = box
    cols = (lr_e[1:] > x0) & (lr_e[:-1] < x1)
    rows = (mu_e[1:] > y0) & (mu_e[:-1] < y1)
    return rows[:, None] & cols[None, :]


def _to_points(ax):
    """Data (x log) -> points from the axes' bottom left, and back."""
    bbox = ax.get_window_extent()
    dpi = root_figure(ax).dpi
    w, h = bbox.width * 72 / dpi, bbox.height * 72 / dpi
    (lx0, lx1), (y0, y1) = np.log(sorted(ax.get_xlim())), sorted(ax.get_ylim())

    def fwd(x, y):
        return (np.log(x) - lx0) / (lx1 - lx0) * w, (np.asarray(y) - y0) / (y1 - y0) * h

    def back(u, v):
        return np.exp(lx0 + np.asarray(u) / w * (lx1 - lx0)), y0 + np.asarray(v) / h * (y1 - y0)

    return fwd, back, (w, h)


RULE_NAMES = {"momentum": "momentum", "nesterov": "Nesterov"}


def name_ratio_boundaries(
    view: PhaseView, ax: Axes, g: _MapGrid, lines: Mapping[str, Line2D], tie_within: float
) -> dict[str, Annotation]:
    """Each rule's boundary on the ratio map (``lines[key]``: its ``Line2D``) named
    beside it, on the ties' white (counts within ``tie_within`` of each other), a hatch
    or the grey of neither (never on colours, x marks or another line), with a leader.
    ``view``: a ``phase.PhaseView``, ``g`` its ``_MapGrid``."""
    near = np.log2(1 + tie_within)
    r = view.regions
    assert r is not None  # the ratio map was drawn
    tie = (r == REGIONS.index("both")) & (np.abs(view.ratio) <= near)
    others = [REGIONS.index(k) for k in ("only_momentum", "only_nesterov", "neither")]
    allowed = (tie | np.isin(r, others)) & shown_cells(view)
    looks = style.run_looks(RULES)
    # Nesterov's first: its line runs through the map's middle, momentum's by the x marks
    order = sorted(lines, key=lambda k: not RULES[k])
    return name_boundaries(
        ax,
        {k: cast("tuple[np.ndarray, np.ndarray]", lines[k].get_data()) for k in order},  # plot() stored arrays
        {k: f"{RULE_NAMES[k]}'s\nboundary" for k in order},
        {k: looks[k].color for k in order},
        allowed,
        g.lr_e,
        g.mu_e,
        fontsize=PHASE_NOTE_SIZE,
        gids={k: f"boundary-label:{k}" for k in order},
    )


def name_boundaries(
    ax: Axes,
    lines: Mapping[str, tuple[np.ndarray, np.ndarray]],
    texts: Mapping[str, str],
    colors: Mapping[str, ColorType | None],
    allowed: np.ndarray,
    lr_e: np.ndarray,
    mu_e: np.ndarray,
    *,
    fontsize: float,
    gids: Mapping[str, str],
    avoid: Iterable[ArrayLike] = (),
) -> dict[str, Annotation]:
    """Name each boundary ``lines[key]`` (``(lr, mu)`` arrays, drawn) with ``texts[key]``
    in ``colors[key]``: the first row (nearest the map's middle height) where a box
    beside the line, ``GAP`` points off it, lies on ``allowed`` cells only, inside the
    axes and ``MARGIN`` points clear of every line (``lines`` and the ``avoid``
    polylines) and of the names already placed; a leader joins box and line. Returns
    ``{key: Annotation}`` (a name that fits nowhere is left out)."""
    fwd, back, (w_ax, h_ax) = _to_points(ax)
    polys = [
        np.column_stack(fwd(*np.asarray(xy, np.float64).T))
        for xy in [np.column_stack(v) for v in lines.values()] + [np.asarray(a) for a in avoid]
    ]
    polys = [p[np.all(np.isfinite(p), axis=1)] for p in polys]
    dense = np.concatenate([_densify(p) for p in polys if len(p) > 1]) if polys else np.zeros((0, 2))
    placed, out = [], {}
    y_mid = h_ax / 2
    for key, (x, y) in lines.items():
        w, h = text_size(texts[key], fontsize)
        w *= 1.08  # bold
        u, v = fwd(np.asarray(x, np.float64), np.asarray(y, np.float64))
        order = np.argsort(np.abs(v - y_mid), kind="stable")
        for k in order:
            spot = next(
                (
                    s
                    for s in (-1, 1)
                    if _fits(u[k], v[k], s, w, h, w_ax, h_ax, dense, placed, back, allowed, lr_e, mu_e)
                ),
                None,
            )
            if spot is None:
                continue
            box = _box(u[k], v[k], spot, w, h)
            placed.append(box)
            out[key] = ax.annotate(
                texts[key],
                (x[k], y[k]),
                xytext=(spot * GAP, 0),
                textcoords="offset points",
                ha="right" if spot < 0 else "left",
                va="center",
                fontsize=fontsize,
                fontweight="bold",
                color=colors[key],
                gid=gids[key],
                zorder=9,
                linespacing=1.1,
                bbox=dict(fc="white", ec="none", alpha=0.92, boxstyle="round,pad=0.15"),
                arrowprops=dict(arrowstyle="-", color=colors[key], lw=1.1, shrinkA=0, shrinkB=0),
            )
            break
    return out


def _box(u, v, side, w, h):
    """A name's box (points) beside the point ``(u, v)`` on ``side`` (-1 left, 1 right)."""
    near = u + side * GAP
    far = near + side * w
    return min(near, far), v - h / 2, max(near, far), v + h / 2


def _densify(p, step=2.0):
    """The polyline ``p`` (points) with a vertex at least every ``step`` points."""
    seg = np.hypot(*np.diff(p, axis=0).T)
    n = np.maximum(np.ceil(seg / step).astype(int), 1)
    parts = [p[i] + np.linspace(0, 1, k, endpoint=False)[:, None] * (p[i + 1] - p[i]) for i, k in enumerate(n)]
    return np.concatenate(parts + [p[-1:]])


def _fits(u, v, side, w, h, w_ax, h_ax, dense, placed, back, allowed, lr_e, mu_e) -> bool:
    x0, y0, x1, y1 = _box(u, v, side, w, h)
    if x0 < MARGIN or y0 < MARGIN or x1 > w_ax - MARGIN or y1 > h_ax - MARGIN:
        return False
    if len(dense) and np.any(
        (dense[:, 0] > x0 - MARGIN)
        & (dense[:, 0] < x1 + MARGIN)
        & (dense[:, 1] > y0 - MARGIN)
        & (dense[:, 1] < y1 + MARGIN)
    ):
        return False
    if any(x0 < b[2] + APART and b[0] < x1 + APART and y0 < b[3] + MARGIN and b[1] < y1 + MARGIN for b in placed):
        return False
    # the cells under the box and a margin (the layout still moves the axes a little)
    (dx0, dx1), (dy0, dy1) = back(np.array([x0 - 2 * MARGIN, x1 + 2 * MARGIN]), np.array([y0 - MARGIN, y1 + MARGIN]))
    return bool(allowed[box_cells(lr_e, mu_e, (dx0, dy0, dx1, dy1))].all())


def bare_cells(
    ax: Axes,
    mesh: QuadMesh,
    cells: np.ndarray,
    lines: Mapping[str, Line2D],
    lr_e: np.ndarray,
    mu_e: np.ndarray,
    *,
    gid: str,
) -> list[Line2D]:
    """Draw the ``cells`` (a mask) of ``mesh`` (the ratio map's ``QuadMesh``) again over
    the boundary ``lines`` (``{key: Line2D}``) and each line thin across them:
    a note's few cells stay readable, the boundary still runs through. Returns the
    thin lines."""
    from matplotlib.patches import Rectangle

    values = mesh.get_array()
    assert values is not None  # the ratio map's mesh holds its values
    rgba = np.asarray(mesh.cmap(mesh.norm(np.ma.getdata(values))))  # an (n, m, 4) array already
    ii, jj = np.nonzero(cells)
    for i, j in zip(ii, jj):
        ax.add_patch(
            Rectangle(
                (lr_e[j], mu_e[i]),
                lr_e[j + 1] - lr_e[j],
                mu_e[i + 1] - mu_e[i],
                fc=rgba[i, j],
                ec="none",
                zorder=4.5,
                gid=f"{gid}:cell",
            )
        )
    thin = []
    for key, line in lines.items():
        x, y = (np.asarray(a, np.float64) for a in line.get_data())
        inside = np.zeros(len(x), bool)
        for i, j in zip(ii, jj):
            inside |= (x >= lr_e[j]) & (x <= lr_e[j + 1]) & (y >= mu_e[i]) & (y <= mu_e[i + 1])
        if not inside.any():
            continue
        grow = inside | np.r_[inside[1:], False] | np.r_[False, inside[:-1]]  # to the cells' edges
        (t,) = ax.plot(
            np.where(grow, x, np.nan),
            np.where(grow, y, np.nan),
            color=line.get_color(),
            ls=line.get_linestyle(),
            lw=0.9,
            zorder=4.6,
            gid=f"{gid}:{key}",
        )
        thin.append(t)
    return thin
