"""``CompareWidget`` drawn by the browser: plain SGD, classical momentum and Nesterov side
by side on a 2-parameter quadratic, with sliders for the learning rate, the momentum and
the number of updates, and the start dragged on the contours.

    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    dtsgd_viz.web.CompareWidget(surface, learning_rate=0.05, momentum=0.9, steps=60)

Python writes the quadratic once (``compare_state``: ``H``, the minimum, the view box,
the contour picture, the slider ranges, the looks from the style table). Every slider
move and drag runs tf-keras' rule in the browser (the recurrence of
``theory.reference.sgd_step``, float64; a browser test checks it against numpy to
1e-12), so the explorer works with no kernel. With a kernel, each released slider or
drag also runs the real DTensor SGD (``dtsgd_viz.run``), drawn as dots on the lines;
a saved page keeps the last run.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets
from numpy.typing import ArrayLike

from ..views.core import style
from ..views.paths import geometry as geo
from ..widgets.compare_state import OPTIMIZERS, CompareParams, compare_configs
from . import encode
from .look import look_table
from .paths import contour_png, loss_ticks, update_ticks
from .phase import quadratic_terms
from .widget import BrowserWidget

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..recording.recording import Recording
    from ..theory.surfaces import Surface

__all__ = ["compare_state", "CompareWidget", "MAX_STEPS", "MAX_MOMENTUM"]

MAX_STEPS = 400  # the updates slider's end
MAX_MOMENTUM = 0.99  # the momentum slider's end
LOSS_DECADES = 10  # the loss panel shows this many decades below the highest loss in view


def lr_range(h_max: float, learning_rate: float) -> tuple[float, float]:
    """The learning-rate slider's ends, powers of ten: from a hundredth of ``1/h_max``
    (creeping) to four times it (past every rule's stability limit ``2/h_max``), and
    always holding ``learning_rate``.

    >>> lr_range(20.0, 0.05)
    (0.0001, 1.0)
    """
    lo = min(math.floor(math.log10(0.01 / h_max)), math.floor(math.log10(learning_rate)) - 1)
    hi = max(math.ceil(math.log10(4.0 / h_max)), math.ceil(math.log10(learning_rate)))
    return 10.0**lo, 10.0**hi


def _check_number(name: str, value: Any, lo: float, hi: float, allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a number {allowed}. Received: {value!r}.")
    x = float(value)
    if not (math.isfinite(x) and lo <= x <= hi):
        raise ValueError(f"{name} must be {allowed}. Received: {value!r}.")
    return x


def check_settings(
    learning_rate: Any, momentum: Any, steps: Any, lr_limits: tuple[float, float] | None = None
) -> tuple[float, float, int]:
    """``(learning_rate, momentum, steps)`` checked: ``learning_rate`` finite and > 0
    (within ``lr_limits``, the slider's, when given), ``momentum`` in
    0..``MAX_MOMENTUM``, ``steps`` an int in 1..``MAX_STEPS``; else a ``ValueError``
    naming what was received and what is allowed."""
    if lr_limits is None:
        lr = _check_number("learning_rate", learning_rate, 1e-300, math.inf, "finite and > 0")
    else:
        a, b = lr_limits
        lr = _check_number("learning_rate", learning_rate, a, b, f"in {a:g}..{b:g} (the slider's range)")
    mu = _check_number("momentum", momentum, 0.0, MAX_MOMENTUM, f"in 0..{MAX_MOMENTUM:g}")
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 1 <= int(steps) <= MAX_STEPS:
        raise ValueError(f"steps must be an int in 1..{MAX_STEPS}. Received: {steps!r}.")
    return lr, mu, int(steps)


def _box(surface: Surface, start: np.ndarray, minimum: np.ndarray) -> geo.Box:
    box = getattr(surface, "view_box", None)
    if box is None:
        span = 1.3 * max(float(np.max(np.abs(start - minimum))), 1e-6)
        box = ((minimum[0] - span, minimum[0] + span), (minimum[1] - span, minimum[1] + span))
    (x0, x1), (y0, y1) = box
    return ((float(x0), float(x1)), (float(y0), float(y1)))


def compare_state(
    surface: Surface,
    *,
    learning_rate: float = 0.05,
    momentum: float = 0.9,
    steps: int = 60,
    start: ArrayLike | None = None,
    contour_px: int = 400,
) -> dict[str, Any]:
    """Everything the browser's ``CompareWidget`` draws, as plain data: the three runs
    (``compare_configs``' names, their names and looks from the style table, which use
    the momentum), the quadratic (``H``, minimum, loss at the minimum, view box, start,
    contour picture), the first settings and the sliders' ranges, and the loss and
    update ticks. The browser runs the rule on it."""
    from ..runs import check_start

    H, minimum, f_min = _terms(surface)
    h_max = float(np.max(np.linalg.eigvalsh(H)))
    lr, mu, steps = check_settings(learning_rate, momentum, steps)
    lr_lo, lr_hi = lr_range(h_max, lr)
    start_arr = np.asarray(check_start(surface, start), np.float64).reshape(2)
    box = _box(surface, start_arr, minimum)
    (x0, x1), (y0, y1) = box
    if not (x0 <= start_arr[0] <= x1 and y0 <= start_arr[1] <= y1):
        raise ValueError(
            f"start must lie in the view box x in {x0:g}..{x1:g}, y in {y0:g}..{y1:g} (where it is dragged). "
            f"Received: {start_arr.tolist()}."
        )
    names = list(OPTIMIZERS)
    probe = compare_configs(CompareParams(1.0, 0.5, (0.0, 0.0), 1))
    table = look_table(names)
    grid = geo.loss_grid(surface.value_np, geo.identity_plane(), surface.shape, box)
    # the loss panel: ten decades down from ten times the highest loss in the view box (a
    # start dragged to a corner), so every start's runs fit; lower losses sit on the floor
    corners = np.array([[x, y] for x in box[0] for y in box[1]]) - minimum
    top = float(np.max(0.5 * np.einsum("ki,ij,kj->k", corners, H, corners)))
    top_decade = math.ceil(math.log10(max(top, 1e-300)))
    lo, hi = 10.0 ** (top_decade - LOSS_DECADES), 10.0**top_decade
    ticks, labels = loss_ticks(lo, hi)
    return {
        "kind": "compare",
        "rules": names,
        "rule_names": {k: geo.rule_name(k) for k in names},
        # what each run takes of the settings: Nesterov's form, and the momentum or none
        "nesterov": {k: bool(c["nesterov"]) for k, c in probe.items()},
        "uses_momentum": {k: c["momentum"] == 0.5 for k, c in probe.items()},
        "looks": table["runs"],
        "hessian": H.ravel().tolist(),
        "minimum": minimum.tolist(),
        "min_value": f_min,
        "start": start_arr.tolist(),
        "box": [list(box[0]), list(box[1])],
        "contours": contour_png(grid, geo.log_levels(grid[2]), box, contour_px),
        "minimum_face": table["minimum_face"],
        "learning_rate": lr,
        "momentum": mu,
        "steps": steps,
        "lr_range": [lr_lo, lr_hi],
        "momentum_range": [0.0, MAX_MOMENTUM],
        "steps_range": [1, MAX_STEPS],
        "h_max": h_max,
        "loss_range": [lo, hi],
        "loss_ticks": ticks,
        "loss_labels": labels,
        "update_ticks": [update_ticks(n) for n in range(1, MAX_STEPS + 1)],  # [n - 1]: for n updates
        "level": 1.05,  # views.paths.findings.LEVEL
        "surface": getattr(surface, "label", type(surface).__name__),
    }


def _terms(surface: Surface) -> tuple[np.ndarray, np.ndarray, float]:
    try:
        return quadratic_terms(surface)
    except ValueError as e:  # the same message, naming this explorer
        raise ValueError(str(e).replace("PhaseDiagram", "CompareWidget")) from None


class CompareWidget(BrowserWidget):
    """Plain SGD, classical momentum and Nesterov from one start on a 2-parameter
    quadratic, drawn by the browser from ``compare_state``: the paths on the contours,
    the loss after each update, which run ends lowest (the mean loss over the last
    fifth of the run, as ``dtsgd_viz.findings``) and each run's loss after the last
    update. Moving a slider or dragging the start (the white circle) runs tf-keras'
    rule in the browser at once.

    ``learning_rate``, ``momentum``, ``steps`` and ``start`` are synced both ways: set
    them from Python to move the controls; read them after the reader moved them. With
    ``run_real=True`` and a kernel, each change (a released slider or drag) runs the
    real DTensor SGD with those settings (``dtsgd_viz.run``), in the trait's callback;
    ``real`` holds its settings, paths and losses, drawn as dots on the lines while
    the controls show those settings.

    Args:
      surface: a quadratic of 2 parameters (``surfaces.RotatedQuadratic``).
      learning_rate, momentum, steps: the first settings (momentum in 0..0.99, steps
        in 1..400).
      start: where the runs start (default: the surface's), inside its view box.
      run_real: run the real optimizer at each change (needs a kernel; a mesh via ``mesh``).
    """

    _module = ("rule.js", "compare.js")
    learning_rate = traitlets.Float(0.05).tag(sync=True)
    momentum = traitlets.Float(0.9).tag(sync=True)
    steps = traitlets.Int(60).tag(sync=True)
    start = traitlets.List(traitlets.Float(), default_value=[0.0, 0.0], minlen=2, maxlen=2).tag(sync=True)
    real = traitlets.Dict().tag(sync=True)

    def __init__(
        self,
        surface: Surface,
        *,
        learning_rate: float = 0.05,
        momentum: float = 0.9,
        steps: int = 60,
        start: ArrayLike | None = None,
        run_real: bool = True,
        mesh: Any = None,
    ):
        state = compare_state(surface, learning_rate=learning_rate, momentum=momentum, steps=steps, start=start)
        self._lr_limits = (state["lr_range"][0], state["lr_range"][1])
        self._surface, self._mesh, self.run_real = surface, mesh, run_real
        self.error: Exception | None = None
        self.recordings: dict[str, Recording] | None = None
        self.runs: list[dict[str, Any]] = []  # the settings of every real run made, in order
        self._running = self._pending = False
        super().__init__(
            data=state,
            learning_rate=state["learning_rate"],
            momentum=state["momentum"],
            steps=state["steps"],
            start=list(state["start"]),
        )
        if run_real:
            self.run_here()
        self.observe(self._on_change, names=["learning_rate", "momentum", "steps", "start"])

    @traitlets.validate("learning_rate", "momentum", "steps")
    def _valid_setting(self, proposal: Any) -> Any:
        name, value = proposal["trait"].name, proposal["value"]
        lr, mu, steps = self.learning_rate, self.momentum, self.steps
        limits = getattr(self, "_lr_limits", None)
        if name == "learning_rate":
            return check_settings(value, mu, steps, limits)[0]
        if name == "momentum":
            return check_settings(lr if limits is None else limits[0], value, steps)[1]
        return check_settings(lr if limits is None else limits[0], mu, value)[2]

    @traitlets.validate("start")
    def _valid_start(self, proposal: Any) -> Any:
        value = [float(v) for v in proposal["value"]]
        data = self.data
        if data:
            (x0, x1), (y0, y1) = data["box"]
            if not all(math.isfinite(v) for v in value) or not (x0 <= value[0] <= x1 and y0 <= value[1] <= y1):
                raise traitlets.TraitError(
                    f"start must lie in the view box x in {x0:g}..{x1:g}, y in {y0:g}..{y1:g}. Received: {value}."
                )
        return value

    def settings(self) -> dict[str, Any]:
        """The controls' settings: ``learning_rate``, ``momentum``, ``steps``, ``start``."""
        return {
            "learning_rate": float(self.learning_rate),
            "momentum": float(self.momentum),
            "steps": int(self.steps),
            "start": [float(v) for v in self.start],
        }

    def reference_paths(self) -> dict[str, np.ndarray]:
        """The three runs' paths from ``start``, ``(steps + 1, 2)`` each: what the browser
        draws, from ``theory.reference.run`` in float64."""
        from ..theory import reference

        H, m = np.asarray(self.data["hessian"]).reshape(2, 2), np.asarray(self.data["minimum"])
        grad = lambda p: (p - m) @ H.T  # noqa: E731
        p0 = np.asarray(self.start, np.float64)
        configs = compare_configs(CompareParams(self.learning_rate, self.momentum, tuple(self.start), self.steps))
        return {
            k: reference.run(grad, p0, self.steps, c["learning_rate"], c["momentum"], c["nesterov"])
            for k, c in configs.items()
        }

    def run_here(self) -> None:
        """Run the real DTensor SGD with the controls' settings; ``real`` then holds them
        (``params``), the paths (the float32 parameters as recorded, ``(steps + 1, 2)``)
        and the loss after 0..steps updates (the surface at them, float64)."""
        from .. import runs

        params = self.settings()
        p = CompareParams(params["learning_rate"], params["momentum"], tuple(params["start"]), params["steps"])
        start = np.asarray(params["start"], np.float32).reshape(self._surface.shape)
        self.runs.append(params)
        try:
            recs = runs.run(self._surface, compare_configs(p), p.steps, mesh=self._mesh, start=start)
        except Exception as e:  # a trait callback cannot raise anywhere a reader sees it
            self.error = e
            self.real = {"error": f"{type(e).__name__}: {e}", "params": params}
            return
        self.error, self.recordings = None, recs
        paths = {k: np.asarray(r.path("w"), np.float64).reshape(-1, 2) for k, r in recs.items()}
        with np.errstate(over="ignore", invalid="ignore"):
            losses = {
                k: np.asarray(self._surface.value_np(v.reshape(-1, *self._surface.shape)), np.float64)
                for k, v in paths.items()
            }
        self.real = {
            "params": params,
            "paths": {k: encode.array(v) for k, v in paths.items()},
            "losses": {k: encode.array(v) for k, v in losses.items()},
        }

    def _on_change(self, change: Any) -> None:
        if not self.run_real:
            return
        # a change while a run is in progress (a callback re-entered): run once after it,
        # with the settings of then (the latest)
        self._pending = True
        if self._running:
            return
        self._running = True
        try:
            while self._pending:
                self._pending = False
                self.run_here()
        finally:
            self._running = False

    def still_caption(self) -> str:
        return "Still picture of the widget's table (live: move the sliders, drag the start)"

    def snapshot_png(self) -> bytes | None:
        """The still picture (``still_figure``) as a PNG (None: no real run made)."""
        import io

        fig = self.still_figure()
        if fig is None:
            return None
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=style.DPI)
        return buf.getvalue()

    def still_figure(self) -> Figure | None:
        """The still picture: the table the widget adds, each real run's loss after the
        last update and the mean its headline compares (``findings``), under that
        headline and the settings (None: no real run made)."""
        if self.recordings is None:
            return None
        from ..views.core.figure import headline, new_figure
        from ..views.paths.findings import findings, window_text

        found = findings(self.recordings, self._surface)
        p = self.settings()
        fig = new_figure((style.WIDTH, 0.9 + 0.32 * (len(self.recordings) + 1)), style.DPI)
        start = ", ".join(f"{v:g}" for v in p["start"])
        body = headline(
            fig,
            found.headline(),
            f"lr {p['learning_rate']:g} · μ {p['momentum']:g} · start ({start}) · real DTensor SGD",
        )
        ax = body.subplots()
        ax.set_axis_off()
        looks = style.run_looks(list(self.recordings))
        cells = [[geo.rule_name(k), f"{found.final_loss[k]:.2e}", f"{found.tail_loss[k]:.2e}"] for k in self.recordings]
        header = ["run", f"loss after {p['steps']} updates", window_text(found.window)]  # the headline's
        table = ax.table(
            cellText=cells, colLabels=header, loc="center", cellLoc="right", colLoc="right", colWidths=[0.16, 0.24, 0.3]
        )
        table.auto_set_font_size(False)
        table.set_fontsize(style.LABEL_SIZE)
        table.scale(1.0, 1.5)
        for (row, col), cell in table.get_celld().items():
            cell.set_edgecolor("0.8")
            if row > 0 and col == 0:
                cell.get_text().set_color(looks[list(self.recordings)[row - 1]].color or "black")
                cell.get_text().set_fontweight(
                    "bold" if list(self.recordings)[row - 1] == found.ranking[0] else "normal"
                )
        return fig
