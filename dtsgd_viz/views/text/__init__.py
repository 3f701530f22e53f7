"""Text on figures: names at the ends of lines, texts kept inside their figure, and the
overlap measure every view's tests read."""
