"""Shard values: the global tensor at one optimizer update with each device's block
outlined, beside each unique block's L2 norm over the updates, as log-y lines::

    rec = dtsgd_viz.load_recording("nesterov.npz")
    fig = dtsgd_viz.plot_shards(rec, "w", "velocity", step=10)   # update 10
    fig.savefig("shards.png")

``step=k`` is optimizer update k as ``recording.steps`` counts (the first update is 1;
-1, -2, ... count back from the last; None: the last; ``views.steps``). Every block has one colour (``style.block_styles``), shared by
its label chip on the left and its norm line on the right; replicas are one block, so
one line, marked with a diamond at updates where its copies disagreed.

``ShardsView`` holds the artists so a widget can move to another update or kind by
updating them in place (``set_index``, ``set_step``, ``set_kind``,
``set_fixed_scale``) instead of rebuilding the figure.

A ``Recorder(mode="stats")`` recording keeps each block's norm, mean and max |x| but
not its values: the left panel shows the blocks (the colour key), the right one the
three stored statistics as lines over the updates.
"""

from __future__ import annotations

import numpy as np

from . import style
from .empty import check_not_empty
from .figure import new_figure
from .shard_geometry import as_image, axis_labels, block_norm_lines, flagged_steps, run_limit, settings_text, LOG_RANGE, short_device_names, shard_norms, update_index
from ._tensor_panel import NONFINITE_COLOR, TensorPanel, draw_tensor

__all__ = ["plot_shards", "draw_shards", "shard_norms", "ShardsView", "draw_tensor",
           "TensorPanel"]

STEP_COLOR = "#222222"        # near black: the shown update (no block colour is)
MISMATCH_COLOR = "#D55E00"    # Okabe-Ito vermillion: replicas disagree
STATS_ONLY_TEXT = ("values not recorded: Recorder(mode='stats') keeps each block's "
                   "norm, mean and max |x| (right); record with mode='full' for the values")
STATS = ("L2 norm", "mean", "max |x|")   # the columns of Recording.shard_stats
MAX_LEGEND_BLOCKS = 64
"""The norm panel's legend names every block up to this many (the 9 block colours times
8 line styles tell 72 apart), in columns of ``LEGEND_ROWS``."""
LEGEND_ROWS = 16


