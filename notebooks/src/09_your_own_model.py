# %% [markdown]
# # Your own model: record it under `fit`, then compare Nesterov with momentum
#
# The other tutorials use models this package ships. Here a model is written from
# scratch, the way you would write yours: a token classifier with an embedding, a dense
# layer sharded over the `model` dim of a `batch=2 x model=4` mesh, a layer norm and a
# softmax head. The steps are the ones your model needs:
#
# 1. lay the weights out with a tf-keras `LayoutMap` and ask `dtsgd_viz.preflight` whether
#    DTensor will refuse anything;
# 2. feed `model.fit` from `dtsgd_viz.models.dataset`, the DTensor dataset `fit` needs;
# 3. record each run with `rec.keras_callback()`;
# 4. see what one update sends between the devices (`dtsgd_viz.communication`);
# 5. compare the runs with `plot_compare`, which needs no loss surface.
#
# (Block, shard, replica, slot and update mean what the [glossary](../docs/glossary.md) says.)

# %%
import textwrap
import warnings

import dtsgd_viz

mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})  # first: creates 8 CPU devices

# %%
# %matplotlib inline
import numpy as np
import tf_keras
from IPython.display import display
from tensorflow.experimental import dtensor

from dtsgd_viz import models
from dtsgd_viz.theory.reference import check_recording


def show(fig):
    display(fig, include=["image/png"])  # the picture only: '<Figure ...>' says nothing


# %% [markdown]
# ## The data and the model
#
# Each example is 5 tokens from a vocabulary of 64; its class (one of 8) is the block of
# 8 tokens they were drawn from, so the model has something to learn.

# %%
rng = np.random.default_rng(0)
classes = rng.integers(0, 8, 512)
x = (classes[:, None] * 8 + rng.integers(0, 8, (512, 5))).astype(np.int32)
y = classes.astype(np.int32)
print(x[:3], y[:3])

# %% [markdown]
# The `LayoutMap` names each weight's layout: the embedding table and the first dense
# layer are cut over `model` by column (4 of the 16 embedding columns, 8 of the 32 units
# on each device), the head's kernel by row; the layer norm and the head's bias are
# replicated. Every device of a `batch` row holds the same blocks. `build` makes the model
# anew from the same seed each time, so every run below starts from the same weights.

# %%
u, m = "unsharded", "model"


def layout(*specs):
    return dtensor.Layout(list(specs), mesh)


def build(epsilon=1e-6):
    layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    layout_map["embed.embeddings"] = layout(u, m)
    layout_map["hidden.kernel"], layout_map["hidden.bias"] = layout(u, m), layout(m)
    layout_map["norm.gamma"], layout_map["norm.beta"] = layout(u), layout(u)
    layout_map["head.kernel"], layout_map["head.bias"] = layout(m, u), layout(u)
    with layout_map.scope():
        tf_keras.utils.set_random_seed(1)
        tokens = tf_keras.Input((5,), dtype="int32", name="tokens")
        h = tf_keras.layers.Embedding(64, 16, name="embed")(tokens)
        h = tf_keras.layers.GlobalAveragePooling1D(name="mean")(h)
        h = tf_keras.layers.Dense(32, activation="relu", name="hidden")(h)
        h = tf_keras.layers.LayerNormalization(epsilon=epsilon, name="norm")(h)
        probs = tf_keras.layers.Dense(8, activation="softmax", name="head")(h)
        return tf_keras.Model(tokens, probs, name="token_classifier")


# %% [markdown]
# ## Preflight: what DTensor would refuse
#
# Some tf-keras layers hit DTensor limits when the step is traced, with an MLIR error that
# does not name the layer. `preflight` knows those traps and names the layer and the fix.
# `LayerNormalization` with its default epsilon (0.001) is one: tf-keras then runs it as a
# fused batch norm, an op DTensor cannot lay out.

# %%
print(dtsgd_viz.preflight(build(epsilon=1e-3)))

# %% [markdown]
# `rec.keras_callback()` runs the same check when `fit` begins and raises
# `DTensorTrapError` with this text. With `epsilon=1e-6` the layer is not fused:

# %%
model = build()
print(dtsgd_viz.preflight(model))
print(dtsgd_viz.model_table(model))

# %% [markdown]
# ## Three runs under `fit`
#
# `models.dataset(mesh, x, y, batch_size)` makes the `DTensorDataset` that `fit` needs:
# `batch_size` is the **global** batch, split over the `batch` dim (16 examples per
# device row here), and `steps_per_epoch` says how many batches an epoch takes.
#
# The three runs differ only in the optimizer: classical momentum and Nesterov, both with
# `exact_update=True`, and Nesterov with tf-keras' default update, which on a mesh inside
# `tf.function` can read the velocity slot before its new value lands (the stale velocity
# of tutorials 04 and 07). Each run is recorded by its own `Recorder`.

