"""The stats-mode panels of ``ShardsView``: a ``Recorder(mode="stats")`` recording keeps
each block's L2 norm, mean and max |x| but not its values, so the norm axes become three
stacked panels, one line per block in each, over the updates.

``StatPanels`` is an object of the norm panel (``lines.NormPanel``) for a stats
recording; it reads the view's state (``stats``, ``geometry``, ``updates``,
``nonfinite_idx``) and holds ``axes``, ``lines`` and ``marks`` (the view's
``stat_axes``, ``stat_lines`` and ``stat_marks``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from .geometry import LOG_RANGE
from .tensor_panel import NONFINITE_COLOR

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from numpy.typing import ArrayLike

    from .lines import NormPanel
    from .view import ShardsView

STATS_ONLY_TEXT = (
    "values not recorded: Recorder(mode='stats') keeps each block's norm, mean and max |x|; mode='full' the values"
)
STATS = ("L2 norm", "mean", "max |x|")  # the columns of Recording.shard_stats


BAND_MIN_BLOCKS = 5
"""From this many blocks, lines that nearly coincide are drawn as one band (``band_of``);
up to 4 lines stay readable one by one."""
MANY_BLOCKS = 16
"""Past this many blocks the lines are drawn as one band whatever their spread: 64 lines,
however apart, tangle into a mesh no legend can untangle."""
BAND_SPREAD = 0.35
"""Blocks are banded when, at the median update, their norms span at most this fraction
of the panel's log range (8 tangled lines: ~0.2; lines fanning out over decades: ~0.5)."""


ENVELOPE = 2
"""A block's fall factor is read off its upper envelope: its largest norm within this
many updates either side, so an oscillation's dips (heavy-ball's bounces) do not count."""
APART = 1.5
"""The blocks' fall factors differ by more than this much before one is named as the
block that "falls least" (heavy-ball's blocks, sharing one rate, never are)."""


def _logs(data):
    data = np.asarray(data, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isfinite(data) & (data > 0), np.log10(data), np.nan)


def median_line(data: ArrayLike) -> np.ndarray:
    """The median block's norm at each update (``data``: updates x blocks; the median
    of the log norms, NaN where no block has a positive finite one)."""
    logs = _logs(data)
    out = np.full(logs.shape[0], np.nan)  # all-NaN updates: NaN
    some = np.isfinite(logs).any(1)
    out[some] = 10 ** np.nanmedian(logs[some], 1)
    return out


def fall_factors(data: ArrayLike, updates: ArrayLike | None = None) -> np.ndarray:
    """Each block's fall factor over the run: a straight line fitted to the log of its
    upper envelope (``ENVELOPE``; runs under ``10 * ENVELOPE`` updates: its norms) against
    the update, read from the first update to the last (< 1: it fell); NaN for a block with fewer than two positive
    finite norms.

    >>> u = np.arange(1, 11)
    >>> np.round(fall_factors(np.exp(-0.5 * u[:, None] * [1.0, 2.0]), u), 4)
    array([0.0111, 0.0001])
    """
    logs = _logs(data)
    n = logs.shape[0]
    u = np.arange(n, dtype=np.float64) if updates is None else np.asarray(updates, np.float64)
    out = np.full(logs.shape[1], np.nan)
    w = ENVELOPE if n >= 10 * ENVELOPE else 0
    import warnings

    from numpy.lib.stride_tricks import sliding_window_view

    for g in range(logs.shape[1]):
        col = logs[:, g]  # finite or NaN (``_logs``)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN window: NaN
            env = np.nanmax(sliding_window_view(np.pad(col, w, constant_values=np.nan), 2 * w + 1), axis=1)
        ok = np.isfinite(env)
        if ok.sum() >= 2 and np.ptp(u[ok]) > 0:
            slope = np.polyfit(u[ok], env[ok], 1)[0]
            with np.errstate(over="ignore", under="ignore"):  # a diverged block: inf
                out[g] = 10 ** (slope * (u[-1] - u[0]))
    return out


