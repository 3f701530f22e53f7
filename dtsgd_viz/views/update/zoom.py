"""Close-ups of several runs on one zoom; an update too small there is drawn again in an inset."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from . import geometry as upd
from . import panel
from .geometry import box_span

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..paths.geometry import Box
    from ..paths.scene import PathScene

FIT_PAD = 0.15  # of the data's size, round it: the data fill 3/4 of a panel
INSET_BELOW = 0.2  # an update spanning less than this of the shared box is drawn again, closer, in an inset
INSET_SIZE = 0.55  # of its panel's side: the inset's, in its upper right corner (its update in the lower left's middle)
INSET_CORNER = 0.98 - INSET_SIZE  # its lower left: the inset sits in the upper right, just inside the frame
INSET_RECT = (INSET_CORNER, INSET_CORNER, INSET_SIZE, INSET_SIZE)  # in its panel: x0, y0 from the lower left, w, h


def span_text(k: float) -> str:
    """A zoom factor as the share of the wider view a panel spans (checkable on the axes): ``1/33``, ``1/5.9``."""
    return f"1/{k:.0f}" if k >= 9.5 else f"1/{k:.1f}"


def inset_text(main_box: Box, own: panel.PanelData) -> str:
    """An inset's mark: the share of ``main_box`` its own box spans (``span_text``), ``""`` without one."""
    return span_text(upd.zoom_factor(main_box, own.box)) if own.box is not None else ""


def fit_box(data: panel.PanelData, main_box: Box, *, iterate: bool = True) -> panel.PanelData:
    """``data`` with its box fitted to the position, the arrows' tips and (``iterate``) the iterate."""
    if data.box is None:
        return data
    pts = [np.asarray(data.position, np.float64)]
    pts += [np.asarray(tail) + np.asarray(uv) for _, tail, uv in data.chain]
    pts += list(data.nesterov or ()) if iterate else []
    return dataclasses.replace(data, box=upd.zoom_box(pts, main_box, pad=FIT_PAD, min_frac=panel.PANEL_MIN))


def shared_zoom(
    datas: Mapping[str, panel.PanelData], main_box: Box
) -> tuple[dict[str, panel.PanelData], dict[str, panel.PanelData], set[str]]:
    """``(own, shared, insets)``: boxes fitted to each update alone, all the largest's size, runs under ``INSET_BELOW``.

    >>> from dtsgd_viz.views.update.panel import PanelData
    >>> d = lambda s: PanelData("k", 1, np.zeros(2), (("gradient", np.zeros(2), np.full(2, s)),), None,
    ...                         np.zeros((1, 2)), ((0, 1), (0, 1)))
    >>> own, shared, insets = shared_zoom({"a": d(1.0), "b": d(0.1)}, ((0, 10), (0, 10)))
    >>> [round(box_span(x.box), 2) for x in shared.values()], insets
    ([1.3, 1.3], {'b'})
    """
    fitted = {k: fit_box(d, main_box) for k, d in datas.items()}
    spans = [box_span(d.box) for d in fitted.values() if d.box is not None]
    half = max(spans, default=0.0) / 2
    shared = {}
    for k, d in fitted.items():
        if d.box is not None:
            cx, cy = (d.box[0][0] + d.box[0][1]) / 2, (d.box[1][0] + d.box[1][1]) / 2
            d = dataclasses.replace(d, box=((cx - half, cx + half), (cy - half, cy + half)))
        shared[k] = d
    own = {k: fit_box(d, main_box, iterate=False) for k, d in datas.items()}
    small = {
        k for k, d in own.items() if d.box is not None and len(spans) > 1 and box_span(d.box) < INSET_BELOW * 2 * half
    }
    for k in small:  # the update in the middle of the lower left, clear of the inset in the upper right
        (a0, a1), (b0, b1) = own[k].box  # pyright: ignore[reportGeneralTypeIssues]  # small: each has one
        x0, y0 = (a0 + a1) / 2 - INSET_CORNER * half, (b0 + b1) / 2 - INSET_CORNER * half
        shared[k] = dataclasses.replace(shared[k], box=((x0, x0 + 2 * half), (y0, y0 + 2 * half)))
    return own, shared, small


def shared_factor(main_box: Box, shared: Mapping[str, panel.PanelData]) -> float:
    """How many times closer than ``main_box`` the shared box draws; NaN without a box."""
    box = next((d.box for d in shared.values() if d.box is not None), None)
    return upd.zoom_factor(main_box, box) if box is not None else float("nan")


def zoom_caption(main_box: Box, shared: Mapping[str, panel.PanelData], projected: bool = False) -> str:
    """The caption's words for the zoom: ``"every panel spans 1/33 of the paths' width, arrows at ..."``."""
    arrows = "arrows as projected on the plane" if projected else "arrows at their true length"
    return f"every panel spans {span_text(shared_factor(main_box, shared))} of the paths' width, {arrows}"


def draw_inset(
    ax: Axes,
    scene: PathScene,
    own: panel.PanelData,
    shared: panel.PanelData,
    run_style: Mapping[str, Any],
    labels: bool = False,
) -> Axes:
    """``own`` at its own zoom in an inset of ``ax`` marked 1/N, a dotted box round what it enlarges (over the
    marks, however small) and a dotted leader from that box to the inset."""
    from matplotlib.patches import Rectangle

    assert own.box is not None and shared.box is not None
    key, color = own.key, scene.colors[own.key]
    inset = ax.inset_axes(INSET_RECT, zorder=20)  # over the trail only
    panel.draw_update_panel(inset, scene, own, color, run_style, True, whole_path=False, labels=labels)
    mark: dict[str, Any] = dict(
        transform=inset.transAxes, ha="left", va="top", fontsize=style.NOTE_SIZE, color=color, fontweight="bold"
    )
    inset.text(0.04, 0.96, inset_text(scene.box, own), gid=f"inset-zoom:{key}", **mark)  # 1/N of the paths' width
    inset.tick_params(labelleft=False, labelbottom=False, length=0)
    inset.set_facecolor("white")
    (a0, a1), (b0, b1), ((s0, s1), (t0, t1)) = *own.box, shared.box  # and its axes' limits
    ax.add_patch(  # over the marks: a box smaller than they are still shows
        Rectangle((a0, b0), a1 - a0, b1 - b0, fill=False, ec=color, lw=0.9, ls=":", zorder=8.5, gid=f"inset-box:{key}")
    )  # and a dotted leader from it to the inset's corner
    lead = ([a1, s0 + INSET_CORNER * (s1 - s0)], [b1, t0 + INSET_CORNER * (t1 - t0)])
    ax.plot(*lead, ls=":", color=color, lw=0.9, zorder=8, gid=f"inset-leader:{key}")
    return inset
