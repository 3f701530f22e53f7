"""The phases of one update on every device, from a ``CommunicationReport`` (an order, not time)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ...recording.communication import Collective, CommunicationReport
from ...recording.memory import format_bytes
from ...specs import MeshSpec
from ..paths.geometry import rule_name

WHILE_GRADIENT = ("activation", "activation gradient", "loss")  # served before the local gradient is whole


@dataclasses.dataclass(frozen=True)
class Phase:
    """One phase of one update: a local step (no ``groups``) or a collective's bytes per device, groups, uses."""

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
        """The index of ``device``'s group in ``groups`` (None: local)."""
        return next((i for i, group in enumerate(self.groups) if device in group), None)


@dataclasses.dataclass(frozen=True)
class UpdateTimeline:
    """The ordered ``phases`` of one update, the same on every device of ``mesh``."""

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

    @property
    def bytes_per_device(self) -> int:
        return sum(p.bytes_per_device for p in self.collectives)


def _check(report: object, where: str = "") -> CommunicationReport:
    if not isinstance(report, CommunicationReport):
        raise ValueError(
            f"Expected a dtsgd_viz.CommunicationReport{where} (dtsgd_viz.communication(step)). "
            f"Received: {type(report).__name__}."
        )
    return report


def update_timeline(report: CommunicationReport) -> UpdateTimeline:
    """The phases: the passes' collectives, local gradient, the gradient's merged collectives, velocity, parameter."""
    report = _check(report)
    merged: dict[tuple, list[Collective]] = {}
    for c in report.collectives:
        if c.mesh_dims:
            merged.setdefault((c.kind, c.mesh_dims, c.groups, c.serves in WHILE_GRADIENT), []).append(c)
    before, after = [], []
    for (kind, dims, groups, passes), items in merged.items():
        serves = tuple(dict.fromkeys(c.serves for c in items))
        name = f"{kind} over {' x '.join(dims)}" + (" (activations)" if passes else "")
        phase = Phase(name, kind, dims, sum(c.bytes_per_device for c in items), groups, serves)
        (before if passes else after).append(phase)
    local = [Phase(name, "local") for name in ("local gradient", "velocity", "parameter")]
    return UpdateTimeline(report.mesh, (*before, local[0], *after, *local[1:]))


def _signature(report: CommunicationReport) -> tuple:
    return tuple(
        (c.kind, c.mesh_dims, c.groups, c.bytes_per_device, c.shape, c.dtype, c.serves, c.variable)
        for c in report.collectives
    )


def same_collectives(a: CommunicationReport, b: CommunicationReport) -> bool:
    """Whether ``a`` and ``b`` run the same collectives in the same order."""
    return _signature(_check(a)) == _signature(_check(b))


def timeline_finding(reports: Mapping[str, CommunicationReport]) -> str:
    """One line comparing the runs' communication per update: identical collectives, or how they differ."""
    if not isinstance(reports, Mapping) or not reports:
        raise ValueError(
            f"reports must be a non-empty mapping {{run name: CommunicationReport}}. Received: {reports!r}."
        )
    for name, r in reports.items():
        _check(r, f" as reports[{name!r}]")
    names = list(reports)
    sizes = {n: update_timeline(reports[n]).bytes_per_device for n in names}
    first = names[0]
    if len(names) == 1:
        return f"{rule_name(first)} sends {format_bytes(sizes[first])} per device per update"
    if all(same_collectives(reports[first], reports[n]) for n in names[1:]):
        others = " and ".join(f"{rule_name(n)}'s" for n in names[1:])
        have = "step has" if len(names) == 2 else "steps have"
        said = f"{others} {have} {rule_name(first)}'s collectives: {format_bytes(sizes[first])} per device per update"
        return said[:1].upper() + said[1:]
    parts = ", ".join(f"{n} {format_bytes(sizes[n])}" for n in names)
    if len(set(sizes.values())) == 1:
        return f"The runs' collectives differ (same {format_bytes(sizes[first])} per device per update)"
    return f"The runs send different bytes per device per update: {parts}"
