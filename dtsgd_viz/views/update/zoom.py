"""Close-ups of several runs on one zoom; an update too small there is drawn again in an inset."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from . import geometry as upd
from . import panel
from .geometry import box_span, times

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..paths.geometry import Box
    from ..paths.scene import PathScene

__all__ = [
    "fit_box",
    "one_zoom",
    "shared_zoom",
    "needs_inset",
    "inset_bounds",
    "draw_inset",
    "zoom_caption",
    "times",
    "span_text",
    "INSET_BELOW",
]

FIT_PAD = 0.15  # of the data's size, round it: the data fill 3/4 of a panel
INSET_BELOW = 0.2  # an update spanning less than this of the shared box is drawn again, closer, in an inset
INSET_SIZE = 0.4  # of its panel's side: the inset's


def span_text(k: float) -> str:
    """A zoom factor as the share of the wider view a panel spans: ``1/33``, ``1/5.9``
    (what a reader can check against the axes, whatever size each is drawn at)."""
    return "1/" + times(k)[1:]


def fit_box(data: panel.PanelData, main_box: Box, pad: float = FIT_PAD, *, iterate: bool = True) -> panel.PanelData:
    """``data`` with its box fitted to the position, the arrows' tips and (``iterate``) the iterate."""
    if data.box is None:
        return data
    pts = [np.asarray(data.position, np.float64)]
    pts += [np.asarray(tail) + np.asarray(uv) for _, tail, uv in data.chain]
    pts += list(data.nesterov or ()) if iterate else []
    return dataclasses.replace(data, box=upd.zoom_box(pts, main_box, pad=pad, min_frac=panel.PANEL_MIN))


def one_zoom(datas: Sequence[panel.PanelData]) -> list[panel.PanelData]:
    """The panels with one box size for all, the largest, each box on its own centre.

    >>> from dtsgd_viz.views.update.panel import PanelData
    >>> d = lambda s: PanelData("k", 1, np.zeros(2), (), None, np.zeros((1, 2)), ((0, s), (0, s)))
    >>> [x.box for x in one_zoom([d(1.0), d(2.0)])]
    [((-0.5, 1.5), (-0.5, 1.5)), ((0.0, 2.0), (0.0, 2.0))]
    """
    boxes = [d.box for d in datas if d.box is not None]
    if not boxes:
        return list(datas)
    half = max(box_span(b) for b in boxes) / 2
    out = []
    for d in datas:
        if d.box is None:
            out.append(d)
            continue
        cx, cy = (d.box[0][0] + d.box[0][1]) / 2, (d.box[1][0] + d.box[1][1]) / 2
        out.append(dataclasses.replace(d, box=((cx - half, cx + half), (cy - half, cy + half))))
    return out


def needs_inset(data: panel.PanelData, all_data: Sequence[panel.PanelData]) -> bool:
    """Whether ``data``'s box is under ``INSET_BELOW`` of the largest of ``all_data``'s."""
    spans = [box_span(d.box) for d in all_data if d.box is not None]
    return data.box is not None and len(spans) > 1 and box_span(data.box) < INSET_BELOW * max(spans)


def shared_zoom(
    datas: Mapping[str, panel.PanelData], main_box: Box
) -> tuple[dict[str, panel.PanelData], dict[str, panel.PanelData], set[str]]:
    """``(own, shared, insets)``: each panel on one zoom (``shared``), fitted to its update
    alone (``own``, what an inset shows), and the runs too small at the shared zoom."""
    fitted = [fit_box(d, main_box) for d in datas.values()]
    shared = dict(zip(datas, one_zoom(fitted)))
    own = {k: fit_box(d, main_box, iterate=False) for k, d in datas.items()}
    return own, shared, {k for k, d in own.items() if needs_inset(d, fitted)}


def shared_factor(main_box: Box, shared: Mapping[str, panel.PanelData]) -> float:
    """How many times closer than ``main_box`` the shared box draws; NaN without a box."""
    box = next((d.box for d in shared.values() if d.box is not None), None)
    return upd.zoom_factor(main_box, box) if box is not None else float("nan")


