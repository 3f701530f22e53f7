"""One global tensor drawn as a 2-D heatmap with its device blocks outlined and labelled
in their block colours (``style.block_styles``): the panel ``plot_shards`` and
``plot_update_shards`` share, so their blocks look the same everywhere.

The labels sit off the data: a block on the top edge has its chip above the heatmap,
one on the bottom edge below it (under the x tick labels, off the frame), a middle one on its top
outline (half a chip into the cells either side of the line, no more); a tall strip
cut into rows only (16x1), or a rank-3 tensor whose blocks are whole d0 slices, has
them beside it, left, at each block's middle; a panel without values (the blocks alone, tinted) keeps them centred.
``box_aspect`` is the geometry, computed before drawing: how tall the panel is for
its width (flat tensors drawn taller than square cells would make them, so they fill
their panel).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np

from ..core import style
from .geometry import block_patches, image_shape, slice_boundaries, symmetric_limit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure
    from matplotlib.text import Text
    from matplotlib.ticker import Locator
    from numpy.typing import ArrayLike

    from ...geometry import ShardGeometry
    from .geometry import BlockPatch

__all__ = ["TensorPanel", "draw_tensor", "box_aspect"]

LABEL_SIZES = (style.TICK_SIZE, style.NOTE_SIZE)  # block labels, tried in turn
MAX_CELL_STRETCH = 2.5  # a flat tensor's cells drawn at most this much taller than wide
LABEL_GAP = 3.0  # points between the heatmap's top edge and the chips above it
SIDE_GAP = 7.0  # points between a tall strip's left edge and the chips beside it
MAX_LISTED = 12  # blocks named one by one in the caption of those too small to label
TICK_GAP = 4.0  # pixels between two tick labels kept (``thin_ticks``)
BELOW_TICKS = 3.5 + 3.5 + 1.2 * style.TICK_SIZE + 3.0
"""Points from the heatmap's bottom edge down to the chips below it, under the x tick
labels (tick length, pad, a label's height, a gap); ``fit_labels`` measures it."""


def box_aspect(shape: Sequence[int], fill: float = 0.7) -> float | None:
    """How tall the heatmap of a tensor of ``shape`` is drawn for its width: None (square
    cells) while its rows/cols ratio is 1/3..3; a flatter tensor as tall as ``fill``
    of its width allows, its cells stretched at most ``MAX_CELL_STRETCH`` times; a
    taller one at most 2.5 times its width.

    >>> box_aspect((8, 8)) is None, box_aspect((4, 16)), box_aspect((16,))
    (True, 0.625, 0.22)
    """
    rows, cols = image_shape(shape)
    ratio = rows / cols
    if 1 / 3 <= ratio <= 3:
        return None
    if ratio > 3:
        return 2.5
    return round(max(0.22, min(fill, MAX_CELL_STRETCH * ratio)), 4)


NONFINITE_COLOR = "black"  # NaN/Inf cells: outside both RdBu and viridis' bright end
OUTLINE_COLOR = "black"


def _cmap(name):
    from matplotlib import colormaps

    return colormaps[name].with_extremes(bad=NONFINITE_COLOR)


def _text_color(color) -> str:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(color)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"


def _chip(color, hatch="") -> dict:
    return dict(boxstyle="round,pad=0.2", facecolor=color, edgecolor="none", alpha=0.9, hatch=hatch or None)


class TensorPanel:
    """One global tensor drawn on ``ax``: a heatmap (None when ``values`` is None: the
    blocks alone, tinted), block outlines and label chips in the block colours.

    ``outlines`` hold one entry per rectangle of a block (rank-3+ blocks can have
    several); ``labels``/``label_rects`` one per block (on its middle rectangle);
    ``patches`` the ``BlockPatch`` geometry. After ``fit_labels``, ``unlabelled`` lists
    the blocks whose label did not fit (``unlabelled_text`` names them for a caption)."""

    def __init__(
        self,
        ax: Axes,
        geometry: ShardGeometry,
        device_names: Sequence[str],
        styles: Sequence[tuple[str, str, object]],
        image: np.ndarray | None = None,
        limit: float | None = None,
        colorbar_label: str | None = None,
        colorbar: bool | Literal["below"] = True,
        aspect: float | str | None = None,
    ):
        from matplotlib.patches import Rectangle

        self.ax, self.geometry, self.styles = ax, geometry, styles
        shape = geometry.global_shape
        rows, cols = image_shape(shape)
        # aspect: None (box_aspect of the shape), a box aspect, or "fill" (the whole cell)
        self.box_aspect = box_aspect(shape) if aspect is None else aspect
        aspect = "equal" if self.box_aspect is None else "auto"
        self.heatmap = self.colorbar = None
        if image is not None:
            m = limit if limit is not None else symmetric_limit(image)
            self.heatmap = ax.imshow(
                image,
                cmap=_cmap(style.DIVERGING_CMAP),
                vmin=-m,
                vmax=m,
                extent=(0, cols, rows, 0),
                interpolation="nearest",
                aspect=aspect,
            )
        else:
            ax.set_xlim(0, cols)
            ax.set_ylim(rows, 0)
            ax.set_aspect(aspect)
        if isinstance(self.box_aspect, float):
            ax.set_box_aspect(self.box_aspect)
        if image is not None and colorbar:
            flat = isinstance(self.box_aspect, float) and self.box_aspect < 0.25
            self._colorbar(flat or colorbar == "below", colorbar_label)
        self.patches = block_patches(geometry, device_names)
        self.outlines, self.labels, self.label_rects, self.tints = [], [], [], []
        # a tall strip cut into rows only: chips beside it, at each block's middle, where
        # an outline chip would sit on the boundary between two blocks
        # (a rank-3 tensor whose blocks are whole d0 slices too: a gutter, not the data)
        self.side = (
            image is not None
            and len(self.patches) > 1
            and (isinstance(self.box_aspect, float) and self.box_aspect > 1 or len(shape) > 2)
            and all(r[0] == 0 and r[2] == cols for p in self.patches for r in p.rects)
        )
        self.rows = rows
        for p in self.patches:
            color, hatch, _ = styles[p.group]
            for x, y, w, h in p.rects:
                if image is None:
                    self.tints.append(
                        ax.add_patch(
                            Rectangle(
                                (x, y),
                                w,
                                h,
                                facecolor=color,
                                alpha=0.35,
                                edgecolor="none",
                                hatch=hatch or None,
                                zorder=2,
                                gid=f"tint-{p.group}",
                            )
                        )
                    )
                self.outlines.append(
                    ax.add_patch(
                        Rectangle(
                            (x, y), w, h, fill=False, edgecolor=OUTLINE_COLOR, lw=1.8, zorder=3, gid=f"block-{p.group}"
                        )
                    )
                )
            # one label per block, on its middle piece: a rank-3 block is a piece per d0
            # slice, and a label on each stacked 64 unreadable copies
            x, y, w, h = p.rects[len(p.rects) // 2]
            self.labels.append(self._label(x, y, w, h, p.label, color, hatch, image is None, f"label-{p.group}"))
            self.label_rects.append((x, y, w, h))
        for y in slice_boundaries(shape):  # under the outlines: a block edge on a slice
            ax.axhline(y, color="white", lw=3, zorder=2.9, gid="slice-line")  # edge shows
        (self.nonfinite_cells,) = ax.plot(
            [], [], ls="none", marker="x", color="white", markersize=6, mew=1.5, zorder=3, gid="nonfinite-cells"
        )
        if image is not None:
            self._set_nonfinite_cells(image)
        self._ticks(rows, cols)
        ax.tick_params(labelsize=style.TICK_SIZE)
        # chips below the heatmap stand under the x tick labels (the ticks by the axis,
        # the chips off the frame); ``fit_labels`` measures the tick labels' depth
        ticked = any(t.get_text() for t in ax.get_xticklabels()) or len(ax.get_xticks())
        self._place_below(BELOW_TICKS if ticked else LABEL_GAP, style.TICK_SIZE)

    def _label(self, x, y, w, h, text, color, hatch, centred, gid):
        """A block's chip: centred on a tinted block; above the heatmap for a block on
        its top edge (``label_above``), else on the block's top outline."""
        from matplotlib.transforms import ScaledTranslation

        ax = self.ax
        kw: dict[str, Any] = dict(
            ha="center", zorder=4, fontsize=style.TICK_SIZE, color=_text_color(color), bbox=_chip(color, hatch), gid=gid
        )
        if centred:
            kw["gid"] += ":centre"
            return ax.text(x + w / 2, y + h / 2, text, va="center", **kw)
        if self.side:  # left of the strip, between the y tick labels at the boundaries
            kw.update(ha="right", gid=kw["gid"] + ":side")
            left = ax.transData + ScaledTranslation(-SIDE_GAP / 72, 0, ax.figure.dpi_scale_trans)
            return ax.text(0, y + h / 2, text, va="center", transform=left, clip_on=False, **kw)
        if y == 0:  # above the top edge, a few points up: off the data
            up = ax.transData + ScaledTranslation(0, LABEL_GAP / 72, ax.figure.dpi_scale_trans)
            return ax.text(x + w / 2, 0, text, va="bottom", transform=up, clip_on=False, **kw)
        if y + h == self.rows:  # on the bottom edge: below it, the x ticks under the chips
            kw["gid"] += ":below"
            down = ax.transData + ScaledTranslation(0, -LABEL_GAP / 72, ax.figure.dpi_scale_trans)
            return ax.text(x + w / 2, self.rows, text, va="top", transform=down, clip_on=False, **kw)
        return ax.text(x + w / 2, y, text, va="center", clip_on=False, **kw)

    def label_below(self, text: Text) -> bool:
        """Whether chip ``text`` (one of ``labels``) stands below the heatmap."""
        return (text.get_gid() or "").endswith(":below")

    def label_above(self, text: Text) -> bool:
        """Whether chip ``text`` (one of ``labels``) stands above the heatmap."""
        return text.get_verticalalignment() == "bottom"

    def title_pad(self) -> float:
        """Points between the panel's top and its title: room for the chips above it."""
        above = [t for t in self.labels if t.get_visible() and self.label_above(t)]
        if not above:  # clear of the top y tick label, half of it above the frame
            return 6.0 + 0.6 * style.TICK_SIZE
        size = max(t.get_fontsize() for t in above)
        return LABEL_GAP + 1.25 * size + 0.4 * size * 2 + 4.0

    def _colorbar(self, strip, label):
        from matplotlib.ticker import MaxNLocator

        fig, ax = cast("Figure", self.ax.figure), self.ax  # a SubFigure has no get_figwidth
        assert self.heatmap is not None  # a colour bar is drawn with a heatmap only
        if strip:  # a horizontal bar under the panel, not at the bottom of its cell
            from matplotlib.transforms import ScaledTranslation

            shift = ax.transAxes + ScaledTranslation(0, -0.75, fig.dpi_scale_trans)
            cax = ax.inset_axes((0.15, -0.12, 0.7, 0.12), transform=shift)
            self.colorbar = fig.colorbar(self.heatmap, cax=cax, orientation="horizontal", label=label)
        else:  # beside the heatmap as drawn, its height: an inset, not a gridspec cut
            width = max(0.5, ax.get_position().width * fig.get_figwidth())  # inches, about
            cax = ax.inset_axes((1 + 0.1 / width, 0, 0.16 / width, 1))
            self.colorbar = fig.colorbar(self.heatmap, cax=cax, label=label)
        self.colorbar_label = label or ""
        # a bar under the panel is about as wide as "-0.05" five times: -m, 0, m there
        self.colorbar.locator = symmetric_locator() if strip else MaxNLocator(nbins=5, steps=[1, 2, 5, 10])
        self.colorbar.ax.tick_params(labelsize=style.TICK_SIZE)
        self._scale_colorbar()

    def _scale_colorbar(self):
        """Ticks in units of a power of ten named in the label ("velocity value (x1e-4)"):
        matplotlib's offset text sits where the label is and overprints it."""
        from matplotlib.ticker import FuncFormatter

        if self.colorbar is None:
            return
        assert self.heatmap is not None  # a colour bar is drawn with a heatmap only
        m = max(abs(v) for v in self.heatmap.get_clim())
        e = int(np.floor(np.log10(m))) if np.isfinite(m) and m > 0 else 0
        e = e if not -2 <= e <= 3 else 0
        self.colorbar_scale = e
        self.colorbar.formatter = FuncFormatter(lambda v, _: f"{v / 10.0**e:.4g}")
        self.colorbar.update_ticks()
        unit = f" (×1e{e})" if e else ""
        self.colorbar.set_label(self.colorbar_label + unit, fontsize=style.LABEL_SIZE)

    def _ticks(self, rows, cols):
        ax, shape = self.ax, self.geometry.global_shape
        xs = sorted({r[0] for p in self.patches for r in p.rects} | {cols})
        ax.set_xticks(xs if len(xs) <= 17 else xs[:: -(-len(xs) // 16)])
        if len(shape) == 2:
            ys = sorted({r[1] for p in self.patches for r in p.rects} | {rows})
            ax.set_yticks(ys if len(ys) <= 17 else ys[:: -(-len(ys) // 16)])
        elif len(shape) < 2:
            ax.set_yticks([])
        elif self.side and blocks_are_slices(self.patches, shape):
            ax.set_yticks([])  # each chip stands beside its own d0 slice: the chips say it
        else:  # one tick per dim-0 slice, at its middle
            per = rows // shape[0]
            ticks = list(range(shape[0]))[:: -(-shape[0] // 12)]
            ax.set_yticks([per * (k + 0.5) for k in ticks], [f"d0={k}" for k in ticks])

    def _set_nonfinite_cells(self, image):
        r, c = np.nonzero(~np.isfinite(image))
        self.nonfinite_cells.set_data(c + 0.5, r + 0.5)

    def set_image(self, image: np.ndarray, limit: float | None = None) -> None:
        m = limit if limit is not None else symmetric_limit(image)
        assert self.heatmap is not None  # a panel drawn with values
        self.heatmap.set_data(image)
        self.heatmap.set_clim(-m, m)
        self._scale_colorbar()
        self._set_nonfinite_cells(image)

    def fit_labels(self, renderer: RendererBase) -> None:
        """Shrink (to ``NOTE_SIZE`` at least), turn or hide block labels that would not
        fit their block: inside it (tinted blocks), as wide as it (chips above the
        heatmap), or as wide and half as tall (chips on an outline: the next chip up
        stands a block higher)."""
        to_px = self.ax.transData
        for (x, y, w, h), text in zip(self.label_rects, self.labels):
            (x0, y0), (x1, y1) = to_px.transform([(x, y), (x + w, y + h)])
            bw, bh = abs(x1 - x0) * 0.92, abs(y1 - y0) * 0.92
            if self.label_above(text) or self.label_below(text):
                bh = np.inf
            elif self.side:  # beside the strip: as tall as half its block (tick labels
                bw, bh = np.inf, abs(y1 - y0) * 0.5  # stand at the block boundaries)
            elif not text.get_gid().endswith(":centre"):
                bh = abs(y1 - y0) * 0.9  # a chip centred on the outline
            for rotation in (0, 90) if bh > bw and np.isfinite(bh) else (0,):
                text.set_rotation(rotation)
                for size in LABEL_SIZES:  # never below NOTE_SIZE: no label rather than that
                    text.set_fontsize(size)
                    ext = text.get_window_extent(renderer)
                    if ext.width <= bw and ext.height <= bh:
                        break
                else:
                    continue
                break
            else:
                text.set_visible(False)  # named in unlabelled_text instead
        self.unlabelled = [p for p, text in zip(self.patches, self.labels) if not text.get_visible()]
        thin_ticks(self.ax, renderer)  # block boundaries closer than their labels: fewer
        self._clear_ticks(renderer)
        shown = [t for t in self.labels if t.get_visible()]
        if self.side and shown:  # the y label left of the chips, not under them
            from matplotlib.transforms import ScaledTranslation

            dpi = self.ax.figure.dpi
            width = max(t.get_window_extent(renderer).width for t in shown) * 72 / dpi
            ticks = [t.get_window_extent(renderer).width * 72 / dpi for t in self.ax.get_yticklabels() if t.get_text()]
            if ticks and len(self.geometry.global_shape) > 2:  # "d0=k" beside each block:
                shift = SIDE_GAP + max(ticks) + 2.0  # the chips left of them
                for t in self.labels:
                    t.set_transform(
                        self.ax.transData + ScaledTranslation(-shift / 72, 0, self.ax.figure.dpi_scale_trans)
                    )
                self.ax.yaxis.labelpad = width + SIDE_GAP + 4.0
            elif len(self.geometry.global_shape) > 2:  # no ticks: the chips are the ticks
                self.ax.yaxis.labelpad = width + SIDE_GAP + 4.0  # clear of the chips
            else:
                self.ax.yaxis.labelpad = max(4.0, width + SIDE_GAP - 14.0)

    def _place_below(self, gap: float, size: float) -> None:
        """The chips below the heatmap ``gap`` points under its bottom edge, and the x
        label under them (``size``: the chips' font size)."""
        from matplotlib.transforms import ScaledTranslation

        below = [t for t in self.labels if self.label_below(t)]
        if not below:
            return
        trans = self.ax.transData + ScaledTranslation(0, -gap / 72, self.ax.figure.dpi_scale_trans)
        for t in below:
            t.set_transform(trans)
        ticks = any(t.get_text() for t in self.ax.get_xticklabels()) or len(self.ax.get_xticks())
        depth = BELOW_TICKS - 3.0 if ticks else 0.0  # the tick labels' own depth
        # the x label's pad counts from the tick labels: a chip's height (text and box
        # padding) and a gap under the chips' row
        self.ax.xaxis.labelpad = max(4.0, gap - depth + 1.6 * size + 5.0)

    def _clear_ticks(self, renderer) -> None:
        """The chips below the heatmap under the x tick labels, measured: a ``LABEL_GAP``
        under the tick labels' lowest point (or the frame, without tick labels)."""
        below = [t for t in self.labels if t.get_visible() and self.label_below(t)]
        if not below:
            return
        self.ax.tick_params(axis="x", pad=3.5)
        fig = cast("Figure", self.ax.figure)  # a SubFigure has no draw_without_rendering
        fig.draw_without_rendering()
        to_pt = 72.0 / fig.dpi
        frame = self.ax.get_window_extent(renderer)
        ticks = [t.get_window_extent(renderer) for t in self.ax.get_xticklabels() if t.get_visible() and t.get_text()]
        size = max(t.get_fontsize() for t in below)
        depth = (frame.y0 - min(t.y0 for t in ticks)) * to_pt if ticks else 0.0
        gap = depth + LABEL_GAP + 0.2 * size  # the chip's box pads its text
        from matplotlib.transforms import ScaledTranslation

        trans = self.ax.transData + ScaledTranslation(0, -gap / 72, fig.dpi_scale_trans)
        for t in below:
            t.set_transform(trans)
        height = max(t.get_window_extent(renderer).height for t in below) * to_pt
        self.ax.xaxis.labelpad = max(4.0, gap - depth + height + 0.2 * size + 5.0)

    def unlabelled_text(self) -> str:
        """A caption naming the blocks too small for their label ("" when none is),
        top to bottom then left to right by where each block starts."""
        hidden = getattr(self, "unlabelled", [])
        if not hidden:
            return ""
        order = sorted(hidden, key=lambda p: (p.rects[0][1], p.rects[0][0]))
        where = (
            "top to bottom in each d0 slice" if len(self.geometry.global_shape) > 2 else "top to bottom, left to right"
        )
        if len(order) > MAX_LISTED:  # a list of every device would outgrow the figure
            return (
                f"{len(order)} blocks too small to label; {where}: {order[0].label}, "
                f"{order[1].label}, … {order[-1].label} (plot_layout names each)"
            )
        return f"blocks too small to label; {where}: " + " · ".join(p.label for p in order)


def symmetric_ticks(vmin: float, vmax: float) -> list[float]:
    """``[-r, 0, r]``: ``r`` the largest 1, 2 or 5 times a power of ten within the
    colour scale ``vmin..vmax`` (symmetric about 0, as a heatmap's is).

    >>> symmetric_ticks(-0.045, 0.045), symmetric_ticks(-3.2, 3.2)
    ([-0.02, 0.0, 0.02], [-2.0, 0.0, 2.0])
    """
    m = max(abs(vmin), abs(vmax))
    if not np.isfinite(m) or m <= 0:
        return [0.0]
    e = np.floor(np.log10(m))
    r = max(k * 10.0**e for k in (1, 2, 5) if k * 10.0**e <= m * (1 + 1e-9))
    return [-float(r), 0.0, float(r)]


def symmetric_locator() -> Locator:
    """A matplotlib locator of ``symmetric_ticks`` (it follows the colour scale when an
    update changes it)."""
    from matplotlib.ticker import Locator

    class _Symmetric(Locator):
        def __call__(self):
            assert self.axis is not None  # called by the axis it locates
            return self.tick_values(*self.axis.get_view_interval())

        def tick_values(self, vmin, vmax):
            return symmetric_ticks(vmin, vmax)

    return _Symmetric()


def kept_ticks(centres: ArrayLike, sizes: ArrayLike, gap: float = TICK_GAP) -> list[int]:
    """The indices of the tick labels to keep, every k-th (the smallest k) from the first,
    so that no two kept labels, centred at ``centres`` (pixels along the axis, ascending)
    with extents ``sizes`` along it, come closer than ``gap`` pixels; the last tick too when
    it has room beside the last kept one.

    >>> kept_ticks([0, 10, 20, 30, 40], [14] * 5), kept_ticks([0, 30, 60], [14] * 3)
    ([0, 2, 4], [0, 1, 2])
    """
    c, w = np.asarray(centres, np.float64), np.asarray(sizes, np.float64)
    n = len(c)
    for k in range(1, max(n, 1) + 1):
        keep = list(range(0, n, k))
        if all(c[b] - c[a] >= (w[a] + w[b]) / 2 + gap for a, b in zip(keep, keep[1:])):
            last = n - 1
            if keep and keep[-1] != last and c[last] - c[keep[-1]] >= (w[last] + w[keep[-1]]) / 2 + gap:
                keep.append(last)
            return keep
    return [0] if n else []


def thin_ticks(ax: Axes, renderer: RendererBase) -> None:
    """Drop tick labels of ``ax`` that would run into their neighbours (``kept_ticks``), on
    both axes, as the panel is drawn: the block boundaries of a 64-device mesh are closer
    than "56" is wide."""
    for axis, along in ((ax.xaxis, 0), (ax.yaxis, 1)):
        locs = list(axis.get_majorticklocs())
        labels = [t.get_text() for t in axis.get_majorticklabels()]
        if len(locs) < 3 or len(labels) != len(locs) or not any(labels):
            continue
        boxes = [t.get_window_extent(renderer) for t in axis.get_majorticklabels()]
        pts = ax.transData.transform(np.column_stack([locs, locs]))[:, along]
        order = np.argsort(pts)
        sizes = [(b.width if along == 0 else b.height) for b in boxes]
        keep = kept_ticks(pts[order], np.asarray(sizes)[order])
        if len(keep) < len(locs):
            chosen = sorted(order[keep])
            axis.set_ticks([locs[i] for i in chosen], [labels[i] for i in chosen])


def blocks_are_slices(patches: Sequence[BlockPatch], shape: Sequence[int]) -> bool:
    """True when ``shape`` is rank 3+ and every block of ``patches`` is one whole d0
    slice, each slice a block (the d0 slice boundaries are then the block outlines).

    >>> from types import SimpleNamespace as P
    >>> blocks_are_slices([P(rects=[(0, 0, 4, 2)]), P(rects=[(0, 2, 4, 2)])], (2, 2, 4))
    True
    >>> blocks_are_slices([P(rects=[(0, 0, 4, 1), (0, 2, 4, 1)])], (2, 2, 4))
    False
    """
    if len(shape) < 3:
        return False
    rows, cols = image_shape(shape)
    per = rows // shape[0]
    rects = sorted((r[1], r[3], r[0], r[2]) for p in patches for r in p.rects)
    return (
        len(patches) == shape[0]
        and all(len(p.rects) == 1 for p in patches)
        and rects == [(per * k, per, 0, cols) for k in range(shape[0])]
    )


def draw_tensor(
    ax: Axes,
    geometry: ShardGeometry,
    device_names: Sequence[str],
    image: np.ndarray | None = None,
    *,
    limit: float | None = None,
    colorbar_label: str | None = None,
    colorbar: bool | Literal["below"] = True,
    aspect: float | str | None = None,
) -> TensorPanel:
    """Draw one global tensor's 2-D ``image`` (``as_image`` of it; None: the blocks
    alone) on ``ax`` with the blocks of ``geometry`` outlined and labelled in their
    block colours. ``limit``: the colour scale's ``(-limit, limit)`` (default: this
    image's largest magnitude); ``colorbar``: True (beside), ``"below"`` or False;
    ``aspect``: None (``box_aspect`` of the shape), a box aspect or ``"fill"``."""
    return TensorPanel(
        ax, geometry, device_names, style.block_styles(geometry), image, limit, colorbar_label, colorbar, aspect
    )
