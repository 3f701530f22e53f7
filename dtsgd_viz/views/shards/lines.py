"""The norm panel of ``ShardsView``: each unique block's L2 norm over the updates as a
log-y line in its block colour, named once at its right end, drawn widest first (a line
on another shows as a rim); the shown update as a grey line with a dot on every line;
open circles on the bottom edge where a norm is 0, an X on top at NaN/Inf updates, a
diamond where replicas disagreed, in a small legend. Past ``MAX_LINES`` blocks, their
range (a grey band) and median stand for them. A stats recording has three stacked
panels: each block's L2 norm, mean and max |x|. Lines are thinned to the axes' pixel
columns (``minmax_decimate``); ``data`` keeps every update."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, FuncFormatter, LogLocator, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from ..core import style
from ..core.log_ticks import use_log_ticks
from ..mesh.layout_colors import label_ink
from ..text.direct import label_ends
from .findings import STATS, median_line, norm_change_text
from .geometry import minmax_decimate, shard_norms
from .tensor_panel import NONFINITE_COLOR

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.legend import Legend
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from .view import ShardsView

STEP_LINE_COLOR = "#8C8C8C"  # mid grey, thin: the dots on it stand out from it
STEP_LINE_WIDTH = 1.2
MISMATCH_COLOR = "#D55E00"  # Okabe-Ito vermillion: replicas disagree
BAND_COLOR, MEDIAN_COLOR = "#9A9A9A", "#555555"
MAX_NAMED = 8  # up to this many blocks, each line named at its end; more: a legend
MAX_LINES = 16  # past this many, a band and a median: 64 lines tangle beyond any naming
MARKER_UPDATES = 15  # up to this many updates, a small marker at each: where the data is
LOG_X_SPAN = 300  # a run whose last update is this many times its first: a log update axis


def log_x(updates: ArrayLike) -> bool:
    """Whether the update axis of ``updates`` is on a log scale (``LOG_X_SPAN``).

    >>> log_x(np.arange(4, 2001, 4)), log_x(np.arange(1, 151))
    (True, False)
    """
    x = np.asarray(updates)
    return len(x) > 40 and x[0] > 0 and x[-1] / x[0] >= LOG_X_SPAN


def log_y(ax: Axes) -> None:
    """A log y axis in the one tick format (``use_log_ticks``), as many labels as fit: 1-2-5
    per decade when they do, plain steps under a decade."""
    ax.set_yscale("log")
    lo, hi = ax.dataLim.intervaly
    room = ax.bbox.height * 72 / ax.figure.dpi / (2.2 * style.TICK_SIZE)  # tick labels that fit
    ok = bool(np.isfinite([lo, hi]).all() and lo > 0)
    if ok and hi / lo < 10:  # under a decade: evenly spaced plain numbers
        ax.yaxis.set_major_locator(MaxNLocator(nbins=min(4, max(2, int(room) - 1)), steps=[1, 2, 2.5, 5, 10]))
    else:
        few = ok and hi / lo <= 100 and 3 * np.log10(hi / lo) + 1 <= room  # 1-2-5 over at most two decades
        ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0) if few else (1.0,), numticks=max(2, int(room))))
    use_log_ticks(ax.yaxis)


def line_widths(n: int) -> list[float]:
    """The width (points) of each of ``n`` lines in draw order: widest first (a line under
    another shows).

    >>> line_widths(3), line_widths(1)
    ([2.6, 1.9, 1.2], [1.8])
    """
    if n == 1:
        return [1.8]
    top = 2.6 if n <= 4 else 2.2 if n <= MAX_NAMED else 1.2
    return [round(1.2 + (top - 1.2) * (n - 1 - g) / (n - 1), 2) for g in range(n)]


def _key(marks: Line2D, label: str) -> Line2D:
    """A legend entry drawn as ``marks`` are."""
    return Line2D(
        [], [], ls="none", marker=marks.get_marker(), mfc=marks.get_markerfacecolor(),
        mec=marks.get_markeredgecolor(), mew=marks.get_markeredgewidth(), ms=marks.get_markersize(), label=label,
    )  # fmt: skip


class NormPanel:
    """``ShardsView``'s norm panel on ``view.norm_ax``, reading the view's public state.
    ``axes``: ``{statistic: Axes}``; ``data``: ``{axes: (n_updates, n_blocks)}``; ``lines``:
    the norm lines of ``line_ax``; ``marks``: by gid (per axes: ``(axes, gid)``)."""

    def __init__(self, view: ShardsView):
        self.view = view
        self.ax = view.norm_ax
        self.line_ax: Axes | None = None
        self.axes: dict = {}
        self.stat_lines: dict = {}
        self.lines: list = []
        self.step_lines: list = []
        self.data: dict = {}
        self.thinned_to: dict = {}  # axes -> the pixel columns its lines were thinned to
        self.marks: dict = {}  # gid -> the marks' Line2D or PathCollection
        self.band: list = []
        self.median: Line2D | None = None  # the median block norm's line (up to MAX_LINES blocks)
        self.end_labels: list | None = None
        self.legend: Legend | None = None

    def columns(self, k: int) -> np.ndarray:
        """Statistic ``k`` (0: the L2 norm) of each replica group at each update."""
        v, firsts = self.view, [d[0] for d in self.view.geometry.replica_groups]
        if v.stats_only:
            assert v.stats is not None  # a stats recording's
            return np.asarray(v.stats[:, firsts, k], np.float64)
        return np.asarray(shard_norms(v.recording, v.name, v.kind)[:, firsts], np.float64)

    def _drawable(self, k: int) -> np.ndarray:
        """``columns(k)`` with NaN where a line cannot go: not finite, or (log panels) <= 0."""
        cols = self.columns(k)
        with np.errstate(invalid="ignore"):
            keep = np.isfinite(cols) & ((cols > 0) if k != 1 else True)
        return np.where(keep, cols, np.nan)

    def thinned(self, ax: Axes, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` of one line, at most about 3 points per pixel column of ``ax``
        (``minmax_decimate``, in log10(update) on a log update axis)."""
        x = self.view.updates
        split = np.log10(x.astype(np.float64)) if log_x(x) else x.astype(np.float64)
        columns = self.thinned_to[ax] = max(1, int(np.ceil(ax.bbox.width)))
        if len(x) <= columns:
            return x, np.asarray(y)
        kept, y = minmax_decimate(split, y, columns)
        return x[np.searchsorted(split, kept)], y

    def draw(self) -> None:
        """Every panel, its lines, marks, names and title (once)."""
        assert self.ax is not None  # drawn when the view has a norm axes
        if self.view.stats_only:
            self.ax.set_axis_off()
            heights, top = (0.4, 0.25, 0.25), 1.0
            for label, h in zip(STATS, heights):
                self.axes[label] = self.ax.inset_axes((0, top - h, 1, h))
                top -= h + 0.05
            first = self.axes[STATS[0]]
            for a in list(self.axes.values())[1:]:
                a.sharex(first)
            for a in list(self.axes.values())[:-1]:
                a.tick_params(labelbottom=False)
        else:
            self.axes["L2 norm"] = self.ax
        self.line_ax = next(iter(self.axes.values()))
        for k, (label, ax) in enumerate(self.axes.items()):
            self._draw_panel(ax, k, label)
        self.lines = self.stat_lines[STATS[0]]
        self._draw_median()
        self._draw_band()
        self._draw_flags()
        self._title()

    def _draw_panel(self, ax: Axes, k: int, label: str) -> None:
        x, data, n = self.view.updates, self._drawable(k), len(self.view.styles)
        self.data[ax] = data
        marker = "o" if len(x) <= MARKER_UPDATES else None
        self.stat_lines[label] = [
            ax.plot(
                *self.thinned(ax, data[:, g]), color=c, ls=ls, lw=lw, marker=marker, ms=3, zorder=2, gid=f"norm-{g}"
            )[0]
            for g, ((c, _, ls), lw) in enumerate(zip(self.view.styles, line_widths(n)))
        ]
        lo, hi = (x[0] - 0.5, x[-1] + 0.5) if len(x) == 1 else (x[0], x[-1])
        if log_x(x):  # a long run: its first updates would be squashed against the edge
            ax.set_xscale("log")
            ax.set_xlim(lo / (hi / lo) ** 0.045, hi * (hi / lo) ** 0.02)
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 3.0)))
            use_log_ticks(ax.xaxis)
        else:
            ax.set_xlim(
                lo - 0.045 * (hi - lo), hi + 0.02 * (hi - lo)
            )  # the shown update at an end: a marker, not the frame
            few = (
                FixedLocator(x.tolist())
                if len(x) <= 5
                else MaxNLocator(nbins=6, integer=True, steps=[1, 2, 2.5, 5, 10], min_n_ticks=3)
            )  # pyright: ignore[reportArgumentType]
            ax.xaxis.set_major_locator(few)
        if k != 1 and np.isfinite(data).any():
            log_y(ax)
        ax.grid(True, which="major", color="#DDDDDD", lw=0.6)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.set_ylabel("L2 norm of the block" if not self.view.stats_only else label, fontsize=style.LABEL_SIZE)
        if k == 1:
            self._scale_mean(ax, data)
        if ax is list(self.axes.values())[-1]:
            scale = " (log scale)" if log_x(x) else ""
            ax.set_xlabel(f"optimizer update{scale}", fontsize=style.LABEL_SIZE)
        self.step_lines.append(
            ax.axvline(x[self.view.index], color=STEP_LINE_COLOR, lw=STEP_LINE_WIDTH, zorder=4, gid="step-line")
        )
        top = blended_transform_factory(ax.transData, ax.transAxes)  # x: update, y: axes fraction
        if ax is self.line_ax:
            label_text = ax.text(0, 0.97, "", transform=top, va="top", fontsize=style.NOTE_SIZE, gid="step-label")
            label_text.set_bbox(dict(fc="white", ec="none", alpha=0.85, pad=1.0))
            self.step_lines.append(label_text)
        dots = ax.scatter([], [], s=42, edgecolors="white", linewidths=1.0, zorder=6, gid="step-dots", clip_on=False)
        self.step_lines.append(dots)
        dots.set_in_layout(False)  # empty, an unclipped artist sits at (0, 0) and the layout made room for it
        zeros = ax.scatter([], [], s=30, facecolors="none", linewidths=1.4, transform=top, clip_on=False, zorder=7)
        zeros.set_gid("zero-marks")
        zeros.set_in_layout(False)
        self.marks[(ax, "zero-marks")] = zeros
        if self.view.stats_only:
            (self.marks[(ax, "nonfinite-stat")],) = ax.plot(
                [], [], transform=top, ls="none", marker="X", ms=7,
                color=NONFINITE_COLOR, zorder=7, clip_on=False, gid=f"nonfinite-stat-{k}",
            )  # fmt: skip
            self.marks[(ax, "nonfinite-stat")].set_in_layout(False)
        self._show_index(ax)
        self._set_marks(ax, k)

    def _scale_mean(self, ax: Axes, data: np.ndarray) -> None:
        """The mean panel on a symlog axis, ticked at 0 and two powers of ten a side, once
        its largest |mean| is over 10^4 times the median (a diverging run's)."""
        mags = np.abs(data[np.isfinite(data) & (data != 0)])
        if not len(mags) or mags.max() / np.median(mags) <= 1e4:
            return
        linthresh = float(np.quantile(mags, 0.05))
        ax.set_yscale("symlog", linthresh=linthresh)
        lo, hi = int(np.ceil(np.log10(linthresh))), int(np.floor(np.log10(mags.max())))
        up = sorted({10.0**e for e in (hi, (hi + lo + 1) // 2)})
        ax.set_yticks([-v for v in up[::-1]] + [0.0] + up)
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "0" if v == 0 else f"{v:.0e}".replace("e+", "e")))
        ax.set_ylabel("mean (symlog)", fontsize=style.LABEL_SIZE)

    def _draw_median(self) -> None:
        """Up to ``MAX_LINES`` blocks: the median block's norm (``median_line``, what the
        panel's title speaks of) as a grey line under the blocks' lines."""
        self.median = None
        ax = self.line_ax
        assert ax is not None  # after draw()
        data = self.data[ax]
        if not 1 < len(self.view.styles) <= MAX_LINES or not np.isfinite(data).any():
            return
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN updates: NaN
            med = median_line(data)
        (self.median,) = ax.plot(*self.thinned(ax, med), color=MEDIAN_COLOR, lw=1.2, zorder=1.8, gid="norm-median")

    def _draw_band(self) -> None:
        """Past ``MAX_LINES`` blocks: the lines hidden for their band and median (again per kind)."""
        for artist in self.band:
            artist.remove()
        self.band = []
        if len(self.view.styles) <= MAX_LINES:
            return
        for label, ax in self.axes.items():
            data = self.data[ax]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN updates: NaN
                lo, hi = np.nanmin(data, 1), np.nanmax(data, 1)
                med = median_line(data) if label != "mean" else np.nanmedian(data, 1)
            x, ok = self.view.updates, np.isfinite(lo) & np.isfinite(hi)
            fill = ax.fill_between(x, lo, hi, where=ok, color=BAND_COLOR, alpha=0.35, lw=0, zorder=1.5, gid="norm-band")
            (line,) = ax.plot(*self.thinned(ax, med), color=MEDIAN_COLOR, lw=1.8, zorder=2.5, gid="norm-median")
            self.band += [fill, line]
            for norm_line in self.stat_lines[label]:
                norm_line.set_visible(False)

    def _draw_flags(self) -> None:
        """Diamonds where replicas disagree and an X on top at NaN/Inf updates, on ``line_ax``."""
        ax = self.line_ax
        assert ax is not None  # after draw()
        top = blended_transform_factory(ax.transData, ax.transAxes)
        if len(self.view.mismatch_idx):
            (self.marks["mismatch-marks"],) = ax.plot(
                [], [], ls="none", marker="D", ms=7, mfc="none", mec=MISMATCH_COLOR, mew=1.6, zorder=7,
                gid="mismatch-marks",
            )  # fmt: skip
        bad = self.view.updates[self.view.nonfinite_idx]
        if len(bad):
            (self.marks["nonfinite-marks"],) = ax.plot(
                bad, np.full(len(bad), 0.96), transform=top, ls="none", marker="X", color=NONFINITE_COLOR, ms=7,
                zorder=7, gid="nonfinite-marks",
            )  # fmt: skip
        self._set_mismatch()

    def _set_mismatch(self) -> None:
        if "mismatch-marks" not in self.marks:
            return
        data = self.data[self.line_ax]
        replicated = np.array([len(d) > 1 for d in self.view.geometry.replica_groups])
        marked = np.zeros(data.shape, bool)
        marked[self.view.mismatch_idx] = True
        rows, groups = np.nonzero(marked & replicated[None, :] & np.isfinite(data))
        self.marks["mismatch-marks"].set_data(self.view.updates[rows], data[rows, groups])

    def _set_marks(self, ax: Axes, k: int) -> None:
        """Circles where statistic ``k`` is 0 (log panels); a stats panel's X where it is not finite."""
        cols = self.columns(k)
        rows, groups = np.nonzero(cols == 0) if k != 1 else (np.zeros(0, int), np.zeros(0, int))
        zeros = self.marks[(ax, "zero-marks")]
        zeros.set_offsets(np.column_stack([self.view.updates[rows], np.zeros(len(rows))]))
        zeros.set_edgecolors([self.view.styles[g][0] for g in groups] or "none")
        if not np.isfinite(self.data[ax]).any():  # nothing to scale a log axis to: a plain 0..1
            ax.set_yscale("linear")
            ax.set_ylim(0, 1)
            ax.set_yticks([0], ["0"])
        if self.view.stats_only:
            bad = np.flatnonzero(~np.isfinite(cols).all(axis=1))
            if k == 0:  # the variable's own NaN/Inf marks are there already
                bad = np.setdiff1d(bad, self.view.nonfinite_idx)
            self.marks[(ax, "nonfinite-stat")].set_data(self.view.updates[bad], np.full(len(bad), 0.9))

    def name_lines(self) -> None:
        """Each line named at its end, right of the axes (``MAX_NAMED``), else in a legend
        with the marks. Called once the figure holds its titles: the names are spread a text
        height apart on the axes as the layout sizes it."""
        ax = self.line_ax
        assert ax is not None  # after draw()
        engine = self.view.figure.get_layout_engine()
        if engine is not None and self.end_labels is None:
            engine.execute(self.view.figure)  # the axes' height the names are spread on
        for t in self.end_labels or []:
            t.remove()
        self.end_labels = None
        if self.legend is not None:
            self.legend.remove()
        handles = []
        n, patches = len(self.view.styles), self.view.patches
        if n <= MAX_NAMED:
            self.end_labels = label_ends(
                ax, self._end_entries(), fontsize=style.NOTE_SIZE + 0.5, outside=True, gid_prefix="end:"
            )
        elif n <= MAX_LINES:
            handles += [
                Line2D([], [], color=c, ls=ls, lw=1.6, label=p.label)
                for p, (c, _, ls) in zip(patches, self.view.styles)
            ]
            handles.append(Line2D([], [], color=MEDIAN_COLOR, lw=1.2, label="median"))
        else:
            handles += [
                Line2D([], [], color=MEDIAN_COLOR, lw=1.8, label=f"median of {n} blocks"),
                Line2D([], [], color=BAND_COLOR, lw=6, alpha=0.5, label=f"range of {n} blocks"),
            ]
        for gid, label in (("nonfinite-marks", "NaN/Inf in this variable"), ("mismatch-marks", "replicas disagree")):
            if gid in self.marks and len(self.marks[gid].get_xdata()):
                handles.append(_key(self.marks[gid], label))
        if any(len(m.get_offsets()) for key, m in self.marks.items() if key[1:] == ("zero-marks",)):
            handles.append(
                Line2D([], [], ls="none", marker="o", mfc="none", mec="0.3", mew=1.4, label="norm exactly 0")
            )
        if any(len(m.get_xdata()) for key, m in self.marks.items() if key[1:] == ("nonfinite-stat",)):
            handles.append(
                _key(self.marks[next(k for k in self.marks if k[1:] == ("nonfinite-stat",))], "statistic not finite")
            )
        self.legend = None
        if handles and n > MAX_NAMED:
            self.legend = ax.legend(
                handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
                fontsize=style.NOTE_SIZE, borderaxespad=0.0, ncol=-(-len(handles) // 16),
            )  # fmt: skip
        elif handles:
            self.legend = ax.legend(handles=handles, loc="best", fontsize=style.NOTE_SIZE, framealpha=0.85)

    def _end_entries(self) -> list[tuple[str, float, float, ColorType]]:
        """``(name, last update, last finite norm, ink)`` of each block's line."""
        out = []
        for g, (p, (c, _, _)) in enumerate(zip(self.view.patches, self.view.styles)):
            col = self.data[self.line_ax][:, g]
            ok = np.flatnonzero(np.isfinite(col))
            i = ok[-1] if len(ok) else -1
            out.append((p.label, float(self.view.updates[i]), float(col[i]) if len(ok) else np.nan, label_ink(c)))
        if self.median is not None:
            x, y = (np.asarray(a, np.float64) for a in self.median.get_data())
            ok = np.flatnonzero(np.isfinite(y))
            if len(ok):
                out.append(("median", float(x[ok[-1]]), float(y[ok[-1]]), MEDIAN_COLOR))
        return out

    def _title(self) -> None:
        assert self.line_ax is not None  # after draw()
        title = norm_change_text(self.data[self.line_ax], self.view.updates)
        self.line_ax.set_title(title, fontsize=style.TITLE_SIZE)

    def _show_index(self, ax: Axes) -> None:
        i, x = self.view.index, self.view.updates
        y = self.data[ax][i]
        keep = np.flatnonzero(np.isfinite(y) & np.asarray([line.get_visible() for line in self.stat_lines_of(ax)]))
        for artist in self.step_lines:
            if artist.axes is not ax:
                continue
            gid = artist.get_gid()
            if gid == "step-line":
                artist.set_xdata([x[i], x[i]])
            elif gid == "step-dots":
                artist.set_offsets(
                    np.column_stack([np.full(len(keep), x[i]), y[keep]]) if len(keep) else np.empty((0, 2))
                )
                artist.set_facecolors([self.view.styles[g][0] for g in keep] or "none")
            elif gid == "step-label":
                lo, hi = np.log10(x[[0, -1]].astype(float)) if log_x(x) else x[[0, -1]].astype(float)
                at = np.log10(float(x[i])) if log_x(x) else float(x[i])
                right = hi > lo and (at - lo) / (hi - lo) > 0.6  # past 60% of the run: left of its line
                artist.set_text(f"update {x[i]} " if right else f" update {x[i]}")
                artist.set_x(x[i])
                artist.set_ha("right" if right else "left")

    def stat_lines_of(self, ax: Axes) -> list:
        """The block lines drawn on ``ax``."""
        return next(self.stat_lines[label] for label, a in self.axes.items() if a is ax)

    def show_index(self) -> None:
        """The shown-update markers (line, label, dots) at the view's ``index``."""
        for ax in self.axes.values():
            self._show_index(ax)

    def set_kind(self) -> None:
        """The lines, marks, names and title of the kind the view just loaded, in place."""
        if self.ax is None:
            return
        for k, (label, ax) in enumerate(self.axes.items()):
            data = self.data[ax] = self._drawable(k)
            for g, line in enumerate(self.stat_lines[label]):
                line.set_data(*self.thinned(ax, data[:, g]))
            if k != 1 and np.isfinite(data).any():
                log_y(ax)
            ax.set_autoscaley_on(True)  # the names' and the zero range's fixed limits
            ax.relim()
            ax.autoscale_view(scalex=False)
            self._set_marks(ax, k)
            self._show_index(ax)
        self._draw_band()
        self._set_mismatch()
        self.name_lines()
        self._title()
