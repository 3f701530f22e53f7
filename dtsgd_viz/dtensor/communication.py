"""The collectives DTensor compiled for one call of a ``tf.function``, as a plain
``CommunicationReport``.

``communication(step)`` reads back the per-device program DTensor compiled for the
step (from the eager function library; see ``_program``), decodes each collective's
device groups, kind, operand and reduction, and traces its result to the variable
whose gradient it is (``_collectives``). It runs the step only when DTensor has not
compiled it for these argument layouts yet (DTensor compiles on the first call), and then
puts every variable the step captures back as it was (``_restore``).

This reads DTensor internals (node names, the group-key tables, the all-reduce
combiner's slices), checked on TensorFlow 2.21 (CPU). It was cross-checked against a
second route, DTensor's post-SPMD MLIR dump (``TF_CPP_VMODULE=dtensor_mlir_passes=1``
set before the DTensor device exists, ``TF_DUMP_GRAPH_PREFIX``), which gave the same
collectives (kind, bytes, groups) on the test meshes; that route is not built in, as it
needs set-up before the first DTensor op.
"""

from __future__ import annotations

import inspect
from typing import Any

from ..recording.communication import Collective, CommunicationReport
from ._collectives import decode, serves
from ._program import compiled_wrapper, flat_inputs, layout_string
from ._restore import quiet_stderr, run_restoring
from .convert import mesh_spec
from .devices import quiet_tensorflow_import
from .model import unique_names

__all__ = ["communication"]


def communication(
    fn: Any, *args: Any, run: bool | None = None, timings: bool = False, **kwargs: Any
) -> CommunicationReport:
    """The collectives in the program DTensor compiled for ``fn(*args, **kwargs)``.

    ``fn`` is a function, not an update number: a ``tf.function`` (or a
    ``ConcreteFunction``) that runs on a DTensor mesh, e.g. your training step
    (``tape.gradient`` and ``optimizer.apply_gradients``) or a tf-keras
    ``model.train_function`` (with ``args`` an iterator of its dataset:
    ``communication(model.train_function, iter(dataset))``); ``args``/``kwargs`` are
    what one call of it takes. ``run``: ``None`` reads the program DTensor already
    compiled for these argument layouts and runs ``fn`` once only when there is none;
    ``True`` runs it first anyway, ``False`` never (raises if there is none). A run
    restores every variable ``fn`` captures (weights, optimizer slots and ``iterations``,
    random generator states); Python side effects (a ``Recorder`` hook sees the step) and
    the batches an iterator gave are not undone. ``timings=True`` runs it once more under
    the profiler (restored too) for each collective's ``time_us``: on virtual CPUs, host
    time that is mostly waiting. In a multi-client run every client must make a report
    that runs ``fn`` together, as it runs ``fn``; all clients report the same
    collectives, with global device groups.

    Each ``Collective`` is one DTensor-level collective in program order: ``kind``,
    ``mesh_dims`` and ``groups`` (mesh device ids), the operand each device contributes
    (``shape``, ``dtype``, ``bytes_per_device``), ``reduce_op`` and ``serves``:
    ``"gradient"`` (``variable``: its name as the ``Recorder`` gives it; the sum, and any
    collective that moves the summed gradient on to the variable's layout), ``"loss"``, an
    ``"activation gradient"`` or ``"activation"`` of the backward or forward pass, or
    ``"other"``; ``executed_as``/``executed_bytes`` tell what runs it::

        train_step = models.train_step(model, opt, x, y)     # a tf.function
        report = dtsgd_viz.communication(train_step)  # the first time, runs it once
        report.compare(dtsgd_viz.communication_plan(model))   # [] : as the layouts say
        print(report)
    """
    tf = quiet_tensorflow_import()
    from tensorflow.experimental import dtensor

    cf, call = _concrete(tf, fn, args, kwargs)
    flat = flat_inputs(cf, args, kwargs)
    layouts = [layout_string(t) for t in flat]
    if not any(layouts):
        raise ValueError(
            f"communication needs a function that runs on a DTensor mesh. Received: "
            f"{_what(fn)}, none of whose {len(flat)} inputs (arguments and captured "
            "variables) is a DTensor; lay its variables or data out on a mesh."
        )
    wdef = None if run else compiled_wrapper(cf, layouts)
    ran = wdef is None
    if ran:
        if run is False:
            raise ValueError(
                f"DTensor has not compiled {_what(fn)} for these argument "
                "layouts yet: call it once first, or pass run=None or run=True."
            )
        with quiet_stderr():
            run_restoring(call, args, kwargs, cf.variables)
        wdef = compiled_wrapper(cf, layouts)
    if wdef is None:
        raise ValueError(f"DTensor compiled no program for {_what(fn)}: does it run on a DTensor mesh?")
    # the TensorFlow stub's Mesh lacks from_string
    from_string = dtensor.Mesh.from_string  # pyright: ignore[reportAttributeAccessIssue]
    entries, mesh = decode(wdef, flat, list(cf.variables), from_string)
    times = {}
    if timings:
        from ._comm_times import collective_times

        times = collective_times(call, args, kwargs, cf.variables)
    collectives = _collectives(entries, cf, times if timings else None)
    return CommunicationReport(
        mesh_spec(mesh), tuple(collectives), _name(fn, cf), ran or timings, _note(ran, timings, len(cf.variables))
    )


