"""``ShardsView``'s norm panel: each unique block's L2 norm over the updates, log y, in its block colour."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
from matplotlib import patheffects
from matplotlib.lines import Line2D
from matplotlib.ticker import FixedLocator, LogLocator, MaxNLocator
from matplotlib.transforms import blended_transform_factory

from ..core import style
from ..core.log_ticks import use_log_ticks
from ..text.direct import label_ends, lead_moved_ends
from .findings import median_line, norm_change_text
from .geometry import block_norm_lines, minmax_decimate, shard_norms
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
BAND_COLOR, MEDIAN_COLOR = "#9A9A9A", "black"  # the median: black, white-edged, over the block lines
MEDIAN_EDGE = [patheffects.withStroke(linewidth=3.6, foreground="white")]  # no block line has an edge
LINE_WIDTH = 1.6  # every block's line: one width (a wider line read as a block that matters more)
ZERO_COLOR = "0.3"  # a norm of exactly 0: an open circle on the bottom spine
ZERO_ROOM = 0.1  # that spine lowered by this fraction of the log span: no value tick at the zeros
MAX_NAMED = 8  # up to this many blocks, each line named at its end; more: a band and a median
DOT_POINTS = 6.5  # the shown update's dots' width, points
MARKER_UPDATES = 15  # up to this many updates, a small marker at each: where the data is
LOG_X_SPAN = 300  # a run whose last update is this many times its first: a log update axis


def log_x(updates: ArrayLike) -> bool:
    """Whether the update axis of ``updates`` is on a log scale (``LOG_X_SPAN``)::

    >>> log_x(np.arange(4, 2001, 4)), log_x(np.arange(1, 151))
    (True, False)
    """
    x = np.asarray(updates)
    return len(x) > 40 and x[0] > 0 and x[-1] / x[0] >= LOG_X_SPAN


def log_y(ax: Axes) -> None:
    """A log y axis in the one tick format (``use_log_ticks``), 1-2-5 a decade or as many as fit."""
    ax.set_yscale("log")
    lo, hi = ax.dataLim.intervaly
    room = max(2, int(ax.bbox.height * 72 / ax.figure.dpi / (2.2 * style.TICK_SIZE)))  # tick labels that fit
    subs = (1.0,)
    if np.isfinite([lo, hi]).all() and 0 < lo < hi:
        decades = 10.0 ** np.arange(np.floor(np.log10(lo)), np.ceil(np.log10(hi)) + 1)
        for finer in ((1.0, 2.0, 5.0), (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)):
            n = sum(lo <= d * k <= hi for d in decades for k in finer)
            if n > room:
                break
            subs = finer
            if n >= 3:
                break
    ax.yaxis.set_major_locator(LogLocator(subs=subs, numticks=room))
    use_log_ticks(ax.yaxis)


def _key(marks: Line2D, label: str) -> Line2D:  # a legend entry drawn as ``marks`` are
    keys = ("marker", "markerfacecolor", "markeredgecolor", "markeredgewidth", "markersize")
    return Line2D([], [], ls="none", label=label, **{k: getattr(marks, f"get_{k}")() for k in keys})


class NormPanel:
    """``ShardsView``'s norm panel on ``view.norm_ax``: ``data`` (updates x blocks) drawn as ``lines``."""

    def __init__(self, view: ShardsView):
        self.view = view
        self.ax = view.norm_ax
        self.lines: list = []
        self.step_lines: list = []
        self.data = np.zeros((0, 0))
        self.thinned_to: dict = {}  # axes -> the pixel columns its lines were thinned to
        self.marks: dict = {}  # gid -> the marks' Line2D or PathCollection
        self.band: list = []
        self.median: Line2D | None = None  # the median block norm's line
        self.end_labels: list | None = None
        self.leader_lines: list[Line2D] = []
        self.legend: Legend | None = None

    def columns(self) -> np.ndarray:  # each replica group's L2 norm at each update, 0 and NaN/Inf kept (unlike data)
        v, firsts = self.view, [d[0] for d in self.view.geometry.replica_groups]
        return shard_norms(v.recording, v.name, v.kind)[:, firsts]

    def thinned(self, y: ArrayLike) -> tuple[np.ndarray, np.ndarray]:  # one line's (x, y) at the axes' pixel width
        x, ax = self.view.updates, self.ax
        split = np.log10(x.astype(np.float64)) if log_x(x) else x.astype(np.float64)
        columns = self.thinned_to[ax] = max(1, int(np.ceil(ax.bbox.width)))
        kept, y = minmax_decimate(split, y, columns)
        return x[np.searchsorted(split, kept)], y

    def _load(self) -> None:
        self.data = block_norm_lines(self.view.recording, self.view.name, self.view.kind)[1]

    def draw(self) -> None:
        ax, x = self.ax, self.view.updates
        self._load()
        marker = "o" if len(x) <= MARKER_UPDATES else None
        self.lines = [
            ax.plot(
                *self.thinned(self.data[:, g]), color=c, ls=ls, lw=LINE_WIDTH, marker=marker, ms=3, gid=f"norm-{g}"
            )[0]
            for g, (c, _, ls) in enumerate(self.view.styles)
        ]
        lo, hi = (x[0] - 0.5, x[-1] + 0.5) if len(x) == 1 else (x[0], x[-1])
        if log_x(x):  # a long run: its first updates would be squashed against the edge
            ax.set_xscale("log")
            ax.set_xlim(lo / (hi / lo) ** 0.045, hi * (hi / lo) ** 0.045)
            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 3.0)))
            use_log_ticks(ax.xaxis)
        else:  # a margin each side: the shown update at an end is a line, not the frame
            ax.set_xlim(lo - 0.045 * (hi - lo), hi + 0.045 * (hi - lo))
            steps = [1, 2, 2.5, 5, 10]
            few = len(x) <= 5
            ax.xaxis.set_major_locator(
                FixedLocator(x.tolist()) if few else MaxNLocator(nbins=6, integer=True, steps=steps, min_n_ticks=3)
            )
        ax.grid(True, which="major", color="#DDDDDD", lw=0.6)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.set_ylabel("L2 norm of the block", fontsize=style.LABEL_SIZE)
        ax.set_xlabel("optimizer update" + (" (log scale)" if log_x(x) else ""), fontsize=style.LABEL_SIZE)
        top = blended_transform_factory(ax.transData, ax.transAxes)  # x: update, y: axes fraction
        line = ax.axvline(x[self.view.index], color=STEP_LINE_COLOR, lw=STEP_LINE_WIDTH, zorder=4, gid="step-line")
        dots = ax.scatter([], [], s=DOT_POINTS**2, edgecolors="white", linewidths=1.0, zorder=6, clip_on=False)
        zeros = ax.scatter([], [], s=30, facecolors="none", linewidths=1.4, transform=top, clip_on=False, zorder=7)
        for artist, gid in ((dots, "step-dots"), (zeros, "zero-marks")):
            artist.set_gid(gid)
            artist.set_in_layout(False)  # empty, an unclipped artist sits at (0, 0) and the layout made room for it
        self.step_lines, self.marks["zero-marks"] = [line, dots], zeros
        (self.marks["nonfinite-marks"],) = ax.plot(
            [], [], transform=top, ls="none", marker="X", color=NONFINITE_COLOR, ms=7, zorder=7, gid="nonfinite-marks"
        )
        (self.marks["mismatch-marks"],) = ax.plot(
            [], [], ls="none", marker="D", ms=7, mfc="none", mec=MISMATCH_COLOR, mew=1.6, zorder=7, gid="mismatch-marks"
        )
        self._draw_lines()

    def _draw_lines(self) -> None:  # all that depends on ``data``: y scale, median or band, marks, shown update, title
        ax = self.ax
        for artist in [*self.band, *([self.median] if self.median is not None else [])]:
            artist.remove()
        self.band, self.median, n, data = [], None, len(self.view.styles), self.data
        if np.isfinite(data).any():
            log_y(ax)
        else:  # nothing to scale a log axis to: a plain 0..1
            ax.set_yscale("linear")
            ax.set_ylim(0, 1)
            ax.set_yticks([0], ["0"])
        band = n > MAX_NAMED  # a band and a median for lines too many to name
        if band:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN updates: NaN
                lo, hi = np.nanmin(data, 1), np.nanmax(data, 1)
            x, ok = self.view.updates, np.isfinite(lo) & np.isfinite(hi)
            self.band = [
                ax.fill_between(x, lo, hi, where=ok, color=BAND_COLOR, alpha=0.35, lw=0, zorder=1.5, gid="norm-band")
            ]
            for line in self.lines:
                line.set_visible(False)
        if band or (n > 1 and np.isfinite(data).any()):  # the median block's norm, over the lines
            (self.median,) = ax.plot(
                *self.thinned(median_line(data)), color=MEDIAN_COLOR, lw=1.4, zorder=2.6, gid="norm-median",
                path_effects=MEDIAN_EDGE,
            )  # fmt: skip
        cols, updates = self.columns(), self.view.updates
        rows, groups = np.nonzero(cols == 0)
        zeros = self.marks["zero-marks"]
        zeros.set_offsets(np.column_stack([updates[rows], np.zeros(len(rows))]))
        zeros.set_edgecolors(ZERO_COLOR if len(rows) else "none")
        if len(rows) and ax.get_yscale() == "log":  # the spine the zeros sit on below every value tick
            lo, hi = ax.get_ylim()
            lo = lo / (hi / lo) ** ZERO_ROOM
            ax.set_ylim(lo, hi)
            ticks = np.asarray(ax.get_yticks(), np.float64)
            keep = np.log(ticks / lo) >= 0.75 * ZERO_ROOM * np.log(hi / lo)
            ax.yaxis.set_major_locator(FixedLocator(ticks[keep].tolist()))
        bad = np.union1d(self.view.nonfinite_idx, np.flatnonzero(~np.isfinite(cols).all(axis=1)))
        self.marks["nonfinite-marks"].set_data(updates[bad], np.full(len(bad), 0.96))
        replicated = np.array([len(d) > 1 for d in self.view.geometry.replica_groups])
        marked = np.zeros(data.shape, bool)
        marked[self.view.mismatch_idx] = True
        rows, groups = np.nonzero(marked & replicated[None, :] & np.isfinite(data))
        self.marks["mismatch-marks"].set_data(updates[rows], data[rows, groups])
        self.show_index()
        ax.set_title(norm_change_text(data, updates), fontsize=style.TITLE_SIZE)

    def name_lines(self) -> None:  # each line named at its end (up to MAX_NAMED), the marks in a legend
        ax = self.ax
        engine = self.view.figure.get_layout_engine()
        if engine is not None and self.end_labels is None:
            engine.execute(self.view.figure)  # the axes' height the names are spread on
        for artist in [*(self.end_labels or []), *self.leader_lines, *([self.legend] if self.legend else [])]:
            artist.remove()
        self.end_labels, self.legend, self.leader_lines = None, None, []
        n = len(self.view.styles)
        handles = []
        if n <= MAX_NAMED:
            entries = self._end_entries()
            self.end_labels = label_ends(ax, entries, fontsize=style.NOTE_SIZE + 0.5, outside=True, gid_prefix="end:")
            self.leader_lines = lead_moved_ends(ax, self.end_labels, gid="end-leader")
        else:
            handles = [
                Line2D([], [], color=MEDIAN_COLOR, lw=1.4, label=f"median of {n} blocks"),
                Line2D([], [], color=BAND_COLOR, lw=6, alpha=0.5, label=f"range of {n} blocks"),
            ]
        said = {"nonfinite-marks": "NaN/Inf", "mismatch-marks": "replicas disagree"}
        handles += [_key(self.marks[g], text) for g, text in said.items() if len(self.marks[g].get_xdata())]
        if len(self.marks["zero-marks"].get_offsets()):
            handles.append(
                Line2D([], [], ls="none", marker="o", mfc="none", mec=ZERO_COLOR, mew=1.4, label="norm exactly 0")
            )
        if handles:
            self.legend = ax.legend(handles=handles, loc="best", fontsize=style.NOTE_SIZE, framealpha=0.85)

    def _end_entries(self) -> list[tuple[str, float, float, ColorType | None]]:  # (name, update, norm, chip colour)
        columns: list[tuple[str, np.ndarray, ColorType | None]] = [
            (p.label, self.data[:, g], c) for g, (p, (c, _, _)) in enumerate(zip(self.view.patches, self.view.styles))
        ]
        if self.median is not None:
            columns.append(("median", median_line(self.data), None))  # plain black, as its line
        out = []
        for name, col, ink in columns:
            ok = np.flatnonzero(np.isfinite(col))
            i = ok[-1] if len(ok) else -1
            out.append((name, float(self.view.updates[i]), float(col[i]) if len(ok) else np.nan, ink))
        return out

    def show_index(self) -> None:
        i, x = self.view.index, self.view.updates
        y = self.data[i]
        keep = np.flatnonzero(np.isfinite(y) & np.asarray([line.get_visible() for line in self.lines]))
        if i == len(x) - 1 and len(self.lines) <= MAX_NAMED:  # the ends, each named: no dots hiding them, each other
            keep = keep[:0]
        with np.errstate(divide="ignore", invalid="ignore"):  # the extremes (the title's largest, smallest) on top
            log = np.log(np.abs(y[keep]))
            keep = keep[np.argsort(np.abs(log - np.median(log)), kind="stable")] if len(keep) else keep
        line, dots = self.step_lines
        line.set_xdata([x[i], x[i]])
        dots.set_offsets(np.column_stack([np.full(len(keep), x[i]), y[keep]]) if len(keep) else np.empty((0, 2)))
        dots.set_facecolors([self.view.styles[g][0] for g in keep] or "none")

    def set_kind(self) -> None:  # the kind the view just loaded, in place
        self._load()
        for g, line in enumerate(self.lines):
            line.set_visible(True)
            line.set_data(*self.thinned(self.data[:, g]))
        self.ax.set_autoscaley_on(True)  # the names' fixed limits
        self.ax.relim()
        self.ax.autoscale_view(scalex=False)
        self._draw_lines()
        self.name_lines()
