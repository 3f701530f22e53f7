"""The one module that talks to DTensor: devices, meshes, layouts, shards.

Everything it hands back is numpy or a plain value object from ``specs``.
Importing it imports TensorFlow (quietly: C++ log lines are silenced unless the
user already chose a ``TF_CPP_MIN_LOG_LEVEL``).
"""

from __future__ import annotations

import math
import os

import contextlib
import sys

import numpy as np


@contextlib.contextmanager
def _quiet_native_stderr():
    """Silence TensorFlow's C++ start-up lines (written to fd 2 before its logger is
    configured, so TF_CPP_MIN_LOG_LEVEL alone cannot). ``DTSGD_VIZ_TF_LOGS=1`` keeps them."""
    if os.environ.get("DTSGD_VIZ_TF_LOGS") == "1":
        yield
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


with _quiet_native_stderr():
    import tensorflow as tf
    from tensorflow.experimental import dtensor

from .specs import UNSHARDED, LayoutSpec, MeshSpec, _parse_dims

DEFAULT_CPU_DEVICES = 8
MAX_CPU_DEVICES = 64


def setup_devices(num_devices: int = DEFAULT_CPU_DEVICES) -> int:
    """Split the host CPU into ``num_devices`` logical devices (once, before TF starts).

    Returns the number of logical CPU devices available afterwards. Calling it
    again with a number already available does nothing. Raises ``ValueError``
    when TensorFlow has already started with fewer devices, saying what to do.
    """
    if isinstance(num_devices, bool) or not isinstance(num_devices, int) or num_devices < 1:
        raise ValueError(f"num_devices must be an integer >= 1. Received: {num_devices!r}.")
    if num_devices > MAX_CPU_DEVICES:
        raise ValueError(
            f"A virtual CPU mesh can have at most {MAX_CPU_DEVICES} devices. "
            f"Received a request for {num_devices}."
        )
    with _quiet_native_stderr():  # device discovery logs a CUDA probe failure
        cpu = tf.config.list_physical_devices("CPU")[0]
    configured = tf.config.get_logical_device_configuration(cpu)
    if configured and len(configured) >= num_devices:
        return len(configured)
    want = max(num_devices, DEFAULT_CPU_DEVICES)
    try:
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * want
        )
        return want
    except RuntimeError:
        have = len(tf.config.list_logical_devices("CPU"))
        if have >= num_devices:
            return have
        raise ValueError(
            f"This mesh needs {num_devices} CPU devices, but TensorFlow has already started "
            f"with {have} logical CPU device(s), and devices cannot be added once it has. "
            "Call dtsgd_viz.make_mesh (or dtsgd_viz.setup_devices) before any other "
            "TensorFlow work, or restart the kernel/process and call it first."
        ) from None


def make_mesh(dims, device_type: str | None = None):
    """A DTensor ``Mesh`` with named dims, e.g. ``make_mesh({"batch": 2, "model": 4})``.

    On CPU (the default) it creates the virtual devices it needs; with
    ``device_type="GPU"`` it uses the first GPUs of the machine.
    """
    names, sizes = _parse_dims(dims)
    n = math.prod(sizes)
    device_type = (device_type or "CPU").upper()
    if device_type not in ("CPU", "GPU", "TPU"):
        raise ValueError(
            f"device_type must be 'CPU', 'GPU' or 'TPU'. Received: {device_type!r}."
        )
    if device_type == "CPU":
        setup_devices(n)
    else:
        with _quiet_native_stderr():
            have = len(tf.config.list_physical_devices(device_type))
        if have < n:
            raise ValueError(
                f"A mesh of shape {dict(zip(names, sizes))} needs {n} {device_type} devices; "
                f"this machine has {have}. Use a smaller mesh, or device_type='CPU' for "
                "virtual CPU devices."
            )
    return dtensor.create_mesh(
        list(zip(names, sizes)),
        devices=[f"{device_type}:{i}" for i in range(n)],
        device_type=device_type,
    )


# ---- conversions between live DTensor objects and plain specs ------------------


def mesh_spec(mesh) -> MeshSpec:
    """The plain ``MeshSpec`` of a DTensor ``Mesh``."""
    return MeshSpec(tuple(mesh.dim_names), tuple(mesh.shape()), tuple(mesh.local_devices()))


def layout_spec(layout) -> LayoutSpec:
    """The plain ``LayoutSpec`` of a DTensor ``Layout``."""
    return LayoutSpec(tuple(layout.sharding_specs), mesh_spec(layout.mesh))


def to_mesh(spec: MeshSpec):
    """A DTensor ``Mesh`` for a spec whose devices exist in this process."""
    n = spec.num_devices
    ids = np.arange(n).reshape(spec.dim_sizes)
    return dtensor.Mesh(list(spec.dim_names), ids, list(range(n)), list(spec.device_names))


def to_layout(spec: LayoutSpec):
    return dtensor.Layout(list(spec.sharding_specs), to_mesh(spec.mesh))


def _single_device_mesh(device: str) -> MeshSpec:
    return MeshSpec(("device",), (1,), (device or "/job:localhost/replica:0/task:0/device:CPU:0",))


