# %% [markdown]
# # Quickstart: a DTensor SGD optimizer, shard by shard
#
# `dtsgd_viz` records what the real TensorFlow DTensor SGD optimizer
# (`tf_keras.dtensor.experimental.optimizers.SGD`) does on every device of a mesh,
# and draws it. In this notebook we
#
# 1. make a mesh of 8 virtual CPU devices,
# 2. lay a parameter out over it,
# 3. train it with the instrumented optimizer and get a **recording**,
# 4. draw the first pictures: the layout, the velocity shard by shard, and update paths.
#
# Everything runs on a laptop CPU: the 8 devices are slices of one processor. Each term is
# said in a sentence where it first appears; the [glossary](../docs/glossary.md) has them
# all in one place.

# %% [markdown]
# ## A mesh of 8 devices
#
# Call `make_mesh` first, before anything else touches TensorFlow: it splits the CPU
# into 8 logical devices, which TensorFlow only allows before it starts. (Importing
# `dtsgd_viz` first also keeps TensorFlow's C++ start-up chatter out of the notebook.)

# %%
import dtsgd_viz

mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
print(dtsgd_viz.mesh_spec(mesh))

# %% [markdown]
# Figures are plain matplotlib `Figure` objects: the views never print and never call
# `plt.show()`. `show` below displays one as a picture only (a figure's text form,
# `<Figure size ...>`, says nothing).

# %%
# %matplotlib inline
from IPython.display import display


def show(fig):
    display(fig, include=["image/png"])


# %% [markdown]
# ## A parameter laid out over the mesh
#
# A DTensor **layout** names, for each tensor dimension, the mesh dimension it is cut
# along (or `unsharded`). The 8x8 parameter `w` below is cut into 2 row blocks along
# `batch` and 4 column blocks along `model`: each device holds one 4x2 **block** (a
# block is one distinct slice of the tensor under its layout). A device's own copy of its
# block is its **shard**; with this layout no two devices hold the same block, so here
# each block has exactly one shard (`02_mesh_layouts` shows blocks held by several
# devices, as **replicas**). `layout_table` says so in text.

# %%
import numpy as np
import tensorflow as tf
from tensorflow.experimental import dtensor

from dtsgd_viz import surfaces

layout = dtensor.Layout(["batch", "model"], mesh)
w = dtsgd_viz.variable(np.zeros((8, 8), np.float32), layout, name="w")
print(dtsgd_viz.layout_table(w))

# %% [markdown]
# The loss is `sum(c * (w - 1)**2) / 2`, with a curvature `c` that is constant on each
# device's block but differs from block to block (from 0.05 to 1): flat blocks will
# crawl, steep ones will overshoot, so the blocks have different stories to tell.

# %%
c = surfaces.ShardedQuadratic().curvature  # (8, 8), one level per device block
C = dtsgd_viz.shard(c, layout)  # laid out like w
print("curvature per block (mesh rows: batch, columns: model):")
print(np.array2string(c[::4, ::2], precision=3))

# %% [markdown]
# ## The instrumented optimizer
#
# `dtsgd_viz.SGD` *is* the tf-keras DTensor SGD (a subclass); `hooks=[rec]` lets a
# `Recorder` observe every **update** (one call of `apply_gradients`: every variable
# moves once) without changing it. Inside a `tf.function` the recorder stages each update
# on the devices; `rec.loop(n)` copies them to the host as it goes.
#
# Momentum SGD keeps, beside each parameter, a **velocity**: a running sum of the past
# gradient steps `-lr*g`, of which each update keeps the fraction `momentum` (0.9 here)
# and adds the new one. The parameter moves by the velocity, so it gathers speed along
# directions the gradient keeps pointing to: that is **heavy-ball** (or classical)
# momentum. Nesterov momentum (`nesterov=True`) in effect takes the gradient at a
# **look-ahead** point, where the velocity is about to carry the parameter, instead of
# where the parameter is. `03_nesterov_vs_momentum` writes both rules out. We train with
# Nesterov momentum for 60 updates, one per call of `train_step`.

# %%
rec = dtsgd_viz.Recorder()  # records param, velocity and grad
opt = dtsgd_viz.SGD(0.5, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec])


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(C * (w - 1.0) ** 2 / 2)
    opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]), loss=loss)


