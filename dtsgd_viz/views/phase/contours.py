"""The iso-rate contours of the phase maps, drawn only where they say something: where
the rule converges and the worst mode is not the steep direction overshooting.

There the worst mode's rate is the steep direction's negative eigenvalue, which
reaches 1 on the stability boundary, so every level's contour would crowd into a thin
band along the boundary (running up along the edge beside the boundary's own line).
The field is masked in a band along the boundary (``contour_mask``, ``EDGE_BAND``) and
where the rule diverges; each contour then ends where it meets the band. Its label sits
inline on a clean stretch of it, away from the boundary, the critical-damping curve, the
other levels, the region names and the other labels: on its curved stretch (left of the
flattest direction's critical damping) where it fits there. Past that curve heavy ball's
rate is sqrt(mu) whatever the learning rate, so the contour runs flat along mu = rho^2:
that stretch gets its own label saying so (``ρ=0.9=√μ``) where it fits (``on_plateau``).

    >>> import numpy as np
    >>> contour_mask([0.01, 0.085, 0.095, 0.2], [0.0], [1.0, 20.0], False).tolist()   # boundary 0.1
    [[False, False, True, True]]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import numpy as np

from ...theory import quadratic as theory
from ..core import style
from ..core.figure import root_figure
from ..text.direct import text_size
from .regions import outline

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.contour import ContourSet
    from matplotlib.text import Text
    from numpy.typing import ArrayLike

    from .plot import _MapGrid

__all__ = [
    "contour_mask",
    "draw_contours",
    "label_text",
    "on_plateau",
    "label_place",
    "MIN_PIECE",
    "MIN_STUB",
    "LABEL_SIZE",
]

EDGE_BAND = 0.12  # no contour this close (in learning rate) to the stability boundary
MIN_PIECE = 60.0  # points: shorter pieces of a contour (cut by the band) are not drawn
MIN_STUB = 20.0  # points: shorter ends a label's gap leaves of a line are dropped (too short to read)
LABEL_SIZE = 9.5  # points: the contours' labels, a step above the smallest text (they are read on the lines)


def contour_mask(
    learning_rates: ArrayLike,
    momenta: ArrayLike,
    hessian_eigenvalues: ArrayLike,
    nesterov: bool,
    band: float = EDGE_BAND,
) -> np.ndarray:
    """``out[i, j]`` True where no iso-rate contour is drawn at ``(learning_rates[j],
    momenta[i])``: the rule does not converge (rate >= 1), or the learning rate lies
    within ``band`` (a fraction) of the stability boundary, where the rate climbs to 1
    and every level's contour would crowd along the boundary's own line."""
    lr = np.asarray(learning_rates, np.float64).reshape(-1)
    mu = np.asarray(momenta, np.float64).reshape(-1)
    h = np.unique(np.asarray(hessian_eigenvalues, np.float64))
    edge = theory.convergence_boundary(np.clip(mu, 0.0, 0.9999), h[-1], nesterov)[:, None]
    rates = theory.problem_rate(lr, mu, h, nesterov)
    return (rates >= 1.0) | (lr[None, :] > (1.0 - band) * edge)


def _points_transform(ax, x_range, y_range):
    """Data (x on a log scale) -> points within ``ax`` (origin its bottom left)."""
    bbox = ax.get_window_extent()
    dpi = root_figure(ax).dpi
    size = bbox.width * 72 / dpi, bbox.height * 72 / dpi
    lx = np.log(np.asarray(x_range, np.float64))

    def to_points(xy):
        xy = np.asarray(xy, np.float64).reshape(-1, 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            u = (np.log(xy[:, 0]) - lx[0]) / (lx[1] - lx[0]) * size[0]
        v = (xy[:, 1] - y_range[0]) / (y_range[1] - y_range[0]) * size[1]
        return np.column_stack([u, v])

    to_points.size = size
    return to_points


def _frame_at(pts, k, length):
    """The unit direction of the polyline ``pts`` at vertex ``k`` over ``length``."""
    d = np.hypot(*(pts - pts[k]).T)
    near = np.flatnonzero(d <= length / 2)
    t = pts[near[-1]] - pts[near[0]]
    norm = np.hypot(*t)
    return np.array([1.0, 0.0]) if norm == 0 else t / norm


def _box(pts, k, length, height, n=15):
    """The outline (points) of a ``length`` x ``height`` label along ``pts`` at vertex ``k``."""
    t = _frame_at(pts, k, length)
    nrm = np.array([-t[1], t[0]])
    s = np.linspace(-0.5, 0.5, n)
    edges = [np.outer(s * length, t) + side * height / 2 * nrm for side in (-1, 0, 1)]
    edges += [np.outer(s * height, nrm) + end * length / 2 * t for end in (-1, 1)]
    return pts[k] + np.concatenate(edges)


def label_place(
    pts: ArrayLike,
    blocked: Iterable[ArrayLike],
    length: float,
    height: float,
    size: tuple[float, float],
    margin: float = 3.0,
    upright: bool = True,
) -> int | None:
    """The vertex of the polyline ``pts`` (points) where a ``length`` x ``height`` label
    laid along it fits: inside the axes (``size``, ``margin`` points in), on a stretch
    straight enough that the line stays under the label, no point of the ``blocked``
    polylines inside its box (``upright``: nor inside the upright box around it); of
    those, the one farthest from them (up to 2.5 label sizes: then the one nearest the
    line's middle). None if none fits.

    >>> line = np.c_[np.linspace(0, 100, 101), np.full(101, 50.0)]
    >>> label_place(line, [np.array([[40.0, 52.0]])], 20, 10, (100, 100))
    65
    >>> label_place(line, [np.array([[x, 50.0]]) for x in range(0, 101, 10)], 20, 10, (100, 100)) is None
    True
    """
    pts = np.asarray(pts, np.float64)
    ok = np.all(np.isfinite(pts), axis=1)
    piece = np.cumsum(~ok)  # NaN rows separate the line's pieces
    others = [np.asarray(b, np.float64).reshape(-1, 2) for b in blocked]
    others = np.concatenate([b[np.all(np.isfinite(b), axis=1)] for b in others]) if others else np.zeros((0, 2))
    step = np.r_[0.0, np.hypot(*np.diff(np.where(ok[:, None], pts, 0), axis=0).T)]
    step[~ok | np.r_[True, ~ok[:-1]]] = 0.0
    arc = np.cumsum(step)
    best, best_key = None, (1.0, -np.inf)
    for k in np.flatnonzero(ok):
        same = ok & (piece == piece[k])
        t = _frame_at(pts[same], int(np.sum(same[:k])), length)
        nrm = np.array([-t[1], t[0]])
        corners = pts[k] + np.array(
            [[a * length / 2 * t + b * height / 2 * nrm] for a in (-1, 1) for b in (-1, 1)]
        ).reshape(-1, 2)
        if np.any(corners < margin) or np.any(corners > np.asarray(size) - margin):
            continue
        rel = pts[same] - pts[k]
        across = rel @ nrm
        near = np.abs(arc[same] - arc[k]) <= length / 2
        if np.any(np.abs(across[near]) > height / 4) or np.sum(near) < 2:  # bends away under the label
            continue
        # everything else: other lines, this line's other pieces, and its stretches far
        # along it (where it loops back)
        rest = np.concatenate([others, pts[ok & ~same], pts[same][np.abs(arc[same] - arc[k]) > 1.5 * length]])
        lo, hi = corners.min(axis=0), corners.max(axis=0)
        if upright and len(others) and np.any(np.all((others > lo) & (others < hi), axis=1)):
            continue  # a tilted label's upright box (what is drawn around it) on another line
        if len(rest):
            rel = rest - pts[k]
            score = np.min(np.maximum(np.abs(rel @ t) / (length / 2), np.abs(rel @ nrm) / (height / 2)))
        else:
            score = np.inf
        mid = (arc[same].min() + arc[same].max()) / 2
        # clear enough (2.5 label sizes) counts as clear: then the middle of the piece
        key = (min(score, 2.5), -abs(arc[k] - mid))
        if score > 1.0 and key > best_key:
            best, best_key = int(k), key
    return best


def _pieces(path) -> list:
    """The pieces of a contour level's path (split at its MOVETOs)."""
    from matplotlib.path import Path

    v, codes = path.vertices, path.codes
    if not len(v):
        return []
    starts = np.flatnonzero(codes == Path.MOVETO) if codes is not None else np.array([0])
    return np.split(v, starts[1:])


def _joined(path) -> np.ndarray:
    """A level's pieces in one array, NaN rows between them."""
    pieces = _pieces(path)
    if not pieces:
        return np.zeros((0, 2))
    return np.concatenate([np.vstack([p, [[np.nan, np.nan]]]) for p in pieces])[:-1]


def _drop_short_pieces(cs, ax, g, shortest=MIN_PIECE) -> None:
    """Keep only the pieces of each level's contour at least ``shortest`` points long."""
    from matplotlib.path import Path

    to_points = _points_transform(ax, (g.lr_e[0], g.lr_e[-1]), (g.mu_e[0], g.mu_e[-1]))
    kept = []
    for path in cs.get_paths():
        pieces = _pieces(path)
        long = [v for v in pieces if len(v) > 1 and np.sum(np.hypot(*np.diff(to_points(v), axis=0).T)) >= shortest]
        if long:
            codes = np.concatenate([[Path.MOVETO] + [Path.LINETO] * (len(v) - 1) for v in long])
            kept.append(Path(np.concatenate(long), codes))
        else:
            kept.append(Path(np.zeros((0, 2))))
    cs.set_paths(kept)


def _keep_overdamped(cs, level, g, nesterov) -> None:
    """Keep the ``level`` contour (the cap's) only where the flattest direction is
    overdamped (left of its critical-damping curve): the cap's rate comes from that
    direction's loss, and there its rate falls as the learning rate grows. Past the
    curve every direction oscillates, heavy ball's at sqrt(mu) whatever the learning
    rate (a plateau whose level set is a line along a row of cells), and the steep
    direction's larger loss decides, not the flat one's."""
    from matplotlib.path import Path

    levels = list(cs.levels)
    if level not in levels:
        return
    k = levels.index(level)
    paths = list(cs.get_paths())
    kept = []
    for v in _pieces(paths[k]):
        edge = theory.critical_damping(np.clip(v[:, 1], 0.0, 0.9999), nesterov) / g.h[0]
        ok = v[:, 0] < edge
        runs = np.split(np.arange(len(v)), np.flatnonzero(np.diff(ok.astype(int)) != 0) + 1)
        kept += [v[r] for r in runs if ok[r[0]] and len(r) > 1]
    if kept:
        codes = np.concatenate([[Path.MOVETO] + [Path.LINETO] * (len(v) - 1) for v in kept])
        paths[k] = Path(np.concatenate(kept), codes)
    else:
        paths[k] = Path(np.zeros((0, 2)))
    cs.set_paths(paths)


def on_plateau(lr: ArrayLike, mu: ArrayLike, h: ArrayLike, nesterov: bool) -> np.ndarray:
    """True where heavy ball's rate is ``sqrt(mu)`` whatever the learning rate: past the
    flattest direction's critical damping (every direction oscillates) and short of the
    steep direction's overshoot. Its iso-rate contours run flat there, along ``mu = rho^2``;
    never for Nesterov, whose oscillating rate ``sqrt(mu (1 - lr h))`` falls with lr.

    >>> on_plateau(np.array([0.005, 0.05]), np.array([0.81, 0.81]), [1.0, 20.0], False).tolist()
    [False, True]
    """
    lr, mu = np.broadcast_arrays(np.asarray(lr, np.float64), np.asarray(mu, np.float64))
    h = np.unique(np.asarray(h, np.float64))
    if nesterov:
        return np.zeros(lr.shape, bool)
    m = np.clip(mu, 0.0, 0.9999)
    return (lr * h[0] > theory.critical_damping(m, False)) & (lr * h[-1] < (1.0 + np.sqrt(m)) ** 2)


def _place_labels(line, pts, level, blocked, size_pts, g, nesterov) -> list:
    """Where the ``level`` contour (``pts`` in data, ``line`` in points) takes its labels:
    on its curved stretch, where the flattest direction is overdamped (the rate changes
    with the learning rate, so the line reads as a contour); and on heavy ball's plateau
    (``on_plateau``), where the line runs flat along ``mu = rho^2``, a second one saying
    why (``ρ=0.9=√μ``); on the rest of the line if neither fits, or where the rest
    is an underdamped piece of its own that is not flat (Nesterov's). Each in the
    larger size where it fits. Returns ``[(vertex, size, text, box)]``, ``box`` the
    label's outline in points."""
    finite = np.all(np.isfinite(pts), axis=1)
    lr, mu = np.where(finite, pts[:, 0], 1.0), np.where(finite, np.clip(pts[:, 1], 0.0, 0.9999), 0.0)
    over = finite & (lr * g.h[0] < theory.critical_damping(mu, nesterov))
    flat = finite & on_plateau(lr, mu, g.h, nesterov)
    curved, rest = np.where(over[:, None], line, np.nan), np.where(over[:, None], np.nan, line)
    placed = []

    def place(part, avoid, plateau):
        for size in (LABEL_SIZE, style.NOTE_SIZE):  # the smallest text only where the larger fits nowhere
            height = text_size("ρ", size)[1] + 3.0
            text = label_text(level, plateau=plateau)
            length = text_size(text, size)[0] + 8.0
            spot = label_place(part, [*blocked, avoid, *(p[3] for p in placed)], length, height, size_pts)
            if spot is not None:
                box = _box(line[finite], int(np.sum(finite[:spot])), length, height)
                placed.append((spot, size, text, box))
                return

    place(curved, line[finite & ~over], False)
    if flat.any():
        place(np.where(flat[:, None], line, np.nan), line[finite & ~flat], True)
    if not placed:
        place(rest, line[over], False)
    elif (finite & ~over & ~flat).any():  # an underdamped piece of its own (Nesterov's): its level too
        place(np.where((finite & ~over & ~flat)[:, None], line, np.nan), line[finite & (over | flat)], False)
    return placed


def label_text(level: float, cap: float | None = None, steps: int | None = None, plateau: bool = False) -> str:
    """A contour's label: its level alone (the legend's entry says what the cap's level
    is: the rate at which the flattest direction's loss falls to tol in the cap's updates);
    on heavy ball's plateau (``on_plateau``) also why the line runs flat there.

    >>> label_text(0.9), label_text(0.963, 0.963, 150), label_text(0.9, plateau=True)
    ('ρ=0.9', 'ρ=0.963', 'ρ=0.9=√μ')
    """
    return f"ρ={level:g}=√μ" if plateau else f"ρ={level:g}"


def _box_outline(ax, text_artist):
    """A text's box (estimated from its size) as a closed polyline in data coordinates."""
    w, h = text_size(text_artist.get_text(), text_artist.get_fontsize())
    bbox = ax.get_window_extent()
    dpi = root_figure(ax).dpi
    fw, fh = (w + 6) / (bbox.width * 72 / dpi), (h + 4) / (bbox.height * 72 / dpi)
    x, y = ax.transLimits.transform(ax.transScale.transform(text_artist.get_position()))
    u = np.linspace(x - fw / 2, x + fw / 2, 12)
    v = np.linspace(y - fh / 2, y + fh / 2, 6)
    pts = np.concatenate(
        [
            np.c_[u, np.full_like(u, v[0])],
            np.c_[u, np.full_like(u, v[-1])],
            np.c_[np.full_like(v, u[0]), v],
            np.c_[np.full_like(v, u[-1]), v],
            np.c_[u, np.full_like(u, y)],
        ]
    )
    data = ax.transScale.inverted().transform(ax.transLimits.inverted().transform(pts))
    return data


def draw_contours(
    ax: Axes, key: str, nesterov: bool, g: _MapGrid, levels: Iterable[float], avoid: Iterable[ArrayLike]
) -> tuple[ContourSet, list[Text]]:
    """The worst mode's iso-rate contours of one rule at ``levels`` on the fine grid of
    ``g`` (a ``phase._MapGrid``), masked by ``contour_mask``, each labelled once where
    its label keeps clear of the ``avoid`` polylines, the region names already on
    ``ax`` and the other levels; returns ``(ContourSet, labels)``."""
    assert g.h is not None  # contours are drawn on a quadratic's maps only
    look = style.ROLE_LOOKS["rate_level"]
    rho = theory.problem_rate(g.lr_f, g.mu_f, g.h, nesterov)
    rho = np.ma.masked_where(contour_mask(g.lr_f, g.mu_f, g.h, nesterov), rho)
    cs = ax.contour(g.lr_f, g.mu_f, rho, levels=list(levels), colors=look.color, linewidths=look.lw, zorder=look.zorder)
    cs.set_gid(f"rate:{key}")
    cs.set(path_effects=outline("0.15", 2.0))
    if np.isfinite(g.cap):
        _keep_overdamped(cs, g.cap, g, nesterov)
    _drop_short_pieces(cs, ax, g)
    paths = [np.asarray(p.vertices) for p in cs.get_paths()]  # arrays already (the stub says ArrayLike)
    names = [_box_outline(ax, t) for t in ax.texts if (t.get_gid() or "").startswith("region-label:")]
    to_points = _points_transform(ax, (g.lr_e[0], g.lr_e[-1]), (g.mu_e[0], g.mu_e[-1]))
    placed = []
    blocked = [to_points(a) for a in [*avoid, *names]]
    cs_levels = np.asarray(cs.levels)  # an array already (the stub says Iterable)
    for i in range(len(paths)):
        others = [to_points(p) for k, p in enumerate(paths) if k != i and len(p)]
        pts = _joined(cs.get_paths()[i])
        spots = _place_labels(to_points(pts), pts, cs_levels[i], [*blocked, *others], to_points.size, g, nesterov)
        placed += [(cs_levels[i], tuple(pts[k]), size, text) for k, size, text, _ in spots]
        blocked += [box for *_, box in spots]  # the labels' own boxes, for the next labels to keep off
    labels = []
    for level, xy, size, text in placed:
        labels += ax.clabel(cs, [level], fontsize=size, inline_spacing=3, manual=[xy], fmt={level: text})
    _drop_short_pieces(cs, ax, g, MIN_STUB)
    for t in labels:
        t.set_path_effects(outline("white", 2.5))
        t.set_color("black")
        t.set_gid(f"rate-label:{key}")
    return cs, list(labels)
