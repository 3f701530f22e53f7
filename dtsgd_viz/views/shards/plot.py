"""Shard values: the global tensor at one optimizer update with each device's block
outlined, beside each unique block's L2 norm over the updates, as log-y lines::

    rec = dtsgd_viz.load_recording("nesterov.npz")
    fig = dtsgd_viz.plot_shards(rec, "w", "velocity", step=10)   # update 10
    fig.savefig("shards.png")

``step=k`` is optimizer update k as ``recording.steps`` counts (the first update is 1;
-1, -2, ... count back from the last; None: the last; ``views.core.steps``). Every block has one colour
(``style.block_styles``), shared by
its label chip on the left and its norm line on the right; replicas are one block, so
one line, marked with a diamond at updates where its copies disagreed.

``ShardsView`` holds the artists so a widget can move to another update or kind by
updating them in place (``set_index``, ``set_step``, ``set_kind``,
``set_fixed_scale``) instead of rebuilding the figure.

A ``Recorder(mode="stats")`` recording keeps each block's norm, mean and max |x| but
not its values: the left panel shows the blocks (the colour key), the right one the
three stored statistics as lines over the updates. ``plot_shards`` then draws only
those (no panel for the values it does not have) under a title saying what was not
recorded.

Figures are ``style.WIDTH`` wide with type on ``style``'s scale.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..core import style
from ..core.empty import check_not_empty
from ..core.figure import new_figure
from .geometry import image_shape, shard_norms, update_index
from .stats import STATS, STATS_ONLY_TEXT  # noqa: F401 - tests read them from here
from .tensor_panel import TensorPanel, box_aspect, draw_tensor
from .view import ShardsView

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from ...recording import Recording

__all__ = ["plot_shards", "draw_shards", "shard_norms", "ShardsView", "draw_tensor", "TensorPanel"]


SHARDS_SIZE = (style.WIDTH, 4.8)  # the heatmap and the norm lines
FLAT_HEIGHT = 4.2  # ... of a flat tensor: its heatmap fills a shorter figure
STATS_SIZE = (style.WIDTH, 6.4)  # a stats recording: its three statistics' panels


def _axes(ax, figsize=SHARDS_SIZE, width_ratios=(1.25, 1), stats_only=False) -> tuple[Axes | None, ...]:
    if ax is None and stats_only:  # no values: no heatmap panel, the statistics alone
        return None, new_figure(STATS_SIZE).add_subplot()
    if ax is None:
        return tuple(new_figure(figsize).subplots(1, 2, width_ratios=list(width_ratios)))
    if isinstance(ax, (tuple, list)) and len(ax) == 2:
        return tuple(ax)
    if hasattr(ax, "imshow"):
        return cast("Axes", ax), None
    raise TypeError(
        f"ax must be None, a matplotlib Axes (tensor only) or a pair (tensor_ax, norm_ax). Received: {ax!r}."
    )


def draw_shards(
    recording: Recording,
    name: str,
    kind: str = "velocity",
    step: int | None = None,
    *,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None = None,
    fixed_scale: bool = False,
    headline: bool | None = None,
) -> ShardsView:
    """Like ``plot_shards`` but returns the ``ShardsView`` (``.figure`` is the figure),
    whose ``set_step``/``set_kind``/``set_fixed_scale`` update the artists in place.
    ``headline``: title the figure with the finding and a settings line (default: when
    the figure is new, ``ax=None``); False puts the settings in the panel titles."""
    check_not_empty(recording)
    update_index(recording, step)
    stats_only = getattr(recording, "mode", "full") == "stats"
    if stats_only:
        recording.shard_stats(name, kind)  # unknown variable/kind: the Recording's own error
    else:
        recording.global_values(name, kind)
    flat = box_aspect(recording.geometry(name).global_shape) or 1.0
    size = (SHARDS_SIZE[0], FLAT_HEIGHT if flat < 0.7 else SHARDS_SIZE[1])
    rows, cols = image_shape(recording.geometry(name).global_shape)
    wide = box_aspect(recording.geometry(name).global_shape) is None and cols >= 1.5 * rows
    # a wide tensor drawn with square cells: a wider panel, or its heatmap is small
    heat_ax, norm_ax = _axes(ax, figsize=size, width_ratios=(1.4, 1) if wide else (1.25, 1), stats_only=stats_only)
    view = ShardsView(
        recording,
        name,
        kind,
        step,
        heat_ax=heat_ax,
        norm_ax=norm_ax,
        fixed_scale=fixed_scale,
        headline=ax is None if headline is None else headline,
    )
    fig = view.figure
    if hasattr(fig.canvas, "get_renderer"):
        fig.draw_without_rendering()  # settle the layout before measuring labels
        view.fit_labels(cast("FigureCanvasAgg", fig.canvas).get_renderer())  # hasattr above
        view.fit_lines()  # thinned for the norm panels' final widths
        view.fit_titles()  # each title inside the figure, as drawn
    return view


def plot_shards(
    recording: Recording,
    name: str,
    kind: str = "velocity",
    step: int | None = None,
    *,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None = None,
    fixed_scale: bool = False,
) -> Figure:
    """The global ``kind`` tensor of ``name`` after optimizer update ``step`` (as
    ``recording.steps`` counts, the first update is 1; -1..-n count back from the last;
    None: the last) with each
    device's block outlined and labelled, beside each unique block's L2 norm over the
    updates (log y, one line per block in its colour; replicas are one block, marked
    with a diamond at updates where their copies disagreed; NaN/Inf updates marked with
    an X on top). The shown update is a vertical line with a dot on every block's line.
    Returns the ``Figure``. The figure's title is the finding of the shown update (how
    far apart the blocks' norms are, which block is largest and which smallest), over a
    settings line (optimizer, layout); it says "after update k" for ``param`` and
    ``velocity`` (what update k left) and "the gradient of update k" for ``grad`` (what
    update k computed and applied). The norm panel's title is its finding over the run
    (how far the norms fell or grew, which block was slowest). Drawn into given axes,
    the heatmap panel's title holds the settings instead.

    ``fixed_scale=True`` fixes the heatmap's colour scale over the whole run
    (``-max|x|..max|x|`` of every recorded update), so decay shows as fading; the
    default scales each update to its own largest magnitude.

    ``ax``: None (a new figure), a pair ``(tensor_ax, norm_ax)`` to draw into, or a
    single ``Axes`` for the tensor alone. Unknown variables, kinds or updates raise a
    ``ValueError`` naming what is allowed.

    A ``Recorder(mode="stats")`` recording has no values: the figure holds each block's
    stored norm, mean and max |x| alone (the legend names each block's devices) and its
    subtitle says the values were not recorded; drawn into a given pair of axes, the
    left one shows the device blocks instead.

    >>> import dtsgd_viz
    >>> r = dtsgd_viz.run(dtsgd_viz.surfaces.ShardedQuadratic(), {"m": dict(learning_rate=0.5,
    ...                   momentum=0.9)}, steps=5)["m"]                        # doctest: +SKIP
    >>> fig = dtsgd_viz.plot_shards(r, "w", "velocity", step=3)                # doctest: +SKIP
    """
    return draw_shards(recording, name, kind, step, ax=ax, fixed_scale=fixed_scale).figure
