"""Shard geometry: pure checks, then against what DTensor actually puts on each device."""

import numpy as np
import pytest
from helpers.builders import CASE_IDS, LAYOUT_CASES

import dtsgd_viz
from dtsgd_viz import LayoutSpec, MeshSpec, shard_geometry
from dtsgd_viz import dtensor as _dtensor


def test_device_order_is_row_major():
    mesh = MeshSpec.create({"x": 2, "y": 3})
    assert [mesh.device_coords(d) for d in range(6)] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]


def test_blocks_and_replicas_by_hand():
    mesh = MeshSpec.create({"x": 2, "y": 2})
    g = shard_geometry((4, 6), LayoutSpec(("unsharded", "y"), mesh))
    assert g.local_shape == (4, 3)
    assert g.blocks[0] == (slice(0, 4), slice(0, 3))
    assert g.blocks[1] == (slice(0, 4), slice(3, 6))
    assert g.blocks[2] == g.blocks[0] and g.blocks[3] == g.blocks[1]
    assert g.replica_groups == ((0, 2), (1, 3))
    assert g.group_of == (0, 1, 0, 1)


def test_assemble_inverts_split():
    mesh = MeshSpec.create({"a": 2, "b": 2, "c": 2})
    g = shard_geometry((4, 6, 2), LayoutSpec(("c", "a", "unsharded"), mesh))
    x = np.arange(3 * 48.0).reshape(3, 4, 6, 2)
    blocks = g.split(x)
    assert blocks.shape == (3, g.num_unique, 2, 3, 2)
    np.testing.assert_array_equal(g.assemble(blocks), x)


@pytest.mark.parametrize(
    "specs, shape, match",
    [
        (("x", "x"), (4, 4), "only one tensor dim"),
        (("z",), (4,), "not a mesh dim"),
        (("x",), (3,), "does not divide"),
        (("x",), (4, 4), "rank 1"),
    ],
)
def test_bad_layouts(specs, shape, match):
    mesh = MeshSpec.create({"x": 2, "y": 2})
    with pytest.raises(ValueError, match=match):
        shard_geometry(shape, LayoutSpec(specs, mesh))


@pytest.mark.parametrize("dims", [{"x": 0}, {"x": -1}, [("x", 2), ("x", 2)], {}])
def test_bad_mesh_dims(dims):
    with pytest.raises(ValueError, match="Received"):
        MeshSpec.create(dims)


def test_mesh_dims_type_error():
    with pytest.raises(TypeError, match="dict"):
        MeshSpec.create("x=2")


@pytest.mark.parametrize("dims, shape, specs", LAYOUT_CASES, ids=CASE_IDS)
def test_geometry_matches_dtensor_unpack(dims, shape, specs):
    mesh = dtsgd_viz.make_mesh(dims)
    live = _dtensor.to_layout(LayoutSpec(specs, _dtensor.mesh_spec(mesh)))
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    shards = _dtensor.unpack(_dtensor.put(x, live))
    spec = _dtensor.layout_spec(live)
    assert spec.sharding_specs == specs and spec.mesh.dim_sizes == tuple(dims.values())
    g = shard_geometry(shape, spec)
    assert len(shards) == g.num_devices == mesh.num_local_devices()
    for d, shard in enumerate(shards):
        np.testing.assert_array_equal(shard, x[g.blocks[d]], err_msg=f"device {d}")
    # replica groups: same block <=> same data (x has distinct values everywhere)
    for group in g.replica_groups:
        for d in group[1:]:
            np.testing.assert_array_equal(shards[d], shards[group[0]])
    firsts = [shards[grp[0]] for grp in g.replica_groups]
    for i in range(len(firsts)):
        for j in range(i + 1, len(firsts)):
            assert not np.array_equal(firsts[i], firsts[j])


def test_spec_round_trip_through_dtensor():
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    spec = dtsgd_viz.mesh_spec(mesh)
    assert spec.dim_names == ("batch", "model") and spec.dim_sizes == (2, 4)
    assert spec.short_device_names[3] == "CPU:3"
    back = _dtensor.to_mesh(spec)
    assert _dtensor.mesh_spec(back) == spec
    lay = LayoutSpec(("model", "unsharded"), spec)
    assert _dtensor.layout_spec(_dtensor.to_layout(lay)) == lay
    assert LayoutSpec.from_dict(lay.to_dict()) == lay


def test_make_mesh_accepts_pairs_and_names_devices():
    mesh = dtsgd_viz.make_mesh([("a", 2), ("b", 2), ("c", 2)])
    assert list(mesh.dim_names) == ["a", "b", "c"]
    assert mesh.local_devices()[7].endswith("CPU:7")


def test_make_mesh_too_many_devices_after_start():
    # TF has started with 8 devices: 16 cannot be had any more.
    with pytest.raises(ValueError, match=r"needs 16 CPU devices.*already started with 8.*restart"):
        dtsgd_viz.make_mesh({"x": 4, "y": 4})


def test_make_mesh_bad_inputs():
    with pytest.raises(ValueError, match=r"sizes must be integers >= 1. Received: x=0"):
        dtsgd_viz.make_mesh({"x": 0})
    with pytest.raises(ValueError, match="at most 64"):
        dtsgd_viz.make_mesh({"x": 128})
    with pytest.raises(ValueError, match="this machine has 0"):
        dtsgd_viz.make_mesh({"x": 2}, device_type="GPU")
    with pytest.raises(ValueError, match="device_type"):
        dtsgd_viz.make_mesh({"x": 2}, device_type="FPGA")


@pytest.mark.slow
def test_make_mesh_in_fresh_process_creates_devices(tmp_path):
    import subprocess
    import sys

    code = (
        "import dtsgd_viz, tensorflow as tf\n"
        "m = dtsgd_viz.make_mesh({'x': 2, 'y': 2})\n"
        "print(len(tf.config.list_logical_devices('CPU')), m.num_local_devices())\n"
        "try:\n    dtsgd_viz.make_mesh({'x': 16})\nexcept ValueError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.splitlines()
    assert lines[0] == "8 4"
    assert lines[1].startswith("ERR This mesh needs 16 CPU devices") and "restart" in lines[1]
