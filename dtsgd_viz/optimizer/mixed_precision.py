"""Mixed precision (``mixed_bfloat16``, ``mixed_float16``) on a DTensor mesh.

Under a mixed policy tf-keras keeps each weight in float32 and wraps it in an
``AutoCastVariable``, which layers read in float16/bfloat16. A ``LayoutMap`` builds a
model with lazily created variables and then swaps each ``LazyInitVariable`` it finds
on the layers for a ``DVariable`` with its layout; a variable wrapped in an
``AutoCastVariable`` is not found, so it stays an uninitialised lazy variable off the
mesh. That is the one cause of three failures: an eager forward pass ("MatMul got a
regular tensor for input 1 (shape [0])"), the optimizer's slots ("Neither layout nor
DTensor initial value are provided", with tf-keras' own DTensor SGD too) and the same
error inside tf-keras' ``LossScaleOptimizerV3`` under ``model.fit``.

``layout_autocast_variables(model)`` finishes what the LayoutMap left: each wrapped
variable gets its DVariable, laid out by the same LayoutMap rule, and stays wrapped, so
layers still compute in the policy's dtype. Then both policies train on a mesh, under
``model.fit`` and in custom loops. The *dynamic* loss scale of ``mixed_float16`` needs
one more fix: tf-keras keeps its scale and counter as plain CPU:0 variables that every
device of the mesh updates in turn, so one overflow divides the scale by 2**8 on a 2x4
mesh, not by 2 (silently). ``dtsgd_viz.MeshLossScaleOptimizer(opt)`` replicates them on
the mesh; pass it to ``model.compile`` yourself (see ``loss_scale``):

>>> import dtsgd_viz, tf_keras
>>> from tensorflow.experimental import dtensor
>>> mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
>>> layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh)
>>> layout_map["d1.kernel"] = dtensor.Layout(["unsharded", "model"], mesh)
>>> tf_keras.mixed_precision.set_global_policy("mixed_bfloat16")
>>> try:
...     with layout_map.scope():
...         model = tf_keras.Sequential([tf_keras.layers.Dense(8, name="d1", input_shape=(4,))])
...     model = dtsgd_viz.layout_autocast_variables(model)  # before the model's first call
... finally:
...     tf_keras.mixed_precision.set_global_policy("float32")
>>> kernel = model.layers[0].kernel               # an AutoCastVariable, read as bfloat16
>>> kernel.true_dtype.name, dtsgd_viz.layout_of(kernel._variable).sharding_specs
('float32', ('unsharded', 'model'))

What a ``Recorder`` keeps: the float32 master weights, their float32 velocities and the
float32 gradients (the cast's gradient is cast back to the variable's dtype, and a loss
scale is divided out before the optimizer sees it), so every kind is in the dtype
``VariableRecord.dtype`` names and ``reference.check_recording`` applies as in float32.

Not supported: recording under a *dynamic* loss scale (``mixed_float16``'s default).
It skips updates whose gradients overflow while the iteration count moves on; the
inner optimizer's ``apply_gradients``, where hooks live, never runs for a skipped update,
so a Recorder would miss it and file parameters under the wrong step. ``dtsgd_viz.SGD``
refuses hooks there when it is built, saying what works: train with
``MeshLossScaleOptimizer`` and no recorder, or record under ``mixed_bfloat16`` (no loss
scale) or a fixed scale,
``tf_keras.mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=2**k)``.
"""

from __future__ import annotations

import sys

import tf_keras
from tf_keras.src.dtensor import layout_map as _layout_map, lazy_variable
from tf_keras.src.mixed_precision import autocast_variable, loss_scale_optimizer

from .. import dtensor as _dtensor


def _waiting(obj) -> bool:
    return (isinstance(obj, autocast_variable.AutoCastVariable)
            and isinstance(obj._variable, lazy_variable.LazyInitVariable))


