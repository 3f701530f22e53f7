"""LayoutExplorer: the pure transition (choices -> blocks, errors, bytes) checked against
shard_geometry and bytes by hand, then the real widget driven through its traits."""

import re

import matplotlib
import numpy as np
import pytest

from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan, shard_geometry
from dtsgd_viz.widgets import LayoutExplorer, LayoutExplorerState, layout_explorer_state

matplotlib.use("Agg")


def change(state, name, new, **kw):
    return layout_explorer_state(state, {"name": name, "new": new, **kw})


def test_choices_give_the_blocks_and_bytes_of_shard_geometry():
    s = LayoutExplorerState.of((8, 16), mesh={"batch": 2, "model": 4})
    assert (s.mesh_text, s.specs, s.options) == (
        "batch=2, model=4",
        ("unsharded", "unsharded"),
        ("unsharded", "batch", "model"),
    )
    np.testing.assert_array_equal(s.plan.bytes_per_device, [2 * 8 * 16 * 4] * 8)
    s = change(change(s, "dim", "batch", dim=0), "dim", "model", dim=1)
    want = shard_geometry((8, 16), LayoutSpec(("batch", "model"), MeshSpec.create({"batch": 2, "model": 4})))
    assert s.error == "" and s.layout == want.layout
    assert (s.geometry.blocks, s.geometry.replica_groups) == (want.blocks, want.replica_groups)
    np.testing.assert_array_equal(s.plan.bytes_per_device, [2 * 4 * 4 * 4] * 8)  # 2x a 4x4 block
    assert s.summary() == (
        "tensor (8, 16) as [batch, model]: 8 blocks of (4, 4), 1 copy each; 128 B per device with its velocity slot"
    )
    s = change(s, "momentum", False)
    np.testing.assert_array_equal(s.plan.bytes_per_device, [4 * 4 * 4] * 8)
    s = change(s, "mesh", "batch=4, model=2")
    assert s.geometry.local_shape == (2, 8) and s.mesh.dim_sizes == (4, 2)


def test_a_shape_takes_the_name_the_caller_gives_it():
    s = LayoutExplorerState.of((8, 16), mesh={"batch": 2, "model": 4}, name="W")
    assert s.name == "W" and s.summary().startswith("W (8, 16) as [unsharded, unsharded]")
    assert LayoutExplorerState.of((8, 16)).name == "tensor"


@pytest.mark.parametrize(
    "shape, mesh, specs, error",
    [
        (
            (8, 16),
            "batch=2, model=4",
            ("model", "model"),
            "mesh dim 'model' is picked by tensor dims 0, 1: a mesh dim can shard only one tensor dim",
        ),
        (
            (6, 16),
            "batch=2, model=4",
            ("model", "unsharded"),
            "tensor dim 0 has size 6, which 'model' (4 devices) does not divide: DTensor needs equal "
            "blocks (6 = 1 x 4 + 2).",
        ),
        (
            (8, 16),
            "batch=2 model=4",
            ("unsharded", "unsharded"),
            "mesh: Write the mesh as name=size pairs separated by commas, e.g. 'batch=2, model=4'. "
            "Received: 'batch=2 model=4'",
        ),
        ((8, 16), "batch=2, batch=4", ("unsharded", "unsharded"), "mesh: Mesh dim names must be unique"),
        ((8, 16), "x=0", ("unsharded", "unsharded"), "mesh: Mesh dim sizes must be integers >= 1"),
    ],
)
def test_impossible_choices_say_why(shape, mesh, specs, error):
    s = LayoutExplorerState.of(shape, mesh={"batch": 2, "model": 4})
    s = change(s, "mesh", mesh)
    for d, spec in enumerate(specs):
        s = change(s, "dim", spec, dim=d)
    assert s.error.startswith(error)
    assert s.layout is None and s.geometry is None and s.plan is None
    assert s.summary() == f"impossible: {s.error}"