for _ in rec.loop(60):
    train_step()

r = rec.recording
r

# %% [markdown]
# ## The recording is plain numpy
#
# A `Recording` holds each device's shard of three **kinds** of tensor at every update:
# the parameter after the update (`param`), its velocity after it (`velocity`) and the
# gradient the update applied (`grad`), plus the loss. The velocity is the optimizer's
# **slot** for `w` (state it keeps per variable), laid out like `w`, so it has the same
# blocks. Put the blocks back together with `global_values`, or keep the shards apart
# with `shard_values` (one row per device, in mesh order).

# %%
print("global velocity:", r.global_values("w", "velocity").shape)  # (steps, 8, 8)
print("per shard:      ", r.shard_values("w", "velocity").shape)  # (steps, devices, 4, 2)
for k in (0, 9, 29, 59):  # r.loss[i] is what update i + 1's forward pass saw: the loss after i updates
    print(f"loss after {k:2d} updates: {r.loss[k]:.3e}")

# %% [markdown]
# `dtsgd_viz.reference` holds the update rules in numpy, exactly as tf-keras computes
# them. `check_recording` replays every recorded update and lists the updates that do not
# follow the rule: none here.

# %%
dtsgd_viz.reference.check_recording(r)

# %% [markdown]
# ## First pictures
#
# **The layout.** Each block of `w`, coloured by the device that holds it and labelled
# with that device; the ticks mark the block edges, so block CPU:5 covers rows 4:8 and
# columns 2:4 (`layout_table` lists every slice), and the axis labels name the mesh dim
# that cuts each tensor dim.

# %%
show(dtsgd_viz.plot_layout(r, name="w"))

# %% [markdown]
# **The velocity, shard by shard.** Left: the velocity after update 10 (`step=10` means
# update 10: updates count from 1, as `recording.steps` does), each device's
# block outlined. Right: each block's velocity norm over the whole run, one line per
# block in its colour, named at its end (a dot on each line marks update 10). The steep
# blocks (bottom row, CPU:4-7) swing and die out fast; the flat ones (CPU:0-1) keep a
# small velocity for much longer; CPU:7's falls by exactly 0.9 per update once its
# gradient is down at float32 round-off. The title says how far apart the blocks' norms
# are at update 10 (largest over smallest) and which block is largest and which smallest;
# the right panel's title says how far the median block's norm (`np.median` over the
# blocks, the black line) falls from the first update to the last. The functions that write
# the two titles print them under the figure.

# %%
show(dtsgd_viz.plot_shards(r, "w", "velocity", step=10))
from dtsgd_viz.views.shards.findings import norm_panel_text, spread_text
from dtsgd_viz.views.shards.geometry import block_norm_lines, device_label

updates, lines = block_norm_lines(r, "w")  # each block's velocity norm at each update
names = [device_label([f"CPU:{d}" for d in group]) for group in r.geometry("w").replica_groups]
print("title:", spread_text(lines[list(updates).index(10)], names))
print("panel:", norm_panel_text(r, "w"))

# %% [markdown]
# **Why the blocks decay at different rates.** On a quadratic, momentum's error on a
# block (its distance from the minimum) shrinks by about the same factor at every
# update, once the first few updates are past. That factor is the block's **rate** (0.95:
# the error keeps 95% of itself per update), and it depends only on `lr * h` (h: the
# block's curvature) and the momentum; `03_nesterov_vs_momentum` derives it.
# `plot_block_rates` puts every block on both rules' curves (left) beside the rate
# measured on the recording (stars, within 0.0001 of theory), and draws each block's error
# (right, each block with its curvature in the key; the grey band at the bottom is
# float32 round-off: from update 37 the steepest block's error is held at its top edge, the round-off level): under
# Nesterov the steep blocks sit where its curve dips and converge fastest,
# the flat ones where it is near 0.95; heavy-ball momentum would hold every block at 0.95.
# The dotted lines are each rule's stability limit: past it a block's error grows.
# `widgets.RateExplorer(r, surface)` adds a learning-rate slider that moves every block
# along the curves.

# %%
show(dtsgd_viz.plot_block_rates(r, surfaces.ShardedQuadratic()))

