"""The reference constructor's options of ``dtsgd_viz.SGD`` (``GradientsClipOption``,
``EMAOption``) and the checks of its arguments, mapped to tf-keras' keyword arguments.

Plain Python: importing this module imports no TensorFlow.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping


@dataclasses.dataclass(frozen=True)
class GradientsClipOption:
    """Gradient clipping, as the reference constructor's ``gradients_clip_option``.

    At most one of the three may be set; they map to tf-keras' ``clipnorm``,
    ``clipvalue`` and ``global_clipnorm``.
    """

    clipnorm: float | None = None
    clipvalue: float | None = None
    global_clipnorm: float | None = None


@dataclasses.dataclass(frozen=True)
class EMAOption:
    """Exponential moving average of the weights, as the reference ``ema_option``.

    Maps to tf-keras' ``use_ema``, ``ema_momentum`` and ``ema_overwrite_frequency``.
    """

    use_ema: bool = False
    ema_momentum: float = 0.99
    ema_overwrite_frequency: int | None = None


def _option_kwargs(option, cls, arg):
    if option is None:
        return {}
    fields = [f.name for f in dataclasses.fields(cls)]
    if isinstance(option, Mapping):
        unknown = sorted(set(option) - set(fields))
        if unknown:
            raise ValueError(f"Unknown keys in {arg}: {unknown}. Allowed: {fields}.")
        values = dict(option)
    elif all(hasattr(option, f) for f in fields):
        values = {f: getattr(option, f) for f in fields}
    else:
        raise TypeError(
            f"{arg} must be a dtsgd_viz.{cls.__name__}, a dict with keys {fields}, or an "
            f"object with those attributes. Received: {option!r}."
        )
    return dataclasses.asdict(cls(**values))


def _check_learning_rate(lr):
    if isinstance(lr, bool):
        raise TypeError(f"learning_rate must be a positive finite number or a schedule. Received: {lr!r}.")
    if isinstance(lr, (int, float)) or (hasattr(lr, "dtype") and getattr(lr, "shape", None) == ()):
        try:
            value = float(lr)
        except (TypeError, ValueError):
            return
        if not (math.isfinite(value) and value > 0):
            raise ValueError(
                f"learning_rate must be finite and > 0 (or a LearningRateSchedule / callable). Received: {lr!r}."
            )


def _check_hyperparameters(learning_rate, momentum, nesterov, amsgrad):
    if amsgrad:
        raise ValueError(
            f"amsgrad={amsgrad!r}: SGD has no AMSGrad variant. Allowed: amsgrad=False "
            "(use an Adam optimizer for AMSGrad)."
        )
    _check_learning_rate(learning_rate)
    if isinstance(momentum, bool) or not isinstance(momentum, (int, float)):
        raise TypeError(f"momentum must be a number in [0, 1]. Received: {momentum!r}.")
    if not (0.0 <= momentum <= 1.0):
        raise ValueError(f"momentum must be in [0, 1]. Received: momentum={momentum!r}.")
    if not isinstance(nesterov, bool):
        raise TypeError(f"nesterov must be True or False. Received: {nesterov!r}.")


def _add_options(kwargs, gradients_clip_option, ema_option):
    """The tf-keras keyword arguments of both options, added to ``kwargs`` (in place)."""
    for arg, option, cls in (
        ("gradients_clip_option", gradients_clip_option, GradientsClipOption),
        ("ema_option", ema_option, EMAOption),
    ):
        mapped = _option_kwargs(option, cls, arg)
        clash = sorted(k for k in mapped if k in kwargs)
        if clash:
            raise ValueError(f"{clash} given both directly and in {arg}; give each once.")
        kwargs.update(mapped)


def _check_mesh(mesh):
    if mesh is not None and type(mesh).__name__ != "Mesh":
        raise TypeError(
            f"mesh must be a tf.experimental.dtensor.Mesh (see dtsgd_viz.make_mesh) or None. "
            f"Received: {type(mesh).__name__}."
        )


def _exact_update(exact_update) -> bool:
    """``exact_update``, checked: True or False."""
    if not isinstance(exact_update, bool):
        raise TypeError(f"exact_update must be True or False. Received: {exact_update!r}.")
    return exact_update
