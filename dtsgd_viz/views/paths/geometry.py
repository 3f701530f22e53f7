"""Pure geometry behind ``views.paths`` (no matplotlib): the plane, projections, the loss grid, where a run left
the view, fading trails, the checks of the variable and update, and paths thinned to the pixels they are drawn on."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from ..core.steps import describe_updates, resolve_update

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure
    from numpy.typing import ArrayLike

    from ...recording.recording import Recording


Box = tuple[tuple[float, float], tuple[float, float]]  # ((xmin, xmax), (ymin, ymax)) in plot coordinates

RULE_NAMES = {"nesterov": "Nesterov", "momentum": "momentum", "plain": "plain"}  # gids keep the config keys


def rule_name(key: str) -> str:
    """The name a figure writes for config ``key`` (``"nesterov"``: ``"Nesterov"``)."""
    return RULE_NAMES.get(str(key), str(key))


@dataclasses.dataclass(frozen=True, eq=False)
class Plane:
    """``c = (x - origin) @ basis.T`` (orthonormal rows); ``explained``: their shares of variance (None: identity)."""

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


def pca_plane(paths: Sequence[np.ndarray]) -> Plane:
    """The finite path points' mean and top two principal directions, each with its largest component positive."""
    arrays = [np.asarray(p, np.float64) for p in paths]
    pts = np.concatenate([a.reshape(len(a), -1) for a in arrays]) if arrays else np.zeros((0, 0))
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
    var = s**2
    total = float(var.sum())
    e1, e2 = (float(var[k] / total) if total > 0 and k < len(var) else 0.0 for k in range(2))
    return Plane(origin, basis, (e1, e2))


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


def project(points: ArrayLike, plane: Plane) -> np.ndarray:
    """Plot coordinates ``(..., 2)`` of points ``(..., D)``."""
    points = np.asarray(points, np.float64)
    with np.errstate(invalid="ignore", over="ignore"):  # a diverged run projects to NaN/Inf
        return (points - plane.origin) @ plane.basis.T


def lift(coords: ArrayLike, plane: Plane) -> np.ndarray:
    """Points ``(..., D)`` of plot coordinates ``(..., 2)``."""
    with np.errstate(invalid="ignore", over="ignore"):
        return plane.origin + np.asarray(coords, np.float64) @ plane.basis


def plot_box(view_box: Box | None, coords: ArrayLike, pad: float = 0.08, max_grow: float = 1.0) -> Box:
    """The finite ``coords``' box: ``view_box`` grown to hold them by at most ``max_grow`` of its size a side."""
    coords = np.asarray(coords, np.float64).reshape(-1, 2)
    coords = coords[np.all(np.isfinite(coords), axis=1)]
    out: list[tuple[float, float]] = []
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
    return out[0], out[1]


def divergence_update(path: np.ndarray, box: Box) -> int | None:
    """The first update (``path[k]`` after update ``k``) non-finite or outside ``box``, or None."""
    p = np.asarray(path, np.float64).reshape(len(path), -1)
    lo = np.array([b[0] for b in box])
    hi = np.array([b[1] for b in box])
    with np.errstate(invalid="ignore"):
        out = ~np.all(np.isfinite(p) & (p >= lo) & (p <= hi), axis=1)
    out[0] = False
    return int(np.argmax(out)) if out.any() else None


def diverged_runs(
    coords: Mapping[str, ArrayLike], view_box: Box | None = None, max_grow: float = 1.0
) -> dict[str, int | None]:
    """``{run: update it left view_box}``: the runs whose last point is non-finite or beyond ``plot_box``'s reach."""
    box: Box = ((-np.inf, np.inf), (-np.inf, np.inf)) if view_box is None else view_box  # no view: non-finite only
    limit = [(a - max_grow * (b - a), b + max_grow * (b - a)) for a, b in (map(float, r) for r in box)]
    out: dict[str, int | None] = {}
    for key, c in coords.items():
        last = np.asarray(c, np.float64).reshape(-1, 2)[-1]
        with np.errstate(invalid="ignore"):
            inside = np.isfinite(last).all() and all(a <= x <= b for x, (a, b) in zip(last, limit))
        if not inside:
            out[key] = divergence_update(np.asarray(c, np.float64).reshape(-1, 2), box)
    return out


def drawn_length(n_points: int, at: int | None) -> int:
    """Path points to draw for a run that left the view at update ``at``: up to the first outside."""
    return n_points if at is None else min(n_points, int(at) + 1)


