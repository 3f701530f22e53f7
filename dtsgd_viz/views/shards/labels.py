"""The names on the norm panel of ``ShardsView``, and its band: each block's line named at
its right end, outside the axes, the names at least a text height apart
(``direct_labels.READABLE_GAP``) with a leader line from the line's end to a name that
had to move (``direct_labels.leaders``).

When five or more blocks' lines nearly coincide (``_shard_stats.band_of``), eight
tangled lines say less than their summary: the panel draws one grey band (min..max over
the blocks at each update) with its median line, and keeps as lines in their block
colours only the highest and the lowest block at the shown update (the two the figure's
title names) and the one whose norm falls least when the norm panel's title names it,
each named with its role ("CPU:7 highest at update 10", "CPU:1 falls least"); the band is
named "median of 8". A line of them alternating every update is drawn thin over a
light ribbon of its range (``pair_envelope``), the ribbon named on a swatch of its
colour under the line's name ("CPU:7 swings every ~4 updates": up and down once in about 4).
Lines that fan out (blocks that differ) stay drawn one by one.

``NormLabels`` is an object of the norm panel (``lines.NormPanel``); it reads the panel's
``line_ax``, ``data`` and ``lines`` and the view's ``styles``, ``patches`` and ``updates``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from ..core import style
from ..mesh.layout_colors import label_ink
from .dots import (  # noqa: F401
    DOTS_NOTE,
    LINE_WIDTH,
    RIBBON_LINE_WIDTH,
    ZIGZAG_WIDTH,
    bounce_text,
    column_envelope,
    dot_size,
    dots_note,
    pair_envelope,
    spaced_dots,
    swing_text,
    zigzags,
)
from .stats import MANY_BLOCKS, _end_values, _factors, band_of, least_changed

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.text import Text
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from .lines import NormPanel
    from .view import ShardsView

BAND_COLOR = "#9A9A9A"  # mid grey: the blocks' range (no block colour is grey)
BAND_ALPHA = 0.3  # the band and a ribbon light: the lines over them read
MEDIAN_COLOR = "#555555"  # dark grey: their median
LABEL_X = 1.05  # axes fraction: the names, right of the leader lines (default)
LABEL_PAD = 4.0  # points between the axes' right spine and the names
NAME_SIZE = style.NOTE_SIZE + 0.5
STEP_COLOR = "#222222"  # near black: the shown update (no block colour is)
STEP_LABEL_SHIFT = 5.0  # points from the shown update's line to its label's box: past a dot


def _roles(data, index=-1, updates=None) -> dict:
    """The blocks drawn as lines over a band: the highest and the lowest at the shown
    update (row ``index`` of ``data``; the blocks the figure's title names), and the
    one whose norm falls least when the title of the norm panel names it
    (``least_changed``); each with the words that say why ("highest at update 10": at
    update 10, the shown one, when it is not the last).

    >>> t = np.linspace(0, 1, 30)[:, None]
    >>> _roles(np.exp(-t * [2.0, 1.0, 8.0]) * [1.0, 2.0, 1.5])
    {1: 'highest, falls least', 2: 'lowest'}
    >>> _roles(np.exp(-t * [2.0, 1.0, 8.0]) * [1.0, 2.0, 1.5], 0, np.arange(1, 31))
    {0: 'lowest at update 1', 1: 'highest at update 1, falls least'}
    """
    data = np.asarray(data, np.float64)
    n = data.shape[0]
    u = np.arange(1, n + 1) if updates is None else np.asarray(updates)
    i = int(index) % n
    row = data[i]
    ok = np.flatnonzero(np.isfinite(row) & (row > 0))
    if len(ok) < 2:
        return {}
    at = "" if i == n - 1 else f" at update {int(u[i])}"
    roles = {int(ok[np.argmax(row[ok])]): [f"highest{at}"]}
    roles.setdefault(int(ok[np.argmin(row[ok])]), []).append(f"lowest{at}")
    g = least_changed(data, u)
    if g is not None:
        grows = _factors(data, u)[2] > 1
        roles.setdefault(g, []).append("grows least" if grows else "falls least")
    return {g: ", ".join(w) for g, w in sorted(roles.items())}


def _spread_of(data):
    """``(lo, median, hi)`` over the blocks at each update (NaN where none is finite)."""
    import warnings

    data = np.asarray(data, np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN updates: NaN
        return np.nanmin(data, 1), np.nanmedian(data, 1), np.nanmax(data, 1)


def step_label(ax: Axes, x: float, updates: Sequence[float] | np.ndarray, text: str | None = None) -> Text:
    """The shown update's name at the top of its line (``gid`` ``step-label``), inside
    the axes, on the side with room; ``place_step_label`` moves it."""
    from matplotlib.transforms import blended_transform_factory

    label = ax.text(
        x,
        0.97,
        "",
        transform=blended_transform_factory(ax.transData, ax.transAxes),
        va="top",
        fontsize=style.NOTE_SIZE,
        color=STEP_COLOR,
        zorder=7,
        gid="step-label",
        bbox=dict(fc="white", ec="none", alpha=0.85, pad=1.0),
    )
    place_step_label(label, x, updates)
    return label


def place_step_label(
    label: Text, x: float, updates: Sequence[float] | np.ndarray, data: ArrayLike | None = None
) -> None:
    """Beside the shown update's line, on the side with room (left past 60% of the
    run); with ``data`` (updates x lines, on ``label.axes``), at the top or the bottom
    of the axes, whichever the lines leave freer over the label's width (``free_end``)."""
    log = label.axes is not None and label.axes.get_xscale() == "log"
    lo, hi, at = np.log10([updates[0], updates[-1], x]) if log else (float(updates[0]), float(updates[-1]), float(x))
    right = hi > lo and (at - lo) / (hi - lo) > 0.6
    label.set_x(x)
    label.set_horizontalalignment("right" if right else "left")
    if label.axes is not None:  # the box clear of the dots on the line (never over one)
        from matplotlib.transforms import ScaledTranslation, blended_transform_factory

        ax0, fig = label.axes, label.axes.figure
        shift = (-1 if right else 1) * STEP_LABEL_SHIFT / 72
        label.set_transform(
            blended_transform_factory(ax0.transData, ax0.transAxes) + ScaledTranslation(shift, 0, fig.dpi_scale_trans)
        )
    note = getattr(label, "dots_note", DOTS_NOTE)
    text = f"update {int(x)}{note}"
    ax = cast("Axes | None", label.axes)  # an Axes: the label is drawn on one
    room = (
        ax.get_position().width * cast("Figure", ax.figure).get_figwidth() * 72 if ax is not None else np.inf
    )  # the label's own width (about 0.55 em a character)
    if len(text) * 0.55 * float(label.get_fontsize()) > 0.3 * room:  # over lines: two short ones
        text = f"update {int(x)} \n{note.strip()}"  # "update k ": as on one line
    pad = " " if right else ""
    label.set_text("\n".join(f"{t.rstrip()}{pad}" if right else f" {t}" for t in text.split("\n")))
    label.set_multialignment("right" if right else "left")
    if data is not None and ax is not None:
        wide = max(len(t) for t in text.split("\n")) * 0.55 * float(label.get_fontsize()) / room
        top = free_end(ax, np.asarray(updates), data, x, right, width=max(0.22, wide)) == "top"
        if top and _marks_near_top(ax, updates, x, right, max(0.22, wide)):
            top = False  # the NaN/Inf marks along the top: the label at the bottom
        label.set_y(0.97 if top else 0.03)
        label.set_verticalalignment("top" if top else "bottom")


