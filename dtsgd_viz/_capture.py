"""In-graph capture pieces used by ``Recorder`` (all device-side, DTensor-safe).

- ``block_stats``: per-shard L2 norm, mean and max |x| computed where the shard lives:
  the tensor is reshaped so each sharded dim splits into (shards, block), which DTensor
  keeps sharded, then reduced over the block axes.
- ``RowBuffer``: a small replicated ``(slots + 1, width)`` float64 variable written one row
  per step with ``tensor_scatter_nd_update`` (row ``slots`` is a scratch row for steps not
  recorded, so no ``tf.cond`` is needed).
- ``ValueRing``: full per-shard values, staged in variables laid out like the parameter and
  selected with nested ``tf.cond`` (DTensor has no layout propagation for scatter into a
  sharded buffer, ``switch_case`` or ``tf.py_function``).
"""

from __future__ import annotations

import numpy as np

from . import _dtensor
from ._dtensor import dtensor, tf

STATS = ("norm", "mean", "max_abs")


def block_grid(geometry) -> tuple[int, ...]:
    return tuple(n // b for n, b in zip(geometry.global_shape, geometry.local_shape))


def group_order(geometry) -> np.ndarray:
    """Row-major block-grid index of each replica group (to reorder ``block_stats``)."""
    grid = block_grid(geometry)
    if not grid:
        return np.zeros(1, np.int64)
    return np.array([np.ravel_multi_index(geometry.block_index(g[0]), grid)
                     for g in geometry.replica_groups], np.int64)


def block_stats(x, geometry, mesh):
    """``(n_blocks * 3,)`` float64, replicated: (norm, mean, max|x|) of every block in
    row-major block-grid order."""
    x = tf.cast(x, tf.float32)
    shape = geometry.global_shape
    if not shape:
        x = tf.reshape(x, (1,))
        shape, local = (1,), (1,)
    else:
        local = geometry.local_shape
    split = []
    for n, b in zip(shape, local):
        split += [n // b, b]
    blocks = tf.reshape(x, split)
    axes = tuple(range(1, len(split), 2))
    stats = tf.stack([
        tf.sqrt(tf.reduce_sum(blocks * blocks, axis=axes)),
        tf.reduce_mean(blocks, axis=axes),
        tf.reduce_max(tf.abs(blocks), axis=axes),
    ], axis=-1)
    if mesh is not None:
        stats = dtensor.relayout(stats, dtensor.Layout.replicated(mesh, stats.shape.rank))
    return tf.cast(tf.reshape(stats, (-1,)), tf.float64)


def host_block_stats(shards, geometry) -> np.ndarray:
    """``(n_unique, 3)`` stats of unpacked shards, in replica-group order (numpy)."""
    out = np.empty((geometry.num_unique, 3), np.float64)
    for g, devices in enumerate(geometry.replica_groups):
        x = np.asarray(shards[devices[0]], np.float32)
        out[g] = (np.sqrt(np.sum(x.astype(np.float64) ** 2)), x.mean(dtype=np.float64),
                  np.abs(x).max() if x.size else 0.0)
    return out


class RowBuffer:
    """``slots`` rows of ``width`` float64 on the mesh (replicated), plus a scratch row."""

    def __init__(self, slots, width, mesh):
        self.slots, self.width = slots, width
        init = np.full((slots + 1, width), -1.0)
        with tf.init_scope():
            if mesh is None:
                self.var = tf.Variable(init, trainable=False)
            else:
                self.var = _dtensor.variable(init, dtensor.Layout.replicated(mesh, 2))

    def write(self, row, index):
        """Write ``row`` at ``index`` (an int64 scalar tensor on the mesh)."""
        self.var.assign(tf.tensor_scatter_nd_update(
            self.var.read_value(), tf.reshape(index, (1, 1)), tf.expand_dims(row, 0)))

    def read(self) -> np.ndarray:
        return _dtensor.unpack(self.var)[0][: self.slots]


class ValueRing:
    """``slots`` sets of staging variables, one per (variable, kind), laid out like it."""

    def __init__(self, slots, watched, kinds):
        self.slots = slots
        with tf.init_scope():
            self.values = [{(w.name, k): _dtensor.zeros_like_variable(w.var) for w in watched
                            for k in kinds} for _ in range(slots)]

    def write(self, predicate, slot, tensors):
        """Assign ``tensors`` ({(name, kind): value}) into slot ``slot`` when ``predicate``."""

        def write(k):
            for key, value in tensors.items():
                self.values[k][key].assign(value)
            return tf.constant(True)

        def select(lo, hi):
            if hi - lo == 1:
                return write(lo)
            mid = (lo + hi) // 2
            return tf.cond(slot < mid, lambda: select(lo, mid), lambda: select(mid, hi))

        tf.cond(predicate, lambda: select(0, self.slots), lambda: tf.constant(False))

    def read(self, slot, key):
        return _dtensor.unpack(self.values[slot][key])
