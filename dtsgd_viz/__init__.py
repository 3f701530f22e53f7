"""dtsgd_viz: see what a distributed (DTensor) SGD optimizer does, shard by shard.

``import dtsgd_viz`` is light: TensorFlow is imported only when a name that needs it
(``SGD``, ``Recorder``, ``make_mesh``, ...) is first used.
"""

from __future__ import annotations

import importlib

from .geometry import ShardGeometry, shard_geometry
from .memory import MemoryPlan, memory_plan
from .merge import MergeError, merge_recordings
from .recording import KINDS, Part, Recording, RecordingFileError, load_recording
from .specs import UNSHARDED, LayoutSpec, MeshSpec

__version__ = "0.1.0"

# name -> module holding it; imported on first access (these import TensorFlow).
_LAZY = {
    "SGD": "optimizer",
    "GradientsClipOption": "optimizer",
    "EMAOption": "optimizer",
    "Recorder": "recorder",
    "layout_autocast_variables": "mixed_precision",
    "make_mesh": "_dtensor",
    "client_info": "_dtensor",
    "ClientInfo": "_dtensor",
    "setup_devices": "_dtensor",
    "layout_of": "_dtensor",
    "mesh_spec": "_dtensor",
    "layout_spec": "_dtensor",
    "to_mesh": "_dtensor",
    "to_layout": "_dtensor",
    "variable": "_dtensor",
    "shard": "_dtensor",
    "to_numpy": "_dtensor",
    "device_values": "_dtensor",
    "UpdateEvent": "hooks",
    "Hook": "hooks",
    "reference": None,
    # views and runs (matplotlib / ipywidgets are imported on first use)
    "plot_layout": "views.layout",
    "layout_table": "views.layout",
    "model_table": "views.layout",
    "plot_shards": "views.shards",
    "plot_update_shards": "views.update_shards",
    "plot_block_rates": "views.rates",
    "plot_paths": "views.paths",
    "animate": "views.paths",
    "plot_phase": "views.phase",
    "plot_modes": "views.modes",
    "surfaces": None,
    "store": None,  # streaming to disk (zarr, imported on first use)
    "run": "runs",
    "widgets": None,
    # tf-keras layers that keep weights sharded under DTensor, and example models
    "ShardedConv2D": "layers",
    "TableEmbedding": "layers",
    "layers": None,
    "models": None,
}

__all__ = [
    "KINDS", "UNSHARDED", "LayoutSpec", "MemoryPlan", "MeshSpec", "MergeError", "Part",
    "Recording", "RecordingFileError", "ShardGeometry", "load_recording", "memory_plan",
    "merge_recordings", "shard_geometry", *_LAZY,
]


def __getattr__(name):
    if name in _LAZY:
        module = importlib.import_module(f".{_LAZY[name] or name}", __name__)  # noqa: E501
        value = module if _LAZY[name] is None else getattr(module, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dtsgd_viz' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
