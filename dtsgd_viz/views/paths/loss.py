"""A path figure's loss panel: each run's loss after k updates, the update ringed, the headline's updates banded."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.figure import root_figure
from ..core.log_ticks import use_log_ticks
from ..shards.geometry import minmax_indices
from . import geometry as geo
from .scene import ring_index

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.typing import ColorType

    from ..core.style import Look
    from .findings import PathFindings
    from .frames import PathArtists
    from .scene import PathScene

LOSS_XLABEL = "updates made (k)"
LOSS_YLABEL = "loss after k updates"
LOSS_TITLE = "Loss after k updates"
FEW_POINTS = 3  # loss lines of this many points or fewer get markers
END_MARGIN = 0.015  # the x axis ends this far (of its span) past the last update: no empty range
DOT_SIZE = style.ROLE_LOOKS["current"].ms  # points: each run's ring at the update shown, as on the paths


def draw_loss(scene: PathScene, update: int | None, art: PathArtists, looks: Mapping[str, Look]) -> None:
    """Draw ``scene``'s losses on ``art.ax_loss``, marking ``update`` (None: none)."""
    ax = art.ax_loss
    assert ax is not None  # drawn only with a loss panel
    columns = max(1, int(np.ceil(geo.root_pixels(root_figure(ax))[0])))  # the most pixel columns a line spans
    for key, (steps, loss, _) in scene.losses.items():
        look = looks[key]
        few = len(steps) <= FEW_POINTS
        at = [] if update is None else [ring_index(scene, key, update)]
        art.loss_thin[key] = keep = thin_loss(steps, loss, columns, at)
        (art.loss_lines[key],) = ax.plot(
            steps[keep],
            loss[keep],
            **look.line(),
            label=key,
            marker=(look.marker or "o") if few else "",
            ms=6,
            gid=f"loss:{key}",
        )
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(loss) & (loss > 0)
        last = np.flatnonzero(finite)
        if len(last) and (key in scene.diverged or not finite.all()):  # the run's last finite loss: its x
            j = int(last[-1])
            ax.plot([steps[j]], [loss[j]], "x", ms=11, mew=2.5, color=look.color, gid=f"loss-diverged:{key}", zorder=6)
        if update is not None:  # at the ring: the loss after the updates made there
            i = ring_index(scene, key, update)
            cur = style.ROLE_LOOKS["current"]  # the ring the path panel draws there
            (art.loss_markers[key],) = ax.plot(
                [steps[i]],
                [loss[i]],
                cur.marker,
                ms=DOT_SIZE,
                mfc="none",
                mec=look.color,
                mew=cur.lw,
                gid=f"loss-marker:{key}",
                zorder=5 + 0.01 * look.zorder,
            )
    _frame(scene, ax)
    if update is not None:  # at the rings
        line = style.ROLE_LOOKS["update_line"]
        first = next(iter(scene.losses))
        at = scene.losses[first][0][ring_index(scene, first, update)]
        art.step_line = ax.axvline(at, **line.line(), gid="step-line")
    if ax.get_yscale() == "log":
        plain_log_ticks(ax)


WINDOW_COLOR = "0.55"  # the band of the updates the headline's means are over
MEAN_LABEL = "mean over the shaded k"  # the legend's name of the mean bars
MEAN_LW = 3.0  # a mean bar's width, in a dark outline this much wider: apart from its own run's line
MEAN_OUTLINE, MEAN_EDGE = 1.6, "0.15"


def mean_look(color: ColorType) -> dict:
    """A path figure's mean bar in ``color`` (the run's): ``Line2D`` keywords, outlined in ``MEAN_EDGE``."""
    from matplotlib import patheffects

    outline = [patheffects.withStroke(linewidth=MEAN_LW + MEAN_OUTLINE, foreground=MEAN_EDGE)]
    return dict(color=color, lw=MEAN_LW, solid_capstyle="butt", path_effects=outline)


class MeanBars(tuple):
    """A legend entry showing each run's mean bar (or ring) side by side, as drawn (``mean_handle``)."""

    label: str = MEAN_LABEL

    def get_label(self) -> str:
        return self.label


