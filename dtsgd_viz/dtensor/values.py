"""Making DTensors and reading them back: layouts of live values, per-device numpy
shards, the whole value, variables laid out on a mesh.

Everything read comes back as numpy or a plain ``LayoutSpec``. Importing this module
imports no TensorFlow (see ``devices.quiet_tensorflow_import``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from ..specs import LayoutSpec, MeshSpec
from .convert import layout_spec, local_device_ids, to_layout
from .devices import _tensorflow, client_info


def _single_device_mesh(device: str) -> MeshSpec:
    return MeshSpec(("device",), (1,), (device or "/job:localhost/replica:0/task:0/device:CPU:0",))


def is_dtensor(x: Any) -> bool:
    """True for a DTensor or a ``DVariable`` (eagerly; symbolic values are never one)."""
    tf, dtensor = _tensorflow()
    value = x.read_value() if isinstance(x, tf.Variable) else x
    # Only a value on a custom device can be a DTensor. Asking DTensor about any other value
    # would create its process-wide device, bound to the current eager context: a run
    # without a mesh would leave it behind, and after a context reset (tf-keras' DTensor
    # tests reset it for every test) DTensor ops would go to that vanished device
    # ("Could not find device for node Relayout"). Symbolic values have no device; DTensor
    # cannot say for them either.
    if "/device:CUSTOM:" not in (getattr(value, "device", None) or ""):
        return False
    try:
        return bool(dtensor.is_dtensor(value))
    except Exception:  # noqa: BLE001 - plain values are simply not DTensors
        return False


def is_dvariable(x: Any) -> bool:
    """True for a ``DVariable`` (a variable laid out on a mesh)."""
    _, dtensor = _tensorflow()
    return isinstance(x, dtensor.DVariable)


def layout_of(x: Any) -> LayoutSpec:
    """The layout spec of a DVariable or DTensor; a plain tensor or ``tf.Variable``
    is one shard on its own device."""
    tf, dtensor = _tensorflow()
    if is_dtensor(x):
        value = x.read_value() if isinstance(x, tf.Variable) else x
        return layout_spec(dtensor.fetch_layout(value))
    rank = len(x.shape)
    return LayoutSpec.replicated(_single_device_mesh(getattr(x, "device", "")), rank)


def live_layout(x: Any) -> Any:
    """The DTensor ``Layout`` of a DTensor value (``None`` for plain tensors)."""
    tf, dtensor = _tensorflow()
    if not is_dtensor(x):
        return None
    value = x.read_value() if isinstance(x, tf.Variable) else x
    return dtensor.fetch_layout(value)


def unpack(x: Any, copy: bool = True) -> list[np.ndarray]:
    """Per-device numpy shards of a DTensor (mesh device order), or ``[x]`` for a plain
    value. Eager only; variables are read first. In a multi-client run only this
    client's shards, those of ``local_device_ids(mesh)``.

    ``copy=False`` returns read-only views of the device buffers (CPU tensors) instead of
    copies. They stay valid: TensorFlow never writes into a buffer someone else still
    holds (an update to the variable copies it first, or assigns a fresh buffer)."""
    tf, dtensor = _tensorflow()
    value = x.read_value() if isinstance(x, tf.Variable) else x
    host = _copy if copy else _view
    if is_dtensor(value):
        return [host(t) for t in dtensor.unpack(value)]
    return [host(value)]


def _copy(t) -> np.ndarray:
    return np.asarray(t.numpy())


def _view(t) -> np.ndarray:
    try:  # zero-copy for tensors in host memory (all of them on a CPU mesh)
        return np.asarray(memoryview(t))
    except (TypeError, ValueError, BufferError):
        return _copy(t)


def _live_layout_arg(layout, what="layout"):
    if isinstance(layout, LayoutSpec):
        return to_layout(layout)
    if type(layout).__name__ != "Layout":
        raise TypeError(
            f"{what} must be a tf.experimental.dtensor.Layout or a dtsgd_viz.LayoutSpec. "
            f"Received: {type(layout).__name__}."
        )
    return layout


def put(array: ArrayLike, layout: Any) -> Any:
    """A DTensor with ``layout`` holding host ``array`` (built on host, copied to the
    mesh replicated, then relaid: random/host ops inside the mesh are avoided)."""
    tf, dtensor = _tensorflow()
    array = np.asarray(array)
    layout = _live_layout_arg(layout)
    if array.ndim != layout.rank:
        raise ValueError(
            f"The layout has rank {layout.rank} ({list(layout.sharding_specs)}); the array has shape {array.shape}."
        )
    layout_spec(layout).check_shape(array.shape)  # a mesh dim that does not divide: say so
    mesh = layout.mesh
    replicated = dtensor.copy_to_mesh(tf.constant(array), dtensor.Layout.replicated(mesh, array.ndim))
    return dtensor.relayout(replicated, layout)


def shard(array: ArrayLike, layout: Any) -> Any:
    """``array`` (numpy or anything ``np.asarray`` takes) as a DTensor laid out by
    ``layout`` (a DTensor ``Layout`` or a ``LayoutSpec``): each device gets its block.

    >>> import numpy as np, dtsgd_viz
    >>> mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    >>> from tensorflow.experimental import dtensor
    >>> t = dtsgd_viz.shard(np.arange(32.0).reshape(4, 8), dtensor.Layout(["x", "y"], mesh))
    >>> [b.shape for b in dtsgd_viz.device_values(t)][:2]
    [(2, 2), (2, 2)]
    >>> float(dtsgd_viz.to_numpy(t)[3, 7])
    31.0
    """
    return put(array, layout)


def relayout(value: Any, layout: Any) -> Any:
    """The DTensor ``value`` laid out by ``layout`` (a DTensor ``Layout`` or a
    ``LayoutSpec``): ``dtensor.relayout``, also inside a ``tf.function``."""
    _, dtensor = _tensorflow()
    return dtensor.relayout(value, _live_layout_arg(layout))


def to_numpy(x: Any) -> np.ndarray:
    """The whole (global) value of a DTensor or DVariable as one numpy array, put back
    together from the blocks the devices hold (a plain tensor or variable: its value).
    In a multi-client run, of a value whose blocks this client's devices all hold (a
    replicated loss, say)."""
    tf, dtensor = _tensorflow()
    _check_tensor(x, "to_numpy")
    value = x.read_value() if isinstance(x, tf.Variable) else x
    if not is_dtensor(value):
        return np.asarray(value)
    from ..geometry import shard_geometry

    layout = dtensor.fetch_layout(value)
    geometry = shard_geometry(tuple(value.shape), layout_spec(layout))
    held = geometry.held_groups(local_device_ids(layout.mesh))
    if len(held) < geometry.num_unique:
        raise ValueError(
            f"This client ({client_info().client_id} of {client_info().num_clients}) holds "
            f"{len(held)} of the {geometry.num_unique} blocks of this value (layout "
            f"{list(layout.sharding_specs)}): the others are on other clients. Relayout it "
            "first (dtensor.relayout(x, dtensor.Layout.replicated(mesh, rank)), on every "
            "client), or take this client's blocks with device_values(x)."
        )
    shards = unpack(value)
    return geometry.assemble(np.stack([shards[at[0]] for _, at in held]))


def device_values(x: Any) -> list[np.ndarray]:
    """What each device holds of a DTensor or DVariable, in mesh device order (numpy
    copies; replicated blocks appear once per device holding them). In a multi-client
    run: this client's devices, ``mesh.local_device_ids()``."""
    _check_tensor(x, "device_values")
    return unpack(x)


