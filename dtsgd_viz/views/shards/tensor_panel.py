"""One global tensor as a heatmap, its device blocks outlined and named on chips: every shard figure's panel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from matplotlib import colormaps
from matplotlib.patches import Rectangle
from matplotlib.ticker import FuncFormatter, MaxNLocator
from matplotlib.transforms import ScaledTranslation

from ..core import style
from ..text.direct import text_size
from .geometry import block_patches, image_shape, slice_boundaries, symmetric_limit

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.text import Text

    from ...geometry import ShardGeometry
    from .geometry import BlockPatch

__all__ = ["TensorPanel", "box_aspect", "blocks_are_slices"]

MAX_CELL_STRETCH = 2.5  # a flat tensor's cells drawn at most this much taller than wide
CHIP_SIZE = style.NOTE_SIZE
LABEL_GAP = 3.0  # points between the heatmap's top edge and the chips above it
BESIDE = {False: 45.0, True: 100.0}  # points of a panel's width its y tick labels (and colour bar) take
HEIGHT_SHARE = 0.6  # of a panel's height, left once titles and x labels have theirs
NONFINITE_COLOR = "black"  # NaN/Inf cells: outside both RdBu and viridis' bright end
OUTLINE_COLOR = "black"


def box_aspect(shape: Sequence[int]) -> float | None:
    """The heatmap's height over its width: None (square cells) for rows/cols in 1/3..3, else capped::

    >>> box_aspect((8, 8)) is None, box_aspect((4, 16)), box_aspect((16,))
    (True, 0.625, 0.22)
    """
    rows, cols = image_shape(shape)
    ratio = rows / cols
    if 1 / 3 <= ratio <= 3:
        return None
    if ratio > 3:
        return 2.5
    return round(max(0.22, min(0.7, MAX_CELL_STRETCH * ratio)), 4)


def blocks_are_slices(patches: Sequence[BlockPatch], shape: Sequence[int]) -> bool:
    """Whether ``shape`` is rank 3+ and each block of ``patches`` is one whole d0 slice::

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


def bar_exponent(largest: float) -> int:
    """The power of ten a colour bar up to ``largest`` counts in: 0 from 0.1 to 9999, else its decade.

    >>> [bar_exponent(m) for m in (0.1, 0.5, 5000.0, 0.09, 0.012, 0.0042, 2e4, 0.0)]
    [0, 0, 0, -2, -2, -3, 4, 0]
    """
    if not (np.isfinite(largest) and largest > 0):
        return 0
    e = int(np.floor(np.log10(largest)))
    return 0 if -1 <= e <= 3 else e