def is_dtensor(x) -> bool:
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


def layout_of(x) -> LayoutSpec:
    """The layout spec of a DVariable or DTensor; a plain tensor or ``tf.Variable``
    is one shard on its own device."""
    if is_dtensor(x):
        value = x.read_value() if isinstance(x, tf.Variable) else x
        return layout_spec(dtensor.fetch_layout(value))
    rank = len(x.shape)
    return LayoutSpec.replicated(_single_device_mesh(getattr(x, "device", "")), rank)


def live_layout(x):
    """The DTensor ``Layout`` of a DTensor value (``None`` for plain tensors)."""
    if not is_dtensor(x):
        return None
    value = x.read_value() if isinstance(x, tf.Variable) else x
    return dtensor.fetch_layout(value)


def unpack(x, copy=True) -> list[np.ndarray]:
    """Per-device numpy shards of a DTensor (mesh device order), or ``[x]`` for a plain
    value. Eager only; variables are read first.

    ``copy=False`` returns read-only views of the device buffers (CPU tensors) instead of
    copies. They stay valid: TensorFlow never writes into a buffer someone else still
    holds (an update to the variable copies it first, or assigns a fresh buffer)."""
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
            f"Received: {type(layout).__name__}.")
    return layout


def put(array, layout):
    """A DTensor with ``layout`` holding host ``array`` (built on host, copied to the
    mesh replicated, then relaid: random/host ops inside the mesh are avoided)."""
    array = np.asarray(array)
    layout = _live_layout_arg(layout)
    if array.ndim != layout.rank:
        raise ValueError(f"The layout has rank {layout.rank} ({list(layout.sharding_specs)}); "
                         f"the array has shape {array.shape}.")
    mesh = layout.mesh
    replicated = dtensor.copy_to_mesh(
        tf.constant(array), dtensor.Layout.replicated(mesh, array.ndim)
    )
    return dtensor.relayout(replicated, layout)


def shard(array, layout):
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


def to_numpy(x) -> np.ndarray:
    """The whole (global) value of a DTensor or DVariable as one numpy array, put back
    together from the blocks the devices hold (a plain tensor or variable: its value)."""
    value = x.read_value() if isinstance(x, tf.Variable) else x
    if not is_dtensor(value):
        return np.asarray(value)
    from .geometry import shard_geometry
    geometry = shard_geometry(tuple(value.shape), layout_of(value))
    shards = unpack(value)
    return geometry.assemble(np.stack([shards[g[0]] for g in geometry.replica_groups]))


def device_values(x) -> list[np.ndarray]:
    """What each device holds of a DTensor or DVariable, in mesh device order (numpy
    copies; replicated blocks appear once per device holding them)."""
    return unpack(x)


def variable(array, layout=None, name=None, dtype=None):
    """A ``DVariable`` holding ``array`` laid out by ``layout`` (a DTensor ``Layout`` or a
    ``LayoutSpec``; a plain ``tf.Variable`` when ``layout`` is None), e.g.
    ``dtsgd_viz.variable(np.zeros((8, 8), np.float32), dtensor.Layout(["batch", "model"],
    mesh), name="w")``."""
    array = np.asarray(array, dtype=dtype)
    if layout is None:
        return tf.Variable(array, name=name)
    return dtensor.DVariable(put(array, _live_layout_arg(layout)), name=name)


def replicated_scalar_variable(value, mesh, dtype):
    """A scalar bookkeeping variable living on ``mesh`` (plain when ``mesh`` is None)."""
    if mesh is None:
        return tf.Variable(tf.constant(value, dtype=dtype), trainable=False)
    return dtensor.DVariable(
        dtensor.copy_to_mesh(tf.constant(value, dtype=dtype), dtensor.Layout.replicated(mesh, 0)),
        trainable=False,
    )


def zeros_like_variable(var, dtype=None):
    """A non-trainable variable shaped and laid out like ``var`` (same device(s))."""
    layout = live_layout(var)
    dtype = dtype or var.dtype
    if layout is None:
        with tf.init_scope(), tf.device(var.device):
            return tf.Variable(tf.zeros(var.shape, dtype), trainable=False)
    with tf.init_scope():
        zeros = dtensor.call_with_layout(tf.zeros, layout, shape=var.shape, dtype=dtype)
        return dtensor.DVariable(zeros, trainable=False)


def match_layout(value, var):
    """``value`` relaid to ``var``'s layout when both are DTensors and differ."""
    layout = live_layout(var)
    if layout is None or not is_dtensor(value):
        return value
    if dtensor.fetch_layout(value) == layout:
        return value
    return dtensor.relayout(value, layout)


__all__ = [
    "UNSHARDED", "setup_devices", "make_mesh", "client_info", "ClientInfo", "mesh_spec", "layout_spec", "to_mesh",
    "to_layout", "layout_of", "unpack", "put", "variable", "is_dtensor",
]


def shard_geometry_of(shape, layout):
    """``shard_geometry`` for a live DTensor ``Layout``."""
    from .geometry import shard_geometry
    return shard_geometry(shape, layout_spec(layout))