def zoom_caption(
    main_box: Box,
    own: Mapping[str, panel.PanelData],
    shared: Mapping[str, panel.PanelData],
    insets: set[str],
    projected: bool = False,
) -> str:
    """The caption's words for the zoom: ``"every panel spans 1/33 of the paths' width,
    arrows at their true length"`` (``projected``: the paths' plane is a projection of
    more parameters, so the arrows are their projections on it), and ``"; insets: plain
    1/8.0 of its panel"`` for the insets, in the panels' order."""
    from ..paths.geometry import rule_name

    zoom = shared_factor(main_box, shared)
    arrows = "arrows as projected on the plane" if projected else "arrows at their true length"
    text = f"every panel spans {span_text(zoom)} of the paths' width, {arrows}"
    spans = [
        f"{rule_name(k)} {span_text(box_span(shared[k].box) / box_span(own[k].box))}"  # pyright: ignore[reportArgumentType]  # insets have boxes
        for k in shared
        if k in insets
    ]
    return text + (f"; insets: {', '.join(spans)} of {'its' if len(spans) == 1 else 'their'} panel" if spans else "")


def inset_bounds(shared: panel.PanelData) -> tuple[float, float, float, float]:
    """Where an inset sits in its panel (axes fractions): the corner the path crosses least."""
    assert shared.box is not None
    (x0, x1), (y0, y1) = shared.box
    trail = np.asarray(shared.trail, np.float64).reshape(-1, 2)
    t = np.linspace(0.0, 1.0, 20)[:, None]
    pts = np.concatenate([p + t * (q - p) for p, q in zip(trail[:-1], trail[1:])] or [trail])
    fx, fy = (pts[:, 0] - x0) / (x1 - x0), (pts[:, 1] - y0) / (y1 - y0)
    w, m = INSET_SIZE, 0.02
    corners = [(1 - w - m, 1 - w - m), (m, 1 - w - m), (1 - w - m, m), (m, m)]  # upper right first
    hits = [int(np.sum((fx >= cx) & (fx <= cx + w) & (fy >= cy) & (fy <= cy + w))) for cx, cy in corners]
    cx, cy = corners[int(np.argmin(hits))]
    return (cx, cy, w, w)


def draw_inset(
    ax: Axes,
    scene: PathScene,
    own: panel.PanelData,
    shared: panel.PanelData,
    run_style: Mapping[str, Any],
    labels: bool = False,
) -> Axes:
    """Draw the update ``own`` at its own zoom in an inset of ``ax``, marked with how much
    closer, and a dotted box on ``ax`` round what it enlarges. Returns the inset."""
    from matplotlib.patches import ConnectionPatch, Rectangle

    assert own.box is not None and shared.box is not None
    key, color = own.key, scene.colors[own.key]
    x, y, w, h = inset_bounds(shared)
    inset = ax.inset_axes((x, y, w, h), zorder=20)
    panel.draw_update_panel(inset, scene, own, color, run_style, True, whole_path=False, labels=labels)
    inset.set_title("")
    inset.text(
        0.04,
        0.96,
        span_text(box_span(shared.box) / box_span(own.box)),
        transform=inset.transAxes,
        ha="left",
        va="top",
        fontsize=style.NOTE_SIZE,
        color=color,
        fontweight="bold",
        gid=f"inset-zoom:{key}",
    )
    inset.tick_params(labelleft=False, labelbottom=False, length=0)
    inset.set_facecolor("white")
    (a0, a1), (b0, b1) = own.box
    ax.add_patch(
        Rectangle((a0, b0), a1 - a0, b1 - b0, fill=False, ec=color, lw=0.9, ls=":", zorder=8, gid=f"inset-box:{key}")
    )
    # a dotted leader from the box to the inset's nearest corner: found even where the box is
    # smaller than the marks it holds
    (s0, s1), (t0, t1) = shared.box
    corner = (
        x if (a0 + a1) / 2 < s0 + (x + w / 2) * (s1 - s0) else x + w,
        y if (b0 + b1) / 2 < t0 + (y + h / 2) * (t1 - t0) else y + h,
    )
    near = (a1 if corner[0] == x else a0, b1 if corner[1] == y else b0)
    ax.add_patch(
        ConnectionPatch(
            near,
            corner,
            "data",
            "axes fraction",
            axesA=ax,
            axesB=ax,
            color=color,
            lw=0.8,
            ls=":",
            zorder=8,
            gid=f"inset-leader:{key}",
        )
    )
    return inset
