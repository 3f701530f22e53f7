"""The picked cell of a phase diagram in time: each rule's loss above the minimum per update."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ...theory.convergence import path_losses, steps_to_tolerance
from ..core import style
from ..core.log_ticks import use_log_ticks
from ..paths.geometry import rule_name
from ..paths.loss import LOSS_XLABEL, LOSS_YLABEL

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D

    from ...recording import Recording
    from ...theory.surfaces import Surface

MIN_SHOWN = 10  # updates: the loss panel shows at least these many


def pick_finding(lr: float, mu: float, outcomes: dict, steps: int) -> str:
    """The picked cell's headline; ``outcomes[key] = (updates to tol (-1: never), diverged)`` per rule.

    >>> pick_finding(0.0502, 0.8, {"momentum": (49, False), "nesterov": (23, False)}, 150)
    'At lr 0.0502, μ 0.8 Nesterov reaches tol in 23 updates, momentum in 49'
    >>> pick_finding(0.08, 0.3, {"momentum": (30, False), "nesterov": (-1, True)}, 150)
    'At lr 0.08, μ 0.3 momentum reaches tol in 30 updates; Nesterov diverges'
    >>> pick_finding(0.001, 0.2, {"momentum": (-1, False), "nesterov": (-1, False)}, 150)
    'At lr 0.001, μ 0.2 neither rule reaches tol in 150 updates'
    """
    at = f"At lr {lr:.3g}, μ {mu:.3g}"
    ok = {k: v[0] for k, v in outcomes.items() if v[0] >= 0}
    failed = [
        (k, "diverges" if v[1] else f"is not within tol in {steps} updates") for k, v in outcomes.items() if v[0] < 0
    ]
    if len(ok) == len(outcomes) and len(set(ok.values())) == 1:
        return f"{at} both rules reach tol in {next(iter(ok.values()))} updates"
    if ok:
        order = sorted(ok, key=ok.__getitem__)
        text = f"{at} {rule_name(order[0])} reaches tol in {ok[order[0]]} updates"
        text += "".join(f", {rule_name(k)} in {ok[k]}" for k in order[1:])
        return text + "".join(f"; {rule_name(k)} {why}" for k, why in failed)
    if all(why == "diverges" for _, why in failed):
        return f"{at} both rules diverge"
    if not any(why == "diverges" for _, why in failed):
        return f"{at} neither rule reaches tol in {steps} updates"
    return f"{at} " + ", ".join(f"{rule_name(k)} {why}" for k, why in failed)


def draw_cell_losses(ax: Axes, recordings: Mapping[str, Recording], surface: Surface, tol: float) -> dict[str, Line2D]:
    """Each run's loss above ``surface.min_value`` per update (log y), the ``tol`` line, where each stays within it."""
    looks = style.run_looks(recordings)
    all_losses = {key: path_losses(rec, surface) for key, rec in recordings.items()}
    reached = [int(steps_to_tolerance(v, surface.min_value, tol)) for v in all_losses.values()]
    total = max(len(v) for v in all_losses.values()) - 1  # updates run (the losses start at update 0)
    n = total + 1
    if reached and min(reached) >= 0:
        n = min(n, max(2 * max(reached), MIN_SHOWN) + 1)  # points: updates 0..n-1
    lines, floor = {}, np.inf
    for key, losses in all_losses.items():
        with np.errstate(invalid="ignore"):
            gap = losses[:n] - float(surface.min_value)
            shown = np.where(np.isfinite(gap) & (gap > 0), gap, np.nan)
        line = looks[key].line()
        (lines[key],) = ax.plot(np.arange(len(shown)), shown, **line, label=rule_name(key), gid=f"cell-loss:{key}")
        k = int(steps_to_tolerance(losses, surface.min_value, tol))
        if 0 <= k < len(shown) and np.isfinite(shown[k]):  # the update after which the run stays within tol
            look = looks[key]
            mark: dict[str, Any] = dict(
                marker=look.marker, ms=2.4 * look.ms, color=look.color, mec="black", mew=1.0, ls="none"
            )
            ax.plot([k], [shown[k]], **mark, zorder=6, label=f"within tol from k = {k}", gid=f"cell-reached:{key}")
        if np.isfinite(shown).any():
            floor = min(floor, float(np.nanmin(shown)))
    ax.set_yscale("log")
    use_log_ticks(ax.yaxis)  # the one log tick format (core.log_ticks)
    tol_look = style.ROLE_LOOKS["tolerance"]
    ax.axhline(tol, **tol_look.line(), label=f"tol {tol:g}", gid="cell-tol")
    if np.isfinite(floor):
        ax.set_ylim(bottom=min(floor, tol) / 3)
    ax.set_xlabel(LOSS_XLABEL, fontsize=style.LABEL_SIZE)  # x = k: the loss after k updates
    above = "" if float(surface.min_value) == 0.0 else " − minimum"
    ax.set_ylabel(f"{LOSS_YLABEL}{above} (log)", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    title = "Their loss per update" if n > total else f"Their loss, the first {n - 1} of {total} updates"
    ax.set_title(title, fontsize=style.TITLE_SIZE, gid="cell-title")
    pad = 0.02 * max(n - 1, 1)
    ax.set_xlim(-pad, n - 1 + pad)
    ax.legend(loc="best", fontsize=style.NOTE_SIZE, framealpha=0.9).set_gid("cell-key")
    return lines