def layout_autocast_variables(model):
    """Lay out the variables a mixed precision policy wrapped, which tf-keras' LayoutMap
    skips; returns ``model``.

    Call it right after building a functional or Sequential ``model`` under
    ``layout_map.scope()``, before its first call (a subclassed model maps its
    variables on its first call, which then fails). Each variable gets the layout its
    LayoutMap entry names (replicated when none matches), exactly as tf-keras lays out
    float32 variables. Calling it again, or on a float32 model, changes nothing.
    """
    from ..dtensor.keras3 import check
    check(model, "The model")
    layout_map = getattr(model, "_layout_map", None)
    if layout_map is None:
        raise ValueError(
            f"Model {model.name!r} was not built under a LayoutMap (tf_keras.dtensor."
            "experimental.LayoutMap(mesh).scope()); there is nothing to lay out.")
    if model._is_graph_network:
        # tf-keras names functional variables "<layer name>.<attribute path>"
        roots = [(layer, layer.name + ".") for layer in model.layers]
    elif model.built:
        roots = [(model, "")]
    else:
        raise ValueError(
            f"Model {model.name!r} is a subclassed model that has not been built: its "
            "variables do not exist yet, and its first call creates and uses them at once. "
            "Build it as a functional or Sequential model to train it under a mixed "
            "precision policy on a mesh.")
    done = set()
    for root, prefix in roots:
        for path, var in root._flatten(predicate=_waiting, with_path=True):
            # tf-keras skips the same bookkeeping lists (each variable also sits there)
            if id(var) in done or any(a in path for a in _layout_map._KERAS_ATTRIBUTES_TO_SKIP):
                continue
            object_path = prefix + ".".join(str(p) for p in path)
            var._variable = _layout_map._create_dvariable(layout_map, object_path, var._variable)
            done.add(id(var))
    return model


def unwrap(variables) -> tuple:
    """The float32 variables under any ``AutoCastVariable``s: what hooks see, so a
    recording holds the master weights in their own dtype whatever context reads them."""
    return tuple(v._variable if isinstance(v, autocast_variable.AutoCastVariable) else v
                 for v in variables)


def check_variables(var_list) -> None:
    """Refuse, naming the fix, variables a mixed policy wrapped that have no layout
    (tf-keras would fail creating their slots: "Neither layout nor DTensor initial value
    are provided")."""
    missing = [v.name for v in var_list
               if isinstance(v, autocast_variable.AutoCastVariable)
               and not _dtensor.is_dvariable(v._variable)]
    if missing:
        policy = tf_keras.mixed_precision.global_policy().name
        raise ValueError(
            f"dtsgd_viz.SGD on a mesh received {len(missing)} variable(s) wrapped by a mixed "
            f"precision policy (global policy: {policy!r}) with no DTensor layout: "
            f"{missing[:4]}{' ...' if len(missing) > 4 else ''}. tf-keras' LayoutMap does not "
            "lay out the variables a mixed policy wraps in AutoCastVariables. Call "
            "dtsgd_viz.layout_autocast_variables(model) right after building the model "
            "under the LayoutMap (before its first call), or train with the 'float32' policy.")


def wrapping_loss_scale(optimizer):
    """The tf-keras ``LossScaleOptimizer`` building ``optimizer`` right now, or None.

    It calls ``build`` on the optimizer it wraps from its own ``build`` and holds no
    other trace of itself there, so the caller's frames are asked.
    """
    frame = sys._getframe(1)
    for _ in range(4):
        if frame is None:
            return None
        caller = frame.f_locals.get("self")
        if (isinstance(caller, loss_scale_optimizer.BaseLossScaleOptimizer)
                and getattr(caller, "inner_optimizer", None) is optimizer):
            return caller
        frame = frame.f_back
    return None


def dynamic_loss_scale_error(hooks) -> ValueError:
    policy = tf_keras.mixed_precision.global_policy().name
    hooks = ", ".join(type(h).__name__ for h in hooks)
    return ValueError(
        f"dtsgd_viz.SGD with hooks ({hooks}) is wrapped in a dynamic loss scale (a "
        "LossScaleOptimizer with dynamic=True; model.compile adds tf-keras' own under the "
        f"{policy!r} policy). What fails: a dynamic loss scale skips every update whose "
        "gradients overflow while the iteration count moves on, and for a skipped update "
        "the inner optimizer's apply_gradients, where the hooks run, never runs, so a "
        "Recorder would miss it and file later steps under the wrong iteration. What works "
        "instead: train with the dynamic scale and no hooks, wrapped in "
        "dtsgd_viz.MeshLossScaleOptimizer(opt) passed to model.compile (tf-keras' own "
        "keeps a wrong scale on a mesh); or record with the 'mixed_bfloat16' policy (no "
        "loss scale) or a fixed loss scale: model.compile(optimizer=tf_keras."
        "mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=2**k)).")