# %% [markdown]
# **Update paths.** `dtsgd_viz.run` runs the real optimizer on a 2-D surface once per
# configuration, from the same start, and returns a recording for each. Here: an
# ill-conditioned valley (condition number 10, tilted by 30 degrees), heavy-ball
# momentum against Nesterov, same learning rate and momentum.

# %%
valley = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)
runs = dtsgd_viz.run(
    valley,
    {
        "momentum": dict(learning_rate=0.05, momentum=0.9),
        "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
    },
    steps=40,
)
print(dtsgd_viz.findings(runs, valley, step=4))

# %% [markdown]
# `findings` prints the numbers the figures below state: each run's loss after k
# updates (the surface at the recorded parameters: after 40 updates, and the mean over
# the last 8), the ratio the headline gives (of those means: heavy-ball momentum's loss
# saw-tooths by many times from one update to the next, so one point of it, even the last,
# would say little), where the paths are furthest apart, and update 4 taken apart.
#
# `plot_paths` draws both paths on the loss contours, with the loss after k updates
# beside them (the shaded updates are the ones the headline's means are over). Each
# whole path is drawn in its rule's line (the wider under the narrower, so where paths
# coincide each shows), and a ring on each marks where the run is after the update `step`
# names (`step=4` is update 4; in the loss panel the same ring on a grey line at k = 4,
# the loss after it); the legend under the panels names the runs, the
# start, the minimum and the rings. Its
# terms are too short to see at this scale, so `plot_update(runs, valley, step=4)` takes
# it apart up close: the momentum term (heavy ball's `mu*v`, the velocity carried over
# from the update before; for Nesterov its look-ahead term `mu*v_new`, the new velocity
# scaled by the momentum) and the gradient term `-lr*g`, tip to tail. Heavy-ball momentum
# keeps bouncing from wall to wall of the valley; Nesterov heads into the minimum and its
# loss falls much faster.

# %%
show(dtsgd_viz.plot_paths(runs, valley, step=4))

# %% [markdown]
# `plot_update` draws the same update up close, one panel per run, both on one zoom and
# every arrow at its true length, so the lengths compare by eye (the bars under them give
# each term's length, as `findings` printed them above; μ·v in the run's colour, −lr·g in
# its tint, and the thin line is the step they add up to; a term that turns back along the one
# before, as momentum's −lr·g here, is drawn just beside it, parallel and at its length). The small white disk is the
# parameter before the update, and the gradient is taken there for both rules: tf-keras
# stores Nesterov's look-ahead point as the parameter, so its "look ahead" is already in
# the disk; the open ring is where the update ends, as on the paths. There heavy-ball momentum's
# term carries the point further across the valley and the gradient can only pull part of
# it back; Nesterov's new velocity has already turned, so the two updates point far apart.

# %%
print("\n".join(dtsgd_viz.findings(runs, valley, step=4).update_lines()))  # the figure's headline and bars
show(dtsgd_viz.plot_update(runs, valley, step=4))

# %% [markdown]
# ## Where next
#
# The other tutorials, in order (the terms they use are defined in the
# [glossary](../docs/glossary.md)):
#
# - [02_mesh_layouts](02_mesh_layouts.ipynb): how layouts cut tensors into blocks on 1-, 2- and 3-D meshes, replicas,
#   the velocity slot's layout, memory per device, `LayoutExplorer`. **Next:** how a layout makes blocks, shards and
#   replicas, the words every later tutorial uses.
# - [03_nesterov_vs_momentum](03_nesterov_vs_momentum.ipynb): the heavy-ball and Nesterov rules written out, their
#   paths, each mode's rate from theory, where each rule wins, `PhaseDiagram`, `CompareWidget`, `PathExplorer`.
# - [04_sharded_model](04_sharded_model.ipynb): a tf-keras MLP sharded by a `LayoutMap`, recorded while it trains: the
#   all-reduce, each block's velocity, a probe's path, the stale-velocity hazard.
# - [05_recordings](05_recordings.ipynb): save a recording, load it without TensorFlow, explore it with `ShardExplorer`.
# - [06_long_runs](06_long_runs.ipynb): record long runs cheaply: stats mode, decimation, a ring of full values,
#   `model.fit`.
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording.
