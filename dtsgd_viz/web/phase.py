"""``PhaseDiagram`` drawn by the browser: the map of who needs fewer updates, Nesterov or
classical momentum, over (learning rate, momentum) on a 2-parameter quadratic, and the
two rules' paths and losses at a picked cell. Click a cell, or drag the start on the
paths: the browser runs the rule there at once, so it works with no kernel too.

    surface = surfaces.RotatedQuadratic()
    dtsgd_viz.web.PhaseDiagram(surface, steps=150)           # last in a cell

Python computes the map once (``phase_state``: every cell's steps for both rules with
the numpy reference of tf-keras' rule, ``theory.convergence.phase_grid``, the colours
``views.phase`` gives them, each rule's stability boundary, the contour picture). A
clicked cell or a dragged start needs a path Python did not compute: the ES module
runs the same recurrence as ``theory.reference.sgd_step`` (in float64; a browser test
checks it against numpy to 1e-12). With a kernel, each pick also runs the real DTensor
SGD (``run_real``), drawn as dots over the rule's line; a saved page keeps the last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets
from matplotlib import colors as mcolors
from numpy.typing import ArrayLike

from ..theory.convergence import check_steps_tol, phase_grid
from ..theory.quadratic import RULES, convergence_boundary
from ..views.core import style
from ..views.paths import geometry as geo
from ..views.paths.geometry import rule_name
from ..views.phase.axes import ratio_ticks, speedup_text
from ..views.phase.geometry import (
    REGIONS,
    cell_edges,
    log_ticks,
    phase_finding,
    phase_ratio,
    ratio_limit,
    ratio_regions,
    side_cells,
)
from ..views.phase.regions import REGION_NAMES
from . import encode
from .look import look_data
from .paths import contour_png, loss_ticks, update_ticks
from .widget import BrowserWidget

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..theory.surfaces import Surface

__all__ = ["phase_state", "quadratic_terms", "PhaseDiagram"]

CMAP_STOPS = 33  # samples of the ratio colour map (odd: white exactly in the middle)


def quadratic_terms(surface: Surface) -> tuple[np.ndarray, np.ndarray, float]:
    """``(H, m, f_min)`` of a 2-parameter quadratic surface, its gradient ``H (p - m)``
    and its loss ``0.5 (p - m)·H(p - m) + f_min``, checked against the surface's own
    ``grad_np`` and ``value_np`` at random points (the browser runs the rule with them).

    >>> from dtsgd_viz import surfaces
    >>> H, m, f = quadratic_terms(surfaces.RotatedQuadratic())
    >>> H.shape, m.tolist(), f
    ((2, 2), [0.0, 0.0], 0.0)
    """
    if not all(hasattr(surface, a) for a in ("shape", "value_np", "grad_np", "minimum", "min_value")):
        raise TypeError(f"surface must be a dtsgd_viz.surfaces surface. Received: {surface!r}.")
    hessian = getattr(surface, "hessian", None)
    size = int(np.prod(surface.shape))
    if hessian is None or size != 2:
        raise ValueError(
            "dtsgd_viz.web.PhaseDiagram runs the rule in the browser, on a quadratic of 2 parameters "
            "(a surface with a `hessian`, e.g. surfaces.RotatedQuadratic()). "
            f"Received: {type(surface).__name__} with {size} parameter(s)"
            f"{'' if hessian is not None else ' and no hessian'}; dtsgd_viz.widgets.PhaseDiagram takes any surface."
        )
    H = np.asarray(hessian, np.float64).reshape(2, 2)
    m = np.asarray(surface.minimum, np.float64).reshape(2)
    f_min = float(surface.min_value)
    pts = np.random.default_rng(0).uniform(-3.0, 3.0, (8, 2)) + m
    grad = np.asarray(surface.grad_np(pts.reshape(8, *surface.shape)), np.float64).reshape(8, 2)
    value = np.asarray(surface.value_np(pts.reshape(8, *surface.shape)), np.float64).reshape(8)
    d = pts - m
    if not (
        np.allclose(grad, d @ H.T, rtol=1e-6, atol=1e-9)
        and np.allclose(value, 0.5 * np.einsum("ki,ij,kj->k", d, H, d) + f_min, rtol=1e-6, atol=1e-9)
    ):
        raise ValueError(
            f"{type(surface).__name__}'s gradient is not its hessian times (p - minimum): not a quadratic."
        )
    return H, m, f_min


def _ratio_colors(ratio: np.ndarray, vmax: float) -> tuple[np.ndarray, list[str]]:
    """Each cell's colour on the ratio scale (``views.phase``' colour map) and the scale's
    stops from -vmax to vmax, as hex."""
    from matplotlib.colors import Normalize

    from ..views.phase.plot import ratio_cmap

    cmap, norm = ratio_cmap(vmax), Normalize(-vmax, vmax)
    with np.errstate(invalid="ignore"):
        rgba = cmap(norm(np.clip(np.nan_to_num(ratio, nan=0.0, posinf=vmax, neginf=-vmax), -vmax, vmax)))
    cells = np.array([mcolors.to_hex(tuple(c)) for c in rgba.reshape(-1, 4)]).reshape(ratio.shape)
    stops = [mcolors.to_hex(cmap(x)) for x in np.linspace(0.0, 1.0, CMAP_STOPS)]
    return cells, stops


def cut_cells(lrs: np.ndarray, mus: np.ndarray, h: ArrayLike) -> list[list[float]]:
    """Where a stability boundary cuts a cell, what ``plot_phase`` draws there (``side_cells``): rectangles
    ``[lr0, lr1, mu0, mu1, k]``, one per run along a row of fine cells showing cell ``k`` (``mu index * len(lrs) +
    lr index``, as ``colors``) rather than their own, the nearest run on their side of both boundaries."""
    lr_f, mu_f, (i, j) = side_cells(lrs, mus, h, RULES)
    own_j = np.searchsorted(cell_edges(lrs, log=True), np.sqrt(lr_f[1:] * lr_f[:-1])) - 1
    own_i = np.searchsorted(cell_edges(mus, log=False), (mu_f[1:] + mu_f[:-1]) / 2) - 1
    shown = i * len(lrs) + j
    shown = np.where(shown == own_i[:, None] * len(lrs) + own_j[None, :], -1, shown)  # -1: the cell's own run
    out, g = [], lambda v: float(f"{v:.6g}")  # 6 digits: far under a pixel
    for r, row in enumerate(shown):
        ends = np.r_[0, np.flatnonzero(np.diff(row)) + 1, len(row)]
        out += [[g(lr_f[a]), g(lr_f[b]), g(mu_f[r]), g(mu_f[r + 1]), int(row[a])] for a, b in zip(ends[:-1], ends[1:])]
    return [c for c in out if c[4] >= 0]


def phase_state(
    surface: Surface,
    *,
    learning_rates: ArrayLike | None = None,
    momenta: ArrayLike | None = None,
    steps: int = 150,
    tol: float = 1e-3,
    start: ArrayLike | None = None,
    pick: Sequence[int] | None = None,
    contour_px: int = 360,
) -> dict[str, Any]:
    """Everything the browser's ``PhaseDiagram`` draws, as plain data: the grid and its
    cells' edges, each cell's steps for both rules (``phase_grid``, -1: not within
    ``tol`` in ``steps`` updates), diverged flags, region, log2 ratio and colour, the
    colour scale, each rule's stability boundary, and the quadratic (``H``, minimum,
    loss at the minimum, view box, start, contour picture) the browser runs the rule on.
    ``pick``: the cell shown first, ``(lr_index, mu_index)`` (None: the middle)."""
    from ..runs import check_start
    from ..views.phase.plot import TIE_WITHIN, default_axes

    H, minimum, f_min = quadratic_terms(surface)
    steps, tol = check_steps_tol(steps, tol)
    start_arr = np.asarray(check_start(surface, start), np.float64).reshape(2)
    lrs, mus = default_axes(surface, learning_rates, momenta)
    grids = {k: phase_grid(surface, lrs, mus, steps, tol, nesterov, start_arr) for k, nesterov in RULES.items()}
    m, n = grids["momentum"], grids["nesterov"]
    pick = (len(lrs) // 2, len(mus) // 2) if pick is None else tuple(pick)
    if len(pick) != 2 or not (0 <= int(pick[0]) < len(lrs) and 0 <= int(pick[1]) < len(mus)):
        raise ValueError(
            f"pick must be (lr_index, mu_index) with lr_index in 0..{len(lrs) - 1} and mu_index in "
            f"0..{len(mus) - 1}. Received: {pick!r}."
        )
    regions = ratio_regions(m.steps, m.diverged, n.steps, n.diverged)
    ratio = phase_ratio(m.steps, n.steps)
    both = regions == REGIONS.index("both")
    vmax, extend = ratio_limit(ratio[both])
    from ..views.phase.regions import REGION_FACES

    colors, stops = _ratio_colors(ratio, vmax)
    for r, name in enumerate(REGIONS):
        if name != "both":
            colors[regions == r] = mcolors.to_hex(REGION_FACES[name])
    scale_ticks = ratio_ticks(vmax)
    lr_e, mu_e = cell_edges(lrs, log=True), cell_edges(mus, log=False)
    lr_major, lr_minor = log_ticks(float(lr_e[0]), float(lr_e[-1]))
    mu_ticks = [float(t) for t in np.round(np.arange(0.0, 0.9, 0.2), 10) if mu_e[0] <= t <= mu_e[-1]]  # μ < 1
    h_max = float(np.max(np.linalg.eigvalsh(H)))
    mu_line = np.linspace(mus[0], mus[-1], 120)
    looks = style.run_looks(list(RULES))
    box = getattr(surface, "view_box", None)
    if box is None:
        span = 1.3 * max(float(np.max(np.abs(start_arr - minimum))), 1e-6)
        box = ((minimum[0] - span, minimum[0] + span), (minimum[1] - span, minimum[1] + span))
    plane = geo.identity_plane()
    grid = geo.loss_grid(surface.value_np, plane, surface.shape, box)
    # the loss panel: from a hundredth of the tolerance to ten times the starting loss (a
    # run that overshoots more, or diverges, leaves through the top)
    loss_lo = max(float(tol) / 100.0, 1e-12)
    loss_hi = max(10.0 * float(m.losses[0].flat[0] - f_min), loss_lo * 100)
    ticks, labels = loss_ticks(loss_lo, loss_hi)
    return {
        "kind": "phase",
        "rules": list(RULES),
        "rule_names": {k: rule_name(k) for k in RULES},
        "nesterov": dict(RULES),
        "looks": {k: look_data(looks[k]) for k in RULES},
        "learning_rates": encode.array(lrs),
        "momenta": encode.array(mus),
        "lr_edges": encode.array(lr_e),
        "mu_edges": encode.array(mu_e),
        "steps": {k: encode.array(g.steps, "<i4") for k, g in grids.items()},
        "diverged": {k: encode.array(g.diverged, "<i4") for k, g in grids.items()},
        "regions": encode.array(regions, "<i4"),
        "region_names": {name: REGION_NAMES[name].format(steps=steps).replace("\n", " ") for name in REGIONS[1:]},
        "region_order": list(REGIONS),
        "hatches": {k: style.HATCHES[k] for k in style.HATCHES},
        "hatch_color": style.HATCH_COLOR,
        "ratio": encode.array(np.nan_to_num(ratio, nan=0.0, posinf=99.0, neginf=-99.0)),
        "colors": colors.ravel().tolist(),
        "scale": {
            "vmax": int(vmax),
            "extend": extend,
            "stops": stops,
            "ticks": scale_ticks,
            "labels": [speedup_text(t) for t in scale_ticks],
            "title": "Nesterov faster  ·  tie  ·  momentum faster",
        },
        "lr_ticks": lr_major + lr_minor,
        "lr_labels": [f"{t:g}" for t in lr_major + lr_minor],
        "mu_ticks": mu_ticks,
        "mu_labels": [f"{t:g}" for t in mu_ticks],
        "update_ticks": update_ticks(steps),
        "boundaries": {
            k: {"lr": encode.array(convergence_boundary(mu_line, h_max, nz)), "mu": encode.array(mu_line)}
            for k, nz in RULES.items()
        },
        "cuts": cut_cells(lrs, mus, np.linalg.eigvalsh(H)),
        "finding": phase_finding(m.steps, n.steps, TIE_WITHIN),
        "hessian": H.ravel().tolist(),
        "minimum": minimum.tolist(),
        "min_value": f_min,
        "start": start_arr.tolist(),
        "box": [list(map(float, box[0])), list(map(float, box[1]))],
        "contours": contour_png(grid, geo.log_levels(grid[2]), box, contour_px),
        "max_steps": int(steps),
        "tol": float(tol),
        "loss_ticks": ticks,
        "loss_labels": labels,
        "loss_range": [loss_lo, loss_hi],
        "pick": [int(pick[0]), int(pick[1])],
        "surface": getattr(surface, "label", type(surface).__name__),
    }


class PhaseDiagram(BrowserWidget):
    """The ratio map of a 2-parameter quadratic and both rules' paths and losses at the
    picked cell, drawn by the browser from ``phase_state``. Click a cell or drag the
    start (the white circle): the browser runs tf-keras' rule there (float64, the
    recurrence of ``theory.reference``).

    ``pick`` (``[lr_index, mu_index]``) and ``start`` (``[x, y]``) are synced both ways:
    set them from Python to move the pick; read them after the reader clicked or
    dragged. With ``run_real=True`` and a kernel, each pick and each released drag also
    runs the real DTensor SGD there (``dtsgd_viz.run``); ``real`` holds its paths, drawn
    as dots on the rule's lines.

    Args:
      surface: a quadratic of 2 parameters (``surfaces.RotatedQuadratic``).
      learning_rates, momenta: increasing grid values (momenta in [0, 1)).
      steps: updates per cell; tol: on ``loss - surface.min_value``.
      start: where the runs start (default: the surface's).
      pick: ``(lr_index, mu_index)`` shown first (default: the middle cell).
      run_real: run the real optimizer at each pick (needs a kernel; a mesh via ``mesh``).
    """

    _module = ("rule.js", "phase.js")
    pick = traitlets.List(traitlets.Int(), default_value=[0, 0]).tag(sync=True)
    start = traitlets.List(traitlets.Float(), default_value=[0.0, 0.0]).tag(sync=True)
    real = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        surface: Surface,
        *,
        learning_rates: ArrayLike | None = None,
        momenta: ArrayLike | None = None,
        steps: int = 150,
        tol: float = 1e-3,
        start: ArrayLike | None = None,
        pick: Sequence[int] | None = None,
        run_real: bool = True,
        mesh: Any = None,
    ):
        state = phase_state(
            surface, learning_rates=learning_rates, momenta=momenta, steps=steps, tol=tol, start=start, pick=pick
        )
        super().__init__(data=state, pick=list(state["pick"]), start=list(state["start"]))
        self._surface, self._mesh, self.run_real = surface, mesh, run_real
        self.error: Exception | None = None
        self.recordings: dict[str, Any] | None = None  # the last real runs (run_here)
        if run_real:
            self.run_here()
        self.observe(self._on_change, names=["pick", "start"])

    @property
    def learning_rate(self) -> float:
        """The picked cell's learning rate."""
        return float(encode.decode(self.data["learning_rates"])[self.pick[0]])

    @property
    def momentum(self) -> float:
        """The picked cell's momentum."""
        return float(encode.decode(self.data["momenta"])[self.pick[1]])

    def select(self, lr_index: int, mu_index: int) -> None:
        """Pick cell (``learning_rates[lr_index]``, ``momenta[mu_index]``)."""
        n_mu, n_lr = self.data["regions"]["shape"]
        for label, value, n in (("lr_index", lr_index, n_lr), ("mu_index", mu_index, n_mu)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= value < n:
                raise ValueError(f"{label} must be an int in 0..{n - 1}. Received: {value!r}.")
        self.pick = [int(lr_index), int(mu_index)]

    def reference_paths(self) -> dict[str, np.ndarray]:
        """Both rules' paths at the pick from ``start``, ``(steps + 1, 2)`` each: what the
        browser draws, from ``theory.reference.run`` in float64."""
        from ..theory import reference

        H, m = np.asarray(self.data["hessian"]).reshape(2, 2), np.asarray(self.data["minimum"])
        grad = lambda p: (p - m) @ H.T  # noqa: E731
        p0 = np.asarray(self.start, np.float64)
        return {
            k: reference.run(grad, p0, self.data["max_steps"], self.learning_rate, self.momentum, nesterov)
            for k, nesterov in RULES.items()
        }

    def run_here(self) -> None:
        """Run the real DTensor SGD at the pick from ``start``; ``real`` then holds the
        paths (float32 parameters, as recorded), the pick and the start."""
        from .. import runs

        lr, mu = self.learning_rate, self.momentum
        configs = {k: dict(learning_rate=lr, momentum=mu, nesterov=n) for k, n in RULES.items()}
        start = np.asarray(self.start, np.float32).reshape(self._surface.shape)
        try:
            recs = runs.run(self._surface, configs, self.data["max_steps"], mesh=self._mesh, start=start)
        except Exception as e:  # a trait callback cannot raise anywhere a reader sees it
            self.error, self.recordings = e, None
            self.real = {"error": f"{type(e).__name__}: {e}", "pick": list(self.pick), "start": list(self.start)}
            return
        self.error, self.recordings = None, recs
        self.real = {
            "pick": list(self.pick),
            "start": list(self.start),
            "paths": {k: encode.array(np.asarray(r.path("w"), np.float64).reshape(-1, 2)) for k, r in recs.items()},
        }

    def _on_change(self, change: Any) -> None:
        if self.run_real:
            self.run_here()

    def pick_finding(self) -> str:
        """The still's title: each rule's updates to tol at the picked cell, from the map
        (``views.phase.cell.pick_finding``)."""
        from ..views.phase.cell import pick_finding

        i, j = self.pick[1], self.pick[0]
        n_mu, n_lr = self.data["regions"]["shape"]
        outcomes = {
            k: (
                int(encode.decode(self.data["steps"][k]).reshape(n_mu, n_lr)[i, j]),
                bool(encode.decode(self.data["diverged"][k]).reshape(n_mu, n_lr)[i, j]),
            )
            for k in RULES
        }
        return pick_finding(self.learning_rate, self.momentum, outcomes, self.data["max_steps"])

    def still_caption(self) -> str:
        return "Still picture of the diagram at the picked cell (live: click a cell, drag the start)"

    def snapshot_png(self) -> bytes:
        """The still picture (``still_figure``) as a PNG."""
        import io

        buf = io.BytesIO()
        self.still_figure().savefig(buf, format="png", dpi=style.DPI)
        return buf.getvalue()

    def still_figure(self) -> Figure:
        """The still picture: the ratio map with its colour key and legend, the picked cell
        outlined, and under it (after a real run) its runs' paths and their loss per update,
        under ``pick_finding()``. The order of ``fig.axes``: map, paths, loss, then keys."""
        from ..views.core.figure import headline, new_figure
        from ..views.paths.plot import draw_paths
        from ..views.phase.axes import PHASE_NOTE_SIZE
        from ..views.phase.cell import draw_cell_losses
        from ..views.phase.plot import add_colorbars, draw_phase
        from ..views.phase.regions import cell_look, mark_cell

        lrs, mus = encode.decode(self.data["learning_rates"]), encode.decode(self.data["momenta"])
        start = np.asarray(self.data["start"], np.float64)
        steps, tol = self.data["max_steps"], self.data["tol"]
        grids = {k: phase_grid(self._surface, lrs, mus, steps, tol, nz, start) for k, nz in RULES.items()}
        real = self.recordings is not None
        fig = new_figure((style.WIDTH, 9.4 if real else 5.0), style.DPI)
        label = getattr(self._surface, "label", type(self._surface).__name__)
        body = headline(fig, self.pick_finding(), f"{label} · ≤ {steps} updates, tol {tol:g}")
        # the map over its legend (a row of its own), the picked cell's runs under both
        grid = body.add_gridspec(3 if real else 2, 1, height_ratios=[0.95, 0.25, 1.5] if real else [1.0, 0.26])
        ax_map = body.add_subplot(grid[0])
        low = grid[2].subgridspec(1, 2, width_ratios=[1.3, 1.0], wspace=0.12) if real else None
        ax_paths = body.add_subplot(low[0, 0]) if low is not None else None
        ax_loss = body.add_subplot(low[0, 1]) if low is not None else None
        ax_key = body.add_subplot(grid[1])
        ax_key.set_axis_off()
        view = draw_phase(grids, self._surface, {"ratio": ax_map}, ratio_title="The picked cell on the ratio map")
        lr_e, mu_e = cell_edges(lrs, log=True), cell_edges(mus, log=False)
        mark_cell(ax_map, lr_e, mu_e, self.learning_rate, self.momentum, gid="pick:ratio")
        add_colorbars(view, body, None, ax_map)
        from matplotlib.patches import Patch

        handles = view.ratio_handles + [Patch(**{**cell_look(), "zorder": None}, label="the picked cell")]
        ax_key.legend(
            handles=handles, loc="center", ncol=2, frameon=False, fontsize=PHASE_NOTE_SIZE, columnspacing=1.5
        ).set_gid("legend:ratio")
        if ax_paths is not None and ax_loss is not None and self.recordings is not None:
            draw_paths(self.recordings, self._surface, None, ax=ax_paths, arrows=False)
            legend = ax_paths.get_legend()
            if legend is not None:
                legend.remove()  # the loss panel names the runs
            ax_paths.set_title("Their paths (real DTensor SGD)", fontsize=style.TITLE_SIZE)
            draw_cell_losses(ax_loss, self.recordings, self._surface, tol)
        return fig
