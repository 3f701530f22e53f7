"""Reading the program DTensor compiled for a ``tf.function`` back from the eager
function library (for ``communication``).

The first time the DTensor device runs a function ``__inference_f_N`` for a set of input
layouts it compiles it (layout propagation, SPMD expansion, all-reduce combining,
collective lowering) and registers two functions that ``context().get_function_def``
reads back at any later time:

- ``__inference_f_N__func_<key>_<n>``: a wrapper whose inputs ``op_input_k`` are the
  eager op's inputs (the flat call arguments, then the captured inputs), each with its
  ``_layout``, and whose ``StatefulPartitionedCall`` passes them, permuted, to
- ``_func_<key>``: the per-device SPMD program that runs, its collectives lowered to
  ``CollectiveReduceV2``, ``CollectiveAllToAllV2``, ... nodes.

This module finds the wrapper matching one call and indexes a program for walking its
data flow; ``_collectives`` decodes the collectives in it.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from .devices import quiet_tensorflow_import
from .values import is_dtensor

_OP_INPUT = re.compile(r"op_input_(\d+)")
_THROUGH = ("Identity", "Reshape", "Squeeze")


def node_of(ref: str) -> str:
    """``'node:out:0'`` / ``'node'`` / ``'^node'`` -> ``'node'``."""
    return ref.lstrip("^").split(":")[0]


def _eager_context() -> Any:
    """TensorFlow's eager context (``context()`` creates it on first use)."""
    from tensorflow.python.eager import context

    ctx = context.context()
    assert ctx is not None  # context() creates the context when there is none
    return ctx


def _out_index(ref: str) -> int:
    parts = ref.split(":")
    return int(parts[2]) if len(parts) == 3 else 0


def attr_string(attrs: Any, key: str) -> str | None:
    """A string attr (or the first of a list of them), else None."""
    if key not in attrs:
        return None
    a = attrs[key]
    if a.HasField("s"):
        return a.s.decode()
    return a.list.s[0].decode() if a.list.s else None


class Program:
    """One lowered DTensor ``FunctionDef``, indexed for walking its data flow."""

    def __init__(self, fdef):
        self.fdef = fdef
        self.name = fdef.signature.name
        self.nodes = {nd.name: nd for nd in fdef.node_def}
        self.args = {a.name: i for i, a in enumerate(fdef.signature.input_arg)}
        self.consumers = collections.defaultdict(list)
        for nd in fdef.node_def:
            for ref in nd.input:
                if not ref.startswith("^"):
                    self.consumers[node_of(ref)].append(nd)
        self._backward = None
        self.through = {}  # {collective operand: its result}, filled by _collectives

    def producer(self, ref: str) -> Any:
        return self.nodes.get(node_of(ref))

    def shape(self, ref: str) -> tuple[int, ...] | None:
        """The static shape of a tensor reference (its ``_output_shapes``), or None."""
        name = node_of(ref)
        if name in self.args:
            attrs = self.fdef.arg_attr[self.args[name]].attr
        else:
            nd = self.nodes.get(name)
            attrs = nd.attr if nd is not None else {}
        shapes = attrs["_output_shapes"].list.shape if "_output_shapes" in attrs else []
        idx = _out_index(ref) if len(shapes) > 1 else 0
        if not shapes or idx >= len(shapes) or shapes[idx].unknown_rank:
            return None
        return tuple(d.size for d in shapes[idx].dim)

    def _source(self, ref):
        nd = self.producer(ref)
        while nd is not None and nd.op in _THROUGH and nd.input:
            nd = self.producer(nd.input[0])
        return nd

    def const(self, ref: str) -> np.ndarray | None:
        """The value of a constant (through Identity/Reshape/Squeeze), else None."""
        from tensorflow.python.framework import tensor_util

        nd = self._source(ref)
        if nd is not None and nd.op == "Const":
            return tensor_util.MakeNdarray(nd.attr["value"].tensor)
        return None

    def per_device_table(self, ref: str) -> np.ndarray | None:
        """A value chosen per device, ``Slice(Const table, device-dependent begin)``: the
        table (one entry per device id); a plain constant (the same on every device)."""
        nd = self._source(ref)
        if nd is None:
            return None
        if nd.op == "Const":
            return self.const(nd.name)
        if nd.op in ("Slice", "GatherV2", "StridedSlice") and nd.input:
            table = self.const(nd.input[0])
            if table is not None:
                return np.asarray(table).reshape(-1)
        return None

    def backward(self, name: str) -> bool:
        """Whether node ``name`` computes from the backward pass: it depends on an op the
        gradient tape made (``gradient_tape/...``)."""
        if self._backward is None:
            seen = set()
            todo = [n for n in self.nodes if n.startswith("gradient_tape/")]
            while todo:
                n = todo.pop()
                if n not in seen:
                    seen.add(n)
                    todo.extend(c.name for c in self.consumers.get(n, ()))
            self._backward = seen
        return name in self._backward


