"""The names on a path panel: the start and the minimum (starred, over every path, on a
white halo) named beside their points, off the current markers, the paths and the zoom
boxes (``place_names``), and each run's name written on its own path where it runs
clear of the others (``name_runs``), so the runs are told apart by more than colour.
``views.path_frames`` draws the rest of the figure.
"""

from __future__ import annotations

import numpy as np

from . import path_geometry as geo
from . import style
from .direct_labels import text_size

__all__ = ["draw_start_and_minima", "place_names", "name_runs", "NAME_OFFSET", "STAR_Z",
           "path_samples"]

NAME_OFFSET = (9.0, 7.0)   # points from the start / minimum to their names' corner
# the star and its name: over every path, trail, arrow and zoom box (a tangle of paths
# around the minimum never hides it)
STAR_Z = 7.6
HALO = 3.0   # points of white around the star and the names


def _halo(width=HALO):
    from matplotlib import patheffects
    return [patheffects.withStroke(linewidth=width, foreground="white")]


def draw_start_and_minima(scene, ax_path) -> dict:
    """The start points and the minima (starred, on a white halo over the paths), each
    named beside it on a white box (``place_names`` moves it off the marks); returns
    ``{gid: Annotation}`` of the names. A minimum projected from more than two numbers
    says so, and that the plane's own lowest point is elsewhere."""
    start, star = style.ROLE_LOOKS["start"], style.ROLE_LOOKS["minimum"]
    ax_path.plot(scene.starts[:, 0], scene.starts[:, 1], start.marker, ms=start.ms, mfc="white",
                 mec=start.color, mew=start.lw, ls="none", label="start", gid="start",
                 zorder=start.zorder)
    scale = max(1.0, float(np.abs(scene.plane.origin).max()))
    on_plane = scene.plane.is_identity or scene.minima_off_plane < 1e-6 * scale
    min_label = ("minima" if len(scene.minima) > 1 else "minimum") + (
        "" if on_plane else " (projected:\noff this plane, so not\nthe plane's lowest point)")
    short = min_label.split(":")[0] + (")" if ":" in min_label else "")   # the legend's
    ax_path.plot(scene.minima[:, 0], scene.minima[:, 1], star.marker, ms=star.ms, mfc=style.MINIMUM_FACE,
                 mec=star.color, mew=star.lw, ls="none", label=short, gid="minimum", zorder=STAR_Z,
                 path_effects=_halo())
    names = [("start", p, "start-label") for p in scene.starts[:1]]
    names += [(min_label, scene.minima[0], "minimum-label")]
    return {gid: ax_path.annotate(
        text, xy, xytext=NAME_OFFSET, textcoords="offset points", ha="left", va="bottom",
        fontsize=style.LABEL_SIZE if "\n" not in text else style.NOTE_SIZE + 0.5,
        fontweight="bold", color="black", gid=gid, annotation_clip=True, zorder=STAR_Z + 0.1,
        bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85)) for text, xy, gid in names}


def _scale(ax):
    """Points per data unit along x and y of the path panel, and its size in points."""
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    bbox = ax.get_window_extent()
    dpi = ax.figure.figure.dpi
    W, H = bbox.width * 72.0 / dpi, bbox.height * 72.0 / dpi
    if ax.get_aspect() == 1.0:   # an equal-aspect box is drawn square
        W = H = min(W, H)
    return np.array([W / ((x1 - x0) or 1.0), H / ((y1 - y0) or 1.0)]), (W, H)


def path_samples(coords, per_segment=6) -> np.ndarray:
    """Points along every segment of the path ``coords`` (finite ones only)."""
    c = np.asarray(coords, np.float64).reshape(-1, 2)
    if len(c) < 2:
        return c[np.isfinite(c).all(axis=1)]
    t = np.linspace(0.0, 1.0, per_segment, endpoint=False)[:, None, None]
    pts = (c[:-1] + t * (c[1:] - c[:-1])).reshape(-1, 2)
    pts = np.concatenate([pts, c[-1:]])
    return pts[np.isfinite(pts).all(axis=1)]


def _drawn(scene, key):
    c = scene.coords[key]
    return c[:geo.drawn_length(len(c), scene.diverged.get(key))]


def _box_edges(art) -> list:
    """Points along the edges of the zoom boxes on the path panel."""
    out = []
    t = np.linspace(0.0, 1.0, 12)
    for box in art.zoom_boxes.values():
        x, y, w, h = box.get_x(), box.get_y(), box.get_width(), box.get_height()
        if w <= 0 or h <= 0:
            continue
        out += [np.column_stack([x + w * t, np.full_like(t, y)]), np.column_stack([x + w * t, np.full_like(t, y + h)]),
                np.column_stack([np.full_like(t, x), y + h * t]), np.column_stack([np.full_like(t, x + w), y + h * t])]
    return out


