"""Shard values: the global tensor at one step with each device's block outlined,
beside a steps x devices panel of each shard's L2 norm over time::

    rec = dtsgd_viz.load_recording("nesterov.npz")
    fig = dtsgd_viz.plot_shards(rec, "w", "velocity", step=10)
    fig.savefig("shards.png")

``ShardsView`` holds the artists so a widget can move to another step or kind by
updating them in place (``set_step``, ``set_kind``) instead of rebuilding the figure.

A ``Recorder(mode="stats")`` recording keeps each shard's norm/mean/max but not its
values: the norm panel is drawn from the stored norms as usual, and the heatmap's place
holds the device blocks and ``STATS_ONLY_TEXT`` instead.
"""

from __future__ import annotations

import numpy as np

from . import style
from ._empty import check_not_empty
from ._figure import new_figure
from ._shard_geometry import (
    as_image, axis_labels, block_patches, device_ticks, flagged_steps,
    image_shape, iteration_ticks, norm_scale, settings_text, shard_norms, slice_boundaries,
    step_index, symmetric_limit,
)

__all__ = ["plot_shards", "draw_shards", "shard_norms", "ShardsView"]

NONFINITE_COLOR = "black"     # NaN/Inf cells: outside both RdBu and viridis' bright end
STEP_COLOR = "#CC79A7"        # Okabe-Ito reddish purple: the shown step
MISMATCH_COLOR = "#D55E00"    # Okabe-Ito vermillion: replicas disagree
OUTLINE_COLOR = "black"
STATS_ONLY_TEXT = ("values not recorded: Recorder(mode='stats') keeps per-shard "
                   "norm/mean/max only; record with mode='full' for the heatmap")


def _cmap(name):
    from matplotlib import colormaps
    return colormaps[name].with_extremes(bad=NONFINITE_COLOR)


def _text_color(color) -> str:
    from matplotlib.colors import to_rgb
    r, g, b = to_rgb(color)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _chip(color) -> dict:
    return dict(boxstyle="round,pad=0.2", facecolor=color, edgecolor="none", alpha=0.9)


def _norm(scale, vmin, vmax):
    from matplotlib.colors import LogNorm, Normalize
    if scale == "log":
        return LogNorm(vmin=vmin, vmax=vmax, clip=True)  # clip: zeros draw as vmin, not "bad"
    return Normalize(vmin=vmin, vmax=vmax)


