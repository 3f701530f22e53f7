"""dtsgd_viz: see what a distributed (DTensor) SGD optimizer does, shard by shard.

``import dtsgd_viz`` is light: TensorFlow is imported only when a name that needs it
(``SGD``, ``Recorder``, ``make_mesh``, ...) is first used.
"""

from __future__ import annotations

import importlib
from typing import Any

from .geometry import ShardGeometry, shard_geometry
from .recording import (
    KINDS,
    CommunicationPlan,
    CommunicationReport,
    MemoryPlan,
    MergeError,
    Part,
    Recording,
    RecordingFileError,
    communication_plan,
    load_recording,
    memory_plan,
    merge_recordings,
)
from .specs import UNSHARDED, LayoutSpec, MeshSpec

__version__ = "0.1.0"

# name -> module holding it; imported on first access (these import TensorFlow).
_LAZY = {
    "SGD": "optimizer",
    "GradientsClipOption": "optimizer",
    "EMAOption": "optimizer",
    "layout_autocast_variables": "optimizer",
    "MeshLossScaleOptimizer": "optimizer",
    "Recorder": "recorder.recorder",
    "make_mesh": "dtensor",
    "client_info": "dtensor",
    "ClientInfo": "dtensor",
    "setup_devices": "dtensor",
    "layout_of": "dtensor",
    "mesh_spec": "dtensor",
    "layout_spec": "dtensor",
    "to_mesh": "dtensor",
    "to_layout": "dtensor",
    "variable": "dtensor",
    "shard": "dtensor",
    "to_numpy": "dtensor",
    "device_values": "dtensor",
    "communication": "dtensor.communication",
    "preflight": "dtensor.preflight",
    "DTensorTrapError": "dtensor.preflight",
    "to_tensorboard": "recording.tensorboard",
    "UpdateEvent": "hooks",
    "Hook": "hooks",
    # views and runs (matplotlib / ipywidgets are imported on first use)
    "plot_layout": "views",
    "layout_table": "views",
    "model_table": "views",
    "plot_memory": "views",
    "plot_communication": "views",
    "plot_compare": "views",
    "compare_findings": "views",
    "findings": "views",
    "plot_shards": "views",
    "plot_update_shards": "views",
    "plot_block_rates": "views",
    "plot_blocks": "views",
    "block_errors": "views",
    "blocks_finding": "views",
    "plot_paths": "views",
    "plot_update": "views",
    "animate": "views",
    "plot_phase": "views",
    "plot_modes": "views",
    "plot_timeline": "views",
    "update_timeline": "views",
    "timeline_finding": "views",
    "plot_stale": "views",
    "stale_grid": "views",
    "stale_finding": "views",
    "phase_finding": "views",
    "steps_finding": "views",
    "stale_hits": "theory.stale",
    "run": "runs",
    # tf-keras layers that keep weights sharded under DTensor
    "ShardedConv2D": "models",
    "TableEmbedding": "models",
}

# name -> module, for the modules reached as attributes (dtsgd_viz.surfaces, ...).
_MODULES = {
    "reference": "theory.reference",
    "surfaces": "theory.surfaces",
    "theory": "theory",
    "store": "recording.store",  # streaming to disk (zarr, imported on first use)
    "widgets": "widgets",
    "web": "web",  # explorers the browser draws (anywidget), live with no kernel
    "layers": "models.layers",
    "models": "models",
}

# the lazy names are listed from _LAZY and _MODULES, which pyright cannot follow
__all__ = [  # pyright: ignore[reportUnsupportedDunderAll]
    "KINDS",
    "UNSHARDED",
    "CommunicationPlan",
    "CommunicationReport",
    "communication_plan",
    "LayoutSpec",
    "MemoryPlan",
    "MeshSpec",
    "MergeError",
    "Part",
    "Recording",
    "RecordingFileError",
    "ShardGeometry",
    "load_recording",
    "memory_plan",
    "merge_recordings",
    "shard_geometry",
    *_LAZY,
    *_MODULES,
]


# subpackages that import TensorFlow when imported: it is imported quietly first (its C++
# start-up lines silenced; see dtensor.quiet_tensorflow_import)
_IMPORT_TENSORFLOW = ("optimizer", "recorder", "models")


def __getattr__(name: str) -> Any:
    if name in _LAZY or name in _MODULES:
        if (_MODULES.get(name) or _LAZY[name]).partition(".")[0] in _IMPORT_TENSORFLOW:
            from .dtensor import quiet_tensorflow_import

            quiet_tensorflow_import()
        if name in _MODULES:
            value = importlib.import_module(f".{_MODULES[name]}", __name__)
        else:
            value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'dtsgd_viz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
