# %% [markdown]
# # A multi-client run, watched live
#
# A DTensor mesh can span several processes ("clients"), each bringing its own devices,
# as on a cluster of hosts. This notebook runs a small training script as **two clients
# of 4 virtual CPUs each** on one `{"x": 2, "y": 4}` mesh, follows it live with
# `LiveMonitor` while it trains, then loads what both clients recorded as one recording
# and explores it with the usual views. The notebook itself never starts TensorFlow: the
# training happens in the clients, and everything here reads plain data from disk.
# (Client, store, block and replica are used in the sense of the
# [glossary](../docs/glossary.md).)

# %%
# %matplotlib inline
import pathlib
import shutil
import subprocess
import sys
import tempfile
import textwrap

import numpy as np
from IPython.display import display

import dtsgd_viz


def show(fig):
    display(fig, include=["image/png"])  # the picture only: '<Figure ...>' says nothing


work = pathlib.Path(tempfile.mkdtemp(prefix="dtsgd-08-"))  # removed at the end
script, store, logs = work / "train.py", work / "run.zarr", work / "logs"

# %% [markdown]
# ## The training script
#
# The same script runs in one process or as every client of a multi-client run: nothing
# in it says how many clients there are. `make_mesh` reads the DTensor environment the
# launcher sets and builds one mesh over every client's devices (client 0 holds mesh
# devices 0-3, client 1 devices 4-7), so the mesh dim `x` spans the two clients. Then:
#
# - `w` is laid out `["x", "y"]`: its 8 blocks are **split across the clients**, four on
#   each; `b` is laid out `["y"]`, so both clients hold a replica of each of its 4 blocks;
# - the data is sharded by batch over `x`: each client feeds half the batch;
# - `Recorder(path=store)` streams what the client's own devices hold to a **store**, a
#   folder that grows as the run records, one part per client: client 0 writes
#   `run.zarr/client-0/`, client 1 writes `run.zarr/client-1/`.
#   `rec.loop(80)` moves the recorded updates from the devices to the store every few
#   updates (before the device-side buffer would overwrite one), and each batch is
#   committed as it lands, so a watcher sees the run grow as it trains.

# %%
TRAIN = """
import sys
import numpy as np
import dtsgd_viz

mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})  # first: it sets up (and connects) devices
me = dtsgd_viz.client_info()

import tensorflow as tf
from tensorflow.experimental import dtensor

rng = np.random.default_rng(0)
X = rng.normal(size=(32, 8)).astype(np.float32)
Y = np.tanh(X @ rng.normal(size=(8, 16))).astype(np.float32)
batch = dtensor.Layout(["x", "unsharded"], mesh)  # half the batch on each client
Xd, Yd = dtsgd_viz.shard(X, batch), dtsgd_viz.shard(Y, batch)
w = dtsgd_viz.variable(0.3 * rng.normal(size=(8, 16)).astype(np.float32),
                       dtensor.Layout(["x", "y"], mesh), name="w")
b = dtsgd_viz.variable(np.zeros(16, np.float32), dtensor.Layout(["y"], mesh), name="b")

rec = dtsgd_viz.Recorder(path=sys.argv[1])  # this client's part of the store
opt = dtsgd_viz.SGD(0.1, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec],
                    exact_update=True)


@tf.function
def step():
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((tf.tanh(tf.matmul(Xd, w) + b) - Yd) ** 2)
    opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]), loss=loss)
    return loss


for _ in rec.loop(80):
    loss = step()
rec.close()
print(f"client {me.client_id} of {me.num_clients}: 80 updates, final loss "
      f"{float(dtsgd_viz.to_numpy(loss)):.4f}, holds {len(dtsgd_viz.device_values(w))} "
      "of the 8 blocks of w")
"""
script.write_text(textwrap.dedent(TRAIN))
print(f"wrote train.py ({len(TRAIN.splitlines())} lines)")

# %% [markdown]
# ## Launch two clients
#
# `dtsgd-viz launch` starts the script as 2 clients on this machine (127.0.0.1, a free
# port each), with 4 virtual CPU devices per client, and waits for them. If one client
# fails, or the timeout passes, it stops both (a client waiting for a peer that never
# comes would otherwise wait forever). It is started in the background here, with
# `python -m dtsgd_viz.cli` so that it runs in this kernel's environment; its own output
# (process ids, ports, each client's last line) goes to a file, and each client's output
# to `logs/client-<i>.log`.

# %%
launcher_out = open(work / "launcher.txt", "w")
proc = subprocess.Popen(
    [
        sys.executable,
        "-m",
        "dtsgd_viz.cli",
        "launch",
        "--clients",
        "2",
        "--devices-per-client",
        "4",
        "--timeout",
        "240",
        "--logs",
        str(logs),
        str(script),
        str(store),
    ],
    stdout=launcher_out,
    stderr=subprocess.STDOUT,
)

# %% [markdown]
# ## Watch it live
#
# `LiveMonitor` follows the store while the clients write it: how many updates have been
# committed and how fast, the loss, and the norm of each velocity block of `w` that the
# followed client holds (client 0 by default: devices 0-3; `client=1` follows the
# other). It polls in a background thread, so the notebook stays free while it updates.
# Until the clients have started TensorFlow and connected, it says that no store is
# there yet. (Its picture depends on when you look. On a static page you see its last
# one, drawn after the run had ended: the loss of the whole run and, for each of the 4
# blocks of `w` on client 0, the norm of its velocity at each update. Its title says how
# far the loss fell and where the median block's norm peaked; under it, the settings read
# from the store.)

# %%
# NBVAL_IGNORE_OUTPUT
from dtsgd_viz.widgets import LiveMonitor

