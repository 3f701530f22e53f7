"""Example tf-keras models sharded with a ``LayoutMap`` (a conv net, a transformer block),
their data, and the layers that keep weights sharded under DTensor."""

from .examples import (
    LOSS,
    bars,
    conv_net,
    conv_net_layout_map,
    dataset,
    on_mesh,
    token_counts,
    train_step,
    transformer_block,
    transformer_layout_map,
    untuned,
)
from .layers import ShardedConv2D, TableEmbedding

__all__ = [
    "LOSS",
    "bars",
    "conv_net",
    "conv_net_layout_map",
    "dataset",
    "on_mesh",
    "token_counts",
    "train_step",
    "transformer_block",
    "transformer_layout_map",
    "untuned",
    "ShardedConv2D",
    "TableEmbedding",
]
