"""What an update moves between devices, as plain data (no TensorFlow, no matplotlib).

A ``CommunicationReport`` lists the collectives in the program DTensor compiled for one
step (``dtsgd_viz.communication(step)`` measures it); a ``CommunicationPlan`` predicts the
gradient all-reduces from layouts alone (``communication_plan``): with the batch sharded
over the mesh dims ``batch_dims``, each device's gradient of a variable is a partial sum
over its own examples, so it is summed over every batch dim; a variable sharded along a
batch dim is gathered over it first (see ``communication_plan``). Each device contributes
its shard of the gradient::

    >>> from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
    >>> mesh = MeshSpec.create({"batch": 2, "model": 4})
    >>> plan = communication_plan({
    ...     "kernel": ((24, 64), "float32", LayoutSpec(("unsharded", "model"), mesh)),
    ...     "bias": ((64,), "float32", LayoutSpec(("model",), mesh))})
    >>> [(e.variable, e.mesh_dims, e.bytes_per_device) for e in plan.entries]
    [('kernel', ('batch',), 1536), ('bias', ('batch',), 64)]
    >>> plan.totals()
    {('batch',): 1600}

Bytes per device are what each device contributes to a collective (its operand), not the
bytes on the wire, which depend on how the collective is implemented (a ring all-reduce
sends about twice its operand).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..specs import UNSHARDED, LayoutSpec, MeshSpec
from .memory import format_bytes, itemsize, memory_plan

KINDS = ("all-reduce", "all-gather", "all-scatter", "all-to-all", "reduce-scatter", "collective-permute", "broadcast")
"""The collectives DTensor's SPMD expansion emits, by the names a report uses."""

SERVES = ("gradient", "activation gradient", "activation", "loss", "other")
_REDUCTIONS = ("all-reduce", "reduce-scatter")  # the collectives that sum a gradient


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _dims(mesh: MeshSpec, dims) -> tuple[str, ...]:
    dims = (dims,) if isinstance(dims, str) else tuple(dims)
    unknown = [d for d in dims if d not in mesh.dim_names]
    if unknown:
        raise ValueError(f"Mesh dims {unknown} are not in {mesh}. Allowed: {list(mesh.dim_names)}.")
    return tuple(d for d in mesh.dim_names if d in dims)  # in mesh order


@dataclasses.dataclass(frozen=True)
class Collective:
    """One collective of a compiled step.

    ``groups`` are the mesh device ids that reduce (or gather, ...) together; ``mesh_dims``
    the mesh dims along which a group's devices differ. ``shape`` and ``dtype`` are the
    operand each device contributes (``bytes_per_device`` of it). ``serves`` says what it is
    for where that can be told (``"gradient"`` of ``variable``, ``"activation gradient"``,
    ``"loss"``, ...; ``"other"`` otherwise, ``variable`` then naming the variable it moves,
    if any); ``time_us`` its measured time, when measured. ``name``: the op whose output
    it communicates.

    ``executed_as`` is the lowered op that runs it (``"CollectiveReduceV2"``, ...),
    ``executed_node`` that node and ``executed_bytes`` its operand on one device, which
    can differ: DTensor fuses all-reduces into one padded buffer (``fused_with`` names
    the other pieces), and runs a CPU all-gather as an all-reduce of a zero-padded full
    buffer."""

    kind: str
    mesh_dims: tuple[str, ...]
    bytes_per_device: int
    dtype: str
    shape: tuple[int, ...]
    serves: str = "other"
    variable: str | None = None
    reduce_op: str | None = None
    groups: tuple[tuple[int, ...], ...] = ()
    time_us: float | None = None
    name: str = ""
    executed_as: str = ""
    executed_node: str = ""
    executed_bytes: int | None = None
    fused_with: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {KINDS}. Received: {self.kind!r}.")
        if self.serves not in SERVES:
            raise ValueError(f"serves must be one of {SERVES}. Received: {self.serves!r}.")
        object.__setattr__(self, "mesh_dims", tuple(self.mesh_dims))
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        object.__setattr__(self, "groups", tuple(tuple(int(d) for d in g) for g in self.groups))
        object.__setattr__(self, "fused_with", tuple(self.fused_with))

    @property
    def what(self) -> str:
        """``"gradient of w"``, ``"activation gradient"``, ..."""
        if self.serves == "gradient" and self.variable:
            return f"gradient of {self.variable}"
        if self.serves != "other":
            return self.serves
        return f"{self.name or 'other'} ({self.variable})" if self.variable else (self.name or "other")

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["mesh_dims"], d["shape"] = list(self.mesh_dims), list(self.shape)
        d["groups"] = [list(g) for g in self.groups]
        d["fused_with"] = list(self.fused_with)
        return d

    @classmethod
    def from_dict(cls, d: Mapping) -> Collective:
        return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


