"""The numerics ``CompareWidget`` and ``PhaseDiagram`` use, in one import: grids and
steps to tolerance from ``dtsgd_viz.theory.convergence``, the iteration matrix, its
spectral radius and the convergence boundary from ``dtsgd_viz.theory.quadratic``."""

from ..theory.convergence import PhaseGrid, check_grid_axis, diverged, path_losses, phase_grid, steps_to_tolerance
from ..theory.quadratic import convergence_boundary, iteration_matrix, spectral_radius

__all__ = [
    "steps_to_tolerance",
    "path_losses",
    "PhaseGrid",
    "phase_grid",
    "diverged",
    "convergence_boundary",
    "iteration_matrix",
    "spectral_radius",
    "check_grid_axis",
]
