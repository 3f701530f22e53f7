"""The DTensor world: the one subpackage that imports ``tensorflow.experimental.dtensor``
(``models`` is the other, for its layers).

Devices and meshes, conversion between live meshes/layouts and the plain ``specs``
values, making and reading DTensors, and reading a tf-keras model and its optimizer
slots. Everything it hands back is numpy or a plain value object.
"""

from .core import (ClientInfo, client_info, device_values, is_dtensor, layout_of, layout_spec,
                   make_mesh, mesh_spec, put, setup_devices, shard, to_layout, to_mesh, to_numpy,
                   unpack, variable)

__all__ = [
    "ClientInfo", "client_info", "device_values", "is_dtensor", "layout_of", "layout_spec",
    "make_mesh", "mesh_spec", "put", "setup_devices", "shard", "to_layout", "to_mesh", "to_numpy",
    "unpack", "variable",
]
