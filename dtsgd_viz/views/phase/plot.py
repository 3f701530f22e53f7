"""The phase diagram: each rule's updates to converge over (learning rate x momentum), their log2 ratio, theory."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.lines import Line2D

from ...theory import quadratic as theory
from ..core import style
from ..core.figure import headline, new_figure
from ..paths.geometry import rule_name
from . import regions as rg
from .axes import PHASE_LEGEND_SIZE, add_colorbars, frame
from .geometry import (
    REGIONS,
    TIE_WITHIN,
    cap_loss,
    cap_rate,
    cell_edges,
    contour_mask,
    phase_finding,
    phase_ratio,
    ratio_limit,
    side_cells,
    steps_finding,
)
from .regions import DIVERGED_FACE

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.colors import Colormap
    from matplotlib.contour import ContourSet
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from ...theory.convergence import PhaseGrid
    from ...theory.surfaces import Surface


RULES = theory.RULES
MIN_PIECE = 0.08  # axes fractions: shorter pieces of a contour (cut by the mask) are not drawn
SHOWS = {"both": (style.WIDTH, 9.4), "steps": (style.WIDTH, 5.0), "ratio": (style.WIDTH, 5.0)}


@dataclasses.dataclass(eq=False)
class PhaseView:
    """What ``draw_phase`` drew, per map and per rule, and the legends' entries."""

    axes: dict[str, Axes]
    grids: dict[str, PhaseGrid]
    ratio: np.ndarray
    meshes: dict = dataclasses.field(default_factory=dict)
    boundaries: dict = dataclasses.field(default_factory=dict)
    ratio_boundaries: dict = dataclasses.field(default_factory=dict)
    contours: dict = dataclasses.field(default_factory=dict)
    critical: dict = dataclasses.field(default_factory=dict)
    step_handles: list[Artist] = dataclasses.field(default_factory=list)
    ratio_handles: list[Artist] = dataclasses.field(default_factory=list)
    regions: np.ndarray | None = None
    ratio_extend: str = "neither"  # the ratio colour bar's ends some cell lies past


def ratio_cmap(vmax: float = 2.0) -> Colormap:
    """The ratio colour map on ``Normalize(-vmax, vmax)``: Nesterov faster red, momentum blue, ties ``TIE_FACE``."""
    from matplotlib import colormaps
    from matplotlib.colors import LinearSegmentedColormap

    rdbu = colormaps["RdBu"]
    t = min(np.log2(1.0 + TIE_WITHIN) / (2.0 * vmax), 0.2)
    stops = [(0.0, rdbu(0.0)), (0.25, rdbu(0.2)), (0.5 - t, rdbu(0.36)), (0.5 - t, style.TIE_FACE)]
    stops += [(0.5 + t, style.TIE_FACE), (0.5 + t, rdbu(0.64)), (0.75, rdbu(0.8)), (1.0, rdbu(1.0))]
    return LinearSegmentedColormap.from_list("nesterov_vs_momentum", stops, N=511).with_extremes(bad=(0, 0, 0, 0))


@dataclasses.dataclass(frozen=True)
class _MapGrid:
    """What the maps of one ``draw_phase`` share; ``h``: sorted eigenvalues (None: no theory); ``*_f``: for contours."""

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
    lrs, mus = grid.learning_rates, grid.momenta
    lr_e, mu_e = cell_edges(lrs, log=True), cell_edges(mus, log=False)
    h = getattr(surface, "hessian_eigenvalues", None)
    h = None if h is None else np.unique(np.asarray(h, np.float64))
    cap = cap_rate(loss0, grid.tol, grid.max_steps) if loss0 is not None else float("nan")
    if h is not None and np.isfinite(cap):
        cap = round(cap, 3)
    lr_f = np.geomspace(lr_e[0], lr_e[-1], 300)
    mu_f = np.linspace(max(mu_e[0], 0.0), min(mu_e[-1], 0.999), 250)
    return _MapGrid(lrs, mus, grid.max_steps, lr_e, mu_e, h, lr_f, mu_f, np.linspace(mus[0], mus[-1], 200), cap)


