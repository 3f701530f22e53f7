"""In-graph capture pieces used by ``Recorder`` (all device-side, DTensor-safe).

- ``block_stats``: per-shard L2 norm, mean and max |x| computed where the shard lives:
  the tensor is reshaped so each sharded dim splits into (shards, block), which DTensor
  keeps sharded, then reduced over the block axes; ``StatsBuffer`` keeps them laid out
  like the block grid, so no collective is needed.
- ``RowBuffer``: a small replicated ``(slots + 1, width)`` float64 variable written one row
  per step with ``tensor_scatter_nd_update`` (row ``slots`` is a scratch row).
- ``ValueRing``: full per-shard values laid out like the parameter: small tensors in one
  stacked variable per (variable, kind), large ones in a variable per slot selected with
  nested ``tf.cond`` (DTensor has no layout propagation for ``ResourceScatterNdUpdate``
  into a sharded buffer, ``switch_case`` or ``tf.py_function``).
- ``Reader``: reads every staging variable with one function call at a flush.
"""

from __future__ import annotations

import itertools

import numpy as np

from . import _dtensor
from ._dtensor import dtensor, tf

_COND_IDS = itertools.count()


def cond(predicate, true_fn, false_fn):
    """``tf.cond`` in a name scope of its own. The branch functions are named after the
    scope and a per-graph counter, so two traced steps (two optimizers both called "SGD")
    could both make "SGD_cond_true_1220", and the second is refused ("a different function
    with the same name already exists"); a process-wide id keeps every name distinct."""
    with tf.name_scope(f"dtsgd_viz_{next(_COND_IDS)}"):
        return tf.cond(predicate, true_fn, false_fn)


STATS = ("norm", "mean", "max_abs")
"""The per-shard statistics of stats mode, in storage order."""


