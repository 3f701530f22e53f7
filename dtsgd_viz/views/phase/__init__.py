"""Phase maps over (learning rate x momentum): the geometry of the ratio and step maps, the
regions, contours, stability boundaries and the picked cell in time."""
