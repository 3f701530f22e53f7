"""Small example models on a ``batch x model`` mesh, sharded by a ``LayoutMap``.

Two tf-keras models that train under DTensor with their weights sharded over
``model`` and their data over ``batch``, each with a seeded data generator:

- ``conv_net(mesh)``: two ``ShardedConv2D`` layers (kernels and biases sharded by
  filter) and a dense head, classifying 8x8 images with a horizontal or a vertical bar
  (``bars``).
- ``transformer_block(mesh)``: a ``TableEmbedding`` (table sharded by rows), a pre-norm
  block of ``MultiHeadAttention`` (sharded by head) and an MLP (sharded by hidden
  unit), ``LayerNormalization`` with a small epsilon, and a linear head on the mean
  token, classifying token sequences (``token_counts``).

Both output two logits: train with ``LOSS`` (``SparseCategoricalCrossentropy``
from logits). ``on_mesh`` lays numpy data out over ``batch``; ``dataset`` makes the
``dtensor.DTensorDataset`` that ``model.fit`` wants; ``train_step`` is a custom
``tf.function`` step. The layout maps (``conv_net_layout_map`` and
``transformer_layout_map``) use keys that match both the variables' object paths and
their names, so ``layout_map[name]`` looks up a recorded variable's layout::

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = models.conv_net(mesh)
    x, y = models.bars(64)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)
    model.compile(optimizer=opt, loss=models.LOSS)
    model.fit(models.dataset(mesh, x, y, 16), epochs=2, steps_per_epoch=4,
              callbacks=[rec.keras_callback()], verbose=0)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import tensorflow as tf
import tf_keras
from numpy.typing import ArrayLike
from tensorflow.experimental import dtensor

from .layers import ShardedConv2D, TableEmbedding

__all__ = [
    "LOSS",
    "bars",
    "conv_net",
    "conv_net_layout_map",
    "dataset",
    "on_mesh",
    "token_counts",
    "train_step",
    "transformer_block",
    "transformer_layout_map",
]

LOSS = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)
"""Both models' loss: the mean ``SparseCategoricalCrossentropy`` of their two logits."""

IMAGE = 8  # bars: IMAGE x IMAGE x 1 images
FILTERS, HIDDEN = 8, 16  # conv_net
LENGTH, VOCAB = 7, 16  # token_counts
WIDTH, HEADS, MLP = 16, 4, 32  # transformer_block: model width, heads (key_dim 4), MLP units


def _check_mesh(mesh, builder, sizes):
    dims = dict(zip(mesh.dim_names, mesh.shape()))
    if "batch" not in dims or "model" not in dims:
        raise ValueError(f"{builder} needs a mesh with dims 'batch' and 'model'. Received: a mesh with dims {dims}.")
    for what, size in sizes.items():
        if size % dims["model"]:
            raise ValueError(
                f"{builder} shards its {size} {what} over 'model', so the 'model' "
                f"dim must divide {size}. Received: model={dims['model']}."
            )


def _layout(mesh, *specs):
    return dtensor.Layout(list(specs), mesh)  # pyright: ignore[reportCallIssue]  # stub: Layout = Incomplete


def conv_net_layout_map(mesh: Any) -> Any:
    """``conv_net``'s layouts: conv kernels and biases by filter, the hidden dense layer by
    unit (all over ``model``), the output layer replicated."""
    u, m = "unsharded", "model"
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    for conv in ("conv1", "conv2"):
        lm[f"{conv}.kernel"] = _layout(mesh, u, u, u, m)
        lm[f"{conv}.bias"] = _layout(mesh, m)
    lm["hidden.kernel"] = _layout(mesh, u, m)
    lm["hidden.bias"] = _layout(mesh, m)
    lm["logits.kernel"] = _layout(mesh, m, u)
    lm["logits.bias"] = _layout(mesh, u)
    return lm