class ShardsView:
    """The shard values view drawn on ``heat_ax`` (and ``norm_ax`` unless None).

    Attributes tests and widgets use: ``heatmap`` and ``norm_image`` (``AxesImage``;
    ``heatmap`` is None for a stats-mode recording, whose ``stats_note`` ``Text`` says why),
    ``outlines`` and ``labels`` (one ``Rectangle`` and one ``Text`` per rectangle of
    a block: rank-3+ blocks can have several), ``patches`` (the ``BlockPatch``
    geometry behind both, one per replica group),
    ``step_line``, ``nonfinite_cells``, ``nonfinite_marks``/``mismatch_marks``
    (``Line2D`` or None).
    """

    def __init__(self, recording, name, kind="velocity", step=-1, *, heat_ax, norm_ax=None):
        check_not_empty(recording)
        self.recording, self.name = recording, name
        self.index = step_index(recording, step)
        self.kind = kind
        self.stats_only = getattr(recording, "mode", "full") == "stats"
        self._load(kind)  # raises for unknown name/kind
        self.heat_ax, self.norm_ax = heat_ax, norm_ax
        self.figure = heat_ax.figure
        self.geometry = recording.geometry(name)
        self.devices = recording.shard_devices(name)
        self.short_names = tuple(d.rsplit("device:", 1)[-1] for d in self.devices)
        self.colors = [style.device_color(d, len(self.devices)) for d in range(len(self.devices))]
        self.nonfinite_idx, self.mismatch_idx = flagged_steps(recording, name)
        self.stats_note = None
        if self.stats_only:
            self._draw_blocks_only()
        else:
            self._draw_heatmap()
        self.norm_image = self.step_line = None
        self.nonfinite_marks = self.mismatch_marks = None
        self.hatches = []
        if norm_ax is not None:
            self._draw_norms()
        self._legend()
        self._update_titles()

    def _load(self, kind):
        """``values`` (full mode) or ``stats`` (stats mode) of ``kind``."""
        if self.stats_only:
            self.values, self.stats = None, self.recording.shard_stats(self.name, kind)
        else:
            values = self.recording.global_values(self.name, kind)
            if values.dtype.name == "bfloat16":  # matplotlib and numpy.ma cannot reduce it
                values = values.astype(np.float32)  # exact: bfloat16 is a float32 prefix
            self.values, self.stats = values, None

    def _holds_nonfinite(self, i) -> bool:
        data = self.stats[i] if self.stats_only else self.values[i]
        return not np.all(np.isfinite(data))

    # ---- building ---------------------------------------------------------------------

    def _draw_blocks_only(self):
        """Stats mode: the device blocks outlined and labelled, no values, and a note."""
        import textwrap
        ax, shape = self.heat_ax, self.geometry.global_shape
        rows, cols = image_shape(shape)
        ratio = rows / cols
        self.heatmap = self.colorbar = None
        ax.set_xlim(0, cols)
        ax.set_ylim(rows, 0)
        ax.set_aspect("equal" if 1 / 3 <= ratio <= 3 else "auto")
        if not 1 / 3 <= ratio <= 3:
            ax.set_box_aspect(min(max(ratio, 0.22), 2.5))
        ax.set_facecolor("#EEEEEE")
        self._draw_blocks(ax)
        for y in slice_boundaries(shape):
            ax.axhline(y, color="white", lw=3, zorder=3.5)
        self.nonfinite_cells = None
        ax.set_xticks([])
        ax.set_yticks([])
        note = axis_labels(self.geometry.layout)[2]
        ax.set_xlabel("device blocks of the global tensor" + (f"\n{note}" if note else ""))
        text = textwrap.fill(STATS_ONLY_TEXT, 34, break_on_hyphens=False)
        self.stats_note = ax.text(
            0.5, 0.5, text, transform=ax.transAxes,
            ha="center", va="center", zorder=6, fontsize=style.FONT_SIZE,
            bbox=dict(boxstyle="round,pad=0.5", facecolor="white", edgecolor="0.3",
                      alpha=0.95), gid="stats-only-note")

    def _draw_blocks(self, ax):
        """Outline and label every device block (one per rectangle: rank-3+ blocks fall
        apart into pieces)."""
        from matplotlib.patches import Rectangle
        self.patches = block_patches(self.geometry, self.short_names)
        self.outlines, self.labels, self.label_rects = [], [], []
        for p in self.patches:
            color = self.colors[p.devices[0]]
            for x, y, w, h in p.rects:
                self.outlines.append(ax.add_patch(Rectangle(
                    (x, y), w, h, fill=False, edgecolor=OUTLINE_COLOR, lw=1.8, zorder=3,
                    gid=f"block-{p.group}")))
                self.labels.append(ax.text(
                    x + w / 2, y + h / 2, p.label, ha="center", va="center", zorder=4,
                    fontsize=style.FONT_SIZE - 1, color=_text_color(color), bbox=_chip(color),
                    gid=f"label-{p.group}"))
                self.label_rects.append((x, y, w, h))

    def _draw_heatmap(self):
        from matplotlib.ticker import MaxNLocator, ScalarFormatter
        ax, shape = self.heat_ax, self.geometry.global_shape
        rows, cols = image_shape(shape)
        ratio = rows / cols
        image = as_image(self.values[self.index])
        m = symmetric_limit(image)
        self.heatmap = ax.imshow(
            image, cmap=_cmap(style.DIVERGING_CMAP), vmin=-m, vmax=m,
            extent=(0, cols, rows, 0), interpolation="nearest",
            aspect="equal" if 1 / 3 <= ratio <= 3 else "auto",
        )
        strip = ratio < 1 / 3
        if not 1 / 3 <= ratio <= 3:
            ax.set_box_aspect(min(max(ratio, 0.22), 2.5))
        if strip:  # a horizontal bar just under the strip, not at the bottom of its cell
            from matplotlib.transforms import ScaledTranslation
            shift = ax.transAxes + ScaledTranslation(0, -0.75, self.figure.dpi_scale_trans)
            cax = ax.inset_axes([0.15, -0.12, 0.7, 0.12], transform=shift)
            self.colorbar = self.figure.colorbar(self.heatmap, cax=cax, orientation="horizontal",
                                                 label=f"{self.kind} value")
        else:
            self.colorbar = self.figure.colorbar(self.heatmap, ax=ax, shrink=0.9,
                                                 label=f"{self.kind} value")
        self._draw_blocks(ax)
        # short ticks with a shared power of ten: per-step limits never widen the labels
        formatter = ScalarFormatter(useMathText=True)
        formatter.set_powerlimits((-2, 3))
        self.colorbar.formatter = formatter
        self.colorbar.locator = MaxNLocator(nbins=5, steps=[1, 2, 5, 10])
        self.colorbar.update_ticks()
        for y in slice_boundaries(shape):  # on top of the outlines, which may coincide
            ax.axhline(y, color="white", lw=3, zorder=3.5)
        self.nonfinite_cells, = ax.plot([], [], ls="none", marker="x", color="white",
                                        markersize=6, mew=1.5, zorder=3, gid="nonfinite-cells")
        self._set_nonfinite_cells(image)
        xs = sorted({r[0] for p in self.patches for r in p.rects} | {cols})
        ax.set_xticks(xs if len(xs) <= 17 else xs[:: -(-len(xs) // 16)])
        if len(shape) == 2:
            ys = sorted({r[1] for p in self.patches for r in p.rects} | {rows})
            ax.set_yticks(ys if len(ys) <= 17 else ys[:: -(-len(ys) // 16)])
        elif len(shape) < 2:
            ax.set_yticks([])
        else:  # one tick per dim-0 slice, at its middle
            per = rows // shape[0]
            ticks = list(range(shape[0]))[:: -(-shape[0] // 12)]
            ax.set_yticks([per * (k + 0.5) for k in ticks], [f"d0={k}" for k in ticks])
        xlabel, ylabel, note = axis_labels(self.geometry.layout)
        ax.set_xlabel(xlabel + (f"\n{note}" if note else ""))
        ax.set_ylabel(ylabel)

    def _set_nonfinite_cells(self, image):
        r, c = np.nonzero(~np.isfinite(image))
        self.nonfinite_cells.set_data(c + 0.5, r + 0.5)

    def _draw_norms(self):
        from matplotlib.patches import Rectangle
        ax, n = self.norm_ax, len(self.devices)
        norms = shard_norms(self.recording, self.name, self.kind)
        self.norm_image = ax.imshow(norms, cmap=_cmap(style.SEQUENTIAL_CMAP),
                                    norm=_norm(*norm_scale(norms)), aspect="auto",
                                    interpolation="nearest")
        self.norm_colorbar = self.figure.colorbar(self.norm_image, ax=ax, shrink=0.9,
                                                  label="L2 norm of the shard")
        self.step_line = ax.axhline(self.index, color=STEP_COLOR, lw=2.2, label="shown step",
                                    gid="step-line")
        flags = len(self.nonfinite_idx) or len(self.mismatch_idx)
        for i in self.nonfinite_idx:
            self.hatches.append(ax.add_patch(Rectangle(
                (-0.5, i - 0.5), n, 1, fill=False, hatch="///", edgecolor="white", lw=0,
                gid="nonfinite-row")))
        if len(self.nonfinite_idx):
            self.nonfinite_marks, = ax.plot(
                np.full(len(self.nonfinite_idx), n - 0.2), self.nonfinite_idx, ls="none",
                marker="X", color=NONFINITE_COLOR, markersize=7, label="NaN/Inf in this variable",
                gid="nonfinite-marks")
        if len(self.mismatch_idx):
            self.mismatch_marks, = ax.plot(
                np.full(len(self.mismatch_idx), n + 0.2), self.mismatch_idx, ls="none",
                marker="D", color=MISMATCH_COLOR, markersize=6, label="replicas disagree",
                gid="mismatch-marks")
        ax.set_xlim(-0.5, n - 0.5 + (1.0 if flags else 0.0))
        ax.set_ylim(len(self.recording) - 0.5, -0.5)
        names, prefix = device_ticks(self.short_names)
        ax.set_xticks(range(n + (1 if flags else 0)), names + (["flags"] if flags else []),
                      rotation=90 if n > 16 or not prefix else 0)
        for d, tick in enumerate(ax.get_xticklabels()[:n]):
            tick.set_color(_text_color(self.colors[d]))
            tick.set_bbox(_chip(self.colors[d]))
        ax.set_yticks(*iteration_ticks(self.recording.steps))
        mesh = self.geometry.layout.mesh
        ax.set_xlabel(f"device {prefix or ''}n, in mesh order "
                      f"({' x '.join(f'{k}={v}' for k, v in mesh.shape.items())})")
        ax.set_ylabel("optimizer iteration")

    def _legend(self):
        from matplotlib.legend_handler import HandlerTuple
        from matplotlib.patches import Patch
        handles, labels = [], []
        if self.step_line is not None:
            handles.append(self.step_line)
            labels.append("shown step")
        if len(self.nonfinite_idx):
            patch = Patch(facecolor=NONFINITE_COLOR, edgecolor="white", hatch="///")
            handles.append((patch, self.nonfinite_marks) if self.nonfinite_marks else patch)
            labels.append("NaN/Inf (cells, steps)")
        if self.mismatch_marks is not None:
            handles.append(self.mismatch_marks)
            labels.append("replicas disagree")
        self.legend = None
        if handles:  # above the panel, under its title: tick labels below vary in height
            ax = self.norm_ax if self.norm_ax is not None else self.heat_ax
            self.legend = ax.legend(handles, labels, loc="lower center", ncol=len(handles),
                                    bbox_to_anchor=(0.5, 1.0), fontsize=style.FONT_SIZE - 1,
                                    frameon=False, borderaxespad=0.2,
                                    handler_map={tuple: HandlerTuple(ndivide=None)})

    # ---- in-place updates -----------------------------------------------------------------

    def _update_titles(self):
        from matplotlib.colors import LogNorm
        r, i = self.recording, self.index
        bad = " (holds NaN/Inf)" if self._holds_nonfinite(i) else ""
        if i in self.mismatch_idx:
            bad += " (replicas disagree)"
        legend_here = self.legend is not None and self.legend.axes is self.heat_ax
        what = "device blocks of " if self.stats_only else ""
        self.heat_ax.set_title(
            f"{what}{self.kind} of {self.name!r} at iteration {r.steps[i]}{bad}\n"
            f"{settings_text(r, i)}  |  recorded step {i + 1} of {len(r)}",
            fontsize=style.FONT_SIZE + 1, pad=20 if legend_here else 6)
        if self.norm_ax is not None:
            scale = "log" if isinstance(self.norm_image.norm, LogNorm) else "linear"
            self.norm_ax.set_title(f"Each shard's {self.kind} over time ({scale} colour scale)",
                                   fontsize=style.FONT_SIZE + 1, pad=20 if self.legend else 6)

    def set_step(self, step: int) -> None:
        """Show recorded step ``step`` (an index into ``recording.steps``), in place."""
        self.index = step_index(self.recording, step)
        if self.heatmap is not None:
            image = as_image(self.values[self.index])
            m = symmetric_limit(image)
            self.heatmap.set_data(image)
            self.heatmap.set_clim(-m, m)
            self._set_nonfinite_cells(image)
        if self.step_line is not None:
            self.step_line.set_ydata([self.index, self.index])
        self._update_titles()

    def set_kind(self, kind: str) -> None:
        """Show another recorded kind (``param``/``velocity``/``grad``), in place."""
        self._load(kind)
        self.kind = kind
        if self.norm_image is not None:
            norms = shard_norms(self.recording, self.name, kind)
            self.norm_image.set_data(norms)
            self.norm_image.set_norm(_norm(*norm_scale(norms)))
        if self.colorbar is not None:
            self.colorbar.set_label(f"{kind} value")
        self.set_step(self.index)

    def fit_labels(self, renderer=None) -> None:
        """Shrink, turn or hide block labels that would not fit inside their block."""
        renderer = renderer or self.figure.canvas.get_renderer()
        to_px = self.heat_ax.transData
        for (x, y, w, h), text in zip(self.label_rects, self.labels):
            (x0, y0), (x1, y1) = to_px.transform([(x, y), (x + w, y + h)])
            bw, bh = abs(x1 - x0) * 0.92, abs(y1 - y0) * 0.92
            for rotation in ((0, 90) if bh > bw else (0,)):
                text.set_rotation(rotation)
                for size in range(style.FONT_SIZE - 1, 4, -1):
                    text.set_fontsize(size)
                    ext = text.get_window_extent(renderer)
                    if ext.width <= bw and ext.height <= bh:
                        break
                else:
                    continue
                break
            else:
                text.set_visible(False)  # the norm panel's ticks still name every device


def draw_shards(recording, name, kind="velocity", step=-1, *, ax=None) -> ShardsView:
    """Like ``plot_shards`` but returns the ``ShardsView`` (``.figure`` is the figure),
    whose ``set_step``/``set_kind`` update the artists in place."""
    check_not_empty(recording)
    step_index(recording, step)
    if getattr(recording, "mode", "full") == "stats":
        recording.shard_stats(name, kind)  # unknown variable/kind: the Recording's own error
    else:
        recording.global_values(name, kind)
    if ax is None:
        heat_ax, norm_ax = new_figure().subplots(1, 2, width_ratios=[1.25, 1])
    elif isinstance(ax, (tuple, list)) and len(ax) == 2:
        heat_ax, norm_ax = ax
    elif hasattr(ax, "imshow"):
        heat_ax, norm_ax = ax, None
    else:
        raise TypeError(
            "ax must be None, a matplotlib Axes (heatmap only) or a pair (heatmap_ax, "
            f"norm_ax). Received: {ax!r}."
        )
    view = ShardsView(recording, name, kind, step, heat_ax=heat_ax, norm_ax=norm_ax)
    fig = view.figure
    if hasattr(fig.canvas, "get_renderer"):
        fig.draw_without_rendering()  # settle the layout before measuring labels
        view.fit_labels(fig.canvas.get_renderer())
    return view


def plot_shards(recording, name, kind="velocity", step=-1, *, ax=None):
    """The global ``kind`` tensor of ``name`` at recorded step ``step`` (an index into
    ``recording.steps``; -1 is the last) with each device's block outlined and
    labelled, beside a steps x devices panel of each shard's L2 norm. Non-finite
    values are black (with a white x), non-finite steps hatched and flagged, and
    steps whose replicas disagreed flagged with a diamond. Returns the ``Figure``.

    ``ax``: None (a new figure), a pair ``(heatmap_ax, norm_ax)`` to draw into, or a
    single ``Axes`` for the heatmap alone. Unknown variables or kinds raise the
    Recording's ``ValueError``; so do out-of-range steps and empty recordings.

    A ``Recorder(mode="stats")`` recording has no values: the norm panel shows its
    stored shard norms, and the heatmap's place the device blocks and a note saying
    to record with ``mode='full'`` for the heatmap.
    """
    return draw_shards(recording, name, kind, step, ax=ax).figure
