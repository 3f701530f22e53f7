"""Where the stale velocity hits, one grid per run (``plot_stale``)."""

from .geometry import Row, StaleGrid, stale_finding, stale_grid
from .plot import plot_stale

__all__ = ["Row", "StaleGrid", "plot_stale", "stale_finding", "stale_grid"]
