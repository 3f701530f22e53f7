# %% [markdown]
# # Mesh layouts: how DTensor cuts a tensor over devices
#
# A DTensor **mesh** arranges devices in a grid with named dimensions, e.g.
# `batch=2 x model=4`. A **layout** gives one *sharding spec* per tensor dimension:
# either a mesh dimension name (cut the tensor dimension into that many equal pieces)
# or `unsharded` (every device holds it whole). The pieces the cuts make are the tensor's
# **blocks**: a block is one distinct slice of the tensor, the slice a device holds. A
# mesh dimension the layout does not use means **replication**: the devices along it
# hold copies of the same block. (The [glossary](../docs/glossary.md) defines these
# words; every tutorial uses them in its sense.)
#
# This notebook draws layouts on 1-, 2- and 3-D meshes, checks the pictures against
# the blocks DTensor really holds, shows that an optimizer's momentum slots share their
# parameter's layout, and draws a layout for a mesh we do not have.

# %%
import dtsgd_viz

mesh_1d = dtsgd_viz.make_mesh({"x": 8})  # first: creates the 8 virtual CPU devices
print(dtsgd_viz.mesh_spec(mesh_1d))

# %%
# %matplotlib inline
import numpy as np
from IPython.display import display
from tensorflow.experimental import dtensor


def show(fig):
    display(fig, include=["image/png"])  # the picture only: '<Figure ...>' says nothing


def variable(shape, specs, mesh, name):
    """A DTensor variable of the given shape, laid out by `specs` on `mesh`."""
    values = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    return dtsgd_viz.variable(values, dtensor.Layout(list(specs), mesh), name=name)


# %% [markdown]
# ## 1-D mesh: eight devices in a row
#
# A 4x16 matrix with layout `[unsharded, x]`: its rows are not cut, its 16 columns are
# cut into 8 blocks of 2, one per device. `plot_layout` accepts a live variable, and so
# does `layout_table`, which says the same thing as deterministic text.

# %%
a = variable((4, 16), ["unsharded", "x"], mesh_1d, "a")
print(dtsgd_viz.layout_table(a))

# %%
show(dtsgd_viz.plot_layout(a))

# %% [markdown]
# ## 2-D mesh: batch x model
#
# On a `batch=2 x model=4` mesh, an 8x8 matrix laid out `[batch, model]` is cut both
# ways: 8 distinct 4x2 blocks, one per device.

# %%
mesh_2d = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
b = variable((8, 8), ["batch", "model"], mesh_2d, "b")
show(dtsgd_viz.plot_layout(b))

# %% [markdown]
# ### Replication
#
# Lay the same matrix out `[unsharded, model]` and the `batch` dimension of the mesh is
# unused: the two devices of each mesh column (CPU:0 and CPU:4, CPU:1 and CPU:5, ...)
# hold **copies** of the same 8x2 block. Copies come from the mesh, not from the tensor:
# tensor dim 0 is simply *not sharded* (each block spans it whole), and it is the unused
# mesh dim `batch` that makes 2 copies of every block; the figure's title says so
# (`copied over batch`). Each device's copy of its block is its **shard**, and
# shards of one block held by several devices are **replicas** of it: here every block
# has 2 replicas. The table groups the replicas on one row; the figure's title counts
# them (4 distinct blocks, each on 2 devices, copied over `batch`), gives every block one
# colour and labels it with every device holding it, and the key under it colours each
# device by the block it holds: devices of one colour hold copies of one block.

# %%
c = variable((8, 8), ["unsharded", "model"], mesh_2d, "c")
print(dtsgd_viz.layout_table(c))
show(dtsgd_viz.plot_layout(c))

# %% [markdown]
# A fully replicated layout (`unsharded` everywhere) puts the whole tensor on every
# device: one block, 8 copies. That is how a bias or a scalar is usually laid out.

# %%
d = dtsgd_viz.variable(np.zeros(8, np.float32), dtensor.Layout.replicated(mesh_2d, 1), name="d")
print(dtsgd_viz.layout_table(d))

# %% [markdown]
# ### The pictures are what DTensor holds
#
# `dtensor.unpack` returns each device's local piece of a DTensor, its shard. For every
# device, the block the table names is exactly that piece (the values of `b` and `c` are
# 0, 1, 2, ... in row-major order, so any mix-up would show).

# %%
for var in (b, c):
    geometry = dtsgd_viz.shard_geometry(tuple(var.shape), dtsgd_viz.layout_of(var))
    pieces = dtsgd_viz.device_values(var)
    full = np.arange(np.prod(var.shape), dtype=np.float32).reshape(var.shape)  # what we put in
    same = all(np.array_equal(full[geometry.blocks[dev]], piece) for dev, piece in enumerate(pieces))
    print(f"{var.name.split(':')[0]}: {len(pieces)} devices, every piece matches its block: {same}")

