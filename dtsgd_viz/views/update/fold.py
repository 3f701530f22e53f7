"""An arrow folding straight back along the one before it (Nesterov's −lr·g over
μ·v_new once the run has all but stopped) would lie on that arrow's shaft, and the two
could not be told apart: ``fold_shift`` finds how far sideways (display pixels) to draw
it, ``draw`` draws it there (quiver's offsets moved by a ``ScaledTranslation``, so the
recorded tail and vector stay the true ones) with a short connector from the true tip
of the arrow before it to its drawn tail, so the chain still reads tip to tail.

The shift is perpendicular to the arrow before, to the side the folding arrow already
leans to, by that arrow's shaft width + ``CLEAR`` pixels: the two shafts are then at
least their half widths + 1 pixel apart over their whole overlap. The folding arrow's
drawn tip ends level with its true one along the arrow; the "after" dot stays put::

    >>> import numpy as np
    >>> px = lambda p: np.asarray(p, np.float64) * 100.0   # data -> pixels
    >>> s = fold_shift(px((0, 0)), px((1, 0)), 10.0, px((1, 0)), px((-0.5, 0.0)), 5.0)
    >>> (s.round(1) + 0.0).tolist()
    [0.0, 13.0]
    >>> fold_shift(px((0, 0)), px((1, 0)), 10.0, px((1, 0)), px((0.0, 0.5)), 5.0) is None
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.transforms import Transform
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from .arrows import DrawnArrow

__all__ = ["fold_shift", "shifts", "draw", "data_shift", "FOLD_BACK", "CLEAR"]

FOLD_BACK = 150.0  # degrees between the two arrows: more, the second folds back along the first
CLEAR = 3.0  # pixels beyond the first arrow's shaft width the second is moved sideways
NEAR = 3.0  # pixels: shafts closer than their half widths + this would overlap


def fold_shift(
    tail1: ArrayLike,
    tip1: ArrayLike,
    width1: float,
    tail2: ArrayLike,
    uv2: ArrayLike,
    width2: float,
    flip: float = 1.0,
) -> np.ndarray | None:
    """The sideways shift (pixels, ``[dx, dy]``) the second arrow (drawn from ``tail2``
    along ``uv2``, shaft ``width2`` pixels) needs to stay clear of the first (``tail1``
    to ``tip1``, ``width1`` pixels), or None: it turns back more than ``FOLD_BACK`` and
    its shaft comes within their half widths + ``NEAR`` pixels of the first's. Moved to
    the side it leans to (``flip`` -1: the other side, further by its lean)."""
    tail1, tip1, tail2, uv2 = (np.asarray(v, np.float64) for v in (tail1, tip1, tail2, uv2))
    d1 = tip1 - tail1
    n1, n2 = float(np.hypot(*d1)), float(np.hypot(*uv2))
    if not (np.isfinite(n1) and np.isfinite(n2) and n1 > 0 and n2 > 0):
        return None
    u1, u2 = d1 / n1, uv2 / n2
    if float(np.degrees(np.arccos(np.clip(u1 @ u2, -1.0, 1.0)))) <= FOLD_BACK:
        return None
    perp = np.array([-u1[1], u1[0]])
    pts = tail2 + np.linspace(0.0, 1.0, 60)[:, None] * uv2  # along the second shaft
    along = (pts - tail1) @ u1
    over = (along > 0) & (along < n1)
    if not over.any():
        return None
    across = (pts - tail1) @ perp
    if float(np.abs(across[over]).max()) >= 0.5 * (width1 + width2) + NEAR:
        return None  # it leans away enough by itself
    side = (1.0 if float(np.sum(across[over])) >= 0 else -1.0) * flip
    back = max(0.0, float(np.max(-side * across[over])))  # how far it leans to the other side
    return side * (width1 + CLEAR + back) * perp


def shifts(ax: Axes, arrows: Sequence[DrawnArrow], flip: float = 1.0) -> list[np.ndarray | None]:
    """``[shift or None]`` (pixels), one per ``update_arrows.DrawnArrow`` of ``arrows``
    as ``ax`` draws them: an arrow folding back along the one before it is moved aside
    (``fold_shift``, to ``flip``'s side); the first arrow never is."""
    to_px = ax.transData.transform
    px_w = ax.bbox.width
    out: list[np.ndarray | None] = [None]
    for a, b in zip(arrows, arrows[1:]):
        out.append(
            fold_shift(
                to_px(a.tail),
                to_px(a.tail + a.uv),
                a.width * px_w,
                to_px(b.tail),
                to_px(b.tail + b.uv) - to_px(b.tail),
                b.width * px_w,
                flip,
            )
        )
    return out[: len(arrows)]


def data_shift(ax: Axes, point: ArrayLike, shift: np.ndarray | None) -> np.ndarray:
    """``shift`` (pixels) at ``point`` as a vector in plot coordinates (the axes as
    laid out now): where a label's anchor on the moved arrow goes."""
    if shift is None:
        return np.zeros(2)
    p = ax.transData.transform(np.asarray(point, np.float64))
    return ax.transData.inverted().transform(p + shift) - np.asarray(point, np.float64)


def transform(ax: Axes, shift: Sequence[float] | np.ndarray) -> Transform:
    """``ax.transData`` moved by ``shift`` pixels (kept in pixels when the figure's
    layout changes)."""
    from matplotlib.transforms import ScaledTranslation

    dpi = ax.figure.dpi
    return ax.transData + ScaledTranslation(shift[0] / dpi, shift[1] / dpi, ax.figure.dpi_scale_trans)


def draw(
    ax: Axes, arrow: DrawnArrow, shift: Sequence[float] | np.ndarray, color: ColorType, zorder: float, gid: str
) -> Line2D:
    """The connector from ``arrow``'s true tail (the tip of the arrow before it) to its
    drawn tail ``shift`` pixels aside: a line as thick as the arrow's shaft in the arrow's
    colour, under the arrow before (its head shows whole). Returns the line."""
    from matplotlib.transforms import ScaledTranslation

    dpi = ax.figure.dpi
    at = ScaledTranslation(float(arrow.tail[0]), float(arrow.tail[1]), ax.transData)  # pyright: ignore[reportArgumentType]  # stubs: scale_trans affine only; any Transform works
    lw = max(1.2, arrow.width * ax.bbox.width * 72.0 / dpi)  # points
    (line,) = ax.plot(
        [0.0, shift[0] / dpi],
        [0.0, shift[1] / dpi],
        color=color,
        lw=lw,
        solid_capstyle="butt",
        transform=ax.figure.dpi_scale_trans + at,
        zorder=zorder,
        gid=gid,
    )
    return line
