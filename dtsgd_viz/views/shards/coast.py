"""A block whose velocity only decays: once a block's gradient is down at float32
round-off, momentum's update leaves ``v <- momentum * v``, so its norm falls by exactly
the momentum factor at every update, a straight line on the log axis unlike the others.
``coasting`` finds it in the norm lines (pure numpy); ``coast_note`` says it under the
norm panel of ``ShardsView``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..mesh.layout_colors import label_ink

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Annotation
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

COAST_TOL = 1e-4
"""log10 distance from the momentum factor per update that still counts as "exactly"."""
COAST_MIN = 8
"""A block coasts when its norm fell by the momentum factor at each of at least this many
updates, to the last one."""


def coasting(data: ArrayLike, updates: ArrayLike, momentum: float) -> tuple[int, int] | None:
    """``(block, first update)`` of the block whose norm falls by exactly ``momentum`` per
    update from that update to the last (the longest such run, at least ``COAST_MIN``
    updates), or None.

    >>> d = np.column_stack([np.linspace(1, 2, 20), 0.9 ** np.arange(20.0)])
    >>> d[:5, 1] = [1.0, 3.0, 0.5, 2.0, 1.0]
    >>> coasting(d, np.arange(1, 21), 0.9)
    (1, 6)
    """
    if not momentum or not 0 < momentum < 1:
        return None
    d = np.asarray(data, np.float64)
    u = np.asarray(updates, np.float64)
    if d.ndim != 2 or len(u) <= COAST_MIN:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        step = np.log10(d[1:] / d[:-1]) - (np.diff(u) * np.log10(momentum))[:, None]
    exact = np.abs(step) < COAST_TOL
    best = None
    for g in range(d.shape[1]):
        run = 0
        while run < len(exact) and exact[len(exact) - 1 - run, g]:
            run += 1
        if run >= COAST_MIN and (best is None or run > best[1]):
            best = (g, run)
    if best is None:
        return None
    g, run = best
    return g, int(u[len(u) - 1 - run])


def coast_text(name: str, first: int, momentum: float) -> str:
    """The note's words.

    >>> print(coast_text("CPU:7", 47, 0.9))
    CPU:7 from update 47: gradient at float32 round-off,
    velocity shrinks only by the momentum, ×0.9 per update
    """
    return (
        f"{name} from update {first}: gradient at float32 round-off,\n"
        f"velocity shrinks only by the momentum, ×{momentum:g} per update"
    )


def coast_note(
    ax: Axes,
    data: ArrayLike,
    updates: ArrayLike,
    momentum: float,
    names: Sequence[str],
    colors: Sequence[ColorType],
    kind: str,
) -> Annotation | None:
    """The note under ``ax``'s x label naming the coasting block (``coasting``) of a
    velocity panel, in its line's colour (``label_ink``); None when no block coasts."""
    found = coasting(data, updates, momentum) if kind == "velocity" else None
    if found is None:
        return None
    g, first = found
    return note_under(ax, coast_text(names[g], first, momentum), colors[g])


def note_under(ax: Axes, text: str, color: ColorType) -> Annotation:
    """A note under ``ax``'s x label (``gid`` ``coast-note``), centred, in ``color`` made
    dark enough to read (``label_ink``)."""
    return ax.annotate(
        text,
        (0.5, 0.0),
        xycoords=ax.xaxis.label,
        xytext=(0, -2),
        textcoords="offset points",
        ha="center",
        va="top",
        fontsize=style.NOTE_SIZE,
        color=label_ink(color),
        annotation_clip=False,
        gid="coast-note",
    )
