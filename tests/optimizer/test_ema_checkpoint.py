"""Issue #9: the weights' moving average (``use_ema``) on a mesh, and saving/restoring a
model trained with ``dtsgd_viz.SGD`` (checkpoint in a fresh process, config with the mesh)."""

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from helpers.builders import global_value as _global
from helpers.builders import layoutmap_mlp
from helpers.builders import regression_data as _data
from helpers.builders import train as _train
from tensorflow.experimental import dtensor

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.theory import reference

EMA_MOMENTUM = 0.8
STEPS = 7


def _mse(model, mesh):
    x, y = _data()
    data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
    xb, yb = _dtensor.put(x, data_layout), _dtensor.put(y, data_layout)
    return float(_global(tf.reduce_mean((model(xb) - yb) ** 2)))


# ---- item 1: EMA on a mesh ----------------------------------------------------------


@pytest.mark.slow
def test_upstream_dtensor_sgd_discards_the_training_with_ema_on_a_mesh():
    """Upstream behaviour (tf-keras 2.21), pinned: its DTensor SGD never updates the
    averages on a mesh, so the ``finalize_variable_values`` that ends ``model.fit``
    writes the initial weights back. If this fails, tf-keras fixed it: revisit
    ``dtsgd_viz._ema`` and the README note."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = layoutmap_mlp(mesh)
    initial = [_global(v) for v in model.trainable_variables]
    opt = tf_keras.dtensor.experimental.optimizers.SGD(0.05, use_ema=True, ema_momentum=EMA_MOMENTUM, mesh=mesh)
    _train(model, opt, mesh, "fit", 4)
    assert int(_global(opt.iterations)) == 4  # it trained...
    assert np.any(_global(opt.momentums[0]) != 0)
    for v, a, w0 in zip(model.trainable_variables, opt._model_variables_moving_average, initial):
        np.testing.assert_array_equal(_global(a), w0)  # ...the averages never moved...
        np.testing.assert_array_equal(_global(v), w0)  # ...and fit ended on the start


def test_replay_ema_by_hand():
    # lr 0.1, gradient 1: p 1 -> 0.9 -> 0.8 -> 0.775 (overwritten by the average at step 2)
    p, v, avg = reference.replay_ema(
        np.float32(1.0), np.ones(3, np.float32), 0.1, ema_momentum=0.5, overwrite_frequency=2
    )
    np.testing.assert_allclose(avg, [0.95, 0.875, 0.825], rtol=1e-6)
    np.testing.assert_allclose(p, [0.9, 0.875, 0.775], rtol=1e-6)
    np.testing.assert_allclose(v, [-0.1] * 3, rtol=1e-6)
    assert avg.dtype == p.dtype == np.float32


EMA_CASES = [(name, 3, mode, False) for name in sorted(CONFIGS) for mode in ("eager", "graph", "fit")]
EMA_CASES += [
    ("momentum", None, "fit", False),  # the case: no overwrites, fit finalizes
    ("nesterov", 3, "graph", True),
]


@pytest.mark.parametrize("name, frequency, mode, exact", EMA_CASES)
@pytest.mark.slow
def test_ema_on_a_mesh_follows_tf_keras_formula(name, frequency, mode, exact):
    """Every step's parameters, velocities and averages against ``reference.replay_ema``
    fed with the recorded gradients: averages updated after every step, the weights
    overwritten every ``frequency`` steps, and finalize writing the averages (to float32
    rounding: TensorFlow and numpy may round a fused expression differently)."""
    config = CONFIGS[name]
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = layoutmap_mlp(mesh)
    rec = dtsgd_viz.Recorder(kinds=("param", "velocity", "grad"))
    opt = dtsgd_viz.SGD(
        **config,
        mesh=mesh,
        hooks=[rec],
        exact_update=exact,
        ema_option=dtsgd_viz.EMAOption(use_ema=True, ema_momentum=EMA_MOMENTUM, ema_overwrite_frequency=frequency),
    )
    loss_before = _mse(model, mesh)
    _train(model, opt, mesh, mode, STEPS, rec)
    recording = rec.recording
    assert list(recording.steps) == list(range(1, STEPS + 1))
    finals = []
    for i, var_name in enumerate(recording.variables):
        p_ref, v_ref, avg_ref = reference.replay_ema(
            recording.initial(var_name),
            recording.global_values(var_name, "grad"),
            recording.hyperparameters.learning_rate,
            config["momentum"],
            config["nesterov"],
            EMA_MOMENTUM,
            frequency,
        )
        np.testing.assert_allclose(recording.global_values(var_name, "param"), p_ref, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(recording.global_values(var_name, "velocity"), v_ref, rtol=1e-5, atol=1e-6)
        average = opt._model_variables_moving_average[i]
        assert _dtensor.layout_of(average) == _dtensor.layout_of(model.trainable_variables[i])
        np.testing.assert_allclose(_global(average), avg_ref[-1], rtol=1e-5, atol=1e-6)
        finals.append(avg_ref[-1])
    if frequency:  # the overwrites changed the course, which the gradients saw
        assert not np.allclose(
            recording.global_values("d1/kernel", "param")[2],
            reference.replay(
                recording.initial("d1/kernel"),
                recording.global_values("d1/kernel", "grad")[:3],
                config["learning_rate"],
                config["momentum"],
                config["nesterov"],
            )[0][2],
        )
    if mode != "fit":  # fit finalizes itself
        opt.finalize_variable_values(model.trainable_variables)
    for v, final in zip(model.trainable_variables, finals):
        np.testing.assert_allclose(_global(v), final, rtol=1e-5, atol=1e-6)
    assert _mse(model, mesh) < loss_before


# ---- item 6: saving and restoring ----------------------------------------------------

CKPT_CONFIG = dict(
    CONFIGS["momentum"], ema_option={"use_ema": True, "ema_momentum": EMA_MOMENTUM, "ema_overwrite_frequency": 3}
)

# A fresh process: the mesh first, then, once per way of saving, the same model; the
# optimizer from the saved config (mesh included); restore; M more steps of the same loop.
RESTORE_SCRIPT = """
import json, sys
import dtsgd_viz
mesh = dtsgd_viz.make_mesh({{"batch": 2, "model": 4}})
sys.path.insert(0, {tests!r})
import numpy as np, tensorflow as tf
from helpers.builders import layoutmap_mlp
from helpers.builders import global_value as _global, regression_data as _data, train as _train

