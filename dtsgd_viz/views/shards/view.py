"""``ShardsView``: the artists of ``plot_shards``, held so a widget moves to another update or kind in place."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ..core import style
from ..core.diverging import diverging_text
from ..core.figure import fit, headline, new_figure
from .findings import KIND_NOUNS, STATS_ONLY_TEXT, change_text, layout_text, spread_text, subject_text  # noqa: F401 - widgets read them here
from .geometry import (
    as_image,
    axis_labels,
    block_patches,
    flagged_steps,
    image_shape,
    run_limit,
    settings_text,
    short_device_names,
    update_index,
)
from .lines import NormPanel
from .tensor_panel import TensorPanel, box_aspect

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ...recording import Recording
    from .geometry import BlockPatch

__all__ = ["ShardsView", "draw_shards", "plot_shards", "layout_text", "KIND_NOUNS", "change_text"]


class ShardsView:
    """The tensor on ``heat_ax`` (None: a stats recording's norms alone), the ``norm`` panel on ``norm_ax``."""

    def __init__(
        self,
        recording: Recording,
        name: str,
        kind: str = "velocity",
        step: int | None = None,
        *,
        heat_ax: Axes | None,
        norm_ax: Axes,
        fixed_scale: bool = False,
        headline: bool = False,
    ):
        self.recording, self.name = recording, name
        self.index = update_index(recording, step)
        self.kind, self.fixed_scale = kind, bool(fixed_scale)
        self.stats_only = getattr(recording, "mode", "full") == "stats"
        self._load(kind)  # raises for unknown name/kind
        if heat_ax is None and not self.stats_only:
            raise ValueError(
                "heat_ax=None draws a stats recording's statistics alone: pass heat_ax "
                f"(mode={getattr(recording, 'mode', 'full')!r})."
            )
        self.heat_ax, self.norm_ax = heat_ax, norm_ax
        self.figure = cast("Figure", norm_ax.figure)
        self.headline = bool(headline) or heat_ax is None
        self.geometry = recording.geometry(name)
        self.styles = style.block_styles(self.geometry)
        self.short_names = short_device_names(recording.shard_devices(name))
        self.patches: tuple[BlockPatch, ...] = block_patches(self.geometry, self.short_names)
        self.nonfinite_idx, self.mismatch_idx = flagged_steps(recording, name)
        self.updates = np.asarray(recording.steps)
        self.tensor: TensorPanel | None = None
        self.heatmap = None
        if heat_ax is not None:
            image = None if self.values is None else as_image(self.values[self.index])
            self.tensor = TensorPanel(
                heat_ax, self.geometry, self.short_names, image, limit=self._limit(), colorbar_label=self._bar_label()
            )
            self.heatmap = self.tensor.heatmap
            self._label_axes(heat_ax)
        self.norm = NormPanel(self)
        self.norm.draw()
        self._titles()
        self.norm.name_lines()

    def _load(self, kind: str) -> None:  # ``values`` is None in stats mode: the norm panel reads the stored stats
        values = (self.recording.shard_stats if self.stats_only else self.recording.global_values)(self.name, kind)
        if values.dtype.name == "bfloat16":  # matplotlib and numpy.ma cannot reduce it
            values = values.astype(np.float32)  # exact: bfloat16 is a float32 prefix
        self.values, self._run_limit = None if self.stats_only else values, None

    def _limit(self) -> float | None:
        if not self.fixed_scale or self.values is None:
            return None
        if self._run_limit is None:
            self._run_limit = run_limit(self.values)
        return self._run_limit

    def _bar_label(self) -> str:
        return f"{self.kind} value" + (", scale of the whole run" if self.fixed_scale else "")

    def _label_axes(self, ax: Axes) -> None:
        xlabel, ylabel, _ = axis_labels(self.geometry.layout)
        if self.stats_only:
            ax.set_xticks([])
            ax.set_yticks([])
            xlabel, ylabel = "device blocks (colours: the lines)", ""
        ax.set_xlabel(xlabel, fontsize=style.LABEL_SIZE)
        ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE)

    def _subject(self) -> str:
        steps = self.recording.steps
        return subject_text(self.kind, self.name, int(steps[self.index]), int(steps[-1]))

    def finding(self) -> str:  # the figure's title: the shown tensor and its blocks' norm spread at this update
        text = f"{self._subject()}: {spread_text(self.norm.columns()[self.index], [p.label for p in self.patches])}"
        diverging = diverging_text(self.recording)
        return text + (f"; {diverging}" if diverging else "")

    def _titles(self) -> None:
        if self.tensor is not None and not self.headline:  # the panel says what the headline would
            self.tensor.ax.set_title(self._subject(), fontsize=style.TITLE_SIZE, pad=self.tensor.title_pad())
        if not self.headline:
            return
        for old in [a for a in [*self.figure.texts, *self.figure.artists] if a.get_gid() == "subtitle"]:
            old.remove()
        settings = f"{settings_text(self.recording, self.index)} · {layout_text(self.geometry.layout)}"
        finding = self.finding()
        if "\n" in fit(finding, self.figure.get_figwidth() * 72, style.SUPTITLE_SIZE, bold=True):
            finding = finding.replace(": ", ":\n", 1)  # the subject, then the spread
        headline(self.figure, finding, settings + (f"\n{STATS_ONLY_TEXT}" if self.stats_only else ""))

    def set_index(self, index: int) -> None:
        """Show the update at ``index`` into ``recording.steps`` (a slider position)."""
        self.index = int(index) % len(self.recording)
        if self.heatmap is not None:
            assert self.tensor is not None and self.values is not None  # a heatmap of values
            self.tensor.set_image(as_image(self.values[self.index]), self._limit())
        self.norm.show_index()
        self._titles()

    def set_fixed_scale(self, fixed: bool) -> None:
        """Colour scale over the whole run (True: decay shows) or per update (False)."""
        self.fixed_scale = bool(fixed)
        if self.tensor is not None:
            self.tensor.colorbar_label = self._bar_label()
        self.set_index(self.index)

    def set_kind(self, kind: str) -> None:
        """Show another recorded kind (``param``/``velocity``/``grad``), in place."""
        self._load(kind)
        self.kind = kind
        self.norm.set_kind()
        if self.tensor is not None:
            self.tensor.colorbar_label = self._bar_label()
        self.set_index(self.index)


