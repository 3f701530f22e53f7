"""The classic 2-D test functions: Rosenbrock's valley, Beale's plateau and Himmelblau's
four minima."""

from __future__ import annotations

import dataclasses

import numpy as np

from .base import Surface, _check_number, _xy_tf


@dataclasses.dataclass(frozen=True)
class Rosenbrock(Surface):
    """``f(x, y) = (a - x)^2 + b (y - x^2)^2``: a curved, flat-bottomed valley with its
    minimum 0 at ``(a, a^2)``. Needs small learning rates (about 1e-3 for b=100)."""

    a: float = 1.0
    b: float = 100.0

    def __post_init__(self) -> None:
        _check_number("a", self.a)
        _check_number("b", self.b, 0.0)

    @property
    def label(self) -> str:
        return f"Rosenbrock function (a={self.a:g}, b={self.b:g})"

    @property
    def view_box(self) -> tuple[tuple[float, float], tuple[float, float]]:
        a = float(self.a)
        return ((min(-2.0, a - 1.0), max(2.0, a + 1.0)), (min(-1.0, a * a - 2.0), max(3.0, a * a + 1.0)))

    def _value(self, p):
        x, y = p[..., 0], p[..., 1]
        return (self.a - x) ** 2 + self.b * (y - x * x) ** 2

    def _grad(self, p):
        x, y = p[..., 0], p[..., 1]
        return np.stack([-2.0 * (self.a - x) - 4.0 * self.b * x * (y - x * x), 2.0 * self.b * (y - x * x)], axis=-1)

    def _value_tf(self, w, mesh):
        x, y = _xy_tf(w, mesh)
        return (float(self.a) - x) ** 2 + float(self.b) * (y - x * x) ** 2

    @property
    def minimum(self) -> np.ndarray:
        return np.array([[float(self.a), float(self.a) ** 2]])

    @property
    def default_start(self) -> np.ndarray:
        return np.array([-1.2, 1.0])


@dataclasses.dataclass(frozen=True)
class Beale(Surface):
    """Beale's function: a flat plateau with steep walls; minimum 0 at ``(3, 0.5)``."""

    view_box = ((-4.5, 4.5), (-4.5, 4.5))
    _C = (1.5, 2.25, 2.625)

    @property
    def label(self) -> str:
        return "Beale function"

    def _value(self, p):
        x, y = p[..., 0], p[..., 1]
        return sum((c - x + x * y**k) ** 2 for k, c in enumerate(self._C, 1))

    def _grad(self, p):
        x, y = p[..., 0], p[..., 1]
        gx = sum(2.0 * (c - x + x * y**k) * (y**k - 1.0) for k, c in enumerate(self._C, 1))
        gy = sum(2.0 * (c - x + x * y**k) * (k * x * y ** (k - 1)) for k, c in enumerate(self._C, 1))
        return np.stack([gx, gy], axis=-1)

    def _value_tf(self, w, mesh):
        x, y = _xy_tf(w, mesh)
        return sum((c - x + x * y**k) ** 2 for k, c in enumerate(self._C, 1))

    @property
    def minimum(self) -> np.ndarray:
        return np.array([[3.0, 0.5]])

    @property
    def default_start(self) -> np.ndarray:
        return np.array([1.0, 1.5])


@dataclasses.dataclass(frozen=True)
class Himmelblau(Surface):
    """``f(x, y) = (x^2 + y - 11)^2 + (x + y^2 - 7)^2``: four minima of value 0, so
    where an optimizer ends up depends on its path."""

    view_box = ((-5.0, 5.0), (-5.0, 5.0))

    @property
    def label(self) -> str:
        return "Himmelblau function"

    def _value(self, p):
        x, y = p[..., 0], p[..., 1]
        return (x * x + y - 11.0) ** 2 + (x + y * y - 7.0) ** 2

    def _grad(self, p):
        x, y = p[..., 0], p[..., 1]
        u, v = x * x + y - 11.0, x + y * y - 7.0
        return np.stack([4.0 * x * u + 2.0 * v, 2.0 * u + 4.0 * y * v], axis=-1)

    def _value_tf(self, w, mesh):
        x, y = _xy_tf(w, mesh)
        return (x * x + y - 11.0) ** 2 + (x + y * y - 7.0) ** 2

    @property
    def minimum(self) -> np.ndarray:
        return np.array(_HIMMELBLAU_MINIMA)

    @property
    def default_start(self) -> np.ndarray:
        return np.array([0.0, 0.0])


# (3, 2) and the three irrational minima, to double precision (gradient < 1e-12).
_HIMMELBLAU_MINIMA = (
    (3.0, 2.0),
    (-2.805118086952745, 3.131312518250573),
    (-3.779310253377747, -3.283185991286170),
    (3.584428340330492, -1.848126526964404),
)