def _totals(items) -> dict[tuple[str, ...], int]:
    out: dict[tuple[str, ...], int] = {}
    for c in items:
        if c.mesh_dims:
            out[c.mesh_dims] = out.get(c.mesh_dims, 0) + c.bytes_per_device
    return out


@dataclasses.dataclass(frozen=True)
class CommunicationReport:
    """The collectives in the program DTensor compiled for one step (``collectives``, in
    program order). ``ran_step``: whether measuring it ran the step (the variables it
    touched were restored); ``note``: how it was measured. Saved with a recording
    (``Recording.save`` of ``recording.with_communication(report)``) or alone
    (``save``/``load``, JSON); read without TensorFlow."""

    mesh: MeshSpec
    collectives: tuple[Collective, ...]
    function: str = ""
    ran_step: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "collectives", tuple(self.collectives))

    def select(self, serves: str | None = None, kind: str | None = None) -> tuple[Collective, ...]:
        return tuple(
            c for c in self.collectives if (serves is None or c.serves == serves) and (kind is None or c.kind == kind)
        )

    @property
    def gradients(self) -> dict[str, Collective]:
        """``{variable: its gradient's all-reduce}`` (or reduce-scatter: the sum; a gradient
        summed in another layout and then gathered to the variable's also has that
        all-gather among ``select("gradient")``, see ``gradient_path``)."""
        return {c.variable: c for c in self.select("gradient") if c.variable and c.kind in _REDUCTIONS}

    def gradient_path(self, variable: str) -> tuple[Collective, ...]:
        """Every collective that carries ``variable``'s gradient, in program order: its sum
        and whatever moves it on to the variable's layout (an all-gather, an all-to-all)."""
        return tuple(c for c in self.select("gradient") if c.variable == variable)

    @property
    def extra(self) -> tuple[Collective, ...]:
        """What DTensor adds beyond the gradients' all-reduces: activation collectives,
        relayouts, the loss."""
        return tuple(c for c in self.collectives if c.serves != "gradient")

    def totals(self, serves: str | None = None) -> dict[tuple[str, ...], int]:
        """Bytes per device per update, by the mesh dims the collectives run along."""
        return _totals(self.select(serves))

    @property
    def bytes_per_device(self) -> int:
        return sum(c.bytes_per_device for c in self.collectives if c.mesh_dims)

    def compare(self, plan: CommunicationPlan) -> list[str]:
        """How the measured gradient all-reduces differ from ``plan`` (empty: they agree
        exactly: the same variables, mesh dims and bytes per device, and no gradient moves
        further than its sum). A gradient DTensor summed in another layout and then
        gathered (or otherwise moved) to the variable's says so: ``"w: predicted 128 B over
        ('batch',), measured 32 B over ('batch',) and an all-gather of 32 B over
        ('model',)"``."""
        out = []
        measured = self.gradients
        for e in plan.entries:
            c = measured.get(e.variable)
            moved = "".join(
                f" and {_article(m.kind)} {m.kind} of {m.bytes_per_device} B over {m.mesh_dims}"
                for m in self.gradient_path(e.variable)
                if m.kind not in _REDUCTIONS and m.mesh_dims
            )
            if not e.mesh_dims:
                if c is not None:
                    out.append(f"{e.variable}: measured an all-reduce over {c.mesh_dims}{moved}, predicted none")
                continue
            if c is None:
                out.append(
                    f"{e.variable}: predicted {format_bytes(e.bytes_per_device)} over "
                    f"{e.mesh_dims}, measured none" + (f" (no sum{moved})" if moved else "")
                )
            elif (c.mesh_dims, c.bytes_per_device) != (e.mesh_dims, e.bytes_per_device) or moved:
                out.append(
                    f"{e.variable}: predicted {e.bytes_per_device} B over {e.mesh_dims}, "
                    f"measured {c.bytes_per_device} B over {c.mesh_dims}{moved}"
                )
            if e.gathered_over:
                out.extend(self._compare_gather(e))
        for name in sorted(set(measured) - {e.variable for e in plan.entries}):
            out.append(f"{name}: measured a gradient all-reduce the plan does not have")
        return out

    def _compare_gather(self, e: PlanEntry) -> list[str]:
        gathers = [
            c
            for c in self.select("other", "all-gather")  # the weight, not its gradient
            if c.variable == e.variable and c.mesh_dims == e.gathered_over
        ]
        if any(c.bytes_per_device == e.gathered_bytes for c in gathers):
            return []
        return [
            f"{e.variable}: predicted an all-gather of {e.gathered_bytes} B over {e.gathered_over}"
            f", measured {f'{gathers[0].bytes_per_device} B' if gathers else 'none'}"
        ]

    def to_dict(self) -> dict:
        return {
            "format": "dtsgd_viz.communication",
            "version": 1,
            "mesh": self.mesh.to_dict(),
            "function": self.function,
            "ran_step": self.ran_step,
            "note": self.note,
            "collectives": [c.to_dict() for c in self.collectives],
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> CommunicationReport:
        if not isinstance(d, Mapping) or d.get("format") != "dtsgd_viz.communication":
            raise ValueError(
                "Not a dtsgd_viz communication report (format "
                f"{d.get('format') if isinstance(d, Mapping) else type(d).__name__!r})."
            )
        return cls(
            MeshSpec.from_dict(d["mesh"]),
            tuple(map(Collective.from_dict, d["collectives"])),
            d.get("function", ""),
            bool(d.get("ran_step", False)),
            d.get("note", ""),
        )

    def save(self, path: str | os.PathLike[str]) -> str:
        path = os.fspath(path)
        with open(path, "w") as f:
            json.dump(self.to_dict(), f, indent=1)
        return path

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> CommunicationReport:
        with open(path) as f:
            return cls.from_dict(json.load(f))

    def __str__(self) -> str:
        lines = [
            f"communication of {self.function or 'one step'} on {self.mesh}: "
            f"{len(self.collectives)} collective{'s' * (len(self.collectives) != 1)}"
        ]
        rows = [
            (
                c.kind,
                "x".join(c.mesh_dims) or "-",
                c.what,
                str(c.shape),
                c.dtype,
                format_bytes(c.bytes_per_device),
                "" if c.time_us is None else f"{c.time_us:.0f} us",
            )
            for c in self.collectives
        ]
        lines += _rows(("kind", "along", "serves", "shape", "dtype", "per device", "time"), rows)
        lines.append("per update, per device: " + _totals_text(self.totals()))
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


@dataclasses.dataclass(frozen=True)
class PlanEntry:
    """The predicted gradient all-reduce of one trainable variable (``mesh_dims`` empty:
    none, the batch is not split over devices).

    A variable sharded along batch dims is first gathered over them for the step
    (``gathered_over``; each device contributes its shard, ``gathered_bytes``), so its
    gradient is computed in its layout without those dims and summed over every batch dim.
    ``caveat`` says why the layouts alone cannot settle this entry ("" when they do);
    ``alternative`` is the all-reduce ``(mesh_dims, bytes_per_device)`` of the other
    outcome, when there is one that layouts can price."""

    variable: str
    mesh_dims: tuple[str, ...]
    bytes_per_device: int
    shape: tuple[int, ...]
    dtype: str
    block_shape: tuple[int, ...]
    gathered_over: tuple[str, ...] = ()
    gathered_bytes: int = 0
    caveat: str = ""
    alternative: tuple[tuple[str, ...], int] | None = None


@dataclasses.dataclass(frozen=True)
class CommunicationPlan:
    """Gradient all-reduces predicted from layouts (``communication_plan``)."""

    mesh: MeshSpec
    entries: tuple[PlanEntry, ...]
    batch_dims: tuple[str, ...]
    source: str = ""

    def totals(self) -> dict[tuple[str, ...], int]:
        """Bytes per device per update, by the mesh dims the all-reduces run along."""
        return _totals(self.entries)

    @property
    def bytes_per_device(self) -> int:
        return sum(e.bytes_per_device for e in self.entries)

    @property
    def unpredictable(self) -> dict[str, str]:
        """``{variable: why}``: the entries the layouts alone cannot settle (see
        ``communication_plan``); ``communication(step)`` measures what DTensor does."""
        return {e.variable: e.caveat for e in self.entries if e.caveat}

    def entry(self, variable: str) -> PlanEntry:
        for e in self.entries:
            if e.variable == variable:
                return e
        raise ValueError(f"Unknown variable {variable!r}. This plan has: {[e.variable for e in self.entries]}.")

    def __str__(self) -> str:
        lines = [
            f"gradient all-reduces predicted from the layouts{' of ' + self.source if self.source else ''}"
            f" on {self.mesh}, batch sharded over {list(self.batch_dims)}"
        ]
        rows = [
            (
                e.variable,
                str(e.shape),
                str(e.block_shape),
                "x".join(e.mesh_dims) or "none",
                format_bytes(e.bytes_per_device),
            )
            for e in self.entries
        ]
        lines += _rows(("variable", "shape", "shard", "summed along", "per device"), rows)
        lines.append("per update, per device: " + _totals_text(self.totals()))
        lines += [
            f"gathered over {'x'.join(e.gathered_over)} first: {e.variable} "
            f"({format_bytes(e.gathered_bytes)} per device)"
            for e in self.entries
            if e.gathered_over
        ]
        lines += [f"not settled by the layouts: {name}: {why}" for name, why in self.unpredictable.items()]
        return "\n".join(lines)

    def _repr_pretty_(self, p: Any, cycle: bool) -> None:
        p.text(str(self))


def _rows(columns, rows) -> list[str]:
    widths = [max([len(c), *(len(r[i]) for r in rows)]) for i, c in enumerate(columns)]
    return ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in [columns, *rows]]


