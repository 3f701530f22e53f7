"""The shard views' geometry (no matplotlib): a tensor is one 2-D image, a block rectangles of it, in cells::

>>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
>>> from dtsgd_viz.geometry import shard_geometry
>>> mesh = MeshSpec.create({"x": 2, "y": 2})
>>> geom = shard_geometry((4, 6), LayoutSpec(("x", "unsharded"), mesh))
>>> [(p.label, p.rects) for p in block_patches(geom, mesh.short_device_names)]
[('CPU:0,1', ((0, 0, 6, 2),)), ('CPU:2,3', ((0, 2, 6, 2),))]
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...specs import short_device_names  # noqa: F401 - the shard views import it from here
from ..core.empty import check_not_empty
from ..core.steps import update_position
from ..mesh.layout_geometry import compact_devices

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...geometry import ShardGeometry
    from ...recording import Recording
    from ...specs import LayoutSpec


def update_index(recording: Recording, step: int | None = None) -> int:
    """The index into ``recording.steps`` of optimizer update ``step``."""
    check_not_empty(recording)
    return update_position(step, recording.steps)


def image_shape(shape: Sequence[int]) -> tuple[int, int]:
    """``(rows, cols)`` of the image of a tensor of ``shape`` (rank 1: a strip; 3+: leading dims as rows)."""
    shape = tuple(shape)
    return (math.prod(shape[:-1]), shape[-1]) if shape else (1, 1)


def as_image(values: np.ndarray) -> np.ndarray:
    """One global tensor (any rank) as its 2-D image (a reshape)."""
    values = np.asarray(values)
    return values.reshape(image_shape(values.shape))


def slice_boundaries(shape: Sequence[int]) -> tuple[int, ...]:
    """Image rows between consecutive dim-0 slices of a rank-3+ tensor (empty below rank 3)."""
    return tuple(math.prod(shape[1:-1]) * i for i in range(1, shape[0])) if len(shape) >= 3 else ()


def _runs(sorted_ints: np.ndarray) -> list[tuple[int, int]]:  # maximal runs of consecutive integers: (start, length)
    if len(sorted_ints) == 0:
        return []
    breaks = np.nonzero(np.diff(sorted_ints) != 1)[0] + 1
    return [(int(r[0]), len(r)) for r in np.split(sorted_ints, breaks)]


Rect = tuple[int, int, int, int]


def block_rects(block: tuple[slice, ...], shape: Sequence[int]) -> tuple[Rect, ...]:
    """Rectangles ``(x, y, width, height)`` in image cells covering one block."""
    if len(shape) == 0:
        return ((0, 0, 1, 1),)
    cols = block[-1]
    if len(shape) == 1:
        return ((cols.start, 0, cols.stop - cols.start, 1),)
    lead = np.meshgrid(*[np.arange(s.start, s.stop) for s in block[:-1]], indexing="ij")
    rows = np.sort(np.ravel_multi_index([g.ravel() for g in lead], shape[:-1]))
    return tuple((cols.start, start, cols.stop - cols.start, length) for start, length in _runs(rows))


def device_label(names: Sequence[str]) -> str:  # CPU:0 / CPU:0,4 / CPU:0-7: replicas grouped, a shared prefix once
    ids, head = device_ticks(names)
    if not head:
        return ",".join(ids)
    return head + compact_devices(sorted(int(i) for i in ids))


@dataclasses.dataclass(frozen=True)
class BlockPatch:
    group: int
    devices: tuple[int, ...]
    label: str
    rects: tuple[Rect, ...]


def block_patches(geometry: ShardGeometry, device_names: Sequence[str]) -> tuple[BlockPatch, ...]:
    """The outlined, labelled blocks of ``geometry`` in replica-group order."""
    return tuple(
        BlockPatch(
            g,
            tuple(devices),
            device_label([device_names[d] for d in devices]),
            block_rects(geometry.blocks[devices[0]], geometry.global_shape),
        )
        for g, devices in enumerate(geometry.replica_groups)
    )


def axis_labels(layout: LayoutSpec) -> tuple[str, str, str]:
    """``(xlabel, ylabel, note)`` for the heatmap of a tensor laid out by ``layout``."""
    from ..mesh.layout_geometry import dim_text  # the layout pictures' one wording

    rank = len(layout.sharding_specs)
    if rank == 0:
        return "(a scalar)", "", ""
    if rank <= 2:
        return dim_text(layout, rank - 1), dim_text(layout, 0) if rank == 2 else "", ""
    lead = " x ".join(f"d{i}" for i in range(rank - 1))
    return (
        dim_text(layout, rank - 1),
        f"rows: {lead} flattened",
        f"rank {rank}: dims 0..{rank - 2} flattened into rows; white lines separate d0 slices",
    )


def symmetric_limit(values: np.ndarray) -> float:
    """Largest finite magnitude (1.0 if none is non-zero), for limits ``(-m, m)``."""
    values = np.asarray(values, dtype=float)
    finite = np.abs(values[np.isfinite(values)])
    m = float(finite.max()) if finite.size else 0.0
    return m if m > 0 else 1.0


def shard_norms(recording: Recording, name: str, kind: str = "velocity") -> np.ndarray:
    """``(n_steps, n_devices)``: each device's shard's L2 norm at each step (``Recording.shard_stats``)."""
    return np.asarray(recording.shard_stats(name, kind)[..., 0], dtype=np.float64)


def block_norm_lines(recording: Recording, name: str, kind: str = "velocity") -> tuple[np.ndarray, np.ndarray]:
    """``(updates, lines)``: each replica group's L2 norm at each update, NaN where a log axis cannot show it."""
    norms = shard_norms(recording, name, kind)
    geometry = recording.geometry(name)
    lines = np.stack([norms[:, devices[0]] for devices in geometry.replica_groups], axis=1)
    with np.errstate(invalid="ignore"):
        lines = np.where(np.isfinite(lines) & (lines > 0), lines, np.nan)
    return np.asarray(recording.steps), lines


