"""Minimal reproduction, with plain TensorFlow + tf-keras only (no dtsgd_viz), of the
stale-velocity read of tf-keras' DTensor SGD inside ``tf.function``.

tf-keras' ``SGD.update_step`` assigns the momentum slot and then reads it again to move
the parameter::

    m.assign(-gradient * lr + m * momentum)
    variable.assign_add(-gradient * lr + m * momentum)   # Nesterov (or assign_add(m))

Eagerly the read sees the new slot. Inside a ``tf.function`` on a DTensor mesh, for a
``LayoutMap``-sharded model trained on batch-sharded data, the read can see the *old*
slot: the parameter then moves with the previous step's velocity. The same 4 updates,
from the same weights and data, run eagerly and in a ``tf.function``, end on different
weights. Run it (about 20 s on a 2-core CPU)::

    python docs/upstream/stale_velocity.py

It prints, per variable, the largest difference between the eager and the graph run
(tf 2.21 / tf-keras 2.21: up to ~0.1 after 4 steps; a fixed TensorFlow prints zeros).

A workaround, and a hint at the cause: the gradients of the batch-sharded loss reach
``apply_gradients`` laid out differently from their variables (DTensor reduces over
``batch`` lazily). Relaid out to each variable's layout first, the graph run agrees
with the eager one to float rounding::

    python docs/upstream/stale_velocity.py --relayout-gradients
"""

import os
import sys

RELAYOUT = "--relayout-gradients" in sys.argv[1:]
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

STEPS, LR, MU = 4, 0.05, 0.9

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 8)
mesh = dtensor.create_mesh([("batch", 2), ("model", 4)], device_type="CPU")


def model_and_optimizer():
    layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    layout_map["d1.*kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
    layout_map["d1.*bias"] = dtensor.Layout(["model"], mesh)
    layout_map["d2.*kernel"] = dtensor.Layout(["model", "unsharded"], mesh)
    layout_map["d2.*bias"] = dtensor.Layout.replicated(mesh, 1)
    with layout_map.scope():
        tf_keras.utils.set_random_seed(0)
        model = tf_keras.Sequential(
            [
                tf_keras.layers.Dense(16, activation="tanh", name="d1", input_shape=(4,)),
                tf_keras.layers.Dense(1, name="d2"),
            ]
        )
    opt = tf_keras.dtensor.experimental.optimizers.SGD(LR, momentum=MU, nesterov=True, mesh=mesh)
    return model, opt


rng = np.random.default_rng(0)
x = rng.normal(size=(64, 4)).astype(np.float32)
y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
data_layout = dtensor.Layout(["batch", "unsharded"], mesh)


def on_mesh(a):
    return dtensor.relayout(dtensor.copy_to_mesh(tf.constant(a), dtensor.Layout.replicated(mesh, 2)), data_layout)


xb, yb = on_mesh(x), on_mesh(y)


def train(graph):
    model, opt = model_and_optimizer()

    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        # eager DTensor backprop needs its seed on the mesh
        grads = tape.gradient(loss, model.trainable_variables, output_gradients=tf.ones_like(loss))
        if RELAYOUT:
            grads = [dtensor.relayout(g, v.layout) for g, v in zip(grads, model.trainable_variables)]
        opt.apply_gradients(zip(grads, model.trainable_variables))

    fn = tf.function(step) if graph else step
    for _ in range(STEPS):
        fn()
    return {v.name: [np.asarray(s) for s in dtensor.unpack(v.read_value())] for v in model.trainable_variables}


eager = train(graph=False)
graph = train(graph=True)
print(
    f"tf {tf.__version__}, tf-keras {tf_keras.__version__}: {STEPS} Nesterov updates "
    f"(lr={LR}, momentum={MU}) of a LayoutMap MLP on a 2x4 CPU mesh, eager vs tf.function"
    + (", gradients relaid out to their variables' layouts" if RELAYOUT else "")
)
worst = 0.0
for name in eager:
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(eager[name], graph[name]))
    worst = max(worst, diff)
    print(f"  {name:<12} max |eager - graph| = {diff:.3g}")
print("RESULT:", "the runs differ (stale velocity in tf.function)" if worst > 1e-5 else "the runs agree (fixed)")
