"""Shard values: the global tensor with its device blocks, their norms, and one update's three tensors."""