def draw_phase(
    grids: Mapping[str, PhaseGrid],
    surface: Surface,
    axes: Mapping[str, Axes],
    *,
    loss0: float | None = None,
    ratio_title: str | None = None,
) -> PhaseView:
    """Draw the maps of ``grids`` on ``axes`` (``{"momentum", "nesterov", "ratio"}``, any left out), a quadratic
    ``surface``'s theory and the iso-rate contour of ``loss0``'s cap rate; legends and colour bars are the caller's."""
    ratio = phase_ratio(grids["momentum"].steps, grids["nesterov"].steps)
    view = PhaseView(dict(axes), dict(grids), ratio)
    g = _map_grid(grids["momentum"], surface, loss0)
    for key, nesterov in RULES.items():
        if axes.get(key) is not None:
            _draw_step_map(view, axes[key], key, nesterov, g)
    if axes.get("nesterov") is not None and axes.get("momentum") is not None:
        axes["nesterov"].tick_params(labelleft=False)
        axes["nesterov"].set_ylabel("")
    if axes.get("ratio") is not None:
        _draw_ratio_map(view, axes["ratio"], g, ratio_title)
    drawn = any(len(cs.get_paths()[0].vertices) for cs in view.contours.values())
    levels_text = f"iso-rate ρ = {g.cap:g} (the cap's edge)" if drawn else ""
    critical = f"critical damping (h = {g.h[0]:g})" if g.h is not None else ""
    view.step_handles, view.ratio_handles = rg.legend_handles(view, g.steps, levels_text, critical)
    return view


def _draw_step_map(view: PhaseView, ax: Axes, key: str, nesterov: bool, g: _MapGrid) -> None:
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap, Normalize

    grid = view.grids[key]
    cmap = colormaps[style.SEQUENTIAL_CMAP].with_extremes(bad=style.NOT_CONVERGED_COLOR)
    ax.set_label(f"phase:{key}")
    lr_e, mu_e, src = side_cells(g.lrs, g.mus, g.h, {key: nesterov})  # cells cut along the boundary drawn
    steps, diverged = grid.steps[src], grid.diverged[src]
    counts, dark = np.ma.masked_less(steps, 0), np.ma.masked_where(~diverged, diverged.astype(float))
    mesh: dict[str, Any] = dict(cmap=cmap, norm=Normalize(0, g.steps), rasterized=True)  # pixels in SVG and PDF
    view.meshes[key] = ax.pcolormesh(lr_e, mu_e, counts, **mesh, gid=f"phase:{key}")
    ax.pcolormesh(lr_e, mu_e, dark, cmap=ListedColormap([DIVERGED_FACE]), rasterized=True, gid=f"diverged-cells:{key}")
    ii, jj = np.nonzero(grid.diverged)
    ax.plot(g.lrs[jj], g.mus[ii], **rg.DIVERGED_MARK, gid=f"diverged:{key}")
    if g.h is not None:
        if np.isfinite(g.cap):
            view.contours[key] = draw_cap_contour(ax, key, nesterov, g)
        view.boundaries[key] = _boundary(ax, key, nesterov, g, f"boundary:{key}")
        crit, lr = style.ROLE_LOOKS["critical"], theory.critical_damping(g.mu_line, nesterov) / g.h[0]
        line = dict(**crit.line(), gid=f"critical:{key}", path_effects=rg.outline("white", crit.lw + 2.0))
        (view.critical[key],) = ax.plot(lr, g.mu_line, **line)
    frame(ax, g.lr_e, g.mu_e, rule_name(key).capitalize())  # what it counts: the colour bar; its curves: the legend


def _boundary(ax: Axes, key: str, nesterov: bool, g: _MapGrid, gid: str) -> Artist:
    assert g.h is not None  # drawn on a quadratic's maps only
    mu = g.mu_line
    return ax.plot(theory.convergence_boundary(mu, g.h[-1], nesterov), mu, **rg.boundary_look(key), gid=gid)[0]


def _pieces(path) -> list[np.ndarray]:
    from matplotlib.path import Path

    v, codes = np.asarray(path.vertices), path.codes
    if not len(v):
        return []
    starts = np.flatnonzero(codes == Path.MOVETO) if codes is not None else np.array([0])
    return np.split(v, starts[1:])


