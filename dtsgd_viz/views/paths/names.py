"""The names on a path panel: the start and the minimum (a yellow star over the
paths, under every ring, box and label) named beside their points where no path runs
(``place_names``), and each run's name written on its own path where it runs clear of
the others (``name_runs``), so the runs are told apart by more than colour. Both place
with ``views.paths.labels`` (candidate spots scored in display pixels against every
path, marker, box and label, and the frame). ``views.paths.frames`` draws the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from . import geometry as geo
from .labels import (
    HARD,
    TOUCH,
    along_segments,
    best_spot,
    leader_cost,
    leader_through_boxes,
    panel_obstacles,
    place_text,
    renderer_of,
    text_box,
)
from .scene import minimum_on_plane

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.patheffects import AbstractPathEffect
    from matplotlib.text import Annotation
    from numpy.typing import ArrayLike

    from ..core.style import Look
    from .frames import PathArtists
    from .labels import Obstacles
    from .scene import PathScene

__all__ = ["draw_start_and_minima", "place_names", "name_runs", "open_rings_on_star", "NAME_OFFSET", "path_samples"]

NAME_OFFSET = (9.0, 7.0)  # points from the start / minimum to their names' corner
NAME_Z = 7.7
HALO = 3.0  # points of white around the names
STAR_HALO = 1.2  # points of white round the star: its edge reads over the paths under it
LEADER_HALO = 2.6  # points of white along the start's and minimum's leaders: they read across paths


def _halo(width: float = HALO) -> list[AbstractPathEffect]:
    from matplotlib import patheffects

    return [patheffects.withStroke(linewidth=width, foreground="white")]


def draw_start_and_minima(scene: PathScene, ax_path: Axes) -> dict[str, Annotation]:
    """The start points and the minima (an opaque yellow star, ``ROLE_LOOKS["minimum"]``:
    over the paths, under the rings, boxes, arrows and labels), each named
    beside it on a white box (``place_names`` moves it off the marks); returns
    ``{gid: Annotation}`` of the names. A minimum projected from more than two numbers
    says so (the caption says it lies off the plane)."""
    start, star = style.ROLE_LOOKS["start"], style.ROLE_LOOKS["minimum"]
    ax_path.plot(
        scene.starts[:, 0],
        scene.starts[:, 1],
        start.marker,
        ms=start.ms,
        mfc="white",
        mec=start.color,
        mew=start.lw,
        ls="none",
        label="start",
        gid="start",
        zorder=start.zorder,
    )
    on_plane = minimum_on_plane(scene)
    # projected: the caption says it lies off the plane (``MINIMUM_NOTE``)
    min_label = ("minima" if len(scene.minima) > 1 else "minimum") + ("" if on_plane else " (projected)")
    short = min_label
    ax_path.plot(
        scene.minima[:, 0],
        scene.minima[:, 1],
        star.marker,
        ms=star.ms,
        mfc=style.MINIMUM_FACE,
        mec=star.color,
        mew=star.lw,
        ls="none",
        label=short,
        gid="minimum",
        zorder=star.zorder,
        path_effects=_halo(STAR_HALO),
    )
    names = [("start", p, "start-label") for p in scene.starts[:1]]
    names += [(min_label, scene.minima[0], "minimum-label")]
    return {
        gid: ax_path.annotate(
            text,
            xy,  # pyright: ignore[reportArgumentType]  # stubs: xy is any (x, y) pair, an array too
            xytext=NAME_OFFSET,
            textcoords="offset points",
            ha="left",
            va="bottom",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            color="black",
            gid=gid,
            annotation_clip=True,
            zorder=NAME_Z,
            arrowprops=dict(
                arrowstyle="-", color="0.25", lw=0.8, shrinkA=0, shrinkB=3, path_effects=_halo(LEADER_HALO)
            ),
            bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85),
        )
        for text, xy, gid in names
    }


ON_STAR = 0.5  # of the star's radius: a ring whose face would cover this much of it opens its face


def open_rings_on_star(art: PathArtists) -> list[Line2D]:
    """A ring (``art.positions``) over the star shows it through: its face open where it
    would cover the star's inner part (its centre within its own radius plus ``ON_STAR``
    of the star's, ``star_reach``), white elsewhere (a ring beside the star keeps its
    white face, which reads over the paths). Call once the rings are where they are
    drawn; returns them."""
    ax = art.ax_path
    stars = [ln for ln in ax.lines if ln.get_gid() == "minimum"]
    if not stars or not art.positions:
        return []
    centres = ax.transData.transform(np.asarray(stars[0].get_xydata(), np.float64).reshape(-1, 2))
    rings = list(art.positions.values())
    for ring in rings:
        reach = star_reach(stars[0].get_markersize(), ring.get_markersize(), ax.figure.dpi)
        with np.errstate(invalid="ignore"):
            at = ring.get_transform().transform(np.asarray(ring.get_xydata(), np.float64).reshape(-1, 2))
        near = len(at) and np.min(np.hypot(*(centres - at[0]).T)) < reach
        ring.set_markerfacecolor("none" if near else "white")
    return rings


def star_reach(star_ms: float, ring_ms: float, dpi: float) -> float:
    """Pixels from the star's centre within which a ring's centre makes its face cover
    the star's inner ``ON_STAR`` (marker sizes in points)."""
    return (0.5 * ring_ms + ON_STAR * 0.5 * star_ms) * dpi / 72.0


