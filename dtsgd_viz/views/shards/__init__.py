"""Shard values: the global tensor with each device's block, the norm panels of
``ShardsView`` and ``plot_update_shards``' three tensors of one update."""