def _concrete(tf, fn, args, kwargs):
    """``(concrete function, what to call)`` of ``fn``, or a TypeError."""
    if isinstance(fn, tf.types.experimental.ConcreteFunction):
        return fn, fn
    if isinstance(fn, tf.types.experimental.PolymorphicFunction):
        return fn.get_concrete_function(*args, **kwargs), fn
    plain = inspect.isfunction(fn) or inspect.ismethod(fn)
    hint = " (a plain Python function: wrap it in tf.function)" if plain else ""
    raise TypeError(f"communication takes a tf.function or a ConcreteFunction. Received: {_what(fn)}{hint}.")


def _what(fn) -> str:
    tf = quiet_tensorflow_import()
    kind = "tf.function" if isinstance(fn, tf.types.experimental.PolymorphicFunction) else type(fn).__name__
    name = getattr(fn, "__name__", None) or getattr(fn, "name", None)
    name = name.decode() if isinstance(name, bytes) else name
    return f"{kind} {name!r}" if name else kind


def _name(fn, cf) -> str:
    name = getattr(fn, "__name__", None) or cf.name
    return name.decode() if isinstance(name, bytes) else str(name)


def _collectives(entries, cf, times) -> list[Collective]:
    trainable = [v for v in cf.variables if v.trainable]
    names = {id(v): n for v, n in zip(trainable, unique_names(trainable))}
    others = [v for v in cf.variables if not v.trainable]
    names.update({id(v): n for v, n in zip(others, unique_names(others)) if id(v) not in names})
    out = []
    for e in entries:
        what, var = serves(e, {id(v) for v in trainable})
        out.append(
            Collective(
                kind=e["kind"],
                mesh_dims=e["mesh_dims"],
                bytes_per_device=e["bytes_per_device"],
                dtype=e["dtype"],
                shape=e["shape"],
                serves=what,
                variable=names.get(id(var)) if var is not None else None,
                reduce_op=e["reduce_op"],
                groups=e["groups"],
                time_us=times.get(e["executed_node"]) if times is not None else None,
                name=e["name"],
                executed_as=e["executed_as"],
                executed_node=e["executed_node"],
                executed_bytes=e["executed_bytes"],
                fused_with=e["fused_with"],
            )
        )
    return out


def _note(ran: bool, timings: bool, n_variables: int) -> str:
    how = (
        "ran the step once (DTensor compiles a function on its first call) and read the program it compiled"
        if ran
        else "read the program DTensor had compiled for these argument layouts; did not run the step"
    )
    if timings:
        how += "; ran it once more under the profiler for the times (host time on CPU)"
    if ran or timings:
        how += (
            f"; the {n_variables} variables it captures (weights, optimizer slots, "
            "iterations) were restored to their values before"
        )
    return how