# %%
CONFIGS = {
    "momentum": dict(momentum=0.9, exact_update=True),
    "nesterov": dict(momentum=0.9, nesterov=True, exact_update=True),
    "nesterov (default)": dict(momentum=0.9, nesterov=True),
}
runs, trained = {}, {}
for name, config in CONFIGS.items():
    model = build()
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, mesh=mesh, hooks=[rec], **config)
    model.compile(optimizer=opt, loss="sparse_categorical_crossentropy")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        history = model.fit(
            models.dataset(mesh, x, y, batch_size=32),
            epochs=6,
            steps_per_epoch=8,
            callbacks=[rec.keras_callback()],
            verbose=0,
        )
    runs[name], trained[name] = rec.recording, model
    print(f"{name:20s} {rec.recording}; loss per epoch: {np.round(history.history['loss'], 3)}")
    for message in dict.fromkeys(str(w.message) for w in caught):
        print(textwrap.fill(message, 100, initial_indent="  warning: ", subsequent_indent="    "))

# %% [markdown]
# `check_recording` replays every recorded update with a numpy reference of the rule
# and says which ones do not follow it. The exact runs follow it update by update:

# %%
for name in ("momentum", "nesterov"):
    print(f"{name}: {check_recording(runs[name])}")

# %% [markdown]
# ## What one update sends between the devices
#
# `dtsgd_viz.communication` reads the program DTensor compiled for a training step. For
# `fit` the step is `model.train_function`, called with an iterator of the dataset; the
# call it makes to compile is undone (weights, slots, `iterations` restored). Each
# gradient of a weight sharded over `model` is summed over `batch` (each device row saw
# half of the batch); `compare` checks that against the plan the layouts predict.
#
# The layer norm's `gamma` and `beta` are replicated, but their gradients are computed
# where the hidden layer's output lives, split over `model` by unit: DTensor sums each
# quarter over `batch` (32 B, not the 128 B the plan predicts) and then all-gathers the
# quarters over `model`. `compare` says so: the layouts alone cannot tell where a
# replicated weight's gradient is computed.

# %%
model = trained["nesterov"]
report = dtsgd_viz.communication(model.train_function, iter(models.dataset(mesh, x, y, batch_size=32)))
print(report)
print("differences from the plan:", report.compare(dtsgd_viz.communication_plan(model)))

# %% [markdown]
# ## Comparing the runs
#
# `plot_compare` takes the recordings and nothing else: the loss after each update and how
# far each run's parameters are from the first run's (relative to their norm, over the
# whole model). The default Nesterov run follows momentum's path exactly (its distance is 0,
# which a log axis cannot draw): its loss is drawn as Nesterov's triangles on momentum's dashed
# line, and the title says so. The bars across the shaded updates are each run's mean loss
# there, which the title compares. The title's numbers are `compare_findings`, printed under
# it; the velocity per device is the ShardExplorer's, below. The default Nesterov run can
# differ from run to run (the stale read is a race between the devices), so nbval does
# not compare this figure.

# %%
# NBVAL_IGNORE_OUTPUT
show(dtsgd_viz.plot_compare(runs))
print(dtsgd_viz.compare_findings(runs))

# %% [markdown]
# Read the figure from its gap panel: the default Nesterov run stays on momentum's
# parameters, while exact Nesterov differs from both from the first update on: the gap is
# largest after update 1 (the first steps differ most relative to the small initial
# parameters), then shrinks as the runs settle, and never closes.
# On this mesh, inside `fit`'s `tf.function`, tf-keras' default Nesterov update reads the
# stale velocity and so takes classical momentum's step: the two rules you meant to
# compare are the same rule. Train with `exact_update=True`.

# %% [markdown]
# ## One weight at a time
#
# The same runs side by side, one weight at a time, on one colour scale: move the slider,
# pick a weight or a kind. The three heatmaps look alike at this scale (the runs differ by a
# few percent), so the still's title says by how much: `gaps_text`, printed above it, how far
# each run's tensor is from the first run's at the shown update, relative to the first's.
# Its lower panel draws that gap at every update (`gap_lines`), ringed at the update shown:
# exact Nesterov's velocity of `hidden/kernel` moves away from momentum's over the first
# thirty updates and then stays about as far, while the default Nesterov run stays on 0. Live, the browser draws
# each block's norm there instead.

# %%
# NBVAL_IGNORE_OUTPUT
from dtsgd_viz.widgets.shard_runs import gaps_text

print(gaps_text(runs, "hidden/kernel", "velocity", step=10))
dtsgd_viz.web.ShardExplorer(runs, variable="hidden/kernel", step=10)

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
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
# - [08_multi_client](08_multi_client.ipynb): one mesh over several processes, each recording its part, merged into one
#   recording.
