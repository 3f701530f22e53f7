"""The picked cell of a phase diagram in time: each rule's loss above the minimum per
update of the real runs there, on a log scale, with the tolerance the maps count to,
each line named at its end with the updates it needed (``PhaseDiagram``'s third panel).
"""

from __future__ import annotations

import numpy as np

from ..theory.convergence import diverged, path_losses, steps_to_tolerance
from . import style
from .direct_labels import label_ends

__all__ = ["draw_cell_losses", "cell_outcome"]

RULE_NAMES = {"momentum": "momentum", "nesterov": "Nesterov"}


def cell_outcome(losses, min_value, tol) -> str:
    """What a run's losses say: ``"N updates"``, ``"not within tol"`` or ``"diverged"``.

    >>> cell_outcome([1.0, 0.1, 0.001, 0.0001], 0.0, 0.01)
    '2 updates'
    """
    k = int(steps_to_tolerance(np.asarray(losses, np.float64), min_value, tol))
    if diverged(np.asarray(losses, np.float64), min_value, k):
        return "diverged"
    return "not within tol" if k < 0 else f"{k} updates"


def draw_cell_losses(ax, recordings, surface, tol) -> dict:
    """Each recording's loss minus ``surface.min_value`` per update on ``ax`` (log y)
    in its rule's look, the ``tol`` line, and each line named at its end with its
    outcome (``cell_outcome``), over the updates until the slower run is within ``tol``
    and as many again (the title says how many of the run's updates that is). Returns
    ``{key: Line2D}``."""
    looks = style.run_looks(recordings)
    lines, ends = {}, []
    floor = np.inf
    all_losses = {key: path_losses(rec, surface) for key, rec in recordings.items()}
    # the updates that matter: until the slower run is within tol, and as long again
    reached = [int(steps_to_tolerance(v, surface.min_value, tol)) for v in all_losses.values()]
    n = max(len(v) for v in all_losses.values())
    if reached and min(reached) >= 0:
        n = min(n, 2 * max(reached) + 10)
    for key, losses in all_losses.items():
        gap = losses[:n] - float(surface.min_value)
        with np.errstate(invalid="ignore"):
            shown = np.where(np.isfinite(gap) & (gap > 0), gap, np.nan)
        look = looks[key]
        (lines[key],) = ax.plot(np.arange(len(shown)), shown, **look.line(), gid=f"cell-loss:{key}")
        finite = np.flatnonzero(np.isfinite(shown))
        if len(finite):
            floor = min(floor, float(np.nanmin(shown)))
            ends.append((f"{RULE_NAMES.get(key, key)}: {cell_outcome(losses, surface.min_value, tol)}",
                         finite[-1], shown[finite[-1]], look.color))
    ax.set_yscale("log")
    tol_look = style.ROLE_LOOKS["tolerance"]
    ax.axhline(tol, **tol_look.line(), gid="cell-tol")
    ax.annotate(f"tol {tol:g}", (0.98, tol), xycoords=("axes fraction", "data"), xytext=(0, 2),
                textcoords="offset points", va="bottom", ha="right", fontsize=style.NOTE_SIZE, color=tol_look.color,
                gid="cell-tol-label")
    if np.isfinite(floor):
        ax.set_ylim(bottom=min(floor, tol) / 3)
    ax.set_xlabel("update", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("loss − minimum (log)", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    total = max(len(v) for v in all_losses.values()) - 1   # updates run (the losses start at update 0)
    # the curves stop where the panel does: say so, or they look cut short
    ax.set_title("Their loss per update" if n > total else f"Their loss, the first {n - 1} of {total} updates",
                 fontsize=style.TITLE_SIZE, gid="cell-title")
    label_ends(ax, ends, fontsize=style.NOTE_SIZE, gid_prefix="cell-label:")
    return lines
