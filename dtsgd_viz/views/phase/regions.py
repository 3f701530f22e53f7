"""The phase maps' regions drawn as what they are: the cells a colour map does not
cover (the step cap, divergence, only one rule converging) as neutrals and hatches,
never as a colour bar's extension colours, each named in place where its name fits
(``phase_geometry.region_spot``), else in the legend. ``views.phase.plot`` calls these.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..core import style
from ..core.figure import root_figure
from ..text.direct import text_size
from .axes import PHASE_NOTE_SIZE
from .geometry import REGIONS, ratio_regions, region_spot, spot_cells

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.patches import Patch
    from matplotlib.patheffects import AbstractPathEffect
    from matplotlib.text import Text
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from ...theory.convergence import PhaseGrid
    from .plot import PhaseView, _MapGrid

__all__ = [
    "draw_ratio_regions",
    "name_region",
    "REGION_NAMES",
    "region_patch",
    "legend_handles",
    "outline",
    "DIVERGED_MARK",
    "point_at_cell",
    "text_cells",
    "line_cells",
    "DIVERGED_FACE",
    "REGION_FACES",
    "diverged_handle",
    "shown_cells",
    "cropped_label",
]

REGION_NAMES = {
    "only_momentum": "only momentum converges\n(Nesterov diverges)",
    "only_nesterov": "only Nesterov converges\n(momentum diverges)",
    "cap": "the other rule needs more\nthan {steps} updates (the cap)",
    "neither": "neither within\n{steps} updates",
    "diverged": "both diverge",
}
# divergence, on every map: a dark grey (well apart from the cap's pale grey and the
# ratio map's mid grey of "neither") with white x marks
DIVERGED_FACE = "#6F6F6F"
REGION_FACES = {
    "only_momentum": style.REGION_FACE,
    "only_nesterov": style.REGION_FACE,
    "cap": style.REGION_FACE,
    "neither": style.NEITHER_COLOR,
    "diverged": DIVERGED_FACE,
}
DIVERGED_MARK: dict[str, Any] = dict(marker="x", color="white", ms=4.0, mew=1.0, ls="none")


def region_patch(region: str, steps: int) -> Patch:
    """The legend entry of ``region`` (a ``REGIONS`` name other than ``both``)."""
    from matplotlib.patches import Patch

    label = REGION_NAMES[region].format(steps=steps).replace("\n", " ")
    if region == "diverged":  # the x marks, as on the step maps
        return diverged_handle(label)
    return Patch(fc=REGION_FACES[region], ec="0.55", hatch=style.HATCHES.get(region, ""), label=label)


def diverged_handle(label: str) -> Patch:
    """A legend entry for divergence, drawn as the maps draw it: the dark grey cell with
    two white x marks (``DIVERGED_MARK``, one per cell's width), not a hatch."""
    from matplotlib.legend import Legend
    from matplotlib.legend_handler import HandlerPatch
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle

    class DivergedPatch(Patch):
        pass

    class HandlerDiverged(HandlerPatch):
        def create_artists(self, legend, orig_handle, xdescent, ydescent, width, height, fontsize, trans):
            x0, y0 = -xdescent, -ydescent
            cell = Rectangle((x0, y0), width, height, fc=DIVERGED_FACE, ec="none", transform=trans)
            marks = Line2D(
                x0 + width * np.array([0.25, 0.75]), np.full(2, y0 + height / 2), **DIVERGED_MARK, transform=trans
            )
            return [cell, marks]

    handle = DivergedPatch(fc=DIVERGED_FACE, ec="none", label=label, gid="diverged-key")
    Legend.update_default_handler_map({DivergedPatch: HandlerDiverged()})
    return handle


def _cells(lr_e, mu_e, mask):
    from matplotlib.patches import Rectangle

    ii, jj = np.nonzero(mask)
    return [Rectangle((lr_e[j], mu_e[i]), lr_e[j + 1] - lr_e[j], mu_e[i + 1] - mu_e[i]) for i, j in zip(ii, jj)]


def draw_ratio_regions(
    ax: Axes, grids: Mapping[str, PhaseGrid], lr_e: np.ndarray, mu_e: np.ndarray
) -> tuple[np.ndarray, dict]:
    """The neutral cells of the ratio map under its colour map: ``neither`` grey, the
    cells both rules diverge in pale grey with the step maps' x marks (gid
    ``diverged:ratio``), the others a pale neutral, hatched (``style.HATCHES``). Returns
    the cells' region indices (``ratio_regions``) and ``{region: PatchCollection}`` of
    the hatched ones."""
    from matplotlib.collections import PatchCollection
    from matplotlib.colors import ListedColormap

    m, n = grids["momentum"], grids["nesterov"]
    regions = ratio_regions(m.steps, m.diverged, n.steps, n.diverged)
    faces = ListedColormap(["white"] + [REGION_FACES[r] for r in REGIONS[1:]])
    neutral = np.ma.masked_equal(regions, REGIONS.index("both"))
    ax.pcolormesh(lr_e, mu_e, neutral, cmap=faces, vmin=-0.5, vmax=len(REGIONS) - 0.5, gid="phase:regions", zorder=0.5)
    hatched = {}
    for region, hatch in style.HATCHES.items():
        mask = regions == REGIONS.index(region)
        if mask.any():
            hatched[region] = ax.add_collection(
                PatchCollection(
                    _cells(lr_e, mu_e, mask),
                    facecolor="none",
                    edgecolor="none",
                    hatch=hatch,
                    hatchcolor=style.HATCH_COLOR,
                    linewidth=0,
                    gid=f"region:{region}",
                    zorder=0.6,
                )
            )
    ii, jj = np.nonzero(regions == REGIONS.index("diverged"))
    ax.plot(np.asarray(m.learning_rates)[jj], np.asarray(m.momenta)[ii], **DIVERGED_MARK, gid="diverged:ratio")
    return regions, hatched


def _cell_points(ax, n_rows, n_cols):
    """The size of one map cell in points (the axes' current size over the grid)."""
    bbox = ax.get_window_extent()
    dpi = root_figure(ax).dpi
    return bbox.width * 72 / dpi / n_cols, bbox.height * 72 / dpi / n_rows


def _shown_cells(ax, lrs) -> int:
    """How many of the grid's columns (cell centres ``lrs``) the axes' x limits show."""
    x0, x1 = sorted(ax.get_xlim())
    lrs = np.asarray(lrs, np.float64)
    return max(int(np.sum((lrs >= x0) & (lrs <= x1))), 1)


def _label_cells(ax, text, fontsize, n_rows, n_cols):
    """A label's size in map cells, with its box's air."""
    cw, ch = _cell_points(ax, n_rows, n_cols)
    w, h = text_size(text, fontsize)
    return (w + 4) / cw, (h + 2) / ch


def name_region(
    ax: Axes,
    mask: np.ndarray,
    text: str,
    lrs: np.ndarray,
    mus: np.ndarray,
    *,
    gid: str,
    fontsize: float = PHASE_NOTE_SIZE,
    color: ColorType = "0.15",
    halo: bool = False,
) -> bool:
    """Write ``text`` inside the region ``mask`` of a map (rows: ``mus``, columns:
    ``lrs``, log spaced) where it fits; returns whether it did. ``halo``: on coloured
    cells (data), no box that would hide them, only a thin white halo round the letters."""
    spot = region_spot(mask, *_label_cells(ax, text, fontsize, len(mus), _shown_cells(ax, lrs)))
    if spot is None:
        return False
    i, j = spot
    look: dict[str, Any] = (
        dict(path_effects=outline("white", 2.2))
        if halo
        else dict(bbox=dict(fc="white", ec="none", alpha=0.75, pad=1.2, boxstyle="round,pad=0.2"))
    )
    ax.text(
        lrs[int(j)],
        mus[int(i)],
        text,
        ha="center",
        va="center",
        fontsize=fontsize,
        color=color,
        gid=gid,
        zorder=8,
        linespacing=1.1,
        **look,
    )
    return True


def point_at_cell(
    ax: Axes,
    cell: tuple[int, int],
    free: np.ndarray,
    text: str,
    lrs: np.ndarray,
    mus: np.ndarray,
    *,
    gid: str,
    fontsize: float = PHASE_NOTE_SIZE,
) -> np.ndarray | None:
    """Write ``text`` in the cells ``free`` (a mask) nearest the map cell ``cell`` (row,
    column) with an arrow to it: the note on a few cells too small to hold a name.
    Returns the cells the note covers (None: it fits nowhere, nothing drawn)."""
    width, height = _label_cells(ax, text, fontsize, len(mus), _shown_cells(ax, lrs))
    spot = region_spot(free, width, height, near=cell)
    if spot is None:
        return None
    i, j = spot
    ax.annotate(
        text,
        (lrs[cell[1]], mus[cell[0]]),
        xytext=(lrs[int(j)], mus[int(i)]),
        ha="center",
        va="center",
        fontsize=fontsize,
        color="0.15",
        gid=gid,
        zorder=8,
        linespacing=1.1,
        bbox=dict(fc="white", ec="0.6", lw=0.6, alpha=0.9, boxstyle="round,pad=0.25"),
        arrowprops=dict(arrowstyle="->", color="0.15", lw=0.9, shrinkA=0, shrinkB=4),
    )
    return spot_cells(free.shape, spot, width, height)


def text_cells(ax: Axes, texts: Iterable[Text], lr_e: np.ndarray, mu_e: np.ndarray) -> np.ndarray:
    """The map cells (a mask; cell edges ``lr_e``, ``mu_e``) under the boxes of ``texts``."""
    out = np.zeros((len(mu_e) - 1, len(lr_e) - 1), bool)
    renderer = cast("FigureCanvasAgg", root_figure(ax).canvas).get_renderer()  # new_figure's Agg canvas
    for t in texts:
        (x0, y0), (x1, y1) = ax.transData.inverted().transform(t.get_window_extent(renderer).get_points())
        c0, c1 = np.searchsorted(lr_e, [x0, x1]) + [-1, 0]
        r0, r1 = np.searchsorted(mu_e, [y0, y1]) + [-1, 0]
        out[max(r0, 0) : r1, max(c0, 0) : c1] = True
    return out


def line_cells(lines: Iterable[ArrayLike], lr_e: np.ndarray, mu_e: np.ndarray) -> np.ndarray:
    """The map cells (a mask; cell edges ``lr_e`` log spaced, ``mu_e``) some polyline of
    ``lines`` (each an ``(n, 2)`` array of learning rate, momentum) passes through: a
    region's name keeps off them.

    >>> line_cells([np.array([[1.0, 0.5], [10.0, 0.5]])], np.array([1.0, 2.0, 100.0]),
    ...            np.array([0.0, 1.0, 2.0])).tolist()
    [[True, True], [False, False]]
    """
    out = np.zeros((len(mu_e) - 1, len(lr_e) - 1), bool)
    for xy in lines:
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        xy = xy[np.all(np.isfinite(xy), axis=1) & (xy[:, 0] > 0)]
        if len(xy) < 2:
            continue
        t = np.linspace(0.0, 1.0, 24)[:, None]
        lx, y = np.log(xy[:, 0]), xy[:, 1]
        fx = (lx[:-1] + t * np.diff(lx)).ravel()
        fy = (y[:-1] + t * np.diff(y)).ravel()
        c = np.searchsorted(np.log(lr_e), fx) - 1
        r = np.searchsorted(mu_e, fy) - 1
        ok = (c >= 0) & (c < out.shape[1]) & (r >= 0) & (r < out.shape[0])
        out[r[ok], c[ok]] = True
    return out


def outline(color: ColorType = "black", width: float = 3.0) -> list[AbstractPathEffect]:
    """Path effects drawing a line or text over a ``width`` wide ``color`` stroke."""
    from matplotlib import patheffects

    return [patheffects.Stroke(linewidth=width, foreground=color), patheffects.Normal()]


def _visible(line) -> bool:
    """Whether some vertex of ``line`` (a ``Line2D``) lies inside its axes' limits."""
    ax = line.axes
    x, y = (np.asarray(a, np.float64) for a in line.get_data())
    (x0, x1), (y0, y1) = sorted(ax.get_xlim()), sorted(ax.get_ylim())
    return bool(np.any((x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)))


def legend_handles(view: PhaseView, g: _MapGrid, with_ratio: bool) -> list[Artist]:
    """The legend's few entries (for a ``phase.PhaseView`` drawn on the grid ``g``), each
    only when its mark is drawn on some map: the cap and divergence, the theory's lines
    and (with ``with_ratio``) the ratio map's regions not named in place."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    keys = [k for k in view.grids if k != "ratio" and view.axes.get(k) is not None]
    grids = [view.grids[k] for k in keys]
    handles = []
    # the cap's grey needs an entry unless every step map names it in place; the x marks
    # unless some map names them ("diverges": the marks are the same on both)
    if any((grid.steps < 0).any() for grid in grids) and not all(f"cap:{k}" in view.named for k in keys):
        handles.append(Patch(fc=style.NOT_CONVERGED_COLOR, ec="0.6", label=f"more than {g.steps} updates (the cap)"))
    if any(grid.diverged.any() for grid in grids) and not any(
        f"diverged:{k}" in view.named and view.grids[k].diverged.any() for k in keys
    ):
        handles.append(diverged_handle("diverges"))
    if g.h is not None:
        theory_look, rate, critical = (style.ROLE_LOOKS[k] for k in ("theory", "rate_level", "critical"))
        levels = [r for r in view.rate_levels if r in view.drawn_levels]
        for lines, line in (
            (
                view.boundaries,
                Line2D(
                    [],
                    [],
                    **theory_look.line(),
                    path_effects=outline("black", theory_look.lw + 1.6),
                    label="stability boundary",
                ),
            ),
            (
                view.contours if levels else {},
                Line2D([], [], **rate.line(), path_effects=outline("0.15", 2.0), label=_iso_label(levels, g)),
            ),
            (
                view.critical,
                Line2D(
                    [],
                    [],
                    **critical.line(),
                    path_effects=outline("white", critical.lw + 2.0),
                    label=f"critical damping (h = {g.h[0]:g})",
                ),
            ),
        ):
            if any(not hasattr(x, "get_data") or _visible(x) for x in lines.values()):
                handles.append(line)
    if with_ratio and view.regions is not None:
        handles += [
            region_patch(r, g.steps)
            for r in REGIONS[1:]
            if r not in view.named and (view.regions == REGIONS.index(r)).any()
        ]
    return handles


def _iso_label(levels, g) -> str:
    """The iso-rate contours' legend entry; the cap's level said for what it is: the
    rate at which the flattest direction's starting loss (``g.cap_loss``) falls to the
    tolerance in the cap's updates, so the edge of the cap's grey."""
    rest = [f"{r:g}" for r in levels if r != g.cap]
    text = "iso-rate ρ (spectral radius): " + ", ".join(rest)
    if g.cap in levels:
        text += ("; " if rest else "") + f"{g.cap:g}, the cap's edge:"
        loss = f" ({g.cap_loss:.2g} at the start)" if np.isfinite(g.cap_loss) else ""
        text += f"\nat that rate the flat direction's loss{loss} falls to tol in {g.steps} updates"
    return text


def shown_cells(view: PhaseView) -> np.ndarray:
    """The ratio map's cells in the columns it shows (``view.ratio_columns``)."""
    assert view.regions is not None  # the ratio map was drawn
    out = np.zeros(view.regions.shape, bool)
    out[:, slice(*view.ratio_columns)] = True
    return out


def cropped_label(view: PhaseView, g: _MapGrid) -> str:
    """The ratio map's x label (a ``phase.PhaseView`` drawn on the grid ``g``), naming
    what the columns left out (``view.ratio_columns``) hold besides the cap's grey."""
    label = "learning rate (log scale)"
    c0, c1 = view.ratio_columns
    assert view.regions is not None  # the ratio map was drawn
    other = view.regions != REGIONS.index("neither")
    sides = [(f"left of {g.lr_e[c0]:.2g}", other[:, :c0]), (f"right of {g.lr_e[c1]:.2g}", other[:, c1:])]
    sides = [(name, cells) for name, cells in sides if cells.any()]
    if not sides:
        return label
    rows = np.flatnonzero(np.any(np.concatenate([cells for _, cells in sides], axis=1), axis=1))
    lo, hi = g.mus[rows[0]], g.mus[rows[-1]]
    where = f"μ ≥ {lo:g}" if rows[-1] == len(g.mus) - 1 else f"{lo:g} ≤ μ ≤ {hi:g}"
    return f"{label}; not shown: {' and '.join(n for n, _ in sides)}, where a rule converges only at {where}"
