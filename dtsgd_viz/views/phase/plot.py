"""The phase diagram as a figure: updates to converge over (learning rate x momentum) for
classical momentum and for Nesterov, the log2 ratio of the two, and the theory on top.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> fig = dtsgd_viz.plot_phase(surfaces.RotatedQuadratic(), steps=40, tol=1e-2)
    >>> [ax.get_label() for ax in fig.axes[:3]]
    ['phase:momentum', 'phase:nesterov', 'phase:ratio']

The maps come from the numpy reference of tf-keras' rule (``widgets._phase.phase_grid``,
tied to the real optimizer by the tests). Cells the colour maps do not cover are drawn as
what they are (``views.phase.regions``): the step cap pale grey, divergence with x
marks, and on the ratio map the cells only one rule converges in hatched neutrals (one
hatch where the other rule diverges, dots where it only ran into the cap), never in the
colour bar's colours; the regions are named in place where the name fits. On a
quadratic (a surface with ``hessian_eigenvalues``) the theory of ``dtsgd_viz.theory``
is drawn on them (``style.ROLE_LOOKS``):

* the **stability boundary** (the largest eigenvalue's spectral radius reaches 1): on
  the step maps dashed white; on the ratio map each rule's in its own look, named;
* **iso-rate contours**: where the worst mode's spectral radius is 0.6, 0.8, 0.9 and the
  rate the step cap needs (``(tol / loss0) ** (1 / (2 steps))``, ``loss0`` the flattest
  direction's share of the starting loss: ``views.phase.cap``): the edge of the grey
  "not within tol" region follows that contour, not a boundary;
* the **critical-damping curve** of the slowest mode, black on both step maps: left of
  it that mode creeps in, right of it it oscillates.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...theory import quadratic as theory
from ..core import style
from ..core.figure import headline, new_figure
from .axes import PHASE_LEGEND_SIZE, add_colorbars, frame
from .boundary_names import bare_cells, name_ratio_boundaries
from .cap import cap_loss
from .contours import draw_contours
from .geometry import (
    REGIONS,
    cap_rate,
    cell_edges,
    phase_finding,
    phase_ratio,
    ratio_limit,
    shown_columns,
    steps_finding,
)
from .regions import (
    DIVERGED_FACE,
    DIVERGED_MARK,
    REGION_NAMES,
    cropped_label,
    draw_ratio_regions,
    legend_handles,
    line_cells,
    name_region,
    point_at_cell,
    region_patch,
    shown_cells,
    text_cells,
)
from .regions import outline as _outline

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.figure import Figure, SubFigure
    from numpy.typing import ArrayLike

    from ...theory.convergence import PhaseGrid
    from ...theory.surfaces import Surface

__all__ = [
    "plot_phase",
    "draw_phase",
    "PhaseView",
    "phase_ratio",
    "cell_edges",
    "cap_rate",
    "cap_loss",
    "RATE_LEVELS",
    "ratio_cmap",
    "TIE_WITHIN",
]

RULES = theory.RULES
RATE_LEVELS = (0.6, 0.8, 0.9)
TITLES = {"momentum": "Classical momentum (heavy ball)", "nesterov": "Nesterov (tf-keras form)"}
RULE_NAMES = {"momentum": "momentum", "nesterov": "Nesterov"}
PHASE_FIGSIZE = (style.WIDTH, 9.6)  # the rule maps, the full-width ratio map, two short legends
TIE_WITHIN = 0.1  # the ratio map names "within 10%" where the counts are that close
NEAR_EDGE = 0.85  # a cell at this fraction of a rule's stability boundary lies "just inside" it


# ---- drawing ----------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class PhaseView:
    """What ``draw_phase`` drew: ``meshes[key]`` (``momentum``, ``nesterov``,
    ``ratio``), the ``ratio`` values and each cell's ``regions`` (``phase_geometry.
    ratio_regions``), and per rule the ``boundaries``, ``contours`` (a ``ContourSet``
    of the worst mode's rate), ``critical`` lines; ``rate_levels``; ``named``: the
    regions named in place (the others are in ``handles``, the legend's entries)."""

    figure: Figure | SubFigure
    axes: dict[str, Axes]
    grids: dict[str, PhaseGrid]
    ratio: np.ndarray
    meshes: dict = dataclasses.field(default_factory=dict)
    boundaries: dict = dataclasses.field(default_factory=dict)
    contours: dict = dataclasses.field(default_factory=dict)
    critical: dict = dataclasses.field(default_factory=dict)
    rate_labels: dict = dataclasses.field(default_factory=dict)  # per rule, the contours' labels
    rate_levels: tuple[float, ...] = ()
    drawn_levels: set[float] = dataclasses.field(default_factory=set)  # levels some map shows
    handles: list[Artist] = dataclasses.field(default_factory=list)
    regions: np.ndarray | None = None
    named: set[str] = dataclasses.field(default_factory=set)
    ratio_extend: str = "neither"  # the ratio colour bar's ends some cell lies past
    ratio_columns: tuple = ()  # (first, stop): the ratio map's columns shown (``shown_columns``)


def ratio_cmap() -> Colormap:
    """The ratio map's colour map: Nesterov faster red, momentum faster blue, a tie white."""
    from matplotlib import colormaps
    from matplotlib.colors import LinearSegmentedColormap

    rdbu = colormaps["RdBu"]
    # N odd, white exactly in the middle: a tie (0) is white, not RdBu's off-white; red is
    # Nesterov faster (its orange), blue momentum faster. Cells past the scale's ends take
    # its end colours (the colour bar's arrows); the one-rule regions are drawn apart
    cmap = LinearSegmentedColormap.from_list(
        "nesterov_vs_momentum", [rdbu(0.0), rdbu(0.2), rdbu(0.4), "white", rdbu(0.6), rdbu(0.8), rdbu(1.0)], N=255
    )
    return cmap.with_extremes(bad=(0, 0, 0, 0))


@dataclasses.dataclass(frozen=True)
class _MapGrid:
    """What every map of one ``draw_phase`` shares: the grid (``lrs``, ``mus``, the
    cells' edges ``lr_e``, ``mu_e``, the cap ``steps``), the quadratic's sorted
    eigenvalues ``h`` (None: no theory), the fine grid the theory is drawn on, the
    cap's rate ``cap`` (NaN if unknown) and the starting loss it comes from
    ``cap_loss`` (the flattest direction's, ``phase_cap.flat_mode_loss``)."""

    lrs: np.ndarray
    mus: np.ndarray
    steps: int
    lr_e: np.ndarray
    mu_e: np.ndarray
    h: np.ndarray | None
    lr_f: np.ndarray
    mu_f: np.ndarray
    mu_line: np.ndarray
    cap: float
    cap_loss: float = float("nan")


def _map_grid(grid, surface, loss0) -> _MapGrid:
    lrs, mus, steps, tol = grid.learning_rates, grid.momenta, grid.max_steps, grid.tol
    lr_e, mu_e = cell_edges(lrs, log=True), cell_edges(mus, log=False)
    h = getattr(surface, "hessian_eigenvalues", None)
    h = None if h is None else np.unique(np.asarray(h, np.float64))
    # the theory on a fine grid: contours are drawn from it, not from the cells
    lr_f = np.geomspace(lr_e[0], lr_e[-1], 300)
    mu_f = np.linspace(max(mu_e[0], 0.0), min(mu_e[-1], 0.999), 250)
    mu_line = np.linspace(mus[0], mus[-1], 200)
    cap = cap_rate(loss0, tol, steps) if loss0 is not None else float("nan")
    if h is not None and np.isfinite(cap):
        cap = round(cap, 3)
    return _MapGrid(
        lrs, mus, steps, lr_e, mu_e, h, lr_f, mu_f, mu_line, cap, float("nan") if loss0 is None else float(loss0)
    )


def draw_phase(
    grids: Mapping[str, PhaseGrid],
    surface: Surface,
    axes: Mapping[str, Axes],
    *,
    loss0: float | None = None,
    rate_levels: Iterable[float] = RATE_LEVELS,
    ratio_title: str | None = None,
) -> PhaseView:
    """Draw the two step maps and the ratio map of ``grids`` (``{"momentum":
    PhaseGrid, "nesterov": PhaseGrid}``) on ``axes`` (``{"momentum": ax, "nesterov":
    ax, "ratio": ax}``; ``ratio`` may be left out) with the theory of a quadratic
    ``surface``. The ratio map shows only the learning rates where some cell is more
    than the cap's grey (``shown_columns``; its x label names what it leaves out) and is
    titled ``ratio_title`` (default: what its colours say). ``loss0``: the starting
    loss the cap's rate is computed from (``cap_loss``). Colour bars and a legend are
    the caller's (``view.handles``)."""
    ratio = phase_ratio(grids["momentum"].steps, grids["nesterov"].steps)
    fig = next(iter(axes.values())).figure
    view = PhaseView(fig, dict(axes), dict(grids), ratio)
    g = _map_grid(grids["momentum"], surface, loss0)
    if g.h is not None and np.isfinite(g.cap):
        rate_levels = tuple(sorted({*rate_levels, g.cap}))
    view.rate_levels = tuple(rate_levels)
    for key, nesterov in RULES.items():
        if axes.get(key) is not None:
            _draw_step_map(view, axes[key], key, nesterov, g)
    if "nesterov" in axes and "momentum" in axes:
        axes["nesterov"].tick_params(labelleft=False)
        axes["nesterov"].set_ylabel("")
    if axes.get("ratio") is not None:
        _draw_ratio_map(view, axes["ratio"], g, ratio_title)
    view.handles = legend_handles(view, g, "ratio" in axes)
    return view


def _draw_step_map(view, ax, key, nesterov, g: _MapGrid) -> None:
    """One rule's map of updates to converge, the cap and its divergent cells named in
    place and, on a quadratic, its theory; ``view`` keeps what was drawn."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap, Normalize

    grid = view.grids[key]
    cmap = colormaps[style.SEQUENTIAL_CMAP].with_extremes(bad=style.NOT_CONVERGED_COLOR)
    ax.set_label(f"phase:{key}")
    view.meshes[key] = ax.pcolormesh(
        g.lr_e, g.mu_e, np.ma.masked_less(grid.steps, 0), cmap=cmap, norm=Normalize(0, g.steps), gid=f"phase:{key}"
    )
    ax.pcolormesh(
        g.lr_e,
        g.mu_e,
        np.ma.masked_where(~grid.diverged, grid.diverged.astype(float)),
        cmap=ListedColormap([DIVERGED_FACE]),
        gid=f"diverged-cells:{key}",
    )
    ii, jj = np.nonzero(grid.diverged)
    ax.plot(g.lrs[jj], g.mus[ii], **DIVERGED_MARK, gid=f"diverged:{key}")
    capped = (grid.steps < 0) & ~grid.diverged
    free = ~line_cells(_theory_lines(g, nesterov), g.lr_e, g.mu_e)  # no name on a line
    if not capped.any() or name_region(
        ax, capped & free, f"more than {g.steps}\nupdates (the cap)", g.lrs, g.mus, gid=f"region-label:cap:{key}"
    ):
        view.named.add(f"cap:{key}")
    if not grid.diverged.any() or name_region(
        ax, grid.diverged & free, "diverges", g.lrs, g.mus, gid=f"region-label:diverged:{key}"
    ):
        view.named.add(f"diverged:{key}")
    title = TITLES[key]
    if g.h is not None:
        title += _draw_step_theory(view, ax, key, nesterov, g)
    frame(ax, g.lr_e, g.mu_e, title)


def _theory_lines(g: _MapGrid, nesterov) -> list:
    """The stability boundary and critical-damping curve of one rule (``(n, 2)``
    arrays of learning rate, momentum); none without a quadratic."""
    if g.h is None:
        return []
    b_x = theory.convergence_boundary(g.mu_line, g.h[-1], nesterov)
    c_x = theory.critical_damping(g.mu_line, nesterov) / g.h[0]
    return [np.column_stack([b_x, g.mu_line]), np.column_stack([c_x, g.mu_line])]


def _draw_step_theory(view, ax, key, nesterov, g: _MapGrid) -> str:
    """The iso-rate contours, stability boundary and critical-damping curve of one rule
    on its map; returns the title's line on stability."""
    h, mu_line = g.h, g.mu_line
    assert h is not None  # the theory of a quadratic only
    lines = _theory_lines(g, nesterov)
    b_x, c_x = lines[0][:, 0], lines[1][:, 0]
    cs, view.rate_labels[key] = draw_contours(ax, key, nesterov, g, view.rate_levels, avoid=lines)
    view.contours[key] = cs
    view.drawn_levels.update(float(r) for r, path in zip(cs.levels, cs.get_paths()) if len(np.asarray(path.vertices)))
    theory_look, critical = style.ROLE_LOOKS["theory"], style.ROLE_LOOKS["critical"]
    (view.boundaries[key],) = ax.plot(
        b_x, mu_line, **theory_look.line(), gid=f"boundary:{key}", path_effects=_outline("black", theory_look.lw + 1.6)
    )
    (view.critical[key],) = ax.plot(
        c_x, mu_line, **critical.line(), gid=f"critical:{key}", path_effects=_outline("white", critical.lw + 2.0)
    )
    rule = "lr·h < 2(1+μ)/(1+2μ)" if nesterov else "lr·h < 2(1+μ)"
    return f"\nstable iff {rule}, h = {h[-1]:g}"


def _draw_ratio_map(view, ax, g: _MapGrid, title=None) -> None:
    """The log2 ratio of the two step maps where both converge, the other cells as
    neutral regions (``phase_regions``), every region named in place where it fits and,
    on a quadratic, each rule's stability boundary in its look, named."""
    from matplotlib.colors import Normalize

    ratio, h = view.ratio, g.h
    ax.set_label("phase:ratio")
    view.regions, _ = draw_ratio_regions(ax, view.grids, g.lr_e, g.mu_e)
    both = view.regions == REGIONS.index("both")
    # the scale fits the data: 2x, 4x or 8x, whichever holds the 98th percentile
    vmax, view.ratio_extend = ratio_limit(ratio[both])
    view.meshes["ratio"] = ax.pcolormesh(
        g.lr_e,
        g.mu_e,
        np.ma.masked_where(~both, ratio),
        cmap=ratio_cmap(),
        norm=Normalize(-vmax, vmax),
        gid="phase:ratio",
    )
    lines = {}
    if h is not None:
        looks = style.run_looks(RULES)
        for key, nesterov in RULES.items():
            look = looks[key]
            x = theory.convergence_boundary(g.mu_line, h[-1], nesterov)
            (lines[key],) = ax.plot(
                x, g.mu_line, **look.line(), gid=f"ratio-boundary:{key}", path_effects=_outline("white", look.lw + 2.4)
            )
    # the columns of the cap's grey alone are left out: the map's width goes to its colours
    view.ratio_columns = c0, c1 = shown_columns(view.regions)
    frame(ax, g.lr_e[c0 : c1 + 1], g.mu_e, title or "Who is faster: Nesterov's updates / momentum's")
    ax.set_xlabel(cropped_label(view, g), fontsize=style.LABEL_SIZE)
    if lines:
        name_ratio_boundaries(view, ax, g, lines, TIE_WITHIN)
    noted = _name_ratio_regions(view, ax, g)  # after the boundaries' names and the scale: a note keeps off them
    if lines and noted is not None:  # the note's cells over the boundary, the line thin across them
        bare_cells(
            ax,
            view.meshes["ratio"],
            noted & line_cells([np.column_stack(ln.get_data()) for ln in lines.values()], g.lr_e, g.mu_e),
            lines,
            g.lr_e,
            g.mu_e,
            gid="noted",
        )
    ax.tick_params(labelleft=True)


def _name_ratio_regions(view, ax, g: _MapGrid) -> None:
    """Name the ratio map's regions in place where the name fits (``view.named``);
    returns the cells of a span a note points at (None: no note)."""
    shown = shown_cells(view)  # names and notes only on the columns shown
    both = (view.regions == REGIONS.index("both")) & shown
    ratio = view.ratio
    near = np.log2(1 + TIE_WITHIN)
    tie = f"within {TIE_WITHIN:.0%}"
    # no name on a stability boundary
    off = (
        shown
        & ~line_cells([_theory_lines(g, n)[0] for n in RULES.values()] if g.h is not None else [], g.lr_e, g.mu_e)
        & ~text_cells(ax, [t for t in ax.texts if (t.get_gid() or "").startswith("boundary-label:")], g.lr_e, g.mu_e)
    )
    free = both & (np.abs(ratio) <= near) & off  # where a note may sit: the near-white cells
    taken = np.zeros_like(free)  # the notes' cells (and a column of air each side): no name there
    noted = None
    for text, mask in {
        "Nesterov faster": both & (ratio < -near) & off,
        "momentum faster": both & (ratio > near),
    }.items():
        if mask.any() and not name_region(
            ax, mask, text, g.lrs, g.mus, gid=f"region-label:{text}", fontsize=style.LABEL_SIZE, halo=True
        ):  # on its cells: no box
            covered = _note_extreme(view, ax, g, mask, free, text)
            if covered is not None:
                noted = mask if noted is None else noted | mask
                free &= ~covered
                taken |= covered | np.roll(covered, 1, axis=1) | np.roll(covered, -1, axis=1)
    name_region(ax, free, tie, g.lrs, g.mus, gid=f"region-label:{tie}", fontsize=style.LABEL_SIZE)
    for region in REGIONS[1:]:
        mask = view.regions == REGIONS.index(region)
        if mask.any() and name_region(
            ax,
            mask & off & ~taken,
            REGION_NAMES[region].format(steps=g.steps),
            g.lrs,
            g.mus,
            gid=f"region-label:{region}",
        ):
            view.named.add(region)
    return noted


def _note_extreme(view, ax, g: _MapGrid, mask, free, span):
    """Point at the cell of ``mask`` (a span too small for its name) farthest from a
    tie, with both counts and, near the slower rule's stability boundary, that reason
    (there its steep direction's rate is close to 1). Returns the cells the note covers."""
    i, j = np.unravel_index(np.argmax(np.where(mask, np.abs(view.ratio), -np.inf)), mask.shape)
    counts = {key: int(view.grids[key].steps[i, j]) for key in RULES}
    slower, faster = max(counts, key=counts.__getitem__), min(counts, key=counts.__getitem__)
    text = f"{span} here:\n{counts[faster]} updates vs {RULE_NAMES[slower]}'s {counts[slower]}"
    if (
        g.h is not None
        and g.lrs[j] >= NEAR_EDGE * theory.convergence_boundary(np.array([g.mus[i]]), g.h[-1], RULES[slower])[0]
    ):
        text += f"\n(just inside {RULE_NAMES[slower]}'s\nstability boundary)"
    # the note may sit on the near-white cells or on the grey of neither converging
    free = (
        (free | (view.regions == REGIONS.index("neither")))
        & shown_cells(view)
        & ~text_cells(ax, [t for t in ax.texts if (t.get_gid() or "").startswith("boundary-label:")], g.lr_e, g.mu_e)
    )
    return point_at_cell(ax, (int(i), int(j)), free, text, g.lrs, g.mus, gid=f"region-note:{span}")


SHOWS = {"both": PHASE_FIGSIZE, "steps": (style.WIDTH, 5.0), "ratio": (style.WIDTH, 5.3)}


def plot_phase(
    surface: Surface,
    learning_rates: ArrayLike | None = None,
    momenta: ArrayLike | None = None,
    steps: int = 150,
    tol: float = 1e-3,
    *,
    start: ArrayLike | None = None,
    rate_levels: Iterable[float] = RATE_LEVELS,
    figsize: tuple[float, float] | None = None,
    dpi: float = style.DPI,
    progress: bool = False,
    show: str = "both",
) -> Figure:
    """Updates to converge over a (learning rate x momentum) grid for classical
    momentum and Nesterov, their log2 ratio, and (on a quadratic) the stability
    boundaries, iso-rate contours and critical-damping curves. Regions are named in
    place; a short legend under the maps holds the lines and the regions no name fits
    in. Returns a ``Figure``.

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface; the theory needs
        ``hessian_eigenvalues`` (``RotatedQuadratic``, ``ShardedQuadratic``).
      learning_rates, momenta: increasing grid values (momenta in [0, 1)); default
        24 learning rates around ``1 / h_max`` and 20 momenta in [0, 0.95].
      steps: the cap on updates per cell; tol: on ``loss - surface.min_value``.
      start: default ``surface.default_start``.
      rate_levels: the iso-rate contours (the cap's rate is added).
      show: ``"steps"`` the two rule maps, ``"ratio"`` the ratio map, ``"both"``
        the rule maps over the ratio map; each with its own finding as title.
    """
    from ...theory.convergence import check_steps_tol, phase_grid

    if show not in SHOWS:
        raise ValueError(f"show must be one of {sorted(SHOWS)}. Received: {show!r}.")
    steps, tol = check_steps_tol(steps, tol)
    lrs, mus = default_axes(surface, learning_rates, momenta)
    grids = {
        key: phase_grid(surface, lrs, mus, steps, tol, nesterov, start, progress=progress)
        for key, nesterov in RULES.items()
    }
    fig = new_figure(SHOWS[show] if figsize is None else figsize, dpi)
    label = getattr(surface, "label", type(surface).__name__)
    m, n = grids["momentum"], grids["nesterov"]
    finding = (
        steps_finding(m.steps, n.steps, m.diverged, n.diverged)
        if show == "steps"
        else phase_finding(m.steps, n.steps, TIE_WITHIN)
    )
    body = headline(
        fig, finding, f"{label} · numpy reference of the tf-keras rule · at most {steps} updates, tol {tol:g}"
    )
    # the two rule maps side by side, the ratio map under them at full width (it is the
    # comparison); the legend holds only what is not named on the maps, outside them
    if show == "both":
        top, bottom = body.subfigures(2, 1, hspace=0.02, height_ratios=[1.0, 0.92])  # pyright: ignore[reportGeneralTypeIssues]  # stub: 2 rows give an array
    else:
        top = bottom = body
    axes = {}
    if show != "ratio":
        axes["momentum"], axes["nesterov"] = top.subplots(1, 2)
    if show != "steps":
        axes["ratio"] = bottom.subplots(1, 1)
    view = draw_phase(grids, surface, axes, loss0=cap_loss(surface, m, start), rate_levels=rate_levels)
    add_colorbars(view, body, [axes["momentum"], axes["nesterov"]] if "momentum" in axes else None, axes.get("ratio"))
    step_keys, ratio_keys = split_handles(view.handles)
    for sub, handles, gid in ((top, step_keys, "legend:maps"), (bottom, ratio_keys, "legend:ratio")):
        if handles and (show == "both" or (gid == "legend:maps") == (show == "steps")):
            # two columns when an entry is long (the iso-rate levels): three would not fit the width
            ncol = min(len(handles), 3 if max(len(str(h.get_label())) for h in handles) <= 45 else 2)
            leg = sub.legend(
                handles=handles,
                loc="outside lower center",
                ncol=ncol,
                fontsize=PHASE_LEGEND_SIZE,
                frameon=False,
                handlelength=2.6,
                handleheight=1.1,
                columnspacing=1.6,
                borderaxespad=0.2,
            )
            leg.set_gid(gid)
    return fig


def split_handles(handles: Sequence[Artist]) -> tuple[list[Artist], list[Artist]]:
    """The legend entries of the step maps (the cap, divergence, the theory's lines) and
    of the ratio map (its regions, ``phase_regions.region_patch``)."""
    regions = {str(region_patch(r, 0).get_label()).split(" (")[0][:12] for r in REGIONS[1:]}  # labels are str
    ratio = [h for h in handles if str(h.get_label())[:12] in regions]
    return [h for h in handles if h not in ratio], ratio


def default_axes(
    surface: Surface, learning_rates: ArrayLike | None = None, momenta: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The grid's learning rates and momenta, checked (defaults as ``plot_phase``)."""
    from ...theory.convergence import check_grid_axis

    if learning_rates is None:
        h = getattr(surface, "hessian_eigenvalues", None)
        h_max = None if h is None else float(np.max(h))
        learning_rates = np.geomspace(0.02 / h_max, 5.0 / h_max, 24) if h_max else np.geomspace(1e-4, 1e-1, 24)
    lrs = check_grid_axis("learning_rates", learning_rates, 0.0, np.inf)
    if np.any(lrs <= 0):
        raise ValueError(f"learning_rates must be > 0. Received: {lrs.tolist()!r}.")
    mus = check_grid_axis("momenta", np.linspace(0.0, 0.95, 20) if momenta is None else momenta, 0.0, 1.0)
    return lrs, mus