def test_variables_of_a_plan_keep_their_own_choices():
    mesh = MeshSpec.create({"batch": 2, "model": 4})
    plan = memory_plan(
        {
            "w": ((8, 16), "float32", LayoutSpec(("unsharded", "model"), mesh)),
            "b": ((16,), "float32", LayoutSpec(("model",), mesh)),
        }
    )
    s = LayoutExplorerState.of(plan)
    assert (s.name, s.specs) == ("w", ("unsharded", "model"))
    np.testing.assert_array_equal(s.plan.bytes_per_device, plan.bytes_per_device)
    s = change(change(s, "variable", "b"), "dim", "unsharded", dim=0)
    np.testing.assert_array_equal(s.plan.bytes_per_device, [2 * (8 * 4 * 4 + 16 * 4)] * 8)
    assert change(s, "variable", "w").specs == ("unsharded", "model")
    # a mesh without 'model': tensor dims on it move to unsharded, and the note says so
    s = change(s, "mesh", "data=8")
    assert s.choices == (("unsharded", "unsharded"), ("unsharded",))
    assert s.note.endswith("w dim 1 ('model')")
    with pytest.raises(ValueError, match=r"Unknown variable 'v'. Allowed: \['w', 'b'\]"):
        change(s, "variable", "v")
    with pytest.raises(ValueError, match=r"dim must be an int in 0..0 for b \(16,\). Received: 1"):
        change(s, "dim", "data", dim=1)
    # an impossible choice for another variable is named
    s = change(change(LayoutExplorerState.of(plan), "mesh", "batch=2, model=3"), "dim", "model", dim=1)
    assert s.error.startswith("tensor dim 1 has size 16, which 'model' (3 devices)")


@pytest.mark.slow
def test_the_widget_redraws_through_its_traits():
    w = LayoutExplorer((8, 16), mesh={"batch": 2, "model": 4})
    renders = w.renders
    assert [p.description for p in w.dim_pickers] == ["dim 0 (8)", "dim 1 (16)"]
    assert w.dim_pickers[0].options == ("unsharded", "batch", "model")
    w.dim_pickers[1].value = "model"
    assert w.renders == renders + 1 and w.state.specs == ("unsharded", "model")
    fig = w.layout_figure
    g = w.state.geometry
    assert " ".join(fig.texts[0].get_text().split()) == (
        f"tensor (8, 16): {g.num_unique} distinct 8x4 blocks, each on {8 // g.num_unique} devices (copied over batch)"
    )
    assert g.num_unique == len({tuple((s.start, s.stop) for s in b) for b in g.blocks}) == 4
    assert fig.texts[1].get_text() == "sharding [unsharded, model] on Mesh(batch=2, model=4; 8 devices)"
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_gid().startswith("label-")]
    assert w.state.mesh.short_device_names == tuple(f"CPU:{d}" for d in range(8))
    assert labels == ["CPU:" + ",".join(map(str, g)) for g in w.state.geometry.replica_groups]  # CPU:0,4
    assert "256 B per device" in w.message.value and "<table>" in w.memory_table.value
    assert w.image.value[:4] == b"\x89PNG" and w.memory_image.value[:4] == b"\x89PNG"
    heights = [p.get_height() for p in w.memory_figure.axes[0].patches if p.get_gid() == "param-tensor"]
    assert heights == [8 * 4 * 4] * 8  # bytes: the axis fits the bars, 256 B per device
    # impossible: said on the widget, pictures hidden
    w.dim_pickers[0].value = "model"
    assert "impossible: mesh dim &#x27;model&#x27; is picked by tensor dims 0, 1" in w.message.value
    assert w.image.layout.display == "none"
    w.dim_pickers[0].value = "batch"
    assert w.image.layout.display == "" and w.state.error == ""
    # a new mesh: the pickers offer its dims
    w.mesh.value = "x=2, y=2, z=2"
    assert w.dim_pickers[0].options == ("unsharded", "x", "y", "z")
    assert w.state.specs == ("unsharded", "unsharded")
    w.dim_pickers[0].value = "z"
    assert (
        w.state.geometry.replica_groups
        == shard_geometry(
            (8, 16), LayoutSpec(("z", "unsharded"), MeshSpec.create({"x": 2, "y": 2, "z": 2}))
        ).replica_groups
    )