def _factors(data, updates=None):
    """The blocks' fall factors (``fall_factors``; ``ok``: where finite) and the median
    block's first-to-last factor ``f`` (``median_line``)."""
    factors = fall_factors(data, updates)
    ok = np.isfinite(factors)
    med = median_line(data)
    fin = med[np.isfinite(med)]
    f = float(fin[-1] / fin[0]) if len(fin) >= 2 else 1.0
    return ok, factors[ok], f


HUMP = 3.0
"""The median line "peaks" when it rises over this much before it falls over 1.5x (a
first bounce, under 3x, is no story of its own)."""


def _hump(med):
    """``(peak index, peak/first, peak/last)`` when the median line rises over ``HUMP``
    to an update inside the run and then falls over 1.5x, else None."""
    ok = np.flatnonzero(np.isfinite(med))
    if len(ok) < 3:
        return None
    p = int(ok[np.argmax(med[ok])])
    up, down = med[p] / med[ok[0]], med[p] / med[ok[-1]]
    if ok[0] < p < ok[-1] and up > HUMP and down > 1.5:
        return p, float(up), float(down)
    return None


def slow_fast(data: ArrayLike, updates: ArrayLike | None = None) -> tuple[int, int] | None:
    """The columns of ``data`` (updates x blocks) of the block whose norm changed least
    and most in the direction of the median block's change ("falls least", "falls
    most"; ``fall_factors``), or None when fewer than two blocks have a factor.

    >>> slow_fast(np.array([[1.0, 1.0, 1.0], [0.1, 0.5, 0.01]]))
    (1, 2)
    """
    factors = fall_factors(data, updates)
    cols = np.flatnonzero(np.isfinite(factors))
    if len(cols) < 2:
        return None
    f = _factors(data, updates)[2]
    lo, hi = int(cols[np.argmin(factors[cols])]), int(cols[np.argmax(factors[cols])])
    return (hi, lo) if f < 1 else (lo, hi)


def least_changed(data: ArrayLike, updates: ArrayLike | None = None) -> int | None:
    """The block the norm panel names: the one whose norm falls least (grows least, when
    the median grows), only while the blocks' fall factors differ by more than ``APART``
    and the median line is no hump; else None."""
    ok, factors, f = _factors(data, updates)
    if len(factors) < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):  # factors underflowed to 0
        apart = factors.max() / factors.min()
    if not apart > APART:
        return None
    if _hump(median_line(data)) is not None or 1 / 1.5 <= f <= 1.5:
        return None
    pair = slow_fast(data, updates)
    assert pair is not None  # two blocks or more have a factor (checked above)
    return pair[0]


