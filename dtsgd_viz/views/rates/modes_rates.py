"""The rate panel of ``plot_modes``: each rule's rate (the spectral radius of its 2x2
iteration matrix, ``dtsgd_viz.theory``) against ``a = lr * h``, the runs' eigenvalues
marked on the curves and named above them.

    >>> subscript(12)
    '₁₂'
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle

from ...theory import quadratic as theory
from ..core import style
from ..core.figure import canvas_renderer, root_figure
from ..core.log_ticks import use_log_ticks

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..core.style import Look
    from .modes import ModeData

__all__ = ["draw_rates", "display_name", "mark_look", "subscript", "RATE_FLOOR"]

RATE_FLOOR = -0.06  # the rate axis starts under 0: a mark at rate 0 shows whole
OFF_SCALE = 1.04  # a rate past this is drawn as an arrow just over rate 1, its value written


def draw_rates(
    ax: Axes,
    data: ModeData,
    looks: Mapping[str, Look],
    zoom: tuple[tuple[float, float], tuple[float, float]] | None = None,
) -> None:
    """Each recording's rule: its rate against ``a = lr * h`` (log x), every
    eigenvalue marked on it in the run's marker (nested: see ``mark_look``), a key
    naming the marks, the eigenvalues named at the top and each curve named beside it.
    ``zoom``: ``((x0, x1), (y0, y1))`` of the zoom panel beside, outlined here."""
    ax.set_label("rates")
    if zoom is not None:
        (x0, x1), (y0, y1) = zoom
        ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec="0.35", lw=1.0, zorder=5.5, gid="zoom-box"))
    a_marks = np.array([lr * h for lr, _, _ in data.settings.values() for h in data.eigenvalues])
    lo = a_marks.min() / 10 if np.all(a_marks > 0) else 1e-3
    # the curves' stable part in view, however far past the limits every run is
    lo = min(lo, 0.3 * min(float(theory.convergence_boundary(mu, 1.0, n)) for _, mu, n in data.settings.values()))
    drawn = {}
    for key, (_lr, mu, nesterov) in data.settings.items():
        a_max = float(theory.convergence_boundary(mu, 1.0, nesterov))
        a = np.geomspace(lo, max(a_max * 1.15, a_marks.max() * 1.2), 400)
        if (mu, nesterov) not in drawn:
            rule = "Nesterov" if nesterov else "momentum" if mu else "plain SGD"
            (drawn[(mu, nesterov)],) = ax.plot(
                a, theory.rate(a, mu, nesterov), **looks[key].line(), gid=f"rate:{key}", label=f"{rule}, μ = {mu:.3g}"
            )
    n_runs = len(data.settings)
    handles = []
    off_scale = []  # (a, rate, key): a diverging direction's rate, past the axis' top
    for j, (key, (lr, _, _)) in enumerate(data.settings.items()):
        # concentric: the first run's mark largest and open, the last one filled, so runs
        # at one rate all show, each whole
        mark = mark_look(looks[key], j, n_runs)
        for i, h in enumerate(data.eigenvalues):
            rho = float(data.rates[key][i])
            if rho > OFF_SCALE:  # over rate 1, an arrow up: drawn where it is it would
                off_scale.append((lr * h, rho, key, i))  # stretch the axis to nothing
                from matplotlib.transforms import ScaledTranslation

                beside = ScaledTranslation(
                    (j - (n_runs - 1) / 2) * 7 / 72,
                    0,  # side by side
                    ax.figure.dpi_scale_trans,
                )
                ax.plot(
                    [lr * h],
                    [OFF_SCALE],
                    ls="none",
                    marker="$\u2191$",
                    ms=12,
                    color=looks[key].color,
                    zorder=6 + 0.01 * j,
                    clip_on=False,
                    transform=ax.transData + beside,
                    gid=f"mark:{i}:{key}",
                )
                continue
            ax.plot([lr * h], [rho], ls="none", **mark, zorder=6 + 0.01 * j, clip_on=False, gid=f"mark:{i}:{key}")
        handles.append(Line2D([], [], ls="none", **mark, label=f"{display_name(key)}'s directions"))
    texts = []
    if off_scale:  # what the arrows stand for: one note, a line per direction, by the last
        lines = {}
        for _a, rho, key, i in off_scale:
            lines.setdefault(i, []).append(f"{display_name(key)} ρ = {rho:.3g}")
        keys = {k for _, _, k, _ in off_scale}
        color = looks[next(iter(keys))].color if len(keys) == 1 else "0.2"
        text = "\n".join(f"h{subscript(i + 1)}: {', '.join(v)}" for i, v in sorted(lines.items()))
        texts.append(
            ax.annotate(
                text + "\n(↑: off the scale)",
                (max(a for a, *_ in off_scale), 1.0),
                xytext=(-8, -5),
                textcoords="offset points",
                ha="right",
                va="top",
                fontsize=style.NOTE_SIZE,
                color=color,
                gid="off-scale",
                bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.5),
            )
        )
    eig = []
    for a, labels in _marks(data).items():
        ax.axvline(a, **style.ROLE_LOOKS["guide"].line())
        eig.append(
            ax.text(
                a,
                1.12,
                "\n".join(labels),
                ha="center",
                va="top",
                fontsize=style.NOTE_SIZE,
                color="0.2",
                gid=f"eig-label:{a:.6g}",
                bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.5),
            )
        )
    ax.axhline(1.0, **style.ROLE_LOOKS["stability"].line())
    ax.set_xscale("log")
    use_log_ticks(ax.xaxis)  # the one log tick format (core.log_ticks)
    ax.set_ylim(RATE_FLOOR, 1.15)
    rows = _stagger(ax, eig) + bool(off_scale)  # a row over rate 1 for the off-scale notes
    if off_scale:
        _stagger(ax, eig, top=1.15 + 0.11 * (rows - 1))
    texts += eig
    if rows > 1:  # room above the rate-1 line for every row
        ax.set_ylim(RATE_FLOOR, 1.15 + 0.11 * (rows - 1))
    ax.set_xlabel("lr·h  (learning rate × the direction's curvature h, log scale)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("rate ρ per update", fontsize=style.LABEL_SIZE)
    ax.set_title(
        "Each rule's rate against lr·h" + (" (box: zoomed right)" if zoom else "") + "; above 1 it diverges",
        fontsize=style.TITLE_SIZE,
    )
    ax.tick_params(labelsize=style.TICK_SIZE)
    key = ax.legend(
        handles=handles,
        loc="lower left",
        fontsize=style.LABEL_SIZE,
        frameon=True,
        framealpha=0.9,
        edgecolor="none",
        handletextpad=0.4,
        borderpad=0.4,
        labelspacing=0.35,
        title="marks: each run's h₁ and h₂",
        title_fontsize=style.LABEL_SIZE,
    )
    key.set_gid("mark-key")
    key.set_zorder(8)
    _label_curves(ax, list(drawn.values()), texts + [key])


def display_name(key: str) -> str:
    """A run's name as written on the figure (Nesterov is a name)."""
    return key[:1].upper() + key[1:] if style.rule_of(key) == "nesterov" else key