def path_samples(coords: ArrayLike, per_segment: int = 6) -> np.ndarray:
    """Points along every segment of the path ``coords`` (finite ones only)."""
    c = np.asarray(coords, np.float64).reshape(-1, 2)
    if len(c) < 2:
        return c[np.isfinite(c).all(axis=1)]
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[:, None, None]
    pts = (c[:-1] + t * (c[1:] - c[:-1])).reshape(-1, 2)
    pts = np.concatenate([pts, c[-1:]])
    return pts[np.isfinite(pts).all(axis=1)]


def _drawn(scene: PathScene, key: str, art: PathArtists | None = None) -> np.ndarray:
    """``key``'s path as its line is drawn: up to where it left the view, through the
    points ``art.thin`` keeps (``path_frames.thin_paths``; all of them without ``art``)."""
    c = scene.coords[key]
    thinned = getattr(art, "thin", None) or {}
    if key in thinned:
        return c[thinned[key]]
    return c[: geo.drawn_length(len(c), scene.diverged.get(key))]


# pixels from a point's marker to its name's near side: out to where no path runs (a
# minimum inside a crowd of paths is named off it, on a leader)
NAME_RADII = (2.0, 5.0, 10.0, 18.0, 28.0, 40.0, 54.0, 70.0, 90.0, 115.0)
LEADER_WEIGHT = 5.0  # the cost of each path sample a name's leader crosses
LEADER_PX = 7.0  # a name further than this off its point's marker hangs on a leader


def _marker_radius(ax: Axes, gid: str | None) -> float:
    """Pixels from the start's (``gid`` ``start-label``) or the star's centre to its edge."""
    want = "start" if gid == "start-label" else "minimum"
    ms = max([ln.get_markersize() for ln in ax.lines if ln.get_gid() == want], default=0.0)
    return 0.5 * ms * ax.figure.dpi / 72.0 + 1.0


