"""One update in pure numpy: its terms, their tip-to-tail arrows on the plane, a close-up's box:

>>> import numpy as np
>>> from dtsgd_viz.views.paths.geometry import identity_plane
>>> u = UpdateTerms(1, 0, np.zeros(2), (("momentum", np.array([1.0, 0.0])),
...                                     ("gradient", np.array([0.0, 2.0]))), np.array([1.0, 2.0]))
>>> [(k, tail.tolist(), uv.tolist()) for k, tail, uv in arrow_chain(u, identity_plane())]
[('momentum', [0.0, 0.0], [1.0, 0.0]), ('gradient', [1.0, 0.0], [0.0, 2.0])]
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ..paths.geometry import Box, Plane, project

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...recording.recording import Recording

TERM_SHORT = {"momentum": "μ·v_prev", "lookahead": "μ·v_new", "gradient": "−lr·g"}


@dataclasses.dataclass(frozen=True, eq=False)
class UpdateTerms:
    """``terms`` as ``(TERM_SHORT key, vector)`` in drawing order, ``total`` the recorded ``p_new - p``,
    ``iterate`` Nesterov's ``p - mu*v_prev`` (else None)."""

    step: int
    index: int
    origin: np.ndarray
    terms: tuple[tuple[str, np.ndarray], ...]
    total: np.ndarray
    iterate: np.ndarray | None = None


def why_no_arrows(recording: Recording, index: int | None = None) -> str | None:
    """Why the update at ``index`` (None: every update) can't be split into arrows, or None."""
    missing = [k for k in ("param", "grad", "velocity") if k not in recording.kinds]
    if missing:
        return f"no update arrows: kinds {', '.join(missing)} not recorded"
    steps = np.asarray(recording.steps)
    for i in [index] if index is not None else range(len(steps)):
        prev = int(steps[i - 1]) if i else 0
        if int(steps[i]) != prev + 1:
            return (
                f"no update arrows: update {int(steps[i]) - 1}, just before update {int(steps[i])}, "
                f"is not recorded (every {int(steps[i]) - prev}); record every update to see them"
            )
    return None


def decompose_update(recording: Recording, name: str, index: int) -> UpdateTerms:
    """The update at ``index`` as tf-keras' SGD terms, in float64; ``ValueError`` if ``why_no_arrows`` objects."""
    why = why_no_arrows(recording, index)
    if why:
        raise ValueError(f"{why[0].upper()}{why[1:]}, or pass arrows=False.")
    path = recording.path(name).astype(np.float64)
    flat = lambda a: np.asarray(a, np.float64).reshape(-1)  # noqa: E731
    g = flat(recording.global_values(name, "grad")[index])
    velocity = recording.global_values(name, "velocity")
    v_new = flat(velocity[index])
    v_prev = np.zeros_like(v_new) if index == 0 else flat(velocity[index - 1])
    hp = recording.hyperparameters
    lr, mu = float(hp.learning_rate[index]), float(hp.momentum)
    with np.errstate(invalid="ignore", over="ignore"):
        gradient = ("gradient", -lr * g)
        if mu == 0.0:
            terms = (gradient,)
        elif hp.nesterov:
            terms = (("lookahead", mu * v_new), gradient)
        else:
            terms = (("momentum", mu * v_prev), gradient)
        origin = path[index].reshape(-1)
        total = path[index + 1].reshape(-1) - origin
        iterate = origin - mu * v_prev if hp.nesterov and mu != 0.0 else None
    return UpdateTerms(int(recording.steps[index]), index, origin, terms, total, iterate)


def arrow_chain(update: UpdateTerms, plane: Plane) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``[(key, tail_xy, uv)]``: the terms as arrows in plot coordinates, tip to tail."""
    tail = project(update.origin, plane)
    out = []
    with np.errstate(invalid="ignore", over="ignore"):
        for key, vec in update.terms:
            uv = vec @ plane.basis.T
            out.append((key, tail, uv))
            tail = tail + uv
    return out


def nesterov_points(update: UpdateTerms, plane: Plane) -> tuple[np.ndarray, np.ndarray] | None:
    """``(iterate_xy, lookahead_xy)`` in plot coordinates for a Nesterov update, else None."""
    if update.iterate is None:
        return None
    return project(update.iterate, plane), project(update.origin, plane)


def zoom_box(points: ArrayLike, main_box: Box, pad: float = 0.3, min_frac: float = 0.02) -> Box | None:
    """A square box round the finite ``points`` (or None), padded by ``pad``, at least ``min_frac`` of ``main_box``."""
    pts = np.asarray(points, np.float64).reshape(-1, 2)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if not len(pts):
        return None
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    span = max(float((hi - lo).max()) * (1 + 2 * pad), min_frac * box_span(main_box), 1e-12)
    c = (lo + hi) / 2
    return ((float(c[0] - span / 2), float(c[0] + span / 2)), (float(c[1] - span / 2), float(c[1] + span / 2)))


def zoom_factor(main_box: Box, box: Box) -> float:
    """How many times closer a panel over ``box`` is than one over ``main_box``.

    >>> zoom_factor(((0, 8), (0, 4)), ((1, 1.5), (2, 2.5)))
    16.0
    """
    span = box_span(box)
    return box_span(main_box) / span if span > 0 else float("inf")


def box_span(box: Box) -> float:
    return max(float(np.ptp(box[0])), float(np.ptp(box[1])))