def mark_look(look: Look, j: int, n: int) -> dict:
    """Run ``j`` of ``n``'s mark on the rate curves: concentric sizes, the first largest;
    open rings in the run's colour but the last (smallest, on top), filled."""
    ms = MARK_SMALL + MARK_STEP * (n - 1 - j) if n > 1 else MARK_SMALL + MARK_STEP
    filled = j == n - 1
    return dict(
        marker=look.marker or "o",
        ms=ms,
        color=look.color,
        mfc=look.color if filled else "none",
        mec="black" if filled else look.color,
        mew=0.8 if filled else 2.0,
    )


MARK_SMALL = 6.8  # points: the last run's (filled) mark
MARK_STEP = 3.4  # each earlier run's ring this much wider
NAME_PAD = 6.0  # points between a curve and its name


def _label_curves(ax, lines, obstacles=()):
    """Name each rate curve beside it (above, below, left or right of a point on it), at
    the place whose text box keeps furthest from every other curve, mark, line and name
    (``obstacles``: artists whose boxes count too) and crosses no curve at all."""
    fig = root_figure(ax)
    fig.draw_without_rendering()
    renderer = canvas_renderer(fig)
    frame = ax.get_window_extent(renderer)
    pad = NAME_PAD * fig.dpi / 72
    curves = [_dense(ax.transData.transform(np.column_stack([ln.get_xdata(), ln.get_ydata()])), frame) for ln in lines]
    others = [
        _dense(ax.transData.transform(np.column_stack([ln.get_xdata(), ln.get_ydata()])), frame)
        for ln in ax.lines
        if ln not in lines and len(ln.get_xdata()) > 1
    ]
    for ln in ax.lines:  # the horizontal and vertical reference lines (axes coordinates in y or x)
        if ln in lines or len(ln.get_xdata()) != 2:
            continue
        others.append(_dense(ln.get_transform().transform(np.column_stack([ln.get_xdata(), ln.get_ydata()])), frame))
    marks = [
        (ax.transData.transform((ln.get_xdata()[0], ln.get_ydata()[0])), ln.get_markersize() / 2 * fig.dpi / 72)
        for ln in ax.lines
        if (ln.get_gid() or "").startswith("mark:")
    ]
    boxes = [a.get_window_extent(renderer) for a in obstacles]
    for k, line in enumerate(lines):
        name = line.get_label().split(",")[0]
        start = ax.transData.inverted().transform(((frame.x0 + frame.x1) / 2, (frame.y0 + frame.y1) / 2))
        text = ax.annotate(
            name,
            tuple(start),
            xytext=(0, 0),
            textcoords="offset points",
            ha="center",
            va="center",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            color=line.get_color(),
            gid=f"curve-label:{line.get_gid()}",
            zorder=7,
            bbox=dict(fc="white", ec="none", alpha=0.8, pad=0.3),
        )
        text.set_in_layout(False)  # inside the axes: the layout measured above holds
        size = text.get_window_extent(renderer)
        w, h = size.width, size.height
        points = curves[k]
        # candidates: every few pixels along the curve, the name on each of its four sides
        best, where = -np.inf, None
        for px, py in points[::4]:
            for dx, dy in ((0, pad + h / 2), (0, -pad - h / 2), (pad + w / 2, 0), (-pad - w / 2, 0)):
                cx, cy = px + dx, py + dy
                box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                if not (
                    frame.x0 + 3 <= box[0]
                    and box[2] <= frame.x1 - 3
                    and frame.y0 + 3 <= box[1]
                    and box[3] <= frame.y1 - 3
                ):
                    continue
                if _gap(box, points) < 2.0:  # over its own curve
                    continue
                clear = min(
                    [_gap(box, c) for m, c in enumerate(curves) if m != k]
                    + [_gap(box, c) for c in others]
                    + [_gap(box, np.array([xy])) - r for xy, r in marks]
                    + [_box_gap(box, b) for b in boxes]
                    + [60.0]
                )
                if clear > best:
                    best, where = clear, (cx, cy)
        if where is None:
            text.remove()
            continue
        xy = ax.transData.inverted().transform(where)
        text.xy = (float(xy[0]), float(xy[1]))
        boxes.append(text.get_window_extent(renderer))