def _marks_near_top(ax, updates, x, left, width) -> bool:
    """Whether NaN/Inf marks (along the top of ``ax``) stand where a label beside update
    ``x`` at the top would (``width`` of the x range, left of it when ``left``)."""
    marks = [ln for ln in ax.lines if str(ln.get_gid()).startswith(("nonfinite-marks", "nonfinite-stat"))]
    xs = np.concatenate([np.asarray(ln.get_xdata(), np.float64) for ln in marks] + [np.zeros(0)])
    if not len(xs):
        return False
    log = ax.get_xscale() == "log"
    f = (lambda v: np.log10(np.maximum(v, 1e-300))) if log else (lambda v: np.asarray(v, float))
    x0, x1 = f(np.asarray(ax.get_xlim(), np.float64))
    reach = width * (x1 - x0)
    at = float(f(np.array([x], np.float64))[0])
    u = f(xs)
    return bool(np.any((u >= at - reach) & (u <= at)) if left else np.any((u >= at) & (u <= at + reach)))


def free_end(
    ax: Axes, updates: np.ndarray, data: ArrayLike, x: float, left: bool, width: float = 0.22, depth: float = 0.2
) -> str:
    """``"top"`` or ``"bottom"``: where a label beside update ``x`` (over ``width`` of
    the x range, left of it when ``left``) stays off the lines of ``data`` (updates x
    lines): the top while the lines leave ``depth`` (axes fraction) free there, else
    the end they leave more room at."""
    log = ax.get_xscale() == "log"  # a log x axis: widths are of log10(update)
    u, x = (np.log10(np.maximum(updates, 1e-300)), np.log10(x)) if log else (updates, x)
    x0, x1 = np.log10(ax.get_xlim()) if log else ax.get_xlim()
    reach = width * (x1 - x0)
    near = (u >= x - reach) & (u <= x) if left else (u >= x) & (u <= x + reach)
    y = np.asarray(data, np.float64)[near].ravel()
    y = y[np.isfinite(y)]
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        y = y[y > 0]
        f = (np.log10(y) - np.log10(lo)) / (np.log10(hi) - np.log10(lo))
    else:
        f = (y - lo) / (hi - lo)
    if not len(f):
        return "top"
    top, bottom = 1 - f.max(), f.min()  # the room the lines leave at each end
    return "top" if top >= depth or top >= bottom else "bottom"


