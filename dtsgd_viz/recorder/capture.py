"""In-graph capture pieces used by ``Recorder`` (all device-side, DTensor-safe).

- ``block_stats``: per-shard sum of squares, sum, max and min computed where the shard
  lives: the tensor is reshaped so each sharded dim splits into (shards, block), which
  DTensor keeps sharded, then reduced over the block axes; ``StatsStaging`` keeps them
  laid out like the block grid (one variable per grid layout for all the tensors laid out
  alike), so no collective is needed; the host derives norm, mean and max |x|.
- ``RowBuffer``: a small replicated ``(slots + 1, width)`` float64 variable written one row
  per step with ``tensor_scatter_nd_update`` (row ``slots`` is a scratch row).
- ``ValueRing``: full per-shard values laid out like the parameter: small tensors in one
  stacked variable per phase, shape, dtype and layout (all the (variable, kind)s alike
  share it), large ones in a variable per slot selected with
  nested ``tf.cond`` (DTensor has no layout propagation for ``ResourceScatterNdUpdate``
  into a sharded buffer, ``switch_case`` or ``tf.py_function``).
- ``Reader``: reads every staging variable with one function call at a flush.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any, cast

import numpy as np
import tensorflow as tf

from .. import dtensor as _dtensor

_COND_IDS = itertools.count()


def cond(predicate: Any, true_fn: Callable[[], Any], false_fn: Callable[[], Any]) -> Any:
    """``tf.cond`` in a name scope of its own. The branch functions are named after the
    scope and a per-graph counter, so two traced steps (two optimizers both called "SGD")
    could both make "SGD_cond_true_1220", and the second is refused ("a different function
    with the same name already exists"); a process-wide id keeps every name distinct."""
    with tf.name_scope(f"dtsgd_viz_{next(_COND_IDS)}"):
        return tf.cond(predicate, true_fn, false_fn)


STATS = ("norm", "mean", "max_abs")
"""The per-shard statistics of stats mode, in storage order (all 0 for the empty blocks
of a zero-size variable)."""

RAW_STATS = 4
"""What the devices compute per block: the sum of squares, the sum, the max and the min
(the host turns them into ``STATS``). max|x| = max(|max|, |min|) is exact for every
value (sqrt(max(x*x)) would read once less but gives inf above |x| ~ 1.8e19 and 0 below
~1e-19: wrong numbers on diverging and on converged runs). The sum of
squares is float32 (float64 for float64 variables would need float64 staging): a block
norm above ~1.8e19 shows inf, one whose squares underflow shows 0; the host log warns
when that happens (``hostlog.stats_range_warning``), and ``max_abs`` stays exact."""

STACK_ELEMENTS = 2**16
"""Tensors of the same shape and layout up to this many elements are stacked and reduced
together (one set of ops for all of them); bigger ones are reduced alone, as the copy a
stack makes would cost more than the ops it saves."""


def block_grid(geometry: Any) -> tuple[int, ...]:
    """Blocks along each tensor dim: the size of the mesh dim that shards it (a zero-size
    dim has as many empty blocks)."""
    return tuple(geometry.layout.num_shards(d) for d in range(len(geometry.global_shape)))


def _grid(geometry) -> tuple[tuple[int, str], ...]:
    """The block grid without its dims of one block: ``(blocks, mesh dim)`` per dim split
    across devices, ``()`` for a replicated tensor. Tensors with the same such grid keep
    their statistics in one buffer (DTensor keeps a sharded dim sharded when a reshape
    drops the size-1 dims around it)."""
    specs = geometry.layout.sharding_specs
    return tuple((g, spec) for g, spec in zip(block_grid(geometry), specs) if g > 1)


def _raw_stats(xs, geometry):
    """``xs``: tensors of one shape and layout. Returns the raw statistics of every
    block of each, ``RAW_STATS`` ``(1, len(xs), *grid)`` laid out like the block grid (``_grid``):
    each dim split across devices is reshaped into (blocks, block), which DTensor keeps
    sharded, and reduced over the block axes, so every device computes and keeps its own
    blocks' numbers (no collective). One reshape, a square and four reductions serve the
    whole stack, because DTensor runs every op once per device and on small tensors the
    ops, not the bytes, are what costs."""
    xs = [tf.cast(x, tf.float32) for x in xs]
    x = xs[0] if len(xs) == 1 else tf.stack(xs)
    split, axes = [1, len(xs)], []  # the leading 1: the row a scatter writes
    for g, b in zip(block_grid(geometry), geometry.local_shape):
        if g > 1:
            split.append(g)
        axes.append(len(split))
        split.append(b)
    blocks = tf.reshape(x, split)
    axes = tf.constant(axes, tf.int32)  # one constant for the four reductions
    return [
        tf.reduce_sum(tf.square(blocks), axes),
        tf.reduce_sum(blocks, axes),
        tf.reduce_max(blocks, axes),
        tf.reduce_min(blocks, axes),
    ]


def block_stats(x: Any, geometry: Any) -> Any:
    """The raw block statistics of one tensor (``(1, RAW_STATS, *grid)``; ``read_block_stats`` takes
    them to the host)."""
    return tf.concat(_raw_stats([x], geometry), 1)


def _finish(raw: np.ndarray, block_elements: int) -> np.ndarray:
    """float64 ``(..., 3)`` norm, mean, max|x| from the raw float32 ``(..., RAW_STATS)``
    (sum of squares, sum, max, min: see ``RAW_STATS``)."""
    raw = raw.astype(np.float64)
    max_abs = np.maximum(np.abs(raw[..., 2]), np.abs(raw[..., 3]))
    max_abs[np.isnan(raw[..., 2]) | np.isnan(raw[..., 3])] = np.nan
    return np.stack([np.sqrt(raw[..., 0]), raw[..., 1] / block_elements, max_abs], axis=-1)


def is_empty(watched: Any) -> bool:
    """Whether a watched variable has no elements (a ``(0, 4)`` weight)."""
    return watched.var.shape.num_elements() == 0


def empty_value(watched: Any, mode: str) -> Any:
    """The host form of a zero-size variable's parameter, velocity or gradient, made on
    the host: there is nothing to read, and DTensor does not keep an empty tensor's layout
    (a reshape of it, or the optimizer's velocity slot, comes out replicated, in shards of
    the global shape). Full mode: an empty block per local device, as ``unpack`` gives
    shards; stats mode: ``(n_held, 3)`` zeros, the norm, mean and max|x| of an empty block
    (nothing to sum, average or bound, and no NaN or Inf in it)."""
    if mode == "full":
        n = sum(len(at) for _, at in watched.held)
        dtype = watched.var.dtype.as_numpy_dtype
        return [np.zeros(watched.geometry.local_shape, dtype) for _ in range(n)]
    return np.zeros((len(watched.held), 3))


def _grid_spec(watched, extra_leading):
    from ..specs import UNSHARDED, LayoutSpec

    lead = (UNSHARDED,) * extra_leading
    return LayoutSpec((*lead, *(spec for _, spec in _grid(watched.geometry))), watched.layout.mesh)


def read_block_stats(stats: Any, watched: Any) -> np.ndarray:
    """``(n_held, 3)`` float64 from an eager ``block_stats`` tensor (each device's shard
    is its own block's numbers)."""
    shards = _dtensor.unpack(stats)
    return _finish(
        np.stack([shards[at[0]].reshape(RAW_STATS) for _, at in watched.held]), math.prod(watched.geometry.local_shape)
    )


class _StatsGroup:
    """The stats of every (variable, kind) of one phase whose block grids are laid out
    alike, in one ``(slots + 1, columns, *grid)`` float32 variable laid out
    ``[unsharded, unsharded, *grid layout]``: one scatter per step for all of them, each
    device writing its own blocks' numbers in place (row ``slots`` is scratch)."""

    def __init__(self, slots, members, mesh):
        self.slots = slots
        self.parts = {}  # (shape, dtype, layout) or a key of its own -> [(name, kind, w)]
        for name, kind, w in members:
            small = w.var.shape.num_elements() <= STACK_ELEMENTS
            part = (tuple(w.var.shape), w.dtype, w.layout.sharding_specs) if small else (name, kind)
            self.parts.setdefault(part, []).append((name, kind, w))
        self.columns = {}  # (name, kind) -> its RAW_STATS columns
        at = 0
        for part in self.parts.values():
            k = len(part)
            for j, (name, kind, _) in enumerate(part):
                self.columns[(name, kind)] = [at + s * k + j for s in range(RAW_STATS)]
            at += RAW_STATS * k
        w = members[0][2]
        init = np.zeros((slots + 1, at, *(g for g, _ in _grid(w.geometry))), np.float32)
        with tf.init_scope():
            self.var = _dtensor.variable(init, None if mesh is None else _grid_spec(w, 2))

    def write(self, values, index):
        """``index``: ``(1, 1)`` int64, the row."""
        pieces = [
            p
            for part in self.parts.values()
            for p in _raw_stats([values[(name, kind)] for name, kind, _ in part], part[0][2].geometry)
        ]
        update = tf.concat(pieces, 1)  # one concat for the whole group
        # value(): a read without read_value()'s extra identity op
        self.var.assign(tf.tensor_scatter_nd_update(self.var.value(), index, update))


class StatsStaging:
    """``slots`` steps of the block stats of every recorded (variable, kind) on the
    devices, in as few variables as their layouts allow: one per layout of the block grid
    and per phase (parameters and velocities are written when the next update starts,
    gradients after their update). Per step and phase, ``write`` adds a reshape, a square and four
    reductions per stack of same-shaped small tensors (a stack of p and v, of the query,
    key and value kernels...) and one concat and scatter per buffer: a buffer per
    (variable, kind) would cost a scatter and a concat each, and DTensor runs every
    op on every device (``benchmarks/stats_profile.py``)."""

    def __init__(self, slots: int, watched: list, kinds: Sequence[str], mesh: Any):
        self.slots = slots
        self._watched = {w.name: w for w in watched}
        self._empty = [(w, kind) for w in watched if is_empty(w) for kind in kinds]
        self._groups = []
        for phase in (("param", "velocity"), ("grad",)):
            by_grid = {}
            for w in watched:
                if is_empty(w):  # its stats are known: empty_value
                    continue
                for kind in kinds:
                    if kind in phase:
                        key = _grid(w.geometry)
                        by_grid.setdefault(key, []).append((w.name, kind, w))
            self._groups += [_StatsGroup(slots, members, mesh) for members in by_grid.values()]
        self.variables = [g.var for g in self._groups]

    def write(self, values: Any, index: Any) -> None:
        """``values``: {(name, kind): tensor} of one phase; ``index``: an int64 scalar."""
        index = tf.reshape(index, (1, 1))  # once for every group
        for g in self._groups:
            if next(iter(g.columns)) in values:
                g.write(values, index)

    def read(self, read: Any) -> dict:
        """{(name, kind): ``(slots, n_held, 3)`` float64} from a ``Reader`` result, blocks
        in replica-group order (``n_held``: the blocks this process holds, all of them
        unless it is one client of several)."""
        out = {}
        for g in self._groups:
            shards = read[g.var.ref()]
            for key, cols in g.columns.items():
                w = self._watched[key[0]]
                raw = np.stack(
                    [shards[at[0]].reshape(self.slots + 1, -1)[: self.slots, cols] for _, at in w.held], axis=1
                )
                out[key] = _finish(raw, math.prod(w.geometry.local_shape))
        for w, kind in self._empty:
            out[(w.name, kind)] = np.broadcast_to(empty_value(w, "stats"), (self.slots, len(w.held), 3))
        return out


class RowBuffer:
    """``slots`` rows of ``width`` float64 on the mesh (replicated), plus a scratch row."""

    def __init__(self, slots: int, width: int, mesh: Any):
        self.slots, self.width = slots, width
        init = np.full((slots + 1, width), -1.0)
        with tf.init_scope():
            if mesh is None:
                # tf.Variable takes any array-like (its stubs say Tensor only)
                self.var = tf.Variable(cast(Any, init), trainable=False)
            else:
                self.var = _dtensor.variable(init, _dtensor.replicated_layout(mesh, 2))

    def write(self, row: Any, index: Any) -> None:
        """Write ``row`` at ``index`` (an int64 scalar tensor on the mesh)."""
        self.var.assign(
            tf.tensor_scatter_nd_update(self.var.read_value(), tf.reshape(index, (1, 1)), tf.expand_dims(row, 0))
        )

    def read(self, shards: Any = None) -> np.ndarray:
        shards = _dtensor.unpack(self.var, copy=False) if shards is None else shards
        return shards[0][: self.slots]


SMALL_RING_BYTES = 4 * 2**20
"""A (variable, kind) whose whole ring is at most this many bytes is kept in a stacked
variable (shared with the others of its phase, shape, dtype and layout: a scatter per step
for all of them); bigger ones get a variable per slot behind a ``tf.cond``."""


class ValueRing:
    """``slots`` steps of full values per (variable, kind), laid out like the variable.

    Small tensors (a ring within ``SMALL_RING_BYTES`` each): the (variable, kind)s of one
    phase (parameters and velocities, or gradients) with the same shape, dtype and
    layout share one ``(slots + 1, members, *shape)`` variable laid out
    ``[unsharded, unsharded, *layout]`` (``stacked`` maps each to its group and column),
    written with one ``tf.stack`` and one ``tensor_scatter_nd_update`` per group inside
    one ``tf.cond`` on recorded steps. This copies the small rings on each recorded step
    but adds a few ops per group: a variable per (variable, kind) cost a scatter each, an
    input of every call and, at the first call, a DTensor variable created eagerly and
    its ops expanded (``benchmarks/compile_time.py``: about a second at 10 layers), where
    nested conds over per-slot variables would capture ``slots`` variables per tensor.
    Large tensors: ``slots`` variables selected with nested ``tf.cond``, so only the
    recorded step's bytes are copied.
    """

    def __init__(self, slots: int, watched: list, kinds: Sequence[str], small_bytes: int | None = None):
        self.slots = slots
        small_bytes = SMALL_RING_BYTES if small_bytes is None else small_bytes
        self.stacked, self.values = {}, [{} for _ in range(slots)]  # (name, kind) -> (var, j)
        self.empty = {}  # (name, kind) -> the empty shards of a zero-size variable
        groups = {}  # (phase, shape, dtype, layout) -> [(name, kind)], first member's Watched
        with tf.init_scope():
            for w in watched:
                if is_empty(w):  # nothing to stage (and no scatter into an empty buffer)
                    self.empty.update({(w.name, k): empty_value(w, "full") for k in kinds})
                    continue
                small = (slots + 1) * w.var.shape.num_elements() * w.var.dtype.size <= small_bytes
                for k in kinds:
                    if small:
                        group = (
                            k == "grad",
                            tuple(w.var.shape),
                            w.dtype,
                            tuple(w.layout.sharding_specs),
                            w.var.device if w.live_layout is None else w.live_layout.mesh,
                        )
                        groups.setdefault(group, (w, []))[1].append((w.name, k))
                    else:
                        for per_slot in self.values:
                            per_slot[(w.name, k)] = _dtensor.zeros_like_variable(w.var)
            self.groups = []  # [(var, [(name, kind)])], one stacked variable each
            for w, keys in groups.values():
                var = _stacked_variable(slots, w, len(keys))
                self.groups.append((var, keys))
                for j, key in enumerate(keys):
                    self.stacked[key] = (var, j)

    def write(self, predicate: Any, slot: Any, tensors: dict | Callable[[], dict]) -> None:
        """Write ``tensors`` ({(name, kind): value}, or a function returning them; large
        ones are read inside the branch) into slot ``slot`` when ``predicate``."""
        get: Callable[[], dict] = tensors if callable(tensors) else (lambda: tensors)
        if self.stacked:

            def small():
                index = tf.reshape(slot, (1, 1))
                values = get()
                for var, keys in self.groups:
                    present = [key in values for key in keys]
                    if not any(present):
                        continue
                    if not all(present):  # a group is one phase: written whole or not
                        raise ValueError(f"Recorder: a partial write of ring group {keys}.")
                    row = tf.expand_dims(tf.stack([values[key] for key in keys]), 0)
                    var.assign(tf.tensor_scatter_nd_update(var.read_value(), index, row))
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
        return [*(var for var, _ in self.groups), *(v for per_slot in self.values for v in per_slot.values())]

    def read(self, slot: int, key: tuple[str, str], read: Any = None) -> Any:
        """Read-only views of the slot's shards (the next write lands in a fresh buffer
        while a view is held). ``read``: a ``Reader`` result holding these variables."""
        get = (lambda var: read[var.ref()]) if read is not None else (lambda var: _dtensor.unpack(var, copy=False))
        if key in self.empty:
            return self.empty[key]
        if key in self.stacked:
            var, j = self.stacked[key]
            return [shard[slot, j] for shard in get(var)]
        return get(self.values[slot][key])


class Reader:
    """Reads many variables with one function call (one dispatch, where an eager read per
    variable costs a dispatch each): ``reader()`` maps ``var.ref()`` to the per-device
    read-only views of its value. ``reader.start()`` queues the read and returns at once;
    calling what it returns waits for it. ``nbytes``: the global size of the variables."""

    def __init__(self, variables: list):
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

    def start(self) -> Any:
        # The devices run queued work in order: the read sees the updates queued before
        # it, and the ones queued after it never write into the buffers it holds.
        tensors = self._read()
        return lambda: {v.ref(): _dtensor.unpack(t, copy=False) for v, t in zip(self.variables, tensors)}


def _stacked_variable(slots, watched, members):
    """A ``(slots + 1, members, *shape)`` zero variable laid out like ``watched``'s
    variable behind two unsharded dims (a plain one without a mesh)."""
    from ..specs import UNSHARDED, LayoutSpec

    var = watched.var
    init = np.zeros((slots + 1, members, *var.shape), var.dtype.as_numpy_dtype)
    if watched.live_layout is None:  # a plain variable (no mesh)
        return tf.Variable(cast(Any, init), trainable=False)  # array-likes, as above
    spec = LayoutSpec((UNSHARDED, UNSHARDED, *watched.layout.sharding_specs), watched.layout.mesh)
    return _dtensor.variable(init, spec)
