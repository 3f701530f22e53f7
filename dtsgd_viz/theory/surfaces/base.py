"""What every surface shares (``Surface``: numpy value and gradient on points, the
TensorFlow value and its gradient) and the TensorFlow helpers the surfaces use.

Importing this module does not import TensorFlow; ``value_tf`` does, quietly.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ... import dtensor as _dtensor

if TYPE_CHECKING:
    import tensorflow as tf


def _tf():
    """TensorFlow, imported quietly on first use."""
    return _dtensor.quiet_tensorflow_import()


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
        if x.ndim < k or x.shape[x.ndim - k :] != tuple(self.shape):
            raise ValueError(
                f"{type(self).__name__} takes points of shape (..., "
                f"{', '.join(map(str, self.shape))}). Received: an array of shape {x.shape}."
            )
        return x

    def _value(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _grad(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def _value_tf(self, w: Any, mesh: Any) -> tf.Tensor:
        raise NotImplementedError

    def value_np(self, x: ArrayLike) -> np.ndarray:
        """The loss at points ``x`` of shape ``(..., *shape)``; returns shape ``(...)``
        (float64)."""
        return self._value(self._points(x))

    def grad_np(self, x: ArrayLike) -> np.ndarray:
        """The analytic gradient at points ``x`` of shape ``(..., *shape)`` (float64)."""
        return self._grad(self._points(x))

    def value_tf(self, w: Any, mesh: Any = None) -> tf.Tensor:
        """The loss of tensor/variable ``w`` (shape ``shape``) as a TensorFlow scalar.

        Differentiable, so ``tf.GradientTape`` gives the gradient the real optimizer
        uses. For a DTensor inside a ``tf.function`` pass its ``mesh`` (a
        ``DVariable`` carries it; eager DTensors are recognised).
        """
        tf = _tf()
        mesh = _mesh_of(w, mesh)
        if not isinstance(w, tf.Variable):
            w = tf.convert_to_tensor(w)
        if tuple(w.shape) != tuple(self.shape):
            raise ValueError(
                f"{type(self).__name__}.value_tf takes a tensor of shape {tuple(self.shape)}. "
                f"Received: shape {tuple(w.shape)}."
            )
        return self._value_tf(w, mesh)

    def grad_tf(self, w: Any, mesh: Any = None) -> tf.Tensor:
        """The TensorFlow gradient of ``value_tf`` at variable ``w`` (by ``GradientTape``)."""
        tf = _tf()
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
    tf = _tf()
    if _dtensor.is_dvariable(w):
        return w.layout.mesh
    if tf.executing_eagerly():
        layout = _dtensor.live_layout(w)
        if layout is not None:
            return layout.mesh
    return None


def _xy_tf(w, mesh):
    """The two coordinates of a 2-vector as scalars. A sharded dim is relaid to
    replicated first: slicing it can fail DTensor's layout propagation."""
    tf = _tf()
    if mesh is not None:
        w = _dtensor.relayout(tf.convert_to_tensor(w), _dtensor.replicated_layout(mesh, 1))
    else:
        w = tf.convert_to_tensor(w)
    return w[0], w[1]