def _arc(xy: np.ndarray, g: _MapGrid) -> np.ndarray:
    """The arc length along a contour piece, in axes fractions, at each vertex."""
    lx, my = np.log(g.lr_e[[0, -1]]), g.mu_e[[0, -1]]
    f = np.column_stack([(np.log(xy[:, 0]) - lx[0]) / (lx[1] - lx[0]), (xy[:, 1] - my[0]) / (my[1] - my[0])])
    return np.r_[0.0, np.cumsum(np.hypot(*np.diff(f, axis=0).T))]


def draw_cap_contour(ax: Axes, key: str, nesterov: bool, g: _MapGrid) -> ContourSet:
    """The cap's iso-rate contour, masked, left of the flat mode's critical damping (past it the steep one decides)."""
    from matplotlib.path import Path

    assert g.h is not None  # contours are drawn on a quadratic's maps only
    look = style.ROLE_LOOKS["rate_level"]
    rho = theory.problem_rate(g.lr_f, g.mu_f, g.h, nesterov)
    rho = np.ma.masked_where(contour_mask(g.lr_f, g.mu_f, g.h, nesterov), rho)
    cs = ax.contour(g.lr_f, g.mu_f, rho, levels=[g.cap], colors=look.color, linewidths=look.lw, zorder=look.zorder)
    cs.set_gid(f"rate:{key}")
    cs.set(path_effects=rg.outline("0.15", 2.0))
    kept = []
    for v in _pieces(cs.get_paths()[0]):
        ok = v[:, 0] < theory.critical_damping(np.clip(v[:, 1], 0.0, 0.9999), nesterov) / g.h[0]
        runs = np.split(np.arange(len(v)), np.flatnonzero(np.diff(ok.astype(int))) + 1)
        kept += [v[r] for r in runs if ok[r[0]] and len(r) > 1 and _arc(v[r], g)[-1] >= MIN_PIECE]
    cs.set_paths([Path.make_compound_path(*map(Path, kept))])
    return cs


def _draw_ratio_map(view: PhaseView, ax: Axes, g: _MapGrid, title: str | None = None) -> None:
    from matplotlib.colors import Normalize

    ax.set_label("phase:ratio")
    lr_e, mu_e, src = cells = side_cells(g.lrs, g.mus, g.h, RULES)  # cells cut along both boundaries
    view.regions = rg.draw_ratio_regions(ax, view.grids, cells)
    both = view.regions == REGIONS.index("both")
    vmax, view.ratio_extend = ratio_limit(view.ratio[both])  # 2x, 4x or 8x: whichever holds the 98th percentile
    shown, norm = np.ma.masked_where(~both[src], view.ratio[src]), Normalize(-vmax, vmax)
    mesh: dict[str, Any] = dict(cmap=ratio_cmap(vmax), norm=norm, rasterized=True)  # pixels in SVG and PDF
    view.meshes["ratio"] = ax.pcolormesh(lr_e, mu_e, shown, **mesh, gid="phase:ratio")
    if g.h is not None:
        for key, nesterov in RULES.items():
            view.ratio_boundaries[key] = _boundary(ax, key, nesterov, g, f"ratio-boundary:{key}")
    frame(ax, g.lr_e, g.mu_e, title or "Who is faster: Nesterov's updates / momentum's")
    ax.tick_params(labelleft=True)


