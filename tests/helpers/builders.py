"""Small builders shared by tests: sharded variables and a quadratic whose gradient
numpy can compute independently."""

import numpy as np
import tensorflow as tf
import tf_keras
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.models import untuned


def layout(mesh, *specs):
    return dtensor.Layout(list(specs), mesh)


def quadratic(shape, seed=0):
    """Curvature ``c`` > 0 and offset ``b`` for loss = sum(c*w**2/2 + b*w); grad = c*w + b."""
    rng = np.random.default_rng(seed)
    c = rng.uniform(0.2, 1.5, size=shape).astype(np.float32)
    b = rng.normal(size=shape).astype(np.float32)
    w0 = rng.normal(size=shape).astype(np.float32)
    return c, b, w0


class Problem:
    """A variable laid out by ``lay`` (None: plain tf.Variable) and its quadratic loss."""

    def __init__(self, shape, lay=None, seed=0, name="w"):
        self.c, self.b, self.w0 = quadratic(shape, seed)
        self.lay = lay
        if lay is None:
            self.var = tf.Variable(self.w0, name=name)
            self.C, self.B = tf.constant(self.c), tf.constant(self.b)
        else:
            self.var = _dtensor.variable(self.w0, lay, name=name)
            self.C, self.B = _dtensor.put(self.c, lay), _dtensor.put(self.b, lay)

    def loss(self):
        w = self.var
        return tf.reduce_sum(self.C * w * w / 2.0 + self.B * w)

    def numpy_grad(self, w):
        return self.c * w + self.b

    def graph_step(self, opt):
        @tf.function
        def step():
            with tf.GradientTape() as tape:
                value = self.loss()
            grads = tape.gradient(value, [self.var])
            return opt.apply_gradients(zip(grads, [self.var]), loss=value)

        return step


def run(problem, opt, steps, mode="eager", rec=None):
    if mode == "eager":
        for _ in range(steps):
            opt.minimize(problem.loss, [problem.var])
    elif mode == "eager-apply":
        # tf-keras' own minimize cannot backprop eagerly on a mesh (the tape's plain
        # seed); seed it on the mesh and call apply_gradients, for either optimizer.
        for _ in range(steps):
            with tf.GradientTape() as tape:
                value = problem.loss()
            grads = tape.gradient(value, [problem.var], output_gradients=tf.ones_like(value))
            opt.apply_gradients(zip(grads, [problem.var]))
    else:
        step = problem.graph_step(opt)
        it = rec.loop(steps) if rec is not None else range(steps)
        for _ in it:
            step()


def make_sgd(config, mesh=None, hooks=()):
    return dtsgd_viz.SGD(**config, mesh=mesh, hooks=hooks)


# (mesh dims, global shape, sharding specs): every layout the tests use.
LAYOUT_CASES = [
    ({"x": 8}, (16,), ("x",)),
    ({"x": 8}, (4, 8), ("unsharded", "x")),
    ({"x": 8}, (8, 2, 3), ("x", "unsharded", "unsharded")),
    ({"x": 8}, (4, 8), ("unsharded", "unsharded")),
    ({"x": 2, "y": 4}, (8,), ("y",)),
    ({"x": 2, "y": 4}, (4, 8), ("x", "y")),
    ({"x": 2, "y": 4}, (8, 4), ("y", "x")),
    ({"x": 2, "y": 4}, (6, 4), ("x", "unsharded")),
    ({"x": 2, "y": 4}, (3, 4, 8), ("unsharded", "x", "y")),
    ({"x": 2, "y": 4}, (2, 3, 4), ("unsharded", "unsharded", "unsharded")),
    ({"a": 2, "b": 2, "c": 2}, (2, 4, 6), ("a", "b", "c")),
    ({"a": 2, "b": 2, "c": 2}, (4, 3, 2), ("c", "unsharded", "a")),
    ({"a": 2, "b": 2, "c": 2}, (4, 6), ("b", "a")),
    ({"a": 2, "b": 2, "c": 2}, (6,), ("c",)),
    ({"x": 2, "y": 2}, (4, 6), ("x", "y")),
]
CASE_IDS = [f"{'x'.join(map(str, m.values()))}-{s}-{'.'.join(p)}" for m, s, p in LAYOUT_CASES]