def band_of(data: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(lo, median, hi)`` over the blocks at each update when the blocks' norm lines
    (``data``: updates x blocks, positive, NaN where not drawable) nearly coincide on a
    log axis (``BAND_MIN_BLOCKS``, ``BAND_SPREAD``) or are more than ``MANY_BLOCKS``,
    else None (draw every line).

    >>> t = np.linspace(0, 2, 50)[:, None]
    >>> band_of(np.exp(-t) * (1 + 0.05 * np.arange(8))) is not None   # 8 lines, one shape
    True
    >>> band_of(np.exp(-t * np.arange(1, 9))) is None                 # fanning out
    True
    """
    data = np.asarray(data, np.float64)
    if data.ndim != 2 or data.shape[1] < BAND_MIN_BLOCKS or data.shape[0] < 2:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(np.isfinite(data) & (data > 0), np.log10(data), np.nan)
    rows = np.sum(np.isfinite(logs), 1) >= 2
    if rows.sum() < 2:
        return None
    kept = logs[rows]
    span = np.nanmax(kept, 1) - np.nanmin(kept, 1)
    full = float(np.nanmax(kept) - np.nanmin(kept))
    if data.shape[1] <= MANY_BLOCKS and (full <= 0 or np.median(span) > BAND_SPREAD * full):
        return None
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN updates: NaN, no note
        return (10 ** np.nanmin(logs, 1), 10 ** np.nanmedian(logs, 1), 10 ** np.nanmax(logs, 1))


def times_text(k: float) -> str:
    """A factor ``k >= 1`` as the titles say it: ``6.3x``, ``400x``, ``5 decades``.

    >>> times_text(6.31), times_text(412.0), times_text(2e5)
    ('6.3x', '410x', '5 decades')
    """
    if k < 10:
        return f"{k:.2g}x"
    if k < 1e4:
        return f"{float(f'{k:.2g}'):.0f}x"
    return f"{np.log10(k):.0f} decades"


def spread_text(norms: ArrayLike, names: Sequence[str]) -> str:
    """The finding of one update's blocks (``norms``: one L2 norm per block, in the
    order of ``names``): how far apart they are, and (over 1.5x apart) which block is
    largest and which smallest, in that order.

    >>> spread_text([0.3, 0.05, 0.1], ["CPU:0", "CPU:1", "CPU:2"])
    'block norms span 6x (CPU:0 to CPU:1)'
    >>> spread_text([1.0, 1.2], ["a", "b"]), spread_text([2.0], ["CPU:0-7"])
    ('block norms within 1.5x of each other', 'one block, held whole by every device')
    >>> spread_text([1.0, 1.2, np.inf, np.nan], ["a", "b", "c", "d"])
    'c, d NaN/Inf; the other 2 block norms within 1.5x of each other'

    Blocks whose norm is NaN/Inf or 0 are named after the spread of the others.
    """
    norms = np.asarray(norms, np.float64).ravel()
    if len(norms) == 1:
        return "one block, held whole by every device"
    ok = np.isfinite(norms) & (norms > 0)
    if not ok.any():
        return "every block's norm is 0" if np.all(norms == 0) else "no block's norm is finite"
    if ok.sum() < 2:
        return f"only {names[int(np.flatnonzero(ok)[0])]}'s norm is finite and above 0"
    cols = np.flatnonzero(ok)
    hi, lo = int(cols[np.argmax(norms[ok])]), int(cols[np.argmin(norms[ok])])
    k = norms[hi] / norms[lo]
    head = (
        "block norms within 1.5x of each other"
        if k < 1.5
        else f"block norms span {times_text(k)} ({names[hi]} to {names[lo]})"
    )
    left = [
        (what, np.flatnonzero(where))
        for what, where in (("NaN/Inf", ~np.isfinite(norms)), ("0", norms == 0))
        if where.any()
    ]
    if not left:
        return head
    # the blocks the spread leaves out, named: "within 1.5x" of the finite ones alone
    # said nothing of the others
    return "; ".join(f"{_few(names, g)} {what}" for what, g in left) + f"; the other {int(ok.sum())} {head}"


def _few(names, cols, most: int = 3) -> str:
    """``"CPU:0, CPU:1"`` or ``"5 blocks"`` past ``most`` of them."""
    cols = list(cols)
    return ", ".join(names[g] for g in cols) if len(cols) <= most else f"{len(cols)} blocks"


def change_text(data: ArrayLike, updates: ArrayLike, names: Sequence[str]) -> str:
    """The norm panel's title, its finding over the run, of the median block's norm
    (``median_line``) from the first update to the last: "median block norm falls 32x
    over 2000 updates", or, when it rises over ``HUMP`` and falls again over 1.5x, "median block norm
    rises 81x to a peak at update 15, then falls 3.4x"; and the block whose norm falls least
    (``least_changed``), when the blocks differ: by its fitted trend (``fall_factors``),
    which the title says, as a first-to-last reading can differ.

    >>> d = np.array([[1.0, 1.0], [0.01, 0.1]])
    >>> change_text(d, [1, 2000], ["CPU:0", "CPU:1"])
    'median block norm falls 32x over 2000 updates; CPU:1 falls least (fitted trend)'
    >>> change_text(np.array([[1.0], [9.0], [3.0]]), [1, 2, 3], ["CPU:0"])
    'block norm rises 9x to a peak at update 2, then falls 3x'

    A block named after the ";" whose own factor does not reach 1.5x "does not fall".
    """
    med = median_line(data)
    fin = med[np.isfinite(med)]
    u = np.asarray(updates)
    if len(u) < 2 or len(fin) < 2:
        return "each block's L2 norm over the updates"
    one = np.asarray(data).shape[1] == 1
    what = "block norm" if one else "median block norm"
    hump = _hump(med)
    if hump is not None:
        p, up, down = hump
        return f"{what} rises {times_text(up)} to a peak at update {int(u[p])}, then falls {times_text(down)}"
    f = float(fin[-1] / fin[0])
    span = f"over {int(u[-1])} updates" if u[0] <= max(1, u[1] - u[0]) else f"over updates {int(u[0])}–{int(u[-1])}"
    if 1 / 1.5 <= f <= 1.5:
        head = f"{what} stays within 1.5x {span}"
    else:
        head = f"{what} {'grows' if f > 1 else 'falls'} {times_text(f if f > 1 else 1 / f)} {span}"
    g = least_changed(data, updates)
    if g is not None:
        own = fall_factors(data, updates)[g]
        head += (
            f"; {names[g]} {'falls' if f < 1 else 'grows'} least (fitted trend)"
            if (own < 1 / 1.5 if f < 1 else own > 1.5)
            else f"; {names[g]} {'does not fall' if f < 1 else 'does not grow'}"
        )
    return head


def _end_values(data, end):
    """Each column's first (``end=0``) or last (-1) finite value."""
    data = np.asarray(data, np.float64)
    out = np.full(data.shape[1], np.nan)
    for g in range(data.shape[1]):
        col = data[:, g][np.isfinite(data[:, g])]
        if len(col):
            out[g] = col[end]
    return out


