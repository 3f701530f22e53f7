"""The optimizer's mesh in its config: a plain ``MeshSpec`` dict out, a live mesh back in.

tf-keras' DTensor optimizers leave the mesh out of ``get_config``, so ``from_config``
(and every model reload) builds an optimizer without one. ``dtsgd_viz.SGD`` writes
``MeshSpec.to_dict()`` (JSON) and rebuilds the mesh when this process has its devices.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from .. import dtensor as _dtensor
from ..specs import MeshSpec


def mesh_to_config(mesh: Any) -> dict | None:
    return None if mesh is None else _dtensor.mesh_spec(mesh).to_dict()


def mesh_from_config(value: Any) -> Any:
    """A DTensor ``Mesh`` from ``get_config()["mesh"]`` (``None``, a dict, a
    ``MeshSpec`` or a live ``Mesh``); a ``ValueError`` names the mesh and the devices
    found when this process lacks some of its devices."""
    if value is None or type(value).__name__ == "Mesh":
        return value
    spec = value if isinstance(value, MeshSpec) else MeshSpec.from_dict(value)
    short = tuple(d.rsplit("device:", 1)[-1] for d in spec.device_names)  # as TF lists them
    device_type = short[0].split(":")[0]
    if device_type == "CPU":
        try:  # virtual CPU devices can still be made if TensorFlow has not started
            _dtensor.setup_devices(spec.num_devices)
        except ValueError:
            pass  # reported below, with the mesh
    found = [d.name.rsplit("device:", 1)[-1] for d in tf.config.list_logical_devices(device_type)]
    missing = [d for d in short if d not in found]
    if missing:
        raise ValueError(
            f"The optimizer config's mesh {spec} runs on devices {list(short)}, but this "
            f"process has {found or 'no ' + device_type + ' devices'} (missing {missing}). "
            f"Create the devices first (dtsgd_viz.make_mesh({spec.shape}) before any other "
            "TensorFlow work), or set config['mesh'] to a mesh of this machine, or None."
        )
    return _dtensor.to_mesh(spec)