def loss_grid(
    value_np: Callable[[np.ndarray], np.ndarray],
    plane: Plane,
    shape: Sequence[int],
    box: Box,
    n: int = 121,
    budget: int = 4_000_000,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, Y, Z)``: an ``n x n`` grid over ``box`` and ``value_np`` there, in chunks of ``budget`` numbers."""
    xs = np.linspace(*box[0], n)
    ys = np.linspace(*box[1], n)
    X, Y = np.meshgrid(xs, ys)
    coords = np.stack([X, Y], axis=-1)
    Z = np.empty_like(X)
    rows = max(1, budget // max(1, n * plane.dim))
    with np.errstate(over="ignore", invalid="ignore"):
        for r in range(0, n, rows):
            pts = lift(coords[r : r + rows], plane).reshape(*coords[r : r + rows].shape[:2], *shape)
            Z[r : r + rows] = value_np(pts)
    return X, Y, Z


def log_levels(Z: ArrayLike, n: int = 14, floor: float = 1e-6, inner: float = 0.005) -> np.ndarray:
    """``n`` log levels from the positive finite ``Z``'s ``inner`` quantile (a cell-sized level set is an artefact)."""
    z = np.asarray(Z, np.float64)
    z = z[np.isfinite(z) & (z > 0)]
    if not len(z):
        return np.array([1e-3, 1e-2, 1e-1, 1.0])
    hi = float(z.max())
    lo = max(float(np.quantile(z, inner)), hi * floor)
    if not hi > lo * (1 + 1e-9):
        return np.array([lo / 10.0, lo, lo * 10.0])
    return np.geomspace(lo, hi, n)


def run_distances(paths: Iterable[ArrayLike]) -> np.ndarray:
    """After each update the largest distance between two runs' parameters (one run: its step); NaN if not finite."""
    arrays = [np.asarray(p, np.float64) for p in paths]
    arrays = [a.reshape(len(a), -1) for a in arrays]
    n = min(len(a) for a in arrays) - 1
    with np.errstate(invalid="ignore", over="ignore"):
        if len(arrays) == 1:
            d = np.linalg.norm(np.diff(arrays[0][: n + 1], axis=0), axis=1)
        else:
            d = np.zeros(n)
            for i in range(len(arrays)):
                for j in range(i + 1, len(arrays)):
                    d = np.fmax(d, np.linalg.norm(arrays[i][1 : n + 1] - arrays[j][1 : n + 1], axis=1))
            bad = ~np.all([np.all(np.isfinite(a[1 : n + 1]), axis=1) for a in arrays], axis=0)
            d[bad] = np.nan
    d[~np.isfinite(d)] = np.nan
    return d


def most_different_index(paths: Iterable[ArrayLike], allowed: ArrayLike | None = None) -> int | None:
    """The index of the update where ``paths`` differ most among ``allowed`` (None: no finite one)."""
    d = run_distances(paths)
    ok = np.isfinite(d)
    if allowed is not None:
        ok &= np.asarray(allowed, bool)[: len(d)]
    if not ok.any():
        return None
    return int(np.flatnonzero(ok)[np.argmax(d[ok])])


def fade_alphas(n: int, half_life: float = 4.0, floor: float = 0.15) -> np.ndarray:
    """Opacities of ``n`` segments, oldest first, halving every ``half_life`` updates down to ``floor``."""
    age = np.arange(n)[::-1].astype(np.float64)
    return floor + (1.0 - floor) * 0.5 ** (age / half_life)


def select_variable(recordings: Mapping[str, Recording], name: str | None) -> str:
    """The variable to draw: ``name``, or the one variable every recording shares."""
    shared = set.intersection(*(set(rec.variables) for rec in recordings.values()))
    if name is None:
        if len(shared) == 1:
            return next(iter(shared))
        allowed = sorted(shared)
        raise ValueError(
            f"name=None is ambiguous: pass name= one of the variables every recording has. Allowed: {allowed}."
        )
    if name not in shared:
        raise ValueError(f"Unknown variable {name!r}. Every recording has: {sorted(shared)}.")
    return name


def check_step(step: object, steps: Mapping[str, np.ndarray], none: str = "no update picked") -> int | None:
    """``step`` as an update every recording holds (``-1``: the last shared; None stays None, ``none`` says what
    None means); ``steps``: ``{name: recording.steps}``.

    >>> check_step(3, {"a": np.arange(1, 9)}), check_step(-1, {"a": np.arange(1, 9)})
    (3, 8)
    """
    if step is None:
        return None
    common = common_steps(steps.values())
    return resolve_update(
        step,
        common,
        none=none,
        held=f"the recordings share {len(common)} updates",
        start="the start point is always drawn",
    )


def common_steps(steps: Iterable[ArrayLike]) -> np.ndarray:
    return np.asarray(functools.reduce(np.intersect1d, (np.asarray(s, np.int64) for s in steps)), np.int64)


def step_index(recording_steps: ArrayLike, update: int) -> int:
    """The index into ``recording.steps`` of ``update``."""
    s = np.asarray(recording_steps, np.int64)
    i = int(np.searchsorted(s, update))
    if not (i < len(s) and s[i] == update):
        raise ValueError(f"update {update} is not recorded: the recording holds {describe_updates(s)}.")
    return i


EXACT_POINTS = 61  # a path of at most this many points is drawn as recorded
TOLERANCE_PX = 0.25  # a recorded point this far off the thinned line (in pixels) is kept
CELL_PX = 0.15  # points following one another within one cell this wide are one point


