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
cannot tell a symbolic tensor's layout). Importing this module does not import
TensorFlow; ``value_tf`` does.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import numpy as np

from ..geometry import ShardGeometry, shard_geometry
from ..specs import LayoutSpec, MeshSpec, parse_dims

__all__ = ["Surface", "RotatedQuadratic", "Rosenbrock", "Beale", "Himmelblau",
           "ShardedQuadratic", "SURFACES_2D"]


def _tf():
    from ..dtensor.core import dtensor, tf
    return tf, dtensor


def _check_number(name, value, low=None, low_inclusive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{name} must be a number. Received: {name}={value!r}.")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite. Received: {name}={value!r}.")
    if low is not None and (value < low if low_inclusive else value <= low):
        op = ">=" if low_inclusive else ">"
        raise ValueError(f"{name} must be {op} {low:g}. Received: {name}={value!r}.")
    return value


class Surface:
    """Common behaviour; subclasses define ``shape``, ``_value``, ``_grad`` and
    ``_value_tf`` (the value from a tensor of shape ``shape``)."""

    shape: tuple[int, ...] = (2,)
    view_box: tuple[tuple[float, float], tuple[float, float]] | None = None

    @property
    def dim(self) -> int:
        """How many numbers a parameter of this surface holds."""
        return math.prod(self.shape)

    @property
    def label(self) -> str:
        """A short human-readable name for figure titles."""
        return type(self).__name__

    def _points(self, x) -> np.ndarray:
        x = np.asarray(x, dtype=np.float64)
        k = len(self.shape)
        if x.ndim < k or x.shape[x.ndim - k:] != tuple(self.shape):
            raise ValueError(
                f"{type(self).__name__} takes points of shape (..., "
                f"{', '.join(map(str, self.shape))}). Received: an array of shape {x.shape}."
            )
        return x

    def value_np(self, x) -> np.ndarray:
        """The loss at points ``x`` of shape ``(..., *shape)``; returns shape ``(...)``
        (float64)."""
        return self._value(self._points(x))

    def grad_np(self, x) -> np.ndarray:
        """The analytic gradient at points ``x`` of shape ``(..., *shape)`` (float64)."""
        return self._grad(self._points(x))

    def value_tf(self, w, mesh=None):
        """The loss of tensor/variable ``w`` (shape ``shape``) as a TensorFlow scalar.

        Differentiable, so ``tf.GradientTape`` gives the gradient the real optimizer
        uses. For a DTensor inside a ``tf.function`` pass its ``mesh`` (a
        ``DVariable`` carries it; eager DTensors are recognised).
        """
        tf, _ = _tf()
        mesh = _mesh_of(w, mesh)
        if not isinstance(w, tf.Variable):
            w = tf.convert_to_tensor(w)
        if tuple(w.shape) != tuple(self.shape):
            raise ValueError(
                f"{type(self).__name__}.value_tf takes a tensor of shape {tuple(self.shape)}. "
                f"Received: shape {tuple(w.shape)}."
            )
        return self._value_tf(w, mesh)

    def grad_tf(self, w, mesh=None):
        """The TensorFlow gradient of ``value_tf`` at variable ``w`` (by ``GradientTape``)."""
        tf, _ = _tf()
        if not isinstance(w, tf.Variable):
            w = tf.convert_to_tensor(w)
        with tf.GradientTape() as tape:
            tape.watch(w)
            value = self.value_tf(w, mesh)
        seed = tf.ones_like(value) if _mesh_of(w, mesh) is not None else None
        return tape.gradient(value, w, output_gradients=seed)

    @property
    def minimum(self) -> np.ndarray:
        """Every global minimizer, shape ``(k, *shape)``."""
        raise NotImplementedError

    @property
    def min_value(self) -> float:
        return float(self.value_np(self.minimum[0]))

    @property
    def default_start(self) -> np.ndarray:
        raise NotImplementedError


def _mesh_of(w, mesh):
    """The mesh of ``w`` if it is a DTensor we can recognise, else ``mesh``."""
    if mesh is not None:
        return mesh
    tf, dtensor = _tf()
    if isinstance(w, dtensor.DVariable):
        return w.layout.mesh
    if tf.executing_eagerly():
        from ..dtensor import core as _dtensor
        layout = _dtensor.live_layout(w)
        if layout is not None:
            return layout.mesh
    return None


def _xy_tf(w, mesh):
    """The two coordinates of a 2-vector as scalars. A sharded dim is relaid to
    replicated first: slicing it can fail DTensor's layout propagation."""
    tf, dtensor = _tf()
    if mesh is not None:
        w = dtensor.relayout(tf.convert_to_tensor(w), dtensor.Layout.replicated(mesh, 1))
    else:
        w = tf.convert_to_tensor(w)
    return w[0], w[1]


