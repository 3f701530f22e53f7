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
import statistics
import time

import numpy as np

from dtsgd_viz import KINDS, merge_recordings
from dtsgd_viz.recording.recording import Hyperparameters, Part, Recording, VariableRecord
from dtsgd_viz.specs import LayoutSpec, MeshSpec


def whole_recording(clients, n, steps, which, seed=0) -> Recording:
    k = 8 // clients
    mesh = MeshSpec.create({"x": clients, "y": k})
    rng = np.random.default_rng(seed)
    specs = {"sharded": ("w", (n, n), ("x", "y")),
             "replicated": ("r", (n, n // 4), ("unsharded", "y"))}
    records = []
    for key in (("sharded", "replicated") if which == "both" else (which,)):
        name, shape, layout = specs[key]
        layout = LayoutSpec(layout, mesh)
        geom = VariableRecord(name, shape, "float32", layout, None, {}).geometry
        blocks = {kind: rng.standard_normal((steps, geom.num_unique, *geom.local_shape),
                                            np.float32) for kind in KINDS}
        records.append(VariableRecord(name, shape, "float32", layout,
                                      rng.standard_normal(shape, np.float32), blocks))
    v = len(records)
    return Recording(mesh, tuple(records), KINDS, np.arange(1, steps + 1),
                     Hyperparameters(np.full(steps, 0.01), 0.9, True, 0.9),
                     np.zeros(steps), np.zeros((steps, v), np.uint8),
                     np.zeros((steps, v), np.uint8))


def split(whole: Recording, clients: int) -> list[Recording]:
    """The parts the clients of a run holding ``whole`` would save."""
    k = whole.mesh.num_devices // clients
    parts = []
    for c in range(clients):
        part = Part(c, clients, tuple(range(c * k, (c + 1) * k)))
        records = []
        for r in whole.records:
            held = [g for g, _ in r.geometry.held_groups(part.devices)]
            initial = np.full(r.shape, np.nan, np.float32)
            for g in held:
                where = r.geometry.blocks[r.geometry.replica_groups[g][0]]
                initial[where] = r.initial[where]
            blocks = {kind: b[:, held].copy() for kind, b in r.blocks.items()}
            records.append(VariableRecord(r.name, r.shape, r.dtype, r.layout, initial, blocks))
        parts.append(Recording(whole.mesh, tuple(records), whole.kinds, whole.steps,
                               whole.hyperparameters, whole.loss_values, whole.nonfinite,
                               whole.mismatch, part=part))
    return parts


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
    print(f"{'clients':>7}  {'variables':<10} {'merged MiB':>10} {'merge ms':>9} "
          f"{'concat ms':>9} {'copy ms':>8} {'merge/concat':>12} {'merge/copy':>10}")
    for clients in (2, 4):
        for which in ("sharded", "replicated", "both"):
            whole = whole_recording(clients, args.n, args.steps, which)
            parts = split(whole, clients)
            merged = merge_recordings(parts)
            for r, m in zip(whole.records, merged.records):  # the merge is exact
                assert all(np.array_equal(r.blocks[k], m.blocks[k]) for k in KINDS)
                assert np.array_equal(r.initial, m.initial)
            inputs = [[p.records[v].blocks[k] for p in parts]
                      for v in range(len(whole.records)) for k in KINDS]
            outputs = [b for r in merged.records for b in r.blocks.values()]
            t_merge, t_cat, t_copy = _median_times(
                [lambda: merge_recordings(parts),
                 lambda: [np.concatenate(x, axis=1) for x in inputs],
                 lambda: [np.copy(b) for b in outputs]], args.reps)
            mib = sum(b.nbytes for b in outputs) / 2**20
            print(f"{clients:>7}  {which:<10} {mib:>10.0f} {1e3 * t_merge:>9.1f} "
                  f"{1e3 * t_cat:>9.1f} {1e3 * t_copy:>8.1f} {t_merge / t_cat:>11.2f}x "
                  f"{t_merge / t_copy:>9.2f}x")
            del whole, parts, merged, inputs, outputs


if __name__ == "__main__":
    main()