def root_pixels(figure: Figure | SubFigure) -> np.ndarray:
    """``(width, height)`` in pixels of ``figure``'s root figure."""
    root = cast("Figure", getattr(figure, "figure", figure) or figure)
    return np.asarray(root.get_size_inches(), np.float64) * float(root.dpi)


def pixel_scale(box: Box, figure: Figure | SubFigure) -> np.ndarray:
    """``(sx, sy)``: the most pixels one data unit of ``box`` can take on ``figure`` (its root figure's size)."""
    span = np.array([abs(float(box[0][1]) - float(box[0][0])), abs(float(box[1][1]) - float(box[1][0]))])
    return root_pixels(figure) / np.where(span > 0, span, 1.0)


def vertex_limit(figure: Figure | SubFigure) -> int:
    """The most vertices a thinned path keeps on ``figure``: its width plus height in pixels."""
    return int(max(2 * EXACT_POINTS, np.ceil(root_pixels(figure).sum())))


def _segment_distance(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Each point of ``p`` (n, 2): its distance to the segment ``a``-``b``."""
    ab = b - a
    l2 = float(ab @ ab)
    if l2 <= 0.0:
        return np.hypot(*(p - a).T)
    t = np.clip((p - a) @ ab / l2, 0.0, 1.0)
    return np.hypot(*(p - (a + t[:, None] * ab)).T)


def _simplify(xy: np.ndarray, anchor: np.ndarray, tol: float) -> np.ndarray:
    """Douglas-Peucker on ``xy`` (pixels) between the ``anchor`` points (a mask); a stretch next to a non-finite
    anchor keeps no inner point."""
    keep = anchor.copy()
    finite = np.all(np.isfinite(xy), axis=1)
    ends = np.flatnonzero(keep)
    stack = [(int(a), int(b)) for a, b in zip(ends[:-1], ends[1:]) if b - a > 1 and finite[a] and finite[b]]
    while stack:
        a, b = stack.pop()
        d = _segment_distance(xy[a + 1 : b], xy[a], xy[b])
        j = int(np.argmax(d))
        if d[j] > tol:
            j += a + 1
            keep[j] = True
            if j - a > 1:
                stack.append((a, j))
            if b - j > 1:
                stack.append((j, b))
    return keep


def thin_indices(
    coords: ArrayLike, scale: ArrayLike, keep: Iterable[int] = (), tol: float = TOLERANCE_PX, limit: int | None = None
) -> np.ndarray:
    """Indices of the points of ``coords`` (n, 2) a line needs to look as the whole path does at ``scale`` pixels
    per unit: the ends, ``keep`` and around non-finite points always; with ``limit``, ``tol`` doubles until that many.

        >>> import numpy as np
        >>> c = np.stack([np.arange(200.0), np.zeros(200)], axis=1)
        >>> c[100] = np.nan                         # the line breaks there
        >>> thin_indices(c, (1.0, 1.0)).tolist()
        [0, 99, 100, 101, 199]
    """
    c = np.asarray(coords, np.float64).reshape(-1, 2)
    n = len(c)
    if n <= EXACT_POINTS:
        return np.arange(n)
    xy = c * np.asarray(scale, np.float64).reshape(1, 2)
    finite = np.all(np.isfinite(xy), axis=1)
    forced = np.zeros(n, bool)
    forced[[0, n - 1]] = True
    k = np.asarray(list(keep), np.int64).reshape(-1)
    forced[k[(k >= 0) & (k < n)]] = True
    bad = ~finite
    if bad.any():  # the first non-finite point of each gap breaks the line; its neighbours end it
        forced |= bad & ~np.concatenate([[False], bad[:-1]])
        forced[:-1] |= bad[1:] & finite[:-1]
        forced[1:] |= bad[:-1] & finite[1:]
    # a point in the same cell as the one before it adds nothing the line can show
    with np.errstate(invalid="ignore"):
        cells = np.floor(np.where(finite[:, None], xy, 0.0) / CELL_PX)
    same = np.zeros(n, bool)
    same[1:] = np.all(cells[1:] == cells[:-1], axis=1) & finite[1:] & finite[:-1]
    same |= bad & ~forced  # a gap needs one non-finite point
    sub = np.flatnonzero(~same | forced)
    anchor = forced[sub]
    t = float(tol)
    for _ in range(40):
        kept = _simplify(xy[sub], anchor, t)
        if limit is None or np.count_nonzero(kept & ~anchor) <= max(0, int(limit) - np.count_nonzero(anchor)):
            break
        t *= 2.0
    return sub[kept]


def up_to(indices: ArrayLike | None, end: int, at: int | None = None) -> np.ndarray:
    """The thinned path (``indices``; None: every point) up to point ``end - 1``, with ``at`` and that point on it."""
    end = int(end)
    if indices is None:
        return np.arange(max(0, end))
    idx = np.asarray(indices, np.int64)
    extra = [v for v in (at, end - 1) if v is not None and 0 <= v < end]
    return np.unique(np.concatenate([idx[idx < end], np.asarray(extra, np.int64)]))