monitor = LiveMonitor(store, "w", interval=0.5)
monitor

# %% [markdown]
# Wait for the launcher to return (it returns once both clients have exited), whatever
# happens: if waiting fails, the launcher is killed, and the clients die with it. A last
# `poll_now()` reads what was committed since the monitor's last poll (the widget above
# redraws with it), then `close()` stops the polling and closes the widget.

# %%
try:
    status = proc.wait(timeout=300)
finally:
    if proc.poll() is None:
        proc.kill()  # the clients get SIGKILL when the launcher dies
        proc.wait()
    launcher_out.close()
monitor.poll_now()
monitor.close()
print("launcher exit status:", status)
print(
    f"the monitor saw {monitor.state.n_steps} updates, up to update "
    f"{monitor.state.status.last_step}; store closed by the run: {monitor.state.closed}"
)
for i in range(2):
    lines = (logs / f"client-{i}.log").read_text().splitlines()
    print(*[line for line in lines if line.startswith("client ")], sep="\n")

# %% [markdown]
# ## The parts and the merge
#
# Each client wrote its own part of the store, holding the blocks of its own devices:
# `client-0/` those of devices 0-3, `client-1/` those of devices 4-7.

# %%
for part in dtsgd_viz.store.store_status(store):
    print(
        f"{pathlib.Path(part.path).name}: {part.n_steps} updates, last update {part.last_step}, closed: {part.closed}"
    )

# %% [markdown]
# `load_recording` of the store reads both parts and merges them into the recording of
# the whole mesh, with every block of `w` (4 from each client). The blocks of `b` that
# both clients hold are kept once; had the two replicas disagreed at some update, that
# update would be listed in `replica_mismatch`. No TensorFlow is needed to read it.

# %%
r = dtsgd_viz.load_recording(store)
print(r)
print("devices:", *r.mesh.device_names[3:5], "...")
print("copies that disagree across clients:", r.replica_mismatch)
print(dtsgd_viz.model_table(r))

# %% [markdown]
# ## Explore it with the usual views
#
# The merged recording is an ordinary `Recording`. `check_recording` replays every
# recorded update with the documented rule (Nesterov momentum, here) and lists the ones
# that do not follow it: none.

# %%
print(dtsgd_viz.reference.check_recording(r))

# %% [markdown]
# `plot_shards` draws the velocity of `w` after the last update, each device's block
# outlined. The top row of blocks (`x` = 0) is held by client 0's four CPUs, the bottom
# row by client 1's: each client numbers its own CPUs from 0, so the labels name the task
# too (`t0/CPU:0` is `CPU:0` of `task:0`), each block in its own colour. The right panel
# is the norm of the 8 blocks over the run, one line per block in its colour: their curves
# stay within about 2x of each other (2.1x at the last update, as the title says; the
# title names the largest and the smallest block). Their names stand on chips of their
# lines' colours in a column right of the panel, in the order of the lines' ends. The
# panel title reads the median block's norm (`norm_panel_text`, printed under the figure):
# it rises to a peak early, then falls. (It is the median of all 8 blocks; the live
# monitor of cell 7 reads client 0's 4, so its peak can fall one update apart.)

# %%
from dtsgd_viz.views.shards.findings import norm_panel_text

show(dtsgd_viz.plot_shards(r, "w", "velocity"))
print(norm_panel_text(r, "w", "velocity"))

# %% [markdown]
# The same recording is what one process would have computed. Starting from the
# recorded initial values, the numpy reference `replay` applies the recorded gradients
# with the recorded learning rates, and gives the recorded parameters of every update
# (to float32 rounding). (The test suite checks the stronger statement too: the merged
# parts of a 2-client run equal a single 8-device process running the same script.)

# %%
hp = r.hyperparameters
for name in r.variables:
    params, velocities = dtsgd_viz.reference.replay(
        r.initial(name),
        r.global_values(name, "grad"),
        hp.learning_rate,
        momentum=dtsgd_viz.reference.applied_momentum(hp),
        nesterov=hp.nesterov,
    )
    same = np.allclose(params, r.global_values(name, "param"), rtol=1e-5, atol=1e-6) and np.allclose(
        velocities, r.global_values(name, "velocity"), rtol=1e-5, atol=1e-6
    )
    print(f"{name}: replay of {len(params)} updates gives the recorded values: {same}")
print(f"loss: {r.loss[0]:.3f} before update 1, {r.loss[-1]:.3f} before update {r.steps[-1]}")

# %%
shutil.rmtree(work)  # the script, the store and the logs

# %% [markdown]
# ## On a real cluster
#
# `dtsgd-viz launch` is for one machine. On several hosts, start the same script on
# every host, with the same four variables everywhere but the client id:
#
# ```
# DTENSOR_JOBS=host0:9991,host1:9991     # one host:port per client, in client order
# DTENSOR_CLIENT_ID=0                    # 1 on host1, ...
# DTENSOR_NUM_CLIENTS=2
# DTENSOR_JOB_NAME=worker
# ```
#
# With GPUs, build the mesh with `make_mesh(dims, device_type="GPU")`. Each host then
# writes its own `client-<id>/` part: point every host's `Recorder(path=...)` at a
# shared folder, or copy the parts into one folder afterwards, and `load_recording`
# merges them as here. `LiveMonitor(path, client=i)` follows any one part while the run
# is going.

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
#   `model.fit`. **Next:** how to record a long run on a cluster cheaply.
# - [07_real_models](07_real_models.ipynb): a conv net and a transformer block on a mesh: the DTensor recipes, each
#   head's velocity, the stale velocity again.
