"""The one module that talks to DTensor: devices, meshes, layouts, shards.

Everything it hands back is numpy or a plain value object from ``specs``.
Importing it imports TensorFlow (quietly: C++ log lines are silenced unless the
user already chose a ``TF_CPP_MIN_LOG_LEVEL``).
"""

from __future__ import annotations

import dataclasses
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

from ..specs import UNSHARDED, LayoutSpec, MeshSpec, parse_dims

DEFAULT_CPU_DEVICES = 8
MAX_CPU_DEVICES = 64
CPU_DEVICES_ENV = "DTSGD_VIZ_CPU_DEVICES"
"""Virtual CPU devices a process makes (``dtsgd-viz launch --devices-per-client`` sets it)."""


def _asked_cpu_devices() -> int | None:
    value = os.environ.get(CPU_DEVICES_ENV)
    if not value:
        return None
    if not value.isdigit() or not 1 <= int(value) <= MAX_CPU_DEVICES:
        raise ValueError(f"{CPU_DEVICES_ENV} must be an integer from 1 to {MAX_CPU_DEVICES}. "
                         f"Received: {value!r}.")
    return int(value)


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
    asked = _asked_cpu_devices()
    if asked is not None and num_devices > asked:
        raise ValueError(
            f"This process was started with {asked} virtual CPU device(s) ({CPU_DEVICES_ENV}"
            f"={asked}, set by dtsgd-viz launch --devices-per-client), but needs "
            f"{num_devices}. Start it with more devices per client, or use a smaller mesh."
        )
    want = max(num_devices, asked or DEFAULT_CPU_DEVICES)
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

    The same call works in a multi-client program (``DTENSOR_JOBS`` lists one
    ``host:port`` per client, ``DTENSOR_CLIENT_ID`` says which one this is, as
    ``dtsgd-viz launch`` sets them): the mesh then spans every client's devices, each
    client bringing ``size / num_clients`` of its own (its first ones; client 0 holds
    mesh devices ``0..k-1``, client 1 the next ``k``, ...), and DTensor's accelerator
    system is initialised on the first call, so call it before any other TensorFlow work.
    """
    names, sizes = parse_dims(dims)
    n = math.prod(sizes)
    device_type = (device_type or "CPU").upper()
    if device_type not in ("CPU", "GPU", "TPU"):
        raise ValueError(
            f"device_type must be 'CPU', 'GPU' or 'TPU'. Received: {device_type!r}."
        )
    clients = dtensor.num_clients()
    if n % clients:
        raise ValueError(
            f"A mesh of shape {dict(zip(names, sizes))} has {n} devices, which cannot be "
            f"split evenly over the {clients} clients of this run (DTENSOR_JOBS="
            f"{os.environ.get('DTENSOR_JOBS')!r}). Use a mesh whose size is a multiple of "
            f"{clients}."
        )
    local = n // clients
    if device_type == "CPU":
        setup_devices(local)
    else:
        with _quiet_native_stderr():
            have = len(tf.config.list_physical_devices(device_type))
        if have < local:
            each = f" on each of the {clients} clients" if clients > 1 else ""
            raise ValueError(
                f"A mesh of shape {dict(zip(names, sizes))} needs {local} {device_type} "
                f"devices{each}; this machine has {have}. Use a smaller mesh, or "
                "device_type='CPU' for virtual CPU devices."
            )
    local_names = [f"{device_type}:{i}" for i in range(local)]
    if clients > 1:
        _initialize_clients(device_type)
        return dtensor.create_distributed_mesh(  # TPU meshes take every core: no list
            list(zip(names, sizes)), local_devices=None if device_type == "TPU" else local_names,
            device_type=device_type)
    return dtensor.create_mesh(
        list(zip(names, sizes)), devices=local_names, device_type=device_type)


def _initialize_clients(device_type: str) -> None:
    """Connect this client to the others (once per process; blocks until they come)."""
    # private module: the public API cannot ask whether it was done (a second call raises)
    from tensorflow.dtensor.python import accelerator_util

    if accelerator_util.is_initialized():
        return
    try:
        dtensor.initialize_accelerator_system(device_type)
    except ValueError as e:
        raise ValueError(
            "A multi-client mesh must be made before TensorFlow starts (DTensor's accelerator "
            "system connects the clients first): call dtsgd_viz.make_mesh before any other "
            f"TensorFlow work. TensorFlow said: {e}"
        ) from None


@dataclasses.dataclass(frozen=True)
class ClientInfo:
    """This process's place in a DTensor run: ``client_id`` of ``num_clients`` (0 of 1 in
    a single-process run)."""

    client_id: int
    num_clients: int

    @property
    def multi_client(self) -> bool:
        return self.num_clients > 1


def client_info() -> ClientInfo:
    """Which client this process is, from the DTensor environment (``DTENSOR_CLIENT_ID``
    and ``DTENSOR_JOBS``); ``ClientInfo(0, 1)`` when it is not set. E.g. a script that
    runs single-process or multi-client alike saves its part as
    ``f"parts/part-{dtsgd_viz.client_info().client_id}.npz"``."""
    return ClientInfo(int(dtensor.client_id()), int(dtensor.num_clients()))


# ---- conversions between live DTensor objects and plain specs ------------------


def mesh_spec(mesh) -> MeshSpec:
    """The plain ``MeshSpec`` of a DTensor ``Mesh``: every device of the mesh, also those
    of other clients in a multi-client run."""
    local = tuple(mesh.local_devices())
    n = math.prod(mesh.shape())
    if len(local) == n:
        return MeshSpec(tuple(mesh.dim_names), tuple(mesh.shape()), local)
    # Other clients' devices are named as create_distributed_mesh lays them out: k per
    # client, client c holding mesh devices c*k .. c*k+k-1 as its devices 0..k-1.
    k = len(local)
    first = tf.DeviceSpec.from_string(local[0])
    names = [first.replace(task=g // k, device_index=g % k).to_string() for g in range(n)]
    for g, name in zip(local_device_ids(mesh), local):
        names[g] = name
    return MeshSpec(tuple(mesh.dim_names), tuple(mesh.shape()), tuple(names))


def local_device_ids(mesh) -> tuple[int, ...]:
    """The mesh devices whose shards ``unpack`` gives this process, in that order (all of
    them in a single-process run; ``(0,)`` without a mesh)."""
    if mesh is None:
        return (0,)
    return tuple(int(i) for i in mesh.local_device_ids())


def layout_spec(layout) -> LayoutSpec:
    """The plain ``LayoutSpec`` of a DTensor ``Layout``."""
    return LayoutSpec(tuple(layout.sharding_specs), mesh_spec(layout.mesh))


def to_mesh(spec: MeshSpec):
    """A DTensor ``Mesh`` for a spec whose devices exist in this process (in a multi-client
    run: a mesh over every client, of which this client holds the devices of its task)."""
    n = spec.num_devices
    ids = np.arange(n).reshape(spec.dim_sizes)
    local = list(range(n))
    if dtensor.num_clients() > 1:
        job, task = dtensor.job_name(), dtensor.client_id()
        specs = [tf.DeviceSpec.from_string(d) for d in spec.device_names]
        local = [i for i, d in enumerate(specs) if d.job == job and d.task == task]
    return dtensor.Mesh(list(spec.dim_names), ids, local, [spec.device_names[i] for i in local])


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
    value. Eager only; variables are read first. In a multi-client run only this
    client's shards, those of ``local_device_ids(mesh)``.

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
    layout_spec(layout).check_shape(array.shape)  # a mesh dim that does not divide: say so
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
    together from the blocks the devices hold (a plain tensor or variable: its value).
    In a multi-client run, of a value whose blocks this client's devices all hold (a
    replicated loss, say)."""
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


def device_values(x) -> list[np.ndarray]:
    """What each device holds of a DTensor or DVariable, in mesh device order (numpy
    copies; replicated blocks appear once per device holding them). In a multi-client
    run: this client's devices, ``mesh.local_device_ids()``."""
    _check_tensor(x, "device_values")
    return unpack(x)


def _check_tensor(x, what):
    if not isinstance(x, (tf.Tensor, tf.Variable)):
        raise TypeError(f"{what} takes a DTensor, a DVariable or a tf.Tensor/tf.Variable. "
                        f"Received: {type(x).__name__}.")


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
    "UNSHARDED", "setup_devices", "make_mesh", "client_info", "ClientInfo", "mesh_spec",
    "layout_spec", "to_mesh", "to_layout", "layout_of", "unpack", "put", "variable",
    "is_dtensor",
]


def shard_geometry_of(shape, layout):
    """``shard_geometry`` for a live DTensor ``Layout``."""
    from ..geometry import shard_geometry
    return shard_geometry(shape, layout_spec(layout))
