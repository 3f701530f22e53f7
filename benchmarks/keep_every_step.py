"""What keeping every recorded step costs, next to the memory floor.

    python benchmarks/keep_every_step.py           # about 1 minute on 2 cores
    python benchmarks/keep_every_step.py --n 1024  # a smaller parameter

Workload: one n x n float32 parameter (default 2048, 16 MiB) laid out [x, y] on a 2x4
virtual CPU mesh, a quadratic loss, Nesterov SGD in a ``tf.function``, driven by
``rec.loop`` as a user's loop would. Variants, interleaved block by block (5 steps a
block, one warm-up round, then 8 timed rounds), each in its own optimizer; a ratio is the
median over the rounds of the variant's block time over the plain step's block in the
same round:

- plain: the un-instrumented tf-keras DTensor SGD step;
- ring: ``Recorder(kinds=("param", "velocity"), max_steps=8)``: full values every step,
  only the last 8 kept on the host (the README's "full every step" row); its floor: the
  plain step, then a warm host copy of the same bytes (``np.copyto`` into arrays
  allocated once);
- keep all: the same with ``max_steps=None``: every step kept on the host (45 steps,
  ~1.4 GiB for n=2048); its floor: the plain step, then a fresh-memory fill of the same
  bytes (``np.empty`` + copy, kept alive as a recording keeps its steps: always new pages);
- stats: ``Recorder(mode="stats")`` (p, v, g every step); its floor: one device read of
  p, v and g (a per-block ``reduce_sum`` of each inside the plain step).

"extra / floor's extra" is (ratio - 1) / (floor's ratio - 1). Below the table: reading
the recording (one copy of the kept steps) next to filling fresh memory, and the host
bytes a stats recording keeps per step, measured with tracemalloc.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import tracemalloc

import numpy as np

import dtsgd_viz

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead as ob  # noqa: E402  (sets up the devices; its measuring helpers are ours)
import workloads  # noqa: E402

NESTEROV = ob.NESTEROV
BLOCK, BLOCKS = 5, 8


class _Fill:
    """After each step, p's and v's bytes copied from host arrays allocated once into
    arrays allocated once (``fresh=False``: warm memory) or new each step and kept
    alive (``fresh=True``: every page touched for the first time, as a growing
    recording's)."""

    def __init__(self, n, fresh):
        self.src = [np.ones((n, n), np.float32) for _ in workloads.PV]
        self.dst = [np.zeros_like(a) for a in self.src]
        self.fresh, self.kept = fresh, []

    def __call__(self):
        for src, dst in zip(self.src, self.dst):
            if self.fresh:
                dst = np.empty_like(src)
                self.kept.append(dst)
            np.copyto(dst, src)


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
    ap.add_argument("--quick", action="store_true", help="n=256, 2 rounds (smoke test)")
    args = ap.parse_args(argv)
    global BLOCKS
    n, BLOCKS = (256, 2) if args.quick else (args.n, BLOCKS)
    mesh, make, _ = workloads.matrix(n)
    pv = dict(kinds=workloads.PV)
    rows = [  # (name, Recorder arguments, settings, floor)
        ("full p,v every step, ring of 8", dict(pv, max_steps=8), "mode=full, kinds=p,v, every=1, max_steps=8", "warm"),
        ("full p,v every step, every step kept", pv, "mode=full, kinds=p,v, every=1, max_steps=None", "fresh"),
        ("stats p,v,g every step", dict(mode="stats"), "mode=stats, every=1, max_steps=None", "read"),
    ]
    floors = {
        "warm": "warm host copy of p,v (np.copyto into arrays allocated once) after the plain step",
        "fresh": "fresh-memory fill of p,v (np.empty + copy, kept) after the plain step",
        "read": "one device read of p,v,g (block reduce_sum in the plain step)",
    }
    plain = workloads.plain_optimizer
    variants = [ob.Variant("plain", make(plain(mesh))[0], block=BLOCK)]
    for key, name in floors.items():
        if key == "read":
            step = make(plain(mesh), after=workloads.read_floor)[0]
            variants.append(ob.Variant(name, step, block=BLOCK))
        else:
            variants.append(ob.Variant(name, make(plain(mesh))[0], block=BLOCK, after=_Fill(n, fresh=key == "fresh")))
    recs = {}
    for name, kw, setting, _ in rows:
        recs[name] = dtsgd_viz.Recorder(**kw)
        step = make(dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[recs[name]]))[0]
        variants.append(ob.Variant(name, step, rec=recs[name], block=BLOCK, settings=setting))
    med = ob._measure(variants, BLOCKS, warmup=1)
    for v in variants:
        v.close()
    ratio = ob._paired_ratios(variants)
    per_step = 2 * n * n * 4  # p and v, float32
    fresh, warm = _fill_times(per_step)
    keep = recs["full p,v every step, every step kept"]
    start = time.perf_counter()
    kept = len(keep.recording)  # the first read copies every kept step into the recording
    read = time.perf_counter() - start
    stats_rec = recs["stats p,v,g every step"]
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    steps_before = len(stats_rec._log)
    step = next(v for v in variants if v.rec is stats_rec)._step
    for _ in stats_rec.loop(200):
        step()
    after = tracemalloc.take_snapshot()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
    stats_per_step = grown / max(1, len(stats_rec._log) - steps_before)
    shards = 8  # blocks of the [x, y] layout: every device holds a unique block
    base = med["plain"]
    table = []
    for name, _, setting, floor in rows:
        label = name if "kept" not in name else f"{name} ({kept} steps, {kept * per_step / 2**30:.1f} GiB)"
        table.append(
            (
                label,
                setting,
                f"{ratio[name]:.2f}x",
                *workloads.floor_cells(ratio[name], floors[floor], ratio[floors[floor]]),
            )
        )
    keep_name, fill = "full p,v every step, every step kept", ratio[floors["fresh"]]
    all_in = workloads.extra_over_floor(ratio[keep_name] + read / kept / base, fill)
    print(
        f"\n{n}x{n} float32 on a 2x4 mesh, Nesterov, `rec.loop(n)` + `step()`; median over "
        f"{BLOCKS} rounds of blocks of {BLOCK} steps (ratio to the plain block of the same "
        f"round); plain step {base * 1e3:.1f} ms\n"
    )
    print(
        workloads.table(
            ["measure", "recorder settings", "ratio to plain", "floor", "floor / plain", "extra / floor's extra"], table
        )
    )
    print()
    print(
        workloads.table(
            ["measure", "ratio"],
            [
                (
                    "keep all: reading the recording (one copy of the kept steps) per byte / filling "
                    "fresh host memory per byte (timed alone)",
                    f"{read / kept / fresh:.2f}x",
                ),
                (
                    "**keep all, per step, recording and reading included: extra time / the fresh-memory "
                    "fill floor's extra (same bytes)**",
                    "-" if all_in is None else f"**{all_in:.2f}x**",
                ),
                (
                    "filling fresh host memory / np.copyto into warm memory (same bytes, timed alone)",
                    f"{fresh / warm:.1f}x",
                ),
                (
                    f"stats mode: host bytes kept per step, measured with tracemalloc (3 kinds x {shards} "
                    f"blocks, plus iteration, learning rate and loss; columns grow by doubling)",
                    f"{stats_per_step:.0f} B",
                ),
            ],
        )
    )


if __name__ == "__main__":
    main()
