"""Rates: ``plot_modes`` (the error's modes and each rule's rate) and ``plot_block_rates``
(each device block on the rate curve)."""