def _dense(xy, frame, step=3.0) -> np.ndarray:
    """The polyline ``xy`` (pixels) resampled every ``step`` pixels, inside ``frame``."""
    xy = np.asarray(xy, np.float64)
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if len(xy) < 2:
        return xy.reshape(-1, 2)
    out = [xy[:1]]
    for p, q in zip(xy[:-1], xy[1:]):
        n = max(1, int(np.ceil(np.hypot(*(q - p)) / step)))
        out.append(p + (q - p) * (np.arange(1, n + 1)[:, None] / n))
    pts = np.concatenate(out)
    inside = (pts[:, 0] >= frame.x0) & (pts[:, 0] <= frame.x1) & (pts[:, 1] >= frame.y0) & (pts[:, 1] <= frame.y1)
    return pts[inside]


def _gap(box, points) -> float:
    """Pixels from the box ``(x0, y0, x1, y1)`` to the nearest of ``points`` (0 inside)."""
    if not len(points):
        return np.inf
    dx = np.maximum(np.maximum(box[0] - points[:, 0], points[:, 0] - box[2]), 0.0)
    dy = np.maximum(np.maximum(box[1] - points[:, 1], points[:, 1] - box[3]), 0.0)
    return float(np.min(np.hypot(dx, dy)))


def _box_gap(box, b) -> float:
    dx = max(b.x0 - box[2], box[0] - b.x1, 0.0)
    dy = max(b.y0 - box[3], box[1] - b.y1, 0.0)
    return float(np.hypot(dx, dy))


def _stagger(ax, texts, gap_px=4.0, top=None) -> int:
    """Move labels that would overprint their left neighbours down a row (a row is
    0.11 in rate), the first row at ``top`` (default: over as many rows as they take);
    returns the number of rows. Measured with the figure's layout."""
    if len(texts) < 2:
        return 1
    fig = root_figure(ax)
    fig.draw_without_rendering()
    renderer = canvas_renderer(fig)
    placed = []  # (row, x0, x1) in pixels
    rows = 1
    for t in sorted(texts, key=lambda t: t.get_position()[0]):
        box = t.get_window_extent(renderer)
        row = 0
        while any(r == row and box.x0 < x1 + gap_px and x0 < box.x1 + gap_px for r, x0, x1 in placed):
            row += 1
        placed.append((row, box.x0, box.x1))
        rows = max(rows, row + 1)
    top = (1.15 + 0.11 * (rows - 1) if top is None else top) - 0.03
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
