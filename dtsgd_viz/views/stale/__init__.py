"""Where the stale velocity hits, one grid per run (``plot_stale``)."""

from .geometry import Row, StaleGrid, stale_finding, stale_grid
from .plot import class_colors, plot_stale

__all__ = ["Row", "StaleGrid", "class_colors", "plot_stale", "stale_finding", "stale_grid"]