def conv_net(mesh: Any, *, seed: int = 0, layout_map: Any = None) -> tf_keras.Model:
    """8x8x1 images -> conv 3x3 (8 filters, relu) -> 2x2 max pool -> conv 3x3 (8, relu)
    -> global average pool -> dense 16 (relu) -> 2 logits; seeded, sharded by
    ``conv_net_layout_map(mesh)`` unless ``layout_map`` is given."""
    _check_mesh(mesh, "conv_net", {"filters": FILTERS, "hidden units": HIDDEN})
    lm = conv_net_layout_map(mesh) if layout_map is None else layout_map
    with lm.scope():
        tf_keras.utils.set_random_seed(seed)
        images = tf_keras.Input((IMAGE, IMAGE, 1), name="images")
        h = ShardedConv2D(FILTERS, 3, padding="same", activation="relu", name="conv1")(images)
        h = tf_keras.layers.MaxPooling2D(2, name="pool")(h)
        h = ShardedConv2D(FILTERS, 3, padding="same", activation="relu", name="conv2")(h)
        h = tf_keras.layers.GlobalAveragePooling2D(name="mean")(h)
        h = tf_keras.layers.Dense(HIDDEN, activation="relu", name="hidden")(h)
        logits = tf_keras.layers.Dense(2, name="logits")(h)
        return tf_keras.Model(images, logits, name="conv_net")


def transformer_layout_map(mesh: Any) -> Any:
    """``transformer_block``'s layouts: the embedding table by rows; attention by head
    (query, key, value kernels ``(width, heads, key_dim)`` on dim 1, the output kernel
    ``(heads, key_dim, width)`` on dim 0); the MLP by hidden unit; layer norms and head
    replicated."""
    u, m = "unsharded", "model"
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    lm["tokens.*embeddings"] = _layout(mesh, m, u)
    lm["attention.*(query|key|value).*kernel"] = _layout(mesh, u, m, u)
    lm["attention.*output.*kernel"] = _layout(mesh, m, u, u)
    lm["norm.*(gamma|beta)"] = _layout(mesh, u)
    lm["mlp_in.*kernel"] = _layout(mesh, u, m)
    lm["mlp_in.*bias"] = _layout(mesh, m)
    lm["mlp_out.*kernel"] = _layout(mesh, m, u)
    lm["mlp_out.*bias"] = _layout(mesh, u)
    lm["logits.*kernel"] = _layout(mesh, u, u)
    lm["logits.*bias"] = _layout(mesh, u)
    return lm