def block_grid(geometry) -> tuple[int, ...]:
    return tuple(n // b for n, b in zip(geometry.global_shape, geometry.local_shape))


def block_stats(x, geometry):
    """Per-block ``(sum of squares, mean, max|x|)`` as one ``(1, *grid, 3)`` tensor laid
    out like the block grid: every device computes and keeps its own block's numbers (no
    collective). The square root of the norm is taken on the host (``_finish``): one op
    less per tensor per step, and the ops are kept few because DTensor runs each one on
    every device (reductions keep their dims, so no ``expand_dims`` is needed either)."""
    x = tf.cast(x, tf.float32)
    shape = geometry.global_shape or (1,)
    local = geometry.local_shape or (1,)
    split = []
    for n, b in zip(shape, local):
        split += [n // b, b]
    blocks = tf.reshape(x, split)
    axes = tuple(range(1, len(split), 2))
    stats = (tf.reduce_sum(tf.square(blocks), axis=axes, keepdims=True),
             tf.reduce_mean(blocks, axis=axes, keepdims=True),
             tf.reduce_max(tf.abs(blocks), axis=axes, keepdims=True))
    # (g0, 1, g1, 1) each -> (g0, 1, g1, 3) -> (1, g0, g1, 3)
    return tf.reshape(tf.concat(stats, axis=-1), (1, *(block_grid(geometry) or (1,)), 3))


def _finish(stats: np.ndarray) -> np.ndarray:
    """float64 ``(..., 3)`` with the sum of squares turned into the L2 norm."""
    out = stats.astype(np.float64)
    out[..., 0] = np.sqrt(out[..., 0])
    return out


def _grid_spec(watched, extra_leading):
    from .specs import UNSHARDED, LayoutSpec
    specs = watched.layout.sharding_specs or (UNSHARDED,)
    lead = (UNSHARDED,) if extra_leading else ()
    return LayoutSpec((*lead, *specs, UNSHARDED), watched.layout.mesh)


class StatsBuffer:
    """``slots`` steps of one (variable, kind)'s block stats: a ``(slots + 1, *grid, 3)``
    float32 variable laid out ``[unsharded, *layout, unsharded]`` so each device writes
    its own block's numbers in place (row ``slots`` is scratch for steps not recorded)."""

    def __init__(self, slots, watched, mesh):
        from .geometry import shard_geometry
        self.slots = slots
        grid = block_grid(watched.geometry) or (1,)
        spec = _grid_spec(watched, True)
        self.geometry = shard_geometry((slots + 1, *grid, 3), spec)
        self.held = watched.held
        init = np.zeros((slots + 1, *grid, 3), np.float32)
        with tf.init_scope():
            self.var = _dtensor.variable(init, None if mesh is None else spec)

    def write(self, x, watched, index):
        """``index``: a ``(1, 1)`` int64 row index on the mesh."""
        self.var.assign(tf.tensor_scatter_nd_update(
            self.var.read_value(), index, block_stats(x, watched.geometry)))

    def read(self, shards=None) -> np.ndarray:
        """``(slots, n_held, 3)`` float64 on the host, blocks in replica-group order: each
        device's shard of the buffer holds its own block's numbers (``shards``: the
        buffer's per-device values if already read; ``n_held``: the blocks this process
        holds, all of them unless it is one client of several)."""
        shards = _dtensor.unpack(self.var, copy=False) if shards is None else shards
        return _finish(np.stack([shards[at[0]].reshape(self.slots + 1, 3)[: self.slots]
                                 for _, at in self.held], axis=1))


def read_block_stats(stats, watched) -> np.ndarray:
    """``(n_held, 3)`` float64 from an eager ``block_stats`` tensor (each device's shard
    is its own block's numbers)."""
    shards = _dtensor.unpack(stats)
    return _finish(np.stack([shards[at[0]].reshape(3) for _, at in watched.held]))


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

    def read(self, shards=None) -> np.ndarray:
        shards = _dtensor.unpack(self.var, copy=False) if shards is None else shards
        return shards[0][: self.slots]


SMALL_RING_BYTES = 4 * 2**20
"""A (variable, kind) whose whole ring is at most this many bytes is kept in one stacked
variable (a scatter per step); bigger ones get a variable per slot behind a ``tf.cond``."""


class ValueRing:
    """``slots`` steps of full values per (variable, kind), laid out like the variable.

    Small tensors (the ring within ``SMALL_RING_BYTES``): one ``(slots + 1, *shape)``
    variable laid out ``[unsharded, *layout]``, written with ``tensor_scatter_nd_update``
    inside one ``tf.cond`` on recorded steps. This copies the small ring on each recorded
    step but adds four ops per tensor, where nested conds over per-slot variables would
    capture ``slots`` variables per tensor (each an input of every call). Large tensors:
    ``slots`` variables selected with nested ``tf.cond``, so only the recorded step's
    bytes are copied.
    """

    def __init__(self, slots, watched, kinds, small_bytes=None):
        self.slots = slots
        small_bytes = SMALL_RING_BYTES if small_bytes is None else small_bytes
        self.stacked, self.values = {}, [{} for _ in range(slots)]
        with tf.init_scope():
            for w in watched:
                small = (slots + 1) * w.var.shape.num_elements() * w.var.dtype.size <= small_bytes
                for k in kinds:
                    if small:
                        self.stacked[(w.name, k)] = _stacked_variable(slots, w)
                    else:
                        for per_slot in self.values:
                            per_slot[(w.name, k)] = _dtensor.zeros_like_variable(w.var)

    def write(self, predicate, slot, tensors):
        """Write ``tensors`` ({(name, kind): value}, or a function returning them; large
        ones are read inside the branch) into slot ``slot`` when ``predicate``."""
        get = tensors if callable(tensors) else (lambda: tensors)
        if self.stacked:
            def small():
                index = tf.reshape(slot, (1, 1))
                values = get()
                for key, buf in self.stacked.items():
                    if key in values:
                        buf.assign(tf.tensor_scatter_nd_update(
                            buf.read_value(), index, tf.expand_dims(values[key], 0)))
                return tf.constant(True)
            # behind a tf.cond: steps not recorded read and copy nothing
            cond(predicate, small, lambda: tf.constant(False))
        if not self.values[0]:
            return

        def write(k):
            for key, value in get().items():
                if key in self.values[k]:
                    self.values[k][key].assign(value)
            return tf.constant(True)

        def select(lo, hi):
            if hi - lo == 1:
                return write(lo)
            mid = (lo + hi) // 2
            return cond(slot < mid, lambda: select(lo, mid), lambda: select(mid, hi))

        cond(predicate, lambda: select(0, self.slots), lambda: tf.constant(False))

    @property
    def variables(self) -> list:
        return [*self.stacked.values(), *(v for per_slot in self.values for v in per_slot.values())]

    def read(self, slot, key, read=None):
        """Read-only views of the slot's shards (the next write lands in a fresh buffer
        while a view is held). ``read``: a ``Reader`` result holding these variables."""
        get = ((lambda var: read[var.ref()]) if read is not None
               else (lambda var: _dtensor.unpack(var, copy=False)))
        if key in self.stacked:
            return [shard[slot] for shard in get(self.stacked[key])]
        return get(self.values[slot][key])


class Reader:
    """Reads many variables with one function call (one dispatch, where an eager read per
    variable costs a dispatch each): ``reader()`` maps ``var.ref()`` to the per-device
    read-only views of its value. ``reader.start()`` queues the read and returns at once;
    calling what it returns waits for it. ``nbytes``: the global size of the variables."""

    def __init__(self, variables):
        self.variables = list(variables)
        variables = self.variables
        self.nbytes = sum(v.shape.num_elements() * v.dtype.size for v in variables)
        self._read = tf.function(lambda: [v.read_value() for v in variables], autograph=False)
        # Run once now (usually inside the step's own first trace), not at the first
        # flush: DTensor compiles a function at its first run (~0.2-0.8 s here).
        with tf.init_scope():
            self._read()

    def __call__(self) -> dict:
        return self.start()()

    def start(self):
        # The devices run queued work in order: the read sees the updates queued before
        # it, and the ones queued after it never write into the buffers it holds.
        tensors = self._read()
        return lambda: {v.ref(): _dtensor.unpack(t, copy=False)
                        for v, t in zip(self.variables, tensors)}


def _stacked_variable(slots, watched):
    from .specs import UNSHARDED, LayoutSpec
    var = watched.var
    init = np.zeros((slots + 1, *var.shape), var.dtype.as_numpy_dtype)
    if watched.live_layout is None:  # a plain variable (no mesh)
        return tf.Variable(init, trainable=False)
    spec = LayoutSpec((UNSHARDED, *watched.layout.sharding_specs), watched.layout.mesh)
    return _dtensor.variable(init, spec)
