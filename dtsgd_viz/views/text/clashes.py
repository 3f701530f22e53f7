"""Where the drawn labels of one axes run into each other: two texts' boxes overlapping, or a leader through a text."""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

import numpy as np

from ..core.figure import canvas_renderer

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.text import Text

__all__ = ["clashes", "text_box", "leader_points"]

GAP = 1.0  # pixels two labels' boxes keep apart (their white halo is about this wide)


def text_box(text: Text, renderer: RendererBase, pad: float = 0.0) -> tuple[float, float, float, float]:
    """The display box ``(x0, y0, x1, y1)`` of ``text``'s characters (not an annotation's arrow), grown by ``pad``."""
    from matplotlib.text import Text

    b = Text.get_window_extent(text, renderer)
    return (b.x0 - pad, b.y0 - pad, b.x1 + pad, b.y1 + pad)


def leader_points(text: Text, renderer: RendererBase, n: int = 120) -> np.ndarray:
    """``(k, 2)`` display points along an annotation's leader, from its text's middle (where a straight ``"-"``
    arrow starts) to the point it names, outside its own text; empty for a text without one."""
    from matplotlib.text import Annotation

    if not isinstance(text, Annotation) or text.arrow_patch is None:
        return np.zeros((0, 2))
    xy_transform = text._get_xy_transform(renderer, text.xycoords)  # pyright: ignore[reportAttributeAccessIssue]  # private, not in the stubs
    anchor = np.asarray(xy_transform.transform(text.xy), np.float64)
    x0, y0, x1, y1 = text_box(text, renderer)
    mid = np.array([(x0 + x1) / 2, (y0 + y1) / 2])
    pts = mid + np.linspace(0.0, 1.0, n)[:, None] * (anchor - mid)
    inside = (pts[:, 0] >= x0) & (pts[:, 0] <= x1) & (pts[:, 1] >= y0) & (pts[:, 1] <= y1)
    return pts[~inside]


def _texts(ax: Axes, renderer: RendererBase) -> list[Text]:
    from matplotlib.text import Annotation

    ax.apply_aspect()  # an equal-aspect panel shrinks
    out = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
    for t in out:
        if isinstance(t, Annotation):
            t.update_positions(renderer)
    return out


def clashes(ax: Axes, renderer: RendererBase | None = None) -> list[tuple[str, str, str]]:
    """``[(kind, text_a, text_b)]``: every pair of ``ax``'s visible texts whose boxes come within ``GAP`` pixels
    (``"overlap"``) and every leader through another's text (``"leader"``: ``text_a``'s through ``text_b``)."""
    renderer = renderer or canvas_renderer(ax.figure)
    texts = _texts(ax, renderer)
    boxes = {id(t): text_box(t, renderer) for t in texts}
    out = []
    for a, b in itertools.combinations(texts, 2):
        A, B = boxes[id(a)], boxes[id(b)]
        if A[0] < B[2] + GAP and B[0] < A[2] + GAP and A[1] < B[3] + GAP and B[1] < A[3] + GAP:
            out.append(("overlap", a.get_text(), b.get_text()))
    for a in texts:
        pts = leader_points(a, renderer)
        if not len(pts):
            continue
        for b in texts:
            x0, y0, x1, y1 = boxes[id(b)]
            if b is not a and np.any((pts[:, 0] > x0) & (pts[:, 0] < x1) & (pts[:, 1] > y0) & (pts[:, 1] < y1)):
                out.append(("leader", a.get_text(), b.get_text()))
    return out
