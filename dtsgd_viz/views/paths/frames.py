"""Drawing a path figure from its ``PathScene`` once, its legend, and the pieces that follow the update."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib import patheffects

from ..core import style
from ..core.figure import headline, new_figure, root_figure
from ..update import geometry as upd
from ..update import panel
from . import geometry as geo
from .findings import findings_of
from .loss import draw_loss, mark_window, mean_handle, mean_look
from .scene import PathScene, minimum_on_plane, path_title, ring_index, settings_line

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.lines import Line2D
    from matplotlib.quiver import Quiver
    from matplotlib.text import Text
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike


@dataclasses.dataclass
class PathArtists:
    """The artists an animation (or a widget) updates in place."""

    ax_path: Axes
    ax_loss: Axes | None
    paths: dict[str, Line2D]
    positions: dict[str, Line2D] = dataclasses.field(default_factory=dict)
    arrows: dict[tuple[str, str], Quiver] = dataclasses.field(default_factory=dict)  # (config, term) -> Quiver
    loss_markers: dict[str, Line2D] = dataclasses.field(default_factory=dict)
    loss_lines: dict[str, Line2D] = dataclasses.field(default_factory=dict)
    trails: dict[str, LineCollection] = dataclasses.field(default_factory=dict)
    zoom_axes: dict[str, Axes] = dataclasses.field(default_factory=dict)
    step_line: Line2D | None = None
    title: Text | None = None
    note: Text | None = None  # the Text saying why no arrows are drawn, if any
    rests: dict[str, Line2D] = dataclasses.field(default_factory=dict)  # config -> the whole run, thin
    caption: Text | None = None  # the figure's caption, if any
    whole: bool = False  # each path drawn whole (``plot_paths``)
    thin: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # config -> the path's points drawn
    loss_thin: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # config -> the loss line's points
    legend: Legend | None = None


SQUARE_PATHS_SIZE = (style.WIDTH, 5.0)  # paths and loss, the paths' equal-aspect panel about as tall as wide
_LOWEST_Z = min(look.zorder for look in style.RULE_LOOKS.values())  # the remainders keep the rules' order
REST_TINT = 0.4  # a path after the update shown: its colour this far towards white
REST_WIDTH = 1.3  # and at most this wide, in the rule's dash
REST_SHARE = 0.7  # and at most this share of its rule's width (thinner than its path)
CONTOUR_ALPHA = 0.3


def _index(scene: PathScene, key: str, update: int) -> int:
    return geo.step_index(scene.recordings[key].steps, update)


def draw_scene(
    scene: PathScene,
    update: int | None,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None,
    arrows: bool | None,
    *,
    note: str | None = None,
    auto: bool = False,
    whole: bool = False,
    legend: bool = True,
) -> tuple[Figure, PathArtists]:
    """Draw ``scene`` at ``update`` (None: none) on ``ax`` (None: a new figure with the headline; one Axes: the
    paths only; a pair: paths and loss). ``whole``: each path drawn whole, else up to the update over its run drawn
    thin; ``auto``: the update was picked; ``legend``: name the marks. Returns the figure and its ``PathArtists``."""
    if arrows and update is not None and note is None:
        note = _why_no_arrows(scene, update)
        if note:
            arrows = False
    fig, ax_path, ax_loss, own = _axes(scene, ax)
    _draw_contours(scene, ax_path)
    looks = style.run_looks(scene.coords)
    art = PathArtists(ax_path, ax_loss, {}, whole=whole)
    picked = update is not None
    thin_paths(scene, art, update)
    _draw_path_lines(scene, art, looks, picked and not whole)
    draw_start_and_minima(scene, ax_path)
    _frame_path_axes(scene, ax_path)
    if picked:
        _draw_step(scene, update, art, arrows, looks)
    short = () if arrows or not picked else tuple(scene.coords)  # no arrows: "update k marked"
    art.title = ax_path.set_title(path_title(scene, update, auto, short), fontsize=style.TITLE_SIZE)
    _draw_notes(scene, art, note)
    if ax_loss is not None:
        draw_loss(scene, update, art, looks)
    ring = f"after update {int(update)}" if picked else None
    if own:  # over the updates whose mean loss the headline compares
        found = findings_of(scene)
        mark_window(art, found)
        if legend:
            art.legend = row_legend(fig, scene, looks, ring, found.ranking)
    elif legend:  # on someone else's axes: a short legend on the paths
        art.legend = ax_path.legend(
            handles=legend_handles(scene, looks, ring),
            fontsize=style.NOTE_SIZE,
            loc="best",
            framealpha=0.9,
            handlelength=style.handle_length(),
        )
    return fig, art


def _axes(scene: PathScene, ax: Axes | tuple[Axes, Axes] | list[Axes] | None) -> tuple[Figure, Axes, Axes | None, bool]:
    """``(fig, path_ax, loss_ax, own)``: a new figure has the headline over the panels."""
    if ax is None:
        fig = new_figure(SQUARE_PATHS_SIZE if scene.plane.is_identity else style.PATHS_SIZE_NO_ZOOM)
        headline(fig, findings_of(scene).headline(), settings_line(scene))
        (x0, x1), (y0, y1) = scene.box  # the equal-aspect paths panel as wide as its box needs
        wide = float(np.clip(1.05 * (x1 - x0) / (y1 - y0), 1.05, 1.8)) if y1 > y0 else 1.05
        ax_path, ax_loss = fig.subplots(1, 2, gridspec_kw=dict(width_ratios=[wide, 1.0]))
        return fig, ax_path, ax_loss, True
    if isinstance(ax, (tuple, list)):
        if len(ax) != 2:
            raise ValueError(f"ax must be one Axes or a pair (path_ax, loss_ax). Received: {len(ax)} axes.")
        return root_figure(ax[0]), ax[0], ax[1], False
    if not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes, a pair of them, or None. Received: {ax!r}.")
    return root_figure(ax), ax, None, False


def thin_paths(scene: PathScene, art: PathArtists, update: int | None = None) -> dict[str, np.ndarray]:
    """``art.thin``: each run's point indices its line passes through on ``art``'s figure, keeping the update
    shown, the lowest loss and the extremes; lines drawn whole are set to them. Call again after the figure grows."""
    fig = art.ax_path.figure
    scale, limit = geo.pixel_scale(scene.box, fig), geo.vertex_limit(fig)
    out: dict[str, np.ndarray] = {}
    for key, c in scene.coords.items():
        n = geo.drawn_length(len(c), scene.diverged.get(key))
        keep: list[int] = []
        if update is not None:
            i = _index(scene, key, update)
            keep += [i, i + 1]
        loss = scene.losses.get(key, (None, np.zeros(0), None))[1]
        with np.errstate(invalid="ignore"):
            ok = np.flatnonzero(np.isfinite(loss[:n]))
        if len(ok):  # loss[k] is the loss at path point k
            keep.append(int(ok[np.argmin(loss[ok])]))
        keep += extreme_points(c[:n])
        out[key] = geo.thin_indices(c[:n], scale, keep, limit=limit)
    art.thin = out
    for key, line in art.rests.items():
        line.set_data(scene.coords[key][out[key]].T)
    if art.whole:
        for key, line in art.paths.items():
            line.set_data(scene.coords[key][out[key]].T)
    return out


def extreme_points(c: ArrayLike) -> list[int]:
    """The indices of the finite points of ``c`` (n, 2) furthest left, right, down and up."""
    c = np.asarray(c, np.float64).reshape(-1, 2)
    ok = np.flatnonzero(np.all(np.isfinite(c), axis=1))
    if not len(ok):
        return []
    f = c[ok]
    return [int(ok[j]) for j in (*np.argmin(f, axis=0), *np.argmax(f, axis=0))]


def _why_no_arrows(scene: PathScene, update: int) -> str | None:
    """The first run's reason the update can't be drawn as arrows, or None."""
    for key, rec in scene.recordings.items():
        note = upd.why_no_arrows(rec, _index(scene, key, update))
        if note:
            return note
    return None


def _draw_path_lines(scene: PathScene, art: PathArtists, looks: Mapping[str, style.Look], split: bool) -> None:
    """Each run's path through ``art.thin`` and, when ``split``, its whole run under it (``rest_line``)."""
    for key, c in scene.coords.items():
        look = looks[key]
        c = c[art.thin[key]]
        if split:  # in the rules' order, below every path and above the contours
            line = rest_line(look)
            line["zorder"] += look.zorder - _LOWEST_Z
            (art.rests[key],) = art.ax_path.plot(c[:, 0], c[:, 1], **line, gid=f"path-rest:{key}")
        (art.paths[key],) = art.ax_path.plot(c[:, 0], c[:, 1], **look.line(), label=key, gid=f"path:{key}")
        if width := look.casing():  # a thin line over the wider ones: in a white casing, it shows
            art.paths[key].set_path_effects([patheffects.withStroke(linewidth=width, foreground="white")])