class TensorPanel:
    """``image`` on ``ax`` (None: the blocks alone, tinted), the blocks outlined and named on chips if they fit."""

    def __init__(
        self,
        ax: Axes,
        geometry: ShardGeometry,
        device_names: Sequence[str],
        image: np.ndarray | None = None,
        *,
        limit: float | None = None,
        colorbar_label: str | None = None,
        colorbar: bool | Literal["below"] = True,
        aspect: float | str | None = None,
    ):
        self.styles = styles = style.block_styles(geometry)
        self.ax, self.geometry = ax, geometry
        shape = geometry.global_shape
        self.rows, self.cols = rows, cols = image_shape(shape)
        self.box_aspect = box_aspect(shape) if aspect is None else aspect  # or "fill": the whole cell
        self.heatmap = self.colorbar = None
        self.colorbar_label = colorbar_label or ""
        if image is not None:
            m = limit if limit is not None else symmetric_limit(image)
            self.heatmap = ax.imshow(
                image,
                cmap=colormaps[style.DIVERGING_CMAP].with_extremes(bad=NONFINITE_COLOR),
                vmin=-m,
                vmax=m,
                extent=(0, cols, rows, 0),
                interpolation="nearest",
                aspect="equal" if self.box_aspect is None else "auto",
            )
        else:
            ax.set_xlim(0, cols)
            ax.set_ylim(rows, 0)
            ax.set_aspect("equal" if self.box_aspect is None else "auto")
        if isinstance(self.box_aspect, float):
            ax.set_box_aspect(self.box_aspect)
        if image is not None and colorbar:
            flat = isinstance(self.box_aspect, float) and self.box_aspect < 0.25
            self._colorbar(flat or colorbar == "below")
        self.patches = block_patches(geometry, device_names)
        self.outlines, self.labels = [], []
        for p in self.patches:
            color, hatch, _ = styles[p.group]
            for x, y, w, h in p.rects:
                if image is None:
                    tint = Rectangle((x, y), w, h, facecolor=color, alpha=0.35, edgecolor="none", hatch=hatch or None)
                    ax.add_patch(tint).set_gid(f"tint-{p.group}")
                outline = Rectangle(
                    (x, y), w, h, fill=False, edgecolor=OUTLINE_COLOR, lw=1.8, zorder=3, gid=f"block-{p.group}"
                )
                self.outlines.append(ax.add_patch(outline))
        for y in slice_boundaries(shape):  # under the outlines: a block edge on a slice edge shows
            ax.axhline(y, color="white", lw=3, zorder=2.9, gid="slice-line")
        (self.nonfinite_cells,) = ax.plot(
            [], [], ls="none", marker="x", color="white", markersize=6, mew=1.5, zorder=3, gid="nonfinite-cells"
        )
        if image is not None:
            self._set_nonfinite_cells(image)
        self._ticks()
        ax.tick_params(labelsize=style.TICK_SIZE)
        # row bands the y ticks bound: the y axis names them; else chips above the top row's blocks, below the bottom's
        bands = len(self.patches) > 1 and all(len(p.rects) == 1 and p.rects[0][2] == cols for p in self.patches)
        self.bands = bands and image is not None and (len(shape) == 2 or blocks_are_slices(self.patches, shape))
        chip = [text_size(p.label, CHIP_SIZE) for p in self.patches]  # (width, height) points, about
        self.named = all(cw <= w and ch <= h for (cw, ch), (w, h) in zip(chip, self._room(image is None)))
        if self.bands and self.named:
            ax.set_yticks([p.rects[0][1] + p.rects[0][3] / 2 for p in self.patches], [p.label for p in self.patches])
            ax.tick_params(axis="y", length=0, pad=LABEL_GAP + 2)
            for p, text in zip(self.patches, ax.get_yticklabels()):
                text.set(fontsize=CHIP_SIZE, gid=f"label-{p.group}", **style.chip(*styles[p.group][:2]))
                self.labels.append(text)
        else:
            for p in self.patches:
                x, y, w, h = p.rects[len(p.rects) // 2]  # a rank-3 block: one chip, on its middle piece
                self.labels.append(self._label(x, y, w, h, p, image is None))

    def _cell_points(self) -> tuple[float, float]:  # a cell's (width, height) in points once laid out, about
        wide, tall = (v * 72 / self.ax.figure.dpi for v in self.ax.figure.bbox.size)  # a SubFigure's own box
        spec = self.ax.get_subplotspec()
        if spec is None:  # an inset or a hand-placed axes: where it stands
            pos = self.ax.get_position(original=True)
            w, h = pos.width * wide, pos.height * tall
        else:
            grid = spec.get_gridspec()
            rows, cols = grid.get_geometry()
            wr = np.asarray(grid.get_width_ratios() or [1] * cols, np.float64)
            hr = np.asarray(grid.get_height_ratios() or [1] * rows, np.float64)
            w = wide * float(wr[spec.colspan.start : spec.colspan.stop].sum() / wr.sum())
            h = tall * float(hr[spec.rowspan.start : spec.rowspan.stop].sum() / hr.sum())
        bar = self.colorbar is not None and self.colorbar.orientation == "vertical"
        w, h = 0.9 * (w - BESIDE[bar]), HEIGHT_SHARE * h
        if self.box_aspect is None:  # square cells, as many as fit
            cell = min(w / self.cols, h / self.rows)
            return cell, cell
        if isinstance(self.box_aspect, float):
            w = min(w, h / self.box_aspect)
            h = w * self.box_aspect
        return w / self.cols, h / self.rows

    def _room(self, centred: bool) -> list[tuple[float, float]]:  # each chip's (width, height), points; inf off edges
        cw, ch = self._cell_points()
        out = []
        for p in self.patches:
            _, y, w, h = p.rects[len(p.rects) // 2]
            below = not centred and y > 0 and y + h == self.rows  # between the x tick labels
            edge = not centred and not self.bands and (y == 0 or below)  # a band's: a y tick label, at its middle
            wide = np.inf if w == self.cols else 0.92 * w * cw - below * text_size(str(self.cols), style.TICK_SIZE)[0]
            out.append((wide, np.inf if edge else 0.92 * h * ch))
        return out

    def _label(self, x, y, w, h, p, centred) -> Text:  # a block's chip, off the data where it can be
        ax = self.ax
        shift = ax.figure.dpi_scale_trans
        kw: dict[str, Any] = dict(ha="center", zorder=4, fontsize=CHIP_SIZE, clip_on=False, gid=f"label-{p.group}")
        kw.update(style.chip(*self.styles[p.group][:2]))
        if centred:
            text = ax.text(x + w / 2, y + h / 2, p.label, va="center", **kw)
        elif y == 0 or y + h == self.rows:  # above the top edge, or below the bottom one between the x tick labels
            up = y == 0
            at = ax.transData + ScaledTranslation(0, (1 if up else -1) * LABEL_GAP / 72, shift)
            text = ax.text(x + w / 2, y + h * (not up), p.label, va="bottom" if up else "top", transform=at, **kw)
        else:  # a middle row of blocks: on the block's top outline
            text = ax.text(x + w / 2, y, p.label, va="center", **kw)
        text.set_visible(self.named)
        return text

    def title_pad(self) -> float:  # points between the panel's top and its title
        if not any(t.get_verticalalignment() == "bottom" and t.get_visible() for t in self.labels):  # none above
            return 6.0 + 0.6 * style.TICK_SIZE  # clear of the top y tick label
        return LABEL_GAP + 2.05 * CHIP_SIZE + 4.0

    def _colorbar(self, strip: bool) -> None:
        fig, ax = cast("Figure", self.ax.figure), self.ax
        assert self.heatmap is not None  # a colour bar is drawn with a heatmap only
        if strip:  # a horizontal bar under the panel, its chips and x label: the layout places it
            self.colorbar = fig.colorbar(self.heatmap, ax=ax, location="bottom", shrink=0.7, aspect=22, pad=0.03)
        else:  # beside the heatmap as drawn, its height: an inset, not a gridspec cut
            width = max(0.5, ax.get_position().width * fig.get_figwidth())  # inches, about
            cax = ax.inset_axes((1 + 0.1 / width, 0, 0.16 / width, 1))
            self.colorbar = fig.colorbar(self.heatmap, cax=cax)
        self.colorbar.locator = MaxNLocator(nbins=2 if strip else 5, steps=[1, 2, 5, 10], symmetric=strip)
        self.colorbar.ax.tick_params(labelsize=style.TICK_SIZE)
        self._scale_colorbar()

    def _scale_colorbar(self) -> None:  # ticks in units of the power of ten the label names: "(×1e-3)"
        if self.colorbar is None or self.heatmap is None:
            return
        e = bar_exponent(max(abs(v) for v in self.heatmap.get_clim()))
        self.colorbar.formatter = FuncFormatter(lambda v, _: f"{v / 10.0**e:.4g}")
        self.colorbar.update_ticks()
        self.colorbar.set_label(self.colorbar_label + (f" (×1e{e})" if e else ""), fontsize=style.LABEL_SIZE)

    def _ticks(self) -> None:  # at the block boundaries (at most 17 a side); rank 3+: one per d0 slice
        ax, shape, rows, cols = self.ax, self.geometry.global_shape, self.rows, self.cols
        xs = sorted({r[0] for p in self.patches for r in p.rects} | {cols})
        ax.set_xticks(xs if len(xs) <= 17 else xs[:: -(-len(xs) // 16)])
        if len(shape) == 2 or blocks_are_slices(self.patches, shape):  # d0 slices that are the blocks: their rows
            ys = sorted({r[1] for p in self.patches for r in p.rects} | {rows})
            ax.set_yticks(ys if len(ys) <= 17 else ys[:: -(-len(ys) // 16)])
        elif len(shape) < 2:
            ax.set_yticks([])  # a strip
        else:
            per = rows // shape[0]
            ticks = list(range(shape[0]))[:: -(-shape[0] // 12)]
            ax.set_yticks([per * (k + 0.5) for k in ticks], [f"d0={k}" for k in ticks])

    def _set_nonfinite_cells(self, image: np.ndarray) -> None:
        r, c = np.nonzero(~np.isfinite(image))
        self.nonfinite_cells.set_data(c + 0.5, r + 0.5)

    def set_image(self, image: np.ndarray, limit: float | None = None) -> None:
        """Show ``image`` on ``(-limit, limit)`` (default: its own largest magnitude)."""
        m = limit if limit is not None else symmetric_limit(image)
        assert self.heatmap is not None  # a panel drawn with values
        self.heatmap.set_data(image)
        self.heatmap.set_clim(-m, m)
        self._scale_colorbar()
        self._set_nonfinite_cells(image)
