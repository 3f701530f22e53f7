"""``communication_plan`` for variables sharded along a batch dim, checked against what
DTensor compiled (``communication(step)``) on a real a x b x c mesh.

The batch is split over ``a`` and ``b`` (inputs ``(examples, positions, features)`` laid
out ``[a, b, unsharded]``), so each device's gradient is a partial sum over its own
examples and positions. A kernel whose layout uses a batch dim meets activations sharded
along the same mesh dim in another axis: DTensor gathers it over that dim and sums the
gradient, laid out without it, over every batch dim. The truth here (block shapes, device
groups) is computed from the shapes and mesh by hand, not by the package.
"""

import math

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import LayoutSpec, communication, communication_plan
from dtsgd_viz.models import examples as models

U = "unsharded"
SIZES = {"a": 2, "b": 2, "c": 2}
BATCH = ("a", "b")
KERNEL, BIAS = (4, 8), (8,)


@pytest.fixture(scope="module")
def mesh():
    return dtsgd_viz.make_mesh(SIZES)


def _block_bytes(shape, specs, drop=()):
    """Bytes of one device's block: each dim divided by the size of the mesh dim that
    shards it (mesh dims in ``drop`` treated as unsharded), float32."""
    return int(np.prod([n // SIZES[s] if s in SIZES and s not in drop else n for n, s in zip(shape, specs)])) * 4


def _groups_along(dims):
    """Device ids (row-major over a, b, c) that differ only along ``dims``."""
    names = list(SIZES)
    ids = np.arange(math.prod(SIZES.values())).reshape(list(SIZES.values()))
    moved = np.moveaxis(ids, [names.index(d) for d in dims], list(range(len(names) - len(dims), len(names))))
    size = math.prod(SIZES[d] for d in dims)
    return tuple(sorted(tuple(sorted(g)) for g in moved.reshape(-1, size).tolist()))


def _measure(mesh, kernel_specs, bias_specs):
    """The report of a dense layer ``relu(x @ w + b)`` trained by dtsgd_viz.SGD (momentum)
    with the batch over a and b, and the plan of its two variables."""
    rng = np.random.default_rng(0)
    data = dtensor.Layout(["a", "b", U], mesh)
    x = dtsgd_viz.shard(rng.normal(size=(4, 4, KERNEL[0])).astype(np.float32), data)
    y = dtsgd_viz.shard(rng.normal(size=(4, 4, KERNEL[1])).astype(np.float32), data)
    w = dtsgd_viz.variable(
        rng.normal(size=KERNEL).astype(np.float32), dtensor.Layout(list(kernel_specs), mesh), name="w"
    )
    b = dtsgd_viz.variable(np.zeros(BIAS, np.float32), dtensor.Layout(list(bias_specs), mesh), name="b")
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            h = tf.nn.relu(tf.einsum("btf,fu->btu", x, w) + b)
            loss = tf.reduce_mean((h - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    report = communication(step)
    spec = dtsgd_viz.mesh_spec(mesh)
    plan = communication_plan(
        {
            "w": (KERNEL, "float32", LayoutSpec(kernel_specs, spec)),
            "b": (BIAS, "float32", LayoutSpec(bias_specs, spec)),
        },
        batch_dims=BATCH,
    )
    return report, plan


@pytest.mark.parametrize("kernel_specs", [("c", "a"), ("a", "b")], ids=["one batch dim", "every batch dim"])
@pytest.mark.slow
def test_a_kernel_sharded_along_batch_dims_is_gathered_then_summed_over_every_batch_dim(mesh, kernel_specs):
    report, plan = _measure(mesh, kernel_specs, (U,))
    used = tuple(d for d in BATCH if d in kernel_specs)
    whole = _block_bytes(KERNEL, kernel_specs, drop=BATCH)  # its layout without a, b
    shard = _block_bytes(KERNEL, kernel_specs)
    # what DTensor compiled: w's shard gathered over the batch dims it uses ...
    gathers = [c for c in report.select("other", "all-gather") if c.variable == "w"]
    assert [(c.mesh_dims, c.bytes_per_device) for c in gathers] == [(used, shard)]
    assert gathers[0].groups == _groups_along(used)
    # ... and its gradient summed over a x b, laid out without them
    g = report.gradients["w"]
    assert (g.kind, g.mesh_dims, g.bytes_per_device, g.groups) == ("all-reduce", BATCH, whole, _groups_along(BATCH))
    # the plan says the same, exactly
    e = plan.entry("w")
    assert (e.mesh_dims, e.bytes_per_device, e.gathered_over, e.gathered_bytes) == (BATCH, whole, used, shard)
    assert report.compare(plan) == []
    assert plan.totals() == report.totals("gradient") == {BATCH: whole + 8 * 4}
    # and names it as one the layouts alone do not settle, with the other outcome
    assert set(plan.unpredictable) == {"w"} and "sharded along batch dim" in plan.unpredictable["w"]
    unused = tuple(d for d in BATCH if d not in used)
    assert e.alternative == (unused, shard if unused else 0)
    assert f"gathered over {'x'.join(used)} first: w" in str(plan)


@pytest.mark.slow
def test_a_bias_sharded_like_the_kernel_lets_dtensor_move_the_activations_instead(mesh):
    """The kernel [c, a] and a bias [a]: the sum's output is asked for sharded along a
    in its unit axis, so DTensor moves the activations (all-to-alls over a) rather than
    gathering the weights. The layouts alone cannot tell this from the case above; the
    plan names both variables and prices this outcome as their ``alternative``."""
    report, plan = _measure(mesh, ("c", "a"), ("a",))
    assert not [c for c in report.select(kind="all-gather") if c.variable in ("w", "b")]
    assert {c.mesh_dims for c in report.select(kind="all-to-all")} == {("a",)}
    measured = {v: (c.mesh_dims, c.bytes_per_device) for v, c in report.gradients.items()}
    assert measured == {"w": (("b",), _block_bytes(KERNEL, ("c", "a"))), "b": (("b",), _block_bytes(BIAS, ("a",)))}
    assert set(plan.unpredictable) == {"w", "b"}
    assert {v: plan.entry(v).alternative for v in measured} == measured
    differ = report.compare(plan)
    assert {line.split(":")[0] for line in differ} == set(plan.unpredictable)


@pytest.mark.slow
def test_a_live_model_names_the_layers_whose_gradients_layouts_cannot_price():
    """The conv net: ShardedConv2D's weights (relaid out to replicated) are the variables
    whose measured all-reduce differs from the plan, and exactly those the plan names."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = models.conv_net(mesh)
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh)
    opt.build(model.trainable_variables)
    report = communication(models.train_step(model, opt, *models.on_mesh(mesh, *models.bars(32))))
    plan = communication_plan(model)
    differ = {line.split(":")[0] for line in report.compare(plan)}
    assert differ == set(plan.unpredictable) == {"conv1/kernel", "conv1/bias", "conv2/kernel", "conv2/bias"}
    kernel = next(v for v in model.trainable_variables if v.name == "conv1/kernel:0")
    whole = int(np.prod(kernel.shape)) * 4
    assert report.gradients["conv1/kernel"].bytes_per_device == whole
    assert f"sums all {whole} B over batch" in plan.unpredictable["conv1/kernel"]
    # a layout table has no layers to tell: nothing named
    assert communication_plan(dtsgd_viz.memory_plan(model)).unpredictable == {}


@pytest.mark.slow
def test_an_embedding_table_sharded_by_rows_is_named():
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = models.transformer_block(mesh)
    plan = communication_plan(model)
    assert list(plan.unpredictable) == ["tokens/embeddings"]
    assert "embedding table" in plan.unpredictable["tokens/embeddings"]
