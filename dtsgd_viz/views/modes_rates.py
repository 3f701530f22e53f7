"""The rate panel of ``plot_modes``: each rule's rate (the spectral radius of its 2x2
iteration matrix, ``dtsgd_viz.theory``) against ``a = lr * h``, the runs' eigenvalues
marked on the curves and named above them.

    >>> subscript(12)
    '₁₂'
"""

from __future__ import annotations

import numpy as np

from ..theory import quadratic as theory
from . import style

__all__ = ["draw_rates", "subscript", "RATE_FLOOR"]

RATE_FLOOR = -0.06   # the rate axis starts under 0: a mark at rate 0 shows whole


def draw_rates(ax, data, looks):
    """Each recording's rule: its rate against ``a = lr * h`` (log x), every
    eigenvalue marked on it in the run's marker, the eigenvalues named at the top and
    each curve named on it."""
    ax.set_label("rates")
    a_marks = np.array([lr * h for lr, _, _ in data.settings.values() for h in data.eigenvalues])
    lo = a_marks.min() / 10 if np.all(a_marks > 0) else 1e-3
    drawn = {}
    for key, (lr, mu, nesterov) in data.settings.items():
        a_max = float(theory.convergence_boundary(mu, 1.0, nesterov))
        a = np.geomspace(lo, max(a_max * 1.15, a_marks.max() * 1.2), 400)
        if (mu, nesterov) not in drawn:
            rule = "Nesterov" if nesterov else "momentum" if mu else "plain SGD"
            (drawn[(mu, nesterov)],) = ax.plot(a, theory.rate(a, mu, nesterov), **looks[key].line(),
                                               gid=f"rate:{key}", label=f"{rule}, μ = {mu:.3g}")
    for j, (key, (lr, _, _)) in enumerate(data.settings.items()):
        # each run's marker, the first drawn largest: runs at one rate all show
        for i, h in enumerate(data.eigenvalues):
            ax.plot([lr * h], [data.rates[key][i]], ls="none", marker=looks[key].marker or "o",
                    color=looks[key].color, ms=max(5.0, 10.0 - 1.6 * j), mec="black", mew=0.8,
                    zorder=6 + 0.01 * j, clip_on=False, gid=f"mark:{i}:{key}")
    texts = []
    for a, labels in _marks(data).items():
        ax.axvline(a, color="0.45", lw=0.9, ls=":", zorder=0)
        texts.append(ax.text(a, 1.12, "\n".join(labels), ha="center", va="top", fontsize=style.NOTE_SIZE,
                             color="0.2", gid=f"eig-label:{a:.6g}",
                             bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.5)))
    ax.axhline(1.0, **style.ROLE_LOOKS["stability"].line())
    ax.set_xscale("log")
    ax.set_ylim(RATE_FLOOR, 1.15)
    rows = _stagger(ax, texts)
    if rows > 1:  # room above the rate-1 line for every row
        ax.set_ylim(RATE_FLOOR, 1.15 + 0.11 * (rows - 1))
    ax.set_xlabel("a = learning rate × h (log scale)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("rate ρ per update", fontsize=style.LABEL_SIZE)
    ax.set_title("Each rule's rate against lr·h: each mark is a run's direction; above 1 it diverges",
                 fontsize=style.TITLE_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    _label_curves(ax, list(drawn.values()))


def _label_curves(ax, lines):
    """Name each rate curve on it, where it is furthest from the other curves and from
    the names already written."""
    x0, x1 = np.log10(ax.get_xlim())
    y0, y1 = ax.get_ylim()
    curves = [(np.log10(ln.get_xdata()), np.asarray(ln.get_ydata(), np.float64)) for ln in lines]
    grid = np.linspace(x0 + 0.08 * (x1 - x0), x1 - 0.12 * (x1 - x0), 60)
    ys = [np.interp(grid, x, y, left=np.nan, right=np.nan) for x, y in curves]
    placed = []
    for k, line in enumerate(lines):
        y = (ys[k] - y0) / (y1 - y0)
        gap = np.full(len(grid), 1.0)
        for m, other in enumerate(ys):
            if m != k:
                gap = np.fmin(gap, np.abs(y - (other - y0) / (y1 - y0)))
        u = (grid - x0) / (x1 - x0)
        for pu, pv in placed:
            gap = np.fmin(gap, np.hypot((u - pu) / 3, y - pv))
        ok = np.isfinite(y) & (y > 0.06) & (y < 0.9)
        if not ok.any():
            continue
        j = int(np.flatnonzero(ok)[np.argmax(gap[ok])])
        placed.append((u[j], y[j]))
        above = y[j] < 0.7   # near the top: under the curve, clear of the eigenvalue names
        ax.annotate(line.get_label().split(",")[0], (10 ** grid[j], ys[k][j]), xytext=(0, 7 if above else -7),
                    textcoords="offset points", ha="center", va="bottom" if above else "top",
                    fontsize=style.LABEL_SIZE,
                    fontweight="bold", color=line.get_color(), gid=f"curve-label:{line.get_gid()}",
                    bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.3), zorder=7)


def _stagger(ax, texts, gap_px=4.0) -> int:
    """Move labels that would overprint their left neighbours down a row (a row is
    0.11 in rate); returns the number of rows. Measured with the figure's layout."""
    if len(texts) < 2:
        return 1
    fig = ax.figure.figure   # the root figure (the axes may sit in a SubFigure)
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    placed = []   # (row, x0, x1) in pixels
    rows = 1
    for t in sorted(texts, key=lambda t: t.get_position()[0]):
        box = t.get_window_extent(renderer)
        row = 0
        while any(r == row and box.x0 < x1 + gap_px and x0 < box.x1 + gap_px for r, x0, x1 in placed):
            row += 1
        placed.append((row, box.x0, box.x1))
        rows = max(rows, row + 1)
    top = 1.15 + 0.11 * (rows - 1) - 0.03
    for (row, _, _), t in zip(placed, sorted(texts, key=lambda t: t.get_position()[0])):
        t.set_y(top - 0.11 * row)
    return rows


def _marks(data) -> dict:
    """``{lr * h: ["lr·h₁", ...]}`` over the recordings' learning rates and eigenvalues."""
    out = {}
    lrs = sorted({lr for lr, _, _ in data.settings.values()})
    for lr in lrs:
        for i, h in enumerate(data.eigenvalues):
            tag = f"h{subscript(i + 1)}={h:g}" + (f" (lr {lr:g})" if len(lrs) > 1 else "")
            out.setdefault(float(lr * h), []).append(tag)
    return out


def subscript(i: int) -> str:
    """``i`` in subscript digits."""
    return str(i).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))