def cycle_text(styles: Iterable[tuple[str, str, object]]) -> str | None:
    """The legend title explaining the style rounds, None while every block has its own
    colour: past ``len(BLOCK_COLORS)`` blocks the colours repeat, each further round of
    blocks drawn with the next line style here and the next hatch on its label chip."""
    p = len(style.BLOCK_COLORS)
    hatches = sorted({h for _, h, _ in styles if h})
    if not hatches:
        return None
    shown = ", ".join(h.replace("\\\\", "\\") for h in hatches)
    return (
        f"{p} colours, repeated: each further\nround of {p} blocks has its own line"
        f"\nstyle here, hatching ({shown})\non its label chip"
    )


class NormLabels:
    """The norm panel's end labels and band (see the module docstring): an object of
    the ``NormPanel`` (``norm``), whose lines and data it reads; ``view``: the
    ``ShardsView``, for its public state. ``band_blocks``: ``{block: role}`` of the
    blocks drawn as lines over the band (None: every line drawn); ``bouncing``: those
    drawn over a ribbon; ``end_labels``/``leader_lines``: the names at the lines' ends."""

    def __init__(self, view: ShardsView, norm: NormPanel):
        self.view, self.norm = view, norm
        self.band_artists: list = []
        self.band_blocks: dict | None = None
        self.bouncing: list = []
        self.end_labels: list | None = None
        self.leader_lines: list = []

    def set_band(self) -> None:
        """Band or lines for the norm panel's current data, in place (again after
        ``set_kind``): the artists of the last band are removed first. A stats recording
        of more than ``MANY_BLOCKS`` blocks has a band on each of its panels, the same
        blocks drawn as lines over each."""
        ax = self.norm.line_ax
        assert ax is not None  # after the norm panel drew its lines
        for artist in self.band_artists:
            artist.remove()
        self.band_artists, self.band_blocks, bounce = [], None, False
        data = self.norm.data[ax]
        band = band_of(data) if not self.view.stats_only or data.shape[1] > MANY_BLOCKS else None
        roles = _roles(data, self.view.index, self.view.updates) if band is not None else None
        if roles:
            self.band_artists = self._band_on(ax, band, "norm")
            self.band_blocks = roles  # block -> what sets it apart
            bounce = any(zigzags(data[:, g]) for g in roles)
            self.band_artists[1].set_linewidth(1.3 if bounce else 1.8)
        self.bouncing = []  # band lines alternating every update: drawn as a ribbon
        for g, line in enumerate(self.norm.lines):
            line.set_visible(self.band_blocks is None or g in self.band_blocks)
            line.set_alpha(None)
            if not hasattr(line, "halo"):
                line.halo = line.get_path_effects()
            # over the band, no white edge (it would cut the band); one by one: the halo
            line.set_path_effects([] if self.band_blocks is not None else line.halo)
            line.set_zorder(2 if self.band_blocks is None else 2.6)  # over the median
            if self.band_blocks is not None and g in self.band_blocks:
                line.set_linewidth(ZIGZAG_WIDTH if bounce else LINE_WIDTH)
                if zigzags(data[:, g]):  # its range over 2 updates, the line faint
                    x, lo2, hi2 = self._envelope(ax, *pair_envelope(data[:, g]))
                    ok = np.isfinite(lo2) & np.isfinite(hi2)
                    self.band_artists.append(
                        ax.fill_between(
                            x,
                            lo2,
                            hi2,
                            where=ok,
                            color=line.get_color(),
                            alpha=BAND_ALPHA,
                            lw=0,
                            zorder=1.8,
                            gid=f"norm-ribbon-{g}",
                        )
                    )
                    self.band_artists[-1]._set_in_autoscale(False)
                    line.set_linewidth(RIBBON_LINE_WIDTH)
                    line.set_alpha(0.7)
                    self.bouncing.append(g)
        panels = [ax]
        for label, other in self.norm.stat_panels.axes.items():
            if other is ax:
                continue
            panels.append(other)  # the other statistics: the same blocks over a band
            if self.band_blocks is not None:
                self.band_artists += self._band_on(other, _spread_of(self.norm.data[other]), label.replace(" ", "-"))
            for g, line in enumerate(self.norm.stat_panels.lines[label]):
                line.set_visible(self.band_blocks is None or g in self.band_blocks)
        for panel in panels:
            # the y range of what is drawn: hidden lines' dips left empty decades below
            panel.relim(visible_only=True)
            panel.autoscale_view(scalex=False)
            self.set_dots(panel)
        for t in self.end_labels or []:
            t.remove()
        self.end_labels = None

    def _envelope(self, ax, lo, hi):
        """``(x, lo, hi)`` of a band thinned to ``ax``'s pixel columns: each column's lowest
        ``lo`` and highest ``hi`` at its first and last update (``column_envelope``)."""
        from .dots import pixel_columns
        from .ticks import log_x

        x = np.asarray(self.view.updates, np.float64)
        split = np.log10(x) if log_x(self.view.updates) else x
        idx, lo, hi = column_envelope(split, lo, hi, pixel_columns(ax))
        return self.view.updates[idx], lo, hi

    def _band_on(self, ax, band, name):
        """The grey band (``lo..hi``, thinned to pixel columns) and its median line on
        ``ax``; the band sets no limits of its own (a hidden block's one-update dips)."""
        lo, med, hi = band
        x, lo, hi = self._envelope(ax, lo, hi)
        ok = np.isfinite(lo) & np.isfinite(hi)
        gid = "norm-band" if name == "norm" else f"band-{name}"
        fill = ax.fill_between(x, lo, hi, where=ok, color=BAND_COLOR, alpha=BAND_ALPHA, lw=0, zorder=1.5, gid=gid)
        fill._set_in_autoscale(False)
        (median,) = ax.plot(
            *self.norm.thinned(ax, med),
            color=MEDIAN_COLOR,
            lw=1.8,
            zorder=2.5,
            gid="norm-median" if name == "norm" else f"median-{name}",
        )
        return [fill, median]

    def dot_values(self, ax: Axes) -> np.ndarray:
        """The dots' y at the shown update on ``ax``: every block's norm there, but for
        the blocks whose line is not drawn (a band stands for them: no dot without its
        line)."""
        y = np.array(self.norm.data[ax][self.view.index], np.float64)
        drawn = {line.get_gid(): line.get_visible() for line in ax.lines}
        y[[g for g in range(len(y)) if not drawn.get(f"norm-{g}", True)]] = np.nan
        # a dot for every line but those lying on a kept one's (within a line width)
        return spaced_dots(
            ax, self.view.updates[self.view.index], y, self.view.figure.dpi, self._line_widths(ax, len(y))
        )

    def _line_widths(self, ax, n):
        """The drawn width (points) of each block's norm line on ``ax``."""
        widths = {line.get_gid(): line.get_linewidth() for line in ax.lines}
        return [widths.get(f"norm-{g}", LINE_WIDTH) for g in range(n)]

    def set_dots(self, ax: Axes) -> None:
        for line in self.norm.step_lines:
            if line.get_gid() == "step-dots" and line.axes is ax:
                y = self.dot_values(ax)
                line.set_data(np.full(len(y), self.view.updates[self.view.index]), y)
                # crowded dots smaller, each whole: none dropped for being near another
                line.set_markersize(dot_size(ax, self.view.updates[self.view.index], y, self.view.figure.dpi))
                self.norm.color_dots(ax, y)
                drawn = np.array(self.norm.data[ax][self.view.index], np.float64)
                band = self.band_blocks
                shown = {ln.get_gid(): ln.get_visible() for ln in ax.lines}
                drawn[[g for g in range(len(drawn)) if not shown.get(f"norm-{g}", True)]] = np.nan
                note = dots_note(drawn, y, [p.label for p in self.view.patches])
                if band is not None and note == DOTS_NOTE and np.isfinite(y).sum() == 2:
                    note = " (dots: highest, lowest)"  # the two lines over the band
                for label in self.norm.step_lines:  # the label names what the dots are
                    if label.get_gid() == "step-label" and label.axes is ax:
                        label.dots_note = note
                        place_step_label(
                            label, self.view.updates[self.view.index], self.view.updates, self.norm.data[ax]
                        )

    def refresh_band(self) -> None:
        """After the shown update moved: the band's lines are the highest and lowest
        blocks there, again (their names too)."""
        if self.band_blocks is not None:
            self.set_band()
            self.place_end_labels()
            self.norm.set_coast_note()  # the ribbon's note: of the lines now
            self.norm.coincide.mark_coincident()  # the lines over the band changed

    def _label_entries(self):
        """``(text, colour, y at the right end)`` of each name to write; block names in
        ``end_labels`` order (hidden ones have y None), then the band's: its median line
        and the grey band itself ("range of 8 blocks", on a grey swatch)."""
        data = self.norm.data[self.norm.line_ax]
        ends = _end_values(data, -1)
        band = self.band_blocks
        out = []
        for g, (p, (color, _, _)) in enumerate(zip(self.view.patches, self.view.styles)):
            if band is None:
                out.append((p.label, color, ends[g]))
            else:
                role = band.get(g)
                out.append((f"{p.label} {role}" if role else p.label, color, ends[g] if role else None))
        if band is not None:
            med = self.band_artists[1].get_ydata()
            finite = np.asarray(med)[np.isfinite(med)]
            end = finite[-1] if len(finite) else None
            n = len(self.view.patches)
            out.append((f"median of {n}", MEDIAN_COLOR, end))
            # just under the median's name (spread keeps the order of equal heights)
            out.append((f"range of {n} blocks", BAND_COLOR, None if end is None else end * (1 - 1e-6)))
            for g in self.bouncing:  # its ribbon, named under its name
                name = self.view.patches[g].label
                out.append(
                    (
                        swing_text(name, self.norm.lines[g].get_ydata()),
                        self.view.styles[g][0],
                        None if not np.isfinite(ends[g]) else ends[g] * (1 - 1e-6),
                    )
                )
        return out

    def _end_label(self, ax, g, text, color, trans):
        """One name right of the norm panel: bold, in its line's colour made dark enough
        to read on white (``label_ink``); the band's range on a swatch of the band."""
        n = len(self.view.patches)
        gid = (
            f"end-label-{g}"
            if g < n
            else "end-label-median"
            if g == n
            else "end-label-range"
            if g == n + 1
            else f"end-label-swing-{g - n - 2}"
        )
        if gid == "end-label-range" or gid.startswith("end-label-swing"):  # on a swatch
            return ax.text(
                LABEL_X,
                0.5,
                text,
                transform=trans,
                ha="left",
                va="center",
                fontsize=NAME_SIZE,
                color="#333333",
                clip_on=False,
                gid=gid,
                bbox=dict(
                    fc=color,
                    alpha=BAND_ALPHA,  # as the band shows
                    ec="none",
                    pad=1.5,
                ),
            )
        return ax.text(
            LABEL_X,
            0.5,
            text,
            transform=trans,
            ha="left",
            va="center",
            fontsize=NAME_SIZE,
            color=label_ink(color),
            fontweight="bold",
            clip_on=False,
            gid=gid,
        )

    def place_end_labels(self) -> None:
        """Name each drawn line at its right end, outside the axes (``LABEL_PAD`` right
        of the spine), the names pushed apart (``direct_labels.spread``) at least a text
        height, a straight leader from the line's last point to each name that moved
        (``end_leaders``); again after the layout or the data changed."""
        from matplotlib.transforms import blended_transform_factory

        from ..text.direct import READABLE_GAP, axes_height_points, spread

        ax = self.norm.line_ax
        if ax is None or not self.norm.direct():
            return
        entries = self._label_entries()
        if not self.end_labels:
            trans = blended_transform_factory(ax.transAxes, ax.transAxes)
            self.end_labels = [self._end_label(ax, g, text, color, trans) for g, (text, color, _) in enumerate(entries)]
        for line in self.leader_lines:
            line.remove()
        lo, hi = ax.get_ylim()
        log = ax.get_yscale() == "log"
        fracs, shown = [], []
        for g, (_, _, y) in enumerate(entries):
            if y is None or not np.isfinite(y) or (log and y <= 0):
                continue
            f = (np.log10(y) - np.log10(lo)) / (np.log10(hi) - np.log10(lo)) if log else (y - lo) / (hi - lo)
            fracs.append(float(np.clip(f, 0.0, 1.0)))
            shown.append(g)
        gap = READABLE_GAP * NAME_SIZE / axes_height_points(ax)
        placed = dict(zip(shown, spread(fracs, gap, 0.02, 0.98)))
        width = max(1.0, ax.get_window_extent().width * 72.0 / ax.figure.dpi)
        label_x = 1.0 + LABEL_PAD / width
        for g, text in enumerate(self.end_labels):
            text.set_visible(g in placed)
            text.set_x(label_x)
            if g in placed:
                text.set_y(placed[g])
        # from the lines' last update, not the frame (in axes fraction, on either scale)
        at = ax.transData.transform((self.view.updates[-1], ax.get_ylim()[0]))
        start = float(np.clip(ax.transAxes.inverted().transform(at)[0], 0.0, 1.0))
        ranges = {
            g for g in shown if self.end_labels[g].get_gid().startswith(("end-label-range", "end-label-swing"))
        }  # swatches: no leader
        self.leader_lines = end_leaders(
            ax,
            [f if g not in ranges else None for f, g in zip(fracs, shown)],
            [placed[g] for g in shown],
            [entries[g][1] for g in shown],
            start,
            label_x - 1.0 / width,
            0.25 * gap,
        )