def mean_handle(bars: Iterable[Mapping], label: str = MEAN_LABEL) -> MeanBars:
    """The legend entry ``label``: a short bar per ``bars`` (``Line2D`` keywords: ``mean_look(c)``), side by side."""
    from matplotlib.legend import Legend
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.lines import Line2D

    Legend.update_default_handler_map({MeanBars: HandlerTuple(ndivide=None, pad=0.0)})  # this type only, end to end
    out = MeanBars(Line2D([], [], **kw) for kw in bars)
    out.label = label
    return out


def mark_window(art: PathArtists, found: PathFindings) -> list[Artist]:
    """``mark_means`` on ``art.ax_loss`` over the headline's ``found.window``, a bar at each ranked run's mean."""
    if art.ax_loss is None or not found.ranking:
        return []
    a, b = found.window
    half = 0.5 if a == b else 0.0
    colors = {k: art.loss_lines[k].get_color() if k in art.loss_lines else "0.3" for k in found.ranking}
    means = {k: (found.tail_loss[k], colors[k]) for k in found.ranking}
    return mark_means(art.ax_loss, a - half, b + half, means)


def mark_means(ax: Axes, lo: float, hi: float, means: Mapping[str, tuple[float, ColorType]]) -> list[Artist]:
    """Draw a pale band over ``lo..hi`` on ``ax``, a ``mean_look`` bar per ``{run: (mean, colour)}``; returns them."""
    out: list[Artist] = [ax.axvspan(lo, hi, color=WINDOW_COLOR, alpha=0.12, lw=0, zorder=0.5, gid="loss-window")]
    for key, (value, color) in means.items():
        out += ax.plot([lo, hi], [value] * 2, **mean_look(color), zorder=4.5, gid=f"loss-mean:{key}")
    return out


def thin_loss(steps: np.ndarray, loss: np.ndarray, columns: int, keep: Iterable[int] = ()) -> np.ndarray:
    """The indices of a loss line's points drawn on ``columns`` pixel columns (``minmax_indices``), and ``keep``."""
    idx = minmax_indices(np.asarray(steps), np.asarray(loss, np.float64), columns)
    if len(idx) == len(steps):
        return idx
    k = np.asarray(list(keep), np.int64)
    return np.unique(np.concatenate([idx, k[(k >= 0) & (k < len(steps))]]))


def plain_log_ticks(ax: Axes) -> None:
    """``core.log_ticks`` on ``ax``'s log y axis, the 2s to 8s labelled too under a decade and a half."""
    from matplotlib.ticker import LogLocator

    use_log_ticks(ax.yaxis)
    lo, hi = ax.get_ylim()
    if lo > 0 and hi > lo and np.log10(hi / lo) <= 1.5:
        ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)))


def _frame(scene: PathScene, ax: Axes) -> None:
    from matplotlib.ticker import MaxNLocator

    log = _needs_log(scene)
    ax.set_yscale("log" if log else "linear")
    ax.set_xlabel(LOSS_XLABEL, fontsize=style.LABEL_SIZE)
    ax.set_ylabel(LOSS_YLABEL, fontsize=style.LABEL_SIZE)
    ax.set_title(LOSS_TITLE + (" (log scale)" if log else ""), fontsize=style.TITLE_SIZE)
    ax.grid(True, which="major", alpha=0.3)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, steps=[1, 2, 5, 10], min_n_ticks=1))
    first = min(int(st[0]) for st, _, _ in scene.losses.values())
    last = max(int(st[-1]) for st, _, _ in scene.losses.values())
    ax.autoscale_view()
    if last - first < 4:  # a short run: a margin of half an update, ticks on the updates
        ax.set_xlim(first - 0.5, last + 0.5)
    else:  # the axis ends just past the data: no empty range
        ax.set_xlim(ax.get_xlim()[0], last + END_MARGIN * (last - ax.get_xlim()[0]))


LINEAR_SPAN = 10.0  # losses within this factor of each other read on a linear axis


def _needs_log(scene: PathScene) -> bool:
    """A log axis where the finite positive losses span ``LINEAR_SPAN`` or more, or a run diverged."""
    vals = [np.asarray(v, np.float64) for _, v, _ in scene.losses.values()]
    v = np.concatenate(vals) if vals else np.zeros(0)
    with np.errstate(invalid="ignore"):
        bad = not np.all(np.isfinite(v)) or np.any(v <= 0)
    v = v[np.isfinite(v) & (v > 0)]
    return bool(scene.diverged or bad or not len(v) or v.max() >= LINEAR_SPAN * v.min())
