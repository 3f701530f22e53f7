"""The axes of ``ShardsView``'s norm panels: a log y axis labelled in 1-2-5 steps in one
number format (a labelled tick near the data's bottom), and whole-number update ticks on
a linear or (long runs) log x axis. Pure functions of an axes; ``_shard_lines`` calls them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.log_ticks import log_tick_texts, plain_ticks, use_log_ticks  # noqa: F401  (log_tick_texts, plain_ticks: shared)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike


def _log_locator():
    from matplotlib.ticker import LogLocator, MaxNLocator

    class _Locator(LogLocator):  # 1-2-5 over up to 3 decades (and room), decades beyond
        def tick_values(self, vmin, vmax):
            lo, hi = sorted((max(vmin, 1e-300), max(vmax, 1e-300)))
            axes = getattr(self.axis, "axes", None)
            room = (
                axes.bbox.height / (1.7 * style.TICK_SIZE * axes.figure.dpi / 72) if axes is not None else 99.0
            )  # tick labels the axis has room for
            few = 3 * np.log10(hi / lo) + 1 <= room
            best, numticks = np.array([]), self.numticks
            tries = [
                ([1.0, 2.0, 5.0] if hi / lo <= 1e3 and few else [1.0], numticks),
                ([1.0], max(3, int(room))),  # every decade, as many as there is room
                ([1.0, 3.0], numticks),
                ([1.0, 2.0, 5.0], numticks),
                ([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0], numticks),
            ]
            for subs, self.numticks in tries:
                self._subs = np.array(subs)
                ticks = np.asarray(super().tick_values(vmin, vmax))  # an array already (the stub: a Sequence)
                inside = np.sum((ticks >= lo) & (ticks <= hi))
                if inside > room:  # labels that would overprint each other: not these
                    continue
                if inside > np.sum((best >= lo) & (best <= hi)):
                    best = ticks
                if inside >= 3:
                    break
            if not best.size:  # no room for even these: the decades
                self._subs, self.numticks = np.array([1.0]), numticks
                best = np.asarray(super().tick_values(vmin, vmax))
            self.numticks = numticks
            best = self._near_bottom(best, lo, hi, room)
            if np.sum((best >= lo) & (best <= hi)) < 3 and hi / lo < 10:
                # under a decade: evenly spaced plain numbers, at least 3
                return MaxNLocator(nbins=4, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
            return best

        def _near_bottom(self, best, lo, hi, room):
            """``best``, or denser 1-2-3-5 ticks when its lowest label stands over
            ``BOTTOM_TICK`` of the axis above the bottom (the data there unlabelled)."""
            numticks, subs = self.numticks, self._subs
            for denser in ([1.0, 2.0, 3.0, 5.0], [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0]):
                if _bottom_gap(best, lo, hi) <= BOTTOM_TICK or hi / lo > 1e3:
                    break
                self._subs = np.array(denser)
                ticks = np.asarray(super().tick_values(lo, hi))
                if np.sum((ticks >= lo) & (ticks <= hi)) <= room and _bottom_gap(ticks, lo, hi) < _bottom_gap(
                    best, lo, hi
                ):
                    best = ticks
            self.numticks, self._subs = numticks, subs
            return best

    return _Locator(subs=(1.0, 2.0, 5.0))


BOTTOM_TICK = 0.25
"""A log axis has a labelled tick within this fraction of its height above its bottom."""


def _bottom_gap(ticks, lo, hi) -> float:
    """The fraction of a log axis ``lo..hi`` under its lowest tick inside (1: none).

    >>> round(_bottom_gap(np.array([5e-4, 1e-3, 2e-3]), 2.2e-4, 2.1e-3), 2)
    0.36
    """
    t = np.asarray(ticks, np.float64)
    t = t[(t >= lo * (1 - 1e-9)) & (t <= hi * (1 + 1e-9))]
    if not len(t) or hi <= lo:
        return 1.0
    return float(np.log10(t.min() / lo) / np.log10(hi / lo))


def log_y(ax: Axes) -> None:
    """A log y axis labelled 0.02, 0.05, 0.1, ... (1-2-5 steps while the range is at most
    three decades, decades beyond; at least three labels, plain numbers under a
    decade), in one format (``log_tick_texts``), without the crowded minor labels."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(_log_locator())
    use_log_ticks(ax.yaxis)


def update_ticks(ax: Axes, updates: ArrayLike) -> None:
    """Whole-number update ticks, few enough that 4-digit numbers never run together:
    each update while at most 5 are recorded, else about 5 round numbers."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    x = np.asarray(updates)
    ax.xaxis.set_major_locator(
        FixedLocator(x)  # pyright: ignore[reportArgumentType]  # stub: a Sequence; an array works
        if len(x) <= 5
        else MaxNLocator(nbins=6, integer=True, steps=[1, 2, 2.5, 5, 10], min_n_ticks=3)
    )


LOG_X_SPAN = 300
"""A run whose last drawn update is this many times its first (a stats run of 2000
updates from update 4) has its update axis on a log scale, labelled so."""


def log_x(updates: ArrayLike) -> bool:
    """Whether the update axis of ``updates`` is on a log scale (``LOG_X_SPAN``).

    >>> log_x(np.arange(4, 2001, 4)), log_x(np.arange(1, 151))
    (True, False)
    """
    x = np.asarray(updates)
    return len(x) > 40 and x[0] > 0 and x[-1] / x[0] >= LOG_X_SPAN


def log_update_ticks(ax: Axes, updates: Sequence[float] | np.ndarray) -> None:
    """Round update ticks on a log axis, 1-2-5 or 1-3 per decade (at most 7), plain."""
    from matplotlib.ticker import FixedLocator, NullFormatter, StrMethodFormatter

    lo, hi = float(updates[0]), float(updates[-1])
    for subs in ((1, 2, 5), (1, 3), (1,)):
        ticks = [m * 10.0**e for e in range(int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi))) + 1) for m in subs]
        ticks = [t for t in ticks if lo <= t <= hi]
        if len(ticks) <= 7:
            break
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(StrMethodFormatter("{x:.0f}"))
    ax.xaxis.set_minor_formatter(NullFormatter())
