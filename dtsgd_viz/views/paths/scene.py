"""A path figure's scene (every number it draws, from the checked input, before drawing) and the path panel's title."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.empty import check_not_empty
from ..update import geometry as upd
from . import geometry as geo

if TYPE_CHECKING:
    from types import SimpleNamespace

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface


@dataclasses.dataclass(frozen=True, eq=False)
class PathScene:
    """Everything a path figure shows, computed before any drawing."""

    surface: Surface
    name: str
    recordings: dict[str, Recording]
    colors: dict[str, str]
    plane: geo.Plane
    coords: dict[str, np.ndarray]  # config -> (n_steps + 1, 2) plot coordinates of the path
    box: geo.Box
    grid: tuple[np.ndarray, np.ndarray, np.ndarray]  # X, Y, Z
    levels: np.ndarray
    minima: np.ndarray  # (k, 2) plot coordinates
    minima_off_plane: float
    starts: np.ndarray  # (m, 2) distinct starts
    # config -> (k, loss after k updates, from_surface): k = 0 and each recorded update
    losses: dict[str, tuple[np.ndarray, np.ndarray, bool]]
    diverged: dict[str, int | None] = dataclasses.field(default_factory=dict)  # config -> update it left the view


def _as_dict(recordings: Any) -> dict[str, Recording]:  # anything given: checked here
    if hasattr(recordings, "path") and hasattr(recordings, "steps"):
        recordings = {"recording": recordings}
    if not isinstance(recordings, Mapping) or not recordings:
        raise ValueError(
            "recordings must be a non-empty dict {config name: Recording} (as dtsgd_viz.run "
            f"returns) or one Recording. Received: {recordings!r}."
        )
    for key, rec in recordings.items():
        if not (hasattr(rec, "path") and hasattr(rec, "steps")):
            raise TypeError(f"recordings[{key!r}] must be a Recording. Received: {type(rec).__name__}.")
        check_not_empty(rec, key)
    return dict(recordings)


def build_scene(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    name: str | None,
    diverged: Mapping[str, int | None] | None = None,
) -> PathScene:
    """The checked ``PathScene`` of ``recordings`` on ``surface``; ``diverged``: ``{config: update}`` (None: found)."""
    recordings = _as_dict(recordings)
    if not all(hasattr(surface, a) for a in ("shape", "value_np", "minimum")):
        raise TypeError(
            "surface must be a dtsgd_viz.surfaces surface (with shape, value_np and "
            f"minimum). Received: {type(surface).__name__}."
        )
    name = geo.select_variable(recordings, name)
    shape = tuple(surface.shape)
    dim = int(np.prod(shape))
    for key, rec in recordings.items():
        got = tuple(rec.shape(name))
        if got != shape:
            raise ValueError(
                f"Cannot draw {key!r} on {type(surface).__name__}: the surface takes parameters "
                f"of shape {shape} ({dim} numbers), but recorded variable {name!r} has shape "
                f"{got}. Pass the surface the recordings were made on."
            )
    if dim < 2:
        raise ValueError(
            f"plot_paths draws parameters of 2 or more numbers on a plane. Received: a surface of shape {shape}."
        )
    paths = {k: r.path(name).astype(np.float64).reshape(-1, dim) for k, r in recordings.items()}
    plane = geo.identity_plane() if dim == 2 else geo.pca_plane(list(paths.values()))
    coords = {k: geo.project(p, plane) for k, p in paths.items()}
    view_box = getattr(surface, "view_box", None) if plane.is_identity else None
    if diverged is None:
        diverged = geo.diverged_runs(coords, view_box)
    diverged = {k: (None if u is None else int(u)) for k, u in diverged.items() if k in coords}
    # a diverged run counts for the box only until it leaves the view
    kept = [c if k not in diverged else c[: geo.drawn_length(len(c), diverged[k]) - 1] for k, c in coords.items()]
    minima_flat = np.asarray(surface.minimum, np.float64).reshape(-1, dim)
    minima = geo.project(minima_flat, plane)
    box = geo.plot_box(view_box, np.concatenate(kept + _near(minima, np.concatenate(kept))))
    grid = geo.loss_grid(surface.value_np, plane, shape, box)
    off = float(np.max(np.linalg.norm(geo.lift(minima, plane) - minima_flat, axis=-1)))
    starts = np.unique(np.round(np.stack([c[0] for c in coords.values()]), 12), axis=0)
    losses: dict[str, tuple[np.ndarray, np.ndarray, bool]] = {}
    for k, r in recordings.items():
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.asarray(surface.value_np(paths[k].reshape(-1, *shape)), np.float64)
        losses[k] = (np.concatenate([[0], np.asarray(r.steps, np.int64)]), values, True)
    return PathScene(
        surface,
        name,
        recordings,
        style.optimizer_colors(recordings),
        plane,
        coords,
        box,
        grid,
        geo.log_levels(grid[2]),
        minima,
        off,
        starts,
        losses,
        diverged,
    )


def _near(points: np.ndarray, coords: np.ndarray, grow: float = 0.5) -> list[np.ndarray]:
    """``points`` within the finite ``coords``' box grown by ``grow`` each side."""
    c = coords[np.all(np.isfinite(coords), axis=1)]
    if not len(c):
        return []
    lo, hi = c.min(axis=0), c.max(axis=0)
    pad = grow * (hi - lo)
    ok = np.all((points >= lo - pad) & (points <= hi + pad), axis=1)
    return [points[ok]] if ok.any() else []


