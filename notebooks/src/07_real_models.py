# %% [markdown]
# # Recording a real model: a conv net and a transformer block
#
# The earlier tutorials record toy surfaces and a small MLP. Real models meet DTensor's
# limits: a convolution wants its filter replicated, a layer norm picks a fused kernel
# DTensor cannot lay out, attention needs a random generator DTensor can place. Here two
# small but real tf-keras models train on a `batch=2 x model=4` mesh with their weights
# sharded over `model`: a **conv net** trained with `model.fit`, and a **transformer
# block** trained in a custom loop. Both are recorded, checked against the update rule,
# and explored with the views; at the end, the same runs with tf-keras' default update
# show the stale-velocity hazard on these models. (Block, shard, replica, slot and update
# mean what the [glossary](../docs/glossary.md) says.)

# %%
import dtsgd_viz

mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})  # first: creates 8 CPU devices

# %%
# %matplotlib inline
import warnings

import numpy as np
import tensorflow as tf
from IPython.display import display
from matplotlib.figure import Figure

from dtsgd_viz import models
from dtsgd_viz.theory.reference import check_recording


def show(fig):
    display(fig, include=["image/png"])  # the picture only: '<Figure ...>' says nothing


# %% [markdown]
# ## The DTensor recipes
#
# What tf-keras layers need to train with sharded weights (TensorFlow 2.21):
#
# | layer | what DTensor does | recipe |
# |---|---|---|
# | `Conv2D` with a sharded kernel | "Filter for convolution must have fully replicated layout" | `dtsgd_viz.layers.ShardedConv2D`: the kernel variable keeps its sharded layout; its value is relaid out to replicated just before the convolution |
# | `Conv2D` with a bias sharded over `model` | SPMD expansion fails ("op output inconsistent with the provided layout") | `ShardedConv2D` relays the bias out the same way |
# | `LayerNormalization` | no layout propagation for the fused kernel (`FusedBatchNormV3`) tf-keras uses when `epsilon >= 1.001e-5` | `LayerNormalization(epsilon=1e-6)` |
# | `MultiHeadAttention` (its dropout) | "Keras is expected to use tf.random.Generator when using DTensor API" | `tf_keras.backend.experimental.enable_tf_random_generator()` before building |
# | `Embedding` with its table sharded by rows | `ResourceGather` cannot gather from it | `dtsgd_viz.layers.TableEmbedding`: a gather from the table read as a tensor |
# | `model.fit` | numpy input fails inside DTensor's iterator | a `dtensor.DTensorDataset` and `steps_per_epoch` |
#
# In each case the **variable stays sharded**, so the optimizer's update and its velocity
# (the momentum slot, laid out like the parameter) are computed block by block on the
# devices, and the recorder sees each device's block. `dtsgd_viz.models` builds both
# models with these recipes, from a `LayoutMap`, seeded, with a data generator each.

# %% [markdown]
# ## The conv net
#
# Two 3x3 convolutions of 8 filters, a dense layer of 16 units and two logits, classifying
# 8x8 noisy images by whether their bright bar is a row or a column. Kernels and biases
# are cut over `model` by output filter or unit (2 filters, 4 units per device); only the
# output bias is replicated.

# %%
conv_net = models.conv_net(mesh)
print(dtsgd_viz.model_table(conv_net))

# %% [markdown]
# `plot_layout` draws where each block of a kernel lives. The 3x3 taps are not sharded,
# so every tap is laid out alike and one panel shows them all (the subtitle says so): an
# (input channel x filter) matrix, tensor dim 2 (input channels, rows) by tensor dim 3
# (filters, columns), cut into four column blocks. The title counts them: 4
# distinct blocks, each on 2 devices (its label names both, the key under it shows them
# on the mesh), one in each half of the `batch` dimension.

# %%
show(dtsgd_viz.plot_layout(conv_net.get_layer("conv2").kernel, name="conv2/kernel"))

# %% [markdown]
# ## The conv net, trained with `model.fit`
#
# Nesterov momentum with `exact_update=True` (the end of this notebook shows why), the
# recorder passed to `fit` as a callback, the data as a `DTensorDataset` of batches of 16
# split over `batch`: 30 updates.

# %%
images, labels = models.bars(64)


def fit_conv_net(**sgd):
    model = models.conv_net(mesh)
    rec = dtsgd_viz.Recorder()
    model.compile(
        optimizer=dtsgd_viz.SGD(0.1, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], **sgd), loss=models.LOSS
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(
            models.dataset(mesh, images, labels, 16),
            epochs=6,
            steps_per_epoch=5,
            verbose=0,
            callbacks=[rec.keras_callback()],
        )
    return history.history["loss"], rec.recording, [str(w.message) for w in caught]


conv_losses, conv_rec, _ = fit_conv_net(exact_update=True)
print("loss per epoch:", [round(v, 3) for v in conv_losses])
print(check_recording(conv_rec))