def _totals_text(totals) -> str:
    if not totals:
        return "nothing"
    return ", ".join(f"{format_bytes(b)} along {'x'.join(d)}" for d, b in totals.items())


def communication_plan(obj: Any, batch_dims: Sequence[str] = ("batch",)) -> CommunicationPlan:
    """The gradient all-reduces of one update, predicted from layouts with no devices.

    ``obj``: what ``memory_plan`` takes (``{name: (shape, dtype, LayoutSpec)}``, a
    ``Recording``, a tf-keras model or optimizer). ``batch_dims``: the mesh dims the
    batch is sharded over (those of size 1 split nothing). Each device's gradient of a
    variable is a partial sum over its own examples:

    - a variable whose layout uses no batch dim has its gradient summed over every batch
      dim, each device contributing its shard;
    - a variable sharded along a batch dim meets activations sharded along the same mesh
      dim in another axis (the examples), so DTensor gathers it over the batch dims its
      layout uses (``gathered_over``, its shard from each device), computes the gradient
      in its layout without them and sums that over every batch dim (more bytes than its
      shard), then slices it back.

    Layouts alone cannot tell, in these cases (``report.compare(plan)`` then lists the
    difference, and ``communication(step)`` measures what DTensor does):

    1. A variable sharded along a batch dim, when another tensor it meets in the step is
       sharded along that mesh dim in the same axis (a bias laid out like the kernel's
       columns): DTensor may then move the activations (all-to-alls) instead of gathering
       the variable, and sums its gradient over the other batch dims only, its shard's
       bytes. Every such variable is named in ``plan.unpredictable``, that outcome in its
       ``alternative``.
    2. A gradient computed whole and sliced afterwards: ``ShardedConv2D`` relays its
       kernel and bias out to replicated before the convolution, and a sparse embedding
       gradient is made dense (``dtsgd_viz.SGD`` on a mesh), so DTensor sums the whole
       tensor (4x the plan on a 4-way ``model`` dim). Named in ``plan.unpredictable`` when
       ``obj`` is a live tf-keras model (its layers say so); a layout table or a
       ``Recording`` has no layers to tell.
    3. A variable less sharded than the activations it meets (a replicated bias after a
       kernel sharded over ``model``): DTensor computes its gradient sharded like the
       activations, sums that shard over the batch dims (fewer bytes than the plan) and
       gathers the result to the variable's layout (``communication`` lists both, the
       sum and the gather, as the variable's gradient; ``compare`` names the gather): a
       replicated ``LayerNormalization`` gamma and beta after a dense layer sharded over
       ``model`` by unit.
    4. A trainable variable the step does not use, or whose gradient is not a sum over
       the examples (a penalty on the weights alone): nothing is summed.

    Each device's bytes are what it contributes to each collective::

        >>> from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
        >>> mesh = MeshSpec.create({"a": 2, "b": 2, "c": 2})
        >>> plan = communication_plan({"w": ((4, 8), "float32", LayoutSpec(("c", "a"), mesh))},
        ...                           batch_dims=("a", "b"))
        >>> e = plan.entry("w")
        >>> e.gathered_over, e.gathered_bytes, e.mesh_dims, e.bytes_per_device, e.alternative
        (('a',), 32, ('a', 'b'), 64, (('b',), 32))
    """
    mem = memory_plan(obj, momentum=False)
    dims = _dims(mem.mesh, batch_dims)
    split = tuple(d for d in dims if mem.mesh.dim_size(d) > 1)
    layered = {}
    from ..dtensor.model import is_tensorflow_object

    if is_tensorflow_object(obj):
        from ..dtensor.layer_plan import layer_caveats

        layered = layer_caveats(obj, split)
    entries = [_plan_entry(e, split, layered.get(e.name, "")) for e in mem.entries]
    return CommunicationPlan(mem.mesh, tuple(entries), dims, mem.source)