def end_leaders(
    ax: Axes,
    ends: Sequence[float | None],
    placed: Sequence[float | None],
    colors: Iterable[ColorType],
    x0: float,
    x1: float,
    min_shift: float,
    gid: str = "end-leader",
) -> list[Line2D]:
    """Straight leaders from each line's last point (``ends``: axes-fraction heights at
    ``x0``, the last update) to its name (``placed``: heights at ``x1``), in the line's
    colour, where the name moved more than ``min_shift``: diagonal from the last point,
    never a flat run past the last update that would read as more data. ``None`` ends
    are skipped. Returns the ``Line2D``s.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> [l.get_xydata().tolist() for l in end_leaders(ax, [0.5, 0.5], [0.4, 0.5], "rb",
    ...                                               0.98, 1.02, 0.01)]
    [[[0.98, 0.5], [1.02, 0.4]]]
    """
    out = []
    for k, (y0, y1, c) in enumerate(zip(ends, placed, colors)):
        if y0 is None or y1 is None or abs(y1 - y0) <= min_shift:
            continue
        (line,) = ax.plot(
            [x0, x1], [y0, y1], color=c, lw=0.9, transform=ax.transAxes, clip_on=False, zorder=6, gid=f"{gid}-{k}"
        )
        line.set_in_layout(False)
        out.append(line)
    return out
