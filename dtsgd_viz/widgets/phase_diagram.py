"""``PhaseDiagram``: steps to converge over a (learning rate x momentum) grid, classical
momentum beside Nesterov, with the analytic convergence boundary on quadratics; pick a
cell to run the real DTensor optimizer there and see its path.

    from dtsgd_viz import surfaces
    from dtsgd_viz.widgets import PhaseDiagram
    pd = PhaseDiagram(surfaces.RotatedQuadratic(), steps=150)
    pd.select(lr_index=10, mu_index=12)      # or the dropdowns and the button
    pd

The grid is computed with the numpy reference of tf-keras' rule
(``_phase.phase_grid``), which the test suite ties to the real optimizer; only the
picked cell runs the real ``SGD`` (an image cannot take clicks in a notebook, hence
the dropdowns and the button).
"""

from __future__ import annotations

import dataclasses
import html
import time

import ipywidgets as widgets
import numpy as np

from ..views import style
from ..views.paths import draw_paths
from ._canvas import FigureWidget
from ._phase import (check_grid_axis, convergence_boundary, diverged, path_losses, phase_grid,
                     steps_to_tolerance)

__all__ = ["PhaseDiagram", "PhasePick", "phase_pick", "cell_edges", "RULES"]

RULES = {"momentum": False, "nesterov": True}   # config name -> nesterov
REFERENCE_NOTE = "grid: numpy reference of the tf-keras rule (tests tie it to the real optimizer)"
NOT_CONVERGED_COLOR = "#DDDDDD"
DIVERGED_COLOR = "#000000"
PICK_COLOR = "#CC79A7"   # Okabe-Ito reddish purple, as the shard views' step marker


@dataclasses.dataclass(frozen=True)
class PhasePick:
    """The picked cell: indices into ``learning_rates`` and ``momenta``."""

    lr_index: int
    mu_index: int
    n_lr: int
    n_mu: int


def phase_pick(pick: PhasePick, change) -> PhasePick:
    """The pick after ``{"name": "lr_index"|"mu_index", "new": index}``."""
    name, new = change["name"], change["new"]
    sizes = {"lr_index": pick.n_lr, "mu_index": pick.n_mu}
    if name not in sizes:
        raise ValueError(f"Unknown change {name!r}. Allowed: {list(sizes)}.")
    n = sizes[name]
    if isinstance(new, bool) or not isinstance(new, (int, np.integer)) or not 0 <= new < n:
        raise ValueError(f"{name} must be an int in 0..{n - 1}. Received: {new!r}.")
    return dataclasses.replace(pick, **{name: int(new)})


def cell_edges(values, log: bool) -> np.ndarray:
    """Cell edges around grid ``values``: midpoints (geometric for ``log``), the ends
    mirrored."""
    v = np.log(values) if log else np.asarray(values, np.float64)
    if len(v) == 1:
        half = 0.25 if log else 0.05
        e = np.array([v[0] - half, v[0] + half])
    else:
        mid = (v[1:] + v[:-1]) / 2
        e = np.concatenate([[v[0] - (mid[0] - v[0])], mid, [v[-1] + (v[-1] - mid[-1])]])
    return np.exp(e) if log else e


def _default_learning_rates(surface):
    h = getattr(surface, "hessian_eigenvalues", None)
    if h is not None:
        h_max = float(np.max(h))
        return np.geomspace(0.02 / h_max, 5.0 / h_max, 24)
    return np.geomspace(1e-4, 1e-1, 24)