def rest_line(look: style.Look) -> dict[str, Any]:
    """``ax.plot`` keywords of a run's whole run under its growing path or loss curve: tinted, thinner, its dash."""
    assert look.color is not None  # run_looks colours every run
    line = style.ROLE_LOOKS["remainder"].line(panel.tint(look.color, REST_TINT))
    line.update(ls=look.ls, lw=min(REST_WIDTH, REST_SHARE * look.lw), marker="")
    return line


def follow_update(scene: PathScene, art: PathArtists, update: int) -> list[Artist]:
    """Draw each path up to ``update`` (one drawn whole stays); returns the artists changed."""
    changed: list[Artist] = []
    if art.whole:
        return changed
    for key, line in art.paths.items():
        c = scene.coords[key]
        i = _index(scene, key, update)
        n = min(i + 2, geo.drawn_length(len(c), scene.diverged.get(key)))
        shown = geo.up_to(art.thin.get(key), n, i)  # thinned, the update's point exact
        line.set_data(c[shown, 0], c[shown, 1])
        changed.append(line)
    return changed


def axis_names(scene: PathScene) -> tuple[str, str]:
    """The paths panel's axes: the parameters, or the plane's principal directions (with their shares)."""
    if scene.plane.is_identity:
        return f"{scene.name}[0]", f"{scene.name}[1]"
    e1, e2 = scene.plane.explained or (np.nan, np.nan)  # a principal plane's
    return f"principal direction 1 of {scene.name} ({e1:.0%})", f"principal direction 2 ({e2:.0%})"


