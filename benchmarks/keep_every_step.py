"""What keeping every recorded step costs, next to the memory floor.

    python benchmarks/keep_every_step.py           # about 1 minute on 2 cores
    python benchmarks/keep_every_step.py --n 1024  # a smaller parameter

Workload: one n x n float32 parameter (default 2048, 16 MiB) laid out [x, y] on a 2x4
virtual CPU mesh, a quadratic loss, Nesterov SGD in a ``tf.function``, driven by
``rec.loop`` as a user's loop would. Variants, interleaved block by block (5 steps a
block, 8 timed blocks after one warm-up block), each in its own optimizer:

- plain: the un-instrumented tf-keras DTensor SGD step;
- ring: ``Recorder(kinds=("param", "velocity"), max_steps=8)``: full values every step,
  only the last 8 kept on the host (the README's "full every step" row);
- keep all: the same with ``max_steps=None``: every step kept on the host (45 steps,
  ~1.4 GiB for n=2048);
- stats: ``Recorder(mode="stats")`` (p, v, g every step).

It prints ratios to the plain step, the extra time per kept byte of "keep all" next to
filling the same bytes of fresh host memory (``np.empty`` + copy: the floor for bytes
that must stay in memory) and of warm memory (``np.copyto``), and the host bytes a stats
recording keeps per step, measured with tracemalloc.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import tracemalloc

import numpy as np

import os

import dtsgd_viz

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead as ob  # noqa: E402  (sets up the devices; its workloads are ours)
import tf_keras  # noqa: E402

from dtsgd_viz import dtensor as _dtensor  # noqa: E402

NESTEROV = ob.NESTEROV
BLOCK, BLOCKS = 5, 8


def _fill_times(nbytes, reps=8):
    src = np.ones(nbytes // 4, np.float32)
    fresh, warm, kept = [], [], []
    dst = np.empty_like(src)
    np.copyto(dst, src)
    for _ in range(reps):
        start = time.perf_counter()
        new = np.empty_like(src)
        np.copyto(new, src)
        fresh.append(time.perf_counter() - start)
        kept.append(new)  # kept alive, as a recording keeps its steps: always new pages
        start = time.perf_counter()
        np.copyto(dst, src)
        warm.append(time.perf_counter() - start)
    return statistics.median(fresh), statistics.median(warm)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2048, help="parameter side (default 2048)")
    args = ap.parse_args(argv)
    n = args.n
    mesh, build, _ = ob._matrix_workload(n)

    def make(opt):
        return build(opt)[0]

    variants = {"plain": (make(tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh)), None)}
    for name, kw in [("ring", dict(kinds=("param", "velocity"), max_steps=8)),
                     ("keep all", dict(kinds=("param", "velocity"))),
                     ("stats", dict(mode="stats"))]:
        rec = dtsgd_viz.Recorder(**kw)
        variants[name] = (make(dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec])), rec)
    loops = {k: (rec.loop(10**9) if rec is not None else None) for k, (_, rec) in variants.items()}
    times = {k: [] for k in variants}
    for block in range(BLOCKS + 1):
        for name, (step, rec) in variants.items():
            start = time.perf_counter()
            for _ in range(BLOCK):
                if loops[name] is not None:
                    next(loops[name])
                last = step()
            _dtensor.unpack(last)
            if block:  # the first block warms up (traces)
                times[name].append((time.perf_counter() - start) / BLOCK)
        print(f"block {block}/{BLOCKS}", file=sys.stderr, flush=True)
    for loop in loops.values():
        if loop is not None:
            loop.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    per_step = 2 * n * n * 4  # p and v, float32
    fresh, warm = _fill_times(per_step)
    keep = variants["keep all"][1]
    start = time.perf_counter()
    kept = len(keep.recording)  # the first read copies every kept step into the recording
    read = time.perf_counter() - start
    stats_rec = variants["stats"][1]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    steps_before = len(stats_rec._log)
    step = variants["stats"][0]
    for _ in stats_rec.loop(200):
        step()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    stats_per_step = grown / max(1, len(stats_rec._log) - steps_before)
    shards = 8  # blocks of the [x, y] layout: every device holds a unique block
    base = med["plain"]
    print(f"\n{n}x{n} float32 on a 2x4 mesh, Nesterov; median of {BLOCKS} blocks of {BLOCK} "
          f"steps; plain step {base * 1e3:.1f} ms\n")
    print("| measure | ratio |\n|---|---|")
    print(f"| full p,v every step, ring of 8 (`max_steps=8`) / plain | {med['ring'] / base:.2f}x |")
    print(f"| full p,v every step, every step kept ({kept} steps, {kept * per_step / 2**30:.1f} GiB) "
          f"/ plain | {med['keep all'] / base:.2f}x |")
    print(f"| stats p,v,g every step / plain | {med['stats'] / base:.2f}x |")
    print(f"| keep all: extra time per kept byte / filling fresh host memory per byte | "
          f"{(med['keep all'] - base) / fresh:.2f}x |")
    print(f"| keep all: extra time per kept byte / np.copyto into warm memory per byte | "
          f"{(med['keep all'] - base) / warm:.2f}x |")
    print(f"| keep all: reading the recording (one copy of the kept steps) per byte / filling "
          f"fresh host memory per byte | {read / kept / fresh:.2f}x |")
    print(f"| keep all, per step, recording and reading included: extra time / filling fresh "
          f"host memory with the same bytes | {(med['keep all'] - base + read / kept) / fresh:.2f}x |")
    print(f"| filling fresh host memory / np.copyto into warm memory (same bytes) | {fresh / warm:.1f}x |")
    print(f"| stats mode: host bytes kept per step, measured with tracemalloc (3 kinds x {shards} "
          f"blocks x 3 float32 = {3 * shards * 3 * 4} B of numbers + 24 B of iteration, learning "
          f"rate and loss; columns grow by doubling) | {stats_per_step:.0f} B |")


if __name__ == "__main__":
    main()
