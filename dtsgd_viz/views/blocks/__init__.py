"""One sharded run under several rules, block by block (``plot_blocks``)."""

from .geometry import BlockErrors, block_errors, blocks_finding, tail_means
from .plot import plot_blocks

__all__ = ["BlockErrors", "block_errors", "blocks_finding", "plot_blocks", "tail_means"]
