"""The numbers of a timeline, from a ``CommunicationReport`` alone (pure numpy, no
TensorFlow, no matplotlib).

Every device runs the same phases in the same order: the collectives its forward and
backward passes need (activations, their gradients, the loss), its local gradient, then
each collective that sums the gradient (grouped by kind, mesh dims and groups, in program
order, bytes per device summed), then its velocity and its parameter update (local). The
phases are an order, not measured time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ...recording.communication import Collective, CommunicationReport
from ...recording.memory import format_bytes
from ...specs import MeshSpec
from ..paths.geometry import rule_name

LOCAL_BEFORE = ("local gradient",)
LOCAL_AFTER = ("velocity", "parameter")
# what a collective the forward and backward passes run serves: before the local gradient is whole
WHILE_GRADIENT = ("activation", "activation gradient", "loss")


@dataclasses.dataclass(frozen=True)
class Phase:
    """One phase of one update on every device. ``name``: ``"local gradient"``,
    ``"velocity"``, ``"parameter"`` or a collective's ``"all-reduce over batch"``;
    ``bytes_per_device``: what each device contributes (0 for a local phase);
    ``groups``: the device ids that take part together (empty for a local phase);
    ``serves``: what the collectives serve (``"gradient"``, ...)."""

    name: str
    kind: str
    mesh_dims: tuple[str, ...] = ()
    bytes_per_device: int = 0
    groups: tuple[tuple[int, ...], ...] = ()
    serves: tuple[str, ...] = ()

    @property
    def local(self) -> bool:
        return not self.groups

    def group_of(self, device: int) -> int | None:
        """The index in ``groups`` of the group ``device`` belongs to (None: local)."""
        for i, group in enumerate(self.groups):
            if device in group:
                return i
        return None


@dataclasses.dataclass(frozen=True)
class UpdateTimeline:
    """The ordered ``phases`` of one update, the same on every device of ``mesh``
    (``labels``: each device's name and mesh coordinates, ``CPU:5 (batch=1, model=1)``)."""

    mesh: MeshSpec
    phases: tuple[Phase, ...]

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(
            f"{self.mesh.short_device_names[d]} ("
            + ", ".join(f"{n}={c}" for n, c in zip(self.mesh.dim_names, self.mesh.device_coords(d)))
            + ")"
            for d in range(self.mesh.num_devices)
        )

    @property
    def collectives(self) -> tuple[Phase, ...]:
        return tuple(p for p in self.phases if not p.local)

    def totals(self) -> dict[tuple[str, ...], int]:
        """Bytes per device per update, by the mesh dims the collectives run along."""
        out: dict[tuple[str, ...], int] = {}
        for p in self.collectives:
            out[p.mesh_dims] = out.get(p.mesh_dims, 0) + p.bytes_per_device
        return out

    @property
    def bytes_per_device(self) -> int:
        return sum(p.bytes_per_device for p in self.collectives)

    def device_phases(self, device: int) -> tuple[tuple[str, int, int | None], ...]:
        """``(phase name, bytes it sends, its group's index or None)`` for ``device``."""
        return tuple((p.name, p.bytes_per_device, p.group_of(device)) for p in self.phases)


def _check(report: object) -> CommunicationReport:
    if not isinstance(report, CommunicationReport):
        raise ValueError(
            "Expected a dtsgd_viz.CommunicationReport (dtsgd_viz.communication(step)). "
            f"Received: {type(report).__name__}."
        )
    return report


def _key(c: Collective) -> tuple:
    return (c.kind, c.mesh_dims, c.groups)


def update_timeline(report: CommunicationReport) -> UpdateTimeline:
    """The phases of one update of ``report``'s step: one phase per (kind, mesh dims,
    groups) of the collectives that move bytes for the forward and backward passes
    (``WHILE_GRADIENT``), the local gradient, one per (kind, mesh dims, groups) of the
    others (the gradient's sums; in program order, bytes per device summed), the
    velocity and the parameter update."""
    report = _check(report)
    merged: dict[tuple, list[Collective]] = {}
    for c in report.collectives:
        if c.mesh_dims:
            merged.setdefault((*_key(c), c.serves in WHILE_GRADIENT), []).append(c)
    before, after = [], []
    for (kind, dims, groups, passes), items in merged.items():
        serves = tuple(dict.fromkeys(c.serves for c in items))
        name = f"{kind} over {' x '.join(dims)}" + (" (activations)" if passes else "")
        phase = Phase(name, kind, dims, sum(c.bytes_per_device for c in items), groups, serves)
        (before if passes else after).append(phase)
    phases = [*before, *(Phase(name, "local") for name in LOCAL_BEFORE), *after]
    phases += [Phase(name, "local") for name in LOCAL_AFTER]
    return UpdateTimeline(report.mesh, tuple(phases))


def _signature(report: CommunicationReport) -> tuple:
    return tuple(
        (c.kind, c.mesh_dims, c.groups, c.bytes_per_device, c.shape, c.dtype, c.serves, c.variable)
        for c in report.collectives
    )


def same_collectives(a: CommunicationReport, b: CommunicationReport) -> bool:
    """Whether ``a`` and ``b`` run the same collectives in the same order: kind, mesh
    dims, groups, operand shape, dtype, bytes and what each serves."""
    return _signature(_check(a)) == _signature(_check(b))


def timeline_finding(reports: Mapping[str, CommunicationReport]) -> str:
    """One line comparing the runs' communication per update, from the reports: the last
    runs' compiled collectives when they are all the same (``"Identical collectives for
    momentum and Nesterov: 612 B per device per update"``), or how they differ."""
    if not isinstance(reports, Mapping) or not reports:
        raise ValueError(
            f"reports must be a non-empty mapping {{run name: CommunicationReport}}. Received: {reports!r}."
        )
    for name, r in reports.items():
        if not isinstance(r, CommunicationReport):
            raise ValueError(
                f"reports[{name!r}] must be a dtsgd_viz.CommunicationReport. Received: {type(r).__name__}."
            )
    names = list(reports)
    sizes = {n: update_timeline(reports[n]).bytes_per_device for n in names}
    first, last = names[0], names[-1]
    if len(names) == 1:
        return f"{rule_name(first)} sends {format_bytes(sizes[first])} per device per update"
    if all(same_collectives(reports[first], reports[n]) for n in names[1:]):
        runs = " and ".join(map(rule_name, names))
        return f"Identical collectives for {runs}: {format_bytes(sizes[last])} per device per update"
    parts = ", ".join(f"{n} {format_bytes(sizes[n])}" for n in names)
    if len(set(sizes.values())) == 1:
        return f"The runs' collectives differ (same {format_bytes(sizes[first])} per device per update)"
    return f"The runs send different bytes per device per update: {parts}"
