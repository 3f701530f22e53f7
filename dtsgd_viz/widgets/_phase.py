"""The numerics behind ``CompareWidget`` and ``PhaseDiagram``, kept importable here;
they live in ``dtsgd_viz.convergence`` (grids, steps to tolerance) and
``dtsgd_viz.theory`` (iteration matrix, spectral radius, boundary)."""

from ..theory.convergence import PhaseGrid, check_grid_axis, diverged, path_losses, phase_grid, steps_to_tolerance
from ..theory.quadratic import convergence_boundary, iteration_matrix, spectral_radius

__all__ = ["steps_to_tolerance", "path_losses", "PhaseGrid", "phase_grid",
           "diverged", "convergence_boundary", "iteration_matrix", "spectral_radius",
           "check_grid_axis"]
