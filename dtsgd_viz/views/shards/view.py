"""``ShardsView``: the artists of the shard values view (``plot_shards``), held so a
widget can move to another update or kind by updating them in place (``set_index``,
``set_step``, ``set_kind``, ``set_fixed_scale``) instead of rebuilding the figure.

The heatmap and its block outlines are a ``TensorPanel`` (``tensor``); the norm lines on
the right are a ``NormPanel`` (``norm``, ``lines.py``), which owns its end labels and band
(``labels.py``), its hidden-line marks (``coincide.py``) and, for ``mode="stats"``, the
statistics panels (``stats.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

import numpy as np

from ..core import style
from ..core.diverging import diverging_text
from ..core.empty import check_not_empty
from ..core.figure import fit, headline
from .geometry import (
    as_image,
    axis_labels,
    block_patches,
    flagged_steps,
    run_limit,
    settings_text,
    shard_norms,
    short_device_names,
    update_index,
)
from .lines import NormPanel, change_text  # noqa: F401 - widgets read change_text here
from .stats import STATS_ONLY_TEXT, spread_text
from .tensor_panel import blocks_are_slices, draw_tensor

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.lines import Line2D
    from matplotlib.text import Annotation, Text

    from ...recording import Recording
    from ...specs import LayoutSpec
    from .geometry import BlockPatch
    from .tensor_panel import TensorPanel

KIND_NOUNS = {"param": "parameter", "velocity": "velocity", "grad": "gradient"}
FAINT = 0.25
"""Values reaching under this fraction of a run-wide colour limit look nearly white:
the heatmap's title says how far they reach."""

__all__ = ["ShardsView", "layout_text"]


def layout_text(layout: LayoutSpec) -> str:
    """The layout in the settings line: its sharding specs, the mesh, and how many
    replicas each block has (the mesh dims the layout leaves unused).

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> layout_text(LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4})))
    'laid out [unsharded, model] on mesh (batch 2, model 4), 2 replicas per block'
    """
    mesh = layout.mesh
    dims = "(" + ", ".join(f"{d} {mesh.dim_size(d)}" for d in mesh.dim_names) + ")"
    copies = int(np.prod([mesh.dim_size(d) for d in mesh.dim_names if d not in layout.sharding_specs]))
    text = f"laid out [{', '.join(layout.sharding_specs)}] on mesh {dims}"
    return text + (f", {copies} replicas per block" if copies > 1 else "")


