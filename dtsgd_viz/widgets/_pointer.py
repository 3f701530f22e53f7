"""Mouse events on a ``FigureWidget``'s PNG, mapped to data coordinates through the
figure's own axes transforms.

The widgets stay PNG images (``ipywidgets.Image``): ``ipyevents`` reports clicks and
drags on them, with ``dataX``/``dataY`` in the image's own pixels (it undoes any
scaling of the ``<img>`` on the page). Row 0 of the PNG is its top; matplotlib's
display coordinates start at the bottom left, in pixels at ``figure.dpi``. So a pixel
maps to data as::

    display = ((x + 0.5) * W / png_width, H - (y + 0.5) * H / png_height)
    data = ax.transData.inverted().transform(display)

with ``W x H`` the root figure's size in display pixels (its ``bbox``: an axes inside
a ``SubFigure`` maps through the figure the PNG is made of, not the subfigure). The
widgets freeze their layout after each render (``FigureWidget.refresh``), so the
transforms are those of the picture on screen. Without ``ipyevents`` nothing is attached and the sliders and
dropdowns still do everything.

    >>> from dtsgd_viz.views.core.figure import new_figure
    >>> fig = new_figure((4, 3), dpi=100)
    >>> ax = fig.add_axes((0.1, 0.1, 0.8, 0.8))
    >>> _ = ax.set_xlim(0, 8), ax.set_ylim(0, 8)
    >>> x, y = data_to_pixel(ax, 4.0, 2.0, (400, 300)); [round(v, 1) for v in (x, y)]
    [199.5, 209.5]
    >>> [round(float(v), 6) for v in pixel_to_data(ax, x, y, (400, 300))]
    [4.0, 2.0]
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["png_size", "root_figure", "pixel_to_data", "data_to_pixel", "axes_at", "event_pixel", "attach"]


def png_size(png: bytes) -> tuple[int, int]:
    """``(width, height)`` of a PNG from its header."""
    if len(png) < 24 or png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError(f"Not a PNG image. Received {len(png)} bytes starting {png[:8]!r}.")
    return struct.unpack(">II", png[16:24])


def root_figure(artist: Any) -> Figure:
    """The ``Figure`` an artist (an axes) is drawn in, through any ``SubFigure``: the one
    whose canvas makes the PNG (``get_figure(root=True)``; older matplotlib: ``.figure``,
    which a subfigure sets to its root)."""
    try:
        return artist.get_figure(root=True)
    except TypeError:  # matplotlib < 3.10: no root= argument
        fig = artist.figure
        while getattr(fig, "figure", fig) is not fig:
            fig = fig.figure
        return fig


def _scale(ax, size):
    fig = root_figure(ax)
    W, H = fig.bbox.width, fig.bbox.height
    if size is None:
        return W, H, 1.0, 1.0
    return W, H, W / size[0], H / size[1]


def pixel_to_data(ax: Axes, x: float, y: float, size: tuple[float, float] | None = None) -> np.ndarray:
    """Data coordinates of ``ax`` at pixel ``(x, y)`` of the figure's PNG (origin top
    left; ``size`` the PNG's ``(width, height)``, default the figure's own pixels)."""
    W, H, sx, sy = _scale(ax, size)
    return ax.transData.inverted().transform(((x + 0.5) * sx, H - (y + 0.5) * sy))


def data_to_pixel(ax: Axes, x: float, y: float, size: tuple[float, float] | None = None) -> tuple[float, float]:
    """The PNG pixel (origin top left) of data point ``(x, y)`` of ``ax``."""
    W, H, sx, sy = _scale(ax, size)
    dx, dy = ax.transData.transform((x, y))
    return float(dx / sx - 0.5), float((H - dy) / sy - 0.5)


def axes_at(axes: Iterable[Axes], x: float, y: float, size: tuple[float, float] | None = None) -> Axes | None:
    """The first of ``axes`` whose plotting area holds PNG pixel ``(x, y)``, or None."""
    for ax in axes:
        W, H, sx, sy = _scale(ax, size)
        if ax.bbox.contains((x + 0.5) * sx, H - (y + 0.5) * sy):
            return ax
    return None


def event_pixel(event: Mapping[str, Any], size: tuple[float, float]) -> tuple[float, float] | None:
    """The PNG pixel of an ipyevents mouse event: ``dataX``/``dataY`` (image pixels,
    scaling undone), else ``relativeX``/``relativeY`` scaled by the element's size."""
    if "dataX" in event and "dataY" in event:
        return float(event["dataX"]), float(event["dataY"])
    if "relativeX" in event and event.get("boundingRectWidth"):
        return (
            float(event["relativeX"]) * size[0] / float(event["boundingRectWidth"]),
            float(event["relativeY"]) * size[1] / float(event["boundingRectHeight"]),
        )
    return None


def attach(image: Any, events: Iterable[str], handler: Callable[[dict], Any], wait: int = 0) -> Any:
    """An ``ipyevents.Event`` on ``image`` calling ``handler(event_dict)`` for
    ``events`` (``mousemove`` throttled to one per ``wait`` ms), or None if ipyevents
    is not installed (the widget's sliders still work)."""
    try:
        from ipyevents import Event
    except ImportError:
        return None
    kwargs = dict(throttle_or_debounce="throttle", wait=wait) if wait else {}
    ev = Event(source=image, watched_events=list(events), prevent_default_action=True, **kwargs)
    ev.on_dom_event(handler)
    return ev
