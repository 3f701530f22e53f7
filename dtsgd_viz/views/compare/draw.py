"""``plot_compare``'s drawing: the loss and gap panels, every number from ``geometry``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.figure import headline, new_figure
from ..paths.loss import LOSS_XLABEL, LOSS_YLABEL, plain_log_ticks
from ..update.panel import tint
from .geometry import CompareData, Findings, display_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from ..paths.loss import MeanBars

PANEL_HEIGHT = 3.0  # inches of the loss and gap panels


def looks(names: Iterable[str]) -> dict[str, style.Look]:
    """Each run's look; a second run of one rule gets its colour tinted and a thinner solid line."""
    out: dict[str, style.Look] = {}
    seen: dict[style.Look, int] = {}
    for name, look in style.run_looks(names).items():
        k = seen.get(look, 0)
        seen[look] = k + 1
        if k:
            assert look.color is not None
            look = dataclasses.replace(
                look,
                color=tint(look.color, 0.45 + 0.15 * (k - 1)),
                ls="-",
                lw=max(1.0, look.lw * 0.55),
                zorder=look.zorder + 0.01 * k,
            )
        out[name] = look
    return out


def _finite_positive(values: ArrayLike) -> np.ndarray:
    v = np.asarray(values, np.float64)
    return np.where(np.isfinite(v) & (v > 0), v, np.nan)


def draw(data: CompareData, findings: Findings) -> Figure:
    """The Figure of one comparison; a run on the first run's path drawn thin over it."""
    fig = new_figure((style.WIDTH, 1.0 + PANEL_HEIGHT + 0.4))
    first_var = data.variables[0]
    what = "the whole model" if len(data.variables) > 1 else repr(first_var)
    headline(
        fig,
        findings.headline(),
        f"{len(data.updates)} updates · loss after k updates, ends compared over the last "
        f"{findings.tail} · distance over {what}",
    )
    look = dict(looks(data.names))
    first = look[data.names[0]]
    marks = {}  # a run on the first run's path: markers only, so the first run's line shows between them
    for name in findings.same_path:
        edge = style.run_looks([name])[name].color  # the rule's own colour, not the second run's tint
        look[name] = dataclasses.replace(look[name], ls="none", lw=min(look[name].lw, 1.2), zorder=first.zorder + 0.5)
        marks[name] = dict(marker=look[name].marker, ms=look[name].ms + 2.0, mfc="white", mec=edge, mew=1.4)
    every = max(1, len(data.updates) // 12)
    top = fig.subplots(1, 2 if data.gaps is not None else 1, squeeze=False)[0]
    _loss_panel(top[0], data, look, marks, every)
    mean = _mark_tail(top[0], data, findings, look)
    if data.gaps is not None:
        _gap_panel(top[1], data, look)
    handles = [
        top[0].plot([], [], label=display_name(n), **look[n].line(**marks.get(n, {"marker": ""})))[0]
        for n in data.names
    ]
    if mean is not None:
        handles.append(mean)
    fig.legend(
        handles=handles,
        loc="outside lower center",
        ncols=min(4, len(handles)),
        fontsize=style.NOTE_SIZE,
        frameon=False,
        handlelength=style.handle_length(),
    )
    return fig


def _style_axis(ax: Axes, xlabel: str, ylabel: str) -> None:
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(alpha=0.3)
    ax.set_xlabel(xlabel, fontsize=style.LABEL_SIZE)
    ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE)


def _loss_panel(
    ax: Axes, data: CompareData, look: Mapping[str, style.Look], marks: Mapping[str, dict], every: int
) -> None:
    x = data.updates - 1  # the loss update k saw: after k - 1 updates
    drawn = False
    for name in data.names:
        loss = data.losses[name]
        if loss is None:
            continue
        positive = _finite_positive(loss)
        if np.isfinite(positive).any():
            extra: dict[str, Any] = dict(marks[name], markevery=(every // 2, every)) if name in marks else {}
            ax.plot(x, positive, **look[name].line(**extra))
            drawn = True
    ax.set_title("loss" if drawn else "no loss recorded (apply_gradients(..., loss=loss))", fontsize=style.TITLE_SIZE)
    if drawn:
        ax.set_yscale("log")
        plain_log_ticks(ax)
    _style_axis(ax, LOSS_XLABEL, LOSS_YLABEL)


def _mark_tail(ax: Axes, data: CompareData, findings: Findings, look: Mapping[str, style.Look]) -> MeanBars | None:
    """Each run's mean over the last ``findings.tail`` losses as bars; returns their legend entry."""
    from ..paths.loss import mark_means, mean_handle, mean_look

    x = (data.updates - 1)[-findings.tail :]
    means = {
        name: (value, look[name].color or "black")
        for name, value in findings.final_loss.items()
        if value is not None and np.isfinite(value) and value > 0 and name not in findings.same_path
    }  # a run on the first run's path has the first run's mean
    if not len(x) or not means:
        return None
    mark_means(ax, float(x[0]) - 0.5, float(x[-1]) + 0.5, means)
    span = f"k = {int(x[0])}–{int(x[-1])}" if len(x) > 1 else f"k = {int(x[0])}"
    return mean_handle([mean_look(c) for _, c in means.values()], f"each run's mean, {span} (shaded)")


def _gap_panel(ax: Axes, data: CompareData, look: Mapping[str, style.Look]) -> None:
    assert data.gaps is not None
    drawn = False
    for name, gap in data.gaps.items():
        positive = _finite_positive(gap)
        if np.isfinite(positive).any():
            ax.plot(data.updates, positive, **look[name].line())
            drawn = True
    ax.set_title(f"parameters' distance from {data.names[0]}'s", fontsize=style.TITLE_SIZE)
    if drawn:
        ax.set_yscale("log")
        plain_log_ticks(ax)
    else:
        ax.set_yticks([])
    _style_axis(ax, LOSS_XLABEL, "distance / norm (1 = 100%)")
