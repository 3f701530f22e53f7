"""``plot_memory``: the y axis fits the bars, so even the smallest variable's stack on a
bar is tall enough to see, and the legend names every variable and the slots' hatch."""

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


def test_every_variable_is_tall_enough_to_see_and_named_in_the_legend():
    plan = _plan()
    fig = plot_memory(plan)
    ax = fig.axes[0]
    fig.draw_without_rendering()
    r = fig.canvas.get_renderer()
    for e in plan.entries:  # on the last device: parameter and slot together
        parts = [
            p
            for p in ax.patches
            if p.get_gid() in (f"param-{e.name}", f"slot-{e.name}") and abs(p.get_x() + p.get_width() / 2 - 7) < 0.01
        ]
        assert sum(p.get_height() for p in parts) == e.bytes_per_device[7]  # the axis is in bytes here
        assert sum(p.get_window_extent(r).height for p in parts) >= 6.0, e.name  # 4 B + 4 B: once about 2 px
    assert [p.get_hatch() for p in ax.patches if p.get_gid() == "slot-d2/bias"] == ["///"] * 8
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    by_size = [e.name for e in sorted(plan.entries, key=lambda e: -e.bytes_per_device.max())]
    assert labels == by_size[::-1] + ["velocity slot"]  # the top of the legend names the top of the stack
