"""Reading a tf-keras model and its optimizer: its trainable variables, their names, the
optimizer's momentum slots. Duck-typed: importing this module imports no TensorFlow."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["is_tensorflow_object", "optimizer_parts", "slot_of", "unique_names", "variable_name"]


def is_tensorflow_object(obj: object) -> bool:
    """A live TensorFlow/tf-keras object (checked without importing TensorFlow)."""
    if "tensorflow" not in sys.modules:
        return False
    return any(
        (getattr(c, "__module__", "") or "").startswith(("tensorflow", "tf_keras", "keras")) for c in type(obj).__mro__
    )


def variable_name(var: Any) -> str:
    name = getattr(var, "name", None) or "variable"
    return name[:-2] if name.endswith(":0") else name


def unique_names(variables: Iterable[Any]) -> list[str]:
    names, seen = [], {}
    for v in variables:
        base = variable_name(v)
        seen[base] = seen.get(base, 0) + 1
        names.append(base if seen[base] == 1 else f"{base}#{seen[base]}")
    return names


def optimizer_parts(obj: Any) -> tuple[list[Any], Any, str, list[str]]:
    """(variables, optimizer or None, header, footer) of a model, optimizer or variables.

    A tf-keras optimizer keeps no reference to the parameters it updates, only their
    slots: given alone, its slots are listed (pass the compiled model to compare)."""
    obj = getattr(obj, "inner_optimizer", obj)  # a LossScaleOptimizer wraps the real one
    if hasattr(obj, "apply_gradients") and hasattr(obj, "learning_rate"):
        slots = list(getattr(obj, "momentums", None) or [])
        if not slots:
            raise ValueError(
                f"The optimizer {type(obj).__name__} has no momentum slots yet: build "
                "it (optimizer.build(variables)) or run one step first."
            )
        return (
            slots,
            None,
            f"optimizer {type(obj).__name__}{_hyper(obj)} slots",
            [
                "slots only: a tf-keras optimizer keeps no reference to its parameters; pass the "
                "model compiled with it to compare slot and parameter layouts"
            ],
        )
    if hasattr(obj, "trainable_variables"):
        opt = getattr(obj, "optimizer", None)
        opt = getattr(opt, "inner_optimizer", opt)  # a LossScaleOptimizer wraps the real one
        return (
            list(obj.trainable_variables),
            opt,
            f"model {obj.name!r}" + (f", optimizer {type(opt).__name__}{_hyper(opt)}" if opt is not None else ""),
            [],
        )
    if isinstance(obj, (list, tuple)) and obj and all(is_tensorflow_object(v) for v in obj):
        return list(obj), None, "variables", []
    raise TypeError(
        f"model_table takes a tf-keras model, an optimizer, a list of variables or a "
        f"Recording. Received: {type(obj).__name__}."
    )


def _hyper(opt) -> str:
    if not hasattr(opt, "momentum"):
        return ""
    return f" (momentum={float(opt.momentum):g}, nesterov={bool(getattr(opt, 'nesterov', False))})"


def slot_of(opt: Any, var: Any) -> Any:
    """The momentum slot of ``var`` (None if the optimizer has none for it)."""
    if opt is None:
        return None
    try:
        if hasattr(opt, "velocity"):
            return opt.velocity(var)
        return opt.momentums[opt._index_dict[opt._var_key(var)]]
    except (AttributeError, KeyError, IndexError):
        return None