class StatPanels:
    """A stats recording's panels (see the module docstring): an object of the norm
    panel (``norm``, a ``lines.NormPanel``), drawn inside its axes with its line
    machinery; ``view``: the ``ShardsView``, for its public state. ``axes``, ``lines``
    and ``marks`` are keyed by statistic (``STATS``); empty for a full recording."""

    def __init__(self, view: ShardsView, norm: NormPanel):
        self.view, self.norm = view, norm
        self.axes: dict = {}
        self.lines: dict = {}
        self.marks: dict = {}
        self.mean_linthresh: float | None = None

    def draw(self) -> tuple[list[Line2D], Axes]:
        """The norm axes, hidden, holding one inset panel per statistic (log y but for
        the mean), sharing the update axis. Returns ``(lines, axes)`` of the norm
        statistic's panel: the norm panel's ``lines`` and ``line_ax``."""
        from matplotlib.transforms import blended_transform_factory

        ax = self.norm.ax
        assert ax is not None  # the norm axes the panels are drawn in
        ax.set_axis_off()
        # the norm panel the tallest: its log axis spans the most decades
        heights, gap, top, axes = (0.4, 0.22, 0.25), 0.065, 1.0, []
        for h in heights:
            axes.append(ax.inset_axes((0, top - h, 1, h)))
            top -= h + gap
        for a in axes[1:]:
            a.sharex(axes[0])
        for a in axes[:-1]:
            a.tick_params(labelbottom=False)
        for k, (label, a) in enumerate(zip(STATS, axes)):
            self.axes[label] = a
            self.lines[label] = self.norm.lines_on(a, self._columns(k), k != 1)
            if k != 1:  # a log panel cannot show 0
                self.norm.add_zero_marks(a, self.norm.zeros(k))
            (self.marks[label],) = a.plot(
                [],
                [],
                transform=blended_transform_factory(a.transData, a.transAxes),
                ls="none",
                marker="X",
                color=NONFINITE_COLOR,
                ms=7,
                zorder=7,
                clip_on=False,
                gid=f"nonfinite-stat-{k}",
            )
            # outside the layout: empty, an unclipped line sits at pixel (0, 0) and
            # constrained layout collapsed every panel to fit it
            self.marks[label].set_in_layout(False)
            self.set_marks(k)
            a.set_ylabel(label, fontsize=style.TICK_SIZE)
            a.tick_params(labelsize=style.TICK_SIZE)
        self._scale_mean()
        axes[-1].set_xlabel("optimizer update", fontsize=style.LABEL_SIZE)
        return self.lines[STATS[0]], axes[0]

    def set_kind(self) -> None:
        """The panels' lines and marks for the kind just loaded, in place."""
        for k, label in enumerate(STATS):
            self.norm.set_lines(self.axes[label], self.lines[label], self._columns(k))
            if k != 1:
                self.norm.set_zero_marks(self.axes[label], self.norm.zeros(k))
            self.set_marks(k)
        self._scale_mean()

    def _columns(self, k):
        """Column ``k`` of the stored stats, one column per replica group (NaN where not
        finite; on log panels also where <= 0)."""
        assert self.view.stats is not None  # a stats recording's
        cols = np.stack([self.view.stats[:, d[0], k] for d in self.view.geometry.replica_groups], 1)
        cols = np.asarray(cols, np.float64)
        with np.errstate(invalid="ignore"):
            keep = np.isfinite(cols) & ((cols > 0) if k != 1 else True)
        return np.where(keep, cols, np.nan)

    def set_marks(self, k: int) -> None:
        """An X at the top of statistic ``k``'s panel at each update where a block's
        value of it is not finite: NaN/Inf in the block, or a float32 sum of squares
        past 3.4e38 (|x| beyond ~1.8e19). The lines end there; the marks say why."""
        from .dots import mark_rows

        assert self.view.stats is not None  # a stats recording's
        raw = np.stack([self.view.stats[:, d[0], k] for d in self.view.geometry.replica_groups], 1)
        bad = np.nonzero(~np.isfinite(np.asarray(raw, np.float64)).all(axis=1))[0]
        if k == 0:  # the variable's own NaN/Inf marks are there already
            bad = np.setdiff1d(bad, self.view.nonfinite_idx)
        marked = np.zeros(len(self.view.updates), bool)
        marked[bad] = True  # one X per mark width however many updates
        bad = mark_rows(self.norm.update_px(self.axes[STATS[k]]), marked)[0]
        self.marks[STATS[k]].set_data(self.view.updates[bad], np.full(len(bad), 0.93))

    def _scale_mean(self):
        """The mean panel on a symlog axis (sign kept, |mean| on a log scale past the
        linear band around 0) once its largest finite |mean| is more than
        ``LOG_RANGE ** 2`` times the median: a
        diverging run's mean grows by 30 decades and on a linear axis showed only the
        spike of the last updates. Otherwise linear, where a mean near 0 reads best."""
        from matplotlib.ticker import AutoLocator, FuncFormatter, NullLocator, ScalarFormatter

        ax, data = self.axes[STATS[1]], np.abs(self.norm.data[self.axes[STATS[1]]])
        mags = data[np.isfinite(data) & (data > 0)]
        # grown, not merely near 0 at times: the largest beyond 10^4 times the median
        if len(mags) and mags.max() / np.median(mags) > LOG_RANGE**2:
            self.mean_linthresh = float(np.quantile(mags, 0.05))
            ax.set_yscale("symlog", linthresh=self.mean_linthresh)
            lo = int(np.ceil(np.log10(self.mean_linthresh)))
            hi = int(np.floor(np.log10(mags.max())))
            # 0 and two decades a side: more crowd the thin linear band around 0
            up = sorted({10.0**e for e in (hi, (hi + lo + 1) // 2)})
            ax.set_yticks([-v for v in up[::-1]] + [0.0] + up)
            ax.yaxis.set_major_formatter(
                FuncFormatter(
                    lambda v, _: (
                        "0" if v == 0 else f"{v:.0e}".replace("e+0", "e").replace("e+", "e").replace("e-0", "e-")
                    )
                )
            )
            ax.yaxis.set_minor_locator(NullLocator())
            ax.set_ylabel("mean (symlog)", fontsize=style.TICK_SIZE)
        else:
            self.mean_linthresh = None
            ax.set_yscale("linear")
            ax.yaxis.set_major_locator(AutoLocator())
            ax.yaxis.set_major_formatter(ScalarFormatter())
            ax.set_ylabel("mean", fontsize=style.TICK_SIZE)