config = json.load(open({config!r}))
for method, path in {paths!r}.items():
    opt = dtsgd_viz.SGD.from_config(config)
    assert opt.mesh == mesh, (opt.mesh, mesh)
    model = layoutmap_mlp(mesh)
    opt.build(model.trainable_variables)  # slots, averages: so every saved value has a place
    if method == "checkpoint":
        tf.train.Checkpoint(model=model, optimizer=opt).read(path).assert_consumed()
    else:
        model.compile(optimizer=opt, loss="mse")
        model.load_weights(path).assert_consumed()
    _train(model, opt, mesh, "graph", {steps})
    np.savez({out!r} + f"-{{method}}.npz", iterations=_global(opt.iterations),
             **{{f"param{{i}}": _global(v) for i, v in enumerate(model.trainable_variables)}},
             **{{f"velocity{{i}}": _global(opt.velocity(v)) for i, v in enumerate(model.trainable_variables)}},
             **{{f"average{{i}}": _global(a) for i, a in enumerate(opt._model_variables_moving_average)}})
"""


def _state(model, opt):
    out = {"iterations": _global(opt.iterations)}
    for i, v in enumerate(model.trainable_variables):
        out[f"param{i}"] = _global(v)
        out[f"velocity{i}"] = _global(opt.velocity(v))
        out[f"average{i}"] = _global(opt._model_variables_moving_average[i])
    return out


@pytest.mark.slow
def test_checkpoint_restored_in_a_fresh_process_continues_exactly(tmp_path):
    """Train N steps, save model + optimizer (momentum slots, EMA averages, iteration
    count) both ways (``tf.train.Checkpoint`` and ``model.save_weights``), restore each
    into a fresh process (optimizer rebuilt from its JSON config; one process restores
    both, each into its own model and optimizer), train M more: bit-identical to an
    uninterrupted N+M run."""
    import json
    import os
    import subprocess
    import sys

    n, m = 4, 3  # the EMA overwrite at step 6 needs the restored averages and count
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    expected, paths = {}, {}
    for method in ("checkpoint", "save_weights"):
        model = layoutmap_mlp(mesh)
        opt = dtsgd_viz.SGD(**CKPT_CONFIG, mesh=mesh)
        _train(model, opt, mesh, "graph", n)
        path = str(tmp_path / f"ckpt-{method}")
        if method == "checkpoint":
            path = tf.train.Checkpoint(model=model, optimizer=opt).write(path)
        else:
            model.compile(optimizer=opt, loss="mse")
            model.save_weights(path)  # tf-keras' TensorFlow checkpoint format
        paths[method] = path
        (tmp_path / "config.json").write_text(json.dumps(opt.get_config()))
        _train(model, opt, mesh, "graph", m)  # the uninterrupted run
        expected[method] = _state(model, opt)

    out = tmp_path / "restored"
    script = RESTORE_SCRIPT.format(
        tests=os.path.dirname(os.path.dirname(__file__)),
        config=str(tmp_path / "config.json"),
        paths=paths,
        steps=m,
        out=str(out),
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for method, want in expected.items():
        restored = np.load(f"{out}-{method}.npz")
        assert int(restored["iterations"]) == n + m, method
        assert sorted(restored.files) == sorted(want), method
        for key, value in want.items():
            np.testing.assert_array_equal(restored[key], value, err_msg=f"{method}: {key}")


def test_config_is_json_and_brings_the_mesh_back():
    import json

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    opt = dtsgd_viz.SGD(
        0.05,
        momentum=0.9,
        nesterov=True,
        mesh=mesh,
        exact_update=True,
        ema_option={"use_ema": True, "ema_overwrite_frequency": 5},
    )
    config = json.loads(json.dumps(opt.get_config()))
    assert config["mesh"] == dtsgd_viz.mesh_spec(mesh).to_dict()
    again = dtsgd_viz.SGD.from_config(config)
    assert again.mesh == mesh
    assert json.loads(json.dumps(again.get_config())) == config
    # tf-keras' own deserializer finds it by its registered name (not its own "SGD")
    assert tf_keras.saving.get_registered_name(dtsgd_viz.SGD) == "dtsgd_viz>SGD"
    via_keras = tf_keras.optimizers.deserialize({"class_name": "dtsgd_viz>SGD", "config": config})
    assert type(via_keras) is dtsgd_viz.SGD and via_keras.mesh == mesh and via_keras.exact_update
    # a config without a mesh
    old = {k: v for k, v in config.items() if k not in ("exact_update", "mesh")}
    assert dtsgd_viz.SGD.from_config(old).mesh is None
    assert dtsgd_viz.SGD(0.1).get_config()["mesh"] is None


@pytest.mark.parametrize("dims, device_type", [({"batch": 4, "model": 4}, "CPU"), ({"x": 2}, "GPU")])
def test_config_mesh_without_its_devices_is_a_clear_error(dims, device_type):
    mesh = dtsgd_viz.MeshSpec.create(dims, device_type=device_type)
    config = dict(dtsgd_viz.SGD(0.1).get_config(), mesh=mesh.to_dict())
    with pytest.raises(ValueError) as err:
        dtsgd_viz.SGD.from_config(config)
    message = str(err.value)
    assert str(mesh) in message and f"{device_type}:{mesh.num_devices - 1}" in message
    assert "this process has ['CPU:0'" in message if device_type == "CPU" else "no GPU devices" in message


@pytest.mark.filterwarnings("ignore:You are saving your model as an HDF5 file")
@pytest.mark.slow
def test_keras_and_h5_saves_of_a_sharded_model_fail_upstream(tmp_path):
    """Upstream behaviour (tf-keras 2.21), pinned: the ``.keras`` and ``.h5`` formats
    copy every weight to one host array, which DTensor refuses for a sharded one. The
    README points to ``tf.train.Checkpoint`` / ``save_weights`` instead. If this fails,
    tf-keras learnt to save sharded weights: update the README."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = layoutmap_mlp(mesh)
    opt = dtsgd_viz.SGD(**CONFIGS["momentum"], mesh=mesh)
    _train(model, opt, mesh, "graph", 1)
    model.compile(optimizer=opt, loss="mse")
    for name in ("m.keras", "m.h5"):
        with pytest.raises(tf.errors.UnimplementedError, match="non-replicated DTensor"):
            model.save(tmp_path / name)


