"""``plot_shards``: the global tensor at one optimizer update with each device's block
outlined, beside each unique block's L2 norm over the updates (``view``)::

    fig = dtsgd_viz.plot_shards(rec, "w", "velocity", step=10)   # update 10
"""

from .findings import STATS, STATS_ONLY_TEXT  # noqa: F401 - tests read them from here
from .geometry import shard_norms
from .tensor_panel import TensorPanel, draw_tensor
from .view import ShardsView, draw_shards, plot_shards

__all__ = ["plot_shards", "draw_shards", "shard_norms", "ShardsView", "draw_tensor", "TensorPanel"]
