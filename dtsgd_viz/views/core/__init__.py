"""What every picture shares: figures without pyplot, the style table, the step convention, the
empty-recording error and the small numeric helpers (stretches, divergence)."""
