"""Devices and meshes: TensorFlow imported quietly, the CPU split into virtual devices,
DTensor meshes (also over several clients) and this process's place among the clients.

Importing this module imports no TensorFlow: the functions do, through
``quiet_tensorflow_import``, which silences TensorFlow's C++ start-up lines unless the
user already chose a ``TF_CPP_MIN_LOG_LEVEL`` (``DTSGD_VIZ_TF_LOGS=1`` keeps them).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import math
import os
import sys
from types import ModuleType
from typing import Any

from ..specs import Dims, parse_dims

DEFAULT_CPU_DEVICES = 8
MAX_CPU_DEVICES = 64
CPU_DEVICES_ENV = "DTSGD_VIZ_CPU_DEVICES"
"""Virtual CPU devices a process makes (``dtsgd-viz launch --devices-per-client`` sets it)."""


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


@functools.cache
def _tensorflow():
    """``(tensorflow, tensorflow.experimental.dtensor)``, imported quietly on the first call."""
    with _quiet_native_stderr():
        import tensorflow as tf
        from tensorflow.experimental import dtensor
    return tf, dtensor


def quiet_tensorflow_import() -> ModuleType:
    """Import TensorFlow (and its DTensor API) without its C++ start-up lines; returns the
    ``tensorflow`` module. The first call sets ``TF_CPP_MIN_LOG_LEVEL=3`` unless it is set
    already, and silences fd 2 while TensorFlow loads; ``DTSGD_VIZ_TF_LOGS=1`` keeps the
    lines. Later calls only return the module.

    Every function of ``dtsgd_viz.dtensor`` that needs TensorFlow calls it first, and
    ``dtsgd_viz.SGD`` (and the other names ``dtsgd_viz`` loads on first use) call it before
    the module that holds them imports TensorFlow.
    """
    return _tensorflow()[0]


def _asked_cpu_devices() -> int | None:
    value = os.environ.get(CPU_DEVICES_ENV)
    if not value:
        return None
    if not value.isdigit() or not 1 <= int(value) <= MAX_CPU_DEVICES:
        raise ValueError(f"{CPU_DEVICES_ENV} must be an integer from 1 to {MAX_CPU_DEVICES}. Received: {value!r}.")
    return int(value)


def setup_devices(num_devices: int = DEFAULT_CPU_DEVICES) -> int:
    """Split the host CPU into ``num_devices`` logical devices (once, before TF starts).

    Returns the number of logical CPU devices available afterwards. Calling it
    again with a number already available does nothing. Raises ``ValueError``
    when TensorFlow has already started with fewer devices, saying what to do.
    TensorFlow is imported quietly first (see ``quiet_tensorflow_import``).
    """
    if isinstance(num_devices, bool) or not isinstance(num_devices, int) or num_devices < 1:
        raise ValueError(f"num_devices must be an integer >= 1. Received: {num_devices!r}.")
    if num_devices > MAX_CPU_DEVICES:
        raise ValueError(
            f"A virtual CPU mesh can have at most {MAX_CPU_DEVICES} devices. Received a request for {num_devices}."
        )
    tf = quiet_tensorflow_import()
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
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * want)
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


def make_mesh(dims: Dims, device_type: str | None = None) -> Any:
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
        raise ValueError(f"device_type must be 'CPU', 'GPU' or 'TPU'. Received: {device_type!r}.")
    tf, dtensor = _tensorflow()
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
            list(zip(names, sizes)),
            local_devices=None if device_type == "TPU" else local_names,
            device_type=device_type,
        )
    return dtensor.create_mesh(list(zip(names, sizes)), devices=local_names, device_type=device_type)


def _initialize_clients(device_type: str) -> None:
    """Connect this client to the others (once per process; blocks until they come)."""
    _, dtensor = _tensorflow()
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
    _, dtensor = _tensorflow()
    return ClientInfo(int(dtensor.client_id()), int(dtensor.num_clients()))
