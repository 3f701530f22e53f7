"""The numbers a picture is checked against (numpy only): the update rules written out
(``reference``), momentum on a quadratic in closed form (``quadratic``: spectral radius,
stability boundary, critical damping), runs of the rules to a tolerance
(``convergence``) and the test surfaces (``surfaces``).

``dtsgd_viz.theory.rate(...)`` and the other closed forms are re-exported here.
"""

from .quadratic import (
    RULES,
    convergence_boundary,
    critical_damping,
    iteration_matrix,
    problem_rate,
    rate,
    spectral_radius,
)

__all__ = [
    "iteration_matrix",
    "spectral_radius",
    "rate",
    "problem_rate",
    "convergence_boundary",
    "critical_damping",
    "RULES",
]
