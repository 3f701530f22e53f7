"""Explorers the browser draws, live in any notebook front end and on a saved page with
no kernel: Python computes what they show once (``path_state``, ``phase_state``,
``shard_state``, ``layout_state``, ``compare_state``), an
ES module (anywidget) draws it as SVG and handles the slider, Play, hover and clicks;
where a click or a drag needs a path Python did not compute (``PhaseDiagram``,
``CompareWidget``), the module runs tf-keras' rule itself.

``dtsgd_viz.widgets`` holds the explorers the kernel draws (matplotlib pictures).
"""

from .compare import CompareWidget, compare_state
from .layout import LayoutExplorer, layout_state
from .look import look_table
from .paths import PathExplorer, loss_ticks, path_state
from .phase import PhaseDiagram, phase_state
from .shards import ShardExplorer, shard_state
from .widget import BrowserWidget

__all__ = [
    "PathExplorer",
    "path_state",
    "PhaseDiagram",
    "phase_state",
    "ShardExplorer",
    "shard_state",
    "LayoutExplorer",
    "layout_state",
    "CompareWidget",
    "compare_state",
    "loss_ticks",
    "look_table",
    "BrowserWidget",
]
