"""Shard values: the global tensor at one optimizer update with each device's block
outlined, beside each unique block's L2 norm over the updates (log-y lines, one colour per
block shared with its chip)::

    fig = dtsgd_viz.plot_shards(rec, "w", "velocity", step=10)   # update 10
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..core import style
from ..core.empty import check_not_empty
from ..core.figure import new_figure
from .findings import STATS, STATS_ONLY_TEXT  # noqa: F401 - tests read them from here
from .geometry import image_shape, shard_norms, update_index
from .tensor_panel import TensorPanel, box_aspect, draw_tensor
from .view import ShardsView

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ...recording import Recording

__all__ = ["plot_shards", "draw_shards", "shard_norms", "ShardsView", "draw_tensor", "TensorPanel"]

SHARDS_SIZE = (style.WIDTH, 4.6)  # the heatmap and the norm lines
FLAT_HEIGHT = 4.0  # ... of a flat tensor: its heatmap fills a shorter figure
STATS_SIZE = (style.WIDTH, 6.2)  # a stats recording: its three statistics' panels


def _axes(ax, figsize, width_ratios, stats_only) -> tuple[Axes | None, ...]:
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
    """``plot_shards``' ``ShardsView`` (``.figure``), whose ``set_step``/``set_kind``/
    ``set_fixed_scale`` update it in place. ``headline``: title the figure (default: when
    ``ax`` is None); False titles the heatmap panel instead."""
    check_not_empty(recording)
    update_index(recording, step)
    stats_only = getattr(recording, "mode", "full") == "stats"
    if stats_only:
        recording.shard_stats(name, kind)  # unknown variable/kind: the Recording's own error
    else:
        recording.global_values(name, kind)
    shape = recording.geometry(name).global_shape
    flat = box_aspect(shape) or 1.0
    rows, cols = image_shape(shape)
    wide = box_aspect(shape) is None and cols >= 1.5 * rows  # square cells: a wider panel
    size = (SHARDS_SIZE[0], FLAT_HEIGHT if flat < 0.7 else SHARDS_SIZE[1])
    heat_ax, norm_ax = _axes(ax, size, (1.4, 1) if wide else (1.2, 1), stats_only)
    return ShardsView(
        recording,
        name,
        kind,
        step,
        heat_ax=heat_ax,
        norm_ax=norm_ax,
        fixed_scale=fixed_scale,
        headline=ax is None if headline is None else headline,
    )


def plot_shards(
    recording: Recording,
    name: str,
    kind: str = "velocity",
    step: int | None = None,
    *,
    ax: Axes | tuple[Axes, Axes] | list[Axes] | None = None,
    fixed_scale: bool = False,
) -> Figure:
    """The global ``kind`` tensor of ``name`` after optimizer update ``step`` (the first
    update is 1; -1..-n count back from the last; None: the last), each device's block
    outlined and named, beside each unique block's L2 norm over the updates: log y, one
    line per block in its colour named at its end; a diamond where replicas disagreed, an
    X on top at NaN/Inf updates, an open circle on the bottom edge where a norm is 0. The
    shown update is a grey line with a dot on every block's line. Returns the ``Figure``.

    The title is the shown update's finding, ``findings.spread_text`` of
    ``ShardsView.block_norms()`` ("after update k" for ``param`` and ``velocity``, "at
    update k" for ``grad``, which update k computed and applied), over one settings line;
    the norm panel's title is ``findings.norm_change_text`` of the lines.

    ``fixed_scale=True``: one colour scale over the whole run (decay shows as fading);
    else each update's own. ``ax``: None (a new figure), a pair ``(tensor_ax, norm_ax)``
    or one ``Axes`` (the tensor alone). Unknown variables, kinds or updates raise a
    ``ValueError`` naming what is allowed. A ``Recorder(mode="stats")`` recording has no
    values: its stored norm, mean and max |x| are drawn alone.

    >>> import dtsgd_viz
    >>> r = dtsgd_viz.run(dtsgd_viz.surfaces.ShardedQuadratic(), {"m": dict(learning_rate=0.5,
    ...                   momentum=0.9)}, steps=5)["m"]                        # doctest: +SKIP
    >>> fig = dtsgd_viz.plot_shards(r, "w", "velocity", step=3)                # doctest: +SKIP
    """
    return draw_shards(recording, name, kind, step, ax=ax, fixed_scale=fixed_scale).figure
