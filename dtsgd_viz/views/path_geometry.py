"""Pure geometry behind ``views.paths``: the plotting plane, projections, the loss grid
on that plane, and the update at a step split into the terms of the update rule.

No matplotlib here; every function takes and returns numpy arrays or frozen
dataclasses, so tests check them numerically::

    >>> import numpy as np
    >>> paths = [np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [2.0, 1.0, 0.0]])]
    >>> plane = pca_plane(paths)
    >>> np.allclose(lift(project(paths[0], plane), plane), paths[0])   # on the plane
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from .steps import describe_updates, resolve_update

__all__ = [
    "Plane", "identity_plane", "pca_plane", "project", "lift", "plot_box", "loss_grid",
    "log_levels", "UpdateTerms", "decompose_update", "why_no_arrows", "arrow_chain", "nesterov_points",
    "select_variable", "check_step", "step_index", "describe_updates", "fade_alphas",
    "zoom_box", "TERM_LABELS", "TERM_SHORT", "divergence_update", "diverged_runs",
    "diverged_note", "drawn_length",
]

TERM_LABELS = {
    "momentum": "μ·v_prev (momentum term)",
    "lookahead": "μ·v_new (Nesterov look-ahead term)",
    "gradient": "−lr·g (gradient term)",
}
# what the zoomed panels write beside each arrow
TERM_SHORT = {"momentum": "μ·v_prev", "lookahead": "μ·v_new", "gradient": "−lr·g"}


# ---- the plane the picture is drawn on ---------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class Plane:
    """Plot coordinates ``c = (x - origin) @ basis.T``; points ``x = origin + c @ basis``.

    ``basis`` has two orthonormal rows of length ``D``. ``explained`` is the fraction
    of the paths' variance along each row (None for the identity plane of 2-D
    surfaces, which loses nothing).
    """

    origin: np.ndarray
    basis: np.ndarray
    explained: tuple[float, float] | None = None

    @property
    def dim(self) -> int:
        return self.basis.shape[1]

    @property
    def is_identity(self) -> bool:
        return self.dim == 2 and self.explained is None


def identity_plane() -> Plane:
    """The plane of a 2-D surface: plot coordinates are the parameters themselves."""
    return Plane(np.zeros(2), np.eye(2), None)


def _flat_points(paths) -> np.ndarray:
    arrays = [np.asarray(p, np.float64) for p in paths]
    arrays = [a.reshape(len(a), -1) for a in arrays]
    return np.concatenate(arrays) if arrays else np.zeros((0, 0))


def pca_plane(paths: Sequence[np.ndarray]) -> Plane:
    """The plane through the mean of all finite path points spanned by their top two
    principal directions (each oriented so its largest component is positive).

    ``paths`` are arrays ``(n_i, ...)`` flattened per point. With fewer than two
    directions of variance the basis is completed deterministically.
    """
    pts = _flat_points(paths)
    if pts.ndim != 2 or pts.shape[1] < 2:
        raise ValueError(
            "A projection plane needs parameters of at least 2 numbers. Received: points "
            f"of {pts.shape[1] if pts.ndim == 2 else 0} number(s)."
        )
    finite = pts[np.all(np.isfinite(pts), axis=1)]
    if not len(finite):
        raise ValueError("Every path point is non-finite (NaN/Inf): nothing to project.")
    origin = finite.mean(axis=0)
    centred = finite - origin
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    basis = _complete_basis(vt[:2], pts.shape[1])
    for k in range(2):
        if basis[k, np.argmax(np.abs(basis[k]))] < 0:
            basis[k] = -basis[k]
    var = s ** 2
    total = float(var.sum())
    explained = tuple(float(var[k] / total) if total > 0 and k < len(var) else 0.0
                      for k in range(2))
    return Plane(origin, basis, explained)


def _complete_basis(rows: np.ndarray, dim: int) -> np.ndarray:
    """Two orthonormal rows: ``rows`` (0 to 2 of them) completed by unit vectors."""
    out = [r / np.linalg.norm(r) for r in rows if np.linalg.norm(r) > 0]
    for e in np.eye(dim):
        if len(out) == 2:
            break
        v = e - sum(np.dot(e, u) * u for u in out)
        if np.linalg.norm(v) > 1e-8:
            out.append(v / np.linalg.norm(v))
    return np.array(out[:2])


def project(points, plane: Plane) -> np.ndarray:
    """Plot coordinates ``(..., 2)`` of points ``(..., D)``."""
    points = np.asarray(points, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # a diverged run projects to NaN/Inf
        return (points - plane.origin) @ plane.basis.T


def lift(coords, plane: Plane) -> np.ndarray:
    """Points ``(..., D)`` of plot coordinates ``(..., 2)``."""
    with np.errstate(invalid="ignore", over="ignore"):
        return plane.origin + np.asarray(coords, np.float64) @ plane.basis


# ---- the loss on the plane --------------------------------------------------------


def plot_box(view_box, coords, pad=0.08, max_grow=1.0):
    """``((xmin, xmax), (ymin, ymax))`` holding the finite ``coords``.

    With a ``view_box`` (2-D surfaces) the box is the view box grown to hold the
    paths, but never by more than ``max_grow`` times its size on each side, so a
    diverging run cannot shrink the picture to a dot.
    """
    coords = np.asarray(coords, np.float64).reshape(-1, 2)
    coords = coords[np.all(np.isfinite(coords), axis=1)]
    out = []
    for k in range(2):
        lo, hi = (coords[:, k].min(), coords[:, k].max()) if len(coords) else (0.0, 0.0)
        if view_box is None:
            span = hi - lo if hi > lo else max(1.0, abs(hi))
            out.append((float(lo - pad * 2 * span), float(hi + pad * 2 * span)))
            continue
        vlo, vhi = map(float, view_box[k])
        span = vhi - vlo
        lo, hi = min(vlo, lo - pad * span), max(vhi, hi + pad * span)
        out.append((max(lo, vlo - max_grow * span), min(hi, vhi + max_grow * span)))
    return tuple(out)


def divergence_update(path, box) -> int | None:
    """The first update (1-based, ``path[k]`` after update ``k``) whose point is
    non-finite or outside ``box`` (``((xmin, xmax), (ymin, ymax))``), or None.

    >>> divergence_update(np.array([[0.0, 0], [1, 1], [9, 0], [np.inf, 0]]), ((-4, 4), (-4, 4)))
    2
    """
    p = np.asarray(path, np.float64).reshape(len(path), -1)
    lo = np.array([b[0] for b in box])
    hi = np.array([b[1] for b in box])
    with np.errstate(invalid="ignore"):
        out = ~np.all(np.isfinite(p) & (p >= lo) & (p <= hi), axis=1)
    out[0] = False
    return int(np.argmax(out)) if out.any() else None


def diverged_runs(coords: Mapping, view_box=None, max_grow=1.0) -> dict:
    """``{config: update}`` of the runs that diverged, and the update at which each
    left the view: a run diverged when its last point is non-finite or, with a
    ``view_box``, beyond the farthest the plot box may grow (``max_grow`` times the
    view box's size on each side, as ``plot_box``); it left the view at the first
    point outside ``view_box`` (non-finite without one)."""
    out = {}
    for key, c in coords.items():
        c = np.asarray(c, np.float64).reshape(-1, 2)
        if view_box is None:
            if not np.all(np.isfinite(c[-1])):
                out[key] = divergence_update(c, ((-np.inf, np.inf), (-np.inf, np.inf)))
            continue
        limit = tuple((a - max_grow * (b - a), b + max_grow * (b - a))
                      for a, b in (map(float, r) for r in view_box))
        last = c[-1]
        with np.errstate(invalid="ignore"):
            inside = np.isfinite(last).all() and all(a <= x <= b for x, (a, b) in zip(last, limit))
        if not inside:
            out[key] = divergence_update(c, view_box)
    return out


def drawn_length(n_points: int, at) -> int:
    """How many path points to draw for a run that left the view at update ``at``
    (None: it did not): up to and including the first point outside, which the axes
    clip, so the path ends at the edge instead of criss-crossing the panel."""
    return n_points if at is None else min(n_points, int(at) + 1)


def diverged_note(diverged: Mapping) -> str:
    """``"momentum: diverged at update 12"``, one line per diverged run."""
    return "\n".join(f"{k}: diverged at update {u}" if u else f"{k}: diverged"
                     for k, u in diverged.items())


def loss_grid(value_np, plane: Plane, shape, box, n=121, budget=4_000_000):
    """``(X, Y, Z)``: an ``n x n`` grid over ``box`` in plot coordinates and the loss
    ``value_np`` at the points of the plane there (evaluated in row chunks of at most
    ``budget`` numbers, so large parameters stay within memory)."""
    xs = np.linspace(*box[0], n)
    ys = np.linspace(*box[1], n)
    X, Y = np.meshgrid(xs, ys)
    coords = np.stack([X, Y], axis=-1)
    Z = np.empty_like(X)
    rows = max(1, budget // max(1, n * plane.dim))
    with np.errstate(over="ignore", invalid="ignore"):
        for r in range(0, n, rows):
            pts = lift(coords[r:r + rows], plane).reshape(*coords[r:r + rows].shape[:2], *shape)
            Z[r:r + rows] = value_np(pts)
    return X, Y, Z


def log_levels(Z, n=14, floor=1e-6, inner=0.005):
    """``n`` log-spaced contour levels from the ``inner`` quantile of the positive finite
    values of ``Z`` (but at least ``floor`` times the largest) to the largest.

    Starting at a quantile rather than the minimum keeps the innermost contour around
    enough grid points to be drawn where it really is (a level set smaller than a
    grid cell would be an interpolation artefact)."""
    z = np.asarray(Z, np.float64)
    z = z[np.isfinite(z) & (z > 0)]
    if not len(z):
        return np.array([1e-3, 1e-2, 1e-1, 1.0])
    hi = float(z.max())
    lo = max(float(np.quantile(z, inner)), hi * floor)
    if not hi > lo * (1 + 1e-9):
        return np.array([lo / 10.0, lo, lo * 10.0])
    return np.geomspace(lo, hi, n)


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


def _consecutive(steps, index) -> bool:
    if index == 0:
        return int(steps[0]) == 1
    return int(steps[index]) == int(steps[index - 1]) + 1


def why_no_arrows(recording, index=None) -> str | None:
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
            return (f"no update arrows: update {int(steps[i]) - 1}, just before update {int(steps[i])}, "
                    f"is not recorded (every {int(steps[i]) - prev}); record every update to see them")
    return None


def decompose_update(recording, name: str, index: int) -> UpdateTerms:
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


def _decompose(recording, name, index, steps):
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


def nesterov_points(update: UpdateTerms, plane: Plane):
    """``(iterate_xy, lookahead_xy)`` in plot coordinates for a Nesterov update (the
    gradient was taken at the look-ahead point, which is ``origin``), else None."""
    if update.iterate is None:
        return None
    return project(update.iterate, plane), project(update.origin, plane)


# ---- fading trails and zoomed panels ------------------------------------------------


def fade_alphas(n: int, half_life: float = 4.0, floor: float = 0.15) -> np.ndarray:
    """Opacities of the ``n`` path segments before the current update, oldest first:
    ``floor + (1 - floor) * 0.5 ** (age / half_life)`` where the newest segment has
    age 0 (fully opaque) and each older one is one update older.

    >>> fade_alphas(3, half_life=1.0, floor=0.0).tolist()
    [0.25, 0.5, 1.0]
    """
    age = np.arange(n)[::-1].astype(np.float64)
    return floor + (1.0 - floor) * 0.5 ** (age / half_life)


def zoom_box(points, main_box, pad: float = 0.3, min_frac: float = 0.02):
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
    return ((float(c[0] - span / 2), float(c[0] + span / 2)),
            (float(c[1] - span / 2), float(c[1] + span / 2)))


# ---- input checks -------------------------------------------------------------------


def select_variable(recordings: Mapping, name) -> str:
    """The variable to draw: ``name``, or the one variable every recording shares."""
    shared = None
    for rec in recordings.values():
        names = set(rec.variables)
        shared = names if shared is None else shared & names
    if name is None:
        if len(shared) == 1:
            return next(iter(shared))
        allowed = sorted(shared)
        raise ValueError(
            "name=None is ambiguous: pass name= one of the variables every recording has. "
            f"Allowed: {allowed}."
        )
    if name not in shared:
        raise ValueError(
            f"Unknown variable {name!r}. Every recording has: {sorted(shared)}."
        )
    return name


def check_step(step, steps: Mapping[str, np.ndarray]) -> int | None:
    """``step`` as the update number every recording holds (None stays None).

    ``step=k`` is optimizer update k as ``recording.steps`` counts it (the first update
    is 1); ``-1`` is the last update the recordings share, ``-2`` the one before, and
    so on. ``steps`` maps each recording's name to its ``recording.steps``.

    >>> check_step(3, {"a": np.arange(1, 9)}), check_step(-1, {"a": np.arange(1, 9)})
    (3, 8)
    """
    if step is None:
        return None
    common = None
    for s in steps.values():
        s = np.asarray(s, np.int64)
        common = s if common is None else np.intersect1d(common, s)
    common = np.asarray(common, np.int64)
    return resolve_update(step, common, none="no update picked",
                          held=f"the recordings share {len(common)} updates",
                          start="the start point is always drawn")


def step_index(recording_steps, update: int) -> int:
    """The index into ``recording.steps`` (and the recording's arrays) of ``update``,
    which ``check_step`` has checked."""
    s = np.asarray(recording_steps, np.int64)
    i = int(np.searchsorted(s, update))
    if not (i < len(s) and s[i] == update):
        raise ValueError(f"update {update} is not recorded: the recording holds "
                         f"{describe_updates(s)}.")
    return i
