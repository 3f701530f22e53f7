# %% [markdown]
# # A sharded tf-keras model, recorded while it trains
#
# Real models are not 2-D toy surfaces. Here a small tf-keras MLP has its weights
# sharded over a `batch=2 x model=4` mesh by a `LayoutMap`, its data split over
# `batch`, and it trains with the instrumented DTensor SGD (Nesterov momentum). We
# look at each device's block of the velocity over training, draw the trajectories of
# momentum and Nesterov on the principal plane of the last layer's weights, and meet a
# DTensor hazard that the recording makes visible.

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
# ## Data, split over `batch`
#
# 256 points in 4-D and a smooth nonlinear target. The data is laid out
# `[batch, unsharded]`: each half of the mesh sees half of the examples, as in data
# parallel training (the gradients are summed across `batch` by DTensor).

# %%
rng = np.random.default_rng(0)
x = rng.normal(size=(256, 4)).astype(np.float32)
y = np.sin(x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]

data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
xb, yb = dtsgd_viz.shard(x, data_layout), dtsgd_viz.shard(y, data_layout)
print(dtsgd_viz.layout_table(xb, name="x"))

# %% [markdown]
# ## The model, sharded by a `LayoutMap`
#
# A `LayoutMap` maps variable names (regular expressions) to layouts; layers created
# in its scope get their weights laid out accordingly. The hidden layer's 16 units are
# cut over `model` (4 per device), as is the output layer's kernel; the output bias is
# replicated. `model_table` lists the result.


# %%
def make_model(sharded=True):
    layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    if sharded:
        layout_map["d1.*kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
        layout_map["d1.*bias"] = dtensor.Layout(["model"], mesh)
        layout_map["d2.*kernel"] = dtensor.Layout(["model", "unsharded"], mesh)
    else:  # data parallel: every weight whole on every device
        layout_map["d1.*kernel"] = dtensor.Layout.replicated(mesh, 2)
        layout_map["d1.*bias"] = dtensor.Layout.replicated(mesh, 1)
        layout_map["d2.*kernel"] = dtensor.Layout.replicated(mesh, 2)
    layout_map["d2.*bias"] = dtensor.Layout.replicated(mesh, 1)
    with layout_map.scope():
        tf_keras.utils.set_random_seed(0)  # the same initial weights every time
        return tf_keras.Sequential(
            [
                tf_keras.layers.Dense(16, activation="tanh", name="d1", input_shape=(4,)),
                tf_keras.layers.Dense(1, name="d2"),
            ]
        )


print(dtsgd_viz.model_table(make_model()))

# %% [markdown]
# ## Training, recorded
#
# A custom training loop in a `tf.function`, with a `Recorder` hooked into the
# optimizer. **For training, pass `exact_update=True`**: it makes the update follow the
# documented rule inside a DTensor `tf.function`. The default computes exactly what
# tf-keras computes, and the end of this notebook shows what that does to this model.


# %%
def train(steps, **sgd):
    model = make_model()
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(mesh=mesh, hooks=[rec], **sgd)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables), loss=loss)

    for _ in rec.loop(steps):
        train_step()
    return model, rec.recording


model, r = train(150, learning_rate=0.05, momentum=0.9, nesterov=True, exact_update=True)
for k in (0, 9, 49, 149):  # r.loss[i] is what update i + 1's forward pass saw: the error after i updates
    print(f"mean squared error after {k:3d} updates: {r.loss[k]:.4f}")

# %% [markdown]
# Every update follows the documented Nesterov rule, for all four variables:

# %%
{name: len(steps) for name, steps in dtsgd_viz.reference.check_recording(r).items()}

# %% [markdown]
# ## What each update moves between devices: the all-reduce
#
# The data is split over `batch`, so each half of the mesh computes the gradient of its
# own examples only: a partial sum. Before the update, DTensor sums the halves, an
# **all-reduce** over `batch`: the devices `batch=0, model=k` and `batch=1, model=k`
# exchange their blocks of every gradient. That is the one truly distributed part of an
# SGD update on a mesh. Sharding weights over `model` changes its price: each device holds, and
# so sends, a quarter of a sharded gradient, but the layer's activations are now split
# too, and DTensor adds collectives over `model` to put them back together.
#
# `dtsgd_viz.communication(step)` lists the collectives in the program DTensor compiled
# for the training step function `step` (it runs it once if it was never compiled, and
# puts every variable back); `dtsgd_viz.communication_plan(model)` predicts the gradient all-reduces from the
# layouts alone, with no devices. Here are both, for the model above and for its
# data-parallel twin (every weight replicated).


