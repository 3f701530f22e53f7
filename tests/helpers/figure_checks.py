"""What a reader sees of a drawn figure, measured by the artists' window extents: the texts
(titles, labels, tick labels, notes, the lines of a legend's entries), the legends' boxes,
and which of them run into one another or out of the figure.

``clashes(fig)`` and ``clipped(fig)`` draw the figure first (``draw_without_rendering``)
and read every visible text as it is drawn: a text clipped to its axes counts only where
it is inside them; a text's blank lines (a ``headline`` suptitle keeps some for its
settings line) are not part of its box.
"""

from __future__ import annotations

import numpy as np
from matplotlib.legend import Legend
from matplotlib.text import Annotation, Text
from matplotlib.transforms import Bbox


def _drawn(text) -> bool:
    if not text.get_visible() or not text.get_text().strip():
        return False
    if text.get_alpha() is not None and text.get_alpha() == 0:
        return False
    if isinstance(text, Annotation) and hasattr(text, "_check_xy"):
        renderer = text.figure.canvas.get_renderer()
        if not text._check_xy(renderer):  # an annotation clipped away is not drawn
            return False
    return True


def _inked(text, renderer) -> Bbox:
    """``text``'s window extent without its leading and trailing blank lines (of an
    annotation, its text's alone: ``Annotation.get_window_extent`` adds its leader)."""
    box = Text.get_window_extent(text, renderer)
    lines = text.get_text().split("\n")
    n = len(lines)
    top = next(i for i, t in enumerate(lines) if t.strip())
    bottom = n - 1 - next(i for i, t in enumerate(reversed(lines)) if t.strip())
    if n == 1 or (top == 0 and bottom == n - 1) or text.get_rotation() % 180:
        return box
    h = box.height / n
    return Bbox([[box.x0, box.y1 - (bottom + 1) * h], [box.x1, box.y1 - top * h]])


def _clip(box, text, renderer):
    """The part of ``box`` drawn when ``text`` is clipped to its axes (None: nothing)."""
    if not text.get_clip_on() or text.axes is None or text.get_clip_box() is None:
        return box
    clip = text.get_clip_box()
    if not box.overlaps(clip):
        return None
    return Bbox.intersection(box, clip)


def _tick_texts(ax):
    """The tick labels ``ax`` draws: those of ticks inside its view (in pixels, so a log
    axis is measured as drawn)."""
    out = []
    frame = ax.bbox
    for along, axis in ((0, ax.xaxis), (1, ax.yaxis)):
        lo, hi = (frame.x0, frame.x1) if along == 0 else (frame.y0, frame.y1)
        for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
            loc = tick.get_loc()
            if loc is None:
                continue
            point = (loc, 1.0) if along == 0 else (1.0, loc)
            with np.errstate(all="ignore"):
                px = ax.transData.transform(point)[along]
            if not (np.isfinite(px) and lo - 0.5 <= px <= hi + 0.5):
                continue
            out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return out


def all_axes(fig) -> list:
    """Every axes of ``fig``, with the inset axes each holds (colour bars, stats panels)."""
    out, todo = [], list(fig.axes)
    while todo:
        ax = todo.pop(0)
        if ax not in out:
            out.append(ax)
            todo += list(getattr(ax, "child_axes", []))
    return out


def figure_texts(fig) -> list[tuple[Text, Bbox, object]]:
    """``(text, box, owner)`` of every drawn text of ``fig``: ``owner`` is the legend a
    text belongs to (None for others)."""
    if not hasattr(fig.canvas, "get_renderer"):  # a Figure() of its own: as savefig draws it
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    found: list[tuple[Text, object]] = []
    seen = set()

    def add(t, owner=None):
        if id(t) not in seen and isinstance(t, Text):
            seen.add(id(t))
            found.append((t, owner))

    for t in [*fig.texts, *fig.artists]:
        add(t)
    if fig._suptitle is not None:
        add(fig._suptitle)
    for leg in legends(fig):
        for t in [*leg.get_texts(), leg.get_title()]:
            add(t, leg)
    for ax in all_axes(fig):
        if not ax.get_visible():
            continue
        for t in [
            ax.title,
            ax._left_title,
            ax._right_title,
            ax.xaxis.label,
            ax.yaxis.label,
            ax.xaxis.get_offset_text(),
            ax.yaxis.get_offset_text(),
            *_tick_texts(ax),
            *ax.texts,
            *[a for a in ax.artists if isinstance(a, Text)],
        ]:
            add(t)
        for child in ax.get_children():
            if isinstance(child, Text):
                add(child)
    out = []
    for t, owner in found:
        if not _drawn(t):
            continue
        box = _clip(_inked(t, renderer), t, renderer)
        if box is not None and box.width > 0 and box.height > 0:
            out.append((t, box, owner))
    return out