# %% [markdown]
# ## The transformer block
#
# Token ids (7 per sequence, from a vocabulary of 16) go through an embedding whose table
# is cut by rows, a pre-norm attention layer with 4 heads of width 4, a pre-norm MLP of 32
# units, a mean over the tokens and two logits: is most of the sequence from the lower
# half of the vocabulary? Attention is sharded **by head**: the query, key and value
# kernels `(width, heads, key_dim)` over their head dim, the output kernel
# `(heads, key_dim, width)` over its first, so each `model` device computes one head.

# %%
transformer = models.transformer_block(mesh)
print(dtsgd_viz.model_table(transformer))

# %% [markdown]
# ## The transformer, trained in a custom loop
#
# The whole data set (256 sequences, split over `batch`) in every update, a `tf.function`
# training step, and `rec.loop` around it, which moves the recorder's device buffers to the host
# as it goes:

# %%
tokens, targets = models.token_counts(256)
xb, yb = models.on_mesh(mesh, tokens, targets)  # DTensors laid out [batch, unsharded]


def train_transformer(steps, **sgd):
    model = models.transformer_block(mesh)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.02, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], **sgd)
    variables = model.trainable_variables

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = models.LOSS(yb, model(xb, training=True))
        grads = tape.gradient(loss, variables)
        opt.apply_gradients(zip(grads, variables), loss=loss)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in rec.loop(steps):
            train_step()
    return rec.recording, [str(w.message) for w in caught]


tr_rec, messages = train_transformer(30, exact_update=True)
print(*messages, sep="\n")
print("loss before updates 1, 10, 20, 30:", np.round(tr_rec.loss[[0, 9, 19, 29]], 3))
print(check_recording(tr_rec))

# %% [markdown]
# The one warning is about the embedding: its gradient is sparse (rows that were looked
# up), and DTensor cannot apply a sparse update to a sharded table, so `dtsgd_viz.SGD`
# makes it dense, says what that costs, and records the dense gradient.
#
# ## Each head's velocity
#
# `plot_shards` shows a recorded tensor with each device's block outlined. The attention
# output kernel is `(heads, key_dim, width) = (4, 4, 16)`, drawn with its first two dims
# flattened into rows: four rows per head, and each head is one block (on one `model`
# device, copied over `batch`), named on the left beside its rows. Right: each head's
# velocity norm over the 30 updates, one line per block in its colour (the two replicas of
# a head always agree, so they are one line): the heads move at somewhat different paces.
# A norm of exactly 0, which a log axis cannot draw, is a grey open circle on the bottom
# edge (the key names it): every head's, after update 1, so the panel's title reads the
# median's rise from update 2.

# %%
show(dtsgd_viz.plot_shards(tr_rec, "attention/attention_output/kernel", "velocity", step=10))

# %% [markdown]
# The same per-head numbers as text, straight from the recording (one column per device,
# in mesh order). The first update moves no attention weight: the logits layer starts at
# zero, so no gradient reaches the layers below it until it has moved, and then only a
# little at first.

# %%
head_kernel = "attention/attention_output/kernel"
norms = tr_rec.shard_stats(head_kernel, "velocity")[..., 0]  # (steps, devices)
devices = tr_rec.shard_devices(head_kernel)
print("update  " + "  ".join(f"{d.split('device:')[-1]:>6}" for d in devices))
for step in (1, 5, 10, 20, 30):
    print(f"{step:6d}  " + "  ".join(f"{v:6.4f}" for v in norms[step - 1]))

# %% [markdown]
# ## The stale velocity on these models
#
# `04_sharded_model` met a hazard of tf-keras 2.21 under DTensor: inside a `tf.function`,
# the SGD assigns the new velocity to its slot and then reads the slot again to move the
# parameter, and that read can see the **old** velocity. `dtsgd_viz.SGD`'s default
# computes exactly what tf-keras computes, so train both models again with the default,
# everything else the same. The recorder checks the first updates it records and warns.
# (The hazard is a race between the devices: the figures below can change from run to
# run; nbval does not compare them.)

# %%
# NBVAL_IGNORE_OUTPUT
conv_stale_losses, conv_stale, conv_messages = fit_conv_net()
tr_stale, tr_messages = train_transformer(30)
for model_name, messages in (("conv net", conv_messages), ("transformer", tr_messages)):
    print(f"{model_name}:", *(m for m in messages if "did not follow" in m))

# %% [markdown]
# `check_recording` replays every update and says, per variable, which ones are off the
# rule and by how much (as a fraction of the update's size). For the transformer:

# %%
# NBVAL_IGNORE_OUTPUT
print(check_recording(tr_stale))

# %% [markdown]
# Both runs start from the same weights and see the same data, so they agree before the
# first update; from then on every affected parameter moves with the previous update's
# velocity. That is still a descent method, but not the documented Nesterov one: here it
# lags behind on both models.

