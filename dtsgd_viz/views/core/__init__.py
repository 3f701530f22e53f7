"""What every picture shares: figures, style, the step convention, the empty-recording error, divergence."""
