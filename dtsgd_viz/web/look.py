"""The style table as plain data, for the browser: each rule's and role's colour, dash,
width and marker from ``views.core.style`` (the one source the matplotlib views draw
from), in the units SVG takes (pixels at the figures' dpi)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from matplotlib import colors as mcolors

from ..views.core import style

__all__ = ["look_data", "look_table", "dash_pixels"]

_PX = style.DPI / 72.0  # pixels per point at the figures' dpi
_SVG_MARKERS = {"o": "circle", "s": "square", "^": "triangle", "v": "triangle-down", "D": "diamond", "*": "star"}


def dash_pixels(ls: object, lw: float) -> list[float]:
    """An SVG ``stroke-dasharray`` (pixels) for matplotlib line style ``ls`` at width
    ``lw`` points (matplotlib scales dash patterns by the width); ``[]``: solid.

    >>> dash_pixels("-", 2.0)
    []
    >>> [round(x, 2) for x in dash_pixels((0, (4.0, 1.6)), 2.0)]
    [11.11, 4.44]
    """
    if ls in ("-", "solid", "none", "None", None, ""):
        return []
    if isinstance(ls, tuple):
        pattern = ls[1]
    else:
        from matplotlib import rcParams

        patterns = {
            "--": rcParams["lines.dashed_pattern"],
            ":": rcParams["lines.dotted_pattern"],
            "-.": rcParams["lines.dashdot_pattern"],
        }
        pattern = patterns.get(str(ls), ())
    return [round(float(x) * lw * _PX, 3) for x in pattern]


def look_data(look: style.Look, color: Any = None) -> dict[str, Any]:
    """One ``Look`` as ``{"color": "#rrggbb", "dash": [...], "width": px, "marker":
    name, "size": px}`` (``color`` fills a look without one)."""
    c = look.color if look.color is not None else color
    return {
        "color": None if c is None else mcolors.to_hex(c),
        "dash": dash_pixels(look.ls, look.lw),
        "width": round(look.lw * _PX, 3),
        "marker": _SVG_MARKERS.get(look.marker, ""),
        "size": round(look.ms * _PX, 3),
    }


def look_table(runs: Iterable[str] = ()) -> dict[str, Any]:
    """``{"runs": {name: look}, "rules": {...}, "roles": {...}, "minimum_face",
    "remainder_tint"}``: what the browser draws with, exported from the style table
    (never copied into the JavaScript)."""
    names = list(runs)
    looks = style.run_looks(names)
    colors = style.optimizer_colors(names)
    return {
        "runs": {n: look_data(looks[n], colors[n]) for n in names},
        "rules": {k: look_data(v) for k, v in style.RULE_LOOKS.items()},
        "roles": {k: look_data(v) for k, v in style.ROLE_LOOKS.items()},
        "minimum_face": mcolors.to_hex(style.MINIMUM_FACE),
        "remainder_tint": style.REMAINDER_TINT,
        "font_px": {"title": style.TITLE_SIZE * _PX, "label": style.LABEL_SIZE * _PX, "tick": style.TICK_SIZE * _PX},
    }
