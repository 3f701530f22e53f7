"""What a tf-keras model's layers do to their gradients that layouts cannot show (for
``communication_plan``). Duck-typed: importing this module imports no TensorFlow."""

from __future__ import annotations

import math
import sys
from typing import Any

from .model import optimizer_parts, unique_names

__all__ = ["layer_caveats"]


def layer_caveats(obj: Any, batch_dims: tuple[str, ...]) -> dict[str, str]:
    """``{variable name: why}`` for the sharded variables of ``obj``'s layers whose
    gradient DTensor computes whole, then slices: ``ShardedConv2D`` weights (relaid out to
    replicated before the convolution) and embedding tables cut by rows (a sparse
    gradient, made dense; a table cut by columns only is summed as its layout says).
    Names as ``memory_plan`` gives them; ``{}`` for an object without layers.

    ``batch_dims``: the mesh dims (of size > 1) the batch is split over."""
    layers = getattr(obj, "submodules", None)
    if "tf_keras" not in sys.modules or not layers or not hasattr(obj, "trainable_variables"):
        return {}
    import tf_keras

    from ..models.layers import ShardedConv2D
    from .values import layout_of

    variables = optimizer_parts(obj)[0]
    names = {id(v): n for v, n in zip(variables, unique_names(variables))}
    along = "x".join(batch_dims)
    out = {}
    for layer in layers:
        if isinstance(layer, ShardedConv2D):
            weights = [w for w in (layer.kernel, getattr(layer, "bias", None)) if w is not None]
            how = (
                "a ShardedConv2D weight: the layer relays it out to replicated before "
                "the convolution, so DTensor gathers it, computes its gradient whole"
            )
        elif isinstance(layer, tf_keras.layers.Embedding):
            weights = [layer.embeddings]
            how = (
                "an embedding table: its gradient is sparse, dtsgd_viz.SGD makes it "
                "dense on a mesh, and DTensor computes it whole"
            )
        else:
            continue
        for w in weights:
            w = getattr(w, "_variable", w)  # an AutoCastVariable wraps the DVariable
            layout = layout_of(w)
            if id(w) not in names or layout.is_fully_replicated:
                continue
            if how.startswith("an embedding") and layout.sharding_specs[0] == "unsharded":
                continue  # cut by column only: each device's dense gradient is its own columns'
            whole = math.prod(w.shape) * w.dtype.size
            out[names[id(w)]] = (
                how
                + (f", sums all {whole} B over {along}" if along else "")
                + (" and slices it to the variable's layout")
            )
    return out
