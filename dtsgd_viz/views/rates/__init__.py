"""Rates: ``plot_modes`` and ``plot_block_rates``."""
