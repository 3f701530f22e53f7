"""``PhaseDiagram``: ``plot_phase``'s ratio map (who needs fewer updates, Nesterov or
classical momentum, each rule's stability boundary on quadratics) over the real DTensor
optimizer's paths and losses at a picked cell. Click a cell to run it there (the two
rules' own maps are ``plot_phase``'s; the widget does not repeat them).

    from dtsgd_viz import surfaces
    from dtsgd_viz.widgets import PhaseDiagram
    pd = PhaseDiagram(surfaces.RotatedQuadratic(), steps=150)
    pd.select(lr_index=10, mu_index=12)      # or click the cell, or the dropdowns and button
    pd

The grid is computed with the numpy reference of tf-keras' rule
(``convergence.phase_grid``), which the test suite ties to the real optimizer; only the
picked cell runs the real ``SGD``. Clicks come through ``ipyevents`` on the PNG
(``_pointer``); the dropdowns and the button do the same from the keyboard. A run that
diverges is drawn clipped to the surface's view box, and the widget says at which
update it left it.
"""

from __future__ import annotations

import dataclasses
import html
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np
from numpy.typing import ArrayLike

from ..theory.convergence import check_steps_tol, diverged, path_losses, phase_grid, steps_to_tolerance
from ..theory.quadratic import RULES, convergence_boundary
from ..views.core import style
from ..views.paths.geometry import divergence_update, rule_name
from ..views.paths.plot import draw_paths
from ..views.phase.axes import PHASE_LEGEND_SIZE, PHASE_NOTE_SIZE
from ..views.phase.cell import draw_cell_losses, pick_finding
from ..views.phase.geometry import side_cells
from ..views.phase.plot import add_colorbars, cap_loss, cell_edges, draw_phase
from ..views.phase.regions import cell_look
from . import _pointer
from ._canvas import FigureWidget

if TYPE_CHECKING:
    from ..theory.surfaces import Surface

__all__ = ["PhaseDiagram", "PhasePick", "phase_pick", "cell_edges", "cell_at", "divergence_update", "RULES"]

REFERENCE_NOTE = "map: numpy reference of the tf-keras rule"  # the tests tie it to the real optimizer
MAPS = ("ratio",)  # the clickable map (plot_phase draws the two rule maps)


@dataclasses.dataclass(frozen=True)
class PhasePick:
    """The picked cell: indices into ``learning_rates`` and ``momenta``."""

    lr_index: int
    mu_index: int
    n_lr: int
    n_mu: int


def phase_pick(pick: PhasePick, change: Mapping[str, Any]) -> PhasePick:
    """The pick after ``{"name": "lr_index"|"mu_index", "new": index}``."""
    name, new = change["name"], change["new"]
    sizes = {"lr_index": pick.n_lr, "mu_index": pick.n_mu}
    if name not in sizes:
        raise ValueError(f"Unknown change {name!r}. Allowed: {list(sizes)}.")
    n = sizes[name]
    if isinstance(new, bool) or not isinstance(new, (int, np.integer)) or not 0 <= new < n:
        raise ValueError(f"{name} must be an int in 0..{n - 1}. Received: {new!r}.")
    return dataclasses.replace(pick, **{name: int(new)})


def cell_at(lr_edges: np.ndarray, mu_edges: np.ndarray, lr: float, mu: float) -> tuple[int, int] | None:
    """``(lr_index, mu_index)`` of the cell holding ``(lr, mu)``, or None outside the grid.

    >>> cell_at(np.array([1.0, 2.0, 4.0]), np.array([0.0, 0.5, 1.0]), 3.0, 0.2)
    (1, 0)
    """
    j = int(np.searchsorted(lr_edges, lr, side="right")) - 1
    i = int(np.searchsorted(mu_edges, mu, side="right")) - 1
    if 0 <= j < len(lr_edges) - 1 and 0 <= i < len(mu_edges) - 1:
        return j, i
    return None


