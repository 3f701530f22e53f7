"""Update paths on the loss contours: geometry (projections, thinning), the scene, the
frames, the legend, the loss panel, the animation and the numbers the figures state."""