@pytest.mark.slow
def test_savedmodel_reloads_the_optimizer_with_its_mesh_but_not_the_sharding(tmp_path):
    """Before: the saved optimizer config was named "SGD", so tf-keras rebuilt its own
    SGD (no mesh), and ``exact_update``/``data_dependent_update`` made that fail with a
    TypeError. Now ``dtsgd_viz.SGD`` comes back, mesh and switch included. The weights
    come back as plain variables (upstream: a SavedModel keeps no LayoutMap), so resuming
    training on a mesh goes through a checkpoint instead."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = layoutmap_mlp(mesh)
    opt = dtsgd_viz.SGD(**CONFIGS["momentum"], mesh=mesh, exact_update=True)
    _train(model, opt, mesh, "graph", 1)
    model.compile(optimizer=opt, loss="mse")
    model.save(tmp_path / "sm", save_format="tf")
    loaded = tf_keras.models.load_model(tmp_path / "sm")
    assert type(loaded.optimizer) is dtsgd_viz.SGD
    assert loaded.optimizer.mesh == mesh and loaded.optimizer.exact_update
    for v, w in zip(loaded.trainable_variables, model.trainable_variables):
        assert not _dtensor.is_dtensor(v)
        np.testing.assert_array_equal(v.numpy(), _global(w))