def default_update(scene: PathScene | SimpleNamespace, upto: int | None = None) -> int | None:
    """The update ``plot_paths`` takes apart when none is named: where the runs are furthest apart (``compared_paths``),
    up to ``upto``, drawable as arrows where any is, and before any run left the view."""
    recs = list(scene.recordings.values())
    n = min(len(r) for r in recs)
    if n == 0:
        return None
    allowed = np.ones(n, bool)
    if upto is not None:
        allowed &= np.asarray(recs[0].steps[:n]) <= int(upto)
    for _key, at in scene.diverged.items():
        if at is not None:
            allowed[max(0, int(at) - 1) :] = False  # update ``at`` is where it left
    arrows = np.ones(n, bool)  # update_geometry.why_no_arrows for every update at once
    for r in recs:
        steps = np.asarray(r.steps[:n], np.int64)
        arrows &= {"param", "grad", "velocity"} <= set(r.kinds)
        arrows &= steps == np.concatenate([[0], steps[:-1]]) + 1
    if (allowed & arrows).any():
        allowed &= arrows
    i = geo.most_different_index(compared_paths(scene), allowed)
    if i is None:
        i = int(np.flatnonzero(allowed)[0]) if allowed.any() else 0
    return int(recs[0].steps[i])


def compared_paths(scene: PathScene | SimpleNamespace) -> list[np.ndarray]:
    """The flat paths "furthest apart" compares: the runs with momentum when two have it, else all."""
    recs = list(scene.recordings.values())
    with_mu = [r for r in recs if r.hyperparameters.momentum]
    return [
        r.path(scene.name).astype(np.float64).reshape(len(r) + 1, -1) for r in (with_mu if len(with_mu) >= 2 else recs)
    ]


def settings_line(scene: PathScene) -> str:
    """The settings under the headline: surface, learning rate, momentum, plane, starts."""
    hps = {k: r.hyperparameters for k, r in scene.recordings.items()}
    lrs = {float(np.asarray(h.learning_rate).flat[0]) for h in hps.values() if len(h.learning_rate)}
    mus = {float(h.momentum) for h in hps.values() if h.momentum}
    if len(lrs) <= 1 and len(mus) <= 1:
        parts = [f"lr {lr:g}" for lr in lrs] + [f"μ {mu:g}" for mu in mus]
        hp = ", ".join(parts)
    else:
        hp = "; ".join(
            f"{k}: lr {float(np.asarray(h.learning_rate).flat[0]):g}, μ {float(h.momentum):g}"
            for k, h in hps.items()
            if len(h.learning_rate)
        )
    label = getattr(scene.surface, "label", type(scene.surface).__name__)
    what = "2 parameters" if scene.plane.is_identity else f"{scene.plane.dim} parameters, top 2 principal directions"
    start = "same start" if len(scene.starts) == 1 else f"{len(scene.starts)} starts"
    return " · ".join(p for p in (label, hp, what, start) if p)


def minimum_on_plane(scene: PathScene) -> bool:
    """Whether the minimum lies on the drawn plane (always for a 2-D surface)."""
    scale = max(1.0, float(np.abs(scene.plane.origin).max()))
    return scene.plane.is_identity or scene.minima_off_plane < 1e-6 * scale


def ring_index(scene: PathScene, key: str, update: int) -> int:
    """The path point ``key``'s ring marks at ``update``: the parameters after it.

    >>> import types
    >>> s = types.SimpleNamespace(recordings={"a": types.SimpleNamespace(steps=[1, 2, 3])}, coords={"a": [0] * 4})
    >>> ring_index(s, "a", 2)
    2
    """
    i = geo.step_index(scene.recordings[key].steps, update)
    return min(i + 1, len(scene.coords[key]) - 1)


MIN_ARROW_FRAC = 0.045  # an arrow shorter than this fraction of the panel's span is too short to see


def path_title(scene: PathScene, update: int | None, auto: bool = False, short: Collection[str] = ()) -> str:
    """The path panel's title at ``update`` (None: none picked); ``auto``: picked as where the runs differ most;
    ``short``: the runs whose arrows are not drawn (all: the update is only marked)."""
    if update is None:
        return "Paths on the loss contours"
    marked = set(scene.coords) <= set(short)
    if auto:
        return f"Update {int(update)}" + (" marked: " if marked else ": ") + "where the runs differ most"
    return f"Update {int(update)}" + (" marked" if marked else ": its terms as arrows")


def short_runs(scene: PathScene, update: int, every: bool = False) -> list[str]:
    """The runs whose ``update``'s every term (``every``: any non-zero term) is under ``MIN_ARROW_FRAC`` of the span."""
    span = max(float(np.ptp(scene.box[0])), float(np.ptp(scene.box[1])))
    out = []
    for key, rec in scene.recordings.items():
        i = geo.step_index(rec.steps, update)
        if upd.why_no_arrows(rec, i):
            continue  # no arrows at all: the path panel's note says why
        terms = upd.decompose_update(rec, scene.name, i)
        lengths = [float(np.hypot(*uv)) for _, _, uv in upd.arrow_chain(terms, scene.plane)]
        seen = [x >= MIN_ARROW_FRAC * span for x in lengths if x > 0 or not every]
        if not (all(seen) if every else any(seen)):
            out.append(key)
    return out