SHARDS_SIZE = (style.WIDTH, 4.6)  # the heatmap and the norm lines
FLAT_HEIGHT = 4.0  # ... of a flat tensor: its heatmap fills a shorter figure


def _axes(ax, figsize, width_ratios, stats_only) -> tuple[Axes | None, Axes]:
    if ax is None and stats_only:  # no values: no heatmap panel, the statistics alone
        return None, new_figure((style.WIDTH, FLAT_HEIGHT)).add_subplot()
    if ax is None:
        return tuple(new_figure(figsize).subplots(1, 2, width_ratios=list(width_ratios)))
    if isinstance(ax, (tuple, list)) and len(ax) == 2:
        return tuple(ax)
    raise TypeError(f"ax must be None or a pair (tensor_ax, norm_ax). Received: {ax!r}.")


def draw_shards(
    recording: Recording,
    name: str,
    kind: str = "velocity",
    step: int | None = None,
    *,
    ax: tuple[Axes, Axes] | list[Axes] | None = None,
    fixed_scale: bool = False,
    headline: bool | None = None,
) -> ShardsView:
    """``plot_shards``' ``ShardsView`` (``set_index``/``set_kind``/``set_fixed_scale`` move it in place)."""
    update_index(recording, step)  # an empty recording or unknown update: a clear error
    stats_only = getattr(recording, "mode", "full") == "stats"
    (recording.shard_stats if stats_only else recording.global_values)(name, kind)  # unknown name/kind: its error
    shape = recording.geometry(name).global_shape
    flat = box_aspect(shape) or 1.0
    rows, cols = image_shape(shape)
    wide = box_aspect(shape) is None and cols >= 1.5 * rows  # square cells: a wider panel
    size = (SHARDS_SIZE[0], FLAT_HEIGHT if flat < 0.7 else SHARDS_SIZE[1])
    heat_ax, norm_ax = _axes(ax, size, (1.4, 1) if wide else (1.2, 1), stats_only)
    return ShardsView(
        recording,
        name,
        kind,
        step,
        heat_ax=heat_ax,
        norm_ax=norm_ax,
        fixed_scale=fixed_scale,
        headline=ax is None if headline is None else headline,
    )


def plot_shards(
    recording: Recording,
    name: str,
    kind: str = "velocity",
    step: int | None = None,
    *,
    ax: tuple[Axes, Axes] | list[Axes] | None = None,
    fixed_scale: bool = False,
) -> Figure:
    """The global ``kind`` tensor of ``name`` after optimizer update ``step`` (1 is the first, -1 or None
    the last), each device's block outlined and named, beside each unique block's L2 norm over the updates.

    ``fixed_scale=True``: one colour scale over the whole run, else each update's own. ``ax``: None (a new
    figure) or a pair ``(tensor_ax, norm_ax)``. A ``mode="stats"`` recording draws its stored block norms alone."""
    return draw_shards(recording, name, kind, step, ax=ax, fixed_scale=fixed_scale).figure
