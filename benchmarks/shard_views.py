"""How long the shard views take on a long run and on a big mesh: ``plot_shards`` (with its
PNG) at the last update and at the middle one, ``ShardExplorer`` opening and moving its
slider, of a real ``Recorder(mode="stats")`` run of 20,000 updates; and ``plot_shards``,
``plot_memory`` and ``plot_update_shards`` of a 64-device layout.

    python benchmarks/shard_views.py                    # 20,000 updates (records ~2 minutes)
    python benchmarks/shard_views.py --updates 2000     # a shorter run
    python benchmarks/shard_views.py --store run.npz    # a recording saved earlier (else recorded)

Workload: one (8, 8) float32 parameter laid out ``[batch, model]`` on 2x4 virtual CPUs, a
quadratic loss ``sum(c * (w - 1)^2) / 2`` whose curvature ``c`` is set per ``model``
column (0.05..1, log spaced), so the two ``batch`` blocks of a column follow one path (their
norm lines coincide, which ``plot_shards`` marks and names), heavy-ball SGD (lr 0.0005,
momentum 0.9, ``exact_update=True``) in a ``tf.function``, recorded by
``for _ in rec.loop(n): step()``. The 64-device rows draw plain data (``MeshSpec`` /
``LayoutSpec``, no devices): a (64, 64) parameter on a {batch: 8, model: 8} mesh.

Prints one markdown row per figure: the median of ``--reps`` timings, in seconds, and
the target (2 s whatever the run's length).
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

TARGET_S = 2.0


def record(updates, path):
    """Record the workload (see the module docstring) and save it to ``path``."""
    import dtsgd_viz

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    import tensorflow as tf
    from tensorflow.experimental import dtensor

    layout = dtensor.Layout(["batch", "model"], mesh)
    cols = np.repeat(np.geomspace(0.05, 1.0, 4), 2)  # one curvature per model block
    c = np.tile(cols, (8, 1)).astype(np.float32)
    w = dtsgd_viz.variable(np.zeros((8, 8), np.float32), layout, name="w")
    C = dtsgd_viz.shard(c, layout)
    rec = dtsgd_viz.Recorder(mode="stats")
    opt = dtsgd_viz.SGD(0.0005, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(C * (w - 1.0) ** 2 / 2)
        opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]), loss=loss)

    t0 = time.perf_counter()
    for _ in rec.loop(updates):
        step()
    print(f"recorded {updates} updates in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    rec.recording.save(path)


def big_mesh():
    """``(recording, plan, update recording)`` of a (64, 64) parameter on 64 devices, plain
    data (the test helper's synthetic recordings)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan
    from tests.helpers.synthetic_recording import recording

    mesh = MeshSpec.create({"batch": 8, "model": 8})
    r = recording([("w", (64, 64), ("batch", "model"))], steps=20, mesh=mesh)
    plan = memory_plan({"w": ((64, 64), "float32", LayoutSpec(("batch", "model"), mesh))})
    return r, plan


def clock(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def png(fig):
    fig.savefig(io.BytesIO(), format="png")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=20_000)
    ap.add_argument("--store", default=None, help="a saved recording (.npz) to draw instead")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args(argv)
    import matplotlib

    matplotlib.use("Agg")
    warnings.simplefilter("ignore")
    import dtsgd_viz

    with tempfile.TemporaryDirectory(prefix="dtsgd-shard-views-") as scratch:
        path = args.store
        if path is None:
            path = os.path.join(scratch, "run.npz")
            record(args.updates, path)
        r = dtsgd_viz.load_recording(path)
        from dtsgd_viz.views.shards.update import plot_update_shards
        from dtsgd_viz.widgets import ShardExplorer

        n, mid = len(r), int(r.steps[len(r) // 2])
        big, plan = big_mesh()
        rows = {
            f"plot_shards + PNG, last of {n} updates": lambda: png(dtsgd_viz.plot_shards(r, "w", "velocity")),
            f"plot_shards + PNG, update {mid} of {n}": lambda: png(dtsgd_viz.plot_shards(r, "w", "velocity", step=mid)),
            f"ShardExplorer opens ({n} updates)": lambda: ShardExplorer(r),
        }
        explorer = ShardExplorer(r)
        spots = iter(np.linspace(1, n, 60).astype(int).tolist() * 10)
        rows[f"ShardExplorer slider move ({n} updates)"] = lambda: setattr(
            explorer.slider, "value", int(r.steps[next(spots) - 1])
        )
        rows["plot_shards + PNG, 64 devices"] = lambda: png(dtsgd_viz.plot_shards(big, "w"))
        rows["plot_memory + PNG, 64 devices"] = lambda: png(dtsgd_viz.plot_memory(plan))
        rows["plot_update_shards + PNG, 64 devices"] = lambda: png(plot_update_shards(big, "w"))
        print(f"\nShard views (median of {args.reps}; target {TARGET_S:g} s)\n")
        print("| figure | seconds | within target |")
        print("|---|---|---|")
        for name, fn in rows.items():
            s = clock(fn, args.reps)
            print(f"| {name} | {s:.2f} | {'yes' if s <= TARGET_S else 'no'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
