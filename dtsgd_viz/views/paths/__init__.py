"""Update paths on the loss contours: the geometry, scene, frames, legend, loss panel, animation and findings."""
