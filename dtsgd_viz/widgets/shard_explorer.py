"""``ShardExplorer``: browse a recording's per-shard values by variable, kind and update.

    rec = dtsgd_viz.load_recording("nesterov.npz")
    dtsgd_viz.widgets.ShardExplorer(rec, step=5)   # starts at update 5; Play runs on
    dtsgd_viz.widgets.ShardExplorer({"momentum": rec_a, "nesterov": rec_b})  # side by side

The slider's value is the optimizer update shown, as ``recording.steps`` counts them
(the first update is 1), as ``PathExplorer``'s is: ``explorer.slider.value = 10`` shows
update 10; a value between recorded updates jumps to the nearest recorded one.

The colour scale is fixed over the whole run by default (a checkbox turns it per
update), so playing through the updates shows each block's values decay.

Every callback goes through ``explorer_state`` (pure: old state + one change -> new
state) and ``redraw_for`` (which in-place update the new state needs), so the logic
is tested without a browser; only a variable change rebuilds the figure.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import numpy as np

from ..views.core import style
from ..views.core.empty import check_not_empty
from ..views.core.steps import describe_updates
from ..views.shards.geometry import update_index
from ..views.shards.plot import draw_shards
from ._canvas import FigureWidget
from .shard_runs import RunsShardsView

if TYPE_CHECKING:
    from ..recording import Recording

WIDTH_RATIOS = (1.5, 1)
"""The tensor panel's and the norm panel's widths: the tensor panel's title fits on
``style.WIDTH`` (the norm panel's legend stands right of it)."""
FIELDS = ("variable", "kind", "step")
CHANGES = (*FIELDS, "update")


@dataclasses.dataclass(frozen=True)
class ExplorerState:
    """What the explorer shows, and what it may show. ``step`` is an index into
    ``steps`` (the recorded update numbers); ``update`` (the slider's value) is the
    update shown, ``steps[step]``."""

    variables: tuple[str, ...]
    kinds: tuple[str, ...]
    steps: tuple[int, ...]
    variable: str
    kind: str
    step: int

    @classmethod
    def of(
        cls, recording: Recording, variable: str | None = None, kind: str | None = None, step: int | None = None
    ) -> ExplorerState:
        """The starting state for ``recording`` (first variable, velocity if recorded) at
        optimizer update ``step`` (default: the first recorded; -1, -2, ...: counting back from the last)."""
        check_not_empty(recording)
        kinds = tuple(recording.kinds)
        state = cls(
            tuple(recording.variables),
            kinds,
            tuple(int(s) for s in recording.steps),
            recording.variables[0],
            "velocity" if "velocity" in kinds else kinds[0],
            0 if step is None else update_index(recording, step),
        )
        for name, value in (("variable", variable), ("kind", kind)):
            if value is not None:
                state = explorer_state(state, {"name": name, "new": value})
        return state

    @property
    def update(self) -> int:
        return self.steps[self.step]


def explorer_state(state: ExplorerState, change: Mapping[str, Any]) -> ExplorerState:
    """The state after one change ``{"name": "variable"|"kind"|"update"|"step", "new":
    value}`` (the shape of a traitlets change). ``update``: an update number (the
    slider's value), or the nearest recorded one when it falls between recorded updates;
    ``step``: an index into the recorded updates (Play's value). Raises ValueError for
    values it cannot show."""
    name, new = change["name"], change["new"]
    if name == "variable" and new not in state.variables:
        raise ValueError(f"Unknown variable {new!r}. This recording has: {list(state.variables)}.")
    if name == "kind" and new not in state.kinds:
        raise ValueError(f"Kind {new!r} was not recorded. Recorded kinds: {list(state.kinds)}.")
    if name == "step":
        n = len(state.steps)
        if isinstance(new, bool) or not isinstance(new, int) or not 0 <= new < n:
            raise ValueError(
                f"step (Play's position) must be an int in 0..{n - 1}, an "
                f"index into the recorded updates. Received: {new!r}."
            )
    if name == "update":
        u = np.asarray(state.steps)
        if isinstance(new, (bool, np.bool_)) or not isinstance(new, (int, np.integer)) or not u[0] <= new <= u[-1]:
            raise ValueError(
                f"update must be an int in {int(u[0])}..{int(u[-1])} ({describe_updates(u)}). Received: {new!r}."
            )
        name, new = "step", int(np.argmin(np.abs(u - int(new))))
    if name not in FIELDS:
        raise ValueError(f"Unknown change {name!r}. Allowed: {list(CHANGES)}.")
    return dataclasses.replace(state, **{name: new})


def redraw_for(old: ExplorerState, new: ExplorerState) -> str | None:
    """Which update takes the figure from ``old`` to ``new``: ``"variable"`` (rebuild),
    ``"kind"`` or ``"step"`` (in place), or None (nothing changed)."""
    for name in FIELDS:
        if getattr(old, name) != getattr(new, name):
            return name
    return None


def step_text(state: ExplorerState) -> str:
    return f"update {state.update}  (recorded update {state.step + 1} of {len(state.steps)})"


class ShardExplorer(FigureWidget):
    """``plot_shards`` with a variable picker, a kind picker (recorded kinds only), an
    update slider with Play, and a checkbox for a colour scale fixed over the run (on by
    default, so decay shows while playing). ``step``: the update to start at (as
    ``recording.steps`` counts, -1..-n from the last; default the first recorded). ``.widget`` is the root
    ``VBox``; ``.view`` the ``ShardsView``.

    The slider's value is the update shown (``slider.value = 10`` shows update 10; its
    step is the recording's spacing). Play walks the recorded updates one by one (its
    value is the position among them, kept in step with the slider), so it never sticks
    between unevenly spaced ones.

    A dict ``{run name: Recording}`` (two or more runs of one model on one mesh, as
    ``plot_compare`` takes) shows the runs side by side instead: the tensor of each at the
    shown update on one colour scale, over each run's norm of it (``RunsShardsView``).

    The figure is ``style.SHARD_EXPLORER_SIZE`` at ``style.DPI``: its PNG (930 px wide)
    shows at 100% in a notebook column."""

    def __init__(
        self,
        recording: Recording | dict[str, Recording],
        variable: str | None = None,
        kind: str | None = None,
        step: int | None = None,
        *,
        interval: int = 400,
        fixed_scale: bool = True,
        figsize: tuple[float, float] = style.SHARD_EXPLORER_SIZE,
        dpi: float = style.DPI,
    ):
        self.recording = recording
        self.runs = None
        if isinstance(recording, dict):
            from ..views.compare.geometry import check_runs

            check_runs(recording)
            self.runs, recording = recording, next(iter(recording.values()))
        elif not (hasattr(recording, "steps") and hasattr(recording, "kinds")):
            raise TypeError(
                "ShardExplorer takes a Recording or a dict {run name: Recording}. "
                f"Received: {type(recording).__name__}."
            )
        self.state = ExplorerState.of(recording, variable, kind, step)
        super().__init__(figsize=figsize, dpi=dpi)
        s = self.state
        self.variable = widgets.Dropdown(options=list(s.variables), value=s.variable, description="variable")
        self.kind = widgets.ToggleButtons(options=list(s.kinds), value=s.kind, description="kind")
        d = np.diff(np.asarray(s.steps))
        spacing = int(d[0]) if len(d) and np.all(d == d[0]) else 1  # else the state snaps
        self.slider = widgets.IntSlider(
            value=s.update,
            min=s.steps[0],
            max=s.steps[-1],
            step=spacing,
            description="update",
            readout=False,
            continuous_update=True,
        )
        self.play = widgets.Play(value=s.step, min=0, max=len(s.steps) - 1, interval=interval, description="play")
        # kernel-side (not jslink) so Python code setting either one moves both
        self.play.observe(lambda change: setattr(self.slider, "value", self.state.steps[change["new"]]), names="value")
        self.step_label = widgets.Label(step_text(s))
        self.fixed = widgets.Checkbox(
            value=bool(fixed_scale), indent=False, description="colour scale fixed over the run"
        )
        self.fixed.observe(self._on_fixed, names="value")
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.variable, self.kind, self.fixed]),
                widgets.HBox([self.play, self.slider, self.step_label]),
                self.image,
            ]
        )
        for picker, name in ((self.variable, "variable"), (self.kind, "kind"), (self.slider, "update")):
            picker.observe(lambda change, name=name: self._on_change(name, change["new"]), names="value")
        self._draw()

    def _draw(self):
        self.unfreeze_layout()
        self.figure.clear()
        s = self.state
        if self.runs is not None:
            self.view = RunsShardsView(
                self.runs, s.variable, s.kind, s.step, figure=self.figure, fixed_scale=self.fixed.value
            )
            self.refresh(relayout=True)
            return
        axes = self.figure.subplots(1, 2, width_ratios=list(WIDTH_RATIOS))
        recording = self.recording
        assert not isinstance(recording, dict)  # a dict of runs is drawn above
        self.view = draw_shards(
            recording, s.variable, s.kind, s.update, ax=tuple(axes), fixed_scale=self.fixed.value, headline=True
        )
        self.refresh(relayout=True)

    def _on_fixed(self, change):
        self.view.set_fixed_scale(change["new"])
        self.refresh(relayout=True)  # the title gains or loses a line

    def _on_change(self, name, value):
        new = explorer_state(self.state, {"name": name, "new": value})
        if name == "update" and new.update != value:  # between recorded updates
            self.slider.value = new.update  # the nearest: this callback again draws it
            return
        what, self.state = redraw_for(self.state, new), new
        self.play.value = new.step
        if what == "variable":
            self._draw()
        elif what == "kind":
            self.view.set_kind(new.kind)
            self.refresh(relayout=True)  # colour bar labels may change width
        elif what == "step":
            self.view.set_index(new.step)
            self.refresh(relayout=True)  # the finding in the title may change its length
        self.step_label.value = step_text(new)
