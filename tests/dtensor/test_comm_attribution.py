"""``communication`` names the variable of every gradient collective, including one
reached through another collective: notebook 09's model, the real ``model.fit`` step.

The model (an embedding, a dense layer sharded over ``model``, a ``LayerNormalization``,
a softmax head) on a ``batch=2 x model=4`` mesh. The layer norm's ``gamma`` and ``beta``
are replicated, but the activations they meet are the dense layer's output, sharded over
``model`` by unit. DTensor's compiled step (read back and checked by hand) computes each
one's gradient sharded like those activations, ``(1, 8)`` per device, sums that over
``batch`` (one fused all-reduce for both), then gathers it over ``model`` to the
variable's replicated ``(32,)`` and updates the variable. So each is summed over
``batch`` with a quarter of its bytes, then gathered: the layouts' plan (its whole 128 B
over ``batch``) does not say this, and ``compare`` must say how they differ.

Truth here is computed from the variables' shapes and the layouts, not by the package.
"""

import warnings

import numpy as np
import pytest
import tf_keras
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import communication, communication_plan
from dtsgd_viz.models import dataset

U, M = "unsharded", "model"
SIZES = {"batch": 2, "model": 4}
NORM = ("norm/gamma", "norm/beta")


def _groups_along(dim):
    """Device ids (row-major over batch x model) that differ only along ``dim``."""
    ids = np.arange(8).reshape(2, 4)
    return tuple(map(tuple, ids.T if dim == "batch" else ids))


def _build(mesh):
    """Notebook 09's token classifier, laid out the same way."""

    def layout(*specs):
        return dtensor.Layout(list(specs), mesh)

    layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    layout_map["embed.embeddings"] = layout(U, M)
    layout_map["hidden.kernel"], layout_map["hidden.bias"] = layout(U, M), layout(M)
    layout_map["norm.gamma"], layout_map["norm.beta"] = layout(U), layout(U)
    layout_map["head.kernel"], layout_map["head.bias"] = layout(M, U), layout(U)
    with layout_map.scope():
        tf_keras.utils.set_random_seed(1)
        tokens = tf_keras.Input((5,), dtype="int32", name="tokens")
        h = tf_keras.layers.Embedding(64, 16, name="embed")(tokens)
        h = tf_keras.layers.GlobalAveragePooling1D(name="mean")(h)
        h = tf_keras.layers.Dense(32, activation="relu", name="hidden")(h)
        h = tf_keras.layers.LayerNormalization(epsilon=1e-6, name="norm")(h)
        probs = tf_keras.layers.Dense(8, activation="softmax", name="head")(h)
        return tf_keras.Model(tokens, probs, name="token_classifier")


@pytest.fixture(scope="module")
def fitted():
    """The model after one step of ``fit``, its report and its plan."""
    mesh = dtsgd_viz.make_mesh(SIZES)
    rng = np.random.default_rng(0)
    classes = rng.integers(0, 8, 64)
    x = (classes[:, None] * 8 + rng.integers(0, 8, (64, 5))).astype(np.int32)
    y = classes.astype(np.int32)
    model = _build(mesh)
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, nesterov=True, exact_update=True, mesh=mesh)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "dtsgd_viz.SGD: the gradient of 'embed/embeddings' is sparse", RuntimeWarning)
        model.fit(dataset(mesh, x, y, batch_size=32), epochs=1, steps_per_epoch=1, verbose=0)
        report = communication(model.train_function, iter(dataset(mesh, x, y, batch_size=32)))
    return mesh, model, report, communication_plan(model)


def _variable(model, name):
    return next(v for v in model.trainable_variables if v.name.removesuffix(":0") == name)


def _bytes(shape):
    return int(np.prod(shape)) * 4  # float32