# ---- 2-D surfaces ----------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class RotatedQuadratic(Surface):
    """``f(x) = x^T A x / 2`` with ``A = R diag(scale, scale*condition) R^T``, ``R`` a
    rotation by ``angle`` degrees: an ill-conditioned valley whose flat direction
    points at ``angle`` from the x-axis. Minimum 0 at the origin.

    >>> s = RotatedQuadratic(condition=4.0, angle=0.0)
    >>> s.grad_np(np.array([1.0, 1.0])).tolist()
    [1.0, 4.0]
    """

    condition: float = 10.0
    angle: float = 30.0
    scale: float = 1.0
    view_box = ((-4.0, 4.0), (-4.0, 4.0))

    def __post_init__(self):
        _check_number("condition", self.condition, 1.0, low_inclusive=True)
        _check_number("angle", self.angle)
        _check_number("scale", self.scale, 0.0)

    @property
    def label(self):
        return f"rotated quadratic (condition {self.condition:g}, angle {self.angle:g}°)"

    @property
    def hessian(self) -> np.ndarray:
        t = math.radians(self.angle)
        r = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
        return r @ np.diag([self.scale, self.scale * self.condition]) @ r.T

    @property
    def hessian_eigenvalues(self) -> np.ndarray:
        """Analytic eigenvalues of the Hessian, ascending."""
        return np.array([self.scale, self.scale * self.condition])

    def _value(self, x):
        return 0.5 * np.einsum("...i,ij,...j->...", x, self.hessian, x)

    def _grad(self, x):
        return x @ self.hessian.T

    def _value_tf(self, w, mesh):
        (a, b), (_, d) = self.hessian.tolist()
        x, y = _xy_tf(w, mesh)
        return 0.5 * (a * x * x + 2.0 * b * x * y + d * y * y)

    @property
    def minimum(self):
        return np.zeros((1, 2))

    @property
    def default_start(self):
        return np.array([-3.0, 1.5])


@dataclasses.dataclass(frozen=True)
class Rosenbrock(Surface):
    """``f(x, y) = (a - x)^2 + b (y - x^2)^2``: a curved, flat-bottomed valley with its
    minimum 0 at ``(a, a^2)``. Needs small learning rates (about 1e-3 for b=100)."""

    a: float = 1.0
    b: float = 100.0

    def __post_init__(self):
        _check_number("a", self.a)
        _check_number("b", self.b, 0.0)

    @property
    def label(self):
        return f"Rosenbrock function (a={self.a:g}, b={self.b:g})"

    @property
    def view_box(self):
        a = float(self.a)
        return ((min(-2.0, a - 1.0), max(2.0, a + 1.0)), (min(-1.0, a * a - 2.0), max(3.0, a * a + 1.0)))

    def _value(self, p):
        x, y = p[..., 0], p[..., 1]
        return (self.a - x) ** 2 + self.b * (y - x * x) ** 2

    def _grad(self, p):
        x, y = p[..., 0], p[..., 1]
        return np.stack([-2.0 * (self.a - x) - 4.0 * self.b * x * (y - x * x),
                         2.0 * self.b * (y - x * x)], axis=-1)

    def _value_tf(self, w, mesh):
        x, y = _xy_tf(w, mesh)
        return (float(self.a) - x) ** 2 + float(self.b) * (y - x * x) ** 2

    @property
    def minimum(self):
        return np.array([[float(self.a), float(self.a) ** 2]])

    @property
    def default_start(self):
        return np.array([-1.2, 1.0])


@dataclasses.dataclass(frozen=True)
class Beale(Surface):
    """Beale's function: a flat plateau with steep walls; minimum 0 at ``(3, 0.5)``."""

    view_box = ((-4.5, 4.5), (-4.5, 4.5))
    _C = (1.5, 2.25, 2.625)

    @property
    def label(self):
        return "Beale function"

    def _value(self, p):
        x, y = p[..., 0], p[..., 1]
        return sum((c - x + x * y ** k) ** 2 for k, c in enumerate(self._C, 1))

    def _grad(self, p):
        x, y = p[..., 0], p[..., 1]
        gx = sum(2.0 * (c - x + x * y ** k) * (y ** k - 1.0) for k, c in enumerate(self._C, 1))
        gy = sum(2.0 * (c - x + x * y ** k) * (k * x * y ** (k - 1))
                 for k, c in enumerate(self._C, 1))
        return np.stack([gx, gy], axis=-1)

    def _value_tf(self, w, mesh):
        x, y = _xy_tf(w, mesh)
        return sum((c - x + x * y ** k) ** 2 for k, c in enumerate(self._C, 1))

    @property
    def minimum(self):
        return np.array([[3.0, 0.5]])

    @property
    def default_start(self):
        return np.array([1.0, 1.5])


@dataclasses.dataclass(frozen=True)
class Himmelblau(Surface):
    """``f(x, y) = (x^2 + y - 11)^2 + (x + y^2 - 7)^2``: four minima of value 0, so
    where an optimizer ends up depends on its path."""

    view_box = ((-5.0, 5.0), (-5.0, 5.0))

    @property
    def label(self):
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
    def minimum(self):
        return np.array(_HIMMELBLAU_MINIMA)

    @property
    def default_start(self):
        return np.array([0.0, 0.0])


# (3, 2) and the three irrational minima, to double precision (gradient < 1e-12).
_HIMMELBLAU_MINIMA = ((3.0, 2.0), (-2.805118086952745, 3.131312518250573),
                      (-3.779310253377747, -3.283185991286170),
                      (3.584428340330492, -1.848126526964404))


