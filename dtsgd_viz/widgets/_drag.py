"""Drag the start point of ``CompareWidget``'s paths on the loss contours.

Press on the path panel (the start jumps to the pointer), move, release. While the
pointer moves, the paths are redrawn from the numpy reference of tf-keras' rule
(``reference.run``, microseconds per path) and the panel says it is a preview; on
release the start is set (the start sliders follow) and the real DTensor SGD runs, as
when a slider moves. Events come from ``ipyevents`` on the widget's PNG, mapped to data
through the path axes' transform (``_pointer``). Sliders stay for keyboard users.

The pure step: ``drag_state(state, event, to_data)`` takes the drag state and one
pointer event and says what to do (``preview`` or ``run`` a start, or nothing).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..views.core import style
from . import _pointer
from .compare_state import compare_configs

if TYPE_CHECKING:
    from ..theory.surfaces.base import Surface

__all__ = ["DragState", "drag_state", "StartDrag", "preview_paths", "PREVIEW_TITLE"]

Point = tuple[float, float]
Box = tuple[tuple[float, float], tuple[float, float]]
Action = tuple[str, Point | None]

PREVIEW_TITLE = "PREVIEW: the numpy reference of the rule\nrelease to run the real DTensor SGD"


@dataclasses.dataclass(frozen=True)
class DragState:
    """Whether a drag is on, and where the start is (data coordinates)."""

    dragging: bool = False
    start: tuple[float, float] | None = None


def _clamp(xy: Sequence[float], box: Box) -> Point:
    (xlo, xhi), (ylo, yhi) = box
    return float(np.clip(xy[0], xlo, xhi)), float(np.clip(xy[1], ylo, yhi))


def drag_state(
    state: DragState, kind: str | None, xy: Sequence[float] | None, box: Box
) -> tuple[DragState, Action | None]:
    """The drag after a pointer event ``kind`` (``mousedown``, ``mousemove``,
    ``mouseup``, ``mouseleave``) at data point ``xy`` (None: off the path panel),
    clamped to ``box``. Returns ``(new_state, action)``, ``action`` None,
    ``("preview", start)`` or ``("run", start)``.

    >>> s, a = drag_state(DragState(), "mousedown", (1.0, 9.0), ((-4, 4), (-4, 4))); a
    ('preview', (1.0, 4.0))
    >>> drag_state(s, "mouseup", None, ((-4, 4), (-4, 4)))
    (DragState(dragging=False, start=(1.0, 4.0)), ('run', (1.0, 4.0)))
    """
    if kind == "mousedown":
        if xy is None:
            return state, None
        start = _clamp(xy, box)
        return DragState(True, start), ("preview", start)
    if not state.dragging:
        return state, None
    if kind == "mousemove":
        if xy is None:
            return state, None
        start = _clamp(xy, box)
        return DragState(True, start), ("preview", start)
    if kind in ("mouseup", "mouseleave"):
        start = state.start if xy is None else _clamp(xy, box)
        return DragState(False, start), ("run", start)
    return state, None


def preview_paths(
    surface: Surface, configs: Mapping[str, Mapping[str, Any]], start: ArrayLike, steps: int
) -> dict[str, np.ndarray]:
    """``{name: (steps + 1, 2)}`` paths of the numpy reference of tf-keras' rule
    (float32, as the real optimizer) from ``start``."""
    from ..theory import reference

    p0 = np.asarray(start, np.float32).reshape(surface.shape)
    out = {}
    with np.errstate(over="ignore", invalid="ignore"):
        for name, c in configs.items():
            out[name] = reference.run(
                surface.grad_np, p0, steps, c["learning_rate"], c.get("momentum", 0.0), c.get("nesterov", False)
            ).astype(np.float64)
    return out


class StartDrag:
    """Wires the drag to a ``CompareWidget`` ``cw`` (2-D surfaces): needs
    ``cw.view`` (the drawn ``PathsView``), ``cw.params``, ``cw.request_run(params)``,
    ``cw.start`` (the start sliders) and ``cw.refresh()``."""

    def __init__(self, cw):
        self.cw, self.state = cw, DragState()
        self.previews = 0
        self.events = None
        if tuple(cw.surface.shape) == (2,):
            self.events = _pointer.attach(
                cw.image, ["mousedown", "mousemove", "mouseup", "mouseleave"], self.handle, wait=40
            )

    def _ax(self):
        view = self.cw.view
        return None if view is None else view.artists.ax_path

    def to_data(self, x: float, y: float) -> Point | None:
        """Data point of the path panel at PNG pixel ``(x, y)``, or None off it."""
        ax = self._ax()
        if ax is None or not self.cw.image.value:
            return None
        size = _pointer.png_size(self.cw.image.value)
        if _pointer.axes_at([ax], x, y, size) is None:
            return None
        dx, dy = _pointer.pixel_to_data(ax, x, y, size)
        return float(dx), float(dy)

    def handle(self, event: Mapping[str, Any]) -> None:
        """An ipyevents event dict."""
        kind = event.get("type")
        xy = None
        if self.cw.image.value and kind != "mouseleave":
            pix = _pointer.event_pixel(event, _pointer.png_size(self.cw.image.value))
            xy = None if pix is None else self.to_data(*pix)
        self.pointer(kind, xy)

    def pointer(self, kind: str | None, xy: Sequence[float] | None) -> None:
        """One pointer event at data point ``xy`` (None: off the path panel)."""
        if self.cw.view is None:
            return
        self.state, action = drag_state(self.state, kind, xy, self.cw.view.scene.box)
        if action is None:
            return
        what, start = action
        assert start is not None  # a drag begins with mousedown, which sets the start
        if what == "preview":
            self.preview(start)
        else:
            self.release(start)

    def preview(self, start: Point) -> None:
        cw = self.cw
        if cw.queue.running:  # a real run is drawing: the next release starts another
            return
        view = cw.view
        paths = preview_paths(cw.surface, compare_configs(cw.params), start, cw.params.steps)
        for key, line in view.artists.paths.items():
            if key in paths:
                line.set_data(paths[key][:, 0], paths[key][:, 1])
        ax = view.artists.ax_path
        for line in ax.lines:
            if line.get_gid() == "start":
                line.set_data([start[0]], [start[1]])
        for line in (getattr(view.artists, "loss_lines", None) or {}).values():
            line.set_alpha(0.25)
        for text in ax.texts:  # the paths' names stay where the paths were
            if (text.get_gid() or "").startswith("path-name:"):
                text.set_visible(False)
        ax.set_title(PREVIEW_TITLE, fontsize=style.LABEL_SIZE, color="#A04000", gid="preview-title")
        self.previews += 1
        cw.refresh()

    def release(self, start: Point) -> None:
        cw = self.cw
        params = dataclasses.replace(cw.params, start=tuple(float(v) for v in start))
        cw.request_run(params)
        for slider, v in zip(cw.start, start):  # no-ops for the run: params already hold v
            slider.value = float(np.clip(v, slider.min, slider.max))