class PhaseDiagram(FigureWidget):
    """Steps-to-converge maps for classical momentum and Nesterov (same colour scale;
    grey: not within ``tol`` in ``steps``; x: diverged), the analytic boundary on
    quadratics, and the real optimizer's paths at a picked cell.

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface; the boundary needs
        ``hessian_eigenvalues`` (``RotatedQuadratic``, ``ShardedQuadratic``).
      learning_rates, momenta: increasing grid values (momenta in [0, 1)).
      steps: updates per cell; tol: on ``loss - surface.min_value``.
      start, mesh: for the grid and the real runs (``dtsgd_viz.run``).

    ``grids`` holds the two ``PhaseGrid``; ``select(lr_index, mu_index)`` runs the
    real optimizer at a cell; ``recordings`` then holds its two recordings.
    """

    def __init__(self, surface, *, learning_rates=None, momenta=None, steps=150, tol=1e-3,
                 start=None, mesh=None, figsize=(14.0, 5.0), dpi=90):
        from ..runs import _check_int, _check_start
        if not all(hasattr(surface, a) for a in ("shape", "value_np", "grad_np", "minimum")):
            raise TypeError(f"surface must be a dtsgd_viz.surfaces surface. Received: {surface!r}.")
        self.surface, self.mesh = surface, mesh
        self.steps_max = _check_int("steps", steps)
        self.tol = float(tol)
        self.start = _check_start(surface, start)
        lrs = check_grid_axis("learning_rates", _default_learning_rates(surface)
                              if learning_rates is None else learning_rates, 0.0, np.inf)
        mus = check_grid_axis("momenta", np.linspace(0.0, 0.95, 20) if momenta is None else momenta,
                              0.0, 1.0)
        self.grids = {k: phase_grid(surface, lrs, mus, self.steps_max, self.tol, nesterov, self.start)
                      for k, nesterov in RULES.items()}
        h = getattr(surface, "hessian_eigenvalues", None)
        self.h_max = None if h is None else float(np.max(h))
        self.learning_rates, self.momenta = lrs, mus
        self.pick = PhasePick(len(lrs) // 2, len(mus) // 2, len(lrs), len(mus))
        self.recordings = self.ran_at = self.error = None
        super().__init__(figsize=figsize, dpi=dpi)

        self.lr_pick = widgets.Dropdown(options=[(f"{v:.3g}", i) for i, v in enumerate(lrs)],
                                        value=self.pick.lr_index, description="pick lr")
        self.mu_pick = widgets.Dropdown(options=[(f"{v:.3g}", i) for i, v in enumerate(mus)],
                                        value=self.pick.mu_index, description="pick momentum",
                                        style={"description_width": "initial"})
        self.button = widgets.Button(description="run real optimizer here", icon="play",
                                     layout=widgets.Layout(width="auto"))
        self.status = widgets.HTML()
        for control, name in ((self.lr_pick, "lr_index"), (self.mu_pick, "mu_index")):
            control.observe(lambda change, name=name: self._on_pick(name, change["new"]), names="value")
        self.button.on_click(lambda _: self.run_here())
        self.widget = widgets.VBox([widgets.HBox([self.lr_pick, self.mu_pick, self.button]),
                                    self.status, self.image])
        self._draw()

    # -- public --

    def boundary(self, nesterov: bool, momenta=None):
        """``(learning_rates, momenta)`` of the analytic boundary (None if the surface
        has no Hessian eigenvalues)."""
        if self.h_max is None:
            return None
        mu = np.linspace(self.momenta[0], self.momenta[-1], 200) if momenta is None else momenta
        return convergence_boundary(mu, self.h_max, nesterov), np.asarray(mu, np.float64)

    def select(self, lr_index: int, mu_index: int) -> None:
        """Pick cell (``learning_rates[lr_index]``, ``momenta[mu_index]``) and run the
        real optimizer there (classical momentum and Nesterov)."""
        pick = phase_pick(phase_pick(self.pick, {"name": "lr_index", "new": lr_index}),
                          {"name": "mu_index", "new": mu_index})
        self.lr_pick.value, self.mu_pick.value = pick.lr_index, pick.mu_index
        self.run_here()

    def run_here(self) -> None:
        """Run the real DTensor SGD at the picked cell and show its paths."""
        from .. import runs
        lr = float(self.learning_rates[self.pick.lr_index])
        mu = float(self.momenta[self.pick.mu_index])
        configs = {k: dict(learning_rate=lr, momentum=mu, nesterov=n) for k, n in RULES.items()}
        t0 = time.perf_counter()
        try:
            self.recordings = runs.run(self.surface, configs, self.steps_max, mesh=self.mesh,
                                       start=self.start.reshape(self.surface.shape))
            self.ran_at, self.error = self.pick, None
        except Exception as e:  # shown in the widget: a button callback cannot raise anywhere
            self.error = e
            self.status.value = (f"<span style='color:#D55E00'>run failed: {html.escape(type(e).__name__)}"
                                 f": {html.escape(str(e))}</span>")
            return
        self._draw()
        self.status.value = self._summary(time.perf_counter() - t0)

    # -- internals --

    def _summary(self, seconds) -> str:
        i, j = self.ran_at.mu_index, self.ran_at.lr_index
        parts = []
        for key, rec in self.recordings.items():
            losses = path_losses(rec, self.surface)
            k = int(steps_to_tolerance(losses, self.surface.min_value, self.tol))
            real = _outcome(k, bool(diverged(losses, self.surface.min_value, k)))
            grid = self.grids[key]
            parts.append(f"{key}: {real} (grid: {_outcome(int(grid.steps[i, j]), bool(grid.diverged[i, j]))})")
        return f"real DTensor SGD ({seconds:.1f} s): " + "; ".join(parts)

    def _on_pick(self, name, value):
        self.pick = phase_pick(self.pick, {"name": name, "new": value})
        x, y, w, h = self._cell_rect(self.pick)
        for rect in self.pick_rects:
            rect.set_bounds(x, y, w, h)
        self.refresh()

    def _cell_rect(self, pick):
        xe, ye = self.lr_edges, self.mu_edges
        j, i = pick.lr_index, pick.mu_index
        return xe[j], ye[i], xe[j + 1] - xe[j], ye[i + 1] - ye[i]

    def _draw(self):
        from matplotlib import colormaps
        from matplotlib.colors import Normalize
        from matplotlib.lines import Line2D
        from matplotlib.patches import Patch, Rectangle

        fig, fs = self.figure, style.FONT_SIZE
        self.unfreeze_layout()
        fig.clear()
        ax_m, ax_n, ax_p = fig.subplots(1, 3, width_ratios=[1.0, 1.0, 1.12])
        self.lr_edges = cell_edges(self.learning_rates, log=True)
        self.mu_edges = cell_edges(self.momenta, log=False)
        cmap = colormaps[style.SEQUENTIAL_CMAP].with_extremes(bad=NOT_CONVERGED_COLOR)
        norm = Normalize(0, self.steps_max)
        self.meshes, self.pick_rects, self.boundary_lines = {}, [], {}
        titles = {"momentum": ("Classical momentum (heavy ball)", "lr·h < 2(1+μ)"),
                  "nesterov": ("Nesterov (tf-keras form)", "lr·h < 2(1+μ)/(1+2μ)")}
        for ax, (key, grid) in zip((ax_m, ax_n), self.grids.items()):
            data = np.ma.masked_less(grid.steps, 0)
            self.meshes[key] = ax.pcolormesh(self.lr_edges, self.mu_edges, data, cmap=cmap, norm=norm,
                                             gid=f"phase:{key}")
            ii, jj = np.nonzero(grid.diverged)
            ax.plot(self.learning_rates[jj], self.momenta[ii], "x", color=DIVERGED_COLOR, ms=4.5,
                    mew=1.0, ls="none", gid=f"diverged:{key}")
            title, rule = titles[key]
            if self.h_max is not None:
                lr_b, mu_b = self.boundary(RULES[key])
                (self.boundary_lines[key],) = ax.plot(lr_b, mu_b, "--", color="white", lw=1.8,
                                                      gid=f"boundary:{key}",
                                                      path_effects=_dark_outline())
                title += f"\nconverges iff {rule}, h = {self.h_max:g}"
            ax.set_xscale("log")
            ax.set_xlim(self.lr_edges[0], self.lr_edges[-1])
            ax.set_ylim(self.mu_edges[0], self.mu_edges[-1])
            ax.set_xlabel("learning rate (log scale)", fontsize=fs + 1)
            ax.set_title(title, fontsize=fs + 1.5)
            ax.tick_params(labelsize=fs)
            rect = Rectangle(self._cell_rect(self.pick)[:2], *self._cell_rect(self.pick)[2:], fill=False,
                             ec=PICK_COLOR, lw=2.2, zorder=6, gid=f"pick:{key}")
            ax.add_patch(rect)
            self.pick_rects.append(rect)
        ax_m.set_ylabel("momentum μ", fontsize=fs + 1)
        ax_n.tick_params(labelleft=False)
        cbar = fig.colorbar(self.meshes["nesterov"], ax=[ax_m, ax_n], pad=0.02, fraction=0.05)
        cbar.set_label(f"updates until the loss stays within {self.tol:g} of the minimum",
                       fontsize=fs)
        cbar.ax.tick_params(labelsize=fs - 1)

        handles = [Patch(fc=NOT_CONVERGED_COLOR, ec="0.6", label=f"not within tol in {self.steps_max} steps"),
                   Line2D([], [], ls="none", marker="x", color=DIVERGED_COLOR, label="diverged"),
                   Patch(fill=False, ec=PICK_COLOR, lw=2, label="picked cell")]
        if self.h_max is not None:
            handles.insert(2, Line2D([], [], ls="--", color="white", lw=1.8, path_effects=_dark_outline(),
                                     label="analytic convergence boundary"))
        fig.legend(handles=handles, loc="outside lower left", ncol=len(handles), fontsize=fs,
                   frameon=False)
        fig.text(0.995, 0.005, REFERENCE_NOTE, ha="right", va="bottom", fontsize=fs - 1,
                 color="0.3", gid="reference-note")
        label = getattr(self.surface, "label", type(self.surface).__name__)
        fig.suptitle(f"Updates to converge on the {label}: classical momentum vs Nesterov "
                     f"({self.steps_max} steps at most)", fontsize=fs + 3)
        self._draw_path_panel(ax_p)
        self.refresh(relayout=True)

    def _draw_path_panel(self, ax):
        fs = style.FONT_SIZE
        self.path_view = None
        if self.recordings is None:
            ax.set_axis_off()
            ax.text(0.5, 0.5, "Pick a learning rate and a momentum,\nthen press "
                    "“run real optimizer here”\nto see the real DTensor SGD's paths.",
                    ha="center", va="center", fontsize=fs + 1, color="0.3", transform=ax.transAxes,
                    gid="path-hint")
            return
        self.path_view = draw_paths(self.recordings, self.surface, None, ax=ax, arrows=False)
        lr = self.learning_rates[self.ran_at.lr_index]
        mu = self.momenta[self.ran_at.mu_index]
        ax.set_title(f"Real DTensor SGD at lr = {lr:.3g}, μ = {mu:.3g}", fontsize=fs + 1.5)


def _outcome(steps: int, is_diverged: bool) -> str:
    return "diverged" if is_diverged else "not within tol" if steps < 0 else f"{steps} updates"


def _dark_outline():
    from matplotlib import patheffects
    return [patheffects.Stroke(linewidth=3.4, foreground="black"), patheffects.Normal()]
