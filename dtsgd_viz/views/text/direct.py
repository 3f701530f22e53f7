"""Names at the ends of lines instead of legends, pushed apart so no two overprint (``spread``: the pure part).

>>> [round(v, 3) for v in spread([0.5, 0.52, 0.9], gap=0.1)]
[0.46, 0.56, 0.9]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.figure import root_figure

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.text import Text
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

__all__ = ["spread", "label_ends", "move_ends", "axes_height_points", "text_size"]


def spread(positions: ArrayLike, gap: float, lo: float = 0.0, hi: float = 1.0) -> list[float]:
    """``positions`` (any order) moved as little as possible so that neighbours are at least ``gap`` apart and all
    lie in ``[lo, hi]`` (when they fit there), in the order given; clusters are pushed apart around their mean."""
    p = np.asarray(positions, np.float64)
    if not len(p):
        return []
    order = np.argsort(p, kind="stable")
    groups = [[float(v)] for v in p[order]]  # runs of labels that touch, centred together
    merged = True
    while merged:
        merged = False
        out = []
        for g in groups:
            if out and _bottom(out[-1], gap) + gap * len(out[-1]) > _bottom(g, gap) + 1e-12:  # the last's top + gap
                out[-1] = out[-1] + g
                merged = True
            else:
                out.append(g)
        groups = out
    placed = []
    for g in groups:
        start = _bottom(g, gap)
        placed += [start + k * gap for k in range(len(g))]
    placed = np.asarray(placed)
    span = gap * (len(placed) - 1)
    if span <= hi - lo:  # keep them inside, shifting the ones past an end
        for k in range(len(placed)):
            placed[k] = min(max(placed[k], lo + k * gap), hi - (len(placed) - 1 - k) * gap)
    out = np.empty_like(placed)
    out[order] = placed
    return [float(v) for v in out]


def _bottom(group: list[float], gap: float) -> float:
    return float(np.mean(group)) - gap * (len(group) - 1) / 2


def text_size(text: str, fontsize: float = style.TICK_SIZE) -> tuple[float, float]:
    """About how many points ``text`` takes: ``(width, height)`` (DejaVu Sans, ~0.6 em a character).

    >>> text_size("ab\\nc", 10)
    (16.0, 28.0)
    """
    lines = text.split("\n")
    return 0.6 * fontsize * max(len(t) for t in lines) + 4.0, 1.25 * fontsize * len(lines) + 3.0


def axes_height_points(ax: Axes) -> float:
    """The axes' height in points where it stands now (before the layout runs, about)."""
    dpi = root_figure(ax).dpi
    return max(1.0, ax.get_window_extent().height * 72.0 / dpi)


def _fraction(ax: Axes, y: float) -> float:
    lo, hi = ax.get_ylim()
    if ax.get_yscale() == "log":
        return float((np.log10(y) - np.log10(lo)) / (np.log10(hi) - np.log10(lo)))
    return float((y - lo) / (hi - lo))


def label_ends(
    ax: Axes,
    entries: Iterable[tuple[str, float, float, ColorType | None]],
    *,
    fontsize: float = style.LABEL_SIZE,
    room: float | None = None,
    gid_prefix: str = "label:",
    outside: bool = False,
) -> list[Text]:
    """Write each ``(text, x, y, color)`` of ``entries`` right of ``(x, y)`` (a line's end), pushed apart vertically
    so none overprints another; ``room``: widen the x axis by this share of its span (None: not widened);
    ``outside``: a column just right of the right spine instead, the x axis as it is. A name with a colour is on a
    chip of it (``style.chip``), one without in plain black. Entries whose ``y`` is not finite (or not positive on a
    log axis) are left out. Returns the ``Text`` artists (``move_ends`` moves them)."""
    from matplotlib.transforms import blended_transform_factory

    keep = [
        (t, float(x), float(y), c)
        for t, x, y, c in entries
        if np.isfinite(y) and np.isfinite(x) and (y > 0 or ax.get_yscale() != "log")
    ]
    if not keep:
        return []
    if not outside:
        x0, x1 = ax.get_xlim()
        ticks = [t for t in ax.get_xticks() if x0 <= t <= x1]
        ax.set_xlim(x0, x1 + (room or 0.0) * (x1 - x0))
        ax.set_xticks(ticks)  # no ticks under the names
    else:
        ax.set_xlim(*ax.get_xlim())  # fixed: the names stand just past its end
    ax.set_ylim(*ax.get_ylim())  # fixed: the names are placed in axes fractions
    trans = blended_transform_factory(ax.transData, ax.transAxes)
    out = [
        ax.text(
            x,
            0.5,
            text,
            transform=trans,
            ha="left",
            va="center",
            fontsize=fontsize,
            fontweight="bold",
            clip_on=False,
            gid=f"{gid_prefix}{text}",
            **(style.chip(color) if color is not None else PLAIN),
        )
        for text, x, _, color in keep
    ]
    for t in out:
        setattr(t, "end_outside", outside)  # noqa: B010  # our own mark on a Text: move_ends keeps them in their column
    move_ends(ax, out, [(x, y) for _, x, y, _ in keep])
    return out


