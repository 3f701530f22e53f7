"""The path panel's title at an update, and which runs' arrows are too short to see."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from ..update import geometry as upd
from . import geometry as geo

if TYPE_CHECKING:
    from .scene import PathScene

__all__ = ["path_title", "short_runs", "MIN_ARROW_FRAC"]

MIN_ARROW_FRAC = 0.045  # an arrow shorter than this fraction of the panel's span is too short to see


def path_title(scene: PathScene, update: int | None, auto: bool = False, short: Collection[str] = ()) -> str:
    """The path panel's title at ``update`` (None: no update picked); ``auto``: picked
    as where the runs differ most; ``short``: the runs whose arrows are not drawn."""
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
    """The runs whose update ``update`` is too short to see as arrows: every term
    (``every``: any non-zero term) shorter than ``MIN_ARROW_FRAC`` of the panel's span."""
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
