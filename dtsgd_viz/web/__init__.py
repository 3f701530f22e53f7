"""Explorers the browser draws, live in any notebook front end and on a saved page with
no kernel: Python computes what they show once (``path_state``), an ES module
(anywidget) draws it as SVG and handles the slider, Play and hover.

``dtsgd_viz.widgets`` holds the explorers the kernel draws (matplotlib pictures).
"""

from .look import look_table
from .paths import PathExplorer, loss_ticks, path_state
from .widget import BrowserWidget

__all__ = ["PathExplorer", "path_state", "loss_ticks", "look_table", "BrowserWidget"]
