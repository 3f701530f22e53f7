"""What every picture shares: figures without pyplot, the style table, the step convention, the
empty-recording error and divergence."""