@pytest.mark.slow
def test_every_collective_of_the_step_is_named(fitted):
    mesh, model, report, plan = fitted
    assert not report.ran_step  # fit compiled it: read, not run
    assert [c for c in report.collectives if c.serves == "other"] == []
    assert all(c.variable for c in report.select("gradient"))
    names = sorted(v.name.removesuffix(":0") for v in model.trainable_variables)
    # every variable's gradient is summed over batch, by exactly one reduction
    reduced = [c.variable for c in report.select("gradient") if c.kind == "all-reduce"]
    assert sorted(reduced) == names
    assert sorted(report.gradients) == names
    for name in names:
        c = report.gradients[name]
        assert (c.kind, c.mesh_dims, c.reduce_op, c.groups) == (
            "all-reduce",
            ("batch",),
            "Add",
            _groups_along("batch"),
        ), name


@pytest.mark.slow
def test_the_layer_norm_gradients_are_summed_over_batch_sharded_then_gathered(fitted):
    mesh, model, report, plan = fitted
    hidden = dtensor.fetch_layout(_variable(model, "hidden/kernel"))
    split = mesh.dim_size(hidden.sharding_specs[-1])  # the units: over model, 4
    assert split == 4
    for name in NORM:
        v = _variable(model, name)
        assert dtensor.fetch_layout(v).is_fully_replicated
        whole = _bytes(v.shape)  # 32 float32: 128 B
        assert whole == 128
        mine = [c for c in report.collectives if c.variable == name]
        assert [c.kind for c in mine] == ["all-reduce", "all-gather"], name
        summed, gathered = mine
        # the sum over batch: each device's quarter of the units, 32 B
        assert (summed.serves, summed.mesh_dims, summed.groups, summed.reduce_op) == (
            "gradient",
            ("batch",),
            _groups_along("batch"),
            "Add",
        )
        assert summed.bytes_per_device == whole // split
        assert summed.shape == (1, 32 // split)  # tf-keras sums over examples keeping dims
        # then gathered over model to the variable's layout: 4 quarters make the 128 B
        assert (gathered.serves, gathered.mesh_dims, gathered.groups) == (
            "gradient",
            ("model",),
            _groups_along("model"),
        )
        assert gathered.bytes_per_device * split == whole
        assert gathered.shape == (32 // split,)
        assert report.gradient_path(name) == (summed, gathered)
        assert report.collectives.index(summed) < report.collectives.index(gathered)
        assert f"gradient of {name}" in str(report)
    # gamma's and beta's sums run as one fused all-reduce, as do their gathers
    by = {c.name: c for c in report.collectives if c.variable in NORM}
    assert len({c.executed_node for c in by.values() if c.kind == "all-reduce"}) == 1
    assert len({c.executed_node for c in by.values() if c.kind == "all-gather"}) == 1


@pytest.mark.slow
def test_compare_says_exactly_how_the_layer_norm_differs_from_the_plan(fitted):
    mesh, model, report, plan = fitted
    for name in NORM:  # the layouts predict the whole (replicated) gradient over batch
        e = plan.entry(name)
        assert (e.mesh_dims, e.bytes_per_device) == (("batch",), 128)
    # every other variable is as the plan says; the layer norm's differ, and say how
    assert report.compare(plan) == [
        f"{name}: predicted 128 B over ('batch',), measured 32 B over ('batch',) and an "
        "all-gather of 32 B over ('model',)"
        for name in NORM
    ]


@pytest.mark.slow
def test_an_embedding_cut_by_columns_is_predicted_and_measured_alike(fitted):
    """The plan named the column-cut table as "computed whole" (true only of a table cut
    by rows) while the measured sum was its shard's bytes, as the layouts say."""
    mesh, model, report, plan = fitted
    table = "embed/embeddings"
    layout = dtensor.fetch_layout(_variable(model, table))
    assert layout.sharding_specs[0] == dtensor.UNSHARDED and layout.sharding_specs[1] == "model"
    assert table not in plan.unpredictable
    (sum_,) = report.gradient_path(table)  # one sum, nothing moved after it
    shape = _variable(model, table).shape
    assert sum_.bytes_per_device == _bytes(shape) // mesh.dim_size("model")
    assert plan.entry(table).bytes_per_device == sum_.bytes_per_device