SURFACES_2D = (RotatedQuadratic, Rosenbrock, Beale, Himmelblau)


# ---- a many-dimensional, sharded quadratic ----------------------------------------


@dataclasses.dataclass(frozen=True, init=False)
class ShardedQuadratic(Surface):
    """``f(w) = sum(c * (w - target)^2) / 2`` for ``w`` of shape ``shape`` laid out by
    ``specs`` on a mesh of ``mesh`` dims, with a curvature ``c`` constant on each
    device's block and log-spaced over ``curvature`` from block to block (replicas
    share their block's value). Flat blocks crawl, steep ones oscillate, so per-shard
    velocities tell different stories.

    >>> s = ShardedQuadratic((4, 4), {"x": 2, "y": 2}, ("x", "y"), curvature=(0.1, 1.0))
    >>> s.dim, sorted(set(s.curvature.ravel().round(3).tolist()))
    (16, [0.1, 0.215, 0.464, 1.0])
    """

    shape: tuple[int, ...] = (8, 8)
    mesh: tuple[tuple[str, int], ...] = (("batch", 2), ("model", 4))
    specs: tuple[str, ...] = ("batch", "model")
    curvature_range: tuple[float, float] = (0.05, 1.0)
    target: float = 1.0

    def __init__(self, shape=(8, 8), mesh=(("batch", 2), ("model", 4)), specs=("batch", "model"),
                 curvature=(0.05, 1.0), target=1.0):
        if isinstance(shape, int):
            shape = (shape,)
        shape = tuple(shape)
        if not shape or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1
                            for s in shape):
            raise ValueError(f"shape must be a tuple of integers >= 1. Received: shape={shape!r}.")
        names, sizes = parse_dims(mesh)
        specs = (specs,) if isinstance(specs, str) else tuple(specs)
        if not (isinstance(curvature, Sequence) and len(curvature) == 2):
            raise ValueError(f"curvature must be a (low, high) pair. Received: {curvature!r}.")
        lo = _check_number("curvature[0]", curvature[0], 0.0)
        hi = _check_number("curvature[1]", curvature[1], 0.0)
        if hi < lo:
            raise ValueError(f"curvature must be (low, high) with low <= high. Received: {curvature!r}.")
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731
        set_("shape", tuple(int(s) for s in shape))
        set_("mesh", tuple(zip(names, sizes)))
        set_("specs", specs)
        set_("curvature_range", (lo, hi))
        set_("target", _check_number("target", target))
        shard_geometry(self.shape, self.layout_spec)  # validates specs against shape

    @property
    def label(self):
        dims = "x".join(str(s) for _, s in self.mesh)
        return (f"sharded quadratic {'x'.join(map(str, self.shape))} on a {dims} mesh "
                f"(curvature {self.curvature_range[0]:g}..{self.curvature_range[1]:g})")

    @property
    def mesh_dims(self) -> dict[str, int]:
        return dict(self.mesh)

    @property
    def layout_spec(self) -> LayoutSpec:
        return LayoutSpec(self.specs, MeshSpec.create(self.mesh_dims))

    @property
    def geometry(self) -> ShardGeometry:
        return shard_geometry(self.shape, self.layout_spec)

    @property
    def curvature(self) -> np.ndarray:
        """Per-element curvature (float32), constant on each device block, log-spaced
        over ``curvature_range`` in the order of the replica groups."""
        return _curvature(self.shape, self.layout_spec, self.curvature_range)

    @property
    def hessian_eigenvalues(self) -> np.ndarray:
        """Every Hessian eigenvalue (the diagonal curvature), ascending, with multiplicity."""
        return np.sort(self.curvature.astype(np.float64).ravel())

    def _value(self, x):
        axes = tuple(range(x.ndim - len(self.shape), x.ndim))
        return 0.5 * np.sum(self.curvature * (x - self.target) ** 2, axis=axes)

    def _grad(self, x):
        return self.curvature * (x - self.target)

    def _value_tf(self, w, mesh):
        tf, dtensor = _tf()
        c = self.curvature.astype(w.dtype.as_numpy_dtype)
        if mesh is None:
            C = tf.constant(c)
        else:
            from ..dtensor import core as _dtensor
            if isinstance(w, dtensor.DVariable):
                layout = w.layout
            else:
                layout = dtensor.Layout(list(self.specs), mesh)
            C = _dtensor.put(c, layout)
        return tf.reduce_sum(C * (w - self.target) ** 2) / 2.0

    @property
    def minimum(self):
        return np.full((1, *self.shape), self.target)

    @property
    def default_start(self):
        return np.zeros(self.shape)


@functools.lru_cache(maxsize=16)
def _curvature(shape, layout, curvature_range):
    geometry = shard_geometry(shape, layout)
    c = np.empty(geometry.global_shape, np.float32)
    levels = np.geomspace(*curvature_range, geometry.num_unique).astype(np.float32)
    for g, devices in enumerate(geometry.replica_groups):
        c[geometry.blocks[devices[0]]] = levels[g]
    c.setflags(write=False)
    return c
