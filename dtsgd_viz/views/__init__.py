"""Views: recordings or layout specs in, a matplotlib ``Figure`` out (pure geometry first, no printing, no pyplot)."""

from .blocks import block_errors, blocks_finding, plot_blocks
from .compare import compare_findings, plot_compare
from .mesh.communication import plot_communication
from .mesh.layout import layout_table, model_table, plot_layout
from .mesh.memory import plot_memory
from .paths.animation import animate
from .paths.findings import findings
from .paths.plot import plot_paths
from .phase.geometry import phase_finding, steps_finding
from .phase.plot import plot_phase
from .rates.block_rates import plot_block_rates
from .rates.modes import plot_modes
from .shards.plot import plot_shards
from .shards.update import plot_update_shards
from .stale import plot_stale, stale_finding, stale_grid
from .timeline import plot_timeline, timeline_finding, update_timeline
from .update.plot import plot_update

__all__ = [
    "animate",
    "block_errors",
    "blocks_finding",
    "compare_findings",
    "findings",
    "layout_table",
    "model_table",
    "plot_block_rates",
    "plot_blocks",
    "plot_communication",
    "plot_compare",
    "plot_layout",
    "plot_memory",
    "plot_modes",
    "plot_paths",
    "phase_finding",
    "plot_phase",
    "plot_shards",
    "plot_update",
    "plot_update_shards",
    "plot_stale",
    "stale_finding",
    "steps_finding",
    "stale_grid",
    "plot_timeline",
    "timeline_finding",
    "update_timeline",
]
