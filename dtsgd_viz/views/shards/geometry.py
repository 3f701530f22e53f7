"""Pure geometry and data for the shard values view: no matplotlib, no TensorFlow.

A global tensor of any rank is drawn as one 2-D image: rank 0 as 1x1, rank 1 as a
1xN strip, rank 2 directly, rank 3+ with the leading dims flattened into rows
(C order), so the last dim stays the columns. Each device block becomes one or
more rectangles of that image, in element units (cell ``(r, c)`` spans
``[c, c+1] x [r, r+1]``)::

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
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ...specs import short_device_names  # noqa: F401 - the shard views import it from here
from ..core.empty import check_not_empty
from ..core.steps import update_position

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...geometry import ShardGeometry
    from ...recording import Recording
    from ...specs import LayoutSpec

LOG_RANGE = 100.0
"""Norm panels switch to a log colour scale when max/min of the positive finite
norms exceeds this."""


def updates_text(steps: Iterable[int] | np.ndarray) -> str:
    """The recorded updates in a few words: ``1..6``, ``10, 20, .., 100 (every 10)``."""
    steps = [int(s) for s in steps]
    if len(steps) <= 4:
        return ", ".join(map(str, steps))
    gaps = set(np.diff(steps).tolist())
    if gaps == {1}:
        return f"{steps[0]}..{steps[-1]}"
    if len(gaps) == 1:
        return f"{steps[0]}, {steps[1]}, .., {steps[-1]} (every {gaps.pop()})"
    return f"{steps[0]}, {steps[1]}, .., {steps[-1]} ({len(steps)} recorded)"


def update_index(recording: Recording, step: int | None = None) -> int:
    """The index into ``recording.steps`` of optimizer update ``step`` (as
    ``recording.steps`` counts: the first update is 1; -1 the last, -2 the one before,
    ... -n the first; None the last). Raises ValueError naming what was received and
    the recorded updates (``views.core.steps``, the convention every view shares)."""
    check_not_empty(recording)
    return update_position(step, recording.steps)


# kept for callers that hold an index into recording.steps (a slider position)
def step_index(recording: Recording, step: int) -> int:
    """The non-negative index into ``recording.steps`` of the index ``step`` (negative
    counts from the end, like a list). Raises ValueError naming the valid range."""
    check_not_empty(recording)
    n = len(recording)
    if isinstance(step, bool) or not isinstance(step, (int, np.integer)):
        raise TypeError(f"step must be an int index into recording.steps. Received: {step!r}.")
    if not -n <= step < n:
        raise ValueError(
            f"index {step} is out of range for a recording of {n} updates. Allowed: "
            f"{-n}..{n - 1} (an index into recording.steps, which holds updates "
            f"{updates_text(recording.steps)})."
        )
    return int(step) % n


def image_shape(shape: Sequence[int]) -> tuple[int, int]:
    """``(rows, cols)`` of the image showing a tensor of ``shape``."""
    shape = tuple(shape)
    if len(shape) == 0:
        return (1, 1)
    if len(shape) == 1:
        return (1, shape[0])
    return (math.prod(shape[:-1]), shape[-1])


def as_image(values: np.ndarray) -> np.ndarray:
    """One global tensor (any rank) as its 2-D image (a reshape, no copy if possible)."""
    values = np.asarray(values)
    return values.reshape(image_shape(values.shape))


def slice_boundaries(shape: Sequence[int]) -> tuple[int, ...]:
    """Image rows between consecutive dim-0 slices of a rank-3+ tensor (empty below rank 3)."""
    shape = tuple(shape)
    if len(shape) < 3:
        return ()
    rows_per = math.prod(shape[1:-1])
    return tuple(rows_per * i for i in range(1, shape[0]))


def _runs(sorted_ints: np.ndarray) -> list[tuple[int, int]]:
    """Maximal runs of consecutive integers as ``(start, length)``."""
    if len(sorted_ints) == 0:
        return []
    breaks = np.nonzero(np.diff(sorted_ints) != 1)[0] + 1
    return [(int(r[0]), len(r)) for r in np.split(sorted_ints, breaks)]


Rect = tuple[int, int, int, int]


def block_rects(block: tuple[slice, ...], shape: Sequence[int]) -> tuple[Rect, ...]:
    """Rectangles ``(x, y, width, height)`` in image cells covering one block."""
    shape = tuple(shape)
    if len(shape) == 0:
        return ((0, 0, 1, 1),)
    cols = block[-1]
    if len(shape) == 1:
        return ((cols.start, 0, cols.stop - cols.start, 1),)
    lead = np.meshgrid(*[np.arange(s.start, s.stop) for s in block[:-1]], indexing="ij")
    rows = np.sort(np.ravel_multi_index([g.ravel() for g in lead], shape[:-1]))
    return tuple((cols.start, start, cols.stop - cols.start, length) for start, length in _runs(rows))


def device_label(names: Sequence[str]) -> str:
    """``CPU:0`` / ``CPU:0,4`` / ``CPU:0-7``: replicas grouped, a shared prefix once."""
    names = list(names)
    prefixes = {n.rsplit(":", 1)[0] for n in names}
    if len(prefixes) != 1 or not all(n.rsplit(":", 1)[-1].isdigit() and ":" in n for n in names):
        return ",".join(names)
    ids = sorted(int(n.rsplit(":", 1)[1]) for n in names)
    parts = [str(s) if k == 1 else (f"{s},{s + 1}" if k == 2 else f"{s}-{s + k - 1}") for s, k in _runs(np.array(ids))]
    return f"{prefixes.pop()}:{','.join(parts)}"


@dataclasses.dataclass(frozen=True)
class BlockPatch:
    """One replica group's block: the devices holding it, its label, its rectangles."""

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
    specs = layout.sharding_specs

    def dim(i):
        s = specs[i]
        return f"dim {i} ({'unsharded' if s == 'unsharded' else f'sharded over {s!r}'})"

    rank = len(specs)
    if rank == 0:
        return "(a scalar)", "", ""
    if rank == 1:
        return dim(0), "", ""
    if rank == 2:
        return dim(1), dim(0), ""
    lead = " x ".join(f"d{i}" for i in range(rank - 1))
    return (
        dim(rank - 1),
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
    """``(n_steps, n_devices)``: the L2 norm of each device's shard at each step
    (mesh device order, replicas repeated; NaN/Inf where a shard held one).
    A ``Recorder(mode="stats")`` recording stored these norms; a full one computes them
    from its unique blocks."""
    return np.asarray(recording.shard_stats(name, kind)[..., 0], dtype=np.float64)


def block_norm_lines(recording: Recording, name: str, kind: str = "velocity") -> tuple[np.ndarray, np.ndarray]:
    """``(updates, lines)``: the recorded update numbers and, per replica group (one line
    per unique block, replicas once), its shard's L2 norm at each (float64; NaN where
    it was not finite, and where it was 0, which a log axis cannot show)."""
    norms = shard_norms(recording, name, kind)
    geometry = recording.geometry(name)
    lines = np.stack([norms[:, devices[0]] for devices in geometry.replica_groups], axis=1)
    with np.errstate(invalid="ignore"):
        lines = np.where(np.isfinite(lines) & (lines > 0), lines, np.nan)
    return np.asarray(recording.steps), lines


def run_limit(values: np.ndarray) -> float:
    """Largest finite magnitude over a whole run (every step): the fixed colour limit."""
    return symmetric_limit(values)


def norm_scale(norms: np.ndarray) -> tuple[str, float, float]:
    """``(scale, vmin, vmax)`` for a norm panel: ``"log"`` when the positive finite
    norms span more than ``LOG_RANGE``, else ``"linear"`` from 0."""
    norms = np.asarray(norms, dtype=float)
    finite = norms[np.isfinite(norms)]
    positive = finite[finite > 0]
    vmax = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
    if positive.size and vmax / positive.min() > LOG_RANGE:
        return "log", float(positive.min()), vmax
    return "linear", 0.0, vmax


def flagged_steps(recording: Recording, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Indices into ``recording.steps`` where variable ``name`` held NaN/Inf, and
    where its replicated copies disagreed (any kind)."""
    v = recording.variables.index(recording.record(name).name)
    nonfinite = np.nonzero(np.asarray(recording.nonfinite)[:, v] != 0)[0]
    mismatch = np.nonzero(np.asarray(recording.mismatch)[:, v] != 0)[0]
    return nonfinite, mismatch


def settings_text(recording: Recording, index: int) -> str:
    """``lr=0.5, momentum=0.9, Nesterov`` at recorded step ``index`` (``heavy-ball``
    for momentum without Nesterov: the rule named either way)."""
    hp = recording.hyperparameters
    text = f"SGD lr={float(hp.learning_rate[index]):g}, momentum={hp.momentum:g}"
    return text + (", Nesterov" if hp.nesterov else ", heavy-ball" if hp.momentum else "")


def iteration_ticks(steps: ArrayLike, nbins: int = 8) -> tuple[list[int], list[str]]:
    """Row indices and labels for an axis of recorded steps: round iteration numbers
    (multiples of 1, 2 or 5 x 10^k) plus the first, at the rows that hold them."""
    steps = np.asarray(steps)
    if len(steps) == 0:
        return [], []
    first, last = int(steps[0]), int(steps[-1])
    raw = max((last - first) / max(nbins, 1), 1)
    exp = 10 ** math.floor(math.log10(raw))
    base = next(m * exp for m in (1, 2, 5, 10) if m * exp >= raw)
    values = [first] + [
        v for v in range(int(math.ceil(first / base) * base), last + 1, int(base)) if v > first + base / 2
    ]
    rows = sorted({int(np.argmin(np.abs(steps - v))) for v in values})
    return rows, [str(int(steps[r])) for r in rows]


def device_ticks(device_names: Sequence[str]) -> tuple[list[str], str]:
    """Short tick labels for devices and the common prefix they drop (``CPU:``)."""
    names = list(device_names)
    heads = {n.rsplit(":", 1)[0] for n in names}
    if len(heads) == 1 and all(":" in n and n.rsplit(":", 1)[1].isdigit() for n in names):
        return [n.rsplit(":", 1)[1] for n in names], heads.pop() + ":"
    return names, ""


def minmax_decimate(x: ArrayLike, y: ArrayLike, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` thinned to what ``columns`` pixel columns can show: the points are cut
    into ``columns`` equal spans of x (x ascending, as updates are) and each span keeps
    its first smallest and first largest value and its first NaN (so a gap stays a gap),
    in their order, plus the first and last point. Spikes and the extremes survive, and
    every point lies within its span's kept min..max. Unchanged (the same arrays) when
    there are no more points than columns::

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
    """The indices (ascending) of the points ``minmax_decimate`` keeps: every index when
    there are no more points than ``columns``."""
    columns = max(1, int(columns))
    n = len(x)
    if n <= columns:
        return np.arange(n)
    keep = np.sort(np.concatenate([_span_keep(np.asarray(x), np.asarray(y), columns), [0, n - 1]]))
    return keep[np.concatenate([[True], np.diff(keep) > 0])]


def _span_keep(x, y, columns):
    """Indices of each span's first min, first max and first NaN (``minmax_decimate``)."""
    n = len(x)
    x = np.asarray(x, np.float64)
    lo, span = x.min(), x.max() - x.min()
    if not span > 0:
        bucket = np.zeros(n, np.int64)
    else:  # spans of runs of x: also well defined (if not pixel-exact) for unsorted x
        bucket = np.clip(((x - lo) * (columns / span)).astype(np.int64), 0, columns - 1)
    starts = np.flatnonzero(np.concatenate([[True], np.diff(bucket) != 0]))
    counts = np.diff(np.append(starts, n))
    index = np.arange(n)
    values = np.asarray(y, np.float64)
    nan = np.isnan(values)
    out = []
    for fill, reduce in ((np.inf, np.minimum), (-np.inf, np.maximum)):
        v = np.where(nan, fill, values)
        best = np.repeat(reduce.reduceat(v, starts), counts)
        out.append(np.minimum.reduceat(np.where(v == best, index, n), starts))
    out.append(np.minimum.reduceat(np.where(nan, index, n), starts))
    keep = np.concatenate(out)
    return keep[keep < n]