def legends(fig) -> list[Legend]:
    out = [leg for leg in fig.legends if leg.get_visible()]
    for ax in all_axes(fig):
        leg = ax.get_legend()
        if leg is not None and leg.get_visible() and ax.get_visible():
            out.append(leg)
    return out


def _overlap(a, b, pad):
    return a.x0 < b.x1 - pad and b.x0 < a.x1 - pad and a.y0 < b.y1 - pad and b.y0 < a.y1 - pad


def _name(t):
    return f"{t.get_text()[:50]!r} ({t.get_gid() or type(t).__name__})"


def clashes(fig, pad=0.5) -> list[str]:
    """Every pair of drawn texts that overlap by more than ``pad`` pixels, and every text
    running into a legend it is not part of (and legends into one another), named."""
    texts = figure_texts(fig)
    renderer = fig.canvas.get_renderer()
    out = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            (a, ba, oa), (b, bb, ob) = texts[i], texts[j]
            if oa is not None and oa is ob:
                continue  # a legend's own entries are laid out by it
            if _overlap(ba, bb, pad):
                out.append(f"{_name(a)} runs into {_name(b)}")
    boxes = [(leg, leg.get_window_extent(renderer)) for leg in legends(fig)]
    for leg, box in boxes:
        for t, bt, owner in texts:
            if owner is not leg and _overlap(box, bt, pad):
                out.append(f"{_name(t)} runs into the legend {[x.get_text()[:20] for x in leg.get_texts()][:3]}")
    for i in range(len(boxes)):
        for j in range(i + 1, len(boxes)):
            if _overlap(boxes[i][1], boxes[j][1], pad):
                out.append("two legends overlap")
    return out


def clipped(fig, pad=0.5) -> list[str]:
    """Every drawn text (and legend) whose window extent leaves the figure's, named: what
    a plain ``savefig`` (no ``bbox_inches="tight"``) cuts off."""
    texts = figure_texts(fig)
    renderer = fig.canvas.get_renderer()
    frame = fig.bbox
    out = []
    boxes = [(_name(t), b) for t, b, _ in texts]
    boxes += [
        (f"legend {[x.get_text()[:20] for x in leg.get_texts()][:3]}", leg.get_window_extent(renderer))
        for leg in legends(fig)
    ]
    for name, b in boxes:
        if b.x0 < frame.x0 - pad or b.y0 < frame.y0 - pad or b.x1 > frame.x1 + pad or b.y1 > frame.y1 + pad:
            out.append(
                f"{name} at x {b.x0:.0f}..{b.x1:.0f}, y {b.y0:.0f}..{b.y1:.0f} "
                f"(figure 0..{frame.x1:.0f} x 0..{frame.y1:.0f})"
            )
    return out


def tick_label_clashes(ax, pad=0.5) -> list[str]:
    """Pairs of ``ax``'s drawn tick labels (x and y) that overlap."""
    fig = ax.figure
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    out = []
    for axis in (ax.xaxis, ax.yaxis):
        labels = [
            t
            for t in _tick_texts(ax)
            if t.axes is ax and _drawn(t) and t in [*axis.get_majorticklabels(), *axis.get_minorticklabels()]
        ]
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i in range(len(boxes)):
            for j in range(i + 1, len(boxes)):
                if _overlap(boxes[i], boxes[j], pad):
                    out.append(f"{labels[i].get_text()!r} runs into {labels[j].get_text()!r}")
    return out


def assert_reads(fig, what=""):
    """No text runs into another or a legend, and nothing leaves the figure."""
    problems = clashes(fig) + clipped(fig)
    assert not problems, f"{what}: " + "\n".join(problems)


def pixel_size(fig) -> tuple[int, int]:
    return tuple(int(round(v)) for v in np.asarray(fig.bbox.size))
