"""What merging the parts of a multi-client recording costs, next to copying the bytes.

    python benchmarks/merge.py            # a few seconds on 2 cores, ~1 GiB of memory
    python benchmarks/merge.py --n 2048   # a 16 MiB parameter (~4 GiB)

Synthetic plain-data parts, built without TensorFlow as the clients of a run save them:
an 8-device mesh (``{"x": 2, "y": 4}`` for 2 clients, ``{"x": 4, "y": 2}`` for 4; ``x``
spans the clients), ``--steps`` steps of param, velocity and grad (float32) of

- sharded: an n x n parameter laid out ``[x, y]``: every block on one client;
- replicated: an n x n/4 parameter laid out ``[unsharded, y]``: every block on every
  client (the merge keeps one copy and compares the others with it);
- both together.

Each case is timed (median of ``--reps``, the three interleaved) for ``merge_recordings(parts)`` and for two
plain numpy floors writing fresh memory: ``np.concatenate`` of the parts' arrays (per
variable and kind, along the block axis: the same input bytes, what a merge of disjoint
shards needs at least) and ``np.copy`` of the merged recording's arrays (its output
bytes). Ratios are merge / floor.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import sys
import time

import numpy as np

from dtsgd_viz import KINDS, merge_recordings

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests"))
from helpers.parts import split, whole_recording  # noqa: E402  (the tests' synthetic parts)


def _median_times(fns, reps) -> list[float]:
    """Median time of each function, run in turn ``reps`` times (interleaved: a machine
    that slows down for a while slows them all)."""
    times = [[] for _ in fns]
    for _ in range(reps):
        for fn, t in zip(fns, times):
            start = time.perf_counter()
            out = fn()
            t.append(time.perf_counter() - start)
            del out  # fresh memory every time, as a merge gets
    return [statistics.median(t) for t in times]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args(argv)
    print(
        f"{'clients':>7}  {'variables':<10} {'merged MiB':>10} {'merge ms':>9} "
        f"{'concat ms':>9} {'copy ms':>8} {'merge/concat':>12} {'merge/copy':>10}"
    )
    for clients in (2, 4):
        for which in ("sharded", "replicated", "both"):
            whole = whole_recording(clients, args.n, args.steps, which)
            parts = split(whole, clients)
            merged = merge_recordings(parts)
            for r, m in zip(whole.records, merged.records):  # the merge is exact
                assert all(np.array_equal(r.blocks[k], m.blocks[k]) for k in KINDS)
                assert np.array_equal(r.initial, m.initial)
            inputs = [[p.records[v].blocks[k] for p in parts] for v in range(len(whole.records)) for k in KINDS]
            outputs = [b for r in merged.records for b in r.blocks.values()]
            t_merge, t_cat, t_copy = _median_times(
                [
                    lambda: merge_recordings(parts),  # noqa: B023, F821
                    lambda: [np.concatenate(x, axis=1) for x in inputs],  # noqa: B023, F821
                    lambda: [np.copy(b) for b in outputs],  # noqa: B023, F821
                ],
                args.reps,
            )  # noqa: B023, F821
            mib = sum(b.nbytes for b in outputs) / 2**20
            print(
                f"{clients:>7}  {which:<10} {mib:>10.0f} {1e3 * t_merge:>9.1f} "
                f"{1e3 * t_cat:>9.1f} {1e3 * t_copy:>8.1f} {t_merge / t_cat:>11.2f}x "
                f"{t_merge / t_copy:>9.2f}x"
            )
            del whole, parts, merged, inputs, outputs


if __name__ == "__main__":
    main()
