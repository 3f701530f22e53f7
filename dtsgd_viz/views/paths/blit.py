"""What a widget that blits its moving artists must redraw with them: ``stacked_over``
(the still artists a full draw puts over some of the moving ones). Used by
``PathExplorer``; re-exported by ``views.paths.frames``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.artist import Artist

__all__ = ["stacked_over"]


def stacked_over(moving: Sequence[Artist]) -> list[Artist]:
    """The still artists a full draw puts over some of the ``moving`` ones in the same
    axes (the start over the trails): a widget that blits the moving artists over a
    background redraws these with them, so its frames stack as a full draw does."""
    out: list[Artist] = []
    for ax in {a.axes for a in moving if getattr(a, "axes", None) is not None}:
        assert ax is not None  # (kept by the filter)
        mine = [a for a in moving if a.axes is ax]
        low = min(a.get_zorder() for a in mine)
        out += [
            a
            for a in [*ax.lines, *ax.collections, *ax.patches, *ax.texts]
            if a not in mine and a.get_zorder() > low and a.get_visible()
        ]
    return out