def _frame_path_axes(scene: PathScene, ax_path: Axes) -> None:
    """Limits and axis labels (``axis_names``)."""
    ax_path.set_xlim(*scene.box[0])
    ax_path.set_ylim(*scene.box[1])
    ax_path.set_xlabel(axis_names(scene)[0], fontsize=style.LABEL_SIZE)
    ax_path.set_ylabel(axis_names(scene)[1], fontsize=style.LABEL_SIZE)
    ax_path.set_aspect("equal", adjustable="box")  # a plane's distances and angles as they are
    ax_path.tick_params(labelsize=style.TICK_SIZE)


def _draw_notes(scene: PathScene, art: PathArtists, note: str | None) -> None:
    """The path panel's notes: the runs that diverged, why no arrows."""
    box = dict(fc="white", ec="0.7", alpha=0.9, pad=2.0)
    where: dict[str, Any] = dict(
        transform=art.ax_path.transAxes, va="bottom", fontsize=style.NOTE_SIZE, zorder=8, bbox=box
    )
    if scene.diverged:
        text = "\n".join(f"{k}: diverged" + (f" at update {u}" if u else "") for k, u in scene.diverged.items())
        art.ax_path.text(0.99, 0.01, text, ha="right", color="#A04000", gid="diverged-note", **where)
    if note:
        art.note = art.ax_path.text(0.01, 0.01, note, ha="left", color="0.2", gid="arrows-note", wrap=True, **where)