def _plan_entry(e, split: tuple[str, ...], caveat: str) -> PlanEntry:
    """The prediction for one ``MemoryEntry`` with the batch split over ``split``."""
    size, specs, block = itemsize(e.dtype), e.layout.sharding_specs, e.block_shape
    gathered = tuple(d for d in split if d in specs)
    if not gathered:
        return PlanEntry(e.name, split, math.prod(block) * size if split else 0, e.shape, e.dtype, block, caveat=caveat)
    rest = LayoutSpec(tuple(UNSHARDED if s in gathered else s for s in specs), e.layout.mesh)
    whole = math.prod(rest.shard_shape(e.shape)) * size
    unused = tuple(d for d in split if d not in gathered)
    alternative = (unused, math.prod(block) * size if unused else 0)
    why = (
        f"sharded along batch dim{'s' * (len(gathered) > 1)} {' and '.join(gathered)}: "
        f"predicted gathered over {'x'.join(gathered)}, its gradient summed over "
        f"{'x'.join(split)} ({format_bytes(whole)} per device); if another tensor it meets "
        f"is sharded along {' or '.join(gathered)} in the same axis, DTensor may move the "
        "activations instead and "
        + (
            f"sum it over {'x'.join(unused)} only ({format_bytes(alternative[1])} per device)"
            if unused
            else "not sum it at all"
        )
    )
    return PlanEntry(
        e.name,
        split,
        whole,
        e.shape,
        e.dtype,
        block,
        gathered,
        math.prod(block) * size,
        "; ".join(filter(None, (why, caveat))),
        alternative,
    )