# %% [markdown]
# ## 3-D mesh: x, y, z
#
# On a `2 x 2 x 2` mesh a rank-3 tensor can be cut along all three dimensions. Ranks
# 3 and 4 are drawn as small panels, one per index of the leading dimensions. With one
# copy per block the labels say it all; once a block has copies (next), the key under the
# panels shows where each device sits on the 3-D mesh.

# %%
mesh_3d = dtsgd_viz.make_mesh({"x": 2, "y": 2, "z": 2})
e = variable((2, 4, 4), ["x", "y", "z"], mesh_3d, "e")
print(dtsgd_viz.layout_table(e))
show(dtsgd_viz.plot_layout(e))

# %% [markdown]
# Leave `y` out of the layout and each block lives on two devices, the pair that differ
# only in their `y` coordinate.

# %%
f = variable((2, 4, 4), ["x", "unsharded", "z"], mesh_3d, "f")
print(dtsgd_viz.layout_table(f))
show(dtsgd_viz.plot_layout(f))

# %% [markdown]
# ## Optimizer slots share their parameter's layout
#
# An optimizer's **slot** is state it keeps per variable. Momentum SGD keeps one, the
# **velocity** (a running sum of past gradient steps that the parameter moves by;
# `03_nesterov_vs_momentum` writes the rule out). DTensor creates it with the
# parameter's layout, so each device updates its own block of the velocity with its own
# block of the gradient: the update needs no communication. `model_table` lists every
# variable of a model with its layout and, for the optimizer compiled into it, each
# slot's layout, flagging any that differ.
#
# The model is a small tf-keras MLP whose weights a `LayoutMap` shards over `model`.

# %%
import tf_keras

layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh_2d)
layout_map["d1.*kernel"] = dtensor.Layout(["unsharded", "model"], mesh_2d)
layout_map["d1.*bias"] = dtensor.Layout(["model"], mesh_2d)
layout_map["d2.*kernel"] = dtensor.Layout(["model", "unsharded"], mesh_2d)
layout_map["d2.*bias"] = dtensor.Layout.replicated(mesh_2d, 1)
with layout_map.scope():
    tf_keras.utils.set_random_seed(0)
    model = tf_keras.Sequential(
        [
            tf_keras.layers.Dense(16, activation="tanh", name="d1", input_shape=(4,)),
            tf_keras.layers.Dense(1, name="d2"),
        ]
    )

opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh_2d)
model.compile(optimizer=opt, loss="mse")
opt.build(model.trainable_variables)  # creates the velocity slots
print(dtsgd_viz.model_table(model, memory=True))

# %% [markdown]
# The first layer's kernel, `[unsharded, model]`: its 16 output columns are cut over the
# 4 `model` devices and copied over the 2 `batch` devices.

# %%
show(dtsgd_viz.plot_layout(model.layers[0].kernel, name="d1/kernel"))

# %% [markdown]
# Its velocity slot (the optimizer keeps them in `opt.momentums`, in the order of the
# variables) is cut into the very same blocks, on the very same devices:

# %%
print(dtsgd_viz.layout_table(opt.momentums[0], name="velocity of d1/kernel"))

# %% [markdown]
# ## Memory per device
#
# Because every slot shares its parameter's layout, each device holds its block of every
# parameter and, beside it, the same-sized block of its velocity. `memory_plan` adds that
# up per device (in mesh device order), from the layouts alone: the table prices each
# variable, `dtsgd_viz.plot_memory` stacks the bytes per device, slots hatched, and names the
# variables and the hatch in a legend; its title compares the fullest device with what
# every device would hold if nothing were sharded (the printed plan's last line).

# %%
memory = dtsgd_viz.memory_plan(model)
print(memory)
print(memory.bytes_per_device)

# %%
show(dtsgd_viz.plot_memory(memory))

# %% [markdown]
# ## A layout for a mesh you do not have
#
# Views also take plain value objects, `MeshSpec` and `LayoutSpec`, which need no
# devices and no TensorFlow: handy for planning. Here a 1024x512 weight on a
# hypothetical `data=4 x model=16` mesh of 64 devices, its rows cut over `model` and
# copied over `data`.

# %%
from dtsgd_viz import LayoutSpec, MeshSpec

plan = LayoutSpec(("model", "unsharded"), MeshSpec.create({"data": 4, "model": 16}))
print(f"each device would hold a {plan.shard_shape((1024, 512))} block")
print(dtsgd_viz.layout_table(plan, (1024, 512), name="W"))

# %%
show(dtsgd_viz.plot_layout(plan, (1024, 512), name="W"))

