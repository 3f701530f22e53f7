"""One update up close: ``plot_update`` and its pieces."""
