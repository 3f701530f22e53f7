# %% [markdown]
# # Recording a long training run cheaply
#
# Recording every shard of every update is right for a few hundred updates, not for a
# training run of hours. This notebook shows the three knobs that keep a `Recorder`
# small and fast on a long run: `mode="stats"` (**stats mode**: a few numbers per block,
# computed on the devices), `decimate=True` (an evenly thinned history of bounded
# length), and `every=k` with `max_steps=n` (full values now and then, in a **ring** that
# keeps only the last `n`). The [glossary](../docs/glossary.md) defines these terms.

# %%
import dtsgd_viz

mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})  # first: creates 8 CPU devices

# %%
# %matplotlib inline
import numpy as np
import tensorflow as tf
import tf_keras
from IPython.display import display
from tensorflow.experimental import dtensor


def show(fig):
    display(fig, include=["image/png"])  # the picture only: '<Figure ...>' says nothing


# %% [markdown]
# ## The model and the training loop
#
# The sharded MLP of `04_sharded_model`: the data split over `batch`, the weights laid
# out over `model` by a `LayoutMap`. `train` builds a fresh model (same initial weights
# every time), attaches the given recorder to a Nesterov `dtsgd_viz.SGD`, and runs the
# `tf.function` training step (one update per call) inside `rec.loop(steps)`, which
# moves the device-side buffers to the host often enough that no recorded update is
# overwritten.

# %%
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype(np.float32)
y = np.sin(x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
xb, yb = dtsgd_viz.shard(x, data_layout), dtsgd_viz.shard(y, data_layout)


def make_model():
    layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    layout_map["d1.*kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
    layout_map["d1.*bias"] = dtensor.Layout(["model"], mesh)
    layout_map["d2.*kernel"] = dtensor.Layout(["model", "unsharded"], mesh)
    layout_map["d2.*bias"] = dtensor.Layout.replicated(mesh, 1)
    with layout_map.scope():
        tf_keras.utils.set_random_seed(0)  # the same initial weights every time
        return tf_keras.Sequential(
            [
                tf_keras.layers.Dense(16, activation="tanh", name="d1", input_shape=(4,)),
                tf_keras.layers.Dense(1, name="d2"),
            ]
        )


def train(steps, rec):
    model = make_model()
    opt = dtsgd_viz.SGD(
        0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=True
    )  # exact rule: see 04_sharded_model

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables), loss=loss)

    for _ in rec.loop(steps):
        train_step()
    return rec.recording


# %% [markdown]
# ## The whole run, in stats mode
#
# `mode="stats"` keeps no values. For every recorded update, every kind (parameter,
# velocity, gradient) and every block, it keeps three numbers: the block's L2
# norm, its mean and its max |x|, reduced **on the devices** so only those numbers
# travel to the host. `decimate=True` with `max_steps=500` bounds the history: when 500
# updates are kept, every other one is dropped and the stride doubles, so what remains is
# always evenly spread over the whole run. 2000 updates end up as 500, one every 4.

# %%
r = train(2000, dtsgd_viz.Recorder(mode="stats", decimate=True, max_steps=500))
print(r.variables)
print("kept updates:", len(r), "| first:", r.steps[:5].tolist(), "| last:", int(r.steps[-1]))
print("stride:", np.unique(np.diff(r.steps)).tolist())
print(f"loss before update 4: {r.loss[0]:.3g}, before update 2000: {r.loss[-1]:.3g}")

# %% [markdown]
# `shard_stats` gives them per device, in mesh order: `(steps, devices, 3)`, with the
# last axis holding norm, mean and max |x|. `d1/kernel` is cut into four blocks over
# `model` and copied over `batch`, so devices 0 and 4 (1 and 5, ...) hold replicas of the
# same block and show the same numbers.

# %%
stats = r.shard_stats("d1/kernel", "velocity")
print("shard_stats shape:", stats.shape)
print("velocity norm per device, last kept update:", [f"{v:.3g}" for v in stats[-1, :, 0]])

# %% [markdown]
# What does that cost in memory? Stats mode stores 3 float32 numbers per block (each
# block once, however many replicas it has), whatever the block's size. Full mode would store every
# value: here, the 97 float32 numbers of the model, for each of the 3 kinds. On this
# tiny model the two are of the same order; the difference is how they grow. Full
# mode grows with the tensors, stats mode with the number of blocks. The last line
# works it out for one 2048x2048 kernel laid out like `d1/kernel` (4 blocks).

# %%
n_values = sum(int(np.prod(r.shape(name))) for name in r.variables)
full_bytes = n_values * len(r.kinds) * len(r) * 4  # float32 values, same updates
print(f"stats recording:             {r.nbytes / 1024:7.1f} KiB  ({len(r)} updates)")
print(f"full mode, same updates:     {full_bytes / 1024:7.1f} KiB  ({n_values} values x {len(r.kinds)} kinds)")
print(f"full mode, all 2000 updates: {n_values * len(r.kinds) * 2000 * 4 / 1024:7.1f} KiB")
big_full, big_stats = 2048 * 2048 * 4, 4 * 3 * 4  # per kind and update
print(f"2048x2048 kernel, per kind and update: full {big_full / 2**20:.0f} MiB, stats {big_stats} bytes")