def place_names(art: PathArtists, marks: Iterable[ArrayLike] = (), scene: PathScene | None = None) -> list[Annotation]:
    """Put the start and minimum names (``art.names``) beside their points where no
    path, marker, box or other label is (``path_labels.best_spot``); ``marks`` (plot
    coordinates: the update's ends) are kept clear too. Returns the names."""
    ax = art.ax_path
    names = [a for a in art.names.values() if a.get_visible()]
    if not names:
        return []
    renderer = renderer_of(ax.figure)
    obs = panel_obstacles(art, skip=set(names))
    for m in marks:
        obs.add_marker(ax.transData.transform(np.asarray(m, np.float64)), 5.0)
    for ann in names:
        anchor = ax.transData.transform(np.asarray(ann.xy, np.float64))
        x0, y0, x1, y1 = text_box(ann, renderer)
        mark = _marker_radius(ax, ann.get_gid())
        pts = (obs.points, obs.weights)

        def leader(
            box: tuple[float, ...],
            anchor: np.ndarray = anchor,
            mark: float = mark,
            pts: tuple[np.ndarray, np.ndarray] = pts,
        ) -> float:  # the paths a leader crosses
            end = np.clip(anchor, box[:2], box[2:])
            d = end - anchor
            n = float(np.hypot(*d))
            if n <= mark + LEADER_PX:
                return 0.0
            start = anchor + d * (mark / n)
            return LEADER_WEIGHT * leader_cost(obs, start, end, points=pts) + HARD * leader_through_boxes(
                obs.boxes, start, end, anchor
            )

        box = best_spot(
            obs,
            anchor,
            (x1 - x0, y1 - y0),
            radii=tuple(mark + r for r in NAME_RADII),
            near=0.35,
            extra=leader,
            touch=TOUCH,
        )
        assert box is not None  # candidates round the anchor: one is the best
        place_text(ann, box, anchor)
        obs.add_box(box)
        far = np.hypot(*(np.clip(anchor, box[:2], box[2:]) - anchor)) > mark + LEADER_PX
        if ann.arrow_patch is not None:  # a leader only where the name sits off its point
            ann.arrow_patch.set_visible(bool(far))
    return names


def _px_samples(ax: Axes, c: ArrayLike, spacing: float = 3.0) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        xy = ax.transData.transform(np.asarray(c, np.float64).reshape(-1, 2))
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    return np.concatenate([xy, along_segments(xy, spacing, 500)]) if len(xy) else np.zeros((0, 2))


def _min_dist(a: ArrayLike, b: ArrayLike, within: float | None = None) -> np.ndarray:
    """Each point of ``a`` (n, 2): its distance to the nearest point of ``b`` (m, 2).
    With ``within``, only the points of ``b`` in the box of ``a`` grown by ``within``
    are measured (a distance beyond ``within`` may come back larger, or ``inf``):
    memory 512 * m at most."""
    a = np.asarray(a, np.float64).reshape(-1, 2)
    b = np.asarray(b, np.float64).reshape(-1, 2)
    if within is not None and len(a) and len(b):
        lo, hi = a.min(axis=0) - within, a.max(axis=0) + within
        b = b[(b[:, 0] >= lo[0]) & (b[:, 0] <= hi[0]) & (b[:, 1] >= lo[1]) & (b[:, 1] <= hi[1])]
    if not len(b):
        return np.full(len(a), np.inf)
    out = np.empty(len(a))
    for i in range(0, len(a), 512):
        d = a[i : i + 512, None, :] - b[None, :, :]
        out[i : i + 512] = np.sqrt(np.min(np.einsum("ijk,ijk->ij", d, d), axis=1))
    return out


RUN_RADII = (10.0, 16.0, 24.0, 34.0)  # pixels from a run's point to its name
LEADER_CROSSING = 12.0  # the cost of each of a leader's 12 samples on another run's path


