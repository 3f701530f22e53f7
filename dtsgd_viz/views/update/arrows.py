"""How a close-up draws the arrows of one update so each one's direction reads: every
arrow's shaft is at least ``SHAFT_HEADS`` of its own head lengths long. An arrow too
short for that at the full shaft width is drawn thinner (its head shrinks with it); one
too short even at a shaft ``LEEWAY`` times thinner than ``THIN`` is drawn ``MIN_ARROW`` of the panel long
in its direction, ``factor`` times its true length (dashed, and its label says so). An
arrow folding back over the one before it is drawn thinner than that one, so both show.

Pure numpy, in units of the panel: quiver's ``width`` is a fraction of the axes' width,
and a close-up's axes are as wide as its zoom box (equal aspect), so a length of
``f * span`` in data is ``f`` of the axes' width in pixels::

    >>> import numpy as np
    >>> a, b = fit_arrows([("momentum", np.zeros(2), np.array([1.0, 0.0])),
    ...                    ("gradient", np.array([1.0, 0.0]), np.array([0.0, 0.01]))], 2.0)
    >>> a.factor, a.width == SHAFT, round(b.factor, 1), b.width == THIN, b.dashed
    (1.0, True, 36.0, True, True)
    >>> back = fit_arrows([("momentum", np.zeros(2), np.array([1.0, 0.0])),
    ...                    ("gradient", np.array([1.0, 0.0]), np.array([-0.1, 0.01]))], 2.0)[1]
    >>> round(float(np.hypot(*back.uv)) / 2.0, 3), round(back.covered / 2.0, 3)   # MIN_ARROW + the head
    (0.262, 0.082)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = [
    "DrawnArrow",
    "fit_arrows",
    "SHAFT",
    "HEAD_WIDTH",
    "HEAD_LENGTH",
    "HEAD_AXIS",
    "SHAFT_HEADS",
    "MIN_ARROW",
    "THIN",
]

SHAFT, HEAD_WIDTH, HEAD_LENGTH, HEAD_AXIS = 0.024, 3.0, 3.4, 3.0  # quiver's shape, in shaft widths
SHAFT_HEADS = 2.0  # a shaft at least this many of its head lengths: the direction reads
MIN_ARROW = 0.18  # panel spans: shorter, an arrow is drawn this long (at ``THIN``: 3 heads)
THIN = MIN_ARROW / ((1.0 + SHAFT_HEADS) * HEAD_LENGTH)  # the thinnest shaft of an arrow not folding back
LEEWAY = 1.3  # an arrow this much short of MIN_ARROW is drawn thinner still, not longer
FOLD = 120.0  # degrees: an arrow turning back more than this lies along the one before
FOLD_THIN = 0.55  # ... and is drawn this much thinner than it (the other shows round it)
FOLD_FLOOR = 0.45 * SHAFT  # but no thinner than this


@dataclasses.dataclass(frozen=True, eq=False)
class DrawnArrow:
    """One term as drawn: from its true ``tail`` along ``uv`` (drawn, ``factor`` times
    the true vector), ``width`` a fraction of the panel's width (quiver's ``width``)."""

    term: str
    tail: np.ndarray
    uv: np.ndarray
    factor: float
    width: float
    covered: float = 0.0  # data units of its shaft from the tail under the head before it
    shift: np.ndarray | None = None  # display pixels it is drawn aside (``update_fold``), or None

    @property
    def dashed(self) -> bool:
        return self.factor > 1.0

    @property
    def true_uv(self) -> np.ndarray:
        return self.uv / self.factor

    def head(self, span: float) -> float:
        """The head's length, in data units of a panel ``span`` wide."""
        return HEAD_LENGTH * self.width * span


def _angle(u: np.ndarray, v: np.ndarray) -> float:
    nu, nv = float(np.hypot(*u)), float(np.hypot(*v))
    if not (nu > 0 and nv > 0):
        return 0.0
    return float(np.degrees(np.arccos(np.clip(float(u @ v) / (nu * nv), -1.0, 1.0))))


def fit_arrows(
    chain: Iterable[tuple[str, ArrayLike, ArrayLike]], span: float, stretch: bool = True
) -> list[DrawnArrow]:
    """The arrows ``chain`` (``[(term, tail, uv)]``, ``update_geometry.arrow_chain``)
    as a close-up ``span`` wide (data units) draws them: each as wide as ``SHAFT`` or
    narrower so its shaft is ``SHAFT_HEADS`` heads long, never narrower than ``THIN / LEEWAY``
    (shorter than ``MIN_ARROW / LEEWAY`` of the span: drawn ``MIN_ARROW`` long at
    ``THIN``, dashed, ``factor`` > ``LEEWAY``); an arrow turning back over the one before (``FOLD``) at most
    ``FOLD_THIN`` of its width (not under ``FOLD_FLOOR``), and reaching ``MIN_ARROW``
    beyond that one's head, which covers its first part (``covered``). An arrow before
    the last goes down to ``THIN / 2`` before it is drawn longer: the next one starts at
    its true tip, which would then lie on its shaft. The tails stay the true ones, so the
    true vectors still add up tip to tail; zero-length and non-finite arrows are kept as they are.
    ``stretch=False``: every arrow at its true length (``factor`` 1), a short one only
    thinner (down to ``THIN / LEEWAY``; its head may then reach past its tail): panels
    that share one zoom compare lengths by eye."""
    out: list[DrawnArrow] = []
    span = float(span) if span and np.isfinite(span) else 1.0
    chain = list(chain)
    for k, (term, tail, uv) in enumerate(chain):
        tail, uv = np.asarray(tail, np.float64), np.asarray(uv, np.float64)
        n = float(np.hypot(*uv)) / span
        if not (np.isfinite(n) and n > 0):
            out.append(DrawnArrow(term, tail, uv, 1.0, SHAFT))
            continue
        fold = bool(out) and out[-1].factor == 1.0 and _angle(out[-1].uv, uv) > FOLD
        # folding back, its first part lies under the head before it: it reaches beyond that
        covered = HEAD_LENGTH * out[-1].width if fold else 0.0  # panel spans
        need = MIN_ARROW + covered
        width = min(SHAFT, (n - covered) / ((1.0 + SHAFT_HEADS) * HEAD_LENGTH))
        if k < len(chain) - 1 and width >= THIN / 2:  # not the last: drawn longer, the next arrow
            out.append(DrawnArrow(term, tail, uv, 1.0, float(width), covered * span))  # would start
            continue  # on its shaft
        if width < THIN / LEEWAY and not stretch:  # true length: as thin as it may be
            out.append(DrawnArrow(term, tail, uv, 1.0, THIN / LEEWAY, covered * span))
            continue
        if width < THIN / LEEWAY:  # too short for a shaft of two heads: drawn longer, at THIN
            out.append(DrawnArrow(term, tail, uv * (need / n), need / n, THIN, covered * span))
            continue
        if fold:
            width = max(FOLD_FLOOR, min(width, FOLD_THIN * out[-1].width))
        out.append(DrawnArrow(term, tail, uv, 1.0, float(width), covered * span))
    return out