# %% [markdown]
# `plot_shards` works on a stats recording too: it draws the norm stats mode keeps for
# each block of the velocity over the whole run (the 500 kept updates, 4 to 2000), one
# line per block in its colour (the two replicas of a block are one line); the mean and
# max |x| are in `r.shard_stats` (printed above). The update axis is on a log
# scale, so the first few hundred updates, where most of the change happens, are not
# squashed against its left edge. The values
# themselves were never recorded, so there is no picture of them:
# the subtitle says that values need `mode="full"`.
#
# The figure's two numbers are printed under it by the functions that write them: the
# title's largest block norm over the smallest at update 2000 (the norms printed above, one
# device of each block), and the panel's median over the blocks, from update 4, the first
# one kept, to 2000.

# %%
show(dtsgd_viz.plot_shards(r, "d1/kernel", "velocity"))
from dtsgd_viz.views.shards.findings import norm_change_text, spread_text

blocks = stats[:, :4, 0]  # devices 0-3 hold one copy of each block (4-7 the replicas)
print("title:", spread_text(blocks[-1], [f"CPU:{d},{d + 4}" for d in range(4)]))
print("panel:", norm_change_text(blocks, r.steps))

# %% [markdown]
# ## Full values now and then, in a ring
#
# To look at the actual values late in a run, record full values only every `k` updates
# and keep the last few. `every=100` records updates 100, 200, ..., 2000; updates in
# between run none of the recording work. `max_steps=10` keeps the last 10 of them on
# the host (a ring: older ones are dropped as new ones arrive). `kinds` leaves out the
# gradient.

# %%
ring = train(2000, dtsgd_viz.Recorder(mode="full", every=100, kinds=("param", "velocity"), max_steps=10))
print("kept updates:", ring.steps.tolist())
print("kinds:", list(ring.kinds), f"| {ring.nbytes / 1024:.1f} KiB")
print("dropped updates:", ring.dropped_steps.tolist())

# %% [markdown]
# `dropped_steps` lists recorded updates that were overwritten on the devices before the
# host read them: empty, because `rec.loop` flushed in time. (Iterate with a plain
# `range` and never read the recorder, and they would show up here, with a warning.)
# With the values at hand, `plot_shards` draws the heatmap again: the velocity of
# `d1/kernel` at update 2000, each device's block outlined, beside the norms of the
# 10 kept updates (with no `step=`, the last one; `step=1500` would show update 1500,
# and `step=1550`, never recorded, raises an error naming the kept updates).

# %%
show(dtsgd_viz.plot_shards(ring, "d1/kernel", "velocity"))

# %% [markdown]
# The two recordings agree where they overlap: the norm that stats mode reduced on the
# devices at update 2000 is the norm of the full values recorded there.

# %%
from_full = ring.shard_stats("d1/kernel", "velocity")[-1, :, 0]
print("same norms at update 2000:", np.allclose(from_full, stats[-1, :, 0], rtol=1e-5))

# %% [markdown]
# ## The same under `model.fit`
#
# `model.fit` runs the training steps itself, so the recorder cannot wrap the loop. Pass
# `rec.keras_callback()`: it flushes the device buffers as `rec.loop` does (it counts
# batches, so `steps_per_execution` is fine) and once more when training ends. With a
# DTensor `LayoutMap` model, `fit` wants the data as a `dtensor.DTensorDataset` (here
# batches of 8 for each half of the mesh along `batch`, 16 in all) and a
# `steps_per_epoch`. Its options turn tf.data's autotuning off: over arrays in memory
# there is nothing to tune, and with it on the end of each `fit` can wait seconds for
# TensorFlow's tuning thread (`dtsgd_viz.models.dataset` does the same).

# %%
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(8, drop_remainder=True).repeat()
dds = dtensor.DTensorDataset(
    ds.with_options(dtsgd_viz.models.untuned()),
    mesh=mesh,
    layouts=(data_layout, data_layout),
    global_batch_size=16,
    batch_dim="batch",
    dataset_already_batched=True,
)
fit_rec = dtsgd_viz.Recorder(mode="stats", decimate=True, max_steps=100)
model = make_model()
model.compile(
    optimizer=dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[fit_rec], exact_update=True),
    loss="mse",
)
history = model.fit(dds, epochs=4, steps_per_epoch=100, verbose=0, callbacks=[fit_rec.keras_callback()])
fr = fit_rec.recording
print("kept updates:", len(fr), "| first:", fr.steps[:3].tolist(), "| last:", int(fr.steps[-1]))
print("dropped updates:", fr.dropped_steps.tolist())
print(f"fit's loss per epoch: {[round(v, 3) for v in history.history['loss']]}")

# %% [markdown]
# ## What recording costs
#
# Recording work runs inside the training step, so it costs step time.
# `python benchmarks/overhead.py` measures it against the plain tf-keras DTensor SGD step
# (the README's table has the numbers and their profile). On a 2-core CPU machine:
#
# - full values of parameter and velocity at every update of a 2048x2048 parameter: about
#   **1.2x** the plain step;
# - the same every 10 updates: about **1.05-1.1x**. Updates that are not recorded
#   (`every=k`) skip all recording work, so the larger `k`, the closer to 1x;
# - stats mode at every update: about **1.5x**, on that parameter and on the small sharded
#   MLP of this notebook (the reductions are extra passes over memory, and on tiny
#   tensors each extra op has a fixed cost per device).
#
# So for a long run: stats mode with `decimate=True` when you want the whole history's
# shape at a bounded size, `every=k` with `max_steps` when you want real values at a
# small cost, and full mode at every update for a short window you want to inspect closely.
# No timing runs in this notebook: its outputs stay the same from run to run.

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
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again. **Next:** the same recorder on a conv net and a transformer block.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording.
