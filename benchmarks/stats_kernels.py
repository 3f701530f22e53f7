"""Ways to compute per-shard stats under DTensor, side by side (why stats mode costs what it
costs on a 2048x2048 tensor sharded over a 2x4 mesh).

    python benchmarks/stats_kernels.py [--n 2048]

Each variant computes, for three sharded tensors (the parameter, velocity and gradient of
stats mode), every block's L2 norm, mean and max |x| inside one ``tf.function``; the
variants are interleaved and the table gives the median time of each as a ratio to the
formulation ``dtsgd_viz`` uses, and to one plain ``reduce_sum`` pass (the floor for reading
the tensors once). ``jit_compile=True`` variants show whether XLA fuses the passes under
DTensor.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import dtsgd_viz

dtsgd_viz.setup_devices(8)

import tensorflow as tf  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

from dtsgd_viz import dtensor as _dtensor  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args(argv)
    n = args.n
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    lay = dtensor.Layout(["x", "y"], mesh)
    rng = np.random.default_rng(0)
    xs = [_dtensor.put(rng.normal(size=(n, n)).astype(np.float32), lay) for _ in range(3)]
    axes = (1, 3)

    def blocks(x):
        return tf.reshape(x, (2, n // 2, 4, n // 4))  # (shards, block) per sharded dim

    def cat(parts):
        return tf.concat([tf.expand_dims(p, -1) for p in parts], -1)

    def sq_max(x):  # tried for issue #14 item 2 and dropped: the squares once, read twice
        # (their sum, their max: max|x| = sqrt(max x*x)); cheaper, but max|x| is inf above
        # |x| ~ 1.8e19 and 0 below ~1e-19, where float32 squares leave their range
        b = blocks(x)
        sq = tf.square(b)
        return [tf.reduce_sum(sq, axes), tf.reduce_sum(b, axes), tf.reduce_max(sq, axes)]

    def abs_max(x):  # before issue #15 item 4: a mean and abs+max (an |x| temporary)
        b = blocks(x)
        return cat(
            (tf.sqrt(tf.reduce_sum(tf.square(b), axes)), tf.reduce_mean(b, axes), tf.reduce_max(tf.abs(b), axes))
        )

    def max_min(x):  # what dtsgd_viz._capture.block_stats computes: sum of squares, sum,
        # max and min (max|x| exact for every value)
        b = blocks(x)
        return [
            tf.reduce_sum(tf.square(b), axes),
            tf.reduce_sum(b, axes),
            tf.reduce_max(b, axes),
            tf.reduce_min(b, axes),
        ]

    def batched_dot(x):  # sum of squares as 8192 row dot products (BatchMatMul, no
        # temporary, no transpose), then sum, max and min
        b = blocks(x)
        rows = tf.linalg.matmul(tf.reshape(x, (2, n // 2, 4, 1, n // 4)), tf.reshape(x, (2, n // 2, 4, n // 4, 1)))
        return [
            tf.reduce_sum(tf.reshape(rows, (2, n // 2, 4)), 1),
            tf.reduce_sum(b, axes),
            tf.reduce_max(b, axes),
            tf.reduce_min(b, axes),
        ]

    def einsum(x):  # sum of squares as a contraction: no x**2 temporary
        b = blocks(x)
        return cat((tf.sqrt(tf.einsum("aibj,aibj->ab", b, b)), tf.reduce_mean(b, axes), tf.reduce_max(tf.abs(b), axes)))

    def one_pass(x):  # the floor: a single read of each tensor
        return tf.reduce_sum(blocks(x), axes)

    def two_reads(x):  # two reductions, no temporary
        b = blocks(x)
        return [tf.reduce_sum(b, axes), tf.reduce_max(b, axes)]

    def euclidean(x):  # one kernel for the norm (DTensor: no layout propagation)
        b = blocks(x)
        return [
            tf.math.reduce_euclidean_norm(b, axes),
            tf.reduce_sum(b, axes),
            tf.reduce_max(b, axes),
            tf.reduce_min(b, axes),
        ]

    kinds = {
        "block_stats as used (sum x*x, sum, max, min)": max_min,
        "sum x*x, sum x, max x*x (inexact max|x| outside 1e-19..1.8e19)": sq_max,
        "sum x*x, mean, max |x| (before issue #15)": abs_max,
        "einsum sum of squares": einsum,
        "batched dot sum of squares": batched_dot,
        "reduce_euclidean_norm": euclidean,
        "one reduce_sum pass (floor)": one_pass,
        "two reductions, no temporary": two_reads,
    }
    fns = {}
    for name, fn in kinds.items():
        for jit in (False, True):
            label = name + (" , jit_compile=True" if jit else "")
            fns[label] = tf.function(lambda a, b, c, fn=fn: tf.nest.flatten([fn(a), fn(b), fn(c)]), jit_compile=jit)
    times = {}
    for label, f in fns.items():
        try:
            f(*xs)
            times[label] = []
        except Exception as e:  # a formulation DTensor cannot lay out
            print(f"| {label} | fails: {type(e).__name__}: {str(e).splitlines()[0][:120]} |")
    for _ in range(args.reps):
        for label in times:
            start = time.perf_counter()
            for _ in range(5):
                out = fns[label](*xs)
            np.asarray(memoryview(dtensor.unpack(out[-1])[0]))  # wait for the devices
            times[label].append((time.perf_counter() - start) / 5)
    med = {k: statistics.median(v) for k, v in times.items()}
    base = med["block_stats as used (sum x*x, sum, max, min)"]
    floor = med["one reduce_sum pass (floor)"]
    print("\n| stats of p, v, g (3 tensors) | / as used | / one pass |\n|---|---|---|")
    for label, t in med.items():
        print(f"| {label} | {t / base:.2f}x | {t / floor:.2f}x |")
    print(f"\nmedian over {args.reps} x 5 calls, interleaved; {n}x{n} float32 on a 2x4 mesh")


if __name__ == "__main__":
    main()
