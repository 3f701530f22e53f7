"""Each recorder next to its floor: what the cheapest way of getting the same bytes costs.

    python benchmarks/floors.py                 # n=2048, 8 rounds: a few minutes on 2 cores
    python benchmarks/floors.py --n 1024 --rounds 4

Workload: one n x n float32 parameter laid out [x, y] on a 2x4 virtual CPU mesh, a
quadratic loss, Nesterov SGD (``overhead.py``'s 2048x2048 workload). Every row trains its
own copy in this one process; the rows run interleaved, block by block (``--block``
steps a block, round robin with the order turned by one every round, one warm-up
round); a row's ratio is the median over the
rounds of its block time over the plain step's block time in the same round. Recorded
rows run ``dtsgd_viz.SGD(hooks=[rec])`` inside one long ``rec.loop``, as a user's loop
would; the plain step and the floors run tf-keras' own DTensor SGD:

- stats every update (``mode="stats"``: p, v, g; and p, v only, the floor's bytes) /
  **one device read of p and v**: the plain step with one ``reduce_sum`` of each block
  of the parameter and of the velocity in it (returned, so it is never pruned);
- full p, v, a ring of 8 on the host (``max_steps=8``) / **a warm host copy**: the plain
  step, then ``np.copyto`` of every shard of p and v into arrays allocated once;
- full p, v, every update kept (``max_steps=None``) / **a fresh-memory fill**: the plain
  step, then ``np.empty`` + copy of every shard of p and v, kept alive (as a recording
  keeps its updates: always new pages); and, beside it, the same fill into anonymous
  ``mmap`` memory advised ``MADV_HUGEPAGE`` (the cheapest fresh memory this machine has).

"extra / floor's extra" is (row ratio - 1) / (floor ratio - 1): the time the recorder
adds to the step over the time its floor adds. For keep-every-update it is per kept
byte (both keep 2 n^2 float32 a step) and counts the loop only (the steps and
``rec.loop``'s flushes); reading the recording afterwards is printed below the table.
The kept rows hold ~32 MiB a step for n=2048 (with 8 rounds of 5 steps, ~1.5 GiB each).
"""

from __future__ import annotations

import argparse
import mmap
import os
import statistics
import subprocess
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead as ob  # noqa: E402  (sets up the 8 devices; its measuring helpers are ours)
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

import dtsgd_viz  # noqa: E402
from dtsgd_viz import dtensor as _dtensor  # noqa: E402

NESTEROV = ob.NESTEROV
PV = ("param", "velocity")
warnings.filterwarnings("ignore", message="Recorder: .* did not follow the", category=RuntimeWarning)


def _workload(n):
    """``overhead.py``'s matrix workload, with an optional ``extra(w, opt)`` traced into
    the step after the update and returned with the loss (the stats floor's reads)."""
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = dtensor.Layout(["x", "y"], mesh)
    rng = np.random.default_rng(0)
    c = _dtensor.put(rng.uniform(0.1, 1.0, (n, n)).astype(np.float32), lay)
    w0 = rng.normal(size=(n, n)).astype(np.float32)

    def make(opt, extra=None):
        w = _dtensor.variable(w0, lay, name="w")

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(c * w * w) / 2.0
            grads = tape.gradient(loss, [w])
            opt.apply_gradients(zip(grads, [w]))
            if extra is None:
                return loss
            return [loss, *extra(w, opt)]  # outputs: never pruned

        if extra is None:
            return step, w
        return (lambda: step()[0]), w  # the call runs every output; the loss is waited for

    return mesh, make


def _block_sums(x):
    """Each block's sum, kept where the block lives (as stats mode reduces: the sharded
    dims split into (blocks, block), no collective)."""
    n, m = x.shape
    return tf.reduce_sum(tf.reshape(x, (2, n // 2, 4, m // 4)), (1, 3))


def _velocity(opt, w):
    return opt.momentums[opt._index_dict[opt._var_key(w)]]


def _shards(var):
    return _dtensor.unpack(var, copy=False)  # zero-copy views of the device buffers


class HugePages:
    """Fresh memory from anonymous ``mmap`` chunks advised ``MADV_HUGEPAGE``."""

    def __init__(self, chunk=256 * 2**20):
        self.chunk, self.maps, self.free = chunk, [], 0
        self.advised = hasattr(mmap, "MADV_HUGEPAGE")

    def empty(self, shape, dtype):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        if self.free < nbytes:
            size = max(self.chunk, nbytes)
            m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            if self.advised:
                m.madvise(mmap.MADV_HUGEPAGE)
            self.maps.append(m)
            self.at, self.free = 0, size
        out = np.frombuffer(self.maps[-1], dtype, int(np.prod(shape)), self.at).reshape(shape)
        self.at += nbytes
        self.free -= nbytes
        return out


def _variants(mesh, make, block):
    plain = lambda: tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh)  # noqa: E731
    rows = []  # (Variant, group, what the floor is) in the order measured

    def add(variant, group=None, floor=None):
        rows.append((variant, group, floor))
        return variant

    step, _ = make(plain())
    add(ob.Variant("plain step", step, block=block, settings="tf-keras DTensor SGD, no hooks"))

    def recorded(label, kw, group):
        rec = dtsgd_viz.Recorder(**kw)
        step, _ = make(dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec]))
        add(ob.Variant(label, step, rec=rec, block=block, settings=ob.settings(kw)), group)
        return rec

    # stats, and one device read of p and v
    recorded("stats every update", dict(mode="stats"), "stats")
    # the bytes of the floor: p and v only (the default above also reads g)
    recorded("stats of p, v every update", dict(mode="stats", kinds=PV), "stats")
    opt = plain()
    step, _ = make(opt, lambda w, opt: [_block_sums(w.value()), _block_sums(_velocity(opt, w).value())])
    add(
        ob.Variant("floor: one reduce_sum of p and of v in the step", step, block=block),
        "stats",
        "one device read of p and v (one reduce_sum of each per block, in the step)",
    )

    # a ring of 8, and a warm host copy
    recorded("full p,v, ring of 8", dict(kinds=PV, max_steps=8), "ring")
    opt = plain()
    step, w = make(opt)
    warm = {}

    def copy_warm(opt=opt, w=w):
        for key, var in (("p", w), ("v", _velocity(opt, w))):
            shards = _shards(var)
            dst = warm.setdefault(key, [np.empty_like(s) for s in shards])
            for d, s in zip(dst, shards):
                np.copyto(d, s)

    add(
        ob.Variant("floor: warm host copy", step, after=copy_warm, block=block),
        "ring",
        "a warm host copy of p, v (np.copyto into arrays allocated once, after the step)",
    )

    # every update kept, and fresh memory
    keep = recorded("full p,v, every update kept", dict(kinds=PV, max_steps=None), "keep")
    kept = {"numpy": [], "huge": []}
    huge = HugePages()
    for how, alloc, what in (
        ("numpy", np.empty, "a fresh-memory fill of the same bytes (np.empty + copy, kept)"),
        ("huge", huge.empty, "a fresh fill into MADV_HUGEPAGE mmap chunks (kept)"),
    ):
        opt = plain()
        step, w = make(opt)

        def copy_fresh(opt=opt, w=w, how=how, alloc=alloc):
            for var in (w, _velocity(opt, w)):
                shards = _shards(var)
                dst = alloc((len(shards), *shards[0].shape), shards[0].dtype)
                for i, s in enumerate(shards):
                    np.copyto(dst[i], s)
                kept[how].append(dst)

        add(ob.Variant(f"floor: fresh fill ({how})", step, after=copy_fresh, block=block), "keep", what)
    return rows, keep, kept


