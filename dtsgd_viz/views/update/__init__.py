"""One update up close: its geometry (the rule's terms), the arrows, the marks, the labels
and the headline words of ``plot_update``."""