def test_the_traffic_of_the_layout_picked():
    """Gradient bytes per device per update: the shard of the gradient, summed along the
    batch dims the layout leaves unused; a layout using a batch dim is gathered over it
    first and its gradient summed over every batch dim, laid out without it."""
    s = LayoutExplorerState.of((8, 16), mesh={"batch": 2, "model": 4})
    assert s.batch_dims == ("batch",) and s.traffic.totals() == {("batch",): 8 * 16 * 4}
    s = change(s, "dim", "model", dim=1)
    assert s.traffic.totals() == {("batch",): 8 * 4 * 4}  # the (8, 4) shard
    assert s.traffic_summary() == (
        "gradient all-reduce per update (batch over batch): tensor: 128 B per device along batch"
    )
    np.testing.assert_array_equal(s.plan.bytes_per_device, [2 * 8 * 4 * 4] * 8)  # memory too
    s = change(s, "dim", "batch", dim=0)
    assert s.traffic.totals() == {("batch",): 8 * 4 * 4}  # [unsharded, model]'s block
    assert s.traffic_summary().endswith(
        "tensor: 128 B per device along batch, after gathering it over batch (its layout uses a batch dim)"
    )
    # a mesh without batch/data: nothing predicted until the batch dims are named
    s = change(s, "mesh", "x=2, y=4")
    assert s.batch_dims == () and s.traffic.totals() == {}
    assert "split over no mesh dim" in s.traffic_summary()
    s = change(s, "batch", "x, q")
    assert s.batch_dims == ("x",) and s.traffic.totals() == {("x",): 8 * 16 * 4}
    assert s.batch_note == "batch over: q not a dim of the mesh (x=2, y=4), left out"
    s = change(s, "mesh", "x=2, y=4, z=0")
    assert s.traffic is None and s.traffic_summary() == ""


@pytest.mark.slow
def test_the_widget_shows_traffic_beside_memory():
    w = LayoutExplorer((64, 256), mesh={"batch": 2, "model": 4})

    def traffic_heights():
        ax = w.memory_figure.axes[1]
        unit = {"B": 1, "KiB": 1024}[ax.get_ylabel().split()[0]]
        return [p.get_height() * unit for p in ax.patches if p.get_gid() == "traffic-tensor"]

    assert traffic_heights() == [64 * 256 * 4] * 8
    assert "Activation traffic" in w.message.value and "not predictable from layouts" in w.message.value
    w.dim_pickers[1].value = "model"
    assert traffic_heights() == [64 * 64 * 4] * 8  # sharding over model: a quarter
    assert "tensor: 16 KiB per device along batch" in w.message.value
    memory = [p.get_height() for p in w.memory_figure.axes[0].patches if p.get_gid() == "param-tensor"]
    assert memory == [64 * 64 * 4 / 1024] * 8
    w.dim_pickers[0].value = "batch"
    assert traffic_heights() == [64 * 64 * 4] * 8  # gathered over batch, then summed
    assert "after gathering it over batch" in w.message.value
    w.batch.value = "model"
    assert w.state.batch_dims == ("model",) and "batch over model" in w.message.value


@pytest.mark.slow
def test_the_static_picture_names_the_devices_and_the_bytes():
    """The tutorial's explorer (1024x512 as [unsharded, model] on data=4, model=16): its
    first picture (the one a built notebook shows) is drawn at style.DPI, no wider than
    the notebook column, each block label naming its devices on one line, and its note
    says the bytes per device with the velocity slot (as ``memory_plan`` counts them)."""
    import io

    from PIL import Image

    from dtsgd_viz.recording.memory import format_bytes
    from dtsgd_viz.views.core.style import DPI, MAX_WIDTH_PX

    w = LayoutExplorer((1024, 512), mesh={"data": 4, "model": 16})
    w.dim_pickers[1].value = "model"
    assert w.dpi == DPI
    width, _ = Image.open(io.BytesIO(w.image.value)).size
    assert width <= MAX_WIDTH_PX
    labels = [t for t in w.layout_figure.axes[0].texts if t.get_gid().startswith("label-")]
    groups = w.state.geometry.replica_groups
    assert len(labels) == len(groups) == 16
    for t in labels:
        assert "\n" not in t.get_text()
        g = int(t.get_gid().split("-")[1])
        assert tuple(int(s) for s in re.findall(r"\d+", t.get_text())) == groups[g]
    (note,) = [t for t in w.layout_figure.texts if t.get_gid() == "note"]
    entry = w.state.plan.entry(w.state.name)
    assert f"{format_bytes(entry.bytes_per_device.max())}/device incl. velocity" in note.get_text()
    w.momentum.value = False
    (note,) = [t for t in w.layout_figure.texts if t.get_gid() == "note"]
    assert "incl. velocity" not in note.get_text() and "(parameter only)" in note.get_text()
