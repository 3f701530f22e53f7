"""Loss surfaces to optimize and draw: value and gradient in numpy and TensorFlow.

Each surface is a frozen dataclass that knows its value (``value_np``, vectorised
over a grid, and ``value_tf`` for the real optimizer), its gradient (``grad_np``,
``grad_tf``), its minimum point(s), a default start and, for 2-D surfaces, a view
box. Parameters have shape ``surface.shape`` (``(2,)`` for the 2-D surfaces) and
``surface.dim`` numbers in all::

    >>> import numpy as np
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.Rosenbrock()
    >>> float(s.value_np(np.array([1.0, 1.0]))), s.minimum.tolist()
    (0.0, [[1.0, 1.0]])
    >>> grid = np.zeros((4, 5, 2))           # any leading shape: one value per point
    >>> s.value_np(grid).shape
    (4, 5)
    >>> surfaces.RotatedQuadratic(condition=10.0).hessian_eigenvalues.tolist()
    [1.0, 10.0]

``value_tf`` accepts a plain tensor or variable, a ``DVariable`` (its mesh is read
from it) or, inside a ``tf.function``, a DTensor together with ``mesh=`` (DTensor
cannot tell a symbolic tensor's layout). Importing this package does not import
TensorFlow; ``value_tf`` does.

``base`` holds ``Surface``, ``classic`` the 2-D test functions (Rosenbrock, Beale,
Himmelblau) and ``quadratic`` the quadratics (``RotatedQuadratic``, ``ShardedQuadratic``).
"""

from .base import Surface
from .classic import Beale, Himmelblau, Rosenbrock
from .quadratic import RotatedQuadratic, ShardedQuadratic

__all__ = ["Surface", "RotatedQuadratic", "Rosenbrock", "Beale", "Himmelblau", "ShardedQuadratic", "SURFACES_2D"]

SURFACES_2D = (RotatedQuadratic, Rosenbrock, Beale, Himmelblau)
