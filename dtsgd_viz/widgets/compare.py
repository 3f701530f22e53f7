"""``CompareWidget``: plain SGD, classical momentum and Nesterov side by side, re-run on
the real DTensor optimizer whenever a slider moves.

    from dtsgd_viz import surfaces
    from dtsgd_viz.widgets import CompareWidget
    CompareWidget(surfaces.RotatedQuadratic(), learning_rate=0.05, momentum=0.9)

Each change goes through ``compare_params`` (pure: parameters + one change -> new
parameters), then ``request`` on a ``RunQueue`` (pure): if no run is in progress the
run starts (in a background thread, so the kernel keeps taking slider messages); if
one is, only the latest parameters are kept and run once it ends. Sliders also use
``continuous_update=False``, so a drag sends one value, on release.
"""

from __future__ import annotations

import dataclasses
import html
import math
import threading
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np

from ..theory.convergence import diverged, path_losses
from ..views.core import style
from ..views.paths import loss as path_loss
from ..views.paths.findings import findings
from ..views.paths.frames import draw_scene, legend_handles
from ..views.paths.geometry import divergence_update, rule_name
from ..views.paths.plot import PathsView
from . import _drag
from ._canvas import FigureWidget
from .compare_state import CompareParams, RunQueue, _check_params, compare_configs, compare_params, finished, request
from .explorer_figure import tidy_loss_axis

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..recording.recording import Recording
    from ..theory.surfaces.base import Surface
    from ..views.paths.findings import PathFindings

__all__ = [
    "CompareWidget",
    "CompareParams",
    "compare_params",
    "compare_configs",
    "RunQueue",
    "request",
    "finished",
    "TableRow",
    "table_rows",
    "table_html",
]


# ---- pure: the table --------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class TableRow:
    """One optimizer's result: ``steps_to_tol`` (None if never), ``final_loss`` (after
    the last update), whether it ``diverged`` (ended non-finite or farther from the
    minimum than it began) and ``mean_loss``, its mean loss over the last updates
    (``findings``' ``tail_loss``: what the headline's ratios compare)."""

    name: str
    steps_to_tol: int | None
    final_loss: float
    diverged: bool = False
    mean_loss: float | None = None


def table_rows(
    recordings: Mapping[str, Recording],
    surface: Surface,
    tol: float,
    name: str = "w",
    found: PathFindings | None = None,
) -> tuple[TableRow, ...]:
    """One row per recording, in ``dtsgd_viz.findings(recordings, surface, tol=tol)``'s
    numbers (``found``, when the caller has them): the first k after which the loss after
    k updates (from the surface, at the recorded parameters) stays within ``tol`` of
    ``surface.min_value``, the loss after the last update and the mean over the last updates."""
    found = findings(recordings, surface, name=name, tol=tol) if found is None else found
    assert found.to_tolerance is not None  # findings fills it when given a tol
    rows = []
    for key, rec in recordings.items():
        losses = path_losses(rec, surface, name)
        k = found.to_tolerance[key]
        rows.append(
            TableRow(
                key,
                k,
                found.final_loss[key],
                bool(diverged(losses, surface.min_value, -1 if k is None else k)),
                found.tail_loss[key],
            )
        )
    return tuple(rows)


# narrow enough to stand beside the figure on a 1300 px page (the app) at the page's own type
# size (23.6 em of 13 px: under the 330 px left there), each header's lines ("\n") whole in
# its column: the loss convention (the loss after k updates) and the tolerance are said once,
# in the caption; then the updates to tol, the loss after the last update (the loss panel's
# last points) and the mean the headline compares
TABLE_COLUMNS = (
    ("optimizer", "7.6em", "left"),
    ("to tol", "4em", "right"),
    ("k = {n}", "5.2em", "right"),
    ("mean over\nk = {window}", "6.8em", "right"),
)


