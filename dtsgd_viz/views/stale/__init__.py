"""Where the stale velocity hits: which devices' shards moved with the previous update's
velocity, update by update, one grid per run (``plot_stale``); the numbers come from
``stale_grid`` (``theory.stale.stale_hits`` per run and variable) and the title from
``stale_finding``."""

from .geometry import Row, StaleGrid, stale_finding, stale_grid
from .plot import class_colors, plot_stale

__all__ = ["Row", "StaleGrid", "class_colors", "plot_stale", "stale_finding", "stale_grid"]
