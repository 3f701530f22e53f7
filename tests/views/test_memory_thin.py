"""``plot_memory``: a variable whose stack is a few pixels tall on the last bar is named
and says it is too thin to see; the names' leaders cross no spine."""

import matplotlib

from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan, plot_memory

matplotlib.use("Agg")


def _plan():
    mesh = MeshSpec.create({"batch": 2, "model": 4})
    spec = lambda *dims: LayoutSpec(dims, mesh)  # noqa: E731
    return memory_plan(
        {
            "d1/kernel": ((4, 16), "float32", spec("unsharded", "model")),
            "d1/bias": ((16,), "float32", spec("model")),
            "d2/kernel": ((16, 1), "float32", spec("model", "unsharded")),
            "d2/bias": ((1,), "float32", spec("unsharded")),
        }
    )


def test_a_stack_too_thin_to_see_says_so_beside_its_name():
    fig = plot_memory(_plan())
    ax = fig.axes[0]
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    notes = {
        t.get_gid()[len("segment-thin-") :]: t for t in ax.texts if (t.get_gid() or "").startswith("segment-thin-")
    }
    names = {
        t.get_gid()[len("segment-label-") :]: t for t in ax.texts if (t.get_gid() or "").startswith("segment-label-")
    }
    assert set(notes) == set(names)
    shown = {k for k, t in notes.items() if t.get_visible()}
    assert shown == {"d2/bias"}  # 4 B + 4 B of a ~870 B axis: about 2 px
    # thin in pixels: its bars on the last device under 4 px tall together
    h = sum(
        p.get_window_extent(r).height
        for p in ax.patches
        if p.get_gid() in ("param-d2/bias", "slot-d2/bias") and abs(p.get_x() + p.get_width() / 2 - 7) < 0.01
    )
    assert 0 < h < 4.0
    note, name = notes["d2/bias"], names["d2/bias"]
    assert note.get_text() == "(too thin to see)"
    a, b = name.get_window_extent(r), note.get_window_extent(r)
    assert b.x0 > a.x1 and abs((a.y0 + a.y1) / 2 - (b.y0 + b.y1) / 2) < 1.0  # beside it, level
    assert b.x1 <= fig.bbox.width  # inside the figure
    for other, t in names.items():
        assert other == "d2/bias" or not b.overlaps(t.get_window_extent(r))
    # the leaders run out past the axes: no right spine for them to cross
    assert not ax.spines["right"].get_visible() and not ax.spines["top"].get_visible()
    leaders = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("segment-leader")]
    assert leaders and all(ln.get_xdata()[0] < 1 < ln.get_xdata()[-1] for ln in leaders)