def transformer_block(mesh: Any, *, seed: int = 0, layout_map: Any = None) -> tf_keras.Model:
    """Token ids ``(batch, 7)`` from a vocabulary of 16 -> embedding (width 16) ->
    ``x + attention(norm(x))`` (4 heads of 4, no biases) -> ``x + mlp(norm(x))`` (32 relu
    units) -> mean over tokens -> 2 logits (head initialised to zero); seeded, sharded by
    ``transformer_layout_map(mesh)`` unless ``layout_map`` is given.

    It turns on ``tf_keras.backend.experimental.enable_tf_random_generator()`` (a global
    tf-keras setting): ``MultiHeadAttention``'s dropout layer keeps random state, which
    only a ``tf.random.Generator`` lets the ``LayoutMap`` place on the mesh.
    """
    _check_mesh(mesh, "transformer_block", {"heads": HEADS, "vocabulary rows": VOCAB, "MLP units": MLP})
    tf_keras.backend.experimental.enable_tf_random_generator()
    lm = transformer_layout_map(mesh) if layout_map is None else layout_map

    def norm(name):  # epsilon < 1.001e-5: not the fused kernel DTensor cannot lay out
        return tf_keras.layers.LayerNormalization(epsilon=1e-6, name=name)

    with lm.scope():
        tf_keras.utils.set_random_seed(seed)
        ids = tf_keras.Input((LENGTH,), dtype="int32", name="ids")
        x = TableEmbedding(VOCAB, WIDTH, name="tokens")(ids)
        h = norm("norm1")(x)
        x = x + tf_keras.layers.MultiHeadAttention(HEADS, WIDTH // HEADS, use_bias=False, name="attention")(h, h)
        h = norm("norm2")(x)
        h = tf_keras.layers.Dense(MLP, activation="relu", name="mlp_in")(h)
        x = x + tf_keras.layers.Dense(WIDTH, name="mlp_out")(h)
        x = tf_keras.layers.GlobalAveragePooling1D(name="mean")(x)
        logits = tf_keras.layers.Dense(2, name="logits", kernel_initializer="zeros")(x)
        return tf_keras.Model(ids, logits, name="transformer_block")


def bars(n: int = 64, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` 8x8x1 noisy images, each with one bright row (label 0) or column (label 1):
    ``(x float32 (n, 8, 8, 1), y int32 (n,))``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(scale=0.5, size=(n, IMAGE, IMAGE, 1)).astype(np.float32)
    y = rng.integers(0, 2, size=n).astype(np.int32)
    where = rng.integers(0, IMAGE, size=n)
    for i in range(n):
        if y[i]:
            x[i, :, where[i], 0] += 1.5
        else:
            x[i, where[i], :, 0] += 1.5
    return x, y


def token_counts(n: int = 64, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """``n`` sequences of 7 token ids from 0..15; label 1 when most of them come from the
    lower half of the vocabulary (0..7): ``(x int32 (n, 7), y int32 (n,))``."""
    rng = np.random.default_rng(seed)
    x = rng.integers(0, VOCAB, size=(n, LENGTH)).astype(np.int32)
    y = ((x < VOCAB // 2).sum(axis=1) > LENGTH // 2).astype(np.int32)
    return x, y


def _batch_layout(mesh, rank):
    return _layout(mesh, "batch", *["unsharded"] * (rank - 1))


def on_mesh(mesh: Any, *arrays: ArrayLike) -> tuple[Any, ...]:
    """Each array as a DTensor split over ``batch`` along its first dim (a tuple)."""
    from .. import dtensor as _dtensor

    return tuple(_dtensor.put(a, _batch_layout(mesh, np.ndim(a))) for a in arrays)


def untuned() -> tf.data.Options:
    """``tf.data.Options`` with autotuning off, for a pipeline over arrays in memory
    (``ds.with_options(untuned())``). With it on, TensorFlow 2.21's tuning thread can make
    the end of an iterator (a ``DTensorDataset``'s at the end of each ``model.fit``) wait
    for seconds with the CPU idle (docs/upstream.md)."""
    options = tf.data.Options()
    options.autotune.enabled = False
    return options


def dataset(mesh: Any, x: np.ndarray, y: np.ndarray, batch_size: int) -> Any:
    """A repeating ``dtensor.DTensorDataset`` of ``(x, y)`` batches of ``batch_size`` split
    over ``batch``: what ``model.fit`` needs for a ``LayoutMap`` model (pass
    ``steps_per_epoch``). tf.data's autotuning is off: the arrays are in memory, so there
    is nothing to tune, and its tuning thread makes each iterator's end (each ``fit``
    call's) wait up to seconds (docs/upstream.md)."""
    ds = tf.data.Dataset.from_tensor_slices((x, y)).repeat().with_options(untuned())
    return dtensor.DTensorDataset(
        ds,
        mesh=mesh,
        global_batch_size=batch_size,
        batch_dim="batch",
        layouts=(_batch_layout(mesh, np.ndim(x)), _batch_layout(mesh, np.ndim(y))),
    )


def train_step(model: tf_keras.Model, optimizer: Any, x: Any, y: Any) -> Callable[[], Any]:
    """A ``tf.function`` that does one update of ``model`` on ``(x, y)`` (DTensors, e.g.
    from ``on_mesh``) and returns the loss; the loss goes to ``apply_gradients`` too, so
    recordings show it."""
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = LOSS(y, model(x, training=True))
        grads = tape.gradient(loss, variables)
        optimizer.apply_gradients(zip(grads, variables), loss=loss)
        return loss

    return step
