"""Live views for Jupyter, built on ipywidgets (imported here, never by ``import dtsgd_viz``).

    from dtsgd_viz.widgets import ShardExplorer
    ShardExplorer(recording)          # last expression of a cell
"""

from ._canvas import FigureWidget
from .shard_explorer import ExplorerState, ShardExplorer, explorer_state, redraw_for

__all__ = ["ExplorerState", "FigureWidget", "ShardExplorer", "explorer_state", "redraw_for"]
