"""The benchmarks' workloads and the helpers their reports share.

Every builder returns ``(mesh, make, nbytes)``: ``make(opt, after=None)`` builds the
seeded model (a fresh copy each call, so every variant trains its own) and returns
``(step, variables)``, ``step`` a ``tf.function`` computing the loss, its gradients with a
``tf.GradientTape`` and one ``opt.apply_gradients``, as a user's custom loop does.
``after(opt, grads, variables)``, when given, runs inside the step after the update and
what it returns is returned with the loss (``(loss, extra)``), so the graph keeps it (the
stats rows' floor, ``block_sums``, uses it). ``nbytes``: the parameters' bytes (``None``
when the builder does not say).

Builders: ``matrix(n)`` (one n x n parameter on a 2x4 mesh, a quadratic loss),
``sharded_mlp()`` (the 2 ms LayoutMap MLP, also notebook 04's model at another size),
``big_mlp()`` (LayoutMap MLP 256-1024-1024-1024-10), ``transformer()`` (the tutorials'
transformer block) and ``deep_mlp(layers, width, layout=...)`` (a stack of Dense layers:
``long_run.py``'s Megatron-style one and ``compile_time.py``'s ``Dense(64)`` stack of
issue #22, kernels ``[unsharded, model]``). TensorFlow is imported, and the 8 virtual
CPUs are set up, by the builders, not by importing this module; the report helpers at
the end are pure.
"""

from __future__ import annotations

import statistics

import numpy as np

import dtsgd_viz

NESTEROV = dict(learning_rate=0.01, momentum=0.9, nesterov=True)
PV = ("param", "velocity")


def _start():
    """``(tf, tf_keras, dtensor, put)``, after splitting the CPU into 8 devices."""
    dtsgd_viz.setup_devices(8)
    import tensorflow as tf
    import tf_keras
    from tensorflow.experimental import dtensor

    from dtsgd_viz import dtensor as _dtensor

    return tf, tf_keras, dtensor, _dtensor.put


def plain_optimizer(mesh):
    """The plain row's optimizer: tf-keras' own DTensor SGD, Nesterov, no hooks."""
    _, tf_keras, _, _ = _start()
    return tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh, jit_compile=False)


def momentum_of(opt, variable):
    """``opt``'s velocity slot of ``variable`` (tf-keras' SGD and ``dtsgd_viz.SGD``)."""
    return opt.momentums[opt._index_dict[opt._var_key(variable)]]


def train_step(opt, variables, loss_fn, *, pass_loss=True, dense=False, after=None):
    """The benchmarks' step: ``loss_fn()`` under a tape, gradients, one ``apply_gradients``
    (given ``loss=`` when ``pass_loss``; ``dense``: sparse gradients densified first)."""
    tf, _, _, _ = _start()

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = loss_fn()
        grads = tape.gradient(loss, variables)
        if dense:
            grads = [tf.convert_to_tensor(g) for g in grads]
        if pass_loss:
            opt.apply_gradients(zip(grads, variables), loss=loss)
        else:
            opt.apply_gradients(zip(grads, variables))
        if after is None:
            return loss
        return loss, after(opt, grads, variables)

    return step


