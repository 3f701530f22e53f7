"""The path panel's title at an update, and which runs' arrows are too short to see:
``short_runs`` decides it from the numbers before anything is drawn (``plot_paths``),
``short_arrows`` measures the arrows of a laid-out panel (the widgets)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, cast

import numpy as np

from ..update import geometry as upd
from . import geometry as geo

if TYPE_CHECKING:
    from .frames import PathArtists
    from .scene import PathScene

__all__ = ["path_title", "short_runs", "short_arrows", "arrow_lengths", "MIN_ARROW_PX", "MIN_ARROW_FRAC"]

MIN_ARROW_PX = 15.0  # an update whose arrows are all shorter than this is too short to see
MIN_ARROW_FRAC = 0.045  # ... about that many pixels on a path panel, as a fraction of its span


def path_title(scene: PathScene, update: int | None, auto: bool = False, short: Collection[str] = ()) -> str:
    """The path panel's title at ``update`` (None: no update picked); ``auto``: picked
    as where the runs differ most; ``short``: the runs whose arrows are not drawn (too
    short to see): the title names only the runs whose arrows show, or none."""
    if update is None:
        return "Paths on the loss contours"
    shown = [geo.rule_name(k) for k in scene.coords if k not in short]
    if short and not shown:
        return f"Update {int(update)} marked" + (": where the runs differ most" if auto else "")
    if auto:
        return f"Update {int(update)}: where the runs differ most"
    if short:
        names = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]
        return f"Update {int(update)}: {names}'s terms as arrows"
    return f"Update {int(update)}: its terms as arrows"


def short_runs(scene: PathScene, update: int, every: bool = False) -> list[str]:
    """The runs whose update ``update`` is too short to see as arrows on the path panel:
    every term (``every``: any term that is not zero) shorter than ``MIN_ARROW_FRAC`` of
    the panel's larger span."""
    span = max(float(np.ptp(scene.box[0])), float(np.ptp(scene.box[1])))
    out = []
    for key, rec in scene.recordings.items():
        i = geo.step_index(rec.steps, update)
        if upd.why_no_arrows(rec, i):
            continue  # no arrows at all: the path panel's note says why
        terms = upd.decompose_update(rec, scene.name, i)
        lengths = [float(np.hypot(*uv)) for _, _, uv in upd.arrow_chain(terms, scene.plane)]
        seen = [x >= MIN_ARROW_FRAC * span for x in lengths if x > 0 or not every]
        if not (all(seen) if every else any(seen)):
            out.append(key)
    return out


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
        offsets, u, v = cast("np.ndarray", q.get_offsets()), cast("np.ndarray", q.U), cast("np.ndarray", q.V)
        tail = np.asarray(offsets[0], np.float64)
        tip = tail + [float(u[0]), float(v[0])]
        out[k] = float(np.hypot(*(ax.transData.transform(tip) - ax.transData.transform(tail))))
    return out