def _log_y(ax):
    """A log y axis labelled 0.02, 0.05, 0.1, ... (1-2-5 steps while the range is at most
    three decades, decades beyond; plain numbers while short), without the crowded minor
    labels a range under a decade gets."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    class _Locator(LogLocator):  # 1-2-5 over up to 3 decades, decades beyond
        def tick_values(self, vmin, vmax):
            lo, hi = sorted((max(vmin, 1e-300), max(vmax, 1e-300)))
            self._subs = np.array([1.0, 2.0, 5.0] if hi / lo <= 1e3 else [1.0])
            return super().tick_values(vmin, vmax)

    ax.set_yscale("log")
    ax.yaxis.set_major_locator(_Locator(subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(
        lambda v, _: f"{v:g}" if 1e-3 <= v < 1e4 else f"{v:.0e}".replace("e-0", "e-")))


def cycle_text(styles) -> str | None:
    """The legend title explaining the style rounds, None while every block has its own
    colour: past ``len(BLOCK_COLORS)`` blocks the colours repeat, each further round of
    blocks drawn with the next line style here and the next hatch on its label chip."""
    p = len(style.BLOCK_COLORS)
    hatches = sorted({h for _, h, _ in styles if h})
    if not hatches:
        return None
    shown = ", ".join(h.replace("\\\\", "\\") for h in hatches)
    return (f"{p} colours, repeated: each further\nround of {p} blocks has its own line"
            f"\nstyle here, hatching ({shown})\non its label chip")


class ShardsView:
    """The shard values view drawn on ``heat_ax`` (and ``norm_ax`` unless None).

    Attributes tests and widgets use: ``tensor`` (the ``TensorPanel``: ``heatmap``,
    ``outlines``, ``labels``, ``patches``), ``heatmap`` (None for a stats recording,
    whose ``stats_note`` says why), ``lines`` (one norm ``Line2D`` per replica group,
    x = update), ``stat_axes``/``stat_lines`` (stats recordings: the norm, mean and
    max |x| panels and their lines), ``step_lines`` (the shown-update markers),
    ``mismatch_marks``/``nonfinite_marks`` (``Line2D`` or None), ``fixed_scale``.
    """

    def __init__(self, recording, name, kind="velocity", step=None, *, heat_ax, norm_ax=None,
                 fixed_scale=False):
        check_not_empty(recording)
        self.recording, self.name = recording, name
        self.index = update_index(recording, step)
        self.kind, self.fixed_scale = kind, bool(fixed_scale)
        self.stats_only = getattr(recording, "mode", "full") == "stats"
        self._load(kind)  # raises for unknown name/kind
        self.heat_ax, self.norm_ax = heat_ax, norm_ax
        self.figure = heat_ax.figure
        self.geometry = recording.geometry(name)
        self.styles = style.block_styles(self.geometry)
        self.devices = recording.shard_devices(name)
        self.short_names = short_device_names(self.devices)
        self.nonfinite_idx, self.mismatch_idx = flagged_steps(recording, name)
        self.updates = np.asarray(recording.steps)
        self.stats_note = None
        self.tensor = draw_tensor(
            heat_ax, self.geometry, self.short_names,
            None if self.stats_only else as_image(self.values[self.index]),
            limit=self._limit(), colorbar_label=f"{kind} value")
        self.heatmap = self.tensor.heatmap
        self._label_axes()
        self.lines, self.stat_axes, self.stat_lines, self.step_lines = [], {}, {}, []
        self._data = {}  # axes -> (n_updates, n_blocks) data of its lines
        self.mismatch_marks = self.nonfinite_marks = self.legend = None
        if norm_ax is not None:
            self._draw_lines()
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
        self._run_limit = None

    def _limit(self):
        """The colour limit: over the whole run when ``fixed_scale``, else None (this
        update's own largest magnitude)."""
        if not self.fixed_scale or self.values is None:
            return None
        if self._run_limit is None:
            self._run_limit = run_limit(self.values)
        return self._run_limit

    def _holds_nonfinite(self, i) -> bool:
        data = self.stats[i] if self.stats_only else self.values[i]
        return not np.all(np.isfinite(data))

    # ---- building ---------------------------------------------------------------------

    def _label_axes(self):
        import textwrap
        ax = self.heat_ax
        xlabel, ylabel, note = axis_labels(self.geometry.layout)
        if self.stats_only:
            ax.set_xticks([])
            ax.set_yticks([])
            xlabel = "device blocks (colours: the lines on the right)"
            ylabel, note = "", textwrap.fill(STATS_ONLY_TEXT, 62, break_on_hyphens=False)
        if note and not self.stats_only:  # one panel wide, not across its neighbour
            note = textwrap.fill(note, 52, break_on_hyphens=False)
        self._xlabel = xlabel + (f"\n{note}" if note else "")
        ax.set_xlabel(self._xlabel)
        ax.set_ylabel(ylabel)
        if self.stats_only:
            self.stats_note = ax.xaxis.label
            self.stats_note.set_gid("stats-only-note")
        return
        ax.set_xlabel(xlabel + (f"\n{note}" if note else ""))
        ax.set_ylabel(ylabel)

    def _draw_lines(self):
        from matplotlib.transforms import blended_transform_factory
        if self.stats_only:
            ax = self.norm_ax
            ax.set_axis_off()
            h, gap = 0.29, 0.065
            axes = [ax.inset_axes([0, 1 - h - k * (h + gap), 1, h]) for k in range(3)]
            for a in axes[1:]:
                a.sharex(axes[0])
            for a in axes[:-1]:
                a.tick_params(labelbottom=False)
            self.stat_marks = {}
            for k, (label, a) in enumerate(zip(STATS, axes)):
                self.stat_axes[label] = a
                self.stat_lines[label] = self._lines_on(a, self._stat_lines(k), k != 1)
                if k != 1:  # a log panel cannot show 0
                    self._zero_marks_on(a, self._zeros(k))
                self.stat_marks[label], = a.plot(
                    [], [], transform=blended_transform_factory(a.transData, a.transAxes),
                    ls="none", marker="X", color=NONFINITE_COLOR, ms=7, zorder=7, clip_on=False,
                    gid=f"nonfinite-stat-{k}")
                # outside the layout: empty, an unclipped line sits at pixel (0, 0) and
                # constrained layout collapsed every panel to fit it
                self.stat_marks[label].set_in_layout(False)
                self._set_stat_marks(k)
                a.set_ylabel(label, fontsize=style.FONT_SIZE)
                a.tick_params(labelsize=style.FONT_SIZE - 1)
            self._scale_mean()
            self.lines = self.stat_lines[STATS[0]]
            self.line_ax = axes[0]
            axes[-1].set_xlabel("optimizer update")
        else:
            self.line_ax = self.norm_ax
            self.lines = self._lines_on(self.norm_ax, self._norm_lines(), True)
            self._zero_marks_on(self.norm_ax, self._zeros())
            self.norm_ax.set_xlabel("optimizer update")
            self.norm_ax.set_ylabel("L2 norm of the block")
        self._marks(self.line_ax)
        self._legend()

    def _norm_lines(self):
        return block_norm_lines(self.recording, self.name, self.kind)[1]

    def _stat_lines(self, k):
        """Column ``k`` of the stored stats, one column per replica group (NaN where not
        finite; on log panels also where <= 0)."""
        cols = np.stack([self.stats[:, d[0], k] for d in self.geometry.replica_groups], 1)
        cols = np.asarray(cols, np.float64)
        with np.errstate(invalid="ignore"):
            keep = np.isfinite(cols) & ((cols > 0) if k != 1 else True)
        return np.where(keep, cols, np.nan)

    def _set_stat_marks(self, k):
        """An X at the top of statistic ``k``'s panel at each update where a block's
        value of it is not finite: NaN/Inf in the block, or a float32 sum of squares
        past 3.4e38 (|x| beyond ~1.8e19). The lines end there; the marks say why."""
        raw = np.stack([self.stats[:, d[0], k] for d in self.geometry.replica_groups], 1)
        bad = np.nonzero(~np.isfinite(np.asarray(raw, np.float64)).all(axis=1))[0]
        if k == 0:  # the variable's own NaN/Inf marks are there already
            bad = np.setdiff1d(bad, self.nonfinite_idx)
        self.stat_marks[STATS[k]].set_data(self.updates[bad], np.full(len(bad), 0.93))

    def _scale_mean(self):
        from matplotlib.ticker import AutoLocator, FuncFormatter, NullLocator, ScalarFormatter
        """The mean panel on a symlog axis (sign kept, |mean| on a log scale past the
        linear band around 0) once its largest finite |mean| is more than
        ``LOG_RANGE ** 2`` times the median: a
        diverging run's mean grows by 30 decades and on a linear axis showed only the
        spike of the last updates. Otherwise linear, where a mean near 0 reads best."""
        ax, data = self.stat_axes[STATS[1]], np.abs(self._data[self.stat_axes[STATS[1]]])
        mags = data[np.isfinite(data) & (data > 0)]
        # grown, not merely near 0 at times: the largest beyond 10^4 times the median
        if len(mags) and mags.max() / np.median(mags) > LOG_RANGE ** 2:
            self.mean_linthresh = float(np.quantile(mags, 0.05))
            ax.set_yscale("symlog", linthresh=self.mean_linthresh)
            lo = int(np.ceil(np.log10(self.mean_linthresh)))
            hi = int(np.floor(np.log10(mags.max())))
            # 0 and two decades a side: more crowd the thin linear band around 0
            up = sorted({10.0 ** e for e in (hi, (hi + lo + 1) // 2)})
            ax.set_yticks([-v for v in up[::-1]] + [0.0] + up)
            ax.yaxis.set_major_formatter(FuncFormatter(
                lambda v, _: "0" if v == 0 else f"{v:.0e}".replace("e+0", "e").replace("e+", "e")
                .replace("e-0", "e-")))
            ax.yaxis.set_minor_locator(NullLocator())
            ax.set_ylabel("mean (symlog)", fontsize=style.FONT_SIZE)
        else:
            self.mean_linthresh = None
            ax.set_yscale("linear")
            ax.yaxis.set_major_locator(AutoLocator())
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.set_ylabel("mean", fontsize=style.FONT_SIZE)

    def _zeros(self, k=0):
        """``(n_updates, n_groups)``: where the block's norm (statistic ``k``) is exactly
        0, which a log axis cannot draw (its lines hold NaN there)."""
        if self.stats_only:
            cols = np.stack([self.stats[:, d[0], k] for d in self.geometry.replica_groups], 1)
        else:
            norms = shard_norms(self.recording, self.name, self.kind)
            cols = np.stack([norms[:, d[0]] for d in self.geometry.replica_groups], 1)
        return np.asarray(cols) == 0

    def _zero_marks_on(self, ax, zeros):
        """Open circles on the bottom edge, in the block colours, where a norm is 0,
        and a note in the middle when every drawn norm is 0 (an empty axis said nothing)."""
        from matplotlib.transforms import blended_transform_factory
        self.zero_marks = getattr(self, "zero_marks", {})
        self.zero_notes = getattr(self, "zero_notes", {})
        bottom = blended_transform_factory(ax.transData, ax.transAxes)
        self.zero_marks[ax] = ax.scatter([], [], s=30, marker="o", facecolors="none",
                                         linewidths=1.4, transform=bottom, clip_on=False,
                                         zorder=7, gid="zero-marks")
        self.zero_marks[ax].set_in_layout(False)  # as the stat marks: empty at (0, 0)
        self.zero_notes[ax] = ax.text(0.5, 0.62, "", transform=ax.transAxes, ha="center",
                                      va="center", fontsize=style.FONT_SIZE, color="0.25",
                                      zorder=8, gid="zero-note",
                                      bbox=dict(facecolor="white", edgecolor="none", pad=2))
        self._set_zero_marks(ax, zeros)

    def _set_zero_marks(self, ax, zeros):
        i, g = np.nonzero(zeros)
        marks = self.zero_marks[ax]
        marks.set_offsets(np.column_stack([self.updates[i], np.full(len(i), 0.03)])
                          if len(i) else np.empty((0, 2)))
        marks.set_edgecolors([self.styles[k][0] for k in g] or "none")
        every = bool(zeros.all())
        what = "statistic" if self.stats_only else "norm"
        when = (f"update {self.updates[0]}" if len(self.updates) == 1 else "every update")
        self.zero_notes[ax].set_text(
            f"every block's {what} is 0 at {when}\n(circles at the bottom)" if every else "")
        forced = getattr(self, "_zero_axes", set())
        self._zero_axes = forced
        if every:  # nothing for the log axis to scale to: a plain, unlabelled range
            ax.set_yscale("linear")
            ax.set_ylim(0, 1)
            ax.set_yticks([0], ["0"])
            forced.add(ax)
        elif ax in forced and np.isfinite(self._data.get(ax, np.nan)).any():
            forced.discard(ax)  # another kind with norms to draw: the log axis again
            _log_y(ax)
            ax.set_autoscaley_on(True)  # set_ylim(0, 1) had turned it off
            ax.relim()
            ax.autoscale_view(scalex=False)

    def _lines_on(self, ax, lines, log):
        from matplotlib.ticker import FixedLocator, MaxNLocator
        x, n = self.updates, len(self.updates)
        marker = "o" if n <= 40 else None
        out = []
        for g, (color, _, ls) in enumerate(self.styles):
            out.append(ax.plot(x, lines[:, g], color=color, ls=ls, lw=1.6, marker=marker,
                               ms=3, zorder=2, gid=f"norm-{g}")[0])
        if log and np.isfinite(lines).any():
            _log_y(ax)
        lo, hi = (x[0] - 0.5, x[-1] + 0.5) if n == 1 else (x[0], x[-1])
        pad = 0.02 * (hi - lo)
        ax.set_xlim(lo - pad, hi + pad)
        # updates are whole numbers: a one-update run was ticked 0.6, 0.75, ...
        ax.xaxis.set_major_locator(FixedLocator(x) if n <= 10 else
                                   MaxNLocator(integer=True, steps=[1, 2, 5, 10]))
        ax.grid(True, which="major", color="#DDDDDD", lw=0.6)
        self.step_lines.append(ax.axvline(x[self.index], color=STEP_COLOR, lw=2.2, zorder=5,
                                          gid="step-line"))
        self._data[ax] = lines  # the data behind the dots at the shown update
        dots, = ax.plot(np.full(lines.shape[1], x[self.index]), lines[self.index], ls="none",
                        marker="o", ms=5, mfc=STEP_COLOR, mec="white", mew=0.8, zorder=6,
                        gid="step-dots")
        self.step_lines.append(dots)
        return out

    def _marks(self, ax):
        from matplotlib.transforms import blended_transform_factory
        x = self.updates
        lines = self._data[ax]
        replicated = [g for g, d in enumerate(self.geometry.replica_groups) if len(d) > 1]
        pts = [(x[i], lines[i, g]) for i in self.mismatch_idx for g in replicated
               if np.isfinite(lines[i, g])]
        if len(self.mismatch_idx):
            px, py = zip(*pts) if pts else ((), ())
            self.mismatch_marks, = ax.plot(px, py, ls="none", marker="D", ms=7, mfc="none",
                                           mec=MISMATCH_COLOR, mew=1.6, zorder=7,
                                           gid="mismatch-marks")
        if len(self.nonfinite_idx):
            top = blended_transform_factory(ax.transData, ax.transAxes)
            self.nonfinite_marks, = ax.plot(
                x[self.nonfinite_idx], np.full(len(self.nonfinite_idx), 0.96), transform=top,
                ls="none", marker="X", color=NONFINITE_COLOR, ms=7, zorder=7,
                gid="nonfinite-marks")

    def _legend(self):
        from matplotlib.lines import Line2D
        handles = [Line2D([], [], color=STEP_COLOR, lw=2.2, marker="o", mfc=STEP_COLOR,
                          mec="white", label="shown update")]
        if self.nonfinite_marks is not None:
            handles.append(Line2D([], [], ls="none", marker="X", color=NONFINITE_COLOR,
                                  label="NaN/Inf in this variable"))
        if any(len(m.get_offsets()) for m in getattr(self, "zero_marks", {}).values()):
            handles.append(Line2D([], [], ls="none", marker="o", mfc="none", mec="0.3",
                                  mew=1.4, label="norm exactly 0\n(bottom edge)"))
        if self.stats_only and any(len(m.get_xdata()) for m in self.stat_marks.values()):
            handles.append(Line2D([], [], ls="none", marker="X", color=NONFINITE_COLOR,
                                  label="statistic not finite\n(NaN/Inf, or past float32)"))
        if self.mismatch_marks is not None:
            handles.append(Line2D([], [], ls="none", marker="D", mfc="none",
                                  mec=MISMATCH_COLOR, mew=1.6, label="replicas disagree"))
        n = len(self.styles)
        title = None
        if n <= MAX_LEGEND_BLOCKS:
            for p, line, (_, _, ls) in zip(self.tensor.patches, self.lines, self.styles):
                # the style itself: get_linestyle() says '--' for every custom dash pattern
                handles.append(Line2D([], [], color=line.get_color(), ls=ls, lw=1.6,
                                      label=p.label))
            title = cycle_text(self.styles)
        else:
            title = f"{n} blocks: too many to name\n(colours: the block chips)"
        rows = len(handles) if len(handles) <= LEGEND_ROWS + 3 else LEGEND_ROWS
        small = n > LEGEND_ROWS
        self.legend = self.line_ax.legend(
            handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
            fontsize=style.FONT_SIZE - (2 if small else 1), borderaxespad=0.0,
            handlelength=2.2 if not small else 1.8, ncol=-(-len(handles) // rows),
            columnspacing=0.8, labelspacing=0.3 if small else 0.5, title=title,
            title_fontsize=style.FONT_SIZE - (2 if small else 1), alignment="left")


    # ---- in-place updates -----------------------------------------------------------------

    def _update_titles(self):
        r, i = self.recording, self.index
        bad = " (holds NaN/Inf)" if self._holds_nonfinite(i) else ""
        if i in self.mismatch_idx:
            bad += " (replicas disagree)"
        what = "device blocks of " if self.stats_only else ""
        scale = ("colour scale fixed over the run" if self.fixed_scale and not self.stats_only
                 else "")
        # a gradient is computed in update k (before it applies); params and velocity
        # are what update k left
        when = (f": the gradient of update {r.steps[i]}" if self.kind == "grad"
                else f" after update {r.steps[i]}")
        self.heat_ax.set_title(
            f"{what}{self.kind} of {self.name!r}{when}{bad}\n"
            f"{settings_text(r, i)}" + (f"\n{scale}" if scale else ""),
            fontsize=style.FONT_SIZE + 1)
        if self.norm_ax is not None:
            what = "statistics" if self.stats_only else "L2 norm"
            self.line_ax.set_title(f"each block's {self.kind} {what} over the updates",
                                   fontsize=style.FONT_SIZE + 1)

    def set_index(self, index: int) -> None:
        """Show the update at ``index`` into ``recording.steps`` (a slider position)."""
        self.index = int(index) % len(self.recording)
        if self.heatmap is not None:
            self.tensor.set_image(as_image(self.values[self.index]), self._limit())
        x = self.updates[self.index]
        for line in self.step_lines:
            if line.get_gid() == "step-line":
                line.set_xdata([x, x])
            else:
                data = self._data[line.axes]
                line.set_data(np.full(data.shape[1], x), data[self.index])
        self._update_titles()

    def set_step(self, step=None) -> None:
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
        if self.norm_ax is not None:
            if self.stats_only:
                for k, label in enumerate(STATS):
                    self._set_lines(self.stat_axes[label], self.stat_lines[label],
                                    self._stat_lines(k))
                    if k != 1:
                        self._set_zero_marks(self.stat_axes[label], self._zeros(k))
                    self._set_stat_marks(k)
                self._scale_mean()
            else:
                self._set_lines(self.norm_ax, self.lines, self._norm_lines())
                self._set_zero_marks(self.norm_ax, self._zeros())
            self._move_marks()
            self._legend()  # the new kind's marks (zero norms, non-finite stats) need entries
        if self.tensor.colorbar is not None:  # set_index puts it on with its scale
            self.tensor.colorbar_label = f"{kind} value"
        self.set_index(self.index)

    def _set_lines(self, ax, lines, data):
        for g, line in enumerate(lines):
            line.set_ydata(data[:, g])
        self._data[ax] = data
        ax.relim()
        ax.autoscale_view(scalex=False)

    def _move_marks(self):
        if self.mismatch_marks is not None:
            lines = self._data[self.line_ax]
            replicated = [g for g, d in enumerate(self.geometry.replica_groups) if len(d) > 1]
            pts = [(self.updates[i], lines[i, g]) for i in self.mismatch_idx for g in replicated
                   if np.isfinite(lines[i, g])]
            self.mismatch_marks.set_data(*(zip(*pts) if pts else ((), ())))

    def fit_labels(self, renderer=None) -> None:
        """Shrink, turn or hide block labels that would not fit inside their block."""
        import textwrap
        self.tensor.fit_labels(renderer or self.figure.canvas.get_renderer())
        hidden = self.tensor.unlabelled_text()
        if hidden and not self.stats_only:  # the devices, named where chips could not
            self.heat_ax.set_xlabel(self._xlabel + "\n" + textwrap.fill(
                hidden, 52, break_on_hyphens=False))

    # older name of the artists, for code written against the heatmap-of-norms view
    @property
    def outlines(self):
        return self.tensor.outlines

    @property
    def labels(self):
        return self.tensor.labels

    @property
    def patches(self):
        return self.tensor.patches


def _axes(ax, figsize=(11.5, 5.0), width_ratios=(1.25, 1)):
    if ax is None:
        return tuple(new_figure(figsize).subplots(1, 2, width_ratios=list(width_ratios)))
    if isinstance(ax, (tuple, list)) and len(ax) == 2:
        return tuple(ax)
    if hasattr(ax, "imshow"):
        return ax, None
    raise TypeError("ax must be None, a matplotlib Axes (tensor only) or a pair (tensor_ax, "
                    f"norm_ax). Received: {ax!r}.")


def draw_shards(recording, name, kind="velocity", step=None, *, ax=None,
                fixed_scale=False) -> ShardsView:
    """Like ``plot_shards`` but returns the ``ShardsView`` (``.figure`` is the figure),
    whose ``set_step``/``set_kind``/``set_fixed_scale`` update the artists in place."""
    check_not_empty(recording)
    update_index(recording, step)
    if getattr(recording, "mode", "full") == "stats":
        recording.shard_stats(name, kind)  # unknown variable/kind: the Recording's own error
    else:
        recording.global_values(name, kind)
    heat_ax, norm_ax = _axes(ax)
    view = ShardsView(recording, name, kind, step, heat_ax=heat_ax, norm_ax=norm_ax,
                      fixed_scale=fixed_scale)
    fig = view.figure
    if hasattr(fig.canvas, "get_renderer"):
        fig.draw_without_rendering()  # settle the layout before measuring labels
        view.fit_labels(fig.canvas.get_renderer())
    return view


def plot_shards(recording, name, kind="velocity", step=None, *, ax=None, fixed_scale=False):
    """The global ``kind`` tensor of ``name`` after optimizer update ``step`` (as
    ``recording.steps`` counts, the first update is 1; -1..-n count back from the last;
    None: the last) with each
    device's block outlined and labelled, beside each unique block's L2 norm over the
    updates (log y, one line per block in its colour; replicas are one block, marked
    with a diamond at updates where their copies disagreed; NaN/Inf updates marked with
    an X on top). The shown update is a vertical line with a dot on every block's line.
    Returns the ``Figure``. The title says "after update k" for ``param`` and
    ``velocity`` (what update k left) and "the gradient of update k" for ``grad`` (what
    update k computed and applied).

    ``fixed_scale=True`` fixes the heatmap's colour scale over the whole run
    (``-max|x|..max|x|`` of every recorded update), so decay shows as fading; the
    default scales each update to its own largest magnitude.

    ``ax``: None (a new figure), a pair ``(tensor_ax, norm_ax)`` to draw into, or a
    single ``Axes`` for the tensor alone. Unknown variables, kinds or updates raise a
    ``ValueError`` naming what is allowed.

    A ``Recorder(mode="stats")`` recording has no values: the left panel shows the
    device blocks, the right one each block's stored norm, mean and max |x|.

    >>> import dtsgd_viz
    >>> r = dtsgd_viz.run(dtsgd_viz.surfaces.ShardedQuadratic(), {"m": dict(learning_rate=0.5,
    ...                   momentum=0.9)}, steps=5)["m"]                        # doctest: +SKIP
    >>> fig = dtsgd_viz.plot_shards(r, "w", "velocity", step=3)                # doctest: +SKIP
    """
    return draw_shards(recording, name, kind, step, ax=ax, fixed_scale=fixed_scale).figure
