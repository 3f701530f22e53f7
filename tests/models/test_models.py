"""The example models (a conv net, a transformer block) train on a mesh with their weights
sharded, under model.fit and in a custom loop, and record exactly what the devices hold.

Each training run is traced once and shared by the tests that read it (tracing is most of
the cost)."""

import functools
import warnings

import numpy as np
import pytest
import tensorflow as tf
import tf_keras

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.models import examples as models
from dtsgd_viz.models.layers import ShardedConv2D
from dtsgd_viz.theory import reference

MODELS = {
    "conv_net": (models.conv_net, models.conv_net_layout_map, models.bars, 0.1),
    "transformer": (models.transformer_block, models.transformer_layout_map, models.token_counts, 0.05),
}
STALE = "did not follow the Nesterov update rule"


def _mesh():
    return dtsgd_viz.make_mesh({"batch": 2, "model": 4})


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


@functools.cache
def loop_run(name, exact, steps=30):
    """(model, optimizer, recording, runtime warnings) of a custom-loop training run."""
    build, _, data, lr = MODELS[name]
    mesh = _mesh()
    model = build(mesh)
    xb, yb = models.on_mesh(mesh, *data(32))
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(lr, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=exact)
    step = models.train_step(model, opt, xb, yb)

    def train():
        for _ in rec.loop(steps):
            step()
        return rec.recording

    r, caught = _caught(train)
    return model, opt, r, caught


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.slow
def test_custom_loop_with_exact_update_trains_and_follows_the_rule(name):
    _, _, r, caught = loop_run(name, True)
    assert len(r) == 30 and r.loss[-1] < 0.7 * r.loss[0]
    check = reference.check_recording(r)
    assert set(check) == set(r.variables) and not any(len(s) for s in check.values()), str(check)
    assert not [m for m in caught if STALE in m]


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.slow
def test_recording_holds_the_live_shards_in_the_layout_maps_layouts(name):
    model, opt, r, _ = loop_run(name, True)
    layout_map = MODELS[name][1](_mesh())
    assert r.variables == tuple(v.name.split(":")[0] for v in model.trainable_variables)
    sharded = 0
    for name_, var in zip(r.variables, model.trainable_variables):
        expected = dtsgd_viz.layout_spec(layout_map[name_])
        assert r.layout(name_) == expected == dtsgd_viz.layout_of(var)
        sharded += "model" in expected.sharding_specs
        velocity = opt.momentums[opt._index_dict[opt._var_key(var)]]
        for kind, live in (("param", var), ("velocity", velocity)):
            for recorded, held in zip(r.shard_values(name_, kind)[-1], _dtensor.unpack(live)):
                np.testing.assert_array_equal(recorded, held)
    assert sharded >= 6  # kernels (and more) really are cut over "model"


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.slow
def test_default_update_is_warned_about_and_flagged(name):
    _, _, r, caught = loop_run(name, False)
    stale = [m for m in caught if STALE in m]
    assert len(stale) == 1 and "exact_update=True" in stale[0]
    check = reference.check_recording(r)
    flagged = [v for v, steps in check.items() if len(steps)]
    assert len(flagged) >= len(r.variables) // 2, str(check)
    assert "off the rule" in str(check)
    # the exact run starts from the same weights and data
    exact = loop_run(name, True)[2]
    np.testing.assert_allclose(r.loss[0], exact.loss[0], rtol=1e-6)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.slow
def test_fit_with_a_dtensor_dataset_trains_and_follows_the_rule(name):
    build, _, data, lr = MODELS[name]
    mesh = _mesh()
    model = build(mesh)
    x, y = data(32)
    rec = dtsgd_viz.Recorder()
    model.compile(
        optimizer=dtsgd_viz.SGD(lr, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=True),
        loss=models.LOSS,
    )
    history, caught = _caught(
        lambda: model.fit(
            models.dataset(mesh, x, y, 16), epochs=5, steps_per_epoch=6, verbose=0, callbacks=[rec.keras_callback()]
        )
    )
    losses = history.history["loss"]
    assert losses[-1] < 0.9 * losses[0], losses
    r = rec.recording
    assert len(r) == 30
    check = reference.check_recording(r)
    assert not any(len(s) for s in check.values()), str(check)
    assert not [m for m in caught if STALE in m]


def test_builders_say_what_mesh_they_need():
    with pytest.raises(
        ValueError,
        match="dims 'batch' and 'model'. Received: a mesh with "
        r"dims \{'x': 2, 'y': 4\}",
    ):
        models.conv_net(dtsgd_viz.make_mesh({"x": 2, "y": 4}))
    with pytest.raises(ValueError, match="'model' dim must divide 4. Received: model=8"):
        models.transformer_block(dtsgd_viz.make_mesh({"batch": 1, "model": 8}))


def test_data_generators_are_seeded_and_balanced_enough():
    x, y = models.bars(64, seed=3)
    assert x.shape == (64, 8, 8, 1) and x.dtype == np.float32 and y.dtype == np.int32
    np.testing.assert_array_equal(models.bars(64, seed=3)[0], x)
    t, c = models.token_counts(64)
    assert t.shape == (64, 7) and t.min() >= 0 and t.max() < 16
    for labels in (y, c):
        assert 0.25 < labels.mean() < 0.75


def test_sharded_conv_matches_conv2d_off_the_mesh():
    x = np.random.default_rng(0).normal(size=(2, 6, 6, 3)).astype(np.float32)
    tf_keras.utils.set_random_seed(0)
    ours = ShardedConv2D(4, 3, padding="same", activation="relu")
    plain = tf_keras.layers.Conv2D(4, 3, padding="same", activation="relu")
    ours.build(x.shape), plain.build(x.shape)
    plain.set_weights([w + 0.1 for w in ours.get_weights()])
    ours.set_weights(plain.get_weights())
    np.testing.assert_allclose(ours(x), plain(x), rtol=1e-6)
    assert tf.function(ours)(x).shape == (2, 6, 6, 4)
    with pytest.raises(ValueError, match="groups=1 only.*Received: groups=3"):
        ShardedConv2D(3, 3, groups=3)