def _draw_contours(scene: PathScene, ax: Axes) -> None:
    """Pale filled log-spaced loss contours and white level lines (no colour bar)."""
    from matplotlib.colors import LogNorm

    X, Y, Z = scene.grid
    lv = scene.levels
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = LogNorm(lv[0], lv[-1])
        ax.contourf(
            X, Y, np.clip(Z, lv[0], lv[-1]), levels=lv, cmap=style.SEQUENTIAL_CMAP, norm=norm, alpha=CONTOUR_ALPHA
        )
        ax.contour(X, Y, Z, levels=lv, colors="white", linewidths=0.6, alpha=0.8)


def set_trail(trail: LineCollection, coords: np.ndarray, index: int, color: ColorType) -> None:
    """Point the fading ``trail`` at the path up to ``index``."""
    seg = panel.trail_segments(coords, index)
    trail.set_segments(list(seg))
    trail.set_color(panel.fade_rgba(color, len(seg)))  # pyright: ignore[reportArgumentType]  # an (n, 4) RGBA array


def panel_at(scene: PathScene, key: str, index: int, arrows: bool | None) -> panel.PanelData:
    """The ``PanelData`` of ``key``'s close-up at recording index ``index``."""
    rec = scene.recordings[key]
    update = upd.decompose_update(rec, scene.name, index)
    chain, points = upd.arrow_chain(update, scene.plane), upd.nesterov_points(update, scene.plane)
    return panel.panel_data(key, int(rec.steps[index]), scene.coords[key], index, chain, points, scene.box)


def _draw_step(
    scene: PathScene, update: int, art: PathArtists, arrows: bool | None, looks: Mapping[str, style.Look]
) -> None:
    """Each run's open ring at ``update`` (the star and paths show through it), its fading trail (split paths
    only) and, with ``arrows``, the update's terms as arrows tip to tail."""
    from matplotlib.collections import LineCollection

    ax, cur = art.ax_path, style.ROLE_LOOKS["current"]
    for key, rec in scene.recordings.items():
        look, c = looks[key], scene.coords[key]
        assert look.color is not None  # run_looks colours every run
        i, j = _index(scene, key, update), ring_index(scene, key, update)
        if not art.whole:  # on its own path, under the next run's (the rules' order)
            art.trails[key] = LineCollection(
                [], linewidths=look.lw, linestyles=[look.ls], gid=f"trail:{key}", zorder=look.zorder + 0.05
            )
            ax.add_collection(art.trails[key])
            set_trail(art.trails[key], c, j, look.color)
        (art.positions[key],) = ax.plot(
            [c[j, 0]], [c[j, 1]], cur.marker, ms=cur.ms, mfc="none", mec=look.color, mew=cur.lw, zorder=cur.zorder
        )  # in a white halo: it reads on its own path and over the star
        art.positions[key].set(
            gid=f"position:{key}", path_effects=[patheffects.withStroke(linewidth=3.0, foreground="w")]
        )
        if not arrows:
            continue
        for term, tail, uv in upd.arrow_chain(upd.decompose_update(rec, scene.name, i), scene.plane):
            face = panel.term_color(term, look.color)
            q = ax.quiver(tail[:1], tail[1:], uv[:1], uv[1:], color=face, edgecolor=look.color, **PATH_ARROW)
            art.arrows[(key, term)] = q
            q.set_gid(f"arrow:{key}:{term}")
    follow_update(scene, art, update)


def stacked_over(moving: Sequence[Artist]) -> list[Artist]:
    """The still artists a full draw puts over some ``moving`` ones (the start over the trails), for blitting."""
    out: list[Artist] = []
    for ax in {a.axes for a in moving if getattr(a, "axes", None) is not None}:
        assert ax is not None
        mine = [a for a in moving if a.axes is ax]
        low = min(a.get_zorder() for a in mine)
        out += [
            a
            for a in [*ax.lines, *ax.collections, *ax.patches, *ax.texts]
            if a not in mine and a.get_zorder() > low and a.get_visible()
        ]
    return out