# %%
def step_of(model, nesterov=True):
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=nesterov, mesh=mesh, exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables), loss=loss)

    return step


traffic = {}
for label, sharded in (("data parallel", False), ("kernels sharded over model", True)):
    twin = make_model(sharded)
    report = dtsgd_viz.communication(step_of(twin))
    plan = dtsgd_viz.communication_plan(twin)
    traffic[label] = (twin, report, plan)
    print(f"{label}: measured gradient all-reduces differ from the plan in", len(report.compare(plan)), "variables")

# %% [markdown]
# Measured and predicted agree exactly. The mesh, with each all-reduce's groups drawn
# (the devices in one shaded box reduce together: a box is one group, with no order
# among its members), and under each panel what its bytes serve, for the
# data-parallel model:

# %%
show(dtsgd_viz.plot_communication(traffic["data parallel"][1]))

# %% [markdown]
# and for the model-sharded one, where activation collectives along `model` appear (the
# all-reduce of the output layer's partial sums: its kernel's rows are sharded over `model`,
# so each device sums over its 4 hidden units only; a prediction from layouts alone cannot
# see it, only `dtsgd_viz.communication(step)` can):

# %%
show(dtsgd_viz.plot_communication(traffic["kernels sharded over model"][1]))

# %% [markdown]
# Side by side, per device and per update (bytes each device contributes):


# %%
def nbytes(n):  # in bytes, as the figures above write them
    return f"{int(n)} B"


print(f"{'':28}{'memory':>12}{'gradients':>12}{'(predicted)':>13}{'the rest':>12}")
for label, (twin, report, plan) in traffic.items():
    memory = dtsgd_viz.memory_plan(twin, momentum=True).bytes_per_device.max()
    grads = sum(report.totals("gradient").values())
    rest = sum(c.bytes_per_device for c in report.extra if c.mesh_dims)
    print(f"{label:28}{nbytes(memory):>12}{nbytes(grads):>12}{nbytes(plan.bytes_per_device):>13}{nbytes(rest):>12}")

# %% [markdown]
# Sharding the kernels over `model` cuts memory and gradient traffic per device; the
# price is the activation traffic in the last column, which no layout table shows and
# the compiled program does: what it serves, collective by collective:

# %%
for c in traffic["kernels sharded over model"][1].extra:
    print(f"{c.kind:11} along {'x'.join(c.mesh_dims) or '-':6} {c.bytes_per_device:6d} B  {c.what}")

# %% [markdown]
# ## One update on every device, in order
#
# Each device runs the same phases of an update: the collectives its forward and
# backward passes need (here the activation all-reduce over `model`), its local
# gradient, the all-reduces that sum the gradient (each collective with the bytes a
# device contributes, in the colour of the mesh dim it runs along, as in the mesh
# pictures above; under each column, how many groups of how many devices take part),
# then its velocity and its parameter, both local. Nesterov's look-ahead is part of the
# local velocity and parameter arithmetic, so it should add no communication. Below, both rules'
# compiled steps for the sharded model are compared, and the figure draws one of them:

# %%
rule_reports = {
    "momentum": dtsgd_viz.communication(step_of(make_model(), nesterov=False)),
    "nesterov": dtsgd_viz.communication(step_of(make_model(), nesterov=True)),
}
for name, report in rule_reports.items():
    timeline = dtsgd_viz.update_timeline(report)
    print(f"{name}: {timeline.bytes_per_device} B per device per update")
    for phase in timeline.phases:
        print(f"  {phase.name:36} {phase.bytes_per_device:6d} B  groups {list(phase.groups)}")
print(dtsgd_viz.timeline_finding(rule_reports))

# %%
show(dtsgd_viz.plot_timeline(rule_reports))

# %% [markdown]
# The boxes are an order, not measured time. The two compiled programs list the same
# collectives, with the same groups and bytes (`timeline_finding` compares them collective by collective),
# so the figure draws momentum's step only, as its second line says, and its title says
# Nesterov's is the same: the look-ahead costs arithmetic, not traffic.