PLAIN: dict[str, Any] = {"color": "black"}  # a name with no colour of its own: no chip
OUTSIDE_PAD = 0.012  # names written ``outside`` start this far right of the right spine, in x spans


def move_ends(ax: Axes, texts: Sequence[Text], ends: Sequence[tuple[float, float]]) -> None:
    """Put the names ``texts`` (from ``label_ends``) at the line ends ``ends`` (``[(x, y)]``, same order), pushed
    apart; a name whose end is not finite is hidden. Names written ``outside`` keep their column; only heights move."""
    x0, x1 = ax.get_xlim()
    ok = [
        i for i, (x, y) in enumerate(ends) if np.isfinite(x) and np.isfinite(y) and (y > 0 or ax.get_yscale() != "log")
    ]
    fontsize = float(texts[0].get_fontsize()) if texts else style.LABEL_SIZE
    lines = max((t.get_text().count("\n") + 1 for t in texts), default=1)  # the tallest name's lines
    # a line and a little air (and a chip's pads); names of several lines at 1.2 spacing, a third of an em apart
    one = 1.15 + 0.5 * any(t.get_bbox_patch() is not None for t in texts)
    gap = (one if lines == 1 else 1.2 * lines + 0.3) * fontsize / axes_height_points(ax)
    fracs = spread([_fraction(ax, ends[i][1]) for i in ok], gap, 0.02, 0.98)
    for t in texts:
        t.set_visible(False)
    for i, f in zip(ok, fracs):
        setattr(texts[i], "end_fraction", _fraction(ax, ends[i][1]))  # noqa: B010  # where it would stand unmoved
        if getattr(texts[i], "end_outside", False):
            x = x1 + OUTSIDE_PAD * (x1 - x0)
        else:
            x = ends[i][0] + 0.012 * (x1 - x0)
        texts[i].set_position((x, f))
        texts[i].set_visible(True)


LEADER_ROOM = 0.05  # of the x span: the names' column moves this further right when some moved off their ends


def lead_moved_ends(ax: Axes, texts: Sequence[Text] | None, gid: str = "leader") -> list[Line2D]:
    """Where ``move_ends`` moved some of ``label_ends(..., outside=True)``'s names off their ends, their column
    ``LEADER_ROOM`` further right and a ``leaders`` line from each moved name to its end; returns the lines."""
    shown = [t for t in texts or [] if t.get_visible()]
    fracs = [float(getattr(t, "end_fraction")) for t in shown]  # noqa: B009  # move_ends' mark on its names
    placed = [float(t.get_position()[1]) for t in shown]
    shift = 0.3 * 1.15 * float(shown[0].get_fontsize()) / axes_height_points(ax) if shown else 0.0
    if not any(abs(a - b) > shift for a, b in zip(fracs, placed)):
        return []
    column = 1.0 + OUTSIDE_PAD + LEADER_ROOM
    x = float(ax.transData.inverted().transform(ax.transAxes.transform((column, 0.0)))[0])
    for t in shown:
        t.set_x(x)
    inks = [(chip.get_facecolor()[:3] if (chip := t.get_bbox_patch()) else t.get_color()) for t in shown]
    return leaders(ax, fracs, placed, inks, x1=column - 0.008, min_shift=shift, gid=gid)


def leaders(
    ax: Axes,
    ends: Sequence[float | None],
    placed: Sequence[float | None],
    colors: Iterable[ColorType],
    *,
    x0: float = 1.0,
    x1: float = 1.045,
    min_shift: float = 0.004,
    gid: str = "leader",
) -> list[Line2D]:
    """Short lines in axes coordinates from each line's end (``ends``: heights at ``x0``) to its name (``placed``:
    heights at ``x1``) in its colour, where the name moved over ``min_shift`` (``None``: skipped); the ``Line2D``s.

    >>> import matplotlib; from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> lines = leaders(ax, [0.5, 0.5], [0.45, 0.5], ["r", "b"])   # the second did not move
    >>> len(lines), [round(v, 2) for v in lines[0].get_ydata()]
    (1, [0.5, 0.5, 0.45])
    """
    out = []
    for k, (y0, y1, c) in enumerate(zip(ends, placed, colors)):
        if y0 is None or y1 is None or abs(y1 - y0) <= min_shift:
            continue
        (line,) = ax.plot(
            [x0, x0 + 0.35 * (x1 - x0), x1],
            [y0, y0, y1],
            color=c,
            lw=0.9,
            transform=ax.transAxes,
            clip_on=False,
            zorder=6,
            gid=f"{gid}-{k}",
        )
        line.set_in_layout(False)
        out.append(line)
    return out