def name_runs(scene: PathScene, art: PathArtists, looks: Mapping[str, Look]) -> dict[str, Annotation]:
    """Write each run's name (``path_geometry.rule_name``) beside a point of its own path
    that runs clear of the other runs, the start and the minima, on a thin leader in the
    run's colour: of the clearest points, the one whose name spot (``path_labels``) costs
    least, leader crossings of other paths included. Call once the figure is laid out.
    Returns ``{config: Annotation}``."""
    ax = art.ax_path
    if len(scene.coords) < 2:
        return {}
    renderer = renderer_of(ax.figure)
    f = ax.get_window_extent()
    samples = {k: _px_samples(ax, _drawn(scene, k, art)) for k in scene.coords}
    fixed = ax.transData.transform(np.concatenate([scene.starts, scene.minima]))
    out: dict[str, Annotation] = {}
    for key in scene.coords:
        color = looks[key].color
        ann = ax.annotate(
            geo.rule_name(key),
            _drawn(scene, key, art)[0],  # pyright: ignore[reportArgumentType]  # stubs: xy is any (x, y) pair, an array too
            xytext=(0, 0),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            color=color,
            gid=f"run-name:{key}",
            zorder=NAME_Z - 0.2,
            path_effects=_halo(),
            annotation_clip=False,
            arrowprops=dict(arrowstyle="-", color=color, lw=0.9, shrinkA=1, shrinkB=1),
        )
        x0, y0, x1, y1 = text_box(ann, renderer)
        size = (x1 - x0, y1 - y0)
        obs = panel_obstacles(art, skip={ann})
        others = np.concatenate([*(s for k, s in samples.items() if k != key), fixed])
        own_xy = _own_samples(ax, scene, art, key)  # the leader ends on the path
        own = ax.transData.transform(own_xy)
        inside = np.all((own > [f.x0 + 20, f.y0 + 20]) & (own < [f.x1 - 20, f.y1 - 20]), axis=1)
        if not inside.any():
            ann.remove()
            continue
        gap = _min_dist(own, others)
        gap[~inside] = -1.0
        order = np.argsort(-gap)[:40:2] if gap.max() > 0 else np.flatnonzero(inside)[:10]
        best = None
        for i in order:
            anchor = own[i]

            def leader(
                box: tuple[float, ...], anchor: np.ndarray = anchor
            ) -> float:  # other paths its leader would cross
                end = np.clip(anchor, box[:2], box[2:])
                seg = anchor + np.linspace(0.0, 1.0, 12)[:, None] * (end - anchor)
                near = _min_dist(seg, others, within=2.5)  # noqa: B023
                return LEADER_CROSSING * float(np.count_nonzero(near < 2.5))

            box = best_spot(obs, anchor, size, radii=RUN_RADII, extra=leader)
            assert box is not None  # candidates round the anchor: one is the best
            cost = _spot_total(obs, box, anchor, leader) - 0.2 * min(gap[i], 40.0)
            if best is None or cost < best[0]:
                best = (cost, i, box)
        assert best is not None  # some point of the path is inside the panel (checked above)
        _, i, box = best
        anchor = own[i]
        ann.xy = tuple(own_xy[i])
        place_text(ann, box, anchor)
        out[key] = ann
    return out


OWN_SPACING_PX = 4.0  # a thinned path's points a name may hang on: this far apart along it


def _own_samples(ax: Axes, scene: PathScene, art: PathArtists, key: str) -> np.ndarray:
    """The points of ``key``'s drawn path its name may hang on (plot coordinates):
    ``path_samples`` of the path as recorded; a thinned path (``art.thin``), whose few
    vertices stand for many updates, every ``OWN_SPACING_PX`` pixels along its line."""
    drawn = _drawn(scene, key, art)
    c = scene.coords[key]
    if len(drawn) >= geo.drawn_length(len(c), scene.diverged.get(key)):
        return path_samples(drawn)
    px = _px_samples(ax, drawn, spacing=OWN_SPACING_PX)
    return ax.transData.inverted().transform(px) if len(px) else path_samples(drawn)


def _spot_total(
    obs: Obstacles, box: tuple[float, ...], anchor: np.ndarray, leader: Callable[[tuple[float, ...]], float]
) -> float:
    from .labels import spot_cost

    r = float(np.hypot(*(np.clip(anchor, box[:2], box[2:]) - anchor)))
    return spot_cost(obs, box) + 0.15 * r + leader(box)