def loss_text(x: float) -> str:
    """A loss in the table: one format for every row, 3 significant digits.

    >>> loss_text(0.003624), loss_text(0.07463), loss_text(9.84e-05)
    ('3.62e-03', '7.46e-02', '9.84e-05')
    """
    return f"{x:.2e}"


def table_html(
    rows: Sequence[TableRow], tol: float, colors: Mapping[str, str] | None = None, found: PathFindings | None = None
) -> str:
    """The results as an HTML table of fixed column widths (``TABLE_COLUMNS``), no cell
    wrapping; names as the figure writes them (``rule_name``). ``found`` (the ``findings``
    the rows come from) names the updates in the headers; "to tol" is the first k after
    which the loss stays within ``tol`` of the minimum, "> N" when it never does in N."""
    n, window = ("N", "last") if found is None else (found.last_k, "–".join(map(str, found.window)))
    colors = colors or style.optimizer_colors([r.name for r in rows])
    pad, one_line = "padding:3px 6px", "white-space:nowrap"
    cols = "".join(f"<col style='width:{w}'>" for _, w, _ in TABLE_COLUMNS)
    heads = "".join(
        f"<th style='text-align:{a};vertical-align:bottom;{pad};{one_line};border-bottom:1px solid #888'>"
        f"{'<br>'.join(html.escape(line) for line in t.format(n=n, window=window).splitlines())}</th>"
        for t, _, a in TABLE_COLUMNS
    )
    cells = []
    for r in rows:
        steps = "diverged" if r.diverged else f"&gt; {n}" if r.steps_to_tol is None else str(r.steps_to_tol)
        swatch = (
            f'<span style="display:inline-block;width:0.8em;height:0.8em;'
            f'background:{colors[r.name]};margin-right:0.4em"></span>'
        )
        mean = "—" if r.mean_loss is None or not np.isfinite(r.mean_loss) else loss_text(r.mean_loss)
        cells.append(
            f"<tr><td style='{pad};{one_line}'>{swatch}{html.escape(rule_name(r.name))}</td>"
            f"<td style='text-align:right;{pad};{one_line}'>{steps}</td>"
            f"<td style='text-align:right;{pad};{one_line}'>{loss_text(r.final_loss)}</td>"
            f"<td style='text-align:right;{pad};{one_line}'>{mean}</td></tr>"
        )
    width = "calc(" + " + ".join(w for _, w, _ in TABLE_COLUMNS) + ")"
    caption = f"loss after k updates · to tol: updates until it stays within {tol:g} of the minimum"
    return (
        f"<table style='border-collapse:collapse;table-layout:fixed;width:{width};"
        "font-size:100%;font-variant-numeric:tabular-nums'>"
        f"<caption style='caption-side:top;text-align:left;color:#555;padding:0 6px 4px'>{html.escape(caption)}"
        f"</caption><colgroup>{cols}</colgroup><thead><tr>{heads}</tr></thead><tbody>"
        + "".join(cells)
        + "</tbody></table>"
    )


# ---- the widget -------------------------------------------------------------------------


