"""Where stats mode's time goes on a step of many small tensors (the transformer block).

    python benchmarks/stats_profile.py [--blocks 12] [--only-new]

Every variant trains its own copy of ``dtsgd_viz.models.transformer_block`` (15
variables, ``batch`` x ``model`` = 2 x 4) in this one process, interleaved block by block;
the table gives each variant's median step time as a ratio to the plain tf-keras step,
and the nodes of its traced step (branch functions included; DTensor runs each node once
per device, 8 here). The variants split stats mode's cost apart:

- ``stats p,v,g (old: a buffer per (variable, kind))``: the staging before issue #15
  item 4 (kept in this script only): per (variable, kind) a reshape, square, sum, mean,
  abs, max, concat, reshape and a scatter into its own buffer (the recorder around it is
  today's, so the old ``tf.where`` on the gradients' row index is not in it).
- ``stats p,v,g``: ``Recorder(mode="stats")`` as it is now: one buffer per phase (p and v
  when the next update starts, g after its update) and per layout of the block grid,
  tensors of one shape and layout stacked and reduced together, sum/sum/max/min.
- ``... grad only`` / ``... 7 of 15 variables``: how the cost scales with what is recorded.
- ``... statistics replaced by zeros``: the writes alone (old layout, nothing computed).
- ``recorder, nothing recorded``: the per-step meta row alone (``variables=[]``).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

import numpy as np

import dtsgd_viz

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import overhead as ob  # noqa: E402  (sets up the devices; its workloads are ours)
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402

from dtsgd_viz import dtensor as _dtensor  # noqa: E402
from dtsgd_viz.models import examples as models  # noqa: E402
from dtsgd_viz.recorder import capture as _capture  # noqa: E402
from dtsgd_viz.recorder import recorder as recorder_mod  # noqa: E402

NESTEROV = ob.NESTEROV
BLOCK = 10


# ---- the implementation before issue #15 item 4, for side-by-side timing -----------------


def _old_block_stats(x, geometry):
    x = tf.cast(x, tf.float32)
    shape = geometry.global_shape or (1,)
    local = geometry.local_shape or (1,)
    split = []
    for n, b in zip(shape, local):
        split += [n // b, b]
    blocks = tf.reshape(x, split)
    axes = tuple(range(1, len(split), 2))
    stats = (
        tf.reduce_sum(tf.square(blocks), axis=axes, keepdims=True),
        tf.reduce_mean(blocks, axis=axes, keepdims=True),
        tf.reduce_max(tf.abs(blocks), axis=axes, keepdims=True),
    )
    return tf.reshape(tf.concat(stats, axis=-1), (1, *(_capture.block_grid(geometry) or (1,)), 3))


class _OldBuffer:
    """A ``(slots + 1, *grid, 3)`` buffer per (variable, kind), as before."""

    zeros = False  # True: write zeros (the cost of the writes alone)

    def __init__(self, slots, watched, mesh):
        self.slots = slots
        grid = _capture.block_grid(watched.geometry) or (1,)
        from dtsgd_viz.specs import UNSHARDED, LayoutSpec

        spec = LayoutSpec((UNSHARDED, *(watched.layout.sharding_specs or (UNSHARDED,)), UNSHARDED), watched.layout.mesh)
        with tf.init_scope():
            self.var = _dtensor.variable(np.zeros((slots + 1, *grid, 3), np.float32), None if mesh is None else spec)
        self.grid = grid

    def write(self, x, watched, index):
        stats = tf.zeros((1, *self.grid, 3)) if self.zeros else _old_block_stats(x, watched.geometry)
        self.var.assign(tf.tensor_scatter_nd_update(self.var.read_value(), index, stats))

    def read(self, shards, watched):
        out = np.stack(
            [shards[at[0]].reshape(self.slots + 1, 3)[: self.slots] for _, at in watched.held], axis=1
        ).astype(np.float64)
        out[..., 0] = np.sqrt(out[..., 0])
        return out


class _OldStats:
    """The old buffers behind the interface ``Recorder`` uses now (``variables``,
    ``write``, ``read``)."""

    def __init__(self, slots, watched, kinds, mesh, zeros=False):
        self._watched = {w.name: w for w in watched}
        self._bufs = {(w.name, k): _OldBuffer(slots, w, mesh) for w in watched for k in kinds}
        for b in self._bufs.values():
            b.zeros = zeros
        self.variables = [b.var for b in self._bufs.values()]

    def write(self, values, index):
        index = tf.reshape(index, (1, 1))
        for (name, kind), value in values.items():
            self._bufs[(name, kind)].write(value, self._watched[name], index)

    def read(self, read):
        return {key: b.read(read[b.var.ref()], self._watched[key[0]]) for key, b in self._bufs.items()}


@contextlib.contextmanager
def _old_stats(zeros=False):
    """Build the recorder's stats staging the old way while a step is first traced."""
    real = _capture.StatsStaging

    def make(slots, watched, kinds, mesh):
        return _OldStats(slots, watched, kinds, mesh, zeros)

    _capture.StatsStaging = make
    try:
        yield
    finally:
        _capture.StatsStaging = real


