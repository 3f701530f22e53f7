"""Drawing a path figure from its ``PathScene``: the headline (what the runs did) over
the settings, the loss contours, the paths in their rules' looks (``style.run_looks``)
up to the update shown and thin after it, the start and minimum named in place (off the
current markers), the update taken apart into arrows (with a zoomed panel per run), the
loss per update (``views.paths.loss``) and notes; and the pieces that follow the update
(``follow_update``, ``set_trail``, ``draw_zoom``, ``path_title``), which ``plot_paths``,
the animation and ``PathExplorer`` share. Geometry comes from ``views.paths.geometry``
and ``views.update.geometry``; this module only draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.figure import headline, new_figure, root_figure
from ..update import geometry as upd
from ..update import panel
from . import geometry as geo
from . import thin
from .blit import stacked_over  # noqa: F401  (re-exported: the widgets import it here)
from .findings import finding
from .lanes import draw_lanes, draw_lanes_and_casings, lane_note, shift_step
from .loss import draw_loss
from .names import NAME_OFFSET, _drawn, draw_start_and_minima, name_runs, open_rings_on_star, place_names  # noqa: F401
from .scene import PathScene, scene_notes, settings_line
from .titles import path_title, short_note

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.collections import LineCollection
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle
    from matplotlib.quiver import Quiver
    from matplotlib.text import Annotation, Text
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

__all__ = [
    "PathArtists",
    "ring_k",
    "draw_scene",
    "draw_zoom",
    "follow_update",
    "set_trail",
    "path_title",
    "panel_at",
    "stacked_over",
    "caption_text",
    "short_note",
    "thin_paths",
]


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
    trails: dict[str, LineCollection] = dataclasses.field(default_factory=dict)  # config -> LineCollection
    zoom_boxes: dict[str, Rectangle] = dataclasses.field(default_factory=dict)  # config -> Rectangle
    zoom_axes: dict[str, Axes] = dataclasses.field(default_factory=dict)  # config -> Axes
    step_line: Line2D | None = None
    title: Text | None = None
    loss_labels: dict[str, Text] = dataclasses.field(default_factory=dict)  # config -> its name on its loss line
    note: Text | None = None  # the Text saying why no arrows are drawn, if any
    diverged_note: Text | None = None  # the Text naming the runs that diverged and when
    rests: dict[str, Line2D] = dataclasses.field(default_factory=dict)  # config -> the whole run, thin
    # "start-label"/"minimum-label" -> Annotation
    names: dict[str, Annotation] = dataclasses.field(default_factory=dict)
    caption: Text | None = None  # the figure's caption (it names the update shown), if any
    caption_tail: str = ""  # the caption's lines after that
    run_names: dict[str, Annotation] = dataclasses.field(default_factory=dict)  # config -> its name on its path
    whole: bool = False  # each path drawn whole in its rule's look (``plot_paths``), not split
    # config -> its casing where paths coincide
    casings: dict[str, LineCollection] = dataclasses.field(default_factory=dict)
    # config -> its (dx, dy) points off its data
    lanes: dict[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    # config -> the path's points drawn (``thin_paths``)
    thin: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)
    loss_thin: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # config -> the loss line's points drawn
    caption_notes: str = ""  # the caption's last lines (lanes, scene), if ``draw_scene(notes=True)``
    # the animation's own (``animate``): every frame's ring points, whether the start and
    # minimum names were placed off them, and the loss curves' whole runs drawn thin
    frame_marks: list[np.ndarray] = dataclasses.field(default_factory=list)
    names_placed: bool = False
    loss_rests: dict[str, Line2D] = dataclasses.field(default_factory=dict)


ZOOM_CAPTION = (
    "Each run's update up close: μ·v in the run's colour, then −lr·g in its light tint, "
    "tip to tail at their true length;\nzoom ×N: N times closer than the paths panel, its dotted box there"
)
ARROW_CAPTION = "arrows: μ·v in the run's colour, then −lr·g in its light tint, tip to tail"
REST_CAPTION = (
    "Paths up to update {k}: each rule's line and markers; after update {k}: thin line, lighter, in the rule's dash"
)
DOTS_MEET = ", ringed where dots meet"  # dropped from a still figure whose dots are apart
WHOLE_CAPTION = (
    "Each path whole in its rule's look; rings: the parameters before update {k}\n"
    "(in the loss panel: the dashed line at k = {j}, a dot per run" + DOTS_MEET + ")"
)
UPDATE_NOTE = "plot_update(..., step={k}) takes update {k} apart into its terms as arrows"


SQUARE_PATHS_SIZE = (style.WIDTH, 5.3)  # paths and loss, the paths' equal-aspect panel as tall as wide
CAPTION_SIZE = style.LABEL_SIZE  # a caption under the panels reads as their labels do


def caption_text(
    update: int, tail: str = "", whole: bool = False, before: int | None = None, dots_meet: bool = True
) -> str:
    """The caption of a figure showing ``update``: what the paths' looks mean (``whole``:
    each path drawn whole, the update ringed at ``before`` updates made: ``ring_k``;
    None: ``update - 1``; ``dots_meet``: the loss dots are ringed where they meet,
    ``nest_loss_dots``), then ``tail``."""
    head = (WHOLE_CAPTION if dots_meet else WHOLE_CAPTION.replace(DOTS_MEET, "")) if whole else REST_CAPTION
    j = int(update) - 1 if before is None else int(before)
    return head.format(k=int(update), j=j) + ("\n" + tail if tail else "")


def ring_k(scene: PathScene, update: int) -> int:
    """The k of the ring at ``update``: the updates made before it (its recorded point
    before, as the loss panel's dot and dashed line are drawn at)."""
    first = next(iter(scene.recordings))
    return int(scene.losses[first][0][_index(scene, first, update)])


def _axes(
    scene: PathScene,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None,
    art_caption: dict[str, Any],
    zoom_keys: tuple[str, ...] = (),
    arrows: bool | None = False,
    update: int | None = None,
    whole: bool = False,
) -> tuple[Figure, Axes, Axes | None, dict[str, Axes], bool]:
    """``(fig, path_ax, loss_ax, zoom_axes, own)``: a new figure has the headline
    (``finding``, ``settings_line``), a caption (``caption_text``, kept in the dict
    ``art_caption``) and, with ``zoom_keys``, a second row holding one zoomed panel per run."""
    if ax is None:
        tail = ZOOM_CAPTION if zoom_keys else ARROW_CAPTION if arrows else ""
        text = tail if update is None else caption_text(update, tail, whole, ring_k(scene, update))
        art_caption["caption_tail"] = tail
        fig = new_figure(
            style.PATHS_SIZE
            if zoom_keys
            else SQUARE_PATHS_SIZE
            if scene.plane.is_identity
            else style.PATHS_SIZE_NO_ZOOM
        )
        body = headline(fig, finding(scene), settings_line(scene))
        top = body
        if zoom_keys:
            rows = body.subfigures(2, 1, height_ratios=[1.1, 1.0], hspace=0.02)
            assert isinstance(rows, np.ndarray)  # two of them
            top, bottom = rows
        ax_path, ax_loss = top.subplots(1, 2, gridspec_kw=dict(width_ratios=[1.05, 1.0]))
        if not zoom_keys:
            if text:
                art_caption["caption"] = body.supxlabel(text, fontsize=CAPTION_SIZE, color=style.SUBTITLE_COLOR)
            return fig, ax_path, ax_loss, {}, True
        zooms = bottom.subplots(1, len(zoom_keys), squeeze=False)[0]
        art_caption["caption"] = bottom.suptitle(text, fontsize=style.NOTE_SIZE, color=style.SUBTITLE_COLOR)
        return fig, ax_path, ax_loss, dict(zip(zoom_keys, zooms)), True
    if isinstance(ax, (tuple, list)):
        if len(ax) != 2:
            raise ValueError(f"ax must be one Axes or a pair (path_ax, loss_ax). Received: {len(ax)} axes.")
        return root_figure(ax[0]), ax[0], ax[1], {}, False
    if not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes, a pair of them, or None. Received: {ax!r}.")
    return root_figure(ax), ax, None, {}, False


def _index(scene: PathScene, key: str, update: int) -> int:
    return geo.step_index(scene.recordings[key].steps, update)


def draw_scene(
    scene: PathScene,
    update: int | None,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None,
    arrows: bool | None,
    zoom: bool = True,
    note: str | None = None,
    auto: bool = False,
    run_names: bool = False,
    whole: bool = False,
    notes: bool = False,
) -> tuple[Figure, PathArtists]:
    """Draw ``scene`` at ``update`` (None: no update picked) on ``ax`` (None: a new
    figure, with a zoomed panel per run if ``zoom`` and there are arrows); with an
    update, each path is drawn in its rule's look up to it and as a thin line over the
    whole run under that (``follow_update`` moves the split); ``auto``:
    the update was picked as where the runs differ most (the title says so); ``whole``:
    each path drawn whole in its rule's look, the update only ringed (no thin rest, no
    trail: ``plot_paths``; the widgets keep the split, they step through the run);
    ``run_names``: write each run's name on its path (``path_names.name_runs``);
    ``notes``: the caption ends with the lanes' and the scene's notes (``lane_note``,
    ``scene_notes``: ``art.caption_notes``), there before the figure is laid out, so the
    layout the names are placed on keeps its height. Returns the figure and the
    ``PathArtists`` that follow the update."""
    if arrows and update is not None and note is None:
        # draw what the recording allows: without the update before, no arrows, and say why
        note = _why_no_arrows(scene, update)
        if note:
            arrows = False

    zoom_keys = tuple(scene.coords) if (zoom and arrows and update is not None) else ()
    caption: dict[str, Any] = {}
    fig, ax_path, ax_loss, zoom_axes, own = _axes(
        scene, ax, caption, zoom_keys, arrows and update is not None, update, whole
    )
    _draw_contours(scene, ax_path)
    looks = style.run_looks(scene.coords)

    art = PathArtists(ax_path, ax_loss, {}, zoom_axes=zoom_axes, whole=whole, **caption)
    # a dot per step while the dots stay apart; long runs are clearer as a line (thinned)
    dots = max(len(c) for c in scene.coords.values()) <= thin.EXACT_POINTS
    picked = update is not None
    thin_paths(scene, art, update)
    _draw_path_lines(scene, art, looks, dots, picked and not whole)
    drawn = {k: _drawn(scene, k, art) for k in scene.coords}
    if whole or not picked:  # drawn whole: shared first legs side by side, other coincidences cased
        art.lanes, art.casings = draw_lanes_and_casings(scene, art, looks, drawn)
    else:  # split at the update: the first legs side by side (the paths grow, so no casings)
        art.lanes = draw_lanes(scene, art, looks, drawn)
    art.names = draw_start_and_minima(scene, ax_path)
    _frame_path_axes(scene, ax_path)
    if picked:
        _draw_step(scene, update, art, arrows, looks)
        shift_step(art)  # the rings and arrows in their runs' lanes

    art.title = ax_path.set_title(path_title(scene, update, auto), fontsize=style.TITLE_SIZE)
    _draw_notes(scene, art, note)
    if notes and art.caption is not None:
        art.caption_notes = "\n".join(t for t in (lane_note(art), scene_notes(scene)) if t)
        if art.caption_notes:
            art.caption.set_text(art.caption.get_text() + "\n" + art.caption_notes)
    if ax_loss is not None:
        draw_loss(scene, update, art, looks)
    elif not own:  # one panel of someone else's figure: a short legend of the runs
        ax_path.legend(
            handles=_run_handles(scene, looks, dots, picked and not whole),
            fontsize=style.NOTE_SIZE,
            loc="best",
            framealpha=0.9,
        )
    if zoom_axes:  # lay the figure out, then place the panels' labels on their real sizes
        assert update is not None  # zoomed panels: at an update
        fig.draw_without_rendering()
        for key in zoom_axes:
            draw_zoom(scene, art, key, panel_at(scene, key, _index(scene, key, update), arrows))
    if run_names:
        if not zoom_axes:
            fig.draw_without_rendering()
        if picked:  # on the laid-out panel
            place_names(art, _update_ends(scene, update), scene)
        art.run_names = name_runs(scene, art, looks)
    return fig, art


def thin_paths(scene: PathScene, art: PathArtists, update: int | None = None) -> dict[str, np.ndarray]:
    """``art.thin``: for each run, the indices of the points of its drawn part (up to
    where it left the view) that its lines pass through on ``art``'s figure
    (``path_thin.thin_indices`` at ``pixel_scale``, at most ``vertex_limit``): the
    start, the end, the update shown and its next point, the lowest loss, the points
    furthest left, right, down and up (``extreme_points``), and what the line needs to
    look as the whole path does. Lines already drawn whole (the thin
    whole runs, a path drawn whole) are set to them. Call again after the figure grows."""
    fig = art.ax_path.figure
    scale, limit = thin.pixel_scale(scene.box, fig), thin.vertex_limit(fig)
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
        out[key] = thin.thin_indices(c[:n], scale, keep, limit=limit)
    art.thin = out
    for key, line in art.rests.items():
        line.set_data(scene.coords[key][out[key]].T)
    if art.whole:
        for key, line in art.paths.items():
            line.set_data(scene.coords[key][out[key]].T)
    return out


def extreme_points(c: ArrayLike) -> list[int]:
    """The indices of the finite points of ``c`` (n, 2) furthest left, right, down and
    up (the first of equals): a thinned line keeps them, so it spans what the path does."""
    c = np.asarray(c, np.float64).reshape(-1, 2)
    ok = np.flatnonzero(np.all(np.isfinite(c), axis=1))
    if not len(ok):
        return []
    f = c[ok]
    return [int(ok[j]) for j in (*np.argmin(f, axis=0), *np.argmax(f, axis=0))]


def _update_ends(scene: PathScene, update: int) -> list[np.ndarray]:
    ends = [(c, _index(scene, k, update)) for k, c in scene.coords.items()]
    return [p for c, i in ends for p in (c[i], c[min(i + 1, len(c) - 1)])]


def _why_no_arrows(scene: PathScene, update: int) -> str | None:
    """The first run's reason the update can't be drawn as arrows, or None."""
    for key, rec in scene.recordings.items():
        note = upd.why_no_arrows(rec, _index(scene, key, update))
        if note:
            return note
    return None


def _draw_path_lines(
    scene: PathScene, art: PathArtists, looks: Mapping[str, style.Look], dots: bool, picked: bool
) -> None:
    """Each run's path in its rule's look (``style.RULE_LOOKS``, opaque: the plain path
    on top reads as itself, not mixed into the others) and, with an update ``picked``,
    its whole run under every path as a thin lighter line without markers in the rule's
    dash (``ROLE_LOOKS["remainder"]``, ``REST_WIDTH``, ``REST_TINT``: the runs stay apart
    past the update), which shows past the update (``follow_update``)."""
    ax_path = art.ax_path
    rest = style.ROLE_LOOKS["remainder"]
    for key, c in scene.coords.items():
        look = looks[key]
        assert look.color is not None  # run_looks colours every run
        # a diverged run ends at the edge: drawn on, it would criss-cross the panel;
        # a long run is drawn through the points the panel's pixels can show (``thin_paths``)
        c = c[art.thin[key]] if key in art.thin else c[: geo.drawn_length(len(c), scene.diverged.get(key))]
        if picked:  # in the rules' order, below every path and above the contours
            line = rest.line(panel.tint(look.color, REST_TINT))
            line["zorder"] += look.zorder - _MIDDLE_Z
            line["ls"], line["lw"] = look.ls, min(REST_WIDTH, look.lw)
            (art.rests[key],) = ax_path.plot(c[:, 0], c[:, 1], **line, marker="", gid=f"path-rest:{key}")
        (art.paths[key],) = ax_path.plot(
            c[:, 0],
            c[:, 1],
            **look.line(),
            marker=_step_marker(key, look, dots),
            ms=look.ms,
            label=key,
            gid=f"path:{key}",
            alpha=1.0,
        )


# momentum's path loops round the minimum in many short steps: a mark at each would
# cover the other runs there, and its dash already tells it apart
NO_STEP_MARKERS = ("momentum",)


def _step_marker(key: str, look: style.Look, dots: bool) -> str:
    """The mark at each update on ``key``'s path: its rule's, while the dots stay apart
    (``dots``), except for the rules in ``NO_STEP_MARKERS``."""
    return look.marker if dots and style.rule_of(key) not in NO_STEP_MARKERS else ""


ZOOM_BOX_Z = style.ROLE_LOOKS["current"].zorder - 0.1  # a zoom box: over the paths and star, under the rings
# a close-up's box on the paths: dotted, so its edges never read as a dashed run's path
ZOOM_BOX_LOOK: dict[str, Any] = dict(fill=False, lw=1.3, ls=(0, (1.0, 1.8)), capstyle="round")
# the lowest rule: the remainders keep the rules' order from rest.zorder up
_MIDDLE_Z = style.RULE_LOOKS["momentum"].zorder
REST_TINT = 0.4  # a path after the update shown: its colour this far towards white
REST_WIDTH = 1.3  # and this wide (thinner than every rule's line), in the rule's dash


def _run_handles(scene: PathScene, looks: Mapping[str, style.Look], dots: bool, picked: bool = False) -> list[Line2D]:
    from matplotlib.lines import Line2D

    out = [
        Line2D([], [], **looks[k].line(), marker=_step_marker(k, looks[k], dots), ms=looks[k].ms, label=k)
        for k in scene.coords
    ]
    if picked:
        rest = style.ROLE_LOOKS["remainder"]
        out.append(Line2D([], [], **rest.line(panel.tint("0.3", REST_TINT)), label="after the update shown"))
    return out


def follow_update(scene: PathScene, art: PathArtists, update: int, names: bool = True) -> list[Artist]:
    """Point the parts that split at the update shown at ``update``: each path in its
    rule's look up to its end (the thin whole run stays under it), the caption's update
    number, and (``names``) the start and minimum names off the current markers. Returns
    the artists changed (the animation and ``PathExplorer`` call it every frame; the
    animation moves the names itself, only when something reaches them)."""
    changed: list[Artist] = []
    marks: list[np.ndarray] = []
    for key, line in art.paths.items():
        c = scene.coords[key]
        i = _index(scene, key, update)
        marks += [c[i], c[min(i + 1, len(c) - 1)]]
        if art.whole:  # drawn whole once; only the ring moves
            continue
        n = min(i + 2, geo.drawn_length(len(c), scene.diverged.get(key)))
        shown = thin.up_to(art.thin.get(key), n, i)  # thinned, the update's point exact
        line.set_data(c[shown, 0], c[shown, 1])
        changed.append(line)
    if art.caption is not None:
        art.caption.set_text(caption_text(update, art.caption_tail, art.whole, ring_k(scene, update)))
        changed.append(art.caption)
    return changed + (place_names(art, marks, scene) if names else [])


def _frame_path_axes(scene: PathScene, ax_path: Axes) -> None:
    """Limits and axis labels: the parameters, or the principal directions of the plane."""
    ax_path.set_xlim(*scene.box[0])
    ax_path.set_ylim(*scene.box[1])
    if scene.plane.is_identity:
        ax_path.set_xlabel(f"{scene.name}[0]", fontsize=style.LABEL_SIZE)
        ax_path.set_ylabel(f"{scene.name}[1]", fontsize=style.LABEL_SIZE)
        ax_path.set_aspect("equal", adjustable="box")
    else:
        assert scene.plane.explained is not None  # a principal plane's
        e1, e2 = scene.plane.explained
        ax_path.set_xlabel(
            f"principal direction 1 of {scene.name} ({e1:.0%} of path variance)", fontsize=style.LABEL_SIZE
        )
        ax_path.set_ylabel(f"principal direction 2 ({e2:.0%})", fontsize=style.LABEL_SIZE)
    ax_path.tick_params(labelsize=style.TICK_SIZE)


def _draw_notes(scene: PathScene, art: PathArtists, note: str | None) -> None:
    """The path panel's notes: the runs that diverged, and why there are no arrows."""
    ax_path, fs = art.ax_path, style.NOTE_SIZE
    if scene.diverged:
        art.diverged_note = ax_path.text(
            0.99,
            0.01,
            geo.diverged_note(scene.diverged) + "\n(left the view there; drawn up to it)",
            transform=ax_path.transAxes,
            ha="right",
            va="bottom",
            fontsize=fs,
            color="#A04000",
            gid="diverged-note",
            zorder=8,
            bbox=dict(fc="white", ec="#D55E00", alpha=0.92, pad=2.0),
        )
    if note:
        art.note = ax_path.text(
            0.01,
            0.01,
            note,
            transform=ax_path.transAxes,
            ha="left",
            va="bottom",
            fontsize=fs,
            color="0.2",
            gid="arrows-note",
            zorder=8,
            wrap=True,
            bbox=dict(fc="white", ec="0.7", alpha=0.9, pad=2.0),
        )


def _draw_contours(scene: PathScene, ax: Axes) -> None:
    """Pale filled log-spaced loss contours (so the paths stand out) and white level
    lines; the loss panel beside gives the values, so no colour bar."""
    from matplotlib.colors import LogNorm

    X, Y, Z = scene.grid
    levels = scene.levels
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.contourf(
            X,
            Y,
            np.clip(Z, levels[0], levels[-1]),
            levels=levels,
            cmap=style.SEQUENTIAL_CMAP,
            norm=LogNorm(levels[0], levels[-1]),
            alpha=CONTOUR_ALPHA,
        )
        ax.contour(X, Y, Z, levels=levels, colors="white", linewidths=0.6, alpha=0.8)


CONTOUR_ALPHA = 0.3


def set_trail(trail: LineCollection, coords: np.ndarray, index: int, color: ColorType) -> None:
    """Point the fading trail ``trail`` (a LineCollection) at the path up to ``index``."""
    seg = panel.trail_segments(coords, index)
    trail.set_segments(list(seg))
    trail.set_color(panel.fade_rgba(color, len(seg)))  # pyright: ignore[reportArgumentType]  # stubs: an (n, 4) RGBA array is a colour list too


def panel_at(scene: PathScene, key: str, index: int, arrows: bool | None) -> panel.PanelData:
    """The ``PanelData`` of ``key``'s zoomed panel at recording index ``index``."""
    rec = scene.recordings[key]
    update = upd.decompose_update(rec, scene.name, index)
    return panel.panel_data(
        key,
        int(rec.steps[index]),
        scene.coords[key],
        index,
        upd.arrow_chain(update, scene.plane),
        upd.nesterov_points(update, scene.plane),
        scene.box,
    )


def draw_zoom(scene: PathScene, art: PathArtists, key: str, data: panel.PanelData, avoid_path: bool = False) -> None:
    """Redraw ``key``'s zoomed panel and move its box on the path panel; ``avoid_path``:
    its labels keep off the path too (``update_panel.draw_update_panel``)."""
    panel.draw_update_panel(
        art.zoom_axes[key],
        scene,
        data,
        scene.colors[key],
        panel.run_styles(scene.coords)[key],
        scene.plane.is_identity,
        avoid_path=avoid_path,
    )
    if data.box is not None and key in art.zoom_boxes:
        (x0, x1), (y0, y1) = data.box
        art.zoom_boxes[key].set_bounds(x0, y0, x1 - x0, y1 - y0)


def _draw_step(
    scene: PathScene, update: int, art: PathArtists, arrows: bool | None, looks: Mapping[str, style.Look]
) -> None:
    """The fading trail, the position and (with ``arrows``) the update's terms as arrows
    of every run at ``update``, and each zoomed panel with its box on the paths."""
    from matplotlib.collections import LineCollection
    from matplotlib.patches import Rectangle

    ax = art.ax_path
    current = style.ROLE_LOOKS["current"]
    for key, rec in scene.recordings.items():
        look = looks[key]
        assert look.color is not None  # run_looks colours every run
        c = scene.coords[key]
        i = _index(scene, key, update)
        if not art.whole:
            # on its own path, under the next run's (the rules' order): no trail mixes into another run
            art.trails[key] = LineCollection(
                [], linewidths=look.lw, linestyles=[look.ls], gid=f"trail:{key}", zorder=look.zorder + 0.05
            )
            ax.add_collection(art.trails[key])
            set_trail(art.trails[key], c, i, look.color)
        (art.positions[key],) = ax.plot(
            [c[i, 0]],
            [c[i, 1]],
            current.marker,
            ms=current.ms,
            mfc="white",
            mec=look.color,
            mew=current.lw,
            gid=f"position:{key}",
            zorder=current.zorder,
        )
        if not arrows:
            continue
        decomposed = upd.decompose_update(rec, scene.name, i)
        for term, tail, uv in upd.arrow_chain(decomposed, scene.plane):
            q = ax.quiver(
                [tail[0]],
                [tail[1]],
                [uv[0]],
                [uv[1]],
                angles="xy",
                scale_units="xy",
                scale=1.0,
                color=panel.term_color(term, look.color),
                width=0.008,
                headwidth=3.2,
                headlength=3.8,
                headaxislength=3.4,
                edgecolor=look.color,
                minlength=0,
                linewidth=0.6,
                zorder=7,
                gid=f"arrow:{key}:{term}",
            )  # no blob on the star
            art.arrows[(key, term)] = q
        if key in art.zoom_axes:
            box = Rectangle(
                # over the star (under Nesterov's path) and under the rings
                (0, 0),
                0,
                0,
                ec=look.color,
                zorder=ZOOM_BOX_Z,
                **ZOOM_BOX_LOOK,
                gid=f"zoom-box:{key}",
            )
            ax.add_patch(box)
            art.zoom_boxes[key] = box
            draw_zoom(scene, art, key, panel_at(scene, key, i, arrows))
    follow_update(scene, art, update)
    open_rings_on_star(art)