def flat_inputs(cf: Any, args: Sequence[Any], kwargs: Mapping[str, Any]) -> list[Any]:
    """The eager op's inputs in order: the flat call tensors, then the captured inputs."""
    tf = quiet_tensorflow_import()
    try:  # private: how the function itself flattens its call
        from tensorflow.python.eager.polymorphic_function import function_type_utils

        bound = function_type_utils.canonicalize_function_inputs(args, kwargs, cf.function_type)
        flat = list(cf.function_type.unpack_inputs(bound))
    except Exception:  # noqa: BLE001 - moved in another TF version: nest order
        flat = [
            t
            for t in tf.nest.flatten((args, kwargs), expand_composites=True)
            if isinstance(t, (tf.Tensor, tf.Variable))
        ]
    return flat + list(cf.captured_inputs)


def layout_string(value: Any) -> str | None:
    """The DTensor layout string of a value, or None for anything that is not a DTensor."""
    from tensorflow.experimental import dtensor

    try:
        if not is_dtensor(value):
            return None
        return dtensor.fetch_layout(value).to_string()
    except Exception:  # noqa: BLE001 - resources, iterators, ... are not DTensors
        return None


def _wrapper_matches(wdef, want) -> bool:
    for i, arg in enumerate(wdef.signature.input_arg):
        m = _OP_INPUT.fullmatch(arg.name)
        if not m:
            continue
        k = int(m.group(1))
        have = attr_string(wdef.arg_attr[i].attr, "_layout") if i in wdef.arg_attr else None
        if k >= len(want) or (have and want[k] and have != want[k]):
            return False
    return True


def compiled_wrapper(cf: Any, layouts: Sequence[str | None]) -> Any:
    """The wrapper DTensor compiled for ``cf`` with these input layouts (the last one
    compiled), or None when it has not compiled ``cf`` for them."""
    ctx = _eager_context()
    name = cf.name.decode() if isinstance(cf.name, bytes) else cf.name
    prefix = name + "__func_"
    found = None
    for fname in ctx.list_function_names():
        if fname.startswith(prefix):
            wdef = ctx.get_function_def(fname)
            if _wrapper_matches(wdef, layouts):
                found = wdef
    return found


def programs(wdef: Any) -> Iterator[tuple[Any, Program, str | None]]:
    """``(call node, Program, mesh string or None)`` of each per-device program the
    wrapper calls."""
    ctx = _eager_context()
    for call in wdef.node_def:
        if call.op in ("StatefulPartitionedCall", "PartitionedCall") and "f" in call.attr:
            prog = Program(ctx.get_function_def(call.attr["f"].func.name))
            yield call, prog, attr_string(call.attr, "config") or attr_string(call.attr, "_mesh")


def nested_programs(prog: Program) -> Iterator[Program]:
    """The functions a program calls, directly or not (While bodies, If branches, nested
    calls), as ``Program``s."""
    ctx = _eager_context()
    seen, todo = {prog.name}, _called(prog.fdef)
    while todo:
        fname = todo.pop()
        if fname in seen:
            continue
        seen.add(fname)
        try:
            sub = Program(ctx.get_function_def(fname))
        except Exception:  # noqa: BLE001 - a library function DTensor did not register
            continue
        yield sub
        todo.extend(_called(sub.fdef))


def _called(fdef) -> list[str]:
    names = []
    for nd in fdef.node_def:
        for a in nd.attr.values():
            if a.HasField("func"):
                names.append(a.func.name)
            names.extend(f.name for f in a.list.func)
    return names


def argument_variables(call: Any, prog: Program, flat: Sequence[Any], variables: Iterable[Any]) -> dict[str, Any]:
    """``{program resource arg: variable}``: the program's arg ``j`` is fed by the
    wrapper's input ``call.input[j] = 'op_input_k'``, i.e. by ``flat[k]``."""
    tf = quiet_tensorflow_import()
    by_handle = {id(v.handle): v for v in variables}
    inner = [a.name for a in prog.fdef.signature.input_arg]
    out = {}
    for j, ref in enumerate(call.input):
        m = _OP_INPUT.fullmatch(ref)
        if not m or j >= len(inner) or int(m.group(1)) >= len(flat):
            continue
        value = flat[int(m.group(1))]
        var = by_handle.get(id(value))
        if var is None and isinstance(value, tf.Variable):
            var = value
        if var is not None:
            out[inner[j]] = var
    return out
