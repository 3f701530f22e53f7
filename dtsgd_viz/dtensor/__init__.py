"""The DTensor world: the one subpackage that imports ``tensorflow.experimental.dtensor``
(``models`` is the other, for its layers).

Devices and meshes (``devices``), conversion between live meshes/layouts and the plain
``specs`` values (``convert``), making and reading DTensors (``values``), and reading a
tf-keras model and its optimizer slots (``model``). Everything it hands back is numpy or
a plain value object.

Importing it imports no TensorFlow: each function that needs it imports it through
``quiet_tensorflow_import`` (TensorFlow's C++ start-up lines silenced).
"""

from .convert import (
    layout_spec,
    local_device_ids,
    make_layout,
    mesh_spec,
    replicated_layout,
    shard_geometry_of,
    to_layout,
    to_mesh,
)
from .devices import ClientInfo, client_info, make_mesh, quiet_tensorflow_import, setup_devices
from .values import (
    device_values,
    is_dtensor,
    is_dvariable,
    layout_of,
    live_layout,
    match_layout,
    put,
    relayout,
    replicated_scalar_variable,
    shard,
    to_numpy,
    unpack,
    variable,
    zeros_like_variable,
)

__all__ = [
    "ClientInfo",
    "client_info",
    "device_values",
    "is_dtensor",
    "is_dvariable",
    "layout_of",
    "layout_spec",
    "live_layout",
    "local_device_ids",
    "make_layout",
    "make_mesh",
    "match_layout",
    "mesh_spec",
    "put",
    "quiet_tensorflow_import",
    "relayout",
    "replicated_layout",
    "replicated_scalar_variable",
    "setup_devices",
    "shard",
    "shard_geometry_of",
    "to_layout",
    "to_mesh",
    "to_numpy",
    "unpack",
    "variable",
    "zeros_like_variable",
]