class PhaseDiagram(FigureWidget):
    """``plot_phase``'s ratio map (same colours and regions; each rule's stability
    boundary on quadratics) and the real optimizer's paths and losses at a picked cell:
    click a cell (or use the dropdowns and the button).

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface; the theory needs
        ``hessian_eigenvalues`` (``RotatedQuadratic``, ``ShardedQuadratic``).
      learning_rates, momenta: increasing grid values (momenta in [0, 1)).
      steps: updates per cell; tol: on ``loss - surface.min_value``.
      start, mesh: for the grid and the real runs (``dtsgd_viz.run``).

    ``grids`` holds the two ``PhaseGrid``; ``select(lr_index, mu_index)`` runs the
    real optimizer at a cell; ``recordings`` then holds its two recordings and
    ``diverged_at`` the update at which each diverging run left the view box.
    ``click(x, y)`` is what a click on PNG pixel ``(x, y)`` does.
    """

    def __init__(
        self,
        surface: Surface,
        *,
        learning_rates: ArrayLike | None = None,
        momenta: ArrayLike | None = None,
        steps: int = 150,
        tol: float = 1e-3,
        start: ArrayLike | None = None,
        mesh: Any = None,
        figsize: tuple[float, float] = style.PHASE_DIAGRAM_SIZE,
        dpi: float = style.DPI,
    ):
        from ..runs import check_start
        from ..views.phase.plot import default_axes

        if not all(hasattr(surface, a) for a in ("shape", "value_np", "grad_np", "minimum")):
            raise TypeError(f"surface must be a dtsgd_viz.surfaces surface. Received: {surface!r}.")
        self.surface, self.mesh = surface, mesh
        self.steps_max, self.tol = check_steps_tol(steps, tol)
        self.start = check_start(surface, start)
        lrs, mus = default_axes(surface, learning_rates, momenta)
        self.grids = {
            k: phase_grid(surface, lrs, mus, self.steps_max, self.tol, nesterov, self.start)
            for k, nesterov in RULES.items()
        }
        h = getattr(surface, "hessian_eigenvalues", None)
        self.h_max = None if h is None else float(np.max(h))
        self.learning_rates, self.momenta = lrs, mus
        self.lr_edges, self.mu_edges = cell_edges(lrs, log=True), cell_edges(mus, log=False)
        self.cut = side_cells(lrs, mus, h, RULES)  # the ratio map's cells as drawn: a click picks the run shown
        self.pick = PhasePick(len(lrs) // 2, len(mus) // 2, len(lrs), len(mus))
        self.recordings = self.ran_at = self.error = None
        self.diverged_at = {}
        super().__init__(figsize=figsize, dpi=dpi)

        self.lr_pick = widgets.Dropdown(
            options=[(f"{v:.3g}", i) for i, v in enumerate(lrs)], value=self.pick.lr_index, description="pick lr"
        )
        self.mu_pick = widgets.Dropdown(
            options=[(f"{v:.3g}", i) for i, v in enumerate(mus)],
            value=self.pick.mu_index,
            description="pick momentum",
            style={"description_width": "initial"},
        )
        self.button = widgets.Button(
            description="run real optimizer here", icon="play", layout=widgets.Layout(width="auto")
        )
        self.status = widgets.HTML()
        for control, name in ((self.lr_pick, "lr_index"), (self.mu_pick, "mu_index")):
            control.observe(lambda change, name=name: self._on_pick(name, change["new"]), names="value")
        self.button.on_click(lambda _: self.run_here())
        self.events = _pointer.attach(self.image, ["click"], self._on_event)
        self.widget = widgets.VBox([widgets.HBox([self.lr_pick, self.mu_pick, self.button]), self.status, self.image])
        self._draw()

    # -- public --

    def boundary(self, nesterov: bool, momenta: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """``(learning_rates, momenta)`` of the analytic boundary (None if the surface
        has no Hessian eigenvalues)."""
        if self.h_max is None:
            return None
        mu = np.linspace(self.momenta[0], self.momenta[-1], 200) if momenta is None else momenta
        return convergence_boundary(mu, self.h_max, nesterov), np.asarray(mu, np.float64)

    def select(self, lr_index: int, mu_index: int) -> None:
        """Pick cell (``learning_rates[lr_index]``, ``momenta[mu_index]``) and run the
        real optimizer there (classical momentum and Nesterov)."""
        pick = phase_pick(
            phase_pick(self.pick, {"name": "lr_index", "new": lr_index}), {"name": "mu_index", "new": mu_index}
        )
        self.lr_pick.value, self.mu_pick.value = pick.lr_index, pick.mu_index
        self.run_here()

    def cell_at_pixel(self, x: float, y: float) -> tuple[int, int] | None:
        """``(lr_index, mu_index)`` of the map cell at PNG pixel ``(x, y)`` (origin top
        left), or None off the maps."""
        size = _pointer.png_size(self.image.value) if self.image.value else None
        ax = _pointer.axes_at([self.map_axes[k] for k in MAPS], x, y, size)
        if ax is None:
            return None
        lr, mu = _pointer.pixel_to_data(ax, x, y, size)
        lr_e, mu_e, (i, j) = self.cut
        fine = cell_at(lr_e, mu_e, lr, mu)  # where a boundary cuts a cell: the nearest run on that side
        return None if fine is None else (int(j[fine[1], fine[0]]), int(i[fine[1], fine[0]]))

    def click(self, x: float, y: float) -> bool:
        """A click at PNG pixel ``(x, y)``: on a map cell, run the real optimizer there.
        Returns whether it hit a cell."""
        cell = self.cell_at_pixel(x, y)
        if cell is None:
            return False
        self.status.value = "<i>running the real DTensor SGD at the clicked cell ...</i>"
        self.select(*cell)
        return True

    def run_here(self) -> None:
        """Run the real DTensor SGD at the picked cell and show its paths."""
        from .. import runs

        lr = float(self.learning_rates[self.pick.lr_index])
        mu = float(self.momenta[self.pick.mu_index])
        configs = {k: dict(learning_rate=lr, momentum=mu, nesterov=n) for k, n in RULES.items()}
        t0 = time.perf_counter()
        try:
            self.recordings = runs.run(
                self.surface, configs, self.steps_max, mesh=self.mesh, start=self.start.reshape(self.surface.shape)
            )
            self.ran_at, self.error = self.pick, None
        except Exception as e:  # shown in the widget: a button callback cannot raise anywhere
            self.error = e
            self.status.value = (
                f"<span style='color:#D55E00'>run failed: {html.escape(type(e).__name__)}: {html.escape(str(e))}</span>"
            )
            return
        self._draw()
        self.status.value = self._summary(time.perf_counter() - t0)

    def pick_finding(self) -> str | None:
        """What the real runs at the picked cell show (``phase_cell.pick_finding``), None
        before a run."""
        if self.recordings is None or self.ran_at is None:
            return None
        outcomes = {}
        for key, rec in self.recordings.items():
            losses = path_losses(rec, self.surface)
            k = int(steps_to_tolerance(losses, self.surface.min_value, self.tol))
            outcomes[key] = (k, bool(diverged(losses, self.surface.min_value, k)))
        return pick_finding(
            float(self.learning_rates[self.ran_at.lr_index]),
            float(self.momenta[self.ran_at.mu_index]),
            outcomes,
            self.steps_max,
        )

    # -- internals --

    def _on_event(self, event):
        if event.get("type") != "click" or not self.image.value:
            return
        xy = _pointer.event_pixel(event, _pointer.png_size(self.image.value))
        if xy is not None:
            self.click(*xy)

    def _summary(self, seconds) -> str:
        assert self.ran_at is not None and self.recordings is not None  # after a run
        i, j = self.ran_at.mu_index, self.ran_at.lr_index
        parts = []
        for key, rec in self.recordings.items():
            losses = path_losses(rec, self.surface)
            k = int(steps_to_tolerance(losses, self.surface.min_value, self.tol))
            is_div = bool(diverged(losses, self.surface.min_value, k))
            real = _outcome(k, is_div, self.diverged_at.get(key))
            grid = self.grids[key]
            parts.append(f"{key}: {real} (grid: {_outcome(int(grid.steps[i, j]), bool(grid.diverged[i, j]))})")
        return f"real DTensor SGD ({seconds:.1f} s): " + "; ".join(parts)

    def _on_pick(self, name, value):
        self.pick = phase_pick(self.pick, {"name": name, "new": value})
        x, y, w, h = self._cell_rect(self.pick)
        for rect in self.pick_rects:
            rect.set_bounds(x, y, w, h)
        self.refresh()

    def _cell_rect(self, pick: PhasePick) -> tuple[float, float, float, float]:
        xe, ye = self.lr_edges, self.mu_edges
        j, i = pick.lr_index, pick.mu_index
        return xe[j], ye[i], xe[j + 1] - xe[j], ye[i + 1] - ye[i]

    def _draw(self):
        from matplotlib.patches import Patch, Rectangle

        from ..views.core.figure import headline
        from ..views.phase.geometry import phase_finding

        fig = self.figure
        self.unfreeze_layout()
        fig.clear()
        label = getattr(self.surface, "label", type(self.surface).__name__)
        # the picture is about the picked cell: its runs' finding leads, the map's titles the map
        map_finding = phase_finding(self.grids["momentum"].steps, self.grids["nesterov"].steps)
        body = headline(
            fig,
            self.pick_finding() or map_finding,
            f"{label} · tol {self.tol:g}, ≤ {self.steps_max} updates · {REFERENCE_NOTE}",
        )
        # one figure, no subfigures: the pointer maps PNG pixels through the root figure.
        # The ratio map (the one to click; plot_phase has the two rule maps) over the
        # picked cell's real paths and their losses. The order of fig.axes: ratio,
        # loss, paths, the colour bar
        # (a thin empty row under them: air between the paths' legend and the figure's)
        grid = body.add_gridspec(3, 1, height_ratios=[1.0, 1.05, 0.015])
        # the lower panels in a grid of their own: the loss panel's names, outside its
        # axes on the right, widen that grid's margin, not the ratio map's (and a thin
        # empty column keeps them off the figure's edge)
        low = grid[1].subgridspec(1, 3, width_ratios=[1.0, 1.15, 0.02])
        ax_r = body.add_subplot(grid[0])
        ax_l, ax_p = body.add_subplot(low[0, 1]), body.add_subplot(low[0, 0])
        self.map_axes = {"ratio": ax_r}
        loss0 = cap_loss(self.surface, self.grids["momentum"], self.start.reshape(self.surface.shape))
        self.view = draw_phase(
            self.grids,
            self.surface,
            self.map_axes,
            loss0=loss0,
            ratio_title=map_finding if self.recordings is not None else None,
        )
        self.meshes = self.view.meshes
        self.boundary_lines = self.view.boundaries
        add_colorbars(self.view, fig, None, ax_r)
        self.pick_rects = []
        for key, ax in self.map_axes.items():
            rect = Rectangle(
                self._cell_rect(self.pick)[:2], *self._cell_rect(self.pick)[2:], **cell_look(), gid=f"pick:{key}"
            )
            ax.add_patch(rect)
            self.pick_rects.append(rect)
        handles = self.view.ratio_handles + [Patch(**{**cell_look(), "zorder": None}, label="picked cell (click one)")]
        body.legend(
            handles=handles,
            loc="outside lower center",
            ncol=min(len(handles), 2),
            fontsize=PHASE_LEGEND_SIZE,
            frameon=False,
            handlelength=2.6,
            handleheight=1.1,
        )
        self._draw_path_panel(ax_p)
        self._draw_loss_panel(ax_l)
        self.refresh(relayout=True)

    def _draw_loss_panel(self, ax):
        self.loss_lines = {}
        if self.recordings is None:
            ax.set_axis_off()
            return
        self.loss_lines = draw_cell_losses(ax, self.recordings, self.surface, self.tol)

    def _draw_path_panel(self, ax):
        self.path_view = None
        if self.recordings is None:
            ax.set_axis_off()
            ax.text(
                0.5,
                0.5,
                "Click a cell of the map\n(or pick a learning rate and\na momentum, then press\n"
                "“run real optimizer here”)\nto see the real DTensor\nSGD's paths there.",
                ha="center",
                va="center",
                fontsize=style.LABEL_SIZE,
                color="0.3",
                transform=ax.transAxes,
                gid="path-hint",
            )
            return
        box = getattr(self.surface, "view_box", None)
        self.diverged_at = {}
        if box is not None:
            for key, rec in self.recordings.items():
                losses = path_losses(rec, self.surface)
                k = steps_to_tolerance(losses, self.surface.min_value, self.tol)
                if diverged(losses, self.surface.min_value, k):
                    self.diverged_at[key] = divergence_update(rec.path("w"), box)
        # a diverged run is drawn up to where it left the view box, and a note on the
        # panel says when (draw_paths); drawn on, it would criss-cross the panel
        self.path_view = draw_paths(
            self.recordings,
            self.surface,
            None,
            ax=ax,
            arrows=False,
            diverged=self.diverged_at if box is not None else None,
        )
        legend = ax.get_legend()
        if legend is not None:  # under the panel, off the paths and contours; "Nesterov", as everywhere
            # the runs only: the start is the map's white circle, the minimum its star, both named there
            kept = [(h, t.get_text()) for h, t in zip(legend.legend_handles, legend.get_texts())]
            kept = [(h, rule_name(n)) for h, n in kept if not n.startswith(("start", "minim"))]
            handles, names = [h for h, _ in kept], [n for _, n in kept]
            legend.remove()
            ax.legend(
                handles,
                names,
                loc="upper center",
                bbox_to_anchor=(0.5, -0.18),
                ncol=len(names),
                fontsize=PHASE_NOTE_SIZE,
                frameon=False,
                handlelength=2.6,
                borderaxespad=0.0,
            )
        if self.diverged_at:  # clip to the view box: a diverging run would shrink the rest to a dot
            assert box is not None  # runs are marked diverged only inside a view box
            ax.set_xlim(*box[0])
            ax.set_ylim(*box[1])
        assert self.ran_at is not None  # set with self.recordings
        lr = self.learning_rates[self.ran_at.lr_index]
        mu = self.momenta[self.ran_at.mu_index]
        ax.set_title(f"Real DTensor SGD at lr = {lr:.3g}, μ = {mu:.3g}", fontsize=style.TITLE_SIZE)


def _outcome(steps: int, is_diverged: bool, at=None) -> str:
    if is_diverged:
        return f"diverged at update {at}" if at else "diverged"
    return "not within tol" if steps < 0 else f"{steps} updates"
