"""The axes of ``LiveMonitor``'s figure: the frame of each panel, its y scale (log while
every value is positive), the tick labels the layout was made for, and the loss axis'
ends snapped to labelled ticks (a log axis ending between ticks left its last
half-decade unlabelled).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..views.core import style
from ..views.core.log_ticks import use_log_ticks

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _frame(ax) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.set_xlabel("update", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # whole updates
    ax.set_xmargin(0)  # the lines end at the right edge, by their names
    ax.grid(True, which="major", color="#DDDDDD", lw=0.6)


def _scale_y(ax, values, zeros=False) -> None:
    """A log y axis while every finite value is positive (``zeros``: or 0, not drawn
    there: norms) and some are, else linear (a loss below 0, nothing to draw yet). Log
    ticks are plain text, 1-2-5 while the range is at most three decades (no mathtext:
    its exponents are smaller than ``style.NOTE_SIZE``)."""
    from matplotlib.ticker import LogLocator

    v = np.asarray(values, np.float64)
    v = v[np.isfinite(v)]
    log = len(v) and (v > 0).any() and ((v >= 0) if zeros else (v > 0)).all()
    if (ax.get_yscale() == "log") == bool(log):
        return
    if not log:
        ax.set_yscale("linear")
        return

    class _Locator(LogLocator):
        def tick_values(self, vmin, vmax):
            lo, hi = sorted((max(vmin, 1e-300), max(vmax, 1e-300)))
            self._subs = np.array([1.0, 2.0, 5.0] if hi / lo <= 1e3 else [1.0])
            return super().tick_values(vmin, vmax)

    ax.set_yscale("log", nonpositive="mask")
    ax.yaxis.set_major_locator(_Locator(subs=(1.0, 2.0, 5.0)))
    use_log_ticks(ax.yaxis)  # the one log tick format (views.core.log_ticks)


def snap_log_limits(ax: Axes, reach: float = 0.2) -> None:
    """On a log axis, put each y limit on the 1-2-5 tick nearest the data between the
    data's end and ``reach`` decades beyond the limit (in the margin, or just past
    it), so both ends of the axis are labelled; else leave it."""
    if ax.get_yscale() != "log":
        return
    lo, hi = sorted(ax.get_ylim())
    if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo < hi):
        return
    ticks = np.array(
        [
            m * 10.0**e
            for e in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 2)
            for m in (1.0, 2.0, 5.0)
        ]
    )
    d_lo, d_hi = sorted(ax.dataLim.intervaly)
    if not (np.isfinite(d_lo) and 0 < d_lo <= d_hi):
        d_lo, d_hi = lo, hi
    # the tick nearest the data in the margin, else one just beyond the limit
    below = ticks[(ticks <= d_lo * (1 + 1e-9)) & (ticks >= lo * 10**-reach)]
    above = ticks[(ticks >= d_hi * (1 - 1e-9)) & (ticks <= hi * 10**reach)]
    new_lo = below.max() if len(below) else lo
    new_hi = above.min() if len(above) else hi
    ax.set_ylim(new_lo, new_hi, auto=True)  # the next poll's autoscale again


def _tick_texts(ax) -> tuple:
    """The y axis' scale and the tick labels it would show now (no drawing)."""
    lo, hi = sorted(ax.get_ylim())
    locs = [t for t in ax.yaxis.get_major_locator()() if lo <= t <= hi]
    return ax.get_yscale(), tuple(ax.yaxis.get_major_formatter().format_ticks(locs))
