"""Decoding the collectives of a lowered DTensor program (for ``communication``).

In ``_func_<key>`` (see ``_program``):

- a collective's group key is ``Slice(Const table[n_devices], device_id)``: the devices
  sharing a key form a group;
- node names keep DTensor's MLIR locations, ``<op>/DTensorAllReduceOp_..``,
  ``<op>/DTensorAllGatherOp_..``, ``<op>/DTensorAllToAllOp_..``: the DTensor kind, and
  the op whose output is communicated (whose ``_output_shapes`` is the local operand);
- all-reduces (or CPU all-gathers) DTensor's combiner fused leave ``<piece>/DTensor
  AllReduceOp/CombinedReduceUpdateSlice`` (in) and ``.../PostCombinedReduceSlice`` (out)
  nodes: one entry per piece, each knowing the others;
- a gradient is traced from the collective's output through elementwise and relayout ops
  (and slot write -> read) to the ``Assign*VariableOp``/``ResourceApply*`` that updates a
  variable: that variable's gradient. The trace goes on through any collective whose
  operand it reaches (from the operand to that collective's result, never across a fused
  buffer to the other pieces): a gradient DTensor computed sharded like the activations
  (a replicated layer-norm ``gamma`` after a layer sharded over ``model``) is summed over
  ``batch`` in that layout, then all-gathered over ``model`` to the variable's layout, and
  both collectives are that variable's.

Each collective comes back as a dict of ``Collective`` fields, with the live variables it
updates (``"updates"``), whether it is in the backward pass (``"backward"``: depends on a
gradient-tape op; ``"tape"``: communicates one), those it updates with no other
collective between (``"direct"``) and ``"executed_*"``: the
lowered node that runs it (a CPU all-gather runs as an all-reduce of a zero-padded full
buffer; fused pieces run as one padded buffer).
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ._program import argument_variables, nested_programs, node_of, programs
from .devices import quiet_tensorflow_import

# lowered collective op -> kind, when the node name does not say (DTensor's names do)
_OP_KIND = {
    "CollectiveReduceV2": "all-reduce",
    "CollectiveReduceV3": "all-reduce",
    "CollectiveGatherV2": "all-gather",
    "CollectiveAllToAllV2": "all-to-all",
    "CollectiveAllToAllV3": "all-to-all",
    "CollectiveReduceScatterV2": "reduce-scatter",
    "CollectiveBcastSendV2": "broadcast",
    "CollectiveBcastRecvV2": "broadcast",
}
_DTENSOR_KIND = {
    "AllReduce": "all-reduce",
    "AllGather": "all-gather",
    "AllToAll": "all-to-all",
    "ReduceScatter": "reduce-scatter",
    "AllScatter": "all-scatter",
    "CollectivePermute": "collective-permute",
    "Broadcast": "broadcast",
}
_DTENSOR_NAME = re.compile(r"^(?P<loc>.*?)/DTensor(?P<kind>[A-Za-z]+?)Op(?:_\d+)*$")
# a piece of a fused all-reduce (or of fused all-gathers, which a CPU runs as all-reduces)
_COMBINED_IN = re.compile(
    r"^(?P<piece>.*)/DTensor(?P<kind>AllReduce|AllGather)Op/"
    r"CombinedReduceUpdateSlice$"
)
_COMBINED_OUT = "PostCombinedReduceSlice"
_COMBINED_RESHAPE = "PostCombinedReduceReshape"
_COMBINED_FLATTEN = "/CombinedReduceFlatten"
# ops a gradient passes through on its way to a variable update without ceasing to be that
# variable's gradient: the optimizer's elementwise maths and relayouts
_PASS_OPS = {
    "Identity",
    "Snapshot",
    "StopGradient",
    "Neg",
    "Mul",
    "MulNoNan",
    "AddV2",
    "Add",
    "AddN",
    "Sub",
    "RealDiv",
    "Div",
    "DivNoNan",
    "Sqrt",
    "Rsqrt",
    "Square",
    "Pow",
    "Sign",
    "Abs",
    "Maximum",
    "Minimum",
    "ClipByValue",
    "Select",
    "SelectV2",
    "Cast",
    "Exp",
    "Log",
    "Reciprocal",
    "Inv",
    "Reshape",
    "Transpose",
    "Slice",
    "StridedSlice",
    "Squeeze",
    "ExpandDims",
    "ReadVariableOp",
    "CollectiveAllToAllV2",
    "CollectiveAllToAllV3",
}
_TAPE = "gradient_tape/"  # the scope tf.GradientTape names the backward pass's ops in
_WRITE_OPS = re.compile(r"^(Assign(Add|Sub)?VariableOp|Resource(Sparse)?Apply\w+|ResourceScatter\w+)$")


def decode(
    wdef: Any, flat: Sequence[Any], variables: Sequence[Any], mesh_from_string: Callable[[str], Any]
) -> tuple[list[dict[str, Any]], Any]:
    """Every collective of the programs the wrapper ``wdef`` calls, in program order (a
    list of dicts, see the module docstring), and the live mesh they run on.

    ``flat``: the eager op's inputs; ``variables``: the function's captured variables;
    ``mesh_from_string``: ``dtensor.Mesh.from_string``."""
    out, mesh = [], None
    for call, prog, mesh_str in programs(wdef):
        mesh = mesh_from_string(mesh_str) if mesh_str else mesh
        arg_var = argument_variables(call, prog, flat, variables)
        _index_collectives(prog)
        for nd in prog.fdef.node_def:
            if nd.op in _OP_KIND:
                out.extend(_describe(prog, nd, mesh, arg_var))
        # collectives inside control flow decode the same way, but their resource args
        # are not mapped back to variables
        for sub in nested_programs(prog):
            _index_collectives(sub)
            for nd in sub.fdef.node_def:
                if nd.op in _OP_KIND:
                    out.extend(_describe(sub, nd, mesh, {}, nested=True))
    return out, mesh


def _index_collectives(prog):
    """``prog.through``: ``{operand node: result node}`` of every DTensor-level collective
    in ``prog`` (each piece of a fused one on its own), for walking a value on through a
    collective. Only operands a value can flow *through* are kept: a node of the
    collective's own lowering (a CPU all-gather's zero-padded buffer) or a relayout/
    elementwise op; an operand that computes something new (a ``Sum``, a ``MatMul``) is
    where another collective's value starts, not one that passes through."""
    through = {}
    for nd in prog.fdef.node_def:
        if nd.op not in _OP_KIND:
            continue
        pieces = _fused_pieces(prog, nd)
        if pieces:
            links = [(piece, value, result) for piece, _, _, value, result in pieces]
        else:
            m = _DTENSOR_NAME.match(nd.name)
            links = [(m.group("loc") if m else nd.name, node_of(nd.input[0]), nd.name)]
        for loc, value, result in links:
            src = prog.nodes.get(value)
            if result and src is not None and (src.op in _PASS_OPS or value.startswith(f"{loc}/DTensor")):
                through[value] = result
    prog.through = through


