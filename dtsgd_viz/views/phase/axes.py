"""The phase maps' frames and colour bars."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.log_ticks import use_log_ticks
from .geometry import TIE_WITHIN, log_ticks

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from .plot import PhaseView

PHASE_NOTE_SIZE = 9.5  # the phase figures' notes and colour-bar labels
PHASE_LEGEND_SIZE = 10.5  # their legends under the maps: read at a glance, as the axis labels


def frame(ax: Axes, lr_e: Sequence[float] | np.ndarray, mu_e: Sequence[float] | np.ndarray, title: str) -> None:
    """A map's frame: the log learning-rate axis (``log_ticks``), the momentum axis, labels and ``title``."""
    from matplotlib.ticker import FixedLocator, LogLocator

    ax.set_xscale("log")
    major, minor = log_ticks(lr_e[0], lr_e[-1])
    ax.xaxis.set_major_locator(FixedLocator(major))
    ax.xaxis.set_minor_locator(FixedLocator(minor) if minor else LogLocator(subs=np.arange(2, 10)))  # pyright: ignore[reportArgumentType]  # stub: subs a Sequence; an array works
    use_log_ticks(ax.xaxis, minor=bool(minor))
    ax.set_xlim(lr_e[0], lr_e[-1])
    ax.set_ylim(mu_e[0], mu_e[-1])
    ax.set_xlabel("learning rate (log scale)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("momentum μ", fontsize=style.LABEL_SIZE)
    ax.set_title(title, fontsize=style.TITLE_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE, which="both")


def add_colorbars(
    view: PhaseView,
    fig: Figure | SubFigure,
    step_axes: Sequence[Axes] | None,
    ratio_ax: Axes | None,
) -> None:
    """The shared steps colour bar and the ratio colour bar (its ends say who wins)."""
    tol = view.grids["momentum"].tol
    if step_axes:  # None: a ratio map alone (PhaseDiagram)
        cbar = step_axes[0].figure.colorbar(view.meshes["nesterov"], ax=step_axes, pad=0.015, fraction=0.05)
        cbar.set_label(f"updates to within tol {tol:g}", fontsize=PHASE_NOTE_SIZE)
        cbar.ax.tick_params(labelsize=style.TICK_SIZE)
    if ratio_ax is None:
        return
    look: dict[str, Any] = dict(location="right", pad=0.02, fraction=0.08, extend=view.ratio_extend)
    rbar = ratio_ax.figure.colorbar(view.meshes["ratio"], ax=ratio_ax, **look)
    ticks = ratio_ticks(view.meshes["ratio"].norm.vmax)
    rbar.set_ticks(ticks, labels=[speedup_text(t) for t in ticks])  # pyright: ignore[reportArgumentType]  # stub: a Sequence
    rbar.ax.tick_params(labelsize=style.TICK_SIZE)


def ratio_ticks(vmax: float) -> list[float]:
    """The ratio colour bar's ticks (log2 units) over ``-vmax..vmax``: halves up to 2x, wholes past it.

    >>> ratio_ticks(1), ratio_ticks(2)
    ([-1.0, -0.5, 0.0, 0.5, 1.0], [-2.0, -1.0, 0.0, 1.0, 2.0])
    """
    return [float(t) for t in np.arange(-vmax, vmax + 0.25, 0.5 if vmax <= 1 else 1.0)]


def speedup_text(t: float) -> str:
    """A ratio tick as the colour bar reads it: ``Nesterov 2×``, ``tie ±10%``, ``momentum 1.41×``."""
    if t == 0:
        return f"tie ±{TIE_WITHIN:.0%}"
    return f"{'Nesterov' if t < 0 else 'momentum'} {2 ** abs(t):.3g}×"
