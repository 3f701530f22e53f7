"""Conversions between live DTensor meshes and layouts and the plain ``specs`` values.

``mesh_spec``/``layout_spec`` read a live ``Mesh``/``Layout`` into a ``MeshSpec``/
``LayoutSpec``; ``to_mesh``/``to_layout`` go back. Importing this module imports no
TensorFlow (see ``devices.quiet_tensorflow_import``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..specs import LayoutSpec, MeshSpec
from .devices import _tensorflow

if TYPE_CHECKING:
    from ..geometry import ShardGeometry


def mesh_spec(mesh: Any) -> MeshSpec:
    """The plain ``MeshSpec`` of a DTensor ``Mesh``: every device of the mesh, also those
    of other clients in a multi-client run."""
    local = tuple(mesh.local_devices())
    n = math.prod(mesh.shape())
    if len(local) == n:
        return MeshSpec(tuple(mesh.dim_names), tuple(mesh.shape()), local)
    # Other clients' devices are named as create_distributed_mesh lays them out: k per
    # client, client c holding mesh devices c*k .. c*k+k-1 as its devices 0..k-1.
    tf, _ = _tensorflow()
    k = len(local)
    first = tf.DeviceSpec.from_string(local[0])
    names = [first.replace(task=g // k, device_index=g % k).to_string() for g in range(n)]
    for g, name in zip(local_device_ids(mesh), local):
        names[g] = name
    return MeshSpec(tuple(mesh.dim_names), tuple(mesh.shape()), tuple(names))


def local_device_ids(mesh: Any) -> tuple[int, ...]:
    """The mesh devices whose shards ``unpack`` gives this process, in that order (all of
    them in a single-process run; ``(0,)`` without a mesh)."""
    if mesh is None:
        return (0,)
    return tuple(int(i) for i in mesh.local_device_ids())


def layout_spec(layout: Any) -> LayoutSpec:
    """The plain ``LayoutSpec`` of a DTensor ``Layout``."""
    return LayoutSpec(tuple(layout.sharding_specs), mesh_spec(layout.mesh))


def to_mesh(spec: MeshSpec) -> Any:
    """A DTensor ``Mesh`` for a spec whose devices exist in this process (in a multi-client
    run: a mesh over every client, of which this client holds the devices of its task)."""
    tf, dtensor = _tensorflow()
    n = spec.num_devices
    ids = np.arange(n).reshape(spec.dim_sizes)
    local = list(range(n))
    if dtensor.num_clients() > 1:
        job, task = dtensor.job_name(), dtensor.client_id()
        specs = [tf.DeviceSpec.from_string(d) for d in spec.device_names]
        local = [i for i, d in enumerate(specs) if d.job == job and d.task == task]
    return dtensor.Mesh(list(spec.dim_names), ids, local, [spec.device_names[i] for i in local])


def to_layout(spec: LayoutSpec) -> Any:
    """A DTensor ``Layout`` for a spec (its mesh made by ``to_mesh``)."""
    _, dtensor = _tensorflow()
    return dtensor.Layout(list(spec.sharding_specs), to_mesh(spec.mesh))


def make_layout(sharding_specs: Sequence[str], mesh: Any) -> Any:
    """A DTensor ``Layout`` on a live ``mesh``, one sharding spec per dim, e.g.
    ``make_layout(["batch", "unsharded"], mesh)`` (``dtensor.Layout(specs, mesh)``)."""
    _, dtensor = _tensorflow()
    return dtensor.Layout(list(sharding_specs), mesh)


def replicated_layout(mesh: Any, rank: int) -> Any:
    """The DTensor ``Layout`` of rank ``rank`` replicated over every device of ``mesh``."""
    _, dtensor = _tensorflow()
    return dtensor.Layout.replicated(mesh, rank)


def shard_geometry_of(shape: Sequence[int], layout: Any) -> ShardGeometry:
    """``shard_geometry`` for a live DTensor ``Layout``."""
    from ..geometry import shard_geometry

    return shard_geometry(shape, layout_spec(layout))