# %% [markdown]
# ## Each block's velocity over training
#
# The hidden layer's kernel `d1/kernel` is 4x16, cut into four 4x4 column blocks over
# `model` and copied over `batch`. Left: its velocity after update 20 (`step=20` is
# optimizer update 20, as `r.steps` counts), each block outlined and tagged with both
# devices holding it, the tag in the block's colour. Right: each block's velocity norm over all
# 150 updates, one line per block in its tag's colour (log scale), a dot at the update shown. The two replicas of a
# block (its shards on CPU:0 and CPU:4, ...) are one line: they always agree (a diamond would mark an
# update where they did not). The four blocks, holding different hidden units, move at
# different paces; the vertical line is the update shown on the left.

# %%
show(dtsgd_viz.plot_shards(r, "d1/kernel", "velocity", step=20))

# %% [markdown]
# ## Parameter, velocity and gradient of one update
#
# `plot_update_shards` puts the three tensors of update 20 one above the other with the same
# block outlines. The velocity slot is cut into exactly the parameter's blocks, on the
# same devices: DTensor creates it from the parameter, so each device updates its block
# with no communication. The gradient arrives in that layout too. Each `batch` device
# computed it from its half of the examples; DTensor summed the two halves across
# `batch`, so both copies of a block hold the same reduced gradient, the one the update
# used. The title compares their largest magnitudes (|value|, the colour bars' limits): the
# velocity and the gradient are far smaller than the parameter they move. The settings
# line names the layout and how many replicas each block has (one per `batch` device).

# %%
show(dtsgd_viz.plot_update_shards(r, "d1/kernel", step=20))

# %% [markdown]
# The same numbers as text: each shard's velocity norm after a few updates (one column
# per device, in mesh order).

# %%
norms = r.shard_stats("d1/kernel", "velocity")[..., 0]  # (steps, devices): L2 norms
print("update  " + "  ".join(f"{d.split('device:')[-1]:>6}" for d in r.shard_devices("d1/kernel")))
for step in (1, 5, 20, 50, 150):
    print(f"{step:6d}  " + "  ".join(f"{v:6.4f}" for v in norms[step - 1]))

# %% [markdown]
# ## A trajectory on its principal plane
#
# A model has no 2-D loss surface to draw. Its last layer comes close, though: with the
# hidden layer fixed, the loss is an exact quadratic bowl in the 16 weights of
# `d2/kernel`. So we take the trained model, reset its output kernel to zero and fit it
# alone (a *linear probe* on the learnt features), once with heavy-ball momentum and
# once with Nesterov, from the same start. The kernel stays sharded over `model`.


# %%
def fit_last_layer(steps, **sgd):
    kernel = model.layers[1].kernel
    kernel.assign(dtsgd_viz.shard(np.zeros((16, 1), np.float32), kernel.layout))  # same start
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(mesh=mesh, hooks=[rec], exact_update=True, **sgd)

    @tf.function
    def probe_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, [kernel]), [kernel]), loss=loss)

    for _ in rec.loop(steps):
        probe_step()
    return rec.recording


probes = {
    "momentum": fit_last_layer(60, learning_rate=0.3, momentum=0.9),
    "nesterov": fit_last_layer(60, learning_rate=0.3, momentum=0.9, nesterov=True),
}
print(dtsgd_viz.findings(probes))  # the recorded loss: after k = 0..59 updates

# %% [markdown]
# To draw the bowl, `plot_paths` needs the loss in numpy and its minimum: anything with
# `shape`, `value_np` and `minimum` will do. The features come from the trained hidden
# layer; least squares gives the bottom of the bowl.

# %%
trained = {name: r.global_values(name, "param")[-1].astype(np.float64) for name in r.variables}
features = np.tanh(x @ trained["d1/kernel"] + trained["d1/bias"])  # (256, 16)


class LastLayerLoss:
    """The model's mean squared error as a function of d2/kernel alone."""

    shape = (16, 1)
    label = "last layer's loss (hidden layer fixed)"

    def value_np(self, w):  # w: (..., 16, 1) -> (...)
        pred = np.einsum("nf,...fo->...no", features, w) + trained["d2/bias"]
        return np.mean((pred - y) ** 2, axis=(-2, -1))

    @property
    def minimum(self):  # least squares: the bowl's bottom
        w, *_ = np.linalg.lstsq(features, y - trained["d2/bias"], rcond=None)
        return w[None]


