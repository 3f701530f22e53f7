"""The phase maps' regions (cells no colour map covers): neutral faces, hatches and their legend entries."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...theory.quadratic import RULES
from ..core import style
from ..paths.geometry import rule_name
from .geometry import REGIONS, TIE_WITHIN, ratio_regions

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.patheffects import AbstractPathEffect
    from matplotlib.typing import ColorType

    from ...theory.convergence import PhaseGrid
    from .plot import PhaseView


REGION_NAMES = {
    "only_momentum": "only momentum converges (Nesterov diverges)",
    "only_nesterov": "only Nesterov converges (momentum diverges)",
    "cap_momentum": "only momentum within {steps} updates",
    "cap_nesterov": "only Nesterov within {steps} updates",
    "neither": "neither within {steps} updates",
    "diverged": "both diverge",
}
DIVERGED_FACE = "#6F6F6F"
REGION_FACES = {
    "only_momentum": style.REGION_FACE,
    "only_nesterov": style.REGION_FACE,
    "cap_momentum": "#C9DDEE",  # pale ends of the ratio scale: tinted towards the rule that converged
    "cap_nesterov": "#F6CFC2",
    "neither": style.NOT_CONVERGED_COLOR,
    "diverged": DIVERGED_FACE,
}
DIVERGED_MARK: dict[str, Any] = dict(marker="x", color="white", ms=4.0, mew=1.0, ls="none")
FEWEST_MARK: dict[str, Any] = dict(marker="D", mfc="white", mec="black", ms=5.0, mew=1.0, ls="none", zorder=8)


def outline(color: ColorType = "black", width: float = 3.0) -> list[AbstractPathEffect]:
    """Path effects drawing a line or text over a ``width`` wide ``color`` stroke."""
    from matplotlib import patheffects

    return [patheffects.Stroke(linewidth=width, foreground=color), patheffects.Normal()]


def cell_look() -> dict[str, Any]:
    """A marked (or picked) cell's outline: a white line on a wider black one."""
    return dict(fill=False, ec="white", lw=1.6, path_effects=outline("black", 4.4), zorder=9)


def mark_cell(ax: Axes, lr_e: np.ndarray, mu_e: np.ndarray, lr: float, mu: float, gid: str) -> Artist:
    """Outline (``cell_look``) the cell of edges ``lr_e``, ``mu_e`` holding ``(lr, mu)``."""
    from matplotlib.patches import Rectangle

    j = int(np.clip(np.searchsorted(lr_e, lr) - 1, 0, len(lr_e) - 2))
    i = int(np.clip(np.searchsorted(mu_e, mu) - 1, 0, len(mu_e) - 2))
    cell = Rectangle((lr_e[j], mu_e[i]), lr_e[j + 1] - lr_e[j], mu_e[i + 1] - mu_e[i], **cell_look(), gid=gid)
    return ax.add_patch(cell)


def boundary_look(key: str) -> dict[str, Any]:
    look = style.run_looks([key])[key]
    return dict(**look.line(), path_effects=outline("white", look.lw + 2.4))


def region_patch(region: str, steps: int) -> Patch | Line2D:
    """The legend entry of ``region`` (a ``REGIONS`` name other than ``both``)."""
    from matplotlib.patches import Patch

    label = REGION_NAMES[region].format(steps=steps)
    if region == "diverged":  # the x marks, as on the step maps
        return diverged_handle(label)
    return Patch(fc=REGION_FACES[region], ec="0.55", hatch=style.HATCHES.get(region, ""), label=label)


def diverged_handle(label: str) -> Line2D:
    from matplotlib.lines import Line2D

    mark = {"marker": "x", "mec": "white", "ms": DIVERGED_MARK["ms"], "mew": DIVERGED_MARK["mew"]}
    return Line2D([], [], color=DIVERGED_FACE, lw=7.0, solid_capstyle="butt", **mark, label=label, gid="diverged-key")


