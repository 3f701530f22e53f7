"""Telling Keras 3 objects apart from tf-keras (Keras 2) ones, without importing either.

``dtsgd_viz.SGD`` is the tf-keras DTensor optimizer; a Keras 3 variable, model, layer,
schedule or optimizer handed to it fails deep inside TensorFlow (``'_unique_id'``, a
tensor-conversion error). This module turns that into one clear message.
"""

from __future__ import annotations

from collections.abc import Iterable

FIX = (
    "dtsgd_viz.SGD is a tf-keras (Keras 2) optimizer: build the model, its variables "
    "and schedules with tf-keras. One-line fix: `import tf_keras as keras` in place of "
    "`import keras` (or `from tensorflow import keras` with TF_USE_LEGACY_KERAS=1 set "
    "before TensorFlow is imported)."
)


def is_keras3(obj: object) -> bool:
    """True for an object of a Keras 3 class (module ``keras`` / ``keras.src``), never for
    tf-keras (``tf_keras``) or TensorFlow objects."""
    for cls in type(obj).__mro__:
        module = getattr(cls, "__module__", "") or ""
        if module == "keras" or module.startswith(("keras.", "keras_core")):
            return True
    return False


def check(obj: object, what: str) -> None:
    """Raise ``TypeError`` naming ``what`` when ``obj`` is a Keras 3 object."""
    if is_keras3(obj):
        cls = type(obj)
        raise TypeError(f"{what} is a Keras 3 object ({cls.__module__}.{cls.__qualname__}). {FIX}")


def check_all(objs: Iterable[object], what: str) -> None:
    for obj in objs:
        check(obj, what)
