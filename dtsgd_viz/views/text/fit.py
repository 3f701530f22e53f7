"""Texts kept inside their figure as it is drawn: a title wider than the room its anchor
leaves (an axes title is centred on its axes, and constrained layout makes room for its
height, not its width) is broken between words until it fits, measured with the
figure's renderer. ``plot_shards``, ``plot_update_shards`` and ``plot_memory`` call
``keep_inside`` once their layout has settled, so a plain ``savefig`` cuts nothing off.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.transforms import BboxBase

from ..core.figure import canvas_renderer

PAD = 3.0  # pixels kept between a text and the figure's edge


def room(text: Text, box: BboxBase, frame: BboxBase, pad: float = PAD) -> float:
    """The width (pixels) ``text`` may take inside ``frame`` about its anchor: twice the
    nearer side for a centred text, the side it runs into for a left or right one."""
    ha = text.get_horizontalalignment()
    if ha == "center":
        c = (box.x0 + box.x1) / 2
        return 2 * min(c - frame.x0 - pad, frame.x1 - pad - c)
    if ha == "left":
        return frame.x1 - pad - box.x0
    return box.x1 - frame.x0 - pad


def paragraphs(content: str) -> list[str]:
    """``content``'s lines joined where a line break falls inside a sentence part (the
    line before it ends in no ``;``, ``:``, ``.`` or ``)``): the breaks a text was given
    to fit a wider room, which a narrower one re-breaks.

    >>> paragraphs("gradient of update 3, the same layout;\\nsummed over 'batch' when the\\nbatch is split")
    ['gradient of update 3, the same layout;', "summed over 'batch' when the batch is split"]
    """
    out: list[str] = []
    for line in content.split("\n"):
        if out and out[-1] and not out[-1].rstrip().endswith((";", ":", ".", ")")) and line:
            out[-1] = f"{out[-1].rstrip()} {line.lstrip()}"
        else:
            out.append(line)
    return out


def wrap_to(text: Text, width: float, renderer: RendererBase) -> bool:
    """Break ``text`` between words until it is at most ``width`` pixels wide (its breaks
    after a sentence part kept, ``paragraphs``); False when no break makes it fit (a
    single long word)."""
    box = text.get_window_extent(renderer)
    if box.width <= width:
        return True
    parts = paragraphs(text.get_text())
    longest = max(len(line) for line in text.get_text().split("\n"))
    chars = max(8, int(longest * width / box.width))
    while chars >= 8:
        text.set_text(
            "\n".join(
                textwrap.fill(part, chars, break_long_words=False, break_on_hyphens=False) or part for part in parts
            )
        )
        if text.get_window_extent(renderer).width <= width:
            return True
        chars -= max(1, chars // 12)
    return False


def grow_to_fit(fig: Figure, pad: float = PAD) -> None:
    """Make ``fig`` taller (its width kept) until everything drawn lies inside it: a
    figure whose titles were broken into more lines needs the room below them."""
    if not hasattr(fig.canvas, "get_renderer"):
        return
    for _ in range(3):
        fig.draw_without_rendering()
        tight = fig.get_tightbbox(canvas_renderer(fig))  # inches
        over = max(0.0, -tight.y0) + max(0.0, tight.y1 - fig.get_figheight())
        if over <= pad / fig.dpi:
            return
        fig.set_figheight(fig.get_figheight() + over + 2 * pad / fig.dpi)


def keep_inside(fig: Figure, texts: Iterable[Text | None], pad: float = PAD) -> None:
    """Re-break each of ``texts`` (``Text`` artists of ``fig``) that leaves the figure
    sideways, then let the layout settle again (a text broken into more lines is taller)."""
    if not hasattr(fig.canvas, "get_renderer"):
        return
    texts = [t for t in texts if t is not None and t.get_visible() and t.get_text().strip()]
    for _ in range(2):
        fig.draw_without_rendering()
        renderer = canvas_renderer(fig)
        frame = fig.bbox
        changed = False
        for t in texts:
            if t.get_rotation() % 180:
                continue
            box = t.get_window_extent(renderer)
            if box.x0 >= frame.x0 + pad - 0.5 and box.x1 <= frame.x1 - pad + 0.5:
                continue
            changed |= wrap_to(t, room(t, box, frame, pad), renderer)
        if not changed:
            return
    fig.draw_without_rendering()


def titles(fig: Figure) -> list[Text]:
    """Every axes' (centred) title of ``fig``, inset axes included."""
    out, todo = [], list(fig.axes)
    while todo:
        ax = todo.pop(0)
        out.append(ax.title)
        todo += list(getattr(ax, "child_axes", []))
    return out
