"""The legend naming a path panel's marks: the runs, the start, the minimum and the ring."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..core import style
from . import geometry as geo
from .scene import minimum_on_plane

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.text import Annotation

    from ..core.style import Look
    from .scene import PathScene


NAME_OFFSET = (9.0, 7.0)  # points from the start / minimum to their names' corner
NAME_Z = 7.7  # the names: over the paths and markers
STAR_HALO = 1.2  # points of white round the star: its edge reads over the contours


def minimum_label(scene: PathScene) -> str:
    """``"minimum"`` (``"minima"``), with ``" (projected)"`` when it lies off the plane."""
    return ("minima" if len(scene.minima) > 1 else "minimum") + ("" if minimum_on_plane(scene) else " (projected)")


def _star_face(scene: PathScene) -> str:
    """The star's face: yellow on the plane, open for a minimum projected onto it."""
    return style.MINIMUM_FACE if minimum_on_plane(scene) else "none"


def draw_start_and_minima(scene: PathScene, ax_path: Axes, names: bool = False) -> dict[str, Annotation]:
    """The start points and the minima in ``ROLE_LOOKS``' looks; ``names``: also a name
    beside each (``{gid: Annotation}``, gids ``start-label``, ``minimum-label``)."""
    from matplotlib import patheffects

    start, star = style.ROLE_LOOKS["start"], style.ROLE_LOOKS["minimum"]
    s, m = scene.starts, scene.minima
    ax_path.plot(s[:, 0], s[:, 1], start.marker, ms=start.ms, mfc="white", mec=start.color, mew=start.lw, ls="none")
    ax_path.lines[-1].set(label="start", gid="start", zorder=start.zorder)
    halo = [patheffects.withStroke(linewidth=STAR_HALO, foreground="white")]
    ax_path.plot(m[:, 0], m[:, 1], star.marker, ms=star.ms, mfc=_star_face(scene), mec=star.color, mew=star.lw)
    ax_path.lines[-1].set(ls="none", label=minimum_label(scene), gid="minimum", zorder=star.zorder, path_effects=halo)
    if not names:
        return {}
    box = dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85)
    return {
        gid: ax_path.annotate(
            text,
            tuple(xy),
            xytext=NAME_OFFSET,
            textcoords="offset points",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            gid=gid,
            zorder=NAME_Z,
            annotation_clip=True,
            bbox=box,
            arrowprops=dict(arrowstyle="-", color="0.25", lw=0.8, shrinkA=0, shrinkB=3),
        )
        for text, xy, gid in (("start", s[0], "start-label"), (minimum_label(scene), m[0], "minimum-label"))
    }


def legend_handles(scene: PathScene, looks: Mapping[str, Look], ring: str | None = None, points: bool = True) -> list:
    """The legend's entries: each run's line, with ``points`` the start and the minimum,
    with ``ring`` the ring of the update shown."""
    from matplotlib.lines import Line2D

    start, star, cur = style.ROLE_LOOKS["start"], style.ROLE_LOOKS["minimum"], style.ROLE_LOOKS["current"]
    out = [Line2D([], [], **looks[k].line(), label=geo.rule_name(k)) for k in scene.coords]
    if not points:
        return out
    out.append(Line2D([], [], ls="none", marker=start.marker, ms=start.ms, mfc="white", mec=start.color, label="start"))
    out.append(Line2D([], [], ls="none", marker=star.marker, ms=star.ms, mfc=_star_face(scene), mec=star.color))
    out[-1].set_label(minimum_label(scene))
    if ring:
        out.append(Line2D([], [], ls="none", marker=cur.marker, ms=cur.ms, mfc="none", mec="0.3", mew=cur.lw))
        out[-1].set_label(ring)
    return out
