"""One update up close: its geometry (the rule's terms, ``geometry``), the panel that draws
it (``panel``), one zoom for runs side by side (``zoom``), and ``plot_update`` (``plot``)
with its headline words (``words``)."""