bowl = LastLayerLoss()
curvature = np.linalg.eigvalsh(2 * features.T @ features / len(x))
print(
    f"bowl bottom: loss {bowl.value_np(bowl.minimum[0]):.4f}; curvature from {curvature[0]:.2g} to {curvature[-1]:.2g}"
)
print(dtsgd_viz.findings(probes, bowl, step=20))  # what plot_paths and plot_update state below

# %% [markdown]
# `plot_paths` projects the 16-number paths on the plane of their top two principal
# directions and evaluates the bowl on that plane, so the contours under the paths are
# real. Both runs head down the bowl's long valley; heavy-ball momentum swings further
# past its floor before turning back (the bump in its loss around update 15), while
# Nesterov's look-ahead turns earlier. Their paths are furthest apart around update 20 and end
# level. `step=20` rings each run where it is after update 20, where the runs are
# furthest apart, on its whole path; at this scale update 20 itself is too short to draw as arrows
# (the title says "marked"), so `plot_update` below takes it apart. Neither run reaches the bottom (the star): along
# the flattest directions the curvature is 2e-4, and those take thousands of updates.
# The open star is the bowl's bottom projected onto the plane; the bottom lies off the plane,
# so the lowest contour on the plane is somewhere else. The plane is drawn at equal
# aspect, so its distances and angles are the parameters' own. The numbers the headlines of
# `plot_paths` and `plot_update` state are the ones `findings` printed above.

# %%
show(dtsgd_viz.plot_paths(probes, bowl, step=20))

# %% [markdown]
# `plot_update` takes update 20 apart, one panel per run, on the same plane: heavy-ball
# momentum's step is the longer one (its title says by how much, and how far the two
# steps' directions part, both measured in all 16 parameters; the bars give the terms' lengths
# there too). The arrows are their projection on the plane, which can shorten a step and close an
# angle: here the two steps look almost parallel and alike on the plane, while in all 16 parameters
# they are 1.2× apart in length and 19° in direction. In both runs the momentum term is several
# times the gradient term, so it is the velocity, not this update's gradient, that carries each run on.

# %%
show(dtsgd_viz.plot_update(probes, bowl, step=20))

# %% [markdown]
# ## Block by block
#
# The probe's kernel is cut over `model`: each device of a `model` column holds four of
# the 16 rows, and the two devices of a column (one per `batch` index) hold the same rows.
# `block_errors` measures, for each block and after k = 0..60 updates, how far the
# block is from the same rows of the bowl's bottom, `||w_k[rows] - minimum[rows]||`
# (without a target it uses the block's recorded gradient norm instead). It also says
# which devices hold each block, as the layout places them.

# %%
blocks = dtsgd_viz.block_errors(probes, "d2/kernel", bowl.minimum[0])
for b in range(blocks.num_blocks):
    print(f"{blocks.block_name(b):>10} on {', '.join(blocks.device_names[b])}")
print("\nerror after k updates:")
print(" " * 14 + "".join(f"{blocks.block_name(b):>12}" for b in range(blocks.num_blocks)))
for name in blocks.runs:
    for k in (0, 20, 40, 60):
        print(f"{name:>9} {k:3d} " + "".join(f"{e:12.3f}" for e in blocks.errors[name][k]))
print(dtsgd_viz.blocks_finding(blocks))  # the figure's title

# %% [markdown]
# `plot_blocks` draws one panel per block, at its first device's place on the mesh
# (`model` across), with both runs' error on that block: heavy-ball momentum dashed,
# Nesterov solid, on one log scale for all panels so the blocks compare; each title names
# the devices holding the block (CPU:0,4: the `batch` row below holds copies, so it is
# not drawn again). The y axis, "distance to the target", is that distance to the target
# passed, here the bowl's bottom (`bowl.minimum`).
# Some blocks come much nearer the bottom than others (the table above); block by block
# the two rules end level: Nesterov's look-ahead changes the route, not where the probe
# is after 60 updates. The title's numbers are those `blocks_finding` printed above.

# %%
show(dtsgd_viz.plot_blocks(probes, "d2/kernel", bowl.minimum[0]))

# %% [markdown]
# ## A hazard the recording reveals: the stale velocity
#
# Train the same model with `dtsgd_viz.SGD`'s default, which computes exactly what
# tf-keras' SGD computes. The recorder checks the first updates it records against the
# rule, and warns. (The hazard is a race between the devices: which updates, and which
# copies of a replicated block, see the old velocity can change from run to run, so the
# numbers below may differ when you run it; nbval does not compare them.)