def _groups(table, group_size, mesh) -> list[list[int]]:
    """Device-id groups from a per-device group-key table."""
    ids = [int(i) for i in np.ravel(mesh.global_device_ids())]
    table = np.asarray(table).reshape(-1)
    if table.size == 1:
        return [sorted(ids)]
    if table.size != len(ids):  # a client's local devices only
        ids = [int(i) for i in np.ravel(mesh.local_device_ids())]
    by_key = collections.OrderedDict()
    for dev, key in zip(ids, table.tolist()):
        by_key.setdefault(key, []).append(dev)
    groups = sorted(sorted(g) for g in by_key.values())
    if group_size is not None and any(len(g) != group_size for g in groups):
        raise ValueError(
            f"The group key table {table.tolist()} does not split the mesh into "
            f"groups of {group_size}: this DTensor program is not one "
            "dtsgd_viz.communication can read."
        )
    return groups


def _mesh_dims(groups, mesh) -> tuple[str, ...]:
    """The mesh dims whose coordinate varies inside a group."""
    ids = [int(i) for i in np.ravel(mesh.global_device_ids())]
    shape = mesh.shape()
    varying = set()
    for g in groups:
        coords = np.array([np.unravel_index(ids.index(d), shape) for d in g])
        varying.update(i for i in range(len(shape)) if len(set(coords[:, i])) > 1)
    return tuple(mesh.dim_names[i] for i in sorted(varying))


def _reduce_op(nd):
    merge = nd.attr["merge_op"].s.decode() if "merge_op" in nd.attr else None
    final = nd.attr["final_op"].s.decode() if "final_op" in nd.attr else None
    return "Mean" if (merge, final) == ("Add", "Div") else merge


