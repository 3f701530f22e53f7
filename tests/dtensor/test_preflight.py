"""``dtsgd_viz.preflight``: each known DTensor trap of a tf-keras model is named with its
layer and fix before the first update. Every trap is first shown to be real: the same
model, trained under ``fit`` without the check, fails with DTensor's own error (which
``explain_error`` explains); the fixed model passes the check and trains."""

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz.dtensor.preflight import explain_error

pytestmark = pytest.mark.slow  # each case traces a real fit on the mesh

MESH = {"batch": 2, "model": 4}


@pytest.fixture(scope="module")
def mesh():
    return dtsgd_viz.make_mesh(MESH)


def _layouts(mesh):
    from tensorflow.experimental import dtensor

    return lambda *specs: dtensor.Layout(list(specs), mesh)


def _model(mesh, *, rows=False, table=False, epsilon=None, conv=None, policy=None, autocast_fix=False):
    """Tokens (16, 5) -> embedding 64x16 -> mean -> [conv] -> dense 32 relu (sharded over
    model) -> [layer norm] -> dense 8 softmax, under a LayoutMap."""
    import tf_keras

    L, u, m = _layouts(mesh), "unsharded", "model"
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    lm["emb.embeddings"] = L(m, u) if rows else L(u, u)
    lm["d1.kernel"], lm["d1.bias"] = L(u, m), L(m)
    lm["conv.kernel"], lm["conv.bias"] = L(u, u, m), L(m)
    if policy:
        tf_keras.mixed_precision.set_global_policy(policy)
    try:
        with lm.scope():
            inp = tf_keras.Input((5,), dtype="int32")
            emb = dtsgd_viz.layers.TableEmbedding if table else tf_keras.layers.Embedding
            h = emb(64, 16, name="emb")(inp)
            if conv is not None:
                h = conv(8, 3, padding="same", name="conv")(h)
            h = tf_keras.layers.GlobalAveragePooling1D()(h)
            h = tf_keras.layers.Dense(32, activation="relu", name="d1")(h)
            if epsilon is not None:
                h = tf_keras.layers.LayerNormalization(epsilon=epsilon, name="ln")(h)
            out = tf_keras.layers.Dense(8, activation="softmax", name="d2", dtype="float32")(h)
            model = tf_keras.Model(inp, out, name="mine")
    finally:
        if policy:
            tf_keras.mixed_precision.set_global_policy("float32")
    if autocast_fix:
        dtsgd_viz.layout_autocast_variables(model)
    return model


def _fit(mesh, model, callbacks=()):
    rng = np.random.default_rng(0)
    x, y = rng.integers(0, 64, (32, 5)).astype(np.int32), rng.integers(0, 8, 32).astype(np.int32)
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, exact_update=True)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    model.fit(
        dtsgd_viz.models.dataset(mesh, x, y, 16), epochs=1, steps_per_epoch=2, verbose=0, callbacks=list(callbacks)
    )
    return int(opt.iterations.numpy())


def _conv1d():
    import tf_keras

    return tf_keras.layers.Conv1D


CASES = [  # (the trap, its fix, the layer named, words of the fix, DTensor's own error)
    (dict(epsilon=1e-3), dict(epsilon=1e-6), "ln", "epsilon=1e-6", "does not implement layout propagation"),
    (dict(rows=True), dict(rows=True, table=True), "emb", "TableEmbedding", "ResourceGatherOp"),
    (dict(conv=_conv1d), dict(), "conv", "ShardedConv2D", "fully replicated layout"),
]


@pytest.mark.parametrize("trap, fixed, layer, fix, raw", CASES, ids=["layer norm", "embedding", "conv"])
def test_each_known_trap_is_named_before_dtensor_fails_on_it(mesh, trap, fixed, layer, fix, raw):
    trap = {k: (v() if callable(v) else v) for k, v in trap.items()}
    with pytest.raises(Exception, match=raw) as e:  # the trap is real: DTensor's own error
        _fit(mesh, _model(mesh, **trap))
    assert fix.split("=")[0] in explain_error(e.value)
    found = dtsgd_viz.preflight(_model(mesh, **trap))
    assert [t.layer for t in found] == [layer] and fix in found.traps[0].fix
    assert str(found).startswith("1 known DTensor trap(s) in model 'mine':")
    rec = dtsgd_viz.Recorder()
    with pytest.raises(dtsgd_viz.DTensorTrapError, match=f"- {layer}: .*Fix: .*{fix}"):
        _fit(mesh, _model(mesh, **trap), [rec.keras_callback()])
    ok = _model(mesh, **fixed)
    assert not dtsgd_viz.preflight(ok) and str(dtsgd_viz.preflight(ok)) == ("no known DTensor trap in model 'mine'")
    assert _fit(mesh, ok, [dtsgd_viz.Recorder().keras_callback()]) == 2


def test_mixed_precision_variables_left_off_the_mesh_are_named(mesh):
    found = dtsgd_viz.preflight(_model(mesh, policy="mixed_bfloat16"))
    assert len(found) == 1 and "layout_autocast_variables" in found.traps[0].fix
    assert "not on the mesh (d1/kernel" in found.traps[0].problem
    assert not dtsgd_viz.preflight(_model(mesh, policy="mixed_bfloat16", autocast_fix=True))


def test_the_example_models_and_a_model_off_the_mesh_have_no_trap(mesh):
    import tf_keras

    assert not dtsgd_viz.preflight(dtsgd_viz.models.conv_net(mesh))
    assert not dtsgd_viz.preflight(dtsgd_viz.models.transformer_block(mesh))
    inp = tf_keras.Input((4,))
    plain = tf_keras.Model(inp, tf_keras.layers.LayerNormalization()(inp), name="plain")
    assert not dtsgd_viz.preflight(plain)  # not on a mesh: nothing DTensor could refuse
    with pytest.raises(TypeError, match="preflight takes a built tf-keras model. Received: dict"):
        dtsgd_viz.preflight({})
    assert explain_error(ValueError("shape mismatch")) is None