TARGETS = {"stats": 2.0, "ring": 1.15, "keep": 1.25}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2048, help="parameter side (default 2048)")
    ap.add_argument("--rounds", type=int, default=8, help="timed rounds (default 8)")
    ap.add_argument("--block", type=int, default=5, help="steps a block (default 5)")
    args = ap.parse_args(argv)
    load = os.getloadavg()
    mesh, make = _workload(args.n)
    rows, keep, kept = _variants(mesh, make, args.block)
    variants = [v for v, _, _ in rows]
    print(f"measuring {len(variants)} rows, {args.rounds} rounds ...", file=sys.stderr, flush=True)
    # the rows' order turns every round: the kept rows take fresh memory in turn
    ob._measure(variants, args.rounds, warmup=1, rotate=True, progress=True)
    ratio = ob._paired_ratios(variants)
    plain_ms = statistics.median(variants[0].times) * 1e3
    for v in variants:
        if v._loop is not None:
            v._loop.close()
    start = time.perf_counter()
    n_kept = len(keep.recording)  # reading the kept updates (not in the table)
    read = time.perf_counter() - start
    fresh = next(v for v, g, f in rows if v.name == "floor: fresh fill (numpy)")
    fill = statistics.median(fresh.times) - statistics.median(variants[0].times)
    workload = f"{args.n}x{args.n} on 2x4"
    print(
        "\n| workload | recorder settings | ratio to plain | floor (what it is) | floor ratio "
        "to plain | extra / floor's extra | target | met |\n|---|---|---|---|---|---|---|---|"
    )
    print(f"| {workload} | plain step: {variants[0].settings} | 1.00x | | | | | |")
    for v, group, floor in rows:
        if group is None or floor is not None:
            continue
        for f, g, what in rows:
            if g != group or what is None:
                continue
            target = TARGETS[group] if "huge" not in f.name else None
            if ratio[f.name] - 1 < 0.02:  # the floor adds nothing measurable: no ratio
                extra, met = "n/a (the floor adds < 2%)", "n/a"
            else:
                extra = (ratio[v.name] - 1) / (ratio[f.name] - 1)
                met = "" if target is None else ("yes" if extra <= target else "no")
                extra = f"{extra:.2f}x"
            print(
                f"| {workload} | {v.name}: {v.settings} | {ratio[v.name]:.2f}x | {what} | "
                f"{ratio[f.name]:.2f}x | {extra} | "
                f"{'' if target is None else f'<= {target:.2f}x'} | {met} |"
            )
    print("\n| row | median block time / step | minor page faults / step |\n|---|---|---|")
    for v in variants:
        print(f"| {v.name} | {statistics.median(v.times) * 1e3:.1f} ms | {v.faults / (len(v.times) * v.block):.0f} |")
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(
        f"\nplain step {plain_ms:.1f} ms; median over {args.rounds} rounds of {args.block}-step "
        f"blocks, paired by round, rows interleaved round robin; {os.cpu_count()} CPUs; load "
        f"average at the start {load[0]:.2f}, at the end: {uptime}"
    )
    print(
        f"reading the kept recording afterwards ({n_kept} updates, "
        f"{n_kept * 8 * args.n**2 / 2**30:.2f} GiB): {read * 1e3 / max(1, n_kept):.1f} ms an "
        f"update, {read / max(1, n_kept) / max(fill, 1e-9):.2f}x the np.empty fill of its bytes; "
        f"huge pages advised: {hasattr(mmap, 'MADV_HUGEPAGE')}"
    )


if __name__ == "__main__":
    main()
