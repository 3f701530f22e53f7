"""The one tick format of every log axis: plain numbers while every tick in view lies in 1e-4..1e5, else all as
``2e-5`` (mathtext's ``10⁻¹`` draws its exponent below ``NOTE_SIZE``); never ``0.01`` next to ``1e-5``.

    >>> log_tick_texts([0.001, 0.01, 0.1]), log_tick_texts([1e-5, 1e-3, 0.1])
    (['0.001', '0.01', '0.1'], ['1e-5', '1e-3', '1e-1'])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.ticker import Formatter, NullFormatter

if TYPE_CHECKING:
    from matplotlib.axis import Axis


def plain_ticks(values: Iterable[float]) -> bool:
    """Whether log ticks at ``values`` read as plain numbers: all in 1e-4..1e5."""
    return all(1e-4 * (1 - 1e-9) <= abs(float(x)) < 1e5 for x in values if x)


def log_tick_texts(values: Iterable[float], plain: bool | None = None) -> list[str]:
    """The labels of log ticks at ``values`` in the one format; ``plain`` forces plain numbers or ``2e-5``."""
    v = [float(x) for x in values]
    if plain is None:
        plain = plain_ticks(v)
    if plain:
        return [np.format_float_positional(x, precision=6, unique=True, trim="-").rstrip(".") for x in v]
    return [f"{x:.0e}".replace("e-0", "e-").replace("e+0", "e").replace("e+", "e") for x in v]


class LogTickFormatter(Formatter):
    """Labels a log axis's ticks with ``log_tick_texts``, in the format of the ticks in view."""

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        lo, hi = sorted(self.axis.get_view_interval()) if self.axis is not None else (0.0, np.inf)
        inside = [v for v in values if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
        return log_tick_texts(values, plain=plain_ticks(inside or values))

    def __call__(self, x: float, pos: Any = None) -> str:
        """The label of one tick at ``x`` (the cursor readout)."""
        return log_tick_texts([x])[0]


def use_log_ticks(axis: Axis, minor: bool = False) -> None:
    """Labels ``axis`` (``ax.yaxis``, already on a log scale) in the one format, its minor ticks too with ``minor``."""
    axis.set_major_formatter(LogTickFormatter())
    axis.set_minor_formatter(LogTickFormatter() if minor else NullFormatter())