# %% [markdown]
# Sixteen blocks, four copies each, on 64 devices, and the picture still reads. Past
# nine blocks a palette would repeat, so each block is coloured by its mesh coordinate:
# the hue runs along `model` from red (`model=0`) through orange, olive, green and blue to
# purple (`model=15`), never wrapping round, and the lightness steps dark, mid, light
# from one block to the next, so neighbours differ in both. Each block lists its devices
# (`CPU:0,16,32,48`: the four `data` rows of one `model` column). The key
# is the mesh itself, each device in the colour of the block it holds: a column of one
# colour is one block's four copies.
#
# Cut the weight both ways, `[data, model]`, and all 64 devices hold a different block.
# Each block is again coloured by where its device sits on the mesh: the hue follows
# `model`, as above, the lightness `data` (dark `data=0` to light `data=3`; the text is
# white on the two dark rows, black on the light ones). Each block is labelled with
# its device's id, upright ("CPU:n" would fit only turned and small; the line over the
# picture says once what the numbers are); with one copy per block no key is needed. The
# tensor keeps one shape in every picture of this section: 1024 rows drawn about 1.4
# times as tall as 512 columns are wide (true to 2:1 would not leave the 16 columns room
# for their labels).

# %%
both = LayoutSpec(("data", "model"), plan.mesh)
show(dtsgd_viz.plot_layout(both, (1024, 512), name="W"))

# %% [markdown]
# The same plan priced: a float32 weight and its velocity, per device, on that mesh.

# %%
print(dtsgd_viz.memory_plan({"W": ((1024, 512), "float32", plan)}))

# %% [markdown]
# ## Trying layouts: `LayoutExplorer`
#
# `LayoutExplorer` does all of the above interactively: pick for each tensor dim a mesh
# dim or `unsharded`, and it redraws the blocks, the devices holding each, the copies
# and the bytes per device (the italic line over it: parameter and velocity). Hover a block
# for its devices, its slice of `W`, its replica group and its bytes; hover a device in
# the mesh for the block it holds. An impossible choice (a size the mesh dim does not
# divide, one mesh dim for two tensor dims) is explained in its place. The notebook
# computes every layout the dropdowns offer once, and your browser draws them, so the
# explorer works with no kernel too, on the documentation site. `explorer.specs` reads
# (and sets) the layout shown.
#
# The explorer below starts on the same 1024x512 weight and mesh with a layout not drawn
# above, `[unsharded, model]`: its 512 columns cut into 16 blocks of 1024x32 over
# `model`, each copied over `data` (4 replicas); each block's list of devices runs
# up its tall, narrow column. Pick `model` for dim 0 and `unsharded`
# for dim 1 to get the first picture of this section back, or `data` for dim 0 for the
# second.

# %%
# NBVAL_IGNORE_OUTPUT
explorer = dtsgd_viz.web.LayoutExplorer(
    (1024, 512), mesh={"data": 4, "model": 16}, name="W", specs=("unsharded", "model")
)
explorer

# %% [markdown]
# Behind the choices is a pure function, `layout_explorer_state` (one state and one
# change in, the next state out), which `dtsgd_viz.widgets.LayoutExplorer`, the kernel-drawn
# explorer that also takes a model or a recording, calls on each change. Here `model`
# for dim 0 too, the same mesh dim for both tensor dims, which DTensor refuses.

# %%
from dtsgd_viz.widgets import layout_explorer_state
from dtsgd_viz.widgets.layout_explorer import LayoutExplorerState

state = LayoutExplorerState.of((1024, 512), mesh={"data": 4, "model": 16}, name="W")
state = layout_explorer_state(state, {"name": "dim", "dim": 1, "new": "model"})
state = layout_explorer_state(state, {"name": "dim", "dim": 0, "new": "model"})
print(state.summary())

# %% [markdown]
# ## Where next
#
# The other tutorials, in order (the terms they use are defined in the
# [glossary](../docs/glossary.md)):
#
# - [01_quickstart](01_quickstart.ipynb): a mesh, a layout, the instrumented optimizer and a recording; the first
#   pictures (layout, velocity block by block, update paths).
# - [03_nesterov_vs_momentum](03_nesterov_vs_momentum.ipynb): the heavy-ball and Nesterov rules written out, their
#   paths, each mode's rate from theory, where each rule wins, `PhaseDiagram`, `CompareWidget`, `PathExplorer`.
#   **Next:** why momentum needs a velocity slot at all: the update rules, taken apart on a 2-D valley.
# - [04_sharded_model](04_sharded_model.ipynb): a tf-keras MLP sharded by a `LayoutMap`, recorded while it trains: the
#   all-reduce, each block's velocity, a probe's path, the stale-velocity hazard.
# - [05_recordings](05_recordings.ipynb): save a recording, load it without TensorFlow, explore it with `ShardExplorer`.
# - [06_long_runs](06_long_runs.ipynb): record long runs cheaply: stats mode, decimation, a ring of full values,
#   `model.fit`.
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording.
