"""Readability checks of figures shared by the view and widget tests: overlapping
display boxes, a map's tick labels, the phase maps' labels."""

import numpy as np


def overlapping(boxes, pad=1.0):
    """Pairs of display boxes that overlap (``pad`` pixels of slack)."""
    return [
        (i, j)
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if boxes[i].x0 < boxes[j].x1 - pad
        and boxes[j].x0 < boxes[i].x1 - pad
        and boxes[i].y0 < boxes[j].y1 - pad
        and boxes[j].y0 < boxes[i].y1 - pad
    ]


def x_tick_label_boxes(ax, renderer):
    lo, hi = sorted(ax.get_xlim())
    out = []
    for tick in [*ax.xaxis.get_major_ticks(), *ax.xaxis.get_minor_ticks()]:
        label = tick.label1
        if label.get_visible() and label.get_text() and lo <= tick.get_loc() <= hi:
            out.append((label.get_text(), label.get_window_extent(renderer)))
    return out


def check_readable(fig, n_maps):
    """Tick labels of every map apart and readable; iso-rate labels off the boundaries."""
    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    maps = [ax for ax in fig.axes if ax.get_label().startswith("phase:")]
    assert len(maps) == n_maps
    for ax in maps:
        labelled = x_tick_label_boxes(ax, renderer)
        assert len(labelled) >= 2, [t for t, _ in labelled]
        assert not overlapping([b for _, b in labelled], pad=-6.0), [t for t, _ in labelled]  # 6 px apart
        assert all("10^" not in t and "times" not in t for t, _ in labelled)
        boundary = [a for a in ax.lines if (a.get_gid() or "").startswith("boundary:")]
        for text in ax.texts:
            if not text.get_text().startswith("ρ="):
                continue
            box = text.get_window_extent(renderer)
            for line in boundary:
                xy = ax.transData.transform(np.column_stack(line.get_data()))
                inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
                assert not inside.any(), (text.get_text(), line.get_gid())
