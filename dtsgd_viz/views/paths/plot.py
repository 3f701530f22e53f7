"""Update paths: each optimizer's trajectory on the loss contours, the update shown ringed
on every path (its terms as arrows where they are long enough to see), and the loss per
update beside it: one idea, the paths. ``step=k`` is optimizer update k as
``recording.steps`` counts them. The anatomy of that update up close, one panel per run,
is ``plot_update`` (``views.update.plot``).

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
    >>> len(fig.axes)                                     # the paths and the loss
    2

Without ``step``, ``plot_paths`` marks the update after which the runs' parameters are
furthest apart (``findings(...).apart``) and its title says so::

    >>> dtsgd_viz.plot_paths(recs, s, arrows=True).axes[0].get_title()
    'Update 4: where the runs differ most'

The ring on each path (and on the loss panel) is the parameters after the update; the
arrows, its terms tip to tail from the parameters before it. More than two parameters
are drawn on the plane of their top two principal directions, with the loss evaluated
on that plane (a minimum off it is an open star, "minimum (projected)").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from . import geometry as geo
from .animation import animate
from .frames import PathArtists, draw_scene
from .scene import PathScene, build_scene, default_update
from .titles import MIN_ARROW_PX, arrow_lengths, short_runs  # noqa: F401  (re-exported)

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
      step: the optimizer update to mark, as ``recording.steps`` counts them (the first
        update is 1; ``-1`` is the last). Each path is drawn whole in its rule's look and
        ringed at the parameters after the update; the loss panel marks the loss after
        it (the same ring per run on a dashed line). Its terms, drawn as arrows from the
        parameters before it, are classical momentum's ``mu*v_prev`` then ``-lr*g`` and
        Nesterov's (tf-keras form) ``mu*v_new`` then ``-lr*g``: they add up to the
        recorded update. None (default): the update after which the runs' parameters are
        furthest apart (``scene.default_update``), which the title says.
      name: the recorded variable (default: the only one).
      ax: None for a new figure, one Axes (path panel only, with a legend), or a pair
        ``(path_ax, loss_ax)``.
      arrows: True to draw the update's terms as arrows, False to only ring it; None
        (default): arrows only where every arrow is long enough to see
        (``titles.short_runs``). Arrows need kinds ``grad`` and ``velocity`` and the
        update before ``step`` recorded; without them (``Recorder(every=3)``) a note on
        the path panel says why.
      zoom: False; True raises ``ValueError``: the close-ups are ``plot_update``'s.

    Returns the matplotlib ``Figure`` (never shown, nothing printed).
    """
    if zoom:
        raise ValueError(
            "plot_paths draws the paths and the loss; each run's update up close is "
            "plot_update(recordings, surface, step=k)'s picture. Received: zoom=True; allowed: zoom=False."
        )
    scene = build_scene(recordings, surface, name)
    update = geo.check_step(
        step, {k: r.steps for k, r in scene.recordings.items()}, none="the update where the runs differ most"
    )
    auto = update is None
    if auto:
        update = default_update(scene)
    short = short_runs(scene, update, every=True) if update is not None and arrows is None else []
    fig, _ = draw_scene(scene, update, ax, arrows is True or (arrows is None and not short), auto=auto, whole=True)
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
    """Like ``plot_paths`` (same arguments and errors) but returns the ``PathsView``, each
    path drawn in its rule's look up to ``step`` over its whole run drawn thin (the
    widgets step through the run); ``step=None`` picks no update. ``zoom`` is kept for
    the widgets, which draw their own close-ups (``frames.draw_zoom``). ``note``: a note
    for the path panel (why there are no arrows). ``diverged``: ``{config: update}`` of
    the runs that left the view (None: found from the paths); those paths are drawn up
    to there and named in a note."""
    scene = build_scene(recordings, surface, name, diverged)
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()})
    fig, art = draw_scene(scene, update, ax, arrows, note=note)
    return PathsView(fig, scene, art, bool(arrows) and art.note is None, update)