def row_legend(
    fig: Figure, scene: PathScene, looks: Mapping[str, style.Look], ring: str | None, means: Iterable[str]
) -> Legend:
    """The one-row legend under a paths figure's panels: ``legend_handles`` and the mean bars of the runs ``means``."""
    handles = legend_handles(scene, looks, ring)
    bars = [mean_look(looks[k].color or "black") for k in means]
    handles += [mean_handle(bars)] if bars else []
    return fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=len(handles),
        fontsize=style.NOTE_SIZE,
        frameon=False,
        handlelength=style.handle_length(),
        columnspacing=1.0,  # seven entries in one row across the figure
    )


# an update's terms on the paths, at their true length (quiver's keywords)
PATH_ARROW: dict[str, Any] = dict(
    angles="xy", scale_units="xy", scale=1.0, width=0.008, minlength=0, linewidth=0.6, zorder=7
)
PATH_ARROW |= dict(headwidth=3.2, headlength=3.8, headaxislength=3.4)
REST_LABEL = "later updates"  # a legend's name of each run's pale line after the update shown
STAR_HALO = 1.2  # points of white round the star: its edge reads over the contours


def minimum_label(scene: PathScene) -> str:
    """``"minimum"`` (``"minima"``), with ``" (projected)"`` when it lies off the plane."""
    return ("minima" if len(scene.minima) > 1 else "minimum") + ("" if minimum_on_plane(scene) else " (projected)")


def _star_face(scene: PathScene) -> str:
    """The star's face: yellow on the plane, open for a minimum projected onto it."""
    return style.MINIMUM_FACE if minimum_on_plane(scene) else "none"


def draw_start_and_minima(scene: PathScene, ax_path: Axes) -> None:
    """The start points and the minima in ``ROLE_LOOKS``' looks (the legend names them)."""
    start, star = style.ROLE_LOOKS["start"], style.ROLE_LOOKS["minimum"]
    s, m = scene.starts, scene.minima
    ax_path.plot(s[:, 0], s[:, 1], start.marker, ms=start.ms, mfc="white", mec=start.color, mew=start.lw, ls="none")
    ax_path.lines[-1].set(label="start", gid="start", zorder=start.zorder)
    halo = [patheffects.withStroke(linewidth=STAR_HALO, foreground="white")]
    ax_path.plot(m[:, 0], m[:, 1], star.marker, ms=star.ms, mfc=_star_face(scene), mec=star.color, mew=star.lw)
    ax_path.lines[-1].set(ls="none", label=minimum_label(scene), gid="minimum", zorder=star.zorder, path_effects=halo)


def legend_handles(scene: PathScene, looks: Mapping[str, style.Look], ring: str | None = None) -> list:
    """The legend's entries: each run's line, the start, the minimum and, with ``ring``, the update's ring."""
    from matplotlib.lines import Line2D

    start, star, cur = style.ROLE_LOOKS["start"], style.ROLE_LOOKS["minimum"], style.ROLE_LOOKS["current"]
    out: list[Any] = [Line2D([], [], **looks[k].line(), label=geo.rule_name(k)) for k in scene.coords]
    out.append(Line2D([], [], ls="none", marker=start.marker, ms=start.ms, mfc="white", mec=start.color, label="start"))
    out.append(Line2D([], [], ls="none", marker=star.marker, ms=star.ms, mfc=_star_face(scene), mec=star.color))
    out[-1].set_label(minimum_label(scene))
    if ring:  # each run's ring, in its colour as drawn, side by side (a HandlerTuple entry)
        mark = dict(ls="none", marker=cur.marker, ms=cur.ms, mfc="none", mew=cur.lw)
        out.append(mean_handle([dict(mark, mec=looks[k].color) for k in scene.coords], label=ring))
    return out