def _variables_fed(prog, starts, resource_args) -> tuple[list[str], set[str]]:
    """``(written, direct)``: the resource args updated from ``starts`` through
    elementwise/relayout ops and other collectives (``prog.through``) only, and those of
    them reached without crossing another collective (the value is in the layout the
    update is computed in: only local ops lie between)."""
    reads = collections.defaultdict(list)
    for nd in prog.fdef.node_def:
        if nd.op == "ReadVariableOp" and nd.input:
            reads[node_of(nd.input[0])].append(nd.name)
    through = prog.through
    seen, written, direct = set(), [], set()
    frontier = [(s, False) for s in starts]
    while frontier:
        name, crossed = frontier.pop()
        for nd in prog.consumers.get(name, ()):
            if (nd.name, crossed) in seen:
                continue
            seen.add((nd.name, crossed))
            if _WRITE_OPS.match(nd.op):
                for ref in nd.input:
                    arg = node_of(ref)
                    if ref.startswith("^") or arg not in resource_args:
                        continue
                    if arg not in written:
                        written.append(arg)
                    if (arg, crossed) not in seen:
                        seen.add((arg, crossed))
                        if not crossed:
                            direct.add(arg)
                        # a slot, read for the variable
                        frontier.extend((r, crossed) for r in reads.get(arg, ()))
                continue
            if nd.name in through:  # the operand of another collective: on from its result
                frontier.append((through[nd.name], True))
            if nd.op in _PASS_OPS:
                frontier.append((nd.name, crossed or nd.op in _OP_KIND))
    return written, direct


def _common(prog, nd, mesh, nested):
    """The fields every entry of the lowered node ``nd`` shares."""
    tf = quiet_tensorflow_import()
    dtype = tf.dtypes.as_dtype(nd.attr["T"].type)
    size = prog.const(nd.input[1]) if len(nd.input) > 1 else None
    table = prog.per_device_table(nd.input[2]) if len(nd.input) > 2 else None
    groups = _groups(table, int(size) if size is not None else None, mesh) if table is not None else []
    m = _DTENSOR_NAME.match(nd.name)
    kind = _DTENSOR_KIND.get(m.group("kind")) if m else None
    shape = prog.shape(nd.input[0])
    return {
        "kind": kind or _OP_KIND[nd.op],
        "dtype": dtype.name,
        "itemsize": dtype.size,
        "groups": groups,
        "mesh_dims": _mesh_dims(groups, mesh) if groups else (),
        "reduce_op": _reduce_op(nd) if (kind or _OP_KIND[nd.op]) in ("all-reduce", "reduce-scatter") else None,
        "executed_as": nd.op,
        "executed_node": nd.name,
        "executed_bytes": math.prod(shape) * dtype.size if shape is not None else None,
        "nested": nested,
        "_loc": m.group("loc") if m else nd.name,
        "_shape": shape,
    }


def _tape_op(loc: str) -> bool:
    """Whether the op a collective communicates was made by the gradient tape (the
    backward pass proper, not the optimizer's update maths)."""
    return loc.startswith(_TAPE)


def _entry(prog, base, name, shape, starts, arg_var, source):
    """One entry: ``base`` with its operand ``shape``, its name, and the variables its
    output (``starts``) updates."""
    written, direct = _variables_fed(prog, starts, set(arg_var))
    e = {k: v for k, v in base.items() if not k.startswith("_")}
    e.update(
        name=name,
        shape=tuple(shape) if shape is not None else (),
        tape=_tape_op(name),
        bytes_per_device=math.prod(shape) * base["itemsize"] if shape is not None else 0,
        updates=[arg_var[a] for a in written],
        backward=prog.backward(source),
        direct=[arg_var[a] for a in written if a in direct],
        fused_with=(),
    )
    source_node = prog.nodes.get(source)
    read = source_node is not None and source_node.op == "ReadVariableOp"
    e["reads"] = arg_var.get(node_of(source_node.input[0])) if read and source_node is not None else None
    return e


def _describe(prog, nd, mesh, arg_var, nested=False):
    """One entry per DTensor-level collective the lowered node ``nd`` carries."""
    base = _common(prog, nd, mesh, nested)
    pieces = _fused_pieces(prog, nd)
    if pieces:
        out = []
        for piece, kind, shape, value, result in pieces:
            source = piece if piece in prog.nodes else value
            e = _entry(
                prog,
                base,
                piece,
                _operand_shape(prog, piece, shape, value),
                [result] if result else [],
                arg_var,
                source,
            )
            e.update(
                kind=_DTENSOR_KIND[kind],
                fused_with=tuple(p for p, *_ in pieces if p != piece),
                reduce_op=_reduce_op(nd) if kind == "AllReduce" else None,
            )
            out.append(e)
        return out
    loc = base["_loc"]
    source = loc if loc in prog.nodes else nd.name
    return [
        _entry(
            prog, base, loc, _operand_shape(prog, loc, base["_shape"], node_of(nd.input[0])), [nd.name], arg_var, source
        )
    ]


