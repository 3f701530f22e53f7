"""A preflight of a tf-keras model on a DTensor mesh: the known recipe problems (the
table "DTensor recipes" in docs/design.md), each named with its layer and its fix,
before the first update meets them as a raw MLIR error::

    print(dtsgd_viz.preflight(model))     # "no known DTensor trap in model 'm'" or the list
    model.fit(..., callbacks=[rec.keras_callback()])   # runs it first; raises on a trap

What it checks, on the model's layers (nested models included) and their variables'
layouts:

- ``LayerNormalization`` whose computation is fused (tf-keras uses ``FusedBatchNormV3``
  when ``epsilon >= 1.001e-5`` and the normalised axis is the last one): DTensor has no
  layout propagation for that op. Fix: ``LayerNormalization(epsilon=1e-6)``.
- ``Embedding`` whose table is sharded by rows (dim 0): DTensor's ``ResourceGather``
  refuses it. Fix: ``dtsgd_viz.layers.TableEmbedding``, or shard the table by columns.
- ``Conv1D/2D/3D`` (other than ``dtsgd_viz.layers.ShardedConv2D``) with a sharded kernel
  or bias: DTensor's convolution wants a replicated filter. Fix: ``ShardedConv2D``.
- mixed precision: variables a policy wrapped in ``AutoCastVariable`` are left off the
  mesh by tf-keras' ``LayoutMap``. Fix: ``dtsgd_viz.layout_autocast_variables(model)``.

A model with no variable on a DTensor mesh has nothing to check. What it cannot know in
advance (an op of a custom layer with no layout propagation) still surfaces as DTensor's
error when the step is traced; ``explain_error(e)`` says what such an error means.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from .values import is_dtensor, layout_of

__all__ = ["DTensorTrapError", "Preflight", "Trap", "check_model", "explain_error", "preflight"]

FUSED_EPSILON = 1.001e-5  # tf-keras' LayerNormalization fuses from this epsilon up


@dataclasses.dataclass(frozen=True)
class Trap:
    """One known DTensor recipe problem: the layer, what fails, and the fix."""

    layer: str
    problem: str
    fix: str

    def __str__(self) -> str:
        return f"{self.layer}: {self.problem}. Fix: {self.fix}."


@dataclasses.dataclass(frozen=True)
class Preflight:
    """The traps found in one model (``traps``, empty when none); ``str()`` lists them."""

    model: str
    traps: tuple[Trap, ...]

    def __bool__(self) -> bool:
        return bool(self.traps)

    def __len__(self) -> int:
        return len(self.traps)

    def __iter__(self) -> Iterator[Trap]:
        return iter(self.traps)

    def __str__(self) -> str:
        if not self.traps:
            return f"no known DTensor trap in model {self.model!r}"
        lines = [f"{len(self.traps)} known DTensor trap(s) in model {self.model!r}:"]
        return "\n".join(lines + [f"- {t}" for t in self.traps])


class DTensorTrapError(ValueError):
    """A model that meets a known DTensor recipe problem (``preflight`` names them)."""


def _layers(model):
    """Every layer of ``model``, nested models and layers included, each once."""
    flatten = getattr(model, "_flatten_layers", None)  # tf-keras' walk over sub-layers
    if flatten is not None:
        return list(flatten(include_self=False, recursive=True))
    return list(getattr(model, "layers", []) or [])


def _sharded(var) -> bool:
    return is_dtensor(var) and any(s != "unsharded" for s in layout_of(var).sharding_specs)


def _inner(var):
    """The variable an ``AutoCastVariable`` wraps (or ``var``)."""
    return getattr(var, "_variable", var)


def _is_autocast(var) -> bool:
    return type(var).__name__ == "AutoCastVariable"


def _layer_norm_trap(layer) -> Trap | None:
    import tf_keras

    if not isinstance(layer, tf_keras.layers.LayerNormalization):
        return None
    fused = getattr(layer, "_fused", None)  # set when the layer is built
    if fused is None:
        fused = layer.epsilon >= FUSED_EPSILON
    if not fused:
        return None
    return Trap(
        layer.name,
        f"LayerNormalization with epsilon={layer.epsilon:g} runs as "
        "FusedBatchNormV3, which DTensor cannot lay out ('op does not implement layout "
        "propagation')",
        "LayerNormalization(epsilon=1e-6) (below 1.001e-5 it is not fused)",
    )


def _embedding_trap(layer) -> Trap | None:
    import tf_keras

    from ..models.layers import TableEmbedding

    if not isinstance(layer, tf_keras.layers.Embedding) or isinstance(layer, TableEmbedding):
        return None
    table = getattr(layer, "embeddings", None)
    if table is None or not is_dtensor(_inner(table)):
        return None
    rows = layout_of(_inner(table)).sharding_specs[0]
    if rows == "unsharded":
        return None
    return Trap(
        layer.name,
        f"its table is sharded by rows (over {rows!r}), and DTensor's ResourceGather refuses a sharded dim 0",
        "dtsgd_viz.layers.TableEmbedding (the "
        "same layer, gathering from the table read as a tensor), or shard the table by "
        "columns",
    )


def _conv_trap(layer) -> Trap | None:
    import tf_keras

    from ..models.layers import ShardedConv2D

    conv = (tf_keras.layers.Conv1D, tf_keras.layers.Conv2D, tf_keras.layers.Conv3D)
    if not isinstance(layer, conv) or isinstance(layer, ShardedConv2D):
        return None
    sharded = [
        w for w in ("kernel", "bias") if getattr(layer, w, None) is not None and _sharded(_inner(getattr(layer, w)))
    ]
    if not sharded:
        return None
    return Trap(
        layer.name,
        f"a convolution with its {' and '.join(sharded)} sharded: DTensor "
        "wants a replicated filter ('Filter for convolution must have fully replicated "
        "layout')",
        "dtsgd_viz.layers.ShardedConv2D (keeps the variables sharded and relays them out for the convolution)",
    )


def preflight(model: Any) -> Preflight:
    """The known DTensor traps in ``model`` (a built tf-keras model), before it trains."""
    if not hasattr(model, "layers") or not hasattr(model, "weights"):
        raise TypeError(f"preflight takes a built tf-keras model. Received: {type(model).__name__}.")
    weights = list(model.weights)
    if not any(is_dtensor(_inner(w)) for w in weights):
        return Preflight(model.name, ())
    traps = []
    for layer in _layers(model):
        for check in (_layer_norm_trap, _embedding_trap, _conv_trap):
            trap = check(layer)
            if trap is not None:
                traps.append(trap)
    off_mesh = [w.name for w in weights if _is_autocast(w) and not is_dtensor(_inner(w))]
    if off_mesh:
        more = f" and {len(off_mesh) - 3} more" if len(off_mesh) > 3 else ""
        traps.append(
            Trap(
                model.name,
                f"{len(off_mesh)} variable(s) a mixed precision policy "
                f"wrapped are not on the mesh ({', '.join(off_mesh[:3])}{more}): "
                "tf-keras' LayoutMap skips AutoCastVariable",
                "dtsgd_viz.layout_autocast_variables(model) right after building it",
            )
        )
    return Preflight(model.name, tuple(traps))


def check_model(model: Any) -> None:
    """Raise ``DTensorTrapError`` naming every known trap of ``model`` (none: returns)."""
    found = preflight(model)
    if found:
        raise DTensorTrapError(
            f"{found}\n(dtsgd_viz.preflight(model) lists them; the DTensor recipes are in dtsgd_viz's docs/design.md.)"
        )


_KNOWN_ERRORS = (
    (
        "does not implement layout propagation",
        "a layer runs an op DTensor cannot lay out. LayerNormalization with its default epsilon "
        "is the common case (fix: epsilon=1e-6); for another op, keep that layer's inputs and "
        "weights replicated (dtensor.relayout to a replicated layout before the op)",
    ),
    (
        "ResourceGatherOp",
        "an Embedding table sharded by rows: use dtsgd_viz.layers.TableEmbedding, or shard the table by columns",
    ),
    (
        "Filter for convolution must have fully replicated layout",
        "a convolution with a sharded kernel: use dtsgd_viz.layers.ShardedConv2D",
    ),
    (
        "Keras is expected to use tf.random.Generator",
        "a layer with random state (Dropout, MultiHeadAttention's dropout) under a LayoutMap: "
        "call tf_keras.backend.experimental.enable_tf_random_generator() before building",
    ),
)


def explain_error(error: BaseException | str) -> str | None:
    """What a DTensor error from tracing a step means and its fix, for the errors the
    recipes cover; None for an error it does not know."""
    text = str(error)
    for needle, meaning in _KNOWN_ERRORS:
        if needle in text:
            return meaning
    return None
