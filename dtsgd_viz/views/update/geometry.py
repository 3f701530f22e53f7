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
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..paths.geometry import Box, Plane, project
from .arrows import MIN_ARROW  # noqa: F401  (the length a too-short arrow is drawn at)

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
    "place_labels",
    "TERM_LABELS",
    "TERM_SHORT",
    "MIN_ARROW",
]

TERM_LABELS = {
    "momentum": "μ·v_prev (momentum term)",
    "lookahead": "μ·v_new (Nesterov look-ahead term)",
    "gradient": "−lr·g (gradient term)",
}
# what the zoomed panels write beside each arrow
TERM_SHORT = {"momentum": "μ·v_prev", "lookahead": "μ·v_new", "gradient": "−lr·g"}


# ---- the update at one step ---------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class UpdateTerms:
    """Update ``step`` (as ``recording.steps`` counts; recording index ``index``) from
    ``origin``, the parameter before it.

    ``terms`` lists ``(key, vector)`` in drawing order, keys from ``TERM_LABELS``:
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
    return _decompose(recording, name, index, steps)


def _decompose(recording: Recording, name: str, index: int, steps: np.ndarray) -> UpdateTerms:
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
    with np.errstate(invalid="ignore", over="ignore"):
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


def _rect(
    anchor: Sequence[float], d: np.ndarray, r: float, size: tuple[float, float]
) -> tuple[tuple[float, float, float, float], str, str]:
    """The label box ``(x0, y0, x1, y1)`` of a label ``size`` points, ``r`` points from
    ``anchor`` in direction ``d``, and its alignment."""
    x, y = anchor[0] + r * d[0], anchor[1] + r * d[1]
    w, h = size
    ha = "right" if d[0] < -0.35 else "left" if d[0] > 0.35 else "center"
    va = "top" if d[1] < -0.35 else "bottom" if d[1] > 0.35 else "center"
    x0 = x - w if ha == "right" else x if ha == "left" else x - w / 2
    y0 = y - h if va == "top" else y if va == "bottom" else y - h / 2
    return (x0, y0, x0 + w, y0 + h), ha, va


STRICT_PULL = 5.0
MARGIN = 4.5  # points a label keeps clear of an obstacle (its estimated size errs by a point or two)


def place_labels(
    anchors: Sequence[Sequence[float]],
    sizes: Sequence[tuple[float, float]],
    obstacles: ArrayLike,
    panel: tuple[float, float],
    away: Sequence[ArrayLike | None] | None = None,
    radii: Iterable[float] = (16.0, 28.0, 42.0, 60.0),
    pull: Sequence[float] | None = None,
) -> list[tuple[float, float, str, str]]:
    """Where to put labels on leader lines, all in points of a panel ``panel = (W, H)``:
    label ``i`` (``sizes[i] = (w, h)``) names the point ``anchors[i]``; each goes to the
    spot (16 directions x ``radii``) that stays in the panel, overlaps neither the labels
    placed before it nor the ``obstacles`` (points, e.g. samples along the arrow
    shafts), and is nearest; ``away[i]`` (a direction or None) breaks ties. Returns
    ``[(dx, dy, ha, va)]``: the text's offset from its anchor and its alignment.

    >>> [(round(dx), round(dy), ha, va) for dx, dy, ha, va in place_labels(
    ...     [(5.0, 50.0)], [(30.0, 10.0)], [], (100.0, 100.0), away=[(1.0, 0.0)])]
    [(16, 0, 'left', 'center')]
    """
    W, H = panel
    obstacles = np.asarray(obstacles, np.float64).reshape(-1, 2)
    placed, out, leaders = [], [], []
    dirs = [np.array([np.cos(t), np.sin(t)]) for t in np.linspace(0, 2 * np.pi, 16, endpoint=False)]
    for i, (anchor, size) in enumerate(zip(anchors, sizes)):
        pref = None if away is None or away[i] is None else np.asarray(away[i], np.float64)
        if pref is not None and np.hypot(*pref) > 0:
            pref = pref / np.hypot(*pref)
        best = None
        for r in radii:
            for d in dirs:
                weight = 0.3 if pull is None else float(pull[i])
                (x0, y0, x1, y1), ha, va = _rect(anchor, d, r, size)
                area = (x1 - x0) * (y1 - y0)
                inside = max(0, min(x1, W) - max(x0, 0)) * max(0, min(y1, H) - max(y0, 0))
                # outside the panel costs most; a label held to its side goes to the other only then
                cost = 60.0 * (1 - inside / area)
                if pref is not None and weight >= STRICT_PULL and float(d @ pref) < 0.3:
                    cost += 8.0
                # a spot partly outside is slid back in along the panel's edges (in whole points:
                # a redraw of a panel a fraction of a point smaller draws the same): judged there
                shift = np.array(
                    [
                        np.ceil(max(0.0, -x0)) - np.ceil(max(0.0, x1 - W)),
                        np.ceil(max(0.0, -y0)) - np.ceil(max(0.0, y1 - H)),
                    ]
                )
                x0, x1, y0, y1 = x0 + shift[0], x1 + shift[0], y0 + shift[1], y1 + shift[1]
                for a0, b0, a1, b1 in placed:  # any touch of another label (2 points apart) costs
                    common = max(0, min(x1 + 2, a1) - max(x0 - 2, a0)) * max(0, min(y1 + 2, b1) - max(y0 - 2, b0))
                    cost += (30.0 + 40.0 * common / area) if common > 0 else 0.0
                if len(obstacles):
                    hit = (
                        (obstacles[:, 0] > x0 - MARGIN)
                        & (obstacles[:, 0] < x1 + MARGIN)
                        & (obstacles[:, 1] > y0 - MARGIN)
                        & (obstacles[:, 1] < y1 + MARGIN)
                    )
                    cost += 6.0 * float(hit.sum())
                leader = _leader(anchor, (x0, y0, x1, y1))
                cost += _leader_cost(leader, anchor, obstacles, placed, leaders)
                cost += 20.0 * sum(
                    1 for other in leaders if other is not None and _cuts(other, (x0 - 2, y0 - 2, x1 + 2, y1 + 2))
                )
                cost += 0.02 * r - (weight * float(d @ pref) if pref is not None else 0.0)
                if best is None or cost < best[0]:
                    best = (cost, r * d + shift, ha, va, (x0, y0, x1, y1))
        assert best is not None  # radii and dirs are never empty
        _, off, ha, va, rect = best
        placed.append(rect)
        leaders.append(_leader(anchor, rect))
        out.append((float(off[0]), float(off[1]), ha, va))
    return out


CLEAR = 9.0  # points round a leader's anchor where it may touch the mark it names


def _leader(anchor: ArrayLike, rect: Sequence[float]) -> tuple[np.ndarray, np.ndarray] | None:
    """The leader line ``(a, b)`` from ``anchor`` to where the line to the middle of
    ``rect`` leaves it (as matplotlib's ``annotate`` draws it), or None inside it."""
    a = np.asarray(anchor, np.float64)
    x0, y0, x1, y1 = rect
    c = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    d = c - a
    ts = [
        t
        for t, lo, hi, k in (
            (((x0 - a[0]) / d[0]) if d[0] else None, y0, y1, 1),
            (((x1 - a[0]) / d[0]) if d[0] else None, y0, y1, 1),
            (((y0 - a[1]) / d[1]) if d[1] else None, x0, x1, 0),
            (((y1 - a[1]) / d[1]) if d[1] else None, x0, x1, 0),
        )
        if t is not None and 0 <= t <= 1 and lo - 1e-9 <= a[k] + t * d[k] <= hi + 1e-9
    ]
    return (a, a + min(ts) * d) if ts and min(ts) > 0 else None


def _crosses(
    p: Sequence[float] | np.ndarray,
    q: Sequence[float] | np.ndarray,
    r: Sequence[float] | np.ndarray,
    s: Sequence[float] | np.ndarray,
) -> bool:
    """Whether the segments ``p q`` and ``r s`` cross."""
    cross = lambda o, a, b: (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])  # noqa: E731
    return (cross(p, q, r) * cross(p, q, s) < 0) and (cross(r, s, p) * cross(r, s, q) < 0)