class ShardsView:
    """The shard values view drawn on ``heat_ax`` (and ``norm_ax`` unless None). A stats
    recording may pass ``heat_ax=None``: its statistics alone.

    ``headline=True`` (``plot_shards``'s own figures; always with ``heat_ax=None``)
    titles the figure (``figure.headline``): the finding of the shown update (how far
    apart its blocks' norms are, ``spread_text``) and a settings line (optimizer,
    layout; for a stats recording, that the values were not recorded);
    the panels keep short titles, the norm panel its finding over the run
    (``change_text``). ``headline=False`` (axes of a figure the caller owns, as
    ``ShardExplorer``'s) puts the settings into the heatmap panel's title instead.

    Attributes tests and widgets use: ``tensor`` (the ``TensorPanel``: ``heatmap``,
    ``outlines``, ``labels``, ``patches``), ``heatmap`` (None for a stats recording,
    whose ``stats_note`` says why), ``lines`` (one norm ``Line2D`` per replica group,
    x = update), ``stat_axes``/``stat_lines`` (stats recordings: the norm, mean and
    max |x| panels and their lines), ``step_lines`` (the shown-update markers),
    ``mismatch_marks``/``nonfinite_marks`` (``Line2D`` or None), ``fixed_scale``; the
    norm panel's own state is on ``norm`` (``NormPanel``: ``data``, ``labels``,
    ``coincide``, ``stat_panels``), the names most read also here.
    """

    def __init__(
        self,
        recording: Recording,
        name: str,
        kind: str = "velocity",
        step: int | None = None,
        *,
        heat_ax: Axes | None,
        norm_ax: Axes | None = None,
        fixed_scale: bool = False,
        headline: bool = False,
    ):
        check_not_empty(recording)
        self.recording, self.name = recording, name
        self.index = update_index(recording, step)
        self.kind, self.fixed_scale = kind, bool(fixed_scale)
        self.stats_only = getattr(recording, "mode", "full") == "stats"
        self._load(kind)  # raises for unknown name/kind
        if heat_ax is None and (norm_ax is None or not self.stats_only):
            raise ValueError(
                "heat_ax=None draws a stats recording's statistics alone: pass "
                f"heat_ax (mode={getattr(recording, 'mode', 'full')!r}, "
                f"norm_ax={norm_ax!r})."
            )
        self.heat_ax, self.norm_ax = heat_ax, norm_ax
        host = heat_ax if heat_ax is not None else norm_ax
        assert host is not None  # checked above
        self.figure = cast("Figure", host.figure)  # a SubFigure has no get_figwidth
        self.headline = bool(headline) or heat_ax is None
        self.geometry = recording.geometry(name)
        self.styles = style.block_styles(self.geometry)
        self.devices = recording.shard_devices(name)
        self.short_names = short_device_names(self.devices)
        self.nonfinite_idx, self.mismatch_idx = flagged_steps(recording, name)
        self.updates = np.asarray(recording.steps)
        self.diverging = diverging_text(recording)  # "the run diverges from update k"
        self.stats_note = None
        self._xlabel = ""
        self._norm_title = None
        self.block_patches = block_patches(self.geometry, self.short_names)
        self.tensor: TensorPanel | None = None
        self.heatmap = None
        if heat_ax is not None:
            self.tensor = draw_tensor(
                heat_ax,
                self.geometry,
                self.short_names,
                None if self.stats_only or self.values is None else as_image(self.values[self.index]),
                limit=self._limit(),
                colorbar_label=f"{kind} value",
            )
            self.heatmap = self.tensor.heatmap
            self._label_axes()
        self.norm = NormPanel(self)
        if norm_ax is not None:
            self.norm.draw()
        self._update_titles()

    # ---- data -------------------------------------------------------------------------

    def _load(self, kind):
        """``values`` (full mode) or ``stats`` (stats mode) of ``kind``."""
        if self.stats_only:
            self.values, self.stats = None, self.recording.shard_stats(self.name, kind)
        else:
            values = self.recording.global_values(self.name, kind)
            if values.dtype.name == "bfloat16":  # matplotlib and numpy.ma cannot reduce it
                values = values.astype(np.float32)  # exact: bfloat16 is a float32 prefix
            self.values, self.stats = values, None
        self._run_limit = None  # the colour limit over the run, once asked

    def _limit(self):
        """The colour limit: over the whole run when ``fixed_scale``, else None (this
        update's own largest magnitude)."""
        if not self.fixed_scale or self.values is None:
            return None
        if self._run_limit is None:
            self._run_limit = run_limit(self.values)
        return self._run_limit

    def _holds_nonfinite(self, i) -> bool:
        held = self.stats if self.stats_only else self.values
        assert held is not None  # ``_load`` read the kind's values or stats
        return not np.all(np.isfinite(held[i]))

    # ---- building ---------------------------------------------------------------------

    def _label_axes(self):
        import textwrap

        ax = self.heat_ax
        assert ax is not None  # called when there is a heatmap panel
        xlabel, ylabel, note = axis_labels(self.geometry.layout)
        if self.stats_only:
            ax.set_xticks([])
            ax.set_yticks([])
            xlabel = "device blocks (colours: the lines on the right)"
            ylabel, note = "", textwrap.fill(STATS_ONLY_TEXT, 62, break_on_hyphens=False)
        if note and blocks_are_slices(self.block_patches, self.geometry.global_shape):
            # the slice lines lie under the block outlines: say what the chips stand for
            note = f"{note.split(';')[0]}; each block is one d0 slice, d0=0 at the top"
        if note and not self.stats_only:  # one panel wide, not across its neighbour
            note = textwrap.fill(note, 52, break_on_hyphens=False)
        self._xlabel = xlabel + (f"\n{note}" if note else "")
        ax.set_xlabel(self._xlabel, fontsize=style.NOTE_SIZE if self.stats_only else style.LABEL_SIZE)
        ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE)
        if self.stats_only:
            self.stats_note = ax.xaxis.label
            self.stats_note.set_gid("stats-only-note")

    # ---- in-place updates -----------------------------------------------------------------

    def _update_titles(self):
        r, i = self.recording, self.index
        bad = " (holds NaN/Inf)" if self._holds_nonfinite(i) else ""
        if i in self.mismatch_idx:
            bad += " (replicas disagree)"
        what = "device blocks of " if self.stats_only else ""
        scale = self._scale_text()
        when = self._when()
        if self.headline:
            self._headline(bad)
            if self.heat_ax is not None:
                assert self.tensor is not None  # drawn on heat_ax
                caption = "device blocks" if self.stats_only else "values, device blocks outlined"
                self.heat_ax.set_title(
                    caption + (f"\n{scale}" if scale else ""), fontsize=style.TITLE_SIZE, pad=self.tensor.title_pad()
                )
            if self.heat_ax is not None or not self.stats_only:
                self._set_norm_title()
            return
        assert self.heat_ax is not None and self.tensor is not None  # no headline: a heatmap panel
        width = 0.5 * self.figure.get_figwidth() * 72  # the heatmap panel, about
        noun = KIND_NOUNS.get(self.kind, self.kind)
        head = fit(f"{what}{noun} of {self.name!r}{when}{bad}", width, style.TITLE_SIZE)
        if "\n" in head and bad:  # the flags whole, on a line of their own
            head = fit(f"{what}{noun} of {self.name!r}{when}", width, style.TITLE_SIZE) + "\n" + bad.strip()
        if self.diverging:  # said on every picture of the run, on a line of its own
            head += "\n" + fit(self.diverging, width, style.TITLE_SIZE)
        self.heat_ax.set_title(
            head + f"\n{settings_text(r, i)}" + (f"\n{scale}" if scale else ""),
            fontsize=style.TITLE_SIZE,
            pad=self.tensor.title_pad(),
        )
        self._set_norm_title()

    def _when(self) -> str:
        """When the shown tensor is from: a gradient is computed in update k (before it
        applies); a parameter and a velocity are what update k left."""
        update = self.recording.steps[self.index]
        return f" at update {update}" if self.kind == "grad" else f" after update {update}"

    def _scale_text(self) -> str:
        """The heatmap's colour scale when it is fixed over the run, and, when the shown
        values use little of it (the tensor reaches under ``FAINT`` of the limit, so
        the heatmap is nearly white), how far they reach."""
        if not self.fixed_scale or self.stats_only:
            return ""
        limit = self._limit()
        assert self.values is not None  # a full recording's values
        data = np.asarray(self.values[self.index], np.float64)
        data = data[np.isfinite(data)]
        top = float(np.abs(data).max()) if data.size else 0.0
        if not limit or not np.isfinite(limit) or top >= FAINT * limit:
            return "colour scale fixed over the run"
        return f"colour scale fixed over the run (±{limit:.2g}):\nthese values reach only {top:.2g}, so they look pale"

    def _set_norm_title(self):
        if self.norm_ax is not None and self._norm_title is None:
            # the finding of the lines (of the whole run: it stays while stepping)
            title = self.norm.finding_title()
            line_ax = self.line_ax
            assert line_ax is not None  # the norm panel is drawn
            room = line_ax.get_position().width * self.figure.get_figwidth() * 72.0
            if "\n" in fit(title, room, style.TITLE_SIZE):  # the block that stands apart,
                title = title.replace("; ", "\n", 1).replace(", then", "\nthen", 1)  # the fall: below
            self._norm_title = title
            line_ax.set_title(self._norm_title, fontsize=style.TITLE_SIZE)

    def _block_norms(self):
        """Each block's (replica group's) L2 norm at the shown update, zeros kept."""
        groups = [d[0] for d in self.geometry.replica_groups]
        if self.stats_only:
            assert self.stats is not None  # a stats recording's
            return np.asarray(self.stats[self.index][groups, 0], np.float64)
        return np.asarray(shard_norms(self.recording, self.name, self.kind)[self.index][groups], np.float64)

    def _headline(self, bad):
        """The figure's title: the finding of the shown update (how far apart its
        blocks' norms are) and the settings (optimizer, layout; what a stats
        recording did not record)."""
        fig, r, i = self.figure, self.recording, self.index
        for old in [a for a in [*fig.texts, *fig.artists] if a.get_gid() == "subtitle"]:
            old.remove()
        subject = f"{KIND_NOUNS.get(self.kind, self.kind)} of {self.name!r}{self._when()}{bad}"
        spread = spread_text(self._block_norms(), [p.label for p in self.patches])
        width = fig.get_figwidth() * 72.0
        finding = f"{subject}: {spread}"
        if "\n" in fit(finding, width, style.SUPTITLE_SIZE, bold=True):  # break at the colon
            finding = f"{subject}:\n{spread}"
        if self.diverging:  # every picture of a diverging run says so, on a line of its own
            finding += "\n" + self.diverging[:1].upper() + self.diverging[1:]
        parts = [settings_text(r, i), layout_text(self.geometry.layout)]
        if self.stats_only:
            parts.append(STATS_ONLY_TEXT)
        settings = parts[0]
        for part in parts[1:]:  # each part whole: on the line, or on a line of its own
            joined = f"{settings}  ·  {part}"
            last = joined.rsplit("\n", 1)[-1]
            settings = joined if "\n" not in fit(last, width, style.SUBTITLE_SIZE) else f"{settings}\n{part}"
        headline(fig, finding, settings)
        sub = next(a for a in fig.artists if a.get_gid() == "subtitle")
        if self.stats_only:
            self.stats_note = sub

    def set_index(self, index: int) -> None:
        """Show the update at ``index`` into ``recording.steps`` (a slider position)."""
        self.index = int(index) % len(self.recording)
        if self.heatmap is not None:
            assert self.tensor is not None and self.values is not None  # a heatmap of values
            self.tensor.set_image(as_image(self.values[self.index]), self._limit())
        self.norm.show_index()  # the markers, and the band's highest and lowest lines here
        self._update_titles()

    def set_step(self, step: int | None = None) -> None:
        """Show optimizer update ``step`` (-1, -2, ...: counting back from the last; None: the last), in place."""
        self.set_index(update_index(self.recording, step))

    def set_fixed_scale(self, fixed: bool) -> None:
        """Colour scale over the whole run (True: decay shows) or per update (False)."""
        self.fixed_scale = bool(fixed)
        self.set_index(self.index)

    def set_kind(self, kind: str) -> None:
        """Show another recorded kind (``param``/``velocity``/``grad``), in place."""
        self._load(kind)
        self.kind = kind
        self._norm_title = None  # the new kind's finding
        self.norm.set_kind()
        if self.tensor is not None and self.tensor.colorbar is not None:  # set_index puts it on
            self.tensor.colorbar_label = f"{kind} value"
        self.set_index(self.index)
        self.fit_titles()  # the new kind's finding over the norm panel

    def fit_titles(self) -> None:
        """The panels' titles broken between words where they would leave the figure
        (``_text_fit.keep_inside``: a centred title wider than its panel's room)."""
        from ..text.fit import keep_inside

        keep_inside(self.figure, [ax.title for ax in (self.heat_ax, self.norm_ax, self.line_ax) if ax is not None])

    def fit_labels(self, renderer: RendererBase | None = None) -> None:
        """Shrink, turn or hide block labels that would not fit inside their block."""
        import textwrap

        if self.tensor is None:
            return
        self.tensor.fit_labels(renderer or cast("FigureCanvasAgg", self.figure.canvas).get_renderer())  # an Agg canvas
        hidden = self.tensor.unlabelled_text()
        if hidden and not self.stats_only:  # the devices, named where chips could not
            assert self.heat_ax is not None  # the tensor panel's axes
            self.heat_ax.set_xlabel(self._xlabel + "\n" + textwrap.fill(hidden, 52, break_on_hyphens=False))

    @property
    def labels(self) -> list[Text]:
        return self.tensor.labels if self.tensor is not None else []

    @property
    def patches(self) -> tuple[BlockPatch, ...]:
        """The ``BlockPatch`` of every block (with or without a heatmap panel)."""
        return self.block_patches

    # ---- the norm panel's artists (``norm``), as tests and widgets read them ----------------

    def fit_lines(self) -> None:
        """Thin the norm panels' lines again for the width their axes have now."""
        self.norm.fit_lines()

    def place_end_labels(self) -> None:
        """Name each drawn norm line at its right end again (after the layout moved)."""
        self.norm.labels.place_end_labels()

    @property
    def line_ax(self) -> Axes | None:
        """The axes of the norm lines (a stats recording: its norm statistic's panel)."""
        return self.norm.line_ax

    @property
    def lines(self) -> list:
        return self.norm.lines

    @property
    def step_lines(self) -> list:
        return self.norm.step_lines

    @property
    def legend(self) -> Legend | None:
        return self.norm.legend

    @property
    def mismatch_marks(self) -> Line2D | None:
        return self.norm.mismatch_marks

    @property
    def nonfinite_marks(self) -> Line2D | None:
        return self.norm.nonfinite_marks

    @property
    def coast_note(self) -> Annotation | None:
        return self.norm.coast_note

    @property
    def dot_colors(self) -> dict:
        return self.norm.dot_colors

    @property
    def zero_marks(self) -> dict:
        return self.norm.zero_marks

    @property
    def zero_notes(self) -> dict:
        return self.norm.zero_notes

    @property
    def zero_labels(self) -> dict:
        return self.norm.zero_labels

    @property
    def stat_axes(self) -> dict:
        return self.norm.stat_panels.axes

    @property
    def stat_lines(self) -> dict:
        return self.norm.stat_panels.lines

    @property
    def stat_marks(self) -> dict:
        return self.norm.stat_panels.marks

    @property
    def end_labels(self) -> list[Text] | None:
        return self.norm.labels.end_labels

    @property
    def leader_lines(self) -> list:
        return self.norm.labels.leader_lines

    @property
    def band_blocks(self) -> dict[int, str] | None:
        return self.norm.labels.band_blocks

    @property
    def bouncing(self) -> list:
        return self.norm.labels.bouncing

    @property
    def coincide_runs(self) -> dict:
        return self.norm.coincide.runs