# %%
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.figure import headline

# both runs are Nesterov: the exact update in its look, the default one in the same
# colour, thinner and fainter (a dash would read as momentum, as in every other figure)
nesterov = style.RULE_LOOKS["nesterov"]
fig = headline(
    Figure(figsize=(style.WIDTH, 3.9), layout="constrained", dpi=style.DPI),
    "The default (stale-velocity) Nesterov update lags the exact one on both models",
    "same weights and data · Nesterov, momentum 0.9 · conv net lr 0.1 · transformer lr 0.02",
)
for ax, (title, ylabel, exact, stale) in zip(
    fig.subplots(1, 2),
    [
        # fit's loss is the batch's (16 images): it is noisy; the transformer's is over all 256 sequences
        ("conv net (model.fit, batches of 16)", "batch loss after k updates", conv_rec, conv_stale),
        ("transformer block (custom loop)", "loss after k updates", tr_rec, tr_stale),
    ],
):
    for run, look in (
        (exact, nesterov.line()),
        (stale, dict(color=nesterov.color, lw=1.0, alpha=0.5)),
    ):
        # the loss recorded at update k is the one before it: the loss after k - 1 updates
        ax.plot(np.arange(len(run)), run.loss, **look)
    # each line named on a short leader where the two differ most (short of the end, so
    # the name fits), saying which line style it is: the exact one below-left of its point
    # (under a falling curve), the default above-right (over it)
    n = len(exact)
    k = int(np.nanargmax((stale.loss - exact.loss)[: int(0.85 * n)]))
    for run, label, side in ((exact, "exact update", -1), (stale, "default\n(faint)", 1)):
        ax.annotate(
            label,
            (k, run.loss[k]),
            xytext=(8 * side, 16 * side),
            textcoords="offset points",
            ha="left" if side > 0 else "right",
            va="bottom" if side > 0 else "top",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            color=nesterov.color,
            bbox=dict(fc="white", ec="none", alpha=0.85, pad=0.5),
            arrowprops=dict(arrowstyle="-", color=nesterov.color, lw=0.9, shrinkA=1, shrinkB=2),
        )
    ax.set_xlim(0, n + 1)
    ax.set_title(title, fontsize=style.TITLE_SIZE)
    ax.set_xlabel("updates made (k)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(alpha=0.3)
show(fig)


# %%
# NBVAL_IGNORE_OUTPUT
def updates_until(r, loss=0.3):
    return int(np.argmax(r.loss < loss)) + 1 if (r.loss < loss).any() else None


for model_name, exact, stale in (("conv net", conv_rec, conv_stale), ("transformer", tr_rec, tr_stale)):
    gap = max(
        np.abs(stale.global_values(v, "param")[-1] - exact.global_values(v, "param")[-1]).max() for v in exact.variables
    )
    print(
        f"{model_name:12s} same loss before update 1: {stale.loss[0] == exact.loss[0]}; "
        f"loss below 0.3 at update {updates_until(exact)} (exact) vs {updates_until(stale)} "
        f"(default); largest parameter gap after {len(exact)} updates: {gap:.3f}"
    )

# %% [markdown]
# Pass `exact_update=True` to train: it computes the same arithmetic with the new
# velocity passed along as a value, and every update of both models follows the rule
# (the checks above). `docs/upstream/stale_velocity.py` reproduces the bug with plain
# tf-keras.

# %% [markdown]
# ## Where next
#
# The other tutorials, in order (the terms they use are defined in the
# [glossary](../docs/glossary.md)):
#
# - [01_quickstart](01_quickstart.ipynb): a mesh, a layout, the instrumented optimizer and a recording; the first
#   pictures (layout, velocity block by block, update paths).
# - [02_mesh_layouts](02_mesh_layouts.ipynb): how layouts cut tensors into blocks on 1-, 2- and 3-D meshes, replicas,
#   the velocity slot's layout, memory per device, `LayoutExplorer`.
# - [03_nesterov_vs_momentum](03_nesterov_vs_momentum.ipynb): the heavy-ball and Nesterov rules written out, their
#   paths, each mode's rate from theory, where each rule wins, `PhaseDiagram`, `CompareWidget`, `PathExplorer`.
# - [04_sharded_model](04_sharded_model.ipynb): a tf-keras MLP sharded by a `LayoutMap`, recorded while it trains: the
#   all-reduce, each block's velocity, a probe's path, the stale-velocity hazard.
# - [05_recordings](05_recordings.ipynb): save a recording, load it without TensorFlow, explore it with `ShardExplorer`.
# - [06_long_runs](06_long_runs.ipynb): record long runs cheaply: stats mode, decimation, a ring of full values,
#   `model.fit`.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording. **Next:** a run whose mesh spans two processes, watched while it trains.
