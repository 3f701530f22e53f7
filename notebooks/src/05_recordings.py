# %% [markdown]
# # Recordings: save, reload without TensorFlow, explore
#
# A recording is plain data: numpy arrays and small frozen value objects (the mesh, each
# variable's layout). It saves to a portable `.npz` file (no pickle), and loading it
# needs neither TensorFlow nor the devices it was recorded on. Record on a machine with
# a mesh; look at it anywhere. (The words block, shard, kind and update are used in the
# sense of the [glossary](../docs/glossary.md).)

# %%
import dtsgd_viz

mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})  # first: creates 8 CPU devices

# %%
# %matplotlib inline
import os
import subprocess
import sys
import tempfile

import numpy as np
import tensorflow as tf
import tf_keras
from IPython.display import Image, display
from tensorflow.experimental import dtensor


def show(fig):
    display(fig, include=["image/png"])  # the picture only: '<Figure ...>' says nothing


# %% [markdown]
# ## Something to record
#
# The sharded MLP of `04_sharded_model`, trained for 40 updates with Nesterov momentum:
# four variables, each laid out differently on the mesh.

# %%
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

rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype(np.float32)
y = np.sin(x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
xb, yb = dtsgd_viz.shard(x, data_layout), dtsgd_viz.shard(y, data_layout)

rec = dtsgd_viz.Recorder()
opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=True)


@tf.function
def train_step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(xb) - yb) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    opt.apply_gradients(zip(grads, model.trainable_variables), loss=loss)


for _ in rec.loop(40):
    train_step()
recording = rec.recording
recording

# %% [markdown]
# ## Save
#
# `save` writes one `.npz` file: a JSON header (mesh, layouts, hyperparameters) and one
# array per variable and kind (`param`, `velocity` or `grad`). Each block is stored once,
# however many replicas it has: `d2/bias` lives on all 8 devices but takes one copy per
# update.

# %%
folder = tempfile.mkdtemp()
path = recording.save(os.path.join(folder, "mlp_nesterov.npz"))
print(f"{len(recording)} updates, {len(recording.variables)} variables, {recording.nbytes / 1024:.1f} KiB of arrays")
print("blocks stored for d2/bias per update:", recording.record("d2/bias").blocks["param"].shape[1])

# %% [markdown]
# ## Load it back, without TensorFlow
#
# To prove the point, load the file in a **fresh Python process** that never imports
# TensorFlow: it reads the recording, checks every update against the numpy reference
# of the SGD rules, draws `plot_shards` of `d1/kernel`'s velocity after the last update
# (update 40) to a PNG (cropped and padded as the notebook shows a figure), and reports
# whether TensorFlow got imported along the way.

# %%
png = os.path.join(folder, "shards.png")
code = f"""
import sys
import dtsgd_viz
from dtsgd_viz import reference

r = dtsgd_viz.load_recording({path!r})
print(r)
print("updates off the rule:", {{k: len(v) for k, v in reference.check_recording(r).items()}})
dtsgd_viz.plot_shards(r, "d1/kernel", "velocity", step=-1).savefig({png!r}, bbox_inches="tight", pad_inches=0.1)
print("tensorflow imported:", "tensorflow" in sys.modules)
"""
result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
print(result.stdout)

# %% [markdown]
# Here is the picture that process drew, from the file alone:

# %%
display(Image(filename=png), include=["image/png"])

# %% [markdown]
# Back in this notebook, `load_recording` gives a recording equal to the one in memory,
# array for array.

# %%
loaded = dtsgd_viz.load_recording(path)
same = all(
    np.array_equal(loaded.global_values(name, kind), recording.global_values(name, kind))
    for name in recording.variables
    for kind in recording.kinds
)
print("same values:", same, "| same loss:", np.array_equal(loaded.loss, recording.loss))
print("same layouts:", all(loaded.layout(n) == recording.layout(n) for n in recording.variables))

# %% [markdown]
# ## Explore it with a widget
#
# `ShardExplorer` shows each variable's values block by block, as `plot_shards` does, with
# a variable picker, a kind picker (parameter, velocity, gradient), an update slider
# with Play, and a checkbox that holds the colour scale fixed over the whole run (on by
# default, so playing shows the values decay; untick it to see each update on its own
# scale). Beside it, each block's norm over the run, with the update shown marked. Hover
# a block for its devices, its slice of the tensor, its replica group, its bytes and the
# value under the pointer. The notebook puts the values in the explorer once and your
# browser draws them, so it works with no kernel too: on the documentation site, every
# control responds. The still picture kept for readers that run no scripts shows the
# update the slider is at, on that update's own colour scale; its caption says which.

# %%
# NBVAL_IGNORE_OUTPUT
explorer = dtsgd_viz.web.ShardExplorer(loaded)
explorer

# %% [markdown]
# Its traits are synced both ways, so code can move it too: pick the output layer's
# kernel, show its gradient and go to update 10 (the update shown, counted from 1 as
# `recording.steps` does); the explorer above follows.

# %%
explorer.variable = "d2/kernel"
explorer.kind = "grad"
explorer.update = 10
print(f"showing {explorer.kind} of {explorer.variable!r} at update {explorer.update}")

# %% [markdown]
# What the recording cannot show is refused, with a message that says what is allowed
# (and the explorer keeps showing what it showed):

# %%
import traitlets

try:
    explorer.kind = "momentum"
except traitlets.TraitError as error:
    print(error)

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
# - [06_long_runs](06_long_runs.ipynb): record long runs cheaply: stats mode, decimation, a ring of full values,
#   `model.fit`. **Next:** when a run is too long to record in full.
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording.