class CompareWidget(FigureWidget):
    """Sliders for learning rate, momentum, start point and the number of updates
    (``steps``); on change, re-runs the real DTensor SGD (``dtsgd_viz.run``) for plain / momentum / Nesterov and
    redraws the paths and losses, with a table per optimizer.

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface (start sliders for 2-D ones; other
        surfaces keep ``start``).
      learning_rate, momentum, start, steps: the first settings.
      mesh: passed to ``dtsgd_viz.run``.
      tol: the table's tolerance on ``loss - surface.min_value``.
      background: run in a background thread (in a notebook the kernel then keeps
        receiving slider values, which are coalesced). False runs in the callback.

    ``wait()`` blocks until every requested run has been drawn. ``runs`` lists the
    parameters of every run made, in order.
    """

    def __init__(
        self,
        surface: Surface,
        *,
        learning_rate: float = 0.05,
        momentum: float = 0.9,
        start: ArrayLike | None = None,
        steps: int = 60,
        mesh: Any = None,
        tol: float = 1e-3,
        background: bool = True,
        figsize: tuple[float, float] = style.COMPARE_SIZE,
        dpi: float = style.DPI,
    ):
        from ..runs import check_start

        if not all(hasattr(surface, a) for a in ("shape", "value_np", "minimum", "default_start")):
            raise TypeError(f"surface must be a dtsgd_viz.surfaces surface. Received: {surface!r}.")
        start = check_start(surface, start)
        self.surface, self.mesh, self.tol, self.background = surface, mesh, float(tol), background
        self.params = _check_params(
            CompareParams(float(learning_rate), float(momentum), tuple(map(float, start.ravel())), steps)
        )
        super().__init__(figsize=figsize, dpi=dpi)
        self.queue, self.runs, self.error = RunQueue(), [], None
        self.recordings = self.shown = self.view = None
        self.rows = ()
        self._lock, self._thread = threading.Lock(), None

        p = self.params
        lo = min(-4, math.floor(math.log10(p.learning_rate)) - 1)
        hi = max(0, math.ceil(math.log10(p.learning_rate)))
        slider = dict(continuous_update=False, style={"description_width": "initial"})
        self.learning_rate = widgets.FloatLogSlider(
            value=p.learning_rate,
            base=10,
            min=lo,
            max=hi,
            step=0.05,
            description="learning rate",
            readout_format=".3g",
            **slider,
        )
        self.momentum = widgets.FloatSlider(
            value=p.momentum, min=0.0, max=0.99, step=0.01, description="momentum", readout_format=".2f", **slider
        )
        self.steps = widgets.IntSlider(value=p.steps, min=1, max=max(500, p.steps), description="updates", **slider)
        self.start = []
        if tuple(surface.shape) == (2,):
            box = getattr(surface, "view_box", None) or ((-5.0, 5.0), (-5.0, 5.0))
            for i, (a, b) in enumerate(box):
                a, b = min(a, p.start[i]), max(b, p.start[i])
                self.start.append(
                    widgets.FloatSlider(
                        value=p.start[i],
                        min=a,
                        max=b,
                        step=(b - a) / 200,
                        description=f"start w[{i}]",
                        readout_format=".2f",
                        **slider,
                    )
                )
        self.table = widgets.HTML()
        self.status = widgets.HTML()
        controls = [(self.learning_rate, "learning_rate"), (self.momentum, "momentum"), (self.steps, "steps")] + [
            (s, f"start_{i}") for i, s in enumerate(self.start)
        ]
        for control, name in controls:
            control.observe(lambda change, name=name: self._on_change(name, change["new"]), names="value")
        start_box = self.start or [
            widgets.Label(
                f"start: {type(surface).__name__}.default_start ({surface.dim} parameters)"
                if start is None
                else f"start: as given ({surface.dim} parameters)"
            )
        ]
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.learning_rate, self.momentum, self.steps]),
                widgets.HBox([*start_box, self.status]),
                self.image,
                self.table,
            ]
        )
        # the first run happens now, so the widget is complete when constructed
        self.queue, now = request(self.queue, self.params)
        self._work(now)
        self.drag = _drag.StartDrag(self)  # drag the start point on the contours

    # -- callbacks --

    def _on_change(self, name, value):
        params = compare_params(self.params, {"name": name, "new": value})
        if params == self.params:
            return
        self.request_run(params)

    def request_run(self, params: CompareParams) -> None:
        """Run the real optimizer with ``params`` (now, or after the current run)."""
        self.params = _check_params(params)
        with self._lock:
            self.queue, now = request(self.queue, params)
        if now is None:
            self.status.value = "<i>queued: runs once the current run ends</i>"
        elif self.background:
            self._thread = threading.Thread(target=self._work, args=(now,), daemon=True)
            self._thread.start()
        else:
            self._work(now)

    def wait(self, timeout: float | None = None) -> None:
        """Block until no run is in progress or queued."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            thread = self._thread
            if thread is None or not thread.is_alive():
                return
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if deadline is not None and time.monotonic() >= deadline:
                return

    def _work(self, params: CompareParams | None):
        while params is not None:
            self._run(params)
            with self._lock:
                self.queue, params = finished(self.queue)

    def _run(self, params: CompareParams):
        from .. import runs

        self.runs.append(params)
        start = np.asarray(params.start, np.float64).reshape(self.surface.shape)
        t0 = time.perf_counter()

        def progress(name, done, total):
            self.status.value = f"<i>running the real DTensor SGD: {name} {done}/{total}</i>"

        try:
            recordings = runs.run(
                self.surface, compare_configs(params), params.steps, mesh=self.mesh, start=start, progress=progress
            )
            self.recordings, self.shown, self.error = recordings, params, None
            self.found = findings(recordings, self.surface, tol=self.tol)  # the table's and headline's numbers
            self.rows = table_rows(recordings, self.surface, self.tol, found=self.found)
            self._draw(recordings, params)
            self.table.value = table_html(self.rows, self.tol, found=self.found)
            self.status.value = (
                f"real DTensor SGD: 3 runs of {params.steps} updates in {time.perf_counter() - t0:.1f} s"
            )
        except Exception as e:  # shown in the widget: a callback has nowhere to raise to
            self.error = e
            self.status.value = (
                f"<span style='color:#D55E00'>run failed: {html.escape(type(e).__name__)}: {html.escape(str(e))}</span>"
            )

    def _draw(self, recordings, params):
        from matplotlib.lines import Line2D

        from ..views.core.figure import headline
        from ..views.paths.scene import build_scene

        fig = self.figure
        self.unfreeze_layout()
        fig.clear()
        label = getattr(self.surface, "label", type(self.surface).__name__)
        # the runs the table calls diverged end where they left the view box, as in
        # PhaseDiagram, with a note on the paths panel (draw_paths)
        box = getattr(self.surface, "view_box", None) if tuple(self.surface.shape) == (2,) else None
        diverged = (
            None
            if box is None
            else {
                r.name: divergence_update(recordings[r.name].path("w"), box)
                for r in self.rows
                if r.diverged and r.name in recordings
            }
        )
        # the headline, the table and the loss panel say one thing: the loss after 0..N
        # updates, in the numbers of ``findings`` (which the notebook prints); the
        # headline's ratios compare the means of the table's last column
        body = headline(
            fig,
            self.found.headline(),
            f"real DTensor SGD · {label} · lr {params.learning_rate:.3g}, "
            f"μ {params.momentum:.2f}, {params.steps} updates · drag the start point",
        )
        ax_path, ax_loss = body.subplots(1, 2, width_ratios=[1.05, 1.0])
        scene = build_scene(recordings, self.surface, None, diverged)
        _, art = draw_scene(scene, None, (ax_path, ax_loss), False, legend=False)
        self.view = PathsView(fig, scene, art, False, None)
        path_loss.mark_window(art, self.found)  # the updates the headline's means are over
        for line in art.paths.values():  # lines only: a marker per update
            line.set_marker("")  # tangles momentum round the minimum
        tidy_loss_axis(ax_loss)  # ticks on round updates, up to the last
        target = float(self.surface.min_value) + self.tol
        tol = style.ROLE_LOOKS["tolerance"]
        ax_loss.axhline(target, **tol.line(), gid="tolerance")
        ax_path.set_title("Paths on the loss contours", fontsize=style.TITLE_SIZE)
        # one legend under both panels names the runs, the start, the minimum and the
        # tolerance: no name stands on the paths
        handles = legend_handles(scene, style.run_looks(scene.coords))
        handles.append(Line2D([], [], **tol.line(), label=f"minimum + tol ({target:g})"))
        fig.legend(
            handles=handles, loc="outside lower center", ncols=len(handles), fontsize=style.NOTE_SIZE, frameon=False
        ).set_gid("legend")
        self.refresh(relayout=True)
