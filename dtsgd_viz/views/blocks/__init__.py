"""One sharded run under several rules, block by block: each device block's error over the
updates, in small multiples laid out like the mesh (``plot_blocks``); the numbers come from
``block_errors`` and the finding from ``blocks_finding``."""

from .geometry import BlockErrors, block_errors, blocks_finding, tail_means
from .plot import plot_blocks

__all__ = ["BlockErrors", "block_errors", "blocks_finding", "plot_blocks", "tail_means"]
