"""Plain value objects describing a device mesh and a tensor layout.

They mirror DTensor's ``Mesh`` and ``Layout`` without needing TensorFlow, so a
recording can be saved, loaded and drawn anywhere, and views can draw
hypothetical layouts with no devices at all::

    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> layout = LayoutSpec(("unsharded", "model"), mesh)
    >>> layout.shard_shape((8, 8))
    (8, 2)

Conversion to and from live DTensor objects lives in ``dtsgd_viz._dtensor``.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence

Dims = Mapping[str, int] | Sequence[tuple[str, int]]
"""Mesh dims as the functions here take them: ``{name: size}`` or ``[(name, size), ...]``."""

UNSHARDED = "unsharded"
"""Sharding spec of a tensor dimension that every device holds whole (DTensor's name)."""


def parse_dims(dims: Dims) -> tuple[tuple[str, ...], tuple[int, ...]]:
    if isinstance(dims, Mapping):
        pairs = list(dims.items())
    elif isinstance(dims, Sequence) and not isinstance(dims, (str, bytes)):
        pairs = list(dims)
    else:
        raise TypeError(
            "Mesh dims must be a dict {name: size} or a list of (name, size) pairs. "
            f"Received: {dims!r} of type {type(dims).__name__}."
        )
    if not pairs:
        raise ValueError("A mesh needs at least one dim. Received: an empty dims.")
    names, sizes = [], []
    for pair in pairs:
        if not (isinstance(pair, Sequence) and len(pair) == 2):
            raise TypeError(f"Each mesh dim must be a (name, size) pair. Received: {pair!r}.")
        name, size = pair
        if not isinstance(name, str) or not name or name == UNSHARDED:
            raise ValueError(f"Mesh dim names must be non-empty strings other than {UNSHARDED!r}. Received: {name!r}.")
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"Mesh dim sizes must be integers >= 1. Received: {name}={size!r}.")
        names.append(name)
        sizes.append(int(size))
    if len(set(names)) != len(names):
        raise ValueError(f"Mesh dim names must be unique. Received: {names}.")
    return tuple(names), tuple(sizes)


