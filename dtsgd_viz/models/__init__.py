"""Example tf-keras models sharded with a ``LayoutMap`` (a conv net, a transformer block),
their data, and the layers that keep weights sharded under DTensor."""

from .examples import *  # noqa: F401,F403
from .examples import __all__ as _examples
from .layers import ShardedConv2D, TableEmbedding

__all__ = [*_examples, "ShardedConv2D", "TableEmbedding"]
