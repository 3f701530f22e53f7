"""The norm panel of ``ShardsView``: each unique block's L2 norm over the updates as a
log-y line in its block colour (``style.block_styles``), the shown update as a vertical
line with a dot on every line, and marks where a norm is 0 (a log axis cannot draw it),
where the variable holds NaN/Inf and where replicas disagreed, with a legend naming them.

``NormPanel`` is an object of ``ShardsView`` (its ``norm``): it reads the view's public
state (``updates``, ``styles``, ``geometry``, ``index``, the flagged updates) and holds
``lines``, ``step_lines``, the marks and ``legend``. The stats-mode panels
(``stats.StatPanels``, its ``stat_panels``) draw their lines with the same ``lines_on``.

A line of more updates than its axes has pixel columns is drawn thinned by
``minmax_decimate`` (each column's min and max kept, so spikes show); ``data`` keeps
every update, for the dots at the shown one and the marks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from .coincide import CoincideMarks
from .dots import DOT_CORE, DOT_SIZE, ZERO_STEP_POINTS, ZIGZAG_WIDTH, line_width, mark_rows, pixel_columns, stacked
from .geometry import block_norm_lines, minmax_decimate, shard_norms
from .labels import STEP_COLOR, NormLabels, cycle_text, place_step_label, step_label  # noqa: F401
from .stats import STATS, StatPanels, change_text
from .tensor_panel import NONFINITE_COLOR
from .ticks import LOG_X_SPAN, log_tick_texts, log_update_ticks, log_x, log_y, plain_ticks, update_ticks  # noqa: F401

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.legend import Legend
    from matplotlib.lines import Line2D
    from matplotlib.patheffects import AbstractPathEffect
    from matplotlib.text import Annotation
    from numpy.typing import ArrayLike

    from .view import ShardsView

STEP_LINE_COLOR = "#8C8C8C"  # mid grey, thin: the dots on it stand out from it
STEP_LINE_WIDTH = 1.2
MISMATCH_COLOR = "#D55E00"  # Okabe-Ito vermillion: replicas disagree
X_MARGIN = 0.045  # of the update range, left of the lines
X_MARGIN_RIGHT = 0.02  # right of them: the names there sit close to the lines' ends
MARKER_UPDATES = 15
"""Up to this many updates, a marker at each (a few points: where the data is); more:
lines alone, the dots at the shown update the only markers."""
MAX_DIRECT_LABELS = 10
"""Up to this many blocks, each line is named at its right end (``end_labels``,
``_shard_labels``: nearly coinciding lines drawn as a band there), the legend holding
the marks alone; more blocks: the legend names them."""
MAX_LEGEND_BLOCKS = 64
"""The norm panel's legend names every block up to this many (the 9 block colours times
8 line styles tell 72 apart), in columns of ``LEGEND_ROWS``."""
LEGEND_ROWS = 16
ZERO_LABEL = "norm exactly 0\n(at and under the\nbottom edge, a\ncircle per block)"


HALO = 1.5  # points of white, in all, around a line where lines cross


def halo(lw: float) -> list[AbstractPathEffect]:
    """Path effects drawing a line over a white edge ``HALO`` points wider: where lines
    cross, the one on top stays whole and the one under it breaks (which is which reads)."""
    from matplotlib import patheffects

    return [patheffects.Stroke(linewidth=lw + HALO, foreground="white"), patheffects.Normal()]


class NormPanel:
    """``ShardsView``'s norm panel on ``view.norm_ax`` (see the module docstring): its
    lines, the shown update's markers, the marks and the legend. It owns its end labels
    and band (``labels``, a ``NormLabels``), its hidden-line marks (``coincide``, a
    ``CoincideMarks``) and, for a stats recording, the statistics panels drawn inside
    its axes (``stat_panels``, a ``StatPanels``); it reads the view's public state
    (``updates``, ``styles``, ``patches``, ``geometry``, ``index``, the flagged updates).

    ``data``: ``{axes: (n_updates, n_blocks)}``, every update of each panel's lines
    (the lines are drawn thinned); ``line_ax``: the axes the norm lines are on (the
    norm axes, or a stats recording's norm statistic panel)."""

    def __init__(self, view: ShardsView):
        self.view = view
        self.ax = view.norm_ax
        self.line_ax: Axes | None = None
        self.lines: list = []
        self.step_lines: list = []
        self.data: dict = {}
        self.mismatch_marks: Line2D | None = None
        self.nonfinite_marks: Line2D | None = None
        self.legend: Legend | None = None
        self.coast_note: Annotation | None = None
        self.dot_colors: dict = {}
        self.zero_marks: dict = {}
        self.zero_notes: dict = {}
        self.zero_labels: dict = {}
        self.zero_data: dict = {}
        self.zero_axes: set = set()  # axes an all-zero kind set to a plain 0..1 range
        self.labels = NormLabels(view, self)
        self.coincide = CoincideMarks(view, self)
        self.stat_panels = StatPanels(view, self)

    def draw(self) -> None:
        assert self.ax is not None  # drawn when the view has a norm axes
        if self.view.stats_only:
            self.lines, self.line_ax = self.stat_panels.draw()
            self.labels.set_band()  # past MANY_BLOCKS blocks: a band on each panel
        else:
            self.line_ax = self.ax
            self.lines = self.lines_on(self.ax, self._norm_lines(), True)
            self.labels.set_band()  # nearly coinciding blocks: one band, the extremes as lines
            self.add_zero_marks(self.ax, self.zeros())
            self.ax.set_xlabel("optimizer update", fontsize=style.LABEL_SIZE)
            self.ax.set_ylabel("L2 norm of the block", fontsize=style.LABEL_SIZE)
            self.ax.tick_params(labelsize=style.TICK_SIZE)
        for ax in [self.ax, *self.stat_panels.axes.values()] if log_x(self.view.updates) else ():
            if ax.get_xlabel() == "optimizer update":
                ax.set_xlabel("optimizer update (log scale)", fontsize=style.LABEL_SIZE)
        self._marks(self.line_ax)
        self.draw_legend()
        self.set_coast_note()
        self.coincide.mark_coincident()  # a line hidden under another: dashed over it, named

    def set_kind(self) -> None:
        """The lines, marks, legend and notes of the kind the view just loaded, in place."""
        if self.ax is None:
            return
        if self.view.stats_only:
            self.stat_panels.set_kind()
            self.labels.set_band()  # a band of many blocks: of this kind's statistics
        else:
            self.set_lines(self.ax, self.lines, self._norm_lines())
            self.set_zero_marks(self.ax, self.zeros())
        self._move_marks()
        self.draw_legend()  # the new kind's marks (zero norms, non-finite stats) need entries
        self.set_coast_note()
        self.coincide.mark_coincident()

    def show_index(self) -> None:
        """The shown-update markers (line, label, dots) at the view's ``index``, and the
        band's lines: the highest and lowest blocks there."""
        updates = self.view.updates
        x = updates[self.view.index]
        for line in self.step_lines:
            if line.get_gid() == "step-line":
                line.set_xdata([x, x])
            elif line.get_gid() == "step-label":
                place_step_label(line, x, updates, self.data.get(line.axes))
            else:
                self.labels.set_dots(line.axes)
        if self.ax is not None:
            self.labels.refresh_band()

    def finding_title(self) -> str:
        """The norm panel's title: the finding of its lines over the whole run
        (``change_text``)."""
        return change_text(self.data[self.line_ax], self.view.updates, [p.label for p in self.view.patches])

    def set_coast_note(self) -> None:
        """The note under the norm panel naming a block whose velocity only decays
        (``_shard_coast``), for the current kind; none while its line is not drawn."""
        from .coast import coast_note

        if self.coast_note is not None:
            self.coast_note.remove()
        self.coast_note = None
        if self.view.stats_only or self.ax is None:
            return
        data = np.array(self.data[self.ax], np.float64)
        band = self.labels.band_blocks
        if band is not None:  # a block under the band has no line to explain
            data[:, [g for g in range(data.shape[1]) if g not in band]] = np.nan
        names, colors = [p.label for p in self.view.patches], [c for c, _, _ in self.view.styles]
        self.coast_note = coast_note(
            self.ax,
            data,
            self.view.updates,
            float(self.view.recording.hyperparameters.momentum),
            names,
            colors,
            self.view.kind,
        )
        # a ribbon (a band line alternating every update) is named by its swatch label

    def _norm_lines(self):
        return block_norm_lines(self.view.recording, self.view.name, self.view.kind)[1]

    def zeros(self, k: int = 0) -> np.ndarray:
        """``(n_updates, n_groups)``: where the block's norm (statistic ``k``) is exactly
        0, which a log axis cannot draw (its lines hold NaN there)."""
        if self.view.stats_only:
            assert self.view.stats is not None  # a stats recording's
            cols = np.stack([self.view.stats[:, d[0], k] for d in self.view.geometry.replica_groups], 1)
        else:
            norms = shard_norms(self.view.recording, self.view.name, self.view.kind)
            cols = np.stack([norms[:, d[0]] for d in self.view.geometry.replica_groups], 1)
        return np.asarray(cols) == 0

    def add_zero_marks(self, ax: Axes, zeros: np.ndarray) -> None:
        """Open circles on the bottom edge, in the block colours, where a norm is 0,
        and a note in the middle when every drawn norm is 0 (an empty axis said nothing)."""
        from matplotlib.transforms import blended_transform_factory

        bottom = blended_transform_factory(ax.transData, ax.transAxes)
        self.zero_marks[ax] = ax.scatter(
            [],
            [],
            s=30,
            marker="o",
            facecolors="none",
            linewidths=1.4,
            transform=bottom,
            clip_on=False,
            zorder=7,
            gid="zero-marks",
        )
        self.zero_marks[ax].set_in_layout(False)  # as the stat marks: empty at (0, 0)
        self.zero_notes[ax] = ax.text(
            0.5,
            0.62,
            "",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=style.NOTE_SIZE,
            color="0.25",
            zorder=8,
            gid="zero-note",
            bbox=dict(facecolor="white", edgecolor="none", pad=2),
        )
        self.zero_labels[ax] = ax.text(
            0,
            0,
            "",
            transform=bottom,
            va="center",
            fontsize=style.NOTE_SIZE,
            color="0.25",
            zorder=8,
            clip_on=False,
            gid="zero-label",
        )
        self.zero_labels[ax].set_in_layout(False)
        self.set_zero_marks(ax, zeros)

    def set_zero_marks(self, ax: Axes, zeros: np.ndarray) -> None:
        """Zero marks: on the bottom edge and hung under it, a circle per block (inside
        the axes they would read as norms there); stacked up from the edge when every
        norm is 0 (the axis has no data)."""
        from ..text.direct import axes_height_points

        self.zero_data[ax] = zeros
        i, g = mark_rows(self.update_px(ax), zeros)  # one circle per block per mark width
        marks = self.zero_marks[ax]
        every = bool(zeros.all())
        heights = stacked(i) if every else stacked(i, 0.0, -ZERO_STEP_POINTS / axes_height_points(ax))
        marks.set_offsets(np.column_stack([self.view.updates[i], heights]) if len(i) else np.empty((0, 2)))
        marks.set_edgecolors([self.view.styles[k][0] for k in g] or "none")
        self._clear_zero_ticks(ax, self.view.updates[i], heights if not every else [])
        self._label_zeros(ax, self.view.updates[i], heights, every)
        what = "statistic" if self.view.stats_only else "norm"
        when = f"update {self.view.updates[0]}" if len(self.view.updates) == 1 else "every update"
        self.zero_notes[ax].set_text(f"every block's {what} is 0 at {when}\n(circles at the bottom)" if every else "")
        forced = self.zero_axes
        if every:  # nothing for the log axis to scale to: a plain, unlabelled range
            ax.set_yscale("linear")
            ax.set_ylim(0, 1)
            ax.set_yticks([0], ["0"])
            forced.add(ax)
        elif ax in forced and np.isfinite(self.data.get(ax, np.nan)).any():
            forced.discard(ax)  # another kind with norms to draw: the log axis again
            log_y(ax)
            ax.set_autoscaley_on(True)  # set_ylim(0, 1) had turned it off
            ax.relim()
            ax.autoscale_view(scalex=False)

    def _label_zeros(self, ax, xs, heights, every) -> None:
        """ "norm 0" beside the circles hung under the edge (they are data, not axis
        decoration): right of the last column of circles, or left of the first when the
        last is near the right edge; at the middle of that column's circles."""
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        label = self.zero_labels.get(ax)
        if label is None:
            return
        if every or not len(xs):
            label.set_text("")
            return
        frac = ax.transAxes.inverted().transform(ax.transData.transform(np.column_stack([xs, np.ones(len(xs))])))[:, 0]
        right = float(frac.max()) <= 0.8
        if not right and float(frac.min()) < 0.2:  # circles across the axis: no side free
            label.set_text("")  # the legend's entry names them (beside the y tick labels
            return  # a label would run into them)
        at = float(xs[np.argmax(frac)] if right else xs[np.argmin(frac)])
        col = np.asarray(heights)[np.asarray(xs) == at]
        shift = (1 if right else -1) * 6.0 / 72  # past the circle's edge
        label.set_transform(
            blended_transform_factory(ax.transData, ax.transAxes)
            + ScaledTranslation(shift, 0, ax.figure.dpi_scale_trans)
        )
        label.set_position((at, float(np.mean(col))))
        label.set_ha("left" if right else "right")
        what = "statistic" if self.view.stats_only else "norm"
        label.set_text(f"{what} 0")

    def _clear_zero_ticks(self, ax, xs, heights) -> None:
        """The x tick labels under the zero marks hung below the edge where one would
        touch a tick label (about its width around each tick), else by the axis."""
        from ..text.direct import axes_height_points

        depth = -min([0.0, *heights]) * axes_height_points(ax)  # points, lowest centre
        pad = 3.5
        if depth > 0:
            lo, hi = sorted(ax.get_xlim())
            ticks = [t for t in ax.get_xticks() if lo <= t <= hi]
            texts = ax.xaxis.get_major_formatter().format_ticks(ticks) if ticks else []
            to_px = ax.transData.transform
            px = to_px(np.column_stack([xs, np.ones(len(xs))]))[:, 0]
            tick_px = to_px(np.column_stack([ticks, np.ones(len(ticks))]))[:, 0] if ticks else []
            pt = ax.figure.dpi / 72
            if any(
                abs(p - q) < (0.32 * style.TICK_SIZE * len(t) + 7.0) * pt for p in px for q, t in zip(tick_px, texts)
            ):
                pad = 3.5 + depth  # the tick labels under the lowest circle
        ax.tick_params(axis="x", pad=pad)

    def lines_on(self, ax: Axes, lines: np.ndarray, log: bool) -> list[Line2D]:
        x, n = self.view.updates, len(self.view.updates)
        marker = "o" if n <= MARKER_UPDATES else None  # more: the lines tangle
        out = []
        for g, (color, _, ls) in enumerate(self.view.styles):  # thinner when many or zig-zag
            lw = line_width(lines, g)
            out.append(
                ax.plot(
                    *self.thinned(ax, lines[:, g]),
                    color=color,
                    ls=ls,
                    lw=lw,
                    marker=marker,
                    ms=3,
                    zorder=2,
                    gid=f"norm-{g}",
                    path_effects=(halo(lw) if len(self.view.styles) > 1 and lw != ZIGZAG_WIDTH else None),
                )[0]
            )
        if log and np.isfinite(lines).any():
            log_y(ax)
        lo, hi = (x[0] - 0.5, x[-1] + 0.5) if n == 1 else (x[0], x[-1])
        if log_x(x):  # a long run: its first updates would be squashed against the edge
            ax.set_xscale("log")
            ax.set_xlim(lo / (hi / lo) ** X_MARGIN, hi * (hi / lo) ** X_MARGIN_RIGHT)
            log_update_ticks(ax, x)
        else:
            # the shown update at the last: a marker, not the frame
            ax.set_xlim(lo - X_MARGIN * (hi - lo), hi + X_MARGIN_RIGHT * (hi - lo))
            update_ticks(ax, x)  # updates are whole numbers, a few round ones
        ax.grid(True, which="major", color="#DDDDDD", lw=0.6)
        if not self.step_lines:  # the first panel names the line once
            self.step_lines.append(step_label(ax, x[self.view.index], x))
        self.step_lines.append(
            ax.axvline(x[self.view.index], color=STEP_LINE_COLOR, lw=STEP_LINE_WIDTH, zorder=5, gid="step-line")
        )
        self.data[ax] = lines  # the data behind the dots at the shown update
        (dots,) = ax.plot(
            np.full(lines.shape[1], x[self.view.index]),
            self.labels.dot_values(ax),
            ls="none",
            marker="o",
            ms=DOT_SIZE,
            mfc=STEP_COLOR,
            mec="white",
            mew=1.2,
            zorder=6,
            gid="step-dots",
            clip_on=False,
        )
        self.step_lines.append(dots)
        # each dot's middle in its block's colour (the dark ring above: its edge)
        self.dot_colors[ax] = ax.scatter(
            [], [], s=DOT_CORE**2, linewidths=0, zorder=6.5, gid="step-dot-colors", clip_on=False
        )
        self.dot_colors[ax].set_in_layout(False)
        self.color_dots(ax, dots.get_ydata())
        return out

    def color_dots(self, ax: Axes, y: ArrayLike) -> None:
        """The coloured middles of the dots kept at the shown update on ``ax`` (``y``:
        NaN for a dot not drawn), each in its block's line colour."""
        marks = self.dot_colors.get(ax)
        if marks is None:
            return
        y = np.asarray(y, np.float64)
        keep = np.flatnonzero(np.isfinite(y))
        x = self.view.updates[self.view.index]
        marks.set_offsets(np.column_stack([np.full(len(keep), x), y[keep]]) if len(keep) else np.empty((0, 2)))
        marks.set_facecolors([self.view.styles[g][0] for g in keep] or "none")
        ring = [d for d in self.step_lines if d.get_gid() == "step-dots" and d.axes is ax]
        size = ring[0].get_markersize() if ring else DOT_SIZE  # the middle scales with it
        marks.set_sizes([(DOT_CORE * size / DOT_SIZE) ** 2])

    def thinned(self, ax: Axes, y: ArrayLike, start: int = 0, stop: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` of one line (of its updates ``start:stop``), at most ~2 points per
        pixel column of ``ax`` (``minmax_decimate``): columns of equal width on the axis as
        drawn, so of log10(update) on a log update axis (``log_x``)."""
        x, y = self.view.updates[start:stop], np.asarray(y)[start:stop]
        split = np.log10(x.astype(np.float64)) if log_x(self.view.updates) else x
        full = (
            np.log10(self.view.updates[[0, -1]].astype(np.float64))
            if log_x(self.view.updates)
            else self.view.updates[[0, -1]].astype(np.float64)
        )
        share = float(split[-1] - split[0]) / float(full[1] - full[0]) if len(x) and full[1] > full[0] else 1.0
        columns = max(1, int(np.ceil(pixel_columns(ax) * share)))
        if len(x) <= columns:
            return x, y
        kept, y = minmax_decimate(split, y, columns)
        return x[np.searchsorted(split, kept)], y  # the updates kept, exactly

    def set_lines(self, ax: Axes, lines: Sequence[Line2D], data: np.ndarray) -> None:
        for g, line in enumerate(lines):
            line.set_data(*self.thinned(ax, data[:, g]))
        self.data[ax] = data
        if ax is self.line_ax and not self.view.stats_only:
            self.labels.set_band()
        ax.relim()
        ax.autoscale_view(scalex=False)
        if ax is self.line_ax:
            self.labels.place_end_labels()

    def fit_lines(self) -> None:
        """Thin the lines again for the width their axes have now (after the layout
        moved them): the extremes stay, so the limits do not change."""
        if self.view.stats_only:
            panels = self.stat_panels
            sets = [(panels.axes[k], panels.lines[k]) for k in panels.lines]
        else:
            sets = [(self.ax, self.lines)] if self.ax is not None else []
        fig = self.view.figure
        for _ in range(2):  # the labels placed anew can move the layout: once more then
            widths = [pixel_columns(ax) for ax, _ in sets]
            for ax, lines in sets:
                for g, line in enumerate(lines):
                    line.set_data(*self.thinned(ax, self.data[ax][:, g]))
                self.labels.set_dots(ax)  # apart at the final size (``spaced_dots``)
                if ax in self.zero_data:  # hung a fixed depth in points
                    self.set_zero_marks(ax, self.zero_data[ax])
            self._move_marks()  # one mark per mark width at the final widths
            self.labels.place_end_labels()
            self.place_step_text()
            self.coincide.mark_coincident()
            if fig.get_layout_engine() is None or not hasattr(fig.canvas, "get_renderer"):
                break
            fig.draw_without_rendering()
            if widths == [pixel_columns(ax) for ax, _ in sets]:
                break

    def place_step_text(self) -> None:
        """The shown update's name where the lines leave room (``place_step_label``)."""
        for line in self.step_lines:
            if line.get_gid() == "step-label" and line.axes in self.data:
                place_step_label(line, self.view.updates[self.view.index], self.view.updates, self.data[line.axes])

    def update_px(self, ax: Axes) -> np.ndarray:
        """Each update's pixel x on ``ax`` as it stands."""
        x = np.asarray(self.view.updates, np.float64)
        return ax.transData.transform(np.column_stack([x, np.ones(len(x))]))[:, 0]

    def _mismatch_points(self):
        """(update, norm) of every replicated block at the updates its copies disagreed,
        one mark per block per ``MARK_PX`` (``mark_rows``)."""
        assert self.line_ax is not None  # the marks are drawn on the norm lines' axes
        lines = self.data[self.line_ax]
        replicated = np.array([len(d) > 1 for d in self.view.geometry.replica_groups])
        marked = np.zeros(lines.shape, bool)
        marked[self.view.mismatch_idx] = True
        marked &= replicated[None, :] & np.isfinite(lines)
        rows, groups = mark_rows(self.update_px(self.line_ax), marked)
        return [(self.view.updates[i], lines[i, g]) for i, g in zip(rows, groups)]

    def _nonfinite_updates(self, ax):
        """The updates holding NaN/Inf, one per ``MARK_PX`` of ``ax`` (``mark_rows``)."""
        marked = np.zeros(len(self.view.updates), bool)
        marked[self.view.nonfinite_idx] = True
        return self.view.updates[mark_rows(self.update_px(ax), marked)[0]]

    def _marks(self, ax):
        from matplotlib.transforms import blended_transform_factory

        if len(self.view.mismatch_idx):
            pts = self._mismatch_points()
            px, py = zip(*pts) if pts else ((), ())
            (self.mismatch_marks,) = ax.plot(
                px,
                py,
                ls="none",
                marker="D",
                ms=7,
                mfc="none",
                mec=MISMATCH_COLOR,
                mew=1.6,
                zorder=7,
                gid="mismatch-marks",
            )
        if len(self.view.nonfinite_idx):
            top = blended_transform_factory(ax.transData, ax.transAxes)
            bad = self._nonfinite_updates(ax)
            (self.nonfinite_marks,) = ax.plot(
                bad,
                np.full(len(bad), 0.96),
                transform=top,
                ls="none",
                marker="X",
                color=NONFINITE_COLOR,
                ms=7,
                zorder=7,
                gid="nonfinite-marks",
            )

    def _move_marks(self):
        """The marks thinned again for the axes as they stand (and the kind shown)."""
        if self.mismatch_marks is not None:
            pts = self._mismatch_points()
            self.mismatch_marks.set_data(*(zip(*pts) if pts else ((), ())))
        if self.nonfinite_marks is not None:
            bad = self._nonfinite_updates(self.nonfinite_marks.axes)
            self.nonfinite_marks.set_data(bad, np.full(len(bad), 0.96))
        for k, _ in enumerate(STATS if self.view.stats_only else ()):
            self.stat_panels.set_marks(k)

    def direct(self) -> bool:
        """Whether the drawn lines are few enough to be named at their ends (a band
        draws a few of many)."""
        return sum(line.get_visible() for line in self.lines) <= MAX_DIRECT_LABELS

    def draw_legend(self) -> None:
        from matplotlib.lines import Line2D

        assert self.line_ax is not None  # after draw()

        direct = self.direct()
        handles = (
            []
            if direct
            else [
                Line2D(
                    [],
                    [],
                    color=STEP_LINE_COLOR,
                    lw=STEP_LINE_WIDTH,
                    marker="o",
                    mfc=STEP_COLOR,
                    mec="white",
                    label="shown update",
                )
            ]
        )
        if self.nonfinite_marks is not None:
            handles.append(
                Line2D([], [], ls="none", marker="X", color=NONFINITE_COLOR, label="NaN/Inf in this variable")
            )
        if any(len(m.get_offsets()) for m in self.zero_marks.values()):
            handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="0.3", mew=1.4, label=ZERO_LABEL))
        if self.view.stats_only and any(len(m.get_xdata()) for m in self.stat_panels.marks.values()):
            handles.append(
                Line2D(
                    [],
                    [],
                    ls="none",
                    marker="X",
                    color=NONFINITE_COLOR,
                    label="statistic not finite\n(NaN/Inf, or past float32)",
                )
            )
        if self.mismatch_marks is not None:
            handles.append(
                Line2D(
                    [], [], ls="none", marker="D", mfc="none", mec=MISMATCH_COLOR, mew=1.6, label="replicas disagree"
                )
            )
        if direct:  # the lines are named at their ends: a legend for the marks alone
            if self.legend is not None:
                self.legend.remove()
            self.legend = None
            if handles:
                self.legend = self.line_ax.legend(
                    handles=handles,
                    loc="best",
                    fontsize=style.NOTE_SIZE,
                    framealpha=0.85,
                    borderaxespad=0.3,
                    handlelength=1.4,
                )
            self.labels.place_end_labels()
            return
        n = len(self.view.styles)
        title = None
        if n <= MAX_LEGEND_BLOCKS:
            for p, line, (_, _, ls) in zip(self.view.patches, self.lines, self.view.styles):
                # the style itself: get_linestyle() says '--' for every custom dash pattern
                handles.append(Line2D([], [], color=line.get_color(), ls=ls, lw=1.6, label=p.label))
            title = cycle_text(self.view.styles)
        else:
            title = f"{n} blocks: too many to name\n(colours: the block chips)"
        rows = len(handles) if len(handles) <= LEGEND_ROWS + 3 else LEGEND_ROWS
        small = n > LEGEND_ROWS
        self.legend = self.line_ax.legend(
            handles=handles,
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize=style.NOTE_SIZE,
            borderaxespad=0.0,
            handlelength=2.2 if not small else 1.6,
            ncol=-(-len(handles) // rows),
            columnspacing=0.6,
            labelspacing=0.25 if small else 0.45,
            title=title,
            title_fontsize=style.NOTE_SIZE,
            alignment="left",
        )
