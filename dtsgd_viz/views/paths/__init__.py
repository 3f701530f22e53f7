"""Update paths on the loss contours: geometry (projections, thinning, casing), the scene,
the frames, the names, the loss panel, the animation and the numbers the figures state."""
