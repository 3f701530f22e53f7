"""The zoom beside ``plot_modes``' rate panel: on a 0-1 rate axis runs a few hundredths
apart on one direction sit on one another, so a second panel draws that direction's band
of rates (the curves, the marks, and each run's rate written beside its mark).

    >>> import numpy as np
    >>> zoom_band(np.array([0.95, 0.9487, 0.9247]))
    (0.912, 0.963)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ...theory import quadratic as theory
from ..core import style
from ..core.figure import canvas_renderer, root_figure
from .modes_rates import _box_gap, _dense, _gap, display_name, mark_look, subscript

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike

    from ..core.style import Look
    from .modes import ModeData

__all__ = ["zoom_mode", "zoom_band", "draw_zoom", "ZOOM_SPREAD"]

ZOOM_SPREAD = 0.08  # runs closer than this in rate on one direction get the zoom
LABEL_AIR = 3.0  # pixels a rate label keeps off every curve, mark and other label


def zoom_mode(data: ModeData) -> int | None:
    """The direction whose runs' rates are distinct but within ``ZOOM_SPREAD`` of one
    another (the slowest such one), or None: one run, or nothing to resolve."""
    if len(data.rates) < 2:
        return None
    rates = np.array(list(data.rates.values()))  # (runs, modes)
    spread = np.ptp(rates, axis=0)
    ok = [i for i in range(rates.shape[1]) if 1e-4 < spread[i] < ZOOM_SPREAD and rates[:, i].min() > 0.05]
    return max(ok, key=lambda i: rates[:, i].max()) if ok else None


def zoom_band(rates: ArrayLike) -> tuple[float, float]:
    """The rate range the zoom shows: the runs' ``rates`` on the direction, with half
    their spread (at least 0.01) of room above and below, rounded to 0.001."""
    lo, hi = float(np.min(rates)), float(np.max(rates))
    pad = 0.5 * max(hi - lo, 0.02)
    return round(lo - pad, 3), round(hi + pad, 3)


def draw_zoom(
    ax: Axes, data: ModeData, looks: Mapping[str, Look], i: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Direction ``i``'s band of rates: each rule's curve near the runs' ``lr * h_i``, the
    marks as on the rate panel, each run's name and rate beside its mark (a thin leader
    when it stands off). Returns the ``(x, y)`` limits."""
    ax.set_label("rate-zoom")
    h = float(data.eigenvalues[i])
    a_runs = np.array([lr * h for lr, _, _ in data.settings.values()])
    rates = np.array([data.rates[k][i] for k in data.settings])
    x_lim = (float(a_runs.min()) * 0.4, float(a_runs.max()) * 1.7)
    y_lim = zoom_band(rates)
    a = np.linspace(*x_lim, 300)
    drawn = set()
    for key, (_, mu, nesterov) in data.settings.items():
        if (mu, nesterov) in drawn:
            continue
        drawn.add((mu, nesterov))
        ax.plot(a, theory.rate(a, mu, nesterov), **looks[key].line(), gid=f"zoom-rate:{key}")
    n = len(data.settings)
    for j, (key, (lr, _, _)) in enumerate(data.settings.items()):
        ax.plot(
            [lr * h],
            [data.rates[key][i]],
            ls="none",
            **mark_look(looks[key], j, n),
            zorder=6 + 0.01 * j,
            gid=f"zoom-mark:{key}",
        )
    ax.set_xlim(*x_lim)
    ax.set_ylim(*y_lim)
    ax.set_title(f"zoom on h{subscript(i + 1)} = {h:g}: rates {y_lim[0]:.3f}–{y_lim[1]:.3f}", fontsize=style.TITLE_SIZE)
    ax.set_xlabel("lr·h", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(True, color="0.92", lw=0.6)
    _label_marks(ax, data, looks, i)
    return x_lim, y_lim


def _label_marks(ax, data, looks, i):
    """Each run's ``name rate`` (3 decimals) in its colour near its mark, where its box
    keeps ``LABEL_AIR`` off every curve, the dotted line, every mark and the labels
    placed before it (lowest rate first), the nearest such place; a leader joins a label that
    stands off its mark."""
    fig = root_figure(ax)
    fig.draw_without_rendering()
    renderer = canvas_renderer(fig)
    frame = ax.get_window_extent(renderer)
    # each curve's points, and half its width: the air is kept from its edge
    lines = [
        (_dense(ln.get_transform().transform(ln.get_xydata()), frame), ln.get_linewidth() / 2 * fig.dpi / 72)
        for ln in ax.lines
        if (ln.get_gid() or "").startswith("zoom-rate:")
    ]
    marks = {
        ln.get_gid().split(":", 1)[1]: (
            ax.transData.transform(ln.get_xydata()[0]),
            ln.get_markersize() / 2 * fig.dpi / 72,
        )
        for ln in ax.lines
        if (ln.get_gid() or "").startswith("zoom-mark:")
    }
    boxes = []
    order = sorted(data.settings, key=lambda k: data.rates[k][i])
    for key in order:
        (mx, my), r = marks[key]
        text = ax.text(
            0,
            0,
            f"{display_name(key)} {data.rates[key][i]:.3f}",
            transform=None,
            ha="center",
            va="center",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            color=looks[key].color,
            gid=f"zoom-label:{key}",
            zorder=7,
        )
        size = text.get_window_extent(renderer)
        w, hh = size.width, size.height
        best, where = np.inf, None
        mark = np.array([[mx, my]])
        for cx in np.arange(frame.x0 + 2 + w / 2, frame.x1 - 2 - w / 2, 3.0):
            for cy in np.arange(frame.y0 + 2 + hh / 2, frame.y1 - 2 - hh / 2, 2.0):
                box = (cx - w / 2, cy - hh / 2, cx + w / 2, cy + hh / 2)
                dist = _gap(box, mark) - r
                if dist >= best or dist < LABEL_AIR:
                    continue
                clear = min(
                    [_gap(box, c) - lw for c, lw in lines]
                    + [_gap(box, np.array([xy])) - rr for xy, rr in marks.values()]
                    + [_box_gap(box, b) for b in boxes]
                    + [40.0]
                )
                if clear >= LABEL_AIR:  # clear of everything: the nearest such place wins
                    best, where = dist, (cx, cy)
        if where is None:
            text.remove()
            continue
        x, y = ax.transData.inverted().transform(where)
        text.set_transform(ax.transData)
        text.set_position((float(x), float(y)))
        box = text.get_window_extent(renderer)
        boxes.append(box)
        # a leader from the mark's edge to the label's nearest point when it stands off
        px = min(max(mx, box.x0), box.x1)
        py = min(max(my, box.y0), box.y1)
        dist = np.hypot(px - mx, py - my)
        if dist > r + 2 * LABEL_AIR:
            ux, uy = (px - mx) / dist, (py - my) / dist
            start = ax.transData.inverted().transform((mx + ux * (r + 1), my + uy * (r + 1)))
            end = ax.transData.inverted().transform((px - ux * 1.5, py - uy * 1.5))
            ax.plot(
                [start[0], end[0]],
                [start[1], end[1]],
                color=looks[key].color,
                lw=0.9,
                zorder=6.5,
                gid=f"zoom-leader:{key}",
            )