def plot_phase(
    surface: Surface,
    learning_rates: ArrayLike | None = None,
    momenta: ArrayLike | None = None,
    steps: int = 150,
    tol: float = 1e-3,
    *,
    start: ArrayLike | None = None,
    figsize: tuple[float, float] | None = None,
    dpi: float = style.DPI,
    progress: bool = False,
    show: str = "both",
    mark: tuple[float, float] | None = None,
) -> Figure:
    """Updates to converge over a (learning rate x momentum) grid for momentum and Nesterov, their log2 ratio and
    (on a quadratic) the theory; the title is ``steps_finding`` (``show="steps"``) or ``phase_finding``.

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface (the theory needs ``hessian_eigenvalues``).
      learning_rates, momenta: increasing grid values; default 24 around ``1 / h_max`` and 20 in [0, 0.95].
      steps: the cap on updates per cell; tol: on ``loss - surface.min_value``.
      show: ``"steps"``, ``"ratio"`` or ``"both"`` (the rule maps over the ratio map).
      mark: ``(learning_rate, momentum)`` of a cell to outline on the maps.
    """
    from ...theory.convergence import check_steps_tol, phase_grid

    if show not in SHOWS:
        raise ValueError(f"show must be one of {sorted(SHOWS)}. Received: {show!r}.")
    steps, tol = check_steps_tol(steps, tol)
    lrs, mus = default_axes(surface, learning_rates, momenta)
    lr_e, mu_e = cell_edges(lrs, log=True), cell_edges(mus, log=False)
    if mark is not None:
        if not (len(mark) == 2 and lr_e[0] <= float(mark[0]) <= lr_e[-1] and mu_e[0] <= float(mark[1]) <= mu_e[-1]):
            raise ValueError(
                f"mark must be (learning_rate, momentum) inside the grid: lr in {lr_e[0]:.3g}..{lr_e[-1]:.3g}, "
                f"momentum in {mu_e[0]:.3g}..{mu_e[-1]:.3g}. Received: {mark!r}."
            )
    grids = {k: phase_grid(surface, lrs, mus, steps, tol, nz, start, progress=progress) for k, nz in RULES.items()}
    fig = new_figure(SHOWS[show] if figsize is None else figsize, dpi)
    label = getattr(surface, "label", type(surface).__name__)
    m, n = grids["momentum"], grids["nesterov"]
    finding = steps_finding(m.steps, n.steps) if show == "steps" else phase_finding(m.steps, n.steps, TIE_WITHIN)
    body = headline(fig, finding, f"{label} · numpy reference of the tf-keras rule · ≤ {steps} updates, tol {tol:g}")
    if show == "both":  # the two rule maps side by side, the ratio map (the comparison) under them
        top, bottom = body.subfigures(2, 1, hspace=0.02, height_ratios=[1.0, 0.95])  # pyright: ignore[reportGeneralTypeIssues]  # stub: 2 rows give an array
    else:
        top = bottom = body
    axes = {}
    if show != "ratio":
        axes["momentum"], axes["nesterov"] = top.subplots(1, 2)
    if show != "steps":
        axes["ratio"] = bottom.subplots(1, 1)
    view = draw_phase(grids, surface, axes, loss0=cap_loss(surface, m, start))
    for key, grid in grids.items() if show == "steps" else ():  # a diamond on the title's fastest cells
        ok = grid.steps >= 0
        ii, jj = np.nonzero(ok & (grid.steps == np.min(grid.steps, initial=steps + 1, where=ok)))
        axes[key].plot(grid.learning_rates[jj], grid.momenta[ii], **rg.FEWEST_MARK, gid=f"fewest:{key}")
    if show == "steps" and any((grid.steps >= 0).any() for grid in grids.values()):
        view.step_handles.append(Line2D([], [], **rg.FEWEST_MARK, label="fewest updates (the title's)"))
    if mark is not None:
        from matplotlib.patches import Patch

        for key, ax in axes.items():
            rg.mark_cell(ax, lr_e, mu_e, float(mark[0]), float(mark[1]), gid=f"mark:{key}")
        entry = Patch(**{**rg.cell_look(), "zorder": None}, label=f"the runs at lr {mark[0]:g}, μ {mark[1]:g}")
        (view.step_handles if show != "ratio" else view.ratio_handles).append(entry)
    add_colorbars(view, body, [axes["momentum"], axes["nesterov"]] if "momentum" in axes else None, axes.get("ratio"))
    for sub, handles, gid in ((top, view.step_handles, "legend:maps"), (bottom, view.ratio_handles, "legend:ratio")):
        if handles:  # show="steps" has no ratio entries, show="ratio" no step ones
            look: dict[str, Any] = dict(loc="outside lower center", ncol=2, frameon=False, fontsize=PHASE_LEGEND_SIZE)
            sub.legend(handles=handles, **look).set_gid(gid)
    return fig


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
