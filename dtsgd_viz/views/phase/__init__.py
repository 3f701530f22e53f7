"""Phase maps over (learning rate x momentum): step and ratio maps, regions, boundaries, the picked cell."""