def _cuts(leader: tuple[np.ndarray, np.ndarray], rect: Sequence[float]) -> bool:
    """Whether the segment ``leader`` crosses an edge of ``rect``."""
    x0, y0, x1, y1 = rect
    c = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
    return any(_crosses(*leader, c[k], c[(k + 1) % 4]) for k in range(4))


def _leader_cost(
    leader: tuple[np.ndarray, np.ndarray] | None,
    anchor: ArrayLike,
    obstacles: np.ndarray,
    placed: Iterable[Sequence[float]],
    leaders: Iterable[tuple[np.ndarray, np.ndarray] | None],
) -> float:
    """A leader over the ``obstacles`` (beyond ``CLEAR`` of its anchor) is hidden; one
    through a placed label or across a placed leader reads as naming the wrong thing."""
    if leader is None:
        return 0.0
    a, b = leader
    cost = 0.0
    if len(obstacles):
        seg = b - a
        n2 = float(seg @ seg) or 1.0
        t = np.clip((obstacles - a) @ seg / n2, 0.0, 1.0)
        near = np.hypot(*(a + t[:, None] * seg - obstacles).T) < 2.5
        far = np.hypot(*(obstacles - np.asarray(anchor)).T) > CLEAR
        cost += 1.0 * float((near & far).sum())
    cost += 20.0 * sum(1 for rect in placed if _cuts(leader, rect))
    cost += 20.0 * sum(1 for other in leaders if other is not None and _crosses(a, b, *other))
    return cost
