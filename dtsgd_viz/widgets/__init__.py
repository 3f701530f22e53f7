"""Live views for Jupyter, built on ipywidgets (imported here, never by ``import dtsgd_viz``).

from dtsgd_viz.widgets import ShardExplorer, PathExplorer, CompareWidget, PhaseDiagram
ShardExplorer(recording)          # last expression of a cell
PathExplorer(recordings, surface)
CompareWidget(surface, learning_rate=0.05, momentum=0.9)
PhaseDiagram(surface, steps=150)
LiveMonitor("run.zarr")           # a store another process is writing
LayoutExplorer((1024, 512), mesh={"data": 4, "model": 16})   # try layouts, no devices
RateExplorer(recording, sharded_quadratic)   # each block on the rate curves, an lr slider
"""

from ..theory.convergence import PhaseGrid, phase_grid, steps_to_tolerance
from ..theory.quadratic import convergence_boundary
from ._canvas import FigureWidget
from .compare import CompareParams, CompareWidget, RunQueue, compare_configs, compare_params
from .layout_explorer import LayoutExplorer, LayoutExplorerState, layout_explorer_state
from .live_monitor import LiveMonitor, MonitorState, monitor_state, poll, readout
from .path_explorer import PathExplorer, PathExplorerState, PathFrame, path_explorer_state, path_frame
from .phase_diagram import PhaseDiagram, PhasePick, phase_pick
from .rate_explorer import RateExplorer, RateState, rate_state
from .shard_explorer import ExplorerState, ShardExplorer, explorer_state, redraw_for

__all__ = [
    "FigureWidget",
    "ShardExplorer",
    "ExplorerState",
    "explorer_state",
    "redraw_for",
    "PathExplorer",
    "PathExplorerState",
    "path_explorer_state",
    "PathFrame",
    "path_frame",
    "CompareWidget",
    "CompareParams",
    "compare_params",
    "compare_configs",
    "RunQueue",
    "PhaseDiagram",
    "PhasePick",
    "phase_pick",
    "PhaseGrid",
    "phase_grid",
    "convergence_boundary",
    "steps_to_tolerance",
    "LiveMonitor",
    "MonitorState",
    "monitor_state",
    "poll",
    "readout",
    "LayoutExplorer",
    "LayoutExplorerState",
    "layout_explorer_state",
    "RateExplorer",
    "RateState",
    "rate_state",
]