def _check_tensor(x, what):
    tf, _ = _tensorflow()
    if not isinstance(x, (tf.Tensor, tf.Variable)):
        raise TypeError(
            f"{what} takes a DTensor, a DVariable or a tf.Tensor/tf.Variable. Received: {type(x).__name__}."
        )


def variable(array: ArrayLike, layout: Any = None, name: str | None = None, dtype: DTypeLike | None = None) -> Any:
    """A ``DVariable`` holding ``array`` laid out by ``layout`` (a DTensor ``Layout`` or a
    ``LayoutSpec``; a plain ``tf.Variable`` when ``layout`` is None), e.g.
    ``dtsgd_viz.variable(np.zeros((8, 8), np.float32), dtensor.Layout(["batch", "model"],
    mesh), name="w")``."""
    tf, dtensor = _tensorflow()
    array = np.asarray(array, dtype=dtype)
    if layout is None:
        return tf.Variable(array, name=name)
    return dtensor.DVariable(put(array, _live_layout_arg(layout)), name=name)


def replicated_scalar_variable(value: float, mesh: Any, dtype: Any) -> Any:
    """A scalar bookkeeping variable living on ``mesh`` (plain when ``mesh`` is None)."""
    tf, dtensor = _tensorflow()
    if mesh is None:
        return tf.Variable(tf.constant(value, dtype=dtype), trainable=False)
    return dtensor.DVariable(
        dtensor.copy_to_mesh(tf.constant(value, dtype=dtype), dtensor.Layout.replicated(mesh, 0)),
        trainable=False,
    )


@contextlib.contextmanager
def replicated_variables(mesh: Any) -> Iterator[None]:
    """Inside, every ``tf.Variable`` created becomes a ``DVariable`` replicated on ``mesh``
    (one copy per device, all updated together); does nothing when ``mesh`` is None. For
    bookkeeping variables a library creates on its own, e.g. a loss scale."""
    tf, dtensor = _tensorflow()
    if mesh is None:
        yield
        return

    def creator(next_creator, **kwargs):
        init = kwargs.pop("initial_value")
        init = init() if callable(init) else init
        dtype = kwargs.pop("dtype", None)
        init = tf.convert_to_tensor(init, dtype=dtype)
        if not is_dtensor(init):
            init = dtensor.copy_to_mesh(init, dtensor.Layout.replicated(mesh, init.shape.rank))
        keep = ("name", "trainable", "synchronization", "aggregation")
        return dtensor.DVariable(init, dtype=dtype, **{k: kwargs[k] for k in keep if kwargs.get(k) is not None})

    with tf.init_scope(), tf.variable_creator_scope(creator):
        yield


def zeros_like_variable(var: Any, dtype: Any = None) -> Any:
    """A non-trainable variable shaped and laid out like ``var`` (same device(s))."""
    tf, dtensor = _tensorflow()
    layout = live_layout(var)
    dtype = dtype or var.dtype
    if layout is None:
        with tf.init_scope(), tf.device(var.device):
            return tf.Variable(tf.zeros(var.shape, dtype), trainable=False)
    with tf.init_scope():
        zeros = dtensor.call_with_layout(tf.zeros, layout, shape=var.shape, dtype=dtype)
        return dtensor.DVariable(zeros, trainable=False)


def match_layout(value: Any, var: Any) -> Any:
    """``value`` relaid to ``var``'s layout when both are DTensors and differ."""
    _, dtensor = _tensorflow()
    layout = live_layout(var)
    if layout is None or not is_dtensor(value):
        return value
    if dtensor.fetch_layout(value) == layout:
        return value
    return dtensor.relayout(value, layout)