def _nodes(step):
    """Nodes of the traced step and of every function it calls (cond branches)."""
    gd = step.get_concrete_function().graph.as_graph_def()
    return len(gd.node) + sum(len(f.node_def) for f in gd.library.function)


class Variant:
    def __init__(self, name, step, rec, trace=contextlib.nullcontext):
        self.name, self.step_fn, self.rec = name, step, rec
        self.loop = rec.loop(10**12) if rec is not None else None
        self.times = []
        with trace():  # the first call traces the step
            self.step()
        _dtensor.unpack(self.last)
        self.nodes = _nodes(step)

    def step(self):
        if self.loop is not None:
            next(self.loop)
        self.last = self.step_fn()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--blocks", type=int, default=12)
    ap.add_argument(
        "--only-new", action="store_true", help="plain, old and new stats mode only (for a quick before/after)"
    )
    args = ap.parse_args(argv)
    mesh, make, _ = ob._transformer_workload()  # the workload overhead.py measures

    plain = tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh, jit_compile=False)
    variants = [Variant("plain step (no recording)", make(plain)[0], None)]

    def recorded(name, trace=contextlib.nullcontext, **kw):
        rec = dtsgd_viz.Recorder(mode="stats", **kw)
        opt = dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec])
        step, variables = make(opt)
        variants.append(Variant(name, step, rec, trace))

    recorded("stats p,v,g (old: a buffer per (variable, kind))", _old_stats)
    recorded("stats p,v,g (now)")
    if not args.only_new:
        recorded("stats grad only (now)", kinds=("grad",))
        recorded("stats p,v only (now)", kinds=("param", "velocity"))
        # the first 7 variables' names (the embedding, the attention, a layer norm)
        names = [recorder_mod.variable_name(v) for v in models.transformer_block(mesh).trainable_variables[:7]]
        recorded("stats p,v,g of 7 of 15 variables (now)", variables=names)
        recorded("old, statistics replaced by zeros (the writes alone)", lambda: _old_stats(zeros=True))
        recorded("recorder, nothing recorded (the meta row alone)", variables=[])

    for _ in range(2):  # warm-up
        for v in variants:
            for _ in range(BLOCK):
                v.step()
            _dtensor.unpack(v.last)
    for _ in range(args.blocks):
        for v in variants:
            start = time.perf_counter()
            for _ in range(BLOCK):
                v.step()
            _dtensor.unpack(v.last)
            v.times.append((time.perf_counter() - start) / BLOCK)
    base = statistics.median(variants[0].times)
    print("\n| transformer block, 2x4 mesh | step / plain step | traced nodes (x8 devices) |")
    print("|---|---|---|")
    for v in variants:
        print(f"| {v.name} | {statistics.median(v.times) / base:.2f}x | {v.nodes} |")
    print(
        f"\nmedian over {args.blocks} blocks of {BLOCK} steps, interleaved; the plain step took {base * 1e3:.1f} ms",
        file=sys.stdout,
    )
    for v in variants:
        if v.loop is not None:
            v.loop.close()


if __name__ == "__main__":
    main()