# %%
# NBVAL_IGNORE_OUTPUT
import warnings

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    _, stale = train(10, learning_rate=0.05, momentum=0.9, nesterov=True)
print(*(str(w.message) for w in caught), sep="\n")

# %% [markdown]
# `check_recording` replays every update and says how far each one is from the rule, as a
# fraction of the update's own size:

# %%
# NBVAL_IGNORE_OUTPUT
print(dtsgd_viz.reference.check_recording(stale))

# %% [markdown]
# Here three of the four variables deviate at every update. Inside a `tf.function`, tf-keras'
# SGD assigns the new velocity to its slot and then reads the slot again to move the
# parameter; with a `LayoutMap` model on batch-sharded data, DTensor's graph passes let
# that read see the **old** velocity (control dependencies do not help). The slot itself
# is right, but the parameter moves with the previous update's velocity. The recording
# shows it exactly:

# %%
# NBVAL_IGNORE_OUTPUT
name, lr, mu = "d1/kernel", 0.05, 0.9
p, v, g = (stale.global_values(name, kind).astype(np.float64) for kind in ("param", "velocity", "grad"))
p_prev = np.concatenate([stale.initial(name)[None], p[:-1]])
v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
print("slot follows the rule:        ", np.allclose(v, -lr * g + mu * v_prev, atol=1e-6))
print("parameter used the new v:     ", np.allclose(p, p_prev - lr * g + mu * v, atol=1e-6))
print("parameter used the previous v:", np.allclose(p, p_prev - lr * g + mu * v_prev, atol=1e-6))

# %% [markdown]
# That check is on the whole tensor. Each device moves its own shard, so the hazard can
# hit some devices and not others: `dtsgd_viz.stale_hits(recording, variable)` compares,
# for every update and every device, the shard's recorded move with the move the new
# velocity makes (the rule: `p_prev - lr*g + mu*v`) and with the one the previous
# velocity makes (`... + mu*v_prev`), and says which it was: `rule`, `stale`, `neither`,
# or `cannot tell` where the two moves are too close to tell apart (a velocity that did
# not change). Here it is for every variable of the default run and of the same training
# with `exact_update=True`:

# %%
# NBVAL_IGNORE_OUTPUT
_, exact = train(10, learning_rate=0.05, momentum=0.9, nesterov=True, exact_update=True)
runs = {"default": stale, "exact_update=True": exact}
for var in stale.variables:
    print(f"{var:10}", *(f"{label}: {dtsgd_viz.stale_hits(rec, var).counts}" for label, rec in runs.items()), sep="  ")
print("copies of a block disagreed at updates", stale.replica_mismatch.tolist())
print(dtsgd_viz.stale_finding(dtsgd_viz.stale_grid(runs)))  # the figure's title

# %% [markdown]
# `plot_stale` draws the same classification as a grid per run: updates across, one row
# per device, the rows of a variable grouped by the block they hold (a block's slice is
# named at its first device; its copies on the other `batch` row follow), variables
# one under the other. A wine-red cell is a shard that moved with the previous velocity.
# The recording keeps one copy of a replicated block (its first device's); where the
# copies disagreed (`replica_mismatch`, printed above) the other copies' cells are grey,
# `cannot tell`: what they moved with was not recorded. The key lists only the classes
# some cell has.

# %%
# NBVAL_IGNORE_OUTPUT
show(dtsgd_viz.plot_stale(runs))

# %% [markdown]
# Eager updates and single-variable models are exact; the recorder reads what the
# devices really hold, so it sees the deviation and says so. Under `model.fit` all four
# variables of this model are affected. `SGD(..., exact_update=True)`, used above,
# computes the same arithmetic with the new velocity passed along as a value, and follows
# the rule exactly: use it for training. `docs/upstream/stale_velocity.py` reproduces the
# bug with plain tf-keras, ready to report to TensorFlow.

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
# - [05_recordings](05_recordings.ipynb): save a recording, load it without TensorFlow, explore it with `ShardExplorer`.
#   **Next:** keep this kind of recording: save it, reload it anywhere, explore it with a widget.
# - [06_long_runs](06_long_runs.ipynb): record long runs cheaply: stats mode, decimation, a ring of full values,
#   `model.fit`.
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
# - [08_multi_client](08_multi_client.ipynb): a run over two clients, watched live with `LiveMonitor`, its store merged
#   into one recording.