def block_sums(x, layout):
    """One read of ``x``: the sum of each device's block (each sharded dim reshaped into
    ``(blocks, block)`` and reduced over the block axes, no collective), as stats mode
    reads its tensors, with one reduction instead of four."""
    tf, _, _, _ = _start()
    sizes = dict(zip(layout.mesh.dim_names, layout.mesh.shape()))
    split, axes = [], []
    for n, spec in zip(x.shape, layout.sharding_specs):
        k = sizes.get(spec, 1)
        if k > 1:
            split.append(k)
        axes.append(len(split))
        split.append(n // k)
    return tf.reduce_sum(tf.reshape(x, split), axes)


def read_floor(opt, grads, variables):
    """The stats rows' floor (``after=`` of a plain step): one ``block_sums`` read of
    every parameter, velocity and gradient, after the update."""
    out = []
    for g, v in zip(grads, variables):
        for x in (v.read_value(), momentum_of(opt, v).read_value(), g):
            out.append(block_sums(x, v.layout))
    return out


# ---- the workloads -------------------------------------------------------------------------


def matrix(n):
    """One n x n float32 parameter laid out ``[x, y]`` on a 2x4 mesh, loss sum(c w^2)/2
    (no ``loss=`` passed to the update)."""
    tf, _, dtensor, put = _start()
    from dtsgd_viz import dtensor as _dtensor

    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = dtensor.Layout(["x", "y"], mesh)
    rng = np.random.default_rng(0)
    c = put(rng.uniform(0.1, 1.0, (n, n)).astype(np.float32), lay)
    w0 = rng.normal(size=(n, n)).astype(np.float32)

    def make(opt, after=None):
        w = _dtensor.variable(w0, lay, name="w")
        return train_step(opt, [w], lambda: tf.reduce_sum(c * w * w) / 2.0, pass_loss=False, after=after), [w]

    return mesh, make, w0.nbytes


def _batch_data(mesh, x, y):
    _, _, dtensor, put = _start()
    rows = lambda a: dtensor.Layout(["batch"] + ["unsharded"] * (a.ndim - 1), mesh)  # noqa: E731
    return put(x, rows(x)), put(y, rows(y))


def _sequential(mesh, layout_map, layers):
    _, tf_keras, _, _ = _start()
    with layout_map.scope():
        tf_keras.utils.set_random_seed(0)
        return tf_keras.Sequential(layers())


def sharded_mlp(hidden=512, inputs=64, examples=256):
    """``Dense(hidden, relu)`` -> ``Dense(1)`` on ``{batch: 2, model: 4}``: the hidden
    kernel and bias split by unit over ``model``, the output kernel by row, its bias
    replicated; ``examples`` points split over ``batch``, mean squared error."""
    tf, tf_keras, dtensor, _ = _start()
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    rng = np.random.default_rng(0)
    x = rng.normal(size=(examples, inputs)).astype(np.float32)
    xb, yb = _batch_data(mesh, x, np.tanh(x @ rng.normal(size=(inputs, 1)).astype(np.float32)))

    def make(opt, after=None):
        lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
        lm["d1.*kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
        lm["d1.*bias"] = dtensor.Layout(["model"], mesh)
        lm["d2.*kernel"] = dtensor.Layout(["model", "unsharded"], mesh)
        lm["d2.*bias"] = dtensor.Layout.replicated(mesh, 1)
        model = _sequential(
            mesh,
            lm,
            lambda: [
                tf_keras.layers.Dense(hidden, activation="relu", name="d1", input_shape=(inputs,)),
                tf_keras.layers.Dense(1, name="d2"),
            ],
        )
        variables = model.trainable_variables
        return train_step(opt, variables, lambda: tf.reduce_mean((model(xb) - yb) ** 2), after=after), variables

    return mesh, make, None


def big_mlp():
    """A compute-bound LayoutMap MLP 256-1024-1024-1024-10 (the issue's ~40 ms step): 256
    examples split over ``batch``, hidden kernels split over ``model`` (alternating which
    dim, as a Megatron MLP does), biases of the model-split dims split too."""
    tf, tf_keras, dtensor, _ = _start()
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    rng = np.random.default_rng(0)
    xb, yb = _batch_data(
        mesh, rng.normal(size=(256, 256)).astype(np.float32), rng.integers(0, 10, size=(256,)).astype(np.int32)
    )
    loss_fn = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def make(opt, after=None):
        lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
        for name, spec in [
            ("h1", ["unsharded", "model"]),
            ("h2", ["model", "unsharded"]),
            ("h3", ["unsharded", "model"]),
            ("out", ["model", "unsharded"]),
        ]:
            lm[f"{name}.*kernel"] = dtensor.Layout(spec, mesh)
            lm[f"{name}.*bias"] = dtensor.Layout([spec[1]] if spec[1] == "model" else ["unsharded"], mesh)
        model = _sequential(
            mesh,
            lm,
            lambda: [
                tf_keras.layers.Dense(1024, activation="relu", name="h1", input_shape=(256,)),
                tf_keras.layers.Dense(1024, activation="relu", name="h2"),
                tf_keras.layers.Dense(1024, activation="relu", name="h3"),
                tf_keras.layers.Dense(10, name="out"),
            ],
        )
        variables = model.trainable_variables
        return train_step(opt, variables, lambda: loss_fn(yb, model(xb)), after=after), variables

    return mesh, make, None


def transformer():
    """The tutorials' transformer block (``dtsgd_viz.models.transformer_block``: a
    row-sharded embedding, attention sharded by head, an MLP; 15 variables) on 256
    sequences split over ``batch``. The embedding's gradient is sparse and DTensor applies
    no sparse update on a mesh: ``dtsgd_viz.SGD`` densifies it, tf-keras' SGD does not,
    so every variant gets it dense."""
    _start()
    from dtsgd_viz.models import examples as models

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    xb, yb = models.on_mesh(mesh, *models.token_counts(256))

    def make(opt, after=None):
        model = models.transformer_block(mesh)
        variables = model.trainable_variables
        return train_step(
            opt, variables, lambda: models.LOSS(yb, model(xb, training=True)), dense=True, after=after
        ), variables

    return mesh, make, None


DEEP_LAYOUTS = ("megatron", "col")


def deep_mlp(layers, width, *, layout="col", examples=256, outputs=None, activation="relu"):
    """``layers`` Dense layers of ``width`` units on ``{batch: 2, model: 4}``, ``examples``
    points split over ``batch``, mean squared error against a smooth target.

    ``layout="col"``: every kernel ``[unsharded, model]``, every bias ``[model]``, the last
    layer ``Dense(width)`` linear (issue #22's 40-layer puzzle, ``compile_time.py``).
    ``"megatron"``: kernels alternately ``[unsharded, model]`` and ``[model, unsharded]``,
    biases split where the output is, the last layer ``Dense(outputs)`` (default 1) row
    split with its bias replicated (``long_run.py``)."""
    if layout not in DEEP_LAYOUTS:
        raise ValueError(f"layout must be one of {DEEP_LAYOUTS}. Received: {layout!r}.")
    tf, tf_keras, dtensor, _ = _start()
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    outputs = outputs or (width if layout == "col" else 1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(examples, width)).astype(np.float32)
    y = np.tanh(x @ rng.normal(size=(width, outputs)).astype(np.float32) / np.sqrt(width))
    xb, yb = _batch_data(mesh, x, y.astype(np.float32))
    u, m = "unsharded", "model"

    def make(opt, after=None):
        lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
        for i in range(layers):
            last = i == layers - 1
            if layout == "col":
                spec = [u, m]
            else:
                spec = [m, u] if i % 2 or last else [u, m]
            lm[f"l{i:03d}.*kernel"] = dtensor.Layout(spec, mesh)
            lm[f"l{i:03d}.*bias"] = dtensor.Layout([spec[1]], mesh)
        model = _sequential(
            mesh,
            lm,
            lambda: [
                tf_keras.layers.Dense(
                    outputs if i == layers - 1 else width,
                    name=f"l{i:03d}",
                    activation=None if i == layers - 1 else activation,
                    **({"input_shape": (width,)} if i == 0 else {}),
                )
                for i in range(layers)
            ],
        )
        variables = model.trainable_variables
        return train_step(opt, variables, lambda: tf.reduce_mean((model(xb) - yb) ** 2), after=after), variables

    return mesh, make, None


# ---- report helpers (pure) -----------------------------------------------------------------


def paired_ratios(times, base):
    """``{name: median over rounds of times[name][i] / times[base][i]}``: a burst of load
    slows the blocks of one round alike, so pairing them by round keeps it out."""
    b = times[base]
    return {k: statistics.median(t / s for t, s in zip(v, b)) for k, v in times.items()}


def extra_over_floor(ratio, floor_ratio):
    """What a row adds to the plain step over what its floor adds (both as ratios to the
    plain step); ``None`` when the floor adds nothing measurable (<= 0.5% of the step)."""
    if floor_ratio is None or floor_ratio - 1 <= 0.005:
        return None
    return (ratio - 1) / (floor_ratio - 1)


def floor_cells(ratio, floor_name, floor_ratio):
    """The table's three floor cells: ``(floor, floor / plain, extra / floor's extra)``,
    ``"-"`` where a row has no floor (or its floor adds nothing measurable)."""
    if floor_name is None:
        return "-", "-", "-"
    extra = extra_over_floor(ratio, floor_ratio)
    return (floor_name, f"{floor_ratio:.2f}x", "-" if extra is None else f"{extra:.2f}x")


def rotations(names, repeats):
    """``repeats`` orders of ``names``, each the previous one rotated by one, so every name
    runs first, second, ... in turn (what runs just before a first call can warm the
    machine's caches for it)."""
    names = list(names)
    return [names[r % len(names) :] + names[: r % len(names)] for r in range(repeats)]


def table(header, rows):
    """A markdown table (a string) of ``header`` and ``rows`` (sequences of cells)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)
