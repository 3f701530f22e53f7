"""Pure geometry of one update behind ``views.paths.plot``: the recorded update at a step split
into the terms of the update rule, those terms as a tip-to-tail chain of arrows on the
plotting plane, Nesterov's iterate and look-ahead point, and the box of a zoomed panel.
The plane itself and the loss on it are ``views.paths.geometry``'s.

No matplotlib here; every function takes and returns numpy arrays or frozen
dataclasses, so tests check them numerically::

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

__all__ = [
    "UpdateTerms",
    "decompose_update",
    "why_no_arrows",
    "arrow_chain",
    "nesterov_points",
    "zoom_box",
    "zoom_factor",
    "TERM_SHORT",
]

# what the zoomed panels write beside each arrow
TERM_SHORT = {"momentum": "μ·v_prev", "lookahead": "μ·v_new", "gradient": "−lr·g"}


# ---- the update at one step ---------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class UpdateTerms:
    """Update ``step`` (as ``recording.steps`` counts; recording index ``index``) from
    ``origin``, the parameter before it.

    ``terms`` lists ``(key, vector)`` in drawing order, keys from ``TERM_SHORT``:
    classical momentum ``p_new - p = mu*v_prev - lr*g``; Nesterov as tf-keras
    computes it ``p_new - p = mu*v_new - lr*g``; plain SGD ``-lr*g``. ``total`` is
    the recorded ``p_new - p``; ``residual`` what the terms leave of it (float32
    rounding of the real optimizer, ~1e-7 relative).

    ``iterate`` (Nesterov only, else None): ``p - mu*v_prev``, the iterate of
    Sutskever's form. tf-keras' parameter is that iterate's look-ahead point
    ``iterate + mu*v_prev``, so the gradient ``g`` of this update was taken at
    ``origin``, ahead of ``iterate`` (see ``dtsgd_viz.reference``).
    """

    step: int
    index: int
    origin: np.ndarray
    terms: tuple[tuple[str, np.ndarray], ...]
    total: np.ndarray
    iterate: np.ndarray | None = None

    @property
    def residual(self) -> np.ndarray:
        return self.total - sum(v for _, v in self.terms)


def _consecutive(steps: np.ndarray, index: int) -> bool:
    if index == 0:
        return int(steps[0]) == 1
    return int(steps[index]) == int(steps[index - 1]) + 1


def why_no_arrows(recording: Recording, index: int | None = None) -> str | None:
    """Why the update at ``index`` (every update for None) can't be split into arrows,
    in a short note for the figure; None when it can."""
    missing = [k for k in ("param", "grad", "velocity") if k not in recording.kinds]
    if missing:
        return f"no update arrows: kinds {', '.join(missing)} not recorded"
    steps = np.asarray(recording.steps)
    bad = [index] if index is not None else range(len(steps))
    for i in bad:
        if not _consecutive(steps, i):
            prev = int(steps[i - 1]) if i else 0
            return (
                f"no update arrows: update {int(steps[i]) - 1}, just before update {int(steps[i])}, "
                f"is not recorded (every {int(steps[i]) - prev}); record every update to see them"
            )
    return None


def decompose_update(recording: Recording, name: str, index: int) -> UpdateTerms:
    """Split the recorded update at ``index`` into the terms of tf-keras' SGD rule
    (see ``dtsgd_viz.reference``), from the recorded gradient, velocities and learning
    rate, in float64. Needs kinds ``grad`` and ``velocity`` and the previous step
    recorded (``Recorder(every=1)``)."""
    missing = [k for k in ("param", "grad", "velocity") if k not in recording.kinds]
    if missing:
        raise ValueError(
            f"Update arrows need the recorded kinds param, grad and velocity; this recording "
            f"has {list(recording.kinds)} (missing {missing}). Record them, or pass arrows=False."
        )
    steps = np.asarray(recording.steps)
    if not _consecutive(steps, index):
        before = "the start" if index == 0 else f"update {int(steps[index - 1])}"
        raise ValueError(
            f"Update arrows at update {int(steps[index])} need the parameter and velocity just "
            f"before it, but the recording jumps from {before} (recorded every "
            f"{int(steps[index]) - (int(steps[index - 1]) if index else 0)} updates). Record "
            "with Recorder(every=1), or pass arrows=False."
        )
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
    return UpdateTerms(int(steps[index]), index, origin, terms, total, iterate)


def arrow_chain(update: UpdateTerms, plane: Plane) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """``[(key, tail_xy, uv)]``: the terms as arrows in plot coordinates, tip to tail
    from the projected ``origin`` (projection is linear, so they still add up)."""
    tail = project(update.origin, plane)
    out = []
    with np.errstate(invalid="ignore", over="ignore"):
        for key, vec in update.terms:
            uv = vec @ plane.basis.T
            out.append((key, tail, uv))
            tail = tail + uv
    return out


def nesterov_points(update: UpdateTerms, plane: Plane) -> tuple[np.ndarray, np.ndarray] | None:
    """``(iterate_xy, lookahead_xy)`` in plot coordinates for a Nesterov update (the
    gradient was taken at the look-ahead point, which is ``origin``), else None."""
    if update.iterate is None:
        return None
    return project(update.iterate, plane), project(update.origin, plane)


# ---- zoomed panels -----------------------------------------------------------------


def zoom_box(points: ArrayLike, main_box: Box, pad: float = 0.3, min_frac: float = 0.02) -> Box | None:
    """A square ``((xmin, xmax), (ymin, ymax))`` around the finite ``points`` (the
    position, the arrow tips, look-ahead marks), grown by ``pad`` of its size on each
    side and at least ``min_frac`` of the larger side of ``main_box``, so an update
    that hardly moves still gets a readable panel. None if no point is finite."""
    pts = np.asarray(points, np.float64).reshape(-1, 2)
    pts = pts[np.all(np.isfinite(pts), axis=1)]
    if not len(pts):
        return None
    lo, hi = pts.min(axis=0), pts.max(axis=0)
    main = max(float(np.ptp(main_box[0])), float(np.ptp(main_box[1])))
    span = max(float((hi - lo).max()) * (1 + 2 * pad), min_frac * main, 1e-12)
    c = (lo + hi) / 2
    return ((float(c[0] - span / 2), float(c[0] + span / 2)), (float(c[1] - span / 2), float(c[1] + span / 2)))


def zoom_factor(main_box: Box, box: Box) -> float:
    """How many times closer a zoomed panel over ``box`` is than the paths panel over
    ``main_box`` (the larger sides' ratio).

    >>> zoom_factor(((0, 8), (0, 4)), ((1, 1.5), (2, 2.5)))
    16.0
    """
    main = max(float(np.ptp(main_box[0])), float(np.ptp(main_box[1])))
    span = max(float(np.ptp(box[0])), float(np.ptp(box[1])))
    return main / span if span > 0 else float("inf")
