"""The phase diagram as a figure: updates to converge over (learning rate x momentum) for
classical momentum and for Nesterov, the log2 ratio of the two, and the theory on top.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> fig = dtsgd_viz.plot_phase(surfaces.RotatedQuadratic(), steps=40, tol=1e-2)
    >>> [ax.get_label() for ax in fig.axes[:3]]
    ['phase:momentum', 'phase:nesterov', 'phase:ratio']

The maps come from the numpy reference of tf-keras' rule (``widgets._phase.phase_grid``,
tied to the real optimizer by the tests). Cells the colour maps do not cover are drawn as
what they are (``views.phase_regions``): the step cap pale grey, divergence with x
marks, and on the ratio map the cells only one rule converges in hatched neutrals (one
hatch where the other rule diverges, dots where it only ran into the cap), never in the
colour bar's colours; the regions are named in place where the name fits. On a
quadratic (a surface with ``hessian_eigenvalues``) the theory of ``dtsgd_viz.theory``
is drawn on them (``style.ROLE_LOOKS``):

* the **stability boundary** (the largest eigenvalue's spectral radius reaches 1): on
  the step maps dashed white; on the ratio map each rule's in its own look, named;
* **iso-rate contours**: where the worst mode's spectral radius is 0.6, 0.8, 0.9 and the
  rate the step cap needs (``(tol / loss0) ** (1 / (2 steps))``): the edge of the grey
  "not within tol" region follows that contour, not a boundary;
* the **critical-damping curve** of the slowest mode, black on both step maps: left of
  it that mode creeps in, right of it it oscillates.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..theory import quadratic as theory
from . import style
from .figure import headline, new_figure
from .phase_geometry import (REGIONS, cap_rate, cell_edges, label_spots, log_ticks, phase_finding,
                             phase_ratio, ratio_limit)
from .phase_regions import (DIVERGED_MARK, REGION_NAMES, draw_ratio_regions, legend_handles, name_region,
                            point_at_cell, region_patch, text_cells)
from .phase_regions import outline as _outline
from .phase_contours import draw_contours

__all__ = ["plot_phase", "draw_phase", "PhaseView", "phase_ratio", "cell_edges", "cap_rate",
           "RATE_LEVELS"]

RULES = theory.RULES
RATE_LEVELS = (0.6, 0.8, 0.9)
TITLES = {"momentum": "Classical momentum (heavy ball)", "nesterov": "Nesterov (tf-keras form)"}
RULE_NAMES = {"momentum": "momentum", "nesterov": "Nesterov"}
PHASE_FIGSIZE = (style.WIDTH, 9.6)   # the rule maps, the full-width ratio map, two short legends
TIE_WITHIN = 0.1   # the ratio map names "within 10%" where the counts are that close
NEAR_EDGE = 0.85   # a cell at this fraction of a rule's stability boundary lies "just inside" it


# ---- drawing ----------------------------------------------------------------------------


@dataclasses.dataclass(eq=False)
class PhaseView:
    """What ``draw_phase`` drew: ``meshes[key]`` (``momentum``, ``nesterov``,
    ``ratio``), the ``ratio`` values and each cell's ``regions`` (``phase_geometry.
    ratio_regions``), and per rule the ``boundaries``, ``contours`` (a ``ContourSet``
    of the worst mode's rate), ``critical`` lines; ``rate_levels``; ``named``: the
    regions named in place (the others are in ``handles``, the legend's entries)."""

    figure: object
    axes: dict
    grids: dict
    ratio: np.ndarray
    meshes: dict = dataclasses.field(default_factory=dict)
    boundaries: dict = dataclasses.field(default_factory=dict)
    contours: dict = dataclasses.field(default_factory=dict)
    critical: dict = dataclasses.field(default_factory=dict)
    rate_labels: dict = dataclasses.field(default_factory=dict)   # per rule, the contours' labels
    rate_levels: tuple = ()
    drawn_levels: set = dataclasses.field(default_factory=set)  # levels some map shows
    handles: list = dataclasses.field(default_factory=list)
    regions: np.ndarray | None = None
    named: set = dataclasses.field(default_factory=set)
    ratio_extend: str = "neither"   # the ratio colour bar's ends some cell lies past


def _ratio_cmap():
    from matplotlib import colormaps
    from matplotlib.colors import LinearSegmentedColormap
    rdbu = colormaps["RdBu"]
    # N odd, white exactly in the middle: a tie (0) is white, not RdBu's off-white; red is
    # Nesterov faster (its orange), blue momentum faster. Cells past the scale's ends take
    # its end colours (the colour bar's arrows); the one-rule regions are drawn apart
    cmap = LinearSegmentedColormap.from_list(
        "nesterov_vs_momentum", [rdbu(0.0), rdbu(0.2), rdbu(0.4), "white", rdbu(0.6), rdbu(0.8), rdbu(1.0)],
        N=255)
    return cmap.with_extremes(bad=(0, 0, 0, 0))


@dataclasses.dataclass(frozen=True)
class _MapGrid:
    """What every map of one ``draw_phase`` shares: the grid (``lrs``, ``mus``, the
    cells' edges ``lr_e``, ``mu_e``, the cap ``steps``), the quadratic's sorted
    eigenvalues ``h`` (None: no theory), the fine grid the theory is drawn on, and the
    cap's rate ``cap`` (NaN if unknown)."""

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
    return _MapGrid(lrs, mus, steps, lr_e, mu_e, h, lr_f, mu_f, mu_line, cap)


def draw_phase(grids, surface, axes, *, loss0=None, rate_levels=RATE_LEVELS) -> PhaseView:
    """Draw the two step maps and the ratio map of ``grids`` (``{"momentum":
    PhaseGrid, "nesterov": PhaseGrid}``) on ``axes`` (``{"momentum": ax, "nesterov":
    ax, "ratio": ax}``; ``ratio`` may be left out) with the theory of a quadratic
    ``surface``. Colour bars and a legend are the caller's (``view.handles``)."""
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
        _draw_ratio_map(view, axes["ratio"], g)
    view.handles = legend_handles(view, g, "ratio" in axes)
    return view


def _draw_step_map(view, ax, key, nesterov, g: _MapGrid) -> None:
    """One rule's map of updates to converge, the cap and its divergent cells named in
    place and, on a quadratic, its theory; ``view`` keeps what was drawn."""
    from matplotlib import colormaps
    from matplotlib.colors import Normalize
    grid = view.grids[key]
    cmap = colormaps[style.SEQUENTIAL_CMAP].with_extremes(bad=style.NOT_CONVERGED_COLOR)
    ax.set_label(f"phase:{key}")
    view.meshes[key] = ax.pcolormesh(g.lr_e, g.mu_e, np.ma.masked_less(grid.steps, 0), cmap=cmap,
                                     norm=Normalize(0, g.steps), gid=f"phase:{key}")
    ii, jj = np.nonzero(grid.diverged)
    ax.plot(g.lrs[jj], g.mus[ii], **DIVERGED_MARK, gid=f"diverged:{key}")
    capped = (grid.steps < 0) & ~grid.diverged
    if not capped.any() or name_region(ax, capped, f"more than {g.steps}\nupdates (the cap)", g.lrs, g.mus,
                                       gid=f"region-label:cap:{key}"):
        view.named.add(f"cap:{key}")
    if not grid.diverged.any() or name_region(ax, grid.diverged, "diverges", g.lrs, g.mus,
                                              gid=f"region-label:diverged:{key}"):
        view.named.add(f"diverged:{key}")
    title = TITLES[key]
    if g.h is not None:
        title += _draw_step_theory(view, ax, key, nesterov, g)
    _frame(ax, g.lr_e, g.mu_e, title)


def _draw_step_theory(view, ax, key, nesterov, g: _MapGrid) -> str:
    """The iso-rate contours, stability boundary and critical-damping curve of one rule
    on its map; returns the title's line on stability."""
    h, mu_line = g.h, g.mu_line
    b_x = theory.convergence_boundary(mu_line, h[-1], nesterov)
    c_x = theory.critical_damping(mu_line, nesterov) / h[0]
    cs, view.rate_labels[key] = draw_contours(ax, key, nesterov, g, view.rate_levels, avoid=[
        np.column_stack([b_x, mu_line]), np.column_stack([c_x, mu_line])])
    view.contours[key] = cs
    view.drawn_levels.update(float(r) for r, path in zip(cs.levels, cs.get_paths()) if len(path.vertices))
    theory_look, critical = style.ROLE_LOOKS["theory"], style.ROLE_LOOKS["critical"]
    (view.boundaries[key],) = ax.plot(b_x, mu_line, **theory_look.line(), gid=f"boundary:{key}",
                                      path_effects=_outline("black", theory_look.lw + 1.6))
    (view.critical[key],) = ax.plot(c_x, mu_line, **critical.line(), gid=f"critical:{key}",
                                    path_effects=_outline("white", critical.lw + 2.0))
    rule = "lr·h < 2(1+μ)/(1+2μ)" if nesterov else "lr·h < 2(1+μ)"
    return f"\nstable iff {rule}, h = {h[-1]:g}"


def _draw_ratio_map(view, ax, g: _MapGrid) -> None:
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
    view.meshes["ratio"] = ax.pcolormesh(g.lr_e, g.mu_e, np.ma.masked_where(~both, ratio),
                                         cmap=_ratio_cmap(), norm=Normalize(-vmax, vmax), gid="phase:ratio")
    if h is not None:
        looks = style.run_looks(RULES)
        for key, nesterov in RULES.items():
            look = looks[key]
            x = theory.convergence_boundary(g.mu_line, h[-1], nesterov)
            ax.plot(x, g.mu_line, **look.line(), gid=f"ratio-boundary:{key}",
                    path_effects=_outline("white", look.lw + 2.4))
            k = int(0.1 * len(g.mu_line))   # near the bottom, where the two lines are apart
            ax.annotate(f"{RULE_NAMES[key]}'s\nboundary", (x[k], g.mu_line[k]),
                        xytext=(-6 if nesterov else 6, 0), textcoords="offset points",
                        ha="right" if nesterov else "left", va="bottom", fontsize=style.NOTE_SIZE,
                        fontweight="bold", color=look.color, gid=f"boundary-label:{key}", zorder=9,
                        path_effects=_outline("white", 2.5))
    _frame(ax, g.lr_e, g.mu_e, "Who is faster: Nesterov's updates / momentum's")
    _name_ratio_regions(view, ax, g)   # after the boundaries' names and the scale: a note keeps off them
    ax.tick_params(labelleft=True)


def _name_ratio_regions(view, ax, g: _MapGrid) -> None:
    """Name the ratio map's regions in place where the name fits (``view.named``)."""
    both = view.regions == REGIONS.index("both")
    ratio = view.ratio
    near = np.log2(1 + TIE_WITHIN)
    tie = f"within {TIE_WITHIN:.0%}"
    free = both & (np.abs(ratio) <= near)   # where a note may sit: the near-white cells
    for text, mask in {"Nesterov faster": both & (ratio < -near), "momentum faster": both & (ratio > near)}.items():
        if mask.any() and not name_region(ax, mask, text, g.lrs, g.mus, gid=f"region-label:{text}",
                                          fontsize=style.TICK_SIZE):
            covered = _note_extreme(view, ax, g, mask, free, text)
            free = free if covered is None else free & ~covered
    name_region(ax, free, tie, g.lrs, g.mus, gid=f"region-label:{tie}", fontsize=style.TICK_SIZE)
    for region in REGIONS[1:]:
        mask = view.regions == REGIONS.index(region)
        if mask.any() and name_region(ax, mask, REGION_NAMES[region].format(steps=g.steps), g.lrs, g.mus,
                                      gid=f"region-label:{region}"):
            view.named.add(region)


def _note_extreme(view, ax, g: _MapGrid, mask, free, span):
    """Point at the cell of ``mask`` (a span too small for its name) farthest from a
    tie, with both counts and, near the slower rule's stability boundary, that reason
    (there its steep direction's rate is close to 1). Returns the cells the note covers."""
    i, j = np.unravel_index(np.argmax(np.where(mask, np.abs(view.ratio), -np.inf)), mask.shape)
    counts = {key: int(view.grids[key].steps[i, j]) for key in RULES}
    slower, faster = max(counts, key=counts.get), min(counts, key=counts.get)
    text = f"{span} here:\n{counts[faster]} updates vs {RULE_NAMES[slower]}'s {counts[slower]}"
    if g.h is not None and g.lrs[j] >= NEAR_EDGE * theory.convergence_boundary(
            np.array([g.mus[i]]), g.h[-1], RULES[slower])[0]:
        text += f"\n(just inside {RULE_NAMES[slower]}'s\nstability boundary)"
    # the note may sit on the near-white cells or on the grey of neither converging
    free = (free | (view.regions == REGIONS.index("neither"))) & ~text_cells(
        ax, [t for t in ax.texts if (t.get_gid() or "").startswith("boundary-label:")], g.lr_e, g.mu_e)
    return point_at_cell(ax, (int(i), int(j)), free, text, g.lrs, g.mus, gid=f"region-note:{span}")


def _number(x, _pos=None) -> str:
    return f"{x:g}"  # 0.02, not 2x10^-2


def set_log_ticks(axis, lo, hi):
    """Put ``log_ticks`` on a matplotlib ``axis`` (``ax.xaxis``), labelled as plain
    numbers (0.02, 0.05, 0.1), the other minor ticks unlabelled."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, NullFormatter
    major, minor = log_ticks(lo, hi)
    axis.set_major_locator(FixedLocator(major))
    axis.set_major_formatter(FuncFormatter(_number))
    if minor:
        axis.set_minor_locator(FixedLocator(minor))
        axis.set_minor_formatter(FuncFormatter(_number))
    else:
        axis.set_minor_locator(LogLocator(subs=np.arange(2, 10)))
        axis.set_minor_formatter(NullFormatter())


def _frame(ax, lr_e, mu_e, title):
    ax.set_xscale("log")
    set_log_ticks(ax.xaxis, lr_e[0], lr_e[-1])
    ax.set_xlim(lr_e[0], lr_e[-1])
    ax.set_ylim(mu_e[0], mu_e[-1])
    ax.set_xlabel("learning rate (log scale)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("momentum μ", fontsize=style.LABEL_SIZE)
    ax.set_title(title, fontsize=style.TITLE_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE, which="both")


def add_colorbars(view, fig, step_axes, ratio_ax, ratio_location="right"):
    """The shared steps colour bar and the ratio colour bar (its ends say who wins; an
    arrow at an end some cell lies past), ``ratio_location`` of the
    ratio map (``"bottom"``: horizontal, the map keeps its column's width)."""
    tol = view.grids["momentum"].tol
    # each bar in the (sub)figure of its maps; ``fig`` names the figure for the callers
    if step_axes:   # None: a ratio map alone (PhaseDiagram)
        cbar = step_axes[0].figure.colorbar(view.meshes["nesterov"], ax=step_axes, pad=0.015, fraction=0.05)
        cbar.set_label(f"updates until the loss stays within {tol:g} of the minimum", fontsize=style.NOTE_SIZE)
        cbar.ax.tick_params(labelsize=style.TICK_SIZE)
    if ratio_ax is None:
        return
    across = ratio_location in ("bottom", "top")
    rbar = ratio_ax.figure.colorbar(view.meshes["ratio"], ax=ratio_ax, location=ratio_location,
                                    pad=0.03 if across else 0.02, fraction=0.05 if across else 0.08,
                                    shrink=0.9 if across else 1.0, extend=view.ratio_extend)
    vmax = view.meshes["ratio"].norm.vmax
    ticks = np.arange(-vmax, vmax + 0.25, 0.5 if vmax <= 1 else 1.0)
    rbar.set_ticks(ticks, labels=[_speedup(t) for t in ticks])
    rbar.ax.tick_params(labelsize=style.TICK_SIZE)
    # the label reads as the scale runs (bottom to top, left to right)
    rbar.set_label("Nesterov faster  ·  tie  ·  momentum faster", fontsize=style.NOTE_SIZE)


def _speedup(t):
    return "tie" if t == 0 else f"{2 ** abs(t):.3g}×"


def plot_phase(surface, learning_rates=None, momenta=None, steps=150, tol=1e-3, *, start=None,
               rate_levels=RATE_LEVELS, figsize=PHASE_FIGSIZE, dpi=style.DPI, progress=False):
    """Updates to converge over a (learning rate x momentum) grid for classical
    momentum and Nesterov (top), their log2 ratio (below), and (on a quadratic) the
    stability boundaries, iso-rate contours and critical-damping curves. Regions are
    named in place; the short legend beside the ratio map holds the lines and the
    regions no name fits in. Returns a ``Figure``.

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface; the theory needs
        ``hessian_eigenvalues`` (``RotatedQuadratic``, ``ShardedQuadratic``).
      learning_rates, momenta: increasing grid values (momenta in [0, 1)); default
        24 learning rates around ``1 / h_max`` and 20 momenta in [0, 0.95].
      steps: the cap on updates per cell; tol: on ``loss - surface.min_value``.
      start: default ``surface.default_start``.
      rate_levels: the iso-rate contours (the cap's rate is added).
    """
    from ..theory.convergence import check_steps_tol, phase_grid
    steps, tol = check_steps_tol(steps, tol)
    lrs, mus = default_axes(surface, learning_rates, momenta)
    grids = {key: phase_grid(surface, lrs, mus, steps, tol, nesterov, start, progress=progress)
             for key, nesterov in RULES.items()}
    fig = new_figure(figsize, dpi)
    label = getattr(surface, "label", type(surface).__name__)
    body = headline(fig, phase_finding(grids["momentum"].steps, grids["nesterov"].steps, TIE_WITHIN),
                    f"{label} · numpy reference of the tf-keras rule · at most {steps} updates, "
                    f"tol {tol:g}")
    # the two rule maps side by side, the ratio map under them at full width (it is the
    # comparison); the legend holds only what is not named on the maps, outside them
    top, bottom = body.subfigures(2, 1, hspace=0.02, height_ratios=[1.0, 0.92])
    ax_m, ax_n = top.subplots(1, 2)
    ax_r = bottom.subplots(1, 1)
    loss0 = float(grids["momentum"].losses[0].flat[0]) - float(surface.min_value)
    view = draw_phase(grids, surface, {"momentum": ax_m, "nesterov": ax_n, "ratio": ax_r},
                      loss0=loss0, rate_levels=rate_levels)
    add_colorbars(view, body, [ax_m, ax_n], ax_r)
    step_keys, ratio_keys = split_handles(view.handles)
    for sub, handles, gid in ((top, step_keys, "legend:maps"), (bottom, ratio_keys, "legend:ratio")):
        if handles:
            leg = sub.legend(handles=handles, loc="outside lower center", ncol=min(len(handles), 3),
                             fontsize=style.NOTE_SIZE, frameon=False, handlelength=2.4,
                             columnspacing=1.6, borderaxespad=0.2)
            leg.set_gid(gid)
    return fig


def split_handles(handles) -> tuple[list, list]:
    """The legend entries of the step maps (the cap, divergence, the theory's lines) and
    of the ratio map (its regions, ``phase_regions.region_patch``)."""
    regions = {region_patch(r, 0).get_label().split(" (")[0][:12] for r in REGIONS[1:]}
    ratio = [h for h in handles if h.get_label()[:12] in regions]
    return [h for h in handles if h not in ratio], ratio


def default_axes(surface, learning_rates=None, momenta=None):
    """The grid's learning rates and momenta, checked (defaults as ``plot_phase``)."""
    from ..theory.convergence import check_grid_axis
    if learning_rates is None:
        h = getattr(surface, "hessian_eigenvalues", None)
        h_max = None if h is None else float(np.max(h))
        learning_rates = (np.geomspace(0.02 / h_max, 5.0 / h_max, 24) if h_max
                          else np.geomspace(1e-4, 1e-1, 24))
    lrs = check_grid_axis("learning_rates", learning_rates, 0.0, np.inf)
    if np.any(lrs <= 0):
        raise ValueError(f"learning_rates must be > 0. Received: {lrs.tolist()!r}.")
    mus = check_grid_axis("momenta", np.linspace(0.0, 0.95, 20) if momenta is None else momenta, 0.0, 1.0)
    return lrs, mus
