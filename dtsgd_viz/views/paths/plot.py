"""Update paths: each optimizer's trajectory on the loss contours, the update ringed (its terms as arrows where long
enough to see) and the loss beside it. ``step=k`` is optimizer update k as ``recording.steps`` counts them.

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

Without ``step``, ``plot_paths`` marks the update where the runs are furthest apart (``findings(...).apart``)::

    >>> dtsgd_viz.plot_paths(recs, s, arrows=True).axes[0].get_title()
    'Update 4: where the runs differ most'
    >>> [ax.get_title() for ax in dtsgd_viz.plot_update(recs, s, step=3).axes]  # a panel per run, the lengths
    ['momentum', 'Nesterov', '']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from . import geometry as geo
from .animation import animate
from .frames import PathArtists, draw_scene
from .scene import PathScene, build_scene, default_update, short_runs

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
    """Paths of every optimizer on the loss contours of ``surface``, and loss per update; returns the ``Figure``.

    ``recordings``: ``{config: Recording}`` (as ``dtsgd_viz.run`` returns) or one. ``step``: the update ringed on
    each path (``-1``: the last; None: where the runs differ most). ``name``: the recorded variable (None: the only
    one). ``ax``: None (a new figure), one Axes (the paths) or ``(path_ax, loss_ax)``. ``arrows``: the update's terms
    as arrows (None: where all are long enough to see). ``zoom=True`` raises (``plot_update`` draws close-ups).
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
    """What ``draw_paths`` drew, for widgets that update it in place; ``update``: the update drawn (None: none)."""

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
    note: str | None = None,
    diverged: Mapping[str, int | None] | None = None,
) -> PathsView:
    """``plot_paths``' drawing as a ``PathsView``, each path up to ``step`` over its run drawn thin (None: no update);
    ``note``: the path panel's note; ``diverged``: ``{config: update}`` of the runs that left the view (None: found)."""
    scene = build_scene(recordings, surface, name, diverged)
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()})
    fig, art = draw_scene(scene, update, ax, arrows, note=note)
    return PathsView(fig, scene, art, bool(arrows) and art.note is None, update)
