"""Text on figures: names at the ends of lines and the overlap measure every view's tests read."""