def draw_ratio_regions(ax: Axes, grids: Mapping[str, PhaseGrid], cells: tuple) -> np.ndarray:
    """The ratio map's neutral cells, hatched or x-marked, on ``cells = (lr_edges, mu_edges, runs shown)`` (as
    ``side_cells`` gives them); returns each run's index into ``REGIONS``."""
    from matplotlib.collections import PatchCollection
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Rectangle

    m, n = grids["momentum"], grids["nesterov"]
    regions = ratio_regions(m.steps, m.diverged, n.steps, n.diverged)
    lr_e, mu_e, src = cells
    shown = regions[src]
    faces = ListedColormap(["white"] + [REGION_FACES[r] for r in REGIONS[1:]])
    neutral = np.ma.masked_equal(shown, REGIONS.index("both"))
    look: dict[str, Any] = dict(cmap=faces, vmin=-0.5, vmax=len(REGIONS) - 0.5, rasterized=True)  # SVG: pixels
    ax.pcolormesh(lr_e, mu_e, neutral, **look, gid="phase:regions", zorder=0.5)
    hatched: dict[str, Any] = dict(facecolor="none", edgecolor="none", hatchcolor=style.HATCH_COLOR, linewidth=0)
    for region, hatch in style.HATCHES.items():
        boxes = []  # one rectangle per run of the region's cells along a row
        for i, row in enumerate(shown == REGIONS.index(region)):
            ends = np.flatnonzero(np.diff(np.r_[0, row.astype(int), 0])).reshape(-1, 2)
            boxes += [Rectangle((lr_e[a], mu_e[i]), lr_e[b] - lr_e[a], mu_e[i + 1] - mu_e[i]) for a, b in ends]
        if boxes:
            ax.add_collection(PatchCollection(boxes, **hatched, hatch=hatch, gid=f"region:{region}", zorder=0.6))
    ii, jj = np.nonzero(regions == REGIONS.index("diverged"))
    ax.plot(np.asarray(m.learning_rates)[jj], np.asarray(m.momenta)[ii], **DIVERGED_MARK, gid="diverged:ratio")
    return regions


def _in_view(line) -> bool:
    x0, x1 = sorted(line.axes.get_xlim())
    x = np.asarray(line.get_xdata(), np.float64)
    return bool(np.any((x >= x0) & (x <= x1)))


def legend_handles(view: PhaseView, steps: int, levels_text: str, critical_text: str) -> tuple[list, list]:
    """``(step_entries, ratio_entries)``, each only when drawn; the boundaries go with the step maps if any."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    keys = [k for k in RULES if view.axes.get(k) is not None]
    grids = [view.grids[k] for k in keys]
    boundaries: list[Artist] = [
        Line2D([], [], **boundary_look(k), label=f"{rule_name(k)}'s stability boundary")
        for k in RULES
        if any(_in_view(lines[k]) for lines in (view.boundaries, view.ratio_boundaries) if k in lines)
    ]
    step: list[Artist] = []
    if any((grid.steps < 0).any() for grid in grids):
        step.append(Patch(fc=style.NOT_CONVERGED_COLOR, ec="0.6", label=f"more than {steps} updates (the cap)"))
    if any(grid.diverged.any() for grid in grids):
        step.append(diverged_handle("diverges"))
    if view.contours and levels_text:
        rate = style.ROLE_LOOKS["rate_level"]
        step.append(Line2D([], [], **rate.line(), path_effects=outline("0.15", 2.0), label=levels_text))
    if any(_in_view(line) for line in view.critical.values()):
        crit = style.ROLE_LOOKS["critical"]
        step.append(Line2D([], [], **crit.line(), path_effects=outline("white", crit.lw + 2.0), label=critical_text))
    ratio: list[Artist] = []
    if view.regions is not None:
        both = view.regions == REGIONS.index("both")
        with np.errstate(invalid="ignore"):
            tie = both & (np.abs(view.ratio) <= np.log2(1.0 + TIE_WITHIN))
        if tie.any():  # the colour bar's middle, named once: a tie is no colour of the scale
            ratio.append(Patch(fc=style.TIE_FACE, ec="0.55", label=f"a tie: counts within {TIE_WITHIN:.0%}"))
        # "neither" and "diverged" look as the step maps' cap and x marks: named there when drawn
        shared = ("neither", "diverged") if keys else ()
        drawn = [r for r in REGIONS[1:] if r not in shared and (view.regions == REGIONS.index(r)).any()]
        ratio += [region_patch(r, steps) for r in drawn]
    return (boundaries + step, ratio) if keys else (step, boundaries + ratio)
