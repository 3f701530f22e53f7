"""Views: functions that take recordings or layout specs and return a matplotlib
``Figure`` (they never print and never call pyplot's show). Geometry is computed by pure
functions first (``*_geometry`` modules); drawing is a thin layer on top."""

from ._path_motion import animate
from .communication import plot_communication
from .compare import compare_findings, plot_compare
from .layout import layout_table, model_table, plot_layout
from .memory import plot_memory
from .modes import plot_modes
from .path_findings import findings
from .paths import plot_paths
from .phase import plot_phase
from .rates import plot_block_rates
from .shards import plot_shards
from .update_anatomy import plot_update
from .update_shards import plot_update_shards

__all__ = [
    "animate", "compare_findings", "findings", "layout_table", "model_table", "plot_block_rates", "plot_communication",
    "plot_compare", "plot_layout", "plot_memory",
    "plot_modes", "plot_paths", "plot_phase", "plot_shards", "plot_update", "plot_update_shards",
]
