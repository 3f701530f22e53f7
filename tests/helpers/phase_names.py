"""Checks shared by the phase figures' tests (``plot_phase``'s ratio map and
``PhaseDiagram``'s): the ratio map's boundary names, through the artists."""

import numpy as np


def assert_boundary_names_clear(fig, ax, grids):
    """Both boundaries on the ratio map named beside their lines: in the rule's colour,
    bold, clear of every line (no vertex within 2 px of the box), of the other texts and
    of coloured or x-marked cells, joined to a point of its own line by a leader at
    least 8 px long. Where a boundary crosses the cells a note points at, those cells
    are drawn over it and the line goes on thin across them."""
    from matplotlib.colors import to_hex

    fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    lines = {ln.get_gid().split(":")[1]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("ratio-boundary:")}
    assert set(lines) == {"momentum", "nesterov"}
    names = {t.get_gid().split(":")[1]: t for t in ax.texts if (t.get_gid() or "").startswith("boundary-label:")}
    assert set(names) == set(lines)
    others = [t for t in ax.texts if t.get_gid() and not t.get_gid().startswith("boundary-label:") and t.get_visible()]
    m, n = grids["momentum"], grids["nesterov"]
    both = (m.steps >= 0) & (n.steps >= 0)
    ratio = np.log2(np.maximum(n.steps, 1) / np.maximum(m.steps, 1))
    coloured = both & (np.abs(ratio) > np.log2(1.1))
    lrs, mus = m.learning_rates, m.momenta
    boxes = []
    for key, t in names.items():
        assert to_hex(t.get_color()) == to_hex(lines[key].get_color()) and t.get_fontweight() == "bold"
        box = t.get_bbox_patch().get_window_extent(renderer)
        boxes.append(box)
        for line in lines.values():
            x, y = line.get_data()
            xs = np.exp(np.interp(np.linspace(0, 1, 2000), np.linspace(0, 1, len(x)), np.log(x)))
            ys = np.interp(np.linspace(0, 1, 2000), np.linspace(0, 1, len(y)), y)
            p = ax.transData.transform(np.column_stack([xs, ys]))
            inside = (p[:, 0] > box.x0 - 2) & (p[:, 0] < box.x1 + 2) & (p[:, 1] > box.y0 - 2) & (p[:, 1] < box.y1 + 2)
            assert not inside.any(), (key, line.get_gid())
        assert not any(box.overlaps(o.get_window_extent(renderer)) for o in others), key
        # the leader ends on its own line, a visible stretch away from the box
        xy = np.asarray(t.xy, float)
        x, y = lines[key].get_data()
        assert np.min(np.hypot(np.asarray(x) - xy[0], np.asarray(y) - xy[1])) < 1e-12
        px = ax.transData.transform(xy)
        gap = max(box.x0 - px[0], px[0] - box.x1)
        assert t.arrow_patch is not None and 8 <= gap <= 30, (key, gap)
        # on no coloured cell and no x mark
        (x0, y0), (x1, y1) = ax.transData.inverted().transform(box.get_points())
        edges_x = np.sqrt(lrs[1:] * lrs[:-1])
        cols = np.searchsorted(edges_x, [x0, x1])
        rows = np.searchsorted((mus[1:] + mus[:-1]) / 2, [y0, y1])
        touched = np.zeros_like(coloured)
        touched[rows[0] : rows[1] + 1, cols[0] : cols[1] + 1] = True
        assert not (touched & (coloured | (m.diverged & n.diverged))).any(), key
    assert not boxes[0].overlaps(boxes[1])
    # the note's cells: drawn over the boundary that crosses them, the line thin there
    cells = [p for p in ax.patches if p.get_gid() == "noted:cell"]
    thin = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("noted:")]
    assert cells and thin
    assert all(c.get_zorder() > lines["nesterov"].get_zorder() for c in cells)
    assert all(ln.get_zorder() > cells[0].get_zorder() and ln.get_linewidth() < 1.2 for ln in thin)
    note = next(t for t in ax.texts if t.get_gid() == "region-note:momentum faster")
    assert any(c.contains_point(ax.transData.transform(note.xy)) for c in cells)