def _operand_shape(prog, loc, lowered, value=None):
    """The DTensor operand: the output of the op the location names (for a CPU all-gather,
    run as an all-reduce of a zero-padded full buffer, that is the local shard); when that
    op is gone (DTensor folded it, e.g. a ``Reshape`` whose all-gather took its place), the
    local shard written into the gather's zero-padded buffer (the ``value`` of its
    ``TensorStridedSliceUpdate``); else the lowered operand ``value`` (shape ``lowered``)."""
    named = prog.nodes.get(loc)
    if named is not None and named.op not in _OP_KIND and prog.shape(loc) is not None:
        return prog.shape(loc)
    pad = prog.nodes.get(value) if value else None
    if (
        pad is not None
        and pad.op == "TensorStridedSliceUpdate"
        and len(pad.input) > 4
        and pad.name.startswith(f"{loc}/DTensorAllGatherOp")
        and prog.shape(pad.input[4]) is not None
    ):
        return prog.shape(pad.input[4])
    return lowered


def _fused_pieces(prog, nd):
    """``[(piece name, DTensor kind, operand shape, operand node, result node)]`` of the
    collectives DTensor's combiner fused into ``nd``, in buffer order (empty for a plain
    collective)."""
    pieces = []
    src = prog.producer(nd.input[0])
    while src is not None and (m := _COMBINED_IN.match(src.name)):
        value = src.input[4]
        vsrc = prog.producer(value)
        if vsrc is not None and vsrc.name.endswith(_COMBINED_FLATTEN):
            value = vsrc.input[0]
        pieces.append((m.group("piece"), m.group("kind"), prog.shape(value), node_of(value)))
        src = prog.producer(src.input[0])
    results = {}
    for c in prog.consumers.get(nd.name, ()):
        head, _, tail = c.name.rpartition("/")
        if tail == _COMBINED_OUT:
            reshape = prog.nodes.get(f"{head}/{_COMBINED_RESHAPE}")
            results[head.rpartition("/")[0]] = reshape.name if reshape is not None else c.name
    return [(p, kind, shape, value, results.get(p)) for p, kind, shape, value in reversed(pieces)]


def serves(entry: Mapping[str, Any], trainable: set[int]) -> tuple[str, object]:
    """``(serves, live variable or None)`` of a decoded collective.

    - ``"gradient"``: an all-reduce (or reduce-scatter) whose result updates a trainable
      variable (through the optimizer's elementwise maths, relayouts and other
      collectives); and a collective that moves the tape's summed gradient itself (a
      ``gradient_tape/`` op's output) to the layout its update is computed in, no other
      collective between it and the update: the all-gather over ``model`` that takes a
      gradient DTensor summed in the activations' layout to a replicated variable's;
    - ``"loss"``: a scalar reduced in the forward pass;
    - ``"activation gradient"`` / ``"activation"``: any other collective of the
      backward / forward pass;
    - ``"other"``: what moves a variable itself (a weight gathered for the forward
      pass, an update or a gradient relaid out for the optimizer's maths, e.g. an
      all-to-all of ``-lr * g`` or of ``g`` to the layout an optimizer op asks for: its
      ``variable`` says which), and what runs inside control flow.

    ``trainable``: the ``id``s of the trainable variables."""
    fed = [v for v in entry["updates"] if id(v) in trainable]
    if entry["nested"]:
        return "other", None
    if fed:
        if entry["kind"] in ("all-reduce", "reduce-scatter"):
            return "gradient", fed[0]
        # the tape's (summed) gradient itself, delivered to the layout its update is
        # computed in: the gather after a sum made in the activations' layout
        delivered = [v for v in entry["direct"] if id(v) in trainable]
        if entry["tape"] and delivered:
            return "gradient", delivered[0]
        return "other", fed[0]
    if entry["reads"] is not None:
        return "other", entry["reads"]
    if entry["backward"]:
        return "activation gradient", None
    if entry["shape"] == () and entry["kind"] == "all-reduce":
        return "loss", None
    return "activation", None
