"""Quadratics: ``RotatedQuadratic``, an ill-conditioned 2-D valley, and
``ShardedQuadratic``, many dimensions laid out on a mesh with a curvature per device block."""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ... import dtensor as _dtensor
from ...geometry import ShardGeometry, shard_geometry
from ...specs import LayoutSpec, MeshSpec, parse_dims
from .base import Surface, _check_number, _tf, _xy_tf


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

    def __post_init__(self) -> None:
        _check_number("condition", self.condition, 1.0, low_inclusive=True)
        _check_number("angle", self.angle)
        _check_number("scale", self.scale, 0.0)

    @property
    def label(self) -> str:
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
    def minimum(self) -> np.ndarray:
        return np.zeros((1, 2))

    @property
    def default_start(self) -> np.ndarray:
        return np.array([-3.0, 1.5])


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

    def __init__(
        self,
        shape: int | Sequence[int] = (8, 8),
        mesh: Any = (("batch", 2), ("model", 4)),
        specs: Sequence[str] = ("batch", "model"),
        curvature: tuple[float, float] = (0.05, 1.0),
        target: float = 1.0,
    ):
        if isinstance(shape, int):
            shape = (shape,)
        if not isinstance(shape, Sequence):
            raise TypeError(
                f"shape must be a tuple of integers >= 1 (the parameter's shape; the mesh is "
                f"the second argument, as dims like {{'batch': 2, 'model': 4}}). "
                f"Received: shape={type(shape).__name__} {shape!r:.80}."
            )
        shape = tuple(shape)
        if not shape or any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 1 for s in shape):
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
    def label(self) -> str:
        dims = "x".join(str(s) for _, s in self.mesh)
        return (
            f"sharded quadratic {'x'.join(map(str, self.shape))} on a {dims} mesh "
            f"(curvature {self.curvature_range[0]:g}..{self.curvature_range[1]:g})"
        )

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
        tf = _tf()
        c = self.curvature.astype(w.dtype.as_numpy_dtype)
        if mesh is None:
            C = tf.constant(c)
        else:
            if _dtensor.is_dvariable(w):
                layout = w.layout
            else:
                layout = _dtensor.make_layout(self.specs, mesh)
            C = _dtensor.put(c, layout)
        return tf.reduce_sum(C * (w - self.target) ** 2) / 2.0

    @property
    def minimum(self) -> np.ndarray:
        return np.full((1, *self.shape), self.target)

    @property
    def default_start(self) -> np.ndarray:
        return np.zeros(self.shape)


@functools.lru_cache(maxsize=16)
def _curvature(shape, layout, curvature_range):
    geometry = shard_geometry(shape, layout)
    c = np.empty(geometry.global_shape, np.float32)
    low, high = curvature_range
    levels = np.geomspace(low, high, geometry.num_unique).astype(np.float32)
    for g, devices in enumerate(geometry.replica_groups):
        c[geometry.blocks[devices[0]]] = levels[g]
    c.setflags(write=False)
    return c
