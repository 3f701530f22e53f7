"""Public helpers to make sharded values and read them back: dtsgd_viz.variable, shard,
to_numpy, device_values, checked against the shard geometry and dtensor.unpack."""

import numpy as np
import pytest
from helpers.builders import CASE_IDS, LAYOUT_CASES
from tensorflow.experimental import dtensor

import dtsgd_viz


@pytest.mark.parametrize("mesh_dims, shape, specs", LAYOUT_CASES, ids=CASE_IDS)
def test_shard_and_read_back(mesh_dims, shape, specs):
    mesh = dtsgd_viz.make_mesh(mesh_dims)
    layout = dtensor.Layout(list(specs), mesh)
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    for value in (
        dtsgd_viz.shard(array, layout),
        dtsgd_viz.variable(array, layout, name="v"),
        dtsgd_viz.shard(array, dtsgd_viz.layout_spec(layout)),
    ):
        np.testing.assert_array_equal(dtsgd_viz.to_numpy(value), array)
        geometry = dtsgd_viz.shard_geometry(shape, dtsgd_viz.layout_of(value))
        blocks = dtsgd_viz.device_values(value)
        truth = dtensor.unpack(value.read_value() if hasattr(value, "read_value") else value)
        assert len(blocks) == len(truth) == mesh.num_local_devices()
        for d, block in enumerate(blocks):
            np.testing.assert_array_equal(block, array[geometry.blocks[d]])
            np.testing.assert_array_equal(block, truth[d].numpy())


def test_bad_layouts_are_named():
    mesh = dtsgd_viz.make_mesh({"x": 8})
    with pytest.raises(
        TypeError, match="layout must be a tf.experimental.dtensor.Layout or a dtsgd_viz.LayoutSpec. Received: list"
    ):
        dtsgd_viz.shard(np.zeros(8), ["x"])
    with pytest.raises(ValueError, match=r"rank 1 \(\['x'\]\); the array has shape \(2, 4\)"):
        dtsgd_viz.shard(np.zeros((2, 4)), dtensor.Layout(["x"], mesh))


def test_plain_values_read_back_whole():
    import tensorflow as tf

    v = dtsgd_viz.variable(np.ones(3, np.float32), name="plain")
    assert isinstance(v, tf.Variable) and not dtsgd_viz.layout_of(v).mesh.num_devices > 1
    np.testing.assert_array_equal(dtsgd_viz.to_numpy(v), np.ones(3))
    assert len(dtsgd_viz.device_values(v)) == 1


def test_odd_inputs_are_named():
    mesh = dtsgd_viz.make_mesh({"x": 8})
    with pytest.raises(ValueError, match="does not divide"):
        dtsgd_viz.variable(np.zeros(6, np.float32), dtensor.Layout(["x"], mesh))
    for bad in (
        None,
        [1.0, 2.0],
        np.zeros(3),
        dtsgd_viz.LayoutSpec.replicated(dtsgd_viz.layout_spec(dtensor.Layout(["x"], mesh)).mesh, 1),
    ):
        for fn in (dtsgd_viz.to_numpy, dtsgd_viz.device_values):
            with pytest.raises(TypeError, match="takes a DTensor, a DVariable or a tf.Tensor"):
                fn(bad)