def layoutmap_mlp(mesh, name=None):
    """A 4 -> 16 (tanh) -> 1 tf-keras MLP whose weights a LayoutMap shards over ``model``
    (the bias of the output layer replicated), seeded."""
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    lm["d1.*kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
    lm["d1.*bias"] = dtensor.Layout(["model"], mesh)
    lm["d2.*kernel"] = dtensor.Layout(["model", "unsharded"], mesh)
    lm["d2.*bias"] = dtensor.Layout.replicated(mesh, 1)
    with lm.scope():
        tf_keras.utils.set_random_seed(0)
        return tf_keras.Sequential(
            [
                tf_keras.layers.Dense(16, activation="tanh", name="d1", input_shape=(4,)),
                tf_keras.layers.Dense(1, name="d2"),
            ],
            name=name,
        )


def fit_dataset(mesh, x, y, per_replica=8):
    """A repeating ``DTensorDataset`` of ``(x, y)`` for ``model.fit`` on ``mesh``: batches of
    ``per_replica`` examples per ``batch`` replica, laid out ``[batch, unsharded]``."""
    ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(per_replica, drop_remainder=True).repeat()
    data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
    return dtensor.DTensorDataset(
        ds.with_options(untuned()),
        mesh=mesh,
        layouts=(data_layout, data_layout),
        global_batch_size=per_replica * mesh.dim_size("batch"),
        batch_dim="batch",
        dataset_already_batched=True,
    )


def global_value(x):
    """The global numpy value of a (possibly sharded) DVariable or DTensor."""
    value = x.read_value() if isinstance(x, tf.Variable) else x
    layout = dtensor.fetch_layout(value)
    replicated = dtensor.Layout.replicated(layout.mesh, value.shape.rank)
    return dtensor.unpack(dtensor.relayout(value, replicated))[0].numpy()


def regression_data(n=64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    return x, (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]


def train(model, opt, mesh, mode, steps, rec=None):
    """``steps`` updates of ``model`` on the batch-sharded data: eager ``minimize``, a
    ``tf.function`` step, or ``model.fit`` on a ``DTensorDataset``."""
    x, y = regression_data()
    if mode == "fit":
        model.compile(optimizer=opt, loss="mse")
        callbacks = [rec.keras_callback()] if rec is not None else []
        return model.fit(fit_dataset(mesh, x, y), epochs=1, steps_per_epoch=steps, verbose=0, callbacks=callbacks)
    data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
    xb, yb = _dtensor.put(x, data_layout), _dtensor.put(y, data_layout)

    def loss():
        return tf.reduce_mean((model(xb) - yb) ** 2)

    loop = rec.loop(steps) if rec is not None else range(steps)
    if mode == "eager":
        for _ in loop:
            opt.minimize(loss, model.trainable_variables)
        return None

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = loss()
        grads = tape.gradient(value, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables), loss=value)

    for _ in loop:
        step()
    return None


# Tutorial 03's three rules (notebooks/src/03_*.py): the momentum story's runs.
TUTORIAL_03_CONFIGS = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}


def tutorial_03_runs(steps):
    """Tutorial 03's surface (rotated quadratic, condition 20, angle 30°) and its three
    rules run ``steps`` updates each, every update recorded: ``(surface, recordings)``."""
    from dtsgd_viz.theory import surfaces

    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    configs = {name: dict(config) for name, config in TUTORIAL_03_CONFIGS.items()}
    return surface, dtsgd_viz.run(surface, configs, steps=steps)


def overflow_model(mesh):
    """4 -> 16 (tanh, float16) -> 1 (float32) under mixed_float16. Targets near 300 make the
    scaled float16 gradients of d1 overflow until the scale is down to about 2**7, so the
    first updates from 2**15 are skipped, and later growth overflows once more.
    ``overflow_data`` is its dataset."""
    tf_keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        lm = tf_keras.dtensor.experimental.LayoutMap(mesh)
        lm["d1.kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
        lm["d1.bias"] = dtensor.Layout(["model"], mesh)
        lm["d2.kernel"] = dtensor.Layout(["model", "unsharded"], mesh)
        lm["d2.bias"] = dtensor.Layout.replicated(mesh, 1)
        with lm.scope():
            tf_keras.utils.set_random_seed(0)
            model = tf_keras.Sequential(
                [
                    tf_keras.layers.Dense(16, activation="tanh", name="d1", input_shape=(4,)),
                    tf_keras.layers.Dense(1, name="d2", dtype="float32"),
                ]
            )
        return dtsgd_viz.layout_autocast_variables(model)
    finally:
        tf_keras.mixed_precision.set_global_policy("float32")


def overflow_data(mesh):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    return fit_dataset(mesh, x, 300.0 + (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None])
