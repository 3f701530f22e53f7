"""Memory plans, checked against bytes computed by hand (block elements x item size x
(1 + slots)), and drawn: bars read back from the figure's patches."""

import subprocess
import sys
import textwrap

import matplotlib
import numpy as np
import pytest

from dtsgd_viz import LayoutSpec, MemoryPlan, MeshSpec, communication_plan, memory_plan, shard_geometry
from dtsgd_viz.recording.memory import format_bytes, itemsize
from dtsgd_viz.views.mesh.memory import memory_bars, plot_memory

matplotlib.use("Agg")

MESH = MeshSpec.create({"batch": 2, "model": 4})


def spec(*specs, mesh=MESH):
    return LayoutSpec(specs, mesh)


def test_sharded_kernel_with_momentum_is_twice_its_block():
    plan = memory_plan({"k": ((8, 16), "float32", spec("batch", "model"))})
    block = (8 // 2) * (16 // 4) * 4  # a 4x4 float32 block
    np.testing.assert_array_equal(plan.bytes_per_device, [2 * block] * 8)
    np.testing.assert_array_equal(plan.param_bytes_per_device, [block] * 8)
    np.testing.assert_array_equal(plan.slot_bytes_per_device, [block] * 8)
    assert plan.bytes_per_device.dtype == np.int64 and plan.total_bytes == 16 * block
    without = memory_plan({"k": ((8, 16), "float32", spec("batch", "model"))}, momentum=False)
    np.testing.assert_array_equal(without.bytes_per_device, [block] * 8)
    assert not without.slots and plan.slots


def test_mixed_layouts_and_dtypes_against_hand_sums():
    variables = {
        "emb": ((1000, 64), "bfloat16", spec("model", "unsharded")),  # 250x64 x 2 B
        "w": ((64, 128), np.float32, spec("unsharded", "model")),  # 64x32 x 4 B
        "b": ((128,), "float64", spec("unsharded")),  # 128 x 8 B, 8 copies
        "s": ((6,), "float16", spec("batch")),  # 3 x 2 B
    }
    plan = memory_plan(variables)
    by_hand = {"emb": 250 * 64 * 2, "w": 64 * 32 * 4, "b": 128 * 8, "s": 3 * 2}
    np.testing.assert_array_equal(plan.bytes_per_device, [2 * sum(by_hand.values())] * 8)
    for name, (shape, dtype, layout) in variables.items():
        e = plan.entry(name)
        geom = shard_geometry(shape, layout)
        assert e.block_bytes == by_hand[name] == np.prod(geom.local_shape) * itemsize(dtype)
        assert e.copies == 8 // geom.num_unique
    assert plan.entry("b").copies == 8 and plan.entry("s").copies == 4
    assert plan.unique_bytes == 2 * (1000 * 64 * 2 + 64 * 128 * 4 + 128 * 8 + 6 * 2)
    with pytest.raises(ValueError, match=r"Unknown variable 'x'.*\['emb', 'w', 'b', 's'\]"):
        plan.entry("x")


def test_text_and_html():
    plan = memory_plan({"w": ((8, 8), "float32", spec("batch", "model")), "b": ((8,), "float32", spec("unsharded"))})
    assert (
        str(plan)
        == textwrap.dedent("""\
        memory plan: 2 variables on Mesh(batch=2, model=4; 8 devices), each with a velocity slot laid out like it
        variable  shape   dtype    layout          block   copies  block bytes  with slot  per device
        w         (8, 8)  float32  [batch, model]  (4, 2)  1       32 B         x2         64 B
        b         (8,)    float32  [unsharded]     (8,)    8       32 B         x2         64 B
        per device: 128 B (parameters 64 B + slots 64 B) on each of the 8 devices
        the whole mesh holds 1 KiB for 576 B of distinct values (1.78x: copies); fully replicated, each device would hold 576 B""")  # noqa: E501
    )
    assert "<table>" in plan._repr_html_() and "[batch, model]" in plan._repr_html_()
    assert [format_bytes(n) for n in (0, 1023, 1024, 1536, 3 * 2**20)] == ["0 B", "1023 B", "1 KiB", "1.5 KiB", "3 MiB"]


def test_bars_stack_to_bytes_per_device():
    plan = memory_plan({"w": ((8, 16), "float32", spec("unsharded", "model")), "b": ((16,), "float32", spec("model"))})
    segments = memory_bars(plan)
    assert [(s.label, s.kind) for s in segments] == [("w", "param"), ("w", "slot"), ("b", "param"), ("b", "slot")]
    top = segments[-1].bottom + segments[-1].height
    np.testing.assert_array_equal(top, plan.bytes_per_device)
    fig = plot_memory(plan)
    ax = fig.axes[0]
    assert ax.get_ylabel() == "B per device"  # the unit of the fullest bar, 288 B
    heights = {}
    for p in ax.patches:
        heights.setdefault(p.get_gid(), []).append(p.get_height())
    assert set(heights) == {"param-w", "slot-w", "param-b", "slot-b"}
    assert heights["param-w"] == [8 * 4 * 4] * 8 and heights["slot-b"] == [4 * 4] * 8
    assert not ax.texts  # the title carries the saving: 288 B instead of 1.12 KiB
    assert fig.get_suptitle().startswith("Sharding cuts each device's memory 4x: 288 B instead of 1.12 KiB")
    assert [t.get_text() for t in ax.get_xticklabels()] == [f"CPU:{d}" for d in range(8)]


def test_bad_input_is_explained():
    with pytest.raises(
        TypeError,
        match=r"\(shape, dtype, LayoutSpec\). Received for 'w': "
        r"a tuple of 2: \(tuple, str\)",
    ):
        memory_plan({"w": ((8,), "float32")})
    big = MeshSpec.create({"data": 4, "model": 16})
    with pytest.raises(TypeError, match=r"Received for 'W': a tuple of 2: \(tuple, LayoutSpec\)\.$"):
        memory_plan({"W": ((1024, 512), LayoutSpec(("model", "unsharded"), big))})  # no dtype
    with pytest.raises(ValueError, match=r"shape of 'W' must be a tuple of ints >= 1\. Received: \(-1024, 512\)"):
        memory_plan({"W": ((-1024, 512), "float32", LayoutSpec(("model", "unsharded"), big))})
    with pytest.raises(ValueError, match=r"'W' has shape \(8,\) \(1 dims\) but its layout names 2"):
        memory_plan({"W": ((8,), "float32", LayoutSpec(("model", "unsharded"), big))})
    with pytest.raises(TypeError, match="dtype 'float' is ambiguous"):
        memory_plan({"W": ((64, 8), "float", LayoutSpec(("model", "unsharded"), big))})
    with pytest.raises(ValueError, match="size 6.*'model' of size 4, which does not divide"):
        memory_plan({"w": ((6,), "float32", spec("model"))})
    with pytest.raises(TypeError, match=r"memory_plan takes .*Received: int"):
        memory_plan(3)
    other = MeshSpec.create({"x": 2}, device_names=["GPU:0", "GPU:1"])
    with pytest.raises(ValueError, match="same devices. Received: 'g' on Mesh\\(x=2"):
        memory_plan({"w": ((8,), "float32", spec("model")), "g": ((8,), "float32", spec("x", mesh=other))})
    assert isinstance(memory_plan({"w": ((8,), "int8", spec("model"))}), MemoryPlan)


def test_memory_plan_needs_no_tensorflow():
    code = (
        "import sys, dtsgd_viz\n"
        "from dtsgd_viz import LayoutSpec, MeshSpec\n"
        "s = LayoutSpec(('model',), MeshSpec.create({'data': 4, 'model': 16}))\n"
        "p = dtsgd_viz.memory_plan({'w': ((64,), 'float32', s)})\n"
        "print(p.bytes_per_device.tolist()[:2], 'tensorflow' in sys.modules, "
        "'matplotlib' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[32,", "32]", "False", "False"]


def test_communication_of_a_memory_plan_is_its_gradient_all_reduces():
    variables = {
        "w": ((8, 16), "float32", spec("unsharded", "model")),  # 8x4 block
        "b": ((16,), "float32", spec("model")),  # 4
        "s": ((6,), "float16", spec("batch")),
    }  # uses batch
    plan = memory_plan(variables)
    comm = communication_plan(plan)
    assert comm == communication_plan(variables)
    # s is gathered over batch (its 3-element shard), then summed whole over batch
    assert [(e.variable, e.mesh_dims, e.bytes_per_device, e.gathered_over, e.gathered_bytes) for e in comm.entries] == [
        ("w", ("batch",), 8 * 4 * 4, (), 0),
        ("b", ("batch",), 4 * 4, (), 0),
        ("s", ("batch",), 6 * 2, ("batch",), 3 * 2),
    ]
    # the batch over both dims: w and b are gathered over model, s over batch; each
    # gradient is summed whole over both
    assert communication_plan(plan, batch_dims=("batch", "model")).totals() == {
        ("batch", "model"): (8 * 16 + 16) * 4 + 6 * 2
    }
    assert memory_plan(plan) is plan
    np.testing.assert_array_equal(memory_plan(plan, momentum=False).bytes_per_device, plan.param_bytes_per_device)


@pytest.mark.slow
def test_plot_memory_shows_gradient_traffic_beside_memory():
    plan = memory_plan(
        {"w": ((8, 16), "float32", spec("unsharded", "model")), "b": ((16,), "float32", spec("unsharded"))}
    )
    assert len(plot_memory(plan).axes) == 1  # unchanged without communication
    fig = plot_memory(plan, communication=True)
    mem, traffic = fig.axes
    assert fig.get_size_inches()[0] * fig.dpi <= 950
    heights = {}
    for p in traffic.patches:
        heights.setdefault(p.get_gid(), []).append(p.get_height())
    # each device all-reduces its shard of each gradient along batch (bytes, shown in B)
    assert traffic.get_ylabel() == "B per device"
    assert heights == {"traffic-w": [8 * 4 * 4] * 8, "traffic-b": [16 * 4] * 8}
    colors = {p.get_gid(): p.get_facecolor() for p in [*mem.patches, *traffic.patches]}
    assert colors["traffic-w"] == colors["param-w"] and colors["traffic-b"] == colors["param-b"]
    assert not traffic.texts and traffic.get_title() == "gradient all-reduce per update (predicted)"
    assert [t.get_text() for t in traffic.get_legend().get_texts()] == ["b", "w", "velocity slot"]
    with pytest.raises(TypeError, match="Expected a CommunicationPlan"):
        plot_memory(plan, communication="yes")


def test_the_legend_names_each_variable_in_its_bars_colour():
    plan = memory_plan(
        {
            "w": ((8, 16), "float32", spec("unsharded", "model")),
            "b": ((16,), "float32", spec("model")),
            "c": ((1,), "float32", spec("unsharded")),
        }
    )
    fig = plot_memory(plan)
    ax = fig.axes[0]
    legend = ax.get_legend()
    names = [e.name for e in sorted(plan.entries, key=lambda e: -int(e.bytes_per_device.max()))]
    assert [t.get_text() for t in legend.get_texts()] == [*names[::-1], "velocity slot"]  # top of the stack first
    bottoms = {p.get_gid(): p.get_y() for p in ax.patches if p.get_x() < 0.5}  # device 0's bar
    listed = [t.get_text() for t in legend.get_texts()][:-1]
    assert [bottoms[f"param-{n}"] for n in listed] == sorted((bottoms[f"param-{n}"] for n in listed), reverse=True)
    bars = {p.get_gid(): p.get_facecolor() for p in ax.patches}
    for name, handle in zip(names[::-1], legend.legend_handles):
        assert handle.get_facecolor() == bars[f"param-{name}"] == bars[f"slot-{name}"]
    segs = memory_bars(plan)
    tops = segs[-1].bottom + segs[-1].height
    np.testing.assert_array_equal(tops, plan.bytes_per_device)
    assert ax.get_ylim()[1] == 1.1 * tops.max()  # the axis fits the bars
