"""The path panel's title at an update and the arrows too short to see there: a title
names only the runs whose update shows as arrows on the laid-out panel (``short_arrows``:
all shorter than ``MIN_ARROW_PX``), and the caption's line (``short_note``) names the
rest and where their update is drawn. ``plot_paths``, the animation and the widgets
share them.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np

from . import geometry as geo

if TYPE_CHECKING:
    from .frames import PathArtists
    from .scene import PathScene

__all__ = ["path_title", "short_note", "short_arrows", "arrow_lengths", "MIN_ARROW_PX"]


def path_title(scene: PathScene, update: int | None, auto: bool = False, short: Collection[str] = ()) -> str:
    """The path panel's title at ``update`` (None: no update picked); ``auto``: picked
    as where the runs differ most; ``short``: the runs whose arrows are too short to see
    (``short_arrows``): the title names only the runs whose arrows show, or none."""
    if update is None:
        return "Paths on the loss contours"
    shown = [k for k in scene.coords if k not in short]
    if short and not shown:
        return f"Paths, update {int(update)} marked" + (" (where the runs differ most)" if auto else "")
    if auto:
        return f"Update {int(update)}: where the runs differ most"
    if short:
        return f"Update {int(update)}: " + _names(shown, "'s") + " terms as arrows"
    return f"Update {int(update)}: its terms as arrows"


def _names(keys: Sequence[str], suffix: str = "") -> str:
    names = [geo.rule_name(k) + suffix for k in keys]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def short_note(scene: PathScene, update: int, short: Sequence[str]) -> str:
    """The caption's line naming the runs in ``short`` and where their update is drawn."""
    if not short:
        return ""
    whose = "its" if len(short) == 1 else "their"
    return f"{_names(short)}: update {int(update)} too short to see here; plot_update draws {whose} arrows up close"


MIN_ARROW_PX = 15.0  # an update whose arrows are all shorter than this is too short to see


def short_arrows(scene: PathScene, art: PathArtists, update: int) -> list[str]:
    """The runs whose update ``update``'s arrows on the laid-out path panel are all
    shorter than ``MIN_ARROW_PX`` pixels (a speck under the current marker)."""
    lengths: dict[str, float] = {}
    for (key, _), px in arrow_lengths(art).items():
        lengths[key] = max(lengths.get(key, 0.0), px)
    return [k for k, px in lengths.items() if px < MIN_ARROW_PX]


def arrow_lengths(art: PathArtists) -> dict[tuple[str, str], float]:
    """``{(config, term): length in pixels}`` of each arrow on the laid-out path panel."""
    ax = art.ax_path
    out: dict[tuple[str, str], float] = {}
    for k, q in art.arrows.items():
        # masked arrays (the stubs say ArrayLike)
        offsets, u, v = cast("np.ndarray", q.get_offsets()), cast("np.ndarray", q.U), cast("np.ndarray", q.V)
        tail = np.asarray(offsets[0], np.float64)
        tip = tail + [float(u[0]), float(v[0])]
        out[k] = float(np.hypot(*(ax.transData.transform(tip) - ax.transData.transform(tail))))
    return out
