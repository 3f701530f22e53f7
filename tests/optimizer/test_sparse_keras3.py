"""Real training runs the recorder must get right: sparse (Embedding) gradients on a mesh,
the exact-update switch and its old name, and Keras 3 objects handed over by mistake."""

import warnings

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.models.layers import TableEmbedding  # a table sharded by rows needs it
from dtsgd_viz.theory import reference


def _embedding_model(mesh, table_specs):
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    lm["emb.*embeddings"] = dtensor.Layout(list(table_specs), mesh)
    lm["out.*kernel"] = dtensor.Layout.replicated(mesh, 2)
    lm["out.*bias"] = dtensor.Layout.replicated(mesh, 1)
    with lm.scope():
        tf_keras.utils.set_random_seed(0)
        model = tf_keras.Sequential(
            [
                TableEmbedding(16, 8, name="emb", input_length=3),
                tf_keras.layers.Flatten(),
                tf_keras.layers.Dense(1, name="out"),
            ]
        )
        model.build((None, 3))
    return model


@pytest.mark.parametrize("table_specs", [("model", "unsharded"), ("unsharded", "model")], ids=["rows", "columns"])
@pytest.mark.slow
def test_embedding_gradients_are_densified_on_a_mesh_and_recorded_exactly(table_specs):
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = _embedding_model(mesh, table_specs)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 12, size=(8, 3)).astype(np.int32)
    used = np.isin(np.arange(16), x)  # rows 12..15 (and any other not drawn) never looked up
    y = rng.normal(size=(8, 1)).astype(np.float32)
    data = dtensor.Layout(["batch", "unsharded"], mesh)
    xb, yb = _dtensor.put(x, data), _dtensor.put(y, data)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        assert isinstance(grads[0], tf.IndexedSlices)  # the case under test
        opt.apply_gradients(zip(grads, model.trainable_variables), loss=loss)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in rec.loop(6):
            step()
    sparse = [w for w in caught if "is sparse (tf.IndexedSlices" in str(w.message)]
    assert len(sparse) == 1 and "(512 bytes" in str(sparse[0].message)  # once, with the cost
    r = rec.recording
    assert r.layout("emb/embeddings").sharding_specs == table_specs
    g = r.global_values("emb/embeddings", "grad")
    assert g.shape == (6, 16, 8)
    touched = np.abs(g).sum(axis=(0, 2)) > 0  # dense: rows never looked up are zero
    np.testing.assert_array_equal(touched, used)
    for name in r.variables:  # a numpy replay of the recorded gradients gives the recording
        p_ref, v_ref = reference.replay(
            r.initial(name), r.global_values(name, "grad"), r.hyperparameters.learning_rate, 0.9, True
        )
        np.testing.assert_allclose(r.global_values(name, "param"), p_ref, rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(r.global_values(name, "velocity"), v_ref, rtol=1e-6, atol=1e-7)
    for name, var in zip(r.variables, model.trainable_variables):  # and what the devices hold
        for d, shard in enumerate(r.shard_values(name, "param")[-1]):
            np.testing.assert_array_equal(shard, _dtensor.unpack(var)[d])
    assert r.loss[-1] < r.loss[0]


def test_exact_update_is_a_bool_and_its_old_name_is_gone():
    assert dtsgd_viz.SGD(exact_update=True).exact_update is True
    assert dtsgd_viz.SGD().exact_update is False
    assert dtsgd_viz.SGD(exact_update=True).get_config()["exact_update"] is True
    assert "exact_update" not in dtsgd_viz.SGD().get_config()
    with pytest.raises(TypeError, match="data_dependent_update"):  # the old name is gone
        dtsgd_viz.SGD(data_dependent_update=True)
    old = {**dtsgd_viz.SGD().get_config(), "data_dependent_update": True}  # saved before the rename
    with pytest.raises(TypeError, match="data_dependent_update"):  # no alias in from_config either
        dtsgd_viz.SGD.from_config(old)
    with pytest.raises(TypeError, match="exact_update must be True or False. Received: 'yes'"):
        dtsgd_viz.SGD(exact_update="yes")


keras3 = pytest.importorskip("keras")


def test_keras3_objects_are_named_with_the_fix():
    assert keras3.__version__.startswith("3")
    fix = "import tf_keras as keras"
    schedule = keras3.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9)
    with pytest.raises(TypeError, match="learning_rate is a Keras 3 object") as e:
        dtsgd_viz.SGD(schedule)
    assert fix in str(e.value)
    var = keras3.Variable(np.ones(3, np.float32), name="k3")
    opt = dtsgd_viz.SGD(0.1)
    with pytest.raises(TypeError, match="variable handed to dtsgd_viz.SGD is a Keras 3") as e:
        opt.apply_gradients([(tf.ones(3), var)])
    assert fix in str(e.value)
    model = keras3.Sequential([keras3.Input((2,)), keras3.layers.Dense(1)])
    with pytest.raises((TypeError, ValueError), match="Keras 3|tf_keras|tf-keras"):
        model.compile(optimizer=dtsgd_viz.SGD(0.1), loss="mse")
        model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), verbose=0)
    # tf-keras objects are never mistaken for Keras 3 ones
    dtsgd_viz.SGD(tf_keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.9))


def test_keras3_objects_in_the_views_are_named_with_the_fix():
    model = keras3.Sequential([keras3.Input((2,)), keras3.layers.Dense(1)])
    for call in (
        lambda: dtsgd_viz.model_table(model),
        lambda: dtsgd_viz.model_table(keras3.optimizers.SGD()),
        lambda: dtsgd_viz.plot_layout(model.weights[0]),
        lambda: dtsgd_viz.layout_autocast_variables(model),
    ):
        with pytest.raises(TypeError, match="Keras 3 object") as e:
            call()
        assert "import tf_keras as keras" in str(e.value)