run_limit = symmetric_limit  # over a whole run: the fixed colour limit


def flagged_steps(recording: Recording, name: str) -> tuple[np.ndarray, np.ndarray]:  # NaN/Inf, mismatch: step indices
    v = recording.variables.index(recording.record(name).name)
    nonfinite = np.nonzero(np.asarray(recording.nonfinite)[:, v] != 0)[0]
    mismatch = np.nonzero(np.asarray(recording.mismatch)[:, v] != 0)[0]
    return nonfinite, mismatch


def settings_text(recording: Recording, index: int) -> str:  # "SGD lr=0.5, momentum=0.9, Nesterov" at ``index``
    hp = recording.hyperparameters
    text = f"SGD lr={float(hp.learning_rate[index]):g}, momentum={hp.momentum:g}"
    return text + (", Nesterov" if hp.nesterov else ", heavy-ball" if hp.momentum else "")


def device_ticks(device_names: Sequence[str]) -> tuple[list[str], str]:  # tick labels, the prefix they drop (CPU:)
    names = list(device_names)
    heads = {n.rsplit(":", 1)[0] for n in names}
    if len(heads) == 1 and all(":" in n and n.rsplit(":", 1)[1].isdigit() for n in names):
        return [n.rsplit(":", 1)[1] for n in names], heads.pop() + ":"
    return names, ""


def minmax_decimate(x: ArrayLike, y: ArrayLike, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` thinned to ``columns`` spans of x, each keeping its min, max and NaN, and the ends::

    >>> x = np.arange(10.0); y = np.array([0, 5, 1, 1, 1, 1, 1, 1, -3, 2.0])
    >>> minmax_decimate(x, y, 2)[1].tolist()
    [0.0, 5.0, -3.0, 2.0]
    """
    x, y = np.asarray(x), np.asarray(y)
    if len(x) <= max(1, int(columns)):
        return x, y
    keep = minmax_indices(x, y, columns)
    return x[keep], y[keep]


def minmax_indices(x: Sequence[float] | np.ndarray, y: ArrayLike, columns: int) -> np.ndarray:
    """The indices (ascending) of the points ``minmax_decimate`` keeps."""
    columns, n = max(1, int(columns)), len(x)
    if n <= columns:
        return np.arange(n)
    x = np.asarray(x, np.float64)
    lo, span = x.min(), x.max() - x.min()
    if not span > 0:
        bucket = np.zeros(n, np.int64)
    else:  # also well defined (if not pixel-exact) for unsorted x
        bucket = np.clip(((x - lo) * (columns / span)).astype(np.int64), 0, columns - 1)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(bucket) != 0]))
    counts = np.diff(np.append(starts, n))
    index = np.arange(n)
    values = np.asarray(y, np.float64)
    nan = np.isnan(values)
    out = [np.minimum.reduceat(np.where(nan, index, n), starts), [0, n - 1]]
    for fill, reduce in ((np.inf, np.minimum), (-np.inf, np.maximum)):
        v = np.where(nan, fill, values)
        best = np.repeat(reduce.reduceat(v, starts), counts)
        out.append(np.minimum.reduceat(np.where(v == best, index, n), starts))
    keep = np.concatenate(out)
    return np.unique(keep[keep < n])
