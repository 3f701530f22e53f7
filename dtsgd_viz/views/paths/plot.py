"""Update paths: each optimizer's trajectory on the loss contours, one update taken
apart into its terms as arrows on the paths, and the loss per update beside it: one
idea, the paths. ``step=k`` is optimizer update k as ``recording.steps`` counts them.
The anatomy of that update up close, one panel per run, is ``plot_update``
(``views.update.plot``); ``zoom=True`` puts those panels under the paths instead.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic()
    >>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9),
    ...                          "nesterov": dict(learning_rate=0.05, momentum=0.9,
    ...                                           nesterov=True)}, steps=6)
    >>> fig = dtsgd_viz.plot_paths(recs, s, step=3, arrows=True)   # a matplotlib Figure
    >>> fig.axes[0].get_title()
    'Update 3: its terms as arrows'
    >>> sorted(a.get_gid() for a in fig.axes[0].collections if "arrow" in (a.get_gid() or ""))
    ['arrow:momentum:gradient', 'arrow:momentum:momentum', 'arrow:nesterov:gradient', 'arrow:nesterov:lookahead']
    >>> len(fig.axes)                                     # the paths and the loss, no zoom
    2
    >>> len(dtsgd_viz.plot_paths(recs, s, step=3, zoom=True).axes)   # and a panel per run
    4

Without ``step``, ``plot_paths`` takes apart the update where the runs differ most (the
largest distance between their parameters after it) and its title says so::

    >>> dtsgd_viz.plot_paths(recs, s, arrows=True).axes[0].get_title()
    'Update 4: where the runs differ most'

By default the update is only ringed on each whole path, and drawn as arrows only
where every arrow is long enough to see (``MIN_ARROW_PX``); else the caption
names ``plot_update``, which takes it apart up close.

``animate(recs, s)`` returns a ``FuncAnimation`` of the same figure going through the
run (``anim.save("paths.gif", writer="pillow")``).

Parameters of more than two numbers are drawn on the plane of their top two
principal directions (all paths together), and the loss is evaluated on that plane,
so the contours under a projected path are real. Geometry comes from the pure
``views.paths.geometry`` and ``views.update.geometry``, put together in a
``views.paths.scene.PathScene``; ``views.paths.frames`` draws it and ``views.paths.animation``
animates it; this module is the public face.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from . import geometry as geo
from .animation import animate
from .findings import findings_of
from .frames import UPDATE_NOTE, PathArtists, caption_text, draw_scene, ring_k
from .loss import air_between_ends, mark_window, nest_loss_dots
from .names import open_rings_on_star
from .scene import PathScene, build_scene, default_update
from .titles import MIN_ARROW_PX, arrow_lengths, path_title, short_arrows, short_note  # noqa: F401

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface

__all__ = ["plot_paths", "animate", "draw_paths", "PathsView"]


def plot_paths(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    step: int | None = None,
    *,
    name: str | None = None,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None = None,
    arrows: bool | None = None,
    zoom: bool = False,
) -> Figure:
    """Paths of every optimizer on the loss contours of ``surface``, and loss per update.

    Args:
      recordings: ``{config name: Recording}`` (what ``dtsgd_viz.run`` returns) or one
        ``Recording``.
      surface: the ``dtsgd_viz.surfaces`` surface the recordings were made on.
      step: the optimizer update to take apart, as ``recording.steps`` counts them
        (the first update is 1; ``-1`` is the last, ``-2`` the one before). Its terms
        are drawn as arrows from the parameter before it: classical momentum
        ``mu*v_prev`` then ``-lr*g``; Nesterov (tf-keras form) ``mu*v_new`` then
        ``-lr*g``; they add up to the recorded update. Each path is drawn whole in
        its rule's look, the parameters before the update ringed on it (the caption
        says so). The loss panel marks the same update with a dashed line. ``plot_update`` draws
        it up close (for Nesterov with the look-ahead point, where the gradient was
        taken). None (default): the update where the runs
        differ most (``path_scene.default_update``: the largest distance between their
        parameters after it, among the updates that can be taken apart; one run: its
        longest update), which the path panel's title names as such.
      name: the recorded variable (default: the only one).
      ax: None for a new figure, one Axes (path panel only), or a pair
        ``(path_ax, loss_ax)`` (no zoomed panels then).
      arrows: True to draw the update's terms as arrows on the paths, False to only
        ring it; None (default): arrows only where every arrow is at least
        ``MIN_ARROW_PX`` long on the panel, else none, and the caption
        names ``plot_update``. Arrows need kinds ``grad`` and
        ``velocity`` and the update before ``step`` recorded; where the recording
        lacks them (``Recorder(every=3)``) the update is marked without arrows and a
        note on the path panel says why, as ``PathExplorer`` does.
      zoom: True to add, in a new figure, a zoomed panel per run under the paths (what
        ``plot_update`` draws on its own, at full width); default False: one idea per
        figure, the paths.

    Returns the matplotlib ``Figure`` (never shown, nothing printed).
    """
    scene = build_scene(recordings, surface, name)
    update = geo.check_step(
        step, {k: r.steps for k, r in scene.recordings.items()}, none="the update where the runs differ most"
    )
    auto = update is None
    if auto:
        update = default_update(scene)
    # laid out once (to name the runs) with the caption's notes in place; the caption's
    # last changes below keep its height, else the figure is laid out again before the
    # rings and loss dots are measured on it
    fig, art = draw_scene(
        scene,
        update,
        ax,
        arrows is not False,
        zoom=zoom,
        auto=auto,
        run_names=ax is None,
        whole=True,
        notes=not zoom and update is not None,
    )
    laid_out = art.caption.get_text().count("\n") if art.caption is not None else None
    if ax is None:
        air_between_ends(art)  # on the laid-out figure (draw_scene laid it out to name the runs)
        mark_window(art, findings_of(scene))  # the updates whose mean loss the headline compares
    if zoom or update is None:
        return fig
    assert art.title is not None  # draw_scene titles the path panel
    tail = art.caption_tail
    short = short_arrows(scene, art, update) if art.arrows else []
    speck = art.arrows and min(arrow_lengths(art).values()) < MIN_ARROW_PX
    if art.arrows and arrows is None and (short or speck):
        # too short to see at the paths' scale: none at all, plot_update draws them up close
        for q in art.arrows.values():
            q.remove()
        art.arrows.clear()
        art.title.set_text(path_title(scene, update, auto, tuple(scene.coords)))
        tail = UPDATE_NOTE.format(k=int(update))
    elif art.arrows and short:
        # asked for: the title names only the runs whose arrows show
        art.title.set_text(path_title(scene, update, auto, short))
        tail = "\n".join(t for t in (art.caption_tail, short_note(scene, update, short)) if t)
    elif arrows is False and art.note is None:
        art.title.set_text(path_title(scene, update, auto, tuple(scene.coords)))
        tail = UPDATE_NOTE.format(k=int(update))
    art.caption_tail = tail

    def caption(dots_meet: bool = True) -> str:
        head = caption_text(update, tail, True, ring_k(scene, update), dots_meet)
        return head + ("\n" + art.caption_notes if art.caption_notes else "")

    if ax is None:  # the rings on the star and the loss dots, measured on the final layout
        if art.caption is not None and caption().count("\n") != laid_out:
            art.caption.set_text(caption())
            fig.draw_without_rendering()
        open_rings_on_star(art)
        met = nest_loss_dots(art.loss_markers)
        if art.caption is not None:
            art.caption.set_text(caption(met))
    return fig


@dataclasses.dataclass(frozen=True, eq=False)
class PathsView:
    """What ``draw_paths`` drew, for widgets that update it in place.

    ``scene`` holds the geometry (``coords``: each config's path in plot coordinates,
    ``losses``, ``plane``, ``colors``, ``box``, ``recordings``, ``name``); ``artists``
    the artists that follow the update (``positions``, ``arrows`` keyed by
    ``(config, term)``, ``trails``, ``zoom_boxes``, ``zoom_axes``, ``loss_markers``,
    ``step_line``, ``title``) and the static ``paths``, ``ax_path`` and ``ax_loss``.
    ``update`` is the update drawn (None if none).
    """

    figure: Figure
    scene: PathScene
    artists: PathArtists
    arrows: bool
    update: int | None = None


def draw_paths(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    step: int | None = None,
    *,
    name: str | None = None,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None = None,
    arrows: bool | None = True,
    zoom: bool = True,
    note: str | None = None,
    diverged: Mapping[str, int | None] | None = None,
) -> PathsView:
    """Like ``plot_paths`` (same arguments and errors) but returns the ``PathsView``;
    ``step=None`` here picks no update (the widgets' paths without arrows).
    ``note``: a note for the path panel (why there are no arrows), drawn as
    ``plot_paths`` draws its own. ``diverged``: ``{config: update}`` of the runs that
    diverged and the update at which they left the view (None: found from the paths,
    ``path_geometry.diverged_runs``); those paths are drawn up to there and named in
    a note on the path and loss panels."""
    scene = build_scene(recordings, surface, name, diverged)
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()})
    fig, art = draw_scene(scene, update, ax, arrows, zoom=zoom, note=note)
    return PathsView(fig, scene, art, bool(arrows) and art.note is None, update)
