"""The layout view's words (pure): device lists, slices, axis labels and the finding.

A block is named by every device holding it, in the first form that fits
(``device_forms``: the full names, JAX's ``CPU 0,16,32``, the bare ids)::

    >>> device_forms((0, 1, 2, 3), ["CPU:0", "CPU:1", "CPU:2", "CPU:3"])[1]
    'CPU 0-3'
    >>> shortest_devices(range(0, 16, 2))
    'd0,d2..d14'
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ...specs import UNSHARDED

if TYPE_CHECKING:
    from ...geometry import ShardGeometry
    from ...specs import LayoutSpec


def text_width_pt(text: str, fontsize: float) -> float:
    """About how wide ``text`` is in points (DejaVu Sans, slightly generous)."""
    return fontsize * sum(
        0.36 if ch in ",.:;'| " else 0.45 if ch in "[]()-=" else 0.74 if ch.isupper() or ch in "mw" else 0.64
        for ch in text
    )


def slice_text(slices: Iterable[slice]) -> str:
    """``[0:4, 2:4]``: the element ranges of a block."""
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in slices) + "]"


def compact_devices(devices: Iterable[int]) -> str:
    """``d0,d4`` for a few devices; runs of three or more as ``d0-d3``."""
    runs: list[list[int]] = []
    for d in devices:
        if runs and d == runs[-1][1] + 1:
            runs[-1][1] = d
        else:
            runs.append([d, d])
    return ",".join(f"d{a}" if a == b else f"d{a},d{b}" if b == a + 1 else f"d{a}-d{b}" for a, b in runs)


def shortest_devices(devices: Iterable[int]) -> str:
    """The shortest form: ``d0,d2..d14`` for evenly spaced devices, else ``d3+7``."""
    devices = list(devices)
    if len(devices) <= 2:
        return compact_devices(devices)
    steps = {b - a for a, b in zip(devices, devices[1:])}
    if len(steps) == 1:
        return compact_devices(devices) if steps == {1} else f"d{devices[0]},d{devices[1]}..d{devices[-1]}"
    return f"d{devices[0]}+{len(devices) - 1}"


def device_forms(devices: Sequence[int], names: Sequence[str]) -> tuple[str, str, str]:
    """A replica group's names, most to least explicit: ``CPU:0, CPU:4``, JAX's
    ``CPU 0,4`` (runs of three or more as ``0-3``), the bare ids ``0,4``."""
    full = ", ".join(names[d] for d in devices)
    heads = {names[d].rsplit(":", 1)[0] for d in devices}
    ids = [names[d].rsplit(":", 1)[-1] for d in devices]
    if len(heads) != 1 or not all(i.isdigit() for i in ids):
        return full, full, ",".join(map(str, devices))
    jax = f"{heads.pop()} " + compact_devices(int(i) for i in ids).replace("d", "")
    return full, jax, ",".join(map(str, devices))


def bare_ids(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` names devices by bare id (``0,16``), which only a note can
    say are device ids."""
    return any(t and all(ch.isdigit() or ch in ",\n" for ch in t) for t in texts)


def ids_text(names: Sequence[str]) -> str:
    """``the numbers are device ids (0 = CPU:0, ..., 7 = CPU:7)``."""
    return f"the numbers are device ids (0 = {names[0]}, ..., {len(names) - 1} = {names[-1]})"


def dim_text(layout: LayoutSpec, dim: int, short: bool = False) -> str:
    """``tensor dim 1 — sharded over 'model' (4)`` or ``tensor dim 0 — not sharded``;
    ``short``: ``dim 1 — over 'model' (4)``, for small faceted panels."""
    spec = layout.sharding_specs[dim]
    over = "over" if short else "sharded over"
    how = "not sharded" if spec == UNSHARDED else f"{over} '{spec}' ({layout.mesh.dim_size(spec)})"
    return f"{'dim' if short else 'tensor dim'} {dim} — {how}"


def mesh_dim_role(layout: LayoutSpec, mesh_dim: str) -> str:
    """What a mesh dim does to the tensor: ``model: cuts tensor dim 1 (4 ways)``, or
    ``batch: unused -> 2 copies`` (devices along an unused mesh dim hold the same block).

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> [mesh_dim_role(spec, d) for d in ("batch", "model")]
    ['batch: unused -> 2 copies', 'model: cuts tensor dim 1 (4 ways)']
    """
    size = layout.mesh.dim_size(mesh_dim)
    if mesh_dim in layout.sharding_specs:
        return f"{mesh_dim}: cuts tensor dim {layout.sharding_specs.index(mesh_dim)} ({size} ways)"
    return f"{mesh_dim}: unused -> " + (f"{size} copies" if size > 1 else "no copies (size 1)")


def copies_text(layout: LayoutSpec) -> str:
    """Where the copies come from, one role per mesh dim (unused dims first)."""
    dims = layout.mesh.dim_names
    unused = [d for d in dims if d not in layout.sharding_specs]
    return "mesh dims: " + " · ".join(mesh_dim_role(layout, d) for d in unused + [d for d in dims if d not in unused])


def copied_over(layout: LayoutSpec) -> tuple[str, ...]:
    """The mesh dims (of size > 1) the layout does not use: where every copy comes from."""
    return tuple(d for d in layout.mesh.dim_names if d not in layout.sharding_specs and layout.mesh.dim_size(d) > 1)


def finding_text(geom: ShardGeometry, layout: LayoutSpec, prefix: str) -> str:
    """The layout figure's title: how many distinct blocks there are and, with copies,
    on how many devices each lives and over which mesh dims it is copied.

    >>> from dtsgd_viz.geometry import shard_geometry
    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> spec = LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4}))
    >>> finding_text(shard_geometry((8, 8), spec), spec, "c (8, 8)")
    'c (8, 8): 4 distinct 8x2 blocks, each on 2 devices (copied over batch)'
    """
    n, unique = geom.num_devices, geom.num_unique
    blocks = "x".join(map(str, geom.local_shape))
    over = ", ".join(copied_over(layout))
    if n == unique:
        return (
            f"{prefix}: 1 device holds the whole tensor"
            if n == 1
            else f"{prefix}: {n} devices, {n} distinct {blocks} blocks"
        )
    if unique == 1:
        return f"{prefix}: all {n} devices hold the whole tensor (copied over {over})"
    return f"{prefix}: {unique} distinct {blocks} blocks, each on {n // unique} devices (copied over {over})"


def short_finding(geom: ShardGeometry, prefix: str) -> str:
    """The finding in a few words, over one small axes: ``w (8, 8): 4 blocks x 2 copies``."""
    copies, s = geom.num_devices // geom.num_unique, "s" * (geom.num_unique > 1)
    if copies == 1:
        return f"{prefix}: {geom.num_unique} distinct block{s}"
    return f"{prefix}: {geom.num_unique} block{s} x {copies} copies"