def place_names(art, marks, scene=None) -> list:
    """Put the start and minimum names (``art.names``) on the side of their points away
    from ``marks`` (plot coordinates: the current markers and the update's ends), each
    other's points and, with ``scene``, the paths near them and the zoom boxes
    (``path_geometry.label_side``); returns the names."""
    ax = art.ax_path
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    scale, _ = _scale(ax)
    anchors = [np.asarray(a.xy, np.float64) for a in art.names.values()]
    lines = []
    if scene is not None:
        lines = [path_samples(_drawn(scene, k)) for k in scene.coords] + _box_edges(art)
    lines = np.concatenate(lines) if lines else np.zeros((0, 2))
    for ann, anchor in zip(art.names.values(), anchors):
        others = [m for m in [*marks, *anchors] if m is not anchor]
        marks_pt = (np.asarray(others, np.float64).reshape(-1, 2) - anchor) * scale
        w, h = text_size(ann.get_text(), ann.get_fontsize())
        room = tuple(zip((np.array([x0, y0]) - anchor) * scale, (np.array([x1, y1]) - anchor) * scale))
        size = (1.1 * w, h)
        # off the marks first (they must show); off the paths and boxes too where a side allows
        sx, sy = geo.label_side(np.concatenate([marks_pt, (lines - anchor) * scale]), size, NAME_OFFSET,
                                clear=4.0, room=room)
        if _gap(marks_pt, (sx, sy), size) < 4.0:
            sx, sy = geo.label_side(marks_pt, size, NAME_OFFSET, room=room)
        ann.xyann = (sx * NAME_OFFSET[0], sy * NAME_OFFSET[1])
        ann.set_horizontalalignment("left" if sx > 0 else "right")
        ann.set_verticalalignment("bottom" if sy > 0 else "top")
    return list(art.names.values())


def _bold_length(art, key) -> int:
    """How many points of ``key``'s path are drawn in its rule's look (the rest is thin)."""
    line = art.paths.get(key)
    return len(line.get_xdata()) if line is not None else 0


def _gap(pts, side, size, offset=NAME_OFFSET) -> float:
    """How far (points) the label of ``size`` at ``side`` of its anchor is from ``pts``."""
    if not len(pts):
        return np.inf
    (sx, sy), (w, h), (dx, dy) = side, size, offset
    xs, ys = sorted((sx * dx, sx * (dx + w))), sorted((sy * dy, sy * (dy + h)))
    gx = np.maximum(0.0, np.maximum(xs[0] - pts[:, 0], pts[:, 0] - xs[1]))
    gy = np.maximum(0.0, np.maximum(ys[0] - pts[:, 1], pts[:, 1] - ys[1]))
    return float(np.hypot(gx, gy).min())


def name_runs(scene, art, looks) -> dict:
    """Write each run's name (``path_geometry.rule_name``) on its own path, at the point
    of its drawn path furthest from the other runs' paths, the start and the minima,
    beside it off every path (``update_geometry.place_labels``), on a thin leader in the
    run's colour. Call once the figure is laid out. Returns ``{config: Annotation}``."""
    from .update_geometry import place_labels
    ax = art.ax_path
    if len(scene.coords) < 2:
        return {}
    (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
    scale, (W, H) = _scale(ax)
    to_pt = lambda p: (np.asarray(p, np.float64).reshape(-1, 2) - [x0, y0]) * scale  # noqa: E731
    samples = {k: to_pt(path_samples(_drawn(scene, k))) for k in scene.coords}
    fixed = to_pt(np.concatenate([scene.starts, scene.minima]))
    every = np.concatenate([*samples.values(), fixed])
    # the start and minimum names' boxes (laid out): no run's name on them
    dpi, origin = ax.figure.figure.dpi, ax.get_window_extent()
    for ann in art.names.values():
        e = ann.get_window_extent()
        gx, gy = np.meshgrid(np.linspace(e.x0, e.x1, 6), np.linspace(e.y0, e.y1, 3))
        box = (np.column_stack([gx.ravel(), gy.ravel()]) - [origin.x0, origin.y0]) * 72.0 / dpi
        fixed = np.concatenate([fixed, box])
    every = np.concatenate([*samples.values(), fixed])
    anchors, sizes, keys = [], [], []
    for key in scene.coords:
        c = _drawn(scene, key)
        n = min(len(c), _bold_length(art, key))
        own, bold = samples[key], np.arange(len(samples[key])) < (n - 1) * 6
        inside = np.all((own > 30) & (own < np.array([W, H]) - 30), axis=1)
        if not inside.any():
            continue
        others = np.concatenate([*(s for k, s in samples.items() if k != key), fixed, *anchors])
        gap = np.min(np.linalg.norm(own[:, None, :] - others[None, :, :], axis=-1), axis=1)
        gap[~inside] = -1.0
        # on the part drawn bold when it runs clear of the others there, else the clearest point
        pick = np.where(bold, gap, -1.0) if (bold & (gap >= 14.0)).any() else gap
        clear = np.flatnonzero(pick >= min(28.0, pick.max()))
        anchors.append(own[clear[0]][None])
        sizes.append(text_size(geo.rule_name(key), style.LABEL_SIZE))
        keys.append(key)
    spots = place_labels([a[0] for a in anchors], sizes, every, (W, H), radii=(12.0, 20.0, 30.0))
    out = {}
    for key, a, (dx, dy, ha, va) in zip(keys, anchors, spots):
        xy = a[0] / scale + [x0, y0]
        color = looks[key].color
        out[key] = ax.annotate(
            geo.rule_name(key), xy, xytext=(dx, dy), textcoords="offset points", ha=ha, va=va,
            fontsize=style.LABEL_SIZE, fontweight="bold", color=color, gid=f"run-name:{key}",
            zorder=STAR_Z - 0.3, path_effects=_halo(), annotation_clip=False,
            arrowprops=dict(arrowstyle="-", color=color, lw=0.9, shrinkA=0, shrinkB=1))
    return out
