"""Which block of a global tensor each device holds: pure functions, no TensorFlow.

>>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
>>> mesh = MeshSpec.create({"x": 2, "y": 2})
>>> g = shard_geometry((4, 6), LayoutSpec(("x", "unsharded"), mesh))
>>> g.blocks[2]
(slice(2, 4, None), slice(0, 6, None))
>>> g.replica_groups
((0, 1), (2, 3))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from .specs import UNSHARDED, LayoutSpec


@dataclasses.dataclass(frozen=True)
class ShardGeometry:
    """The blocks of a ``global_shape`` tensor laid out by ``layout``.

    ``blocks[d]`` is the tuple of slices of the global tensor held by device ``d``
    (mesh device order). Devices holding the same block form a replica group;
    ``replica_groups`` lists them in order of their first device and ``group_of[d]``
    is the group of device ``d``.
    """

    global_shape: tuple[int, ...]
    layout: LayoutSpec
    local_shape: tuple[int, ...]
    blocks: tuple[tuple[slice, ...], ...]
    replica_groups: tuple[tuple[int, ...], ...]
    group_of: tuple[int, ...]

    @property
    def num_devices(self) -> int:
        return len(self.blocks)

    @property
    def num_unique(self) -> int:
        return len(self.replica_groups)

    def block_index(self, device: int) -> tuple[int, ...]:
        """Block coordinates (which piece along each tensor dim) of ``device``."""
        return tuple(
            s.start // self.local_shape[i] if self.local_shape[i] else 0 for i, s in enumerate(self.blocks[device])
        )

    def held_groups(self, devices: Sequence[int]) -> tuple[tuple[int, tuple[int, ...]], ...]:
        """The replica groups that ``devices`` (mesh device numbers: one client's, in the
        order it holds their shards) hold, in group order, each with the positions in
        ``devices`` of its copies.

        >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
        >>> g = shard_geometry((4,), LayoutSpec(("x",), MeshSpec.create({"x": 2, "y": 2})))
        >>> g.held_groups((2, 3))
        ((1, (0, 1)),)
        """
        at: dict[int, list[int]] = {}
        for pos, d in enumerate(devices):
            at.setdefault(self.group_of[d], []).append(pos)
        return tuple((g, tuple(at[g])) for g in sorted(at))

    def assemble(self, unique_blocks: np.ndarray, groups: Sequence[int] | None = None) -> np.ndarray:
        """Global array(s) from blocks ``(..., num_unique, *local_shape)``; ``groups``:
        which replica groups the blocks are when not all (the rest is NaN)."""
        unique_blocks = np.asarray(unique_blocks)
        lead = unique_blocks.shape[: unique_blocks.ndim - len(self.local_shape) - 1]
        out = np.empty(lead + self.global_shape, dtype=unique_blocks.dtype)
        if groups is None:
            groups = range(self.num_unique)
        elif len(groups) < self.num_unique:
            out.fill(np.nan)
        ell = (slice(None),) * len(lead)
        for i, g in enumerate(groups):
            out[ell + self.blocks[self.replica_groups[g][0]]] = unique_blocks[ell + (i,)]
        return out

    def split(self, global_array: np.ndarray) -> np.ndarray:
        """Blocks ``(..., num_unique, *local_shape)`` cut from global array(s)."""
        global_array = np.asarray(global_array)
        lead = global_array.shape[: global_array.ndim - len(self.global_shape)]
        ell = (slice(None),) * len(lead)
        return np.stack(
            [global_array[ell + self.blocks[devs[0]]] for devs in self.replica_groups],
            axis=len(lead),
        )


def shard_geometry(global_shape: Sequence[int], layout: LayoutSpec) -> ShardGeometry:
    """The block each device holds, in mesh device order, and the replica groups."""
    shape = layout.check_shape(global_shape)
    local = layout.shard_shape(shape)
    mesh = layout.mesh
    blocks = []
    for device in range(mesh.num_devices):
        coords = dict(zip(mesh.dim_names, mesh.device_coords(device)))
        block = []
        for dim, spec in enumerate(layout.sharding_specs):
            i = 0 if spec == UNSHARDED else coords[spec]
            block.append(slice(i * local[dim], (i + 1) * local[dim]))
        blocks.append(tuple(block))
    groups: dict[tuple, list[int]] = {}
    for device, block in enumerate(blocks):
        groups.setdefault(tuple((s.start, s.stop) for s in block), []).append(device)
    replica_groups = tuple(tuple(g) for g in groups.values())
    group_of = [0] * len(blocks)
    for g, devices in enumerate(replica_groups):
        for d in devices:
            group_of[d] = g
    return ShardGeometry(shape, layout, local, tuple(blocks), replica_groups, tuple(group_of))