@dataclasses.dataclass(frozen=True)
class MeshSpec:
    """A logical device mesh: named dims, their sizes, and the devices in row-major order."""

    dim_names: tuple[str, ...]
    dim_sizes: tuple[int, ...]
    device_names: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "dim_names", tuple(self.dim_names))
        object.__setattr__(self, "dim_sizes", tuple(int(s) for s in self.dim_sizes))
        object.__setattr__(self, "device_names", tuple(self.device_names))
        parse_dims(list(zip(self.dim_names, self.dim_sizes)))
        if len(self.dim_names) != len(self.dim_sizes):
            raise ValueError(f"dim_names and dim_sizes differ in length. Received: {self.dim_names}, {self.dim_sizes}.")
        if len(self.device_names) != self.num_devices:
            raise ValueError(
                f"A mesh of shape {self.dim_sizes} has {self.num_devices} devices. "
                f"Received: {len(self.device_names)} device names."
            )

    @classmethod
    def create(cls, dims: Dims, device_names: Sequence[str] | None = None, device_type: str = "CPU") -> MeshSpec:
        """A mesh spec from ``{name: size}`` or ``[(name, size), ...]``; devices named
        ``device_type:i`` unless given."""
        names, sizes = parse_dims(dims)
        n = math.prod(sizes)
        if device_names is None:
            device_names = [f"{device_type}:{i}" for i in range(n)]
        return cls(names, sizes, tuple(device_names))

    @property
    def num_devices(self) -> int:
        return math.prod(self.dim_sizes)

    @property
    def shape(self) -> dict[str, int]:
        return dict(zip(self.dim_names, self.dim_sizes))

    @property
    def short_device_names(self) -> tuple[str, ...]:
        """``CPU:3`` rather than ``/job:localhost/replica:0/task:0/device:CPU:3``
        (``t1/CPU:3`` on a multi-client mesh: see ``short_device_names``)."""
        return short_device_names(self.device_names)

    def dim_size(self, name: str) -> int:
        if name not in self.dim_names:
            raise ValueError(f"Unknown mesh dim {name!r}. Allowed: {list(self.dim_names)}.")
        return self.dim_sizes[self.dim_names.index(name)]

    def device_coords(self, device: int) -> tuple[int, ...]:
        """Coordinates of device number ``device`` on the mesh (row-major: last dim fastest)."""
        if not 0 <= device < self.num_devices:
            raise ValueError(f"Device index {device} is outside the mesh's {self.num_devices} devices.")
        coords = []
        for size in reversed(self.dim_sizes):
            coords.append(device % size)
            device //= size
        return tuple(reversed(coords))

    def __str__(self) -> str:
        dims = ", ".join(f"{n}={s}" for n, s in zip(self.dim_names, self.dim_sizes))
        return f"Mesh({dims}; {self.num_devices} devices)"

    def to_dict(self) -> dict:
        return {
            "dim_names": list(self.dim_names),
            "dim_sizes": list(self.dim_sizes),
            "device_names": list(self.device_names),
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> MeshSpec:
        return cls(tuple(d["dim_names"]), tuple(d["dim_sizes"]), tuple(d["device_names"]))


@dataclasses.dataclass(frozen=True)
class LayoutSpec:
    """How a tensor is laid out over a mesh: one sharding spec per tensor dim.

    Each spec is a mesh dim name (that tensor dim is split evenly over the mesh dim)
    or ``"unsharded"``. A mesh dim shards at most one tensor dim.
    """

    sharding_specs: tuple[str, ...]
    mesh: MeshSpec

    def __post_init__(self) -> None:
        specs = tuple(self.sharding_specs)
        object.__setattr__(self, "sharding_specs", specs)
        if not isinstance(self.mesh, MeshSpec):
            raise TypeError(f"mesh must be a MeshSpec. Received: {type(self.mesh).__name__}.")
        used = [s for s in specs if s != UNSHARDED]
        for s in used:
            if s not in self.mesh.dim_names:
                raise ValueError(
                    f"Sharding spec {s!r} is not a mesh dim. Allowed: {[UNSHARDED, *self.mesh.dim_names]}."
                )
        if len(set(used)) != len(used):
            raise ValueError(f"A mesh dim can shard only one tensor dim. Received: sharding_specs={list(specs)}.")

    @classmethod
    def replicated(cls, mesh: MeshSpec, rank: int) -> LayoutSpec:
        return cls((UNSHARDED,) * rank, mesh)

    @property
    def rank(self) -> int:
        return len(self.sharding_specs)

    @property
    def is_fully_replicated(self) -> bool:
        return all(s == UNSHARDED for s in self.sharding_specs)

    def num_shards(self, dim: int) -> int:
        spec = self.sharding_specs[dim]
        return 1 if spec == UNSHARDED else self.mesh.dim_size(spec)

    def check_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        shape = tuple(int(s) for s in shape)
        if len(shape) != self.rank:
            raise ValueError(
                f"Layout {list(self.sharding_specs)} has rank {self.rank}. "
                f"Received: shape {shape} of rank {len(shape)}."
            )
        for dim, size in enumerate(shape):
            k = self.num_shards(dim)
            if size % k:
                raise ValueError(
                    f"Dim {dim} of shape {shape} (size {size}) is sharded over mesh dim "
                    f"{self.sharding_specs[dim]!r} of size {k}, which does not divide it."
                )
        return shape

    def shard_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of the block each device holds."""
        shape = self.check_shape(shape)
        return tuple(s // self.num_shards(d) for d, s in enumerate(shape))

    def __str__(self) -> str:
        return f"Layout([{', '.join(self.sharding_specs)}] on {self.mesh})"

    def to_dict(self) -> dict:
        return {"sharding_specs": list(self.sharding_specs), "mesh": self.mesh.to_dict()}

    @classmethod
    def from_dict(cls, d: Mapping) -> LayoutSpec:
        return cls(tuple(d["sharding_specs"]), MeshSpec.from_dict(d["mesh"]))


def short_device_names(devices: Sequence[str]) -> tuple[str, ...]:
    """``CPU:3`` for ``/job:localhost/replica:0/task:0/device:CPU:3``; when that repeats
    (a multi-client mesh: each client numbers its own CPUs from 0), the task is kept
    in front: ``t1/CPU:3``.

    >>> short_device_names(["/job:w/replica:0/task:0/device:CPU:0",
    ...                     "/job:w/replica:0/task:1/device:CPU:0"])
    ('t0/CPU:0', 't1/CPU:0')
    """
    short = tuple(d.rsplit("device:", 1)[-1] for d in devices)
    if len(set(short)) == len(short):
        return short
    tasks = [re.search(r"task:(\d+)", d) for d in devices]
    return tuple(f"t{t[1]}/{s}" if t else d for t, s, d in zip(tasks, short, devices))
