"""``plot_shards``: the global tensor at one update, its device blocks outlined, beside each block's norm."""

from .geometry import shard_norms
from .tensor_panel import TensorPanel
from .view import ShardsView, draw_shards, plot_shards

__all__ = ["plot_shards", "draw_shards", "shard_norms", "ShardsView", "TensorPanel"]
