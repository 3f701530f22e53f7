"""What streaming a recording to disk (``Recorder(path=...)``) costs.

    python benchmarks/streaming.py             # about 1-2 minutes on 2 cores
    python benchmarks/streaming.py --n 1024    # a smaller parameter
    python benchmarks/streaming.py --dir /some/disk   # where the stores go (default: tmp)

Workload: one n x n float32 parameter (default 2048, 16 MiB) laid out [x, y] on a 2x4
virtual CPU mesh, a quadratic loss, Nesterov SGD in a ``tf.function``, driven by
``rec.loop`` as a user's loop would. Variants, interleaved block by block (5 steps a
block, 8 timed blocks after one warm-up block), each with its own optimizer:

- plain: the un-instrumented tf-keras DTensor SGD step;
- ring: ``Recorder(kinds=("param", "velocity"), max_steps=8)``: full values every step,
  the last 8 kept in memory (the README's "full every step" row);
- stream: ``Recorder(kinds=("param", "velocity"), path=...)``: the same steps written to
  a zarr store at every flush, nothing kept in memory;
- stats ring / stats stream: ``Recorder(mode="stats", max_steps=8)`` and
  ``Recorder(mode="stats", path=...)`` (p, v, g every step).

- np.save: no training, ``np.save`` of the bytes "stream" records per step (p and v)
  into a new file in the same folder, once per "step" (interleaved with the others, so
  it meets the same page cache and the same neighbours on a shared machine).

It prints the ratios side by side, and the extra time per recorded byte of "stream"
(over the plain step, and over the ring, which isolates the disk part) next to writing
the same bytes with ``np.save``. The stores are removed at the end.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import numpy as np

import dtsgd_viz

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead as ob  # noqa: E402  (sets up the devices; its workloads are ours)
import tf_keras  # noqa: E402

from dtsgd_viz import dtensor as _dtensor  # noqa: E402

NESTEROV = ob.NESTEROV
BLOCK, BLOCKS = 5, 8


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=2048, help="parameter side (default 2048)")
    ap.add_argument("--dir", default=None, help="folder for the stores (default: tmp)")
    args = ap.parse_args(argv)
    n = args.n
    folder = tempfile.mkdtemp(prefix="dtsgd-streaming-", dir=args.dir)
    try:
        run(n, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(n, folder):
    mesh, build, _ = ob._matrix_workload(n)

    def make(opt):
        return build(opt)[0]

    pv = dict(kinds=("param", "velocity"))
    variants = {"plain": (make(tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh)), None)}
    for name, kw in [
        ("ring", dict(pv, max_steps=8)),
        ("stream", dict(pv, path=os.path.join(folder, "full.zarr"))),
        ("stats ring", dict(mode="stats", max_steps=8)),
        ("stats stream", dict(mode="stats", path=os.path.join(folder, "stats.zarr"))),
    ]:
        rec = dtsgd_viz.Recorder(**kw)
        variants[name] = (make(dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec])), rec)
    per_step = 2 * n * n * 4  # p and v, float32: the bytes "stream" writes per step
    src = np.random.default_rng(0).normal(size=per_step // 4).astype(np.float32)
    saved = iter(range(10**9))

    def np_save():
        np.save(os.path.join(folder, f"np-save-{next(saved)}.npy"), src)
        return None

    variants["np.save"] = (np_save, None)
    loops = {k: (rec.loop(10**9) if rec is not None else None) for k, (_, rec) in variants.items()}
    times = {k: [] for k in variants}
    for block in range(BLOCKS + 1):
        for name, (step, _rec) in variants.items():
            start = time.perf_counter()
            for _ in range(BLOCK):
                if loops[name] is not None:
                    next(loops[name])
                last = step()
            if last is not None:
                _dtensor.unpack(last)
            if block:  # the first block warms up (traces)
                times[name].append((time.perf_counter() - start) / BLOCK)
        print(f"block {block}/{BLOCKS}", file=sys.stderr, flush=True)
    for loop in loops.values():
        if loop is not None:
            loop.close()
    for name in ("stream", "stats stream"):
        variants[name][1].close()
    med = {k: statistics.median(v) for k, v in times.items()}
    save = med["np.save"]
    stored = dtsgd_viz.store.store_status(os.path.join(folder, "full.zarr"))[0].n_steps
    on_disk = sum(
        os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(os.path.join(folder, "full.zarr")) for f in files
    )
    base = med["plain"]
    print(
        f"\n{n}x{n} float32 on a 2x4 mesh, Nesterov; median of {BLOCKS} blocks of {BLOCK} "
        f"steps; plain step {base * 1e3:.1f} ms; stores in {folder}\n"
    )
    print("| measure | ratio |\n|---|---|")
    print(f"| full p,v every step, ring of 8 in memory (`max_steps=8`) / plain | {med['ring'] / base:.2f}x |")
    print(f"| full p,v every step streamed to disk (`path=`) / plain | {med['stream'] / base:.2f}x |")
    print(f"| streamed / ring of 8 in memory | {med['stream'] / med['ring']:.2f}x |")
    print(
        f"| stats p,v,g: streamed / plain; ring of 8 / plain | {med['stats stream'] / base:.2f}x; "
        f"{med['stats ring'] / base:.2f}x |"
    )
    print(
        f"| streamed: extra time per recorded byte over plain / `np.save` per byte | "
        f"{(med['stream'] - base) / save:.2f}x |"
    )
    print(
        f"| streamed: extra time per recorded byte over the ring / `np.save` per byte | "
        f"{(med['stream'] - med['ring']) / save:.2f}x |"
    )
    print(
        f"| bytes on disk / recorded bytes ({stored} steps, {stored * per_step / 2**30:.2f} GiB) | "
        f"{on_disk / max(1, stored * per_step):.3f}x |"
    )
    print(
        f"\n(np.save of {per_step / 2**20:.0f} MiB into the same folder: {save * 1e3:.1f} ms, "
        f"{per_step / save / 2**30:.2f} GiB/s; plain step {base * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    main()
