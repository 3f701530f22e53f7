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

Under a *dynamic* loss scale (``mixed_float16``'s default) updates whose gradients
overflow are skipped while the iteration count moves on, and the inner optimizer's
``apply_gradients``, where hooks live, never runs for them. ``MeshLossScaleOptimizer``
tells the hooks of each (``loss_scale``): a ``Recorder`` records every applied update
and lists the skipped ones, with their loss scale, in ``recording.skipped_steps`` and
``recording.skipped_loss_scale``. Any other dynamic scale (tf-keras' own, which
``model.compile`` adds to a bare optimizer) would leave a skipped update unseen, so
``dtsgd_viz.SGD`` refuses hooks under it, when it is wrapped or when a hook is added,
whichever is built first, saying what works: ``MeshLossScaleOptimizer`` passed to
``model.compile``, ``mixed_bfloat16`` (no loss scale) or a fixed scale,
``tf_keras.mixed_precision.LossScaleOptimizer(opt, dynamic=False, initial_scale=2**k)``.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any

import tf_keras
from tf_keras.src.dtensor import layout_map as _layout_map
from tf_keras.src.dtensor import lazy_variable
from tf_keras.src.mixed_precision import autocast_variable, loss_scale_optimizer

from .. import dtensor as _dtensor


def _waiting(obj) -> bool:
    return isinstance(obj, autocast_variable.AutoCastVariable) and isinstance(
        obj._variable, lazy_variable.LazyInitVariable
    )


def layout_autocast_variables(model: Any) -> Any:
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
            "experimental.LayoutMap(mesh).scope()); there is nothing to lay out."
        )
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
            "precision policy on a mesh."
        )
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


def unwrap(variables: Any) -> tuple:
    """The float32 variables under any ``AutoCastVariable``s: what hooks see, so a
    recording holds the master weights in their own dtype whatever context reads them."""
    return tuple(v._variable if isinstance(v, autocast_variable.AutoCastVariable) else v for v in variables)


def check_variables(var_list: Any) -> None:
    """Refuse, naming the fix, variables a mixed policy wrapped that have no layout
    (tf-keras would fail creating their slots: "Neither layout nor DTensor initial value
    are provided")."""
    missing = [
        v.name
        for v in var_list
        if isinstance(v, autocast_variable.AutoCastVariable) and not _dtensor.is_dvariable(v._variable)
    ]
    if missing:
        policy = tf_keras.mixed_precision.global_policy().name
        raise ValueError(
            f"dtsgd_viz.SGD on a mesh received {len(missing)} variable(s) wrapped by a mixed "
            f"precision policy (global policy: {policy!r}) with no DTensor layout: "
            f"{missing[:4]}{' ...' if len(missing) > 4 else ''}. tf-keras' LayoutMap does not "
            "lay out the variables a mixed policy wraps in AutoCastVariables. Call "
            "dtsgd_viz.layout_autocast_variables(model) right after building the model "
            "under the LayoutMap (before its first call), or train with the 'float32' policy."
        )


@dataclasses.dataclass(frozen=True)
class LossScaleWrapping:
    """The loss scale optimizer wrapping a ``dtsgd_viz.SGD``, as the SGD saw it being
    made: its class name, whether its scale is ``dynamic`` (it skips updates) and
    whether it ``reports_skips`` to the SGD's hooks (``MeshLossScaleOptimizer``)."""

    name: str
    dynamic: bool
    reports_skips: bool


def wrapping(optimizer: Any) -> LossScaleWrapping:
    """The loss scale optimizer whose constructor is wrapping ``optimizer`` right now.

    tf-keras' ``LossScaleOptimizer`` marks the optimizer it wraps
    (``_is_wrapped_by_loss_scale_optimizer = True``) in its constructor, before it makes
    its loss scale, and holds no other trace of itself there, whichever of the two was
    built first; so ``SGD`` asks the constructor's frame, which holds the wrapper and its
    ``dynamic`` argument. Not found (a wrapper marking it some other way): taken for a
    dynamic scale that does not report its skips.
    """
    from .loss_scale import MeshLossScaleOptimizer

    frame = sys._getframe(1)
    for _ in range(8):
        if frame is None:
            break
        caller = frame.f_locals.get("self")
        if (
            isinstance(caller, loss_scale_optimizer.BaseLossScaleOptimizer)
            and vars(caller).get("_optimizer") is optimizer
        ):
            return LossScaleWrapping(
                type(caller).__name__,
                bool(frame.f_locals.get("dynamic", True)),
                isinstance(caller, MeshLossScaleOptimizer),
            )
        frame = frame.f_back
    return LossScaleWrapping("a loss scale optimizer", True, False)


def loss_scale_hooks_error(wrapper: LossScaleWrapping | None, hooks: Any) -> ValueError | None:
    """Why ``hooks`` cannot observe an SGD that ``wrapper`` wraps, or None when they can:
    a fixed scale skips nothing; ``MeshLossScaleOptimizer`` tells the hooks of every
    update it skips (``skipped_update``); any other dynamic scale skips updates unseen."""
    if wrapper is None or not wrapper.dynamic or not hooks:
        return None
    names = ", ".join(type(h).__name__ for h in hooks)
    if wrapper.reports_skips:
        deaf = [type(h).__name__ for h in hooks if not callable(getattr(h, "skipped_update", None))]
        if not deaf:
            return None
        return ValueError(
            f"dtsgd_viz.SGD is wrapped in a {wrapper.name} with a dynamic loss scale, which "
            "skips the updates whose gradients overflow and tells the SGD's hooks of each "
            "through their skipped_update(optimizer, iteration, loss_scale) method; hook(s) "
            f"{', '.join(deaf)} have none, so they would take a skipped update for a lost "
            "one. Give them a skipped_update method, or use a dtsgd_viz.Recorder (which "
            "lists them in recording.skipped_steps)."
        )
    return ValueError(
        f"dtsgd_viz.SGD with hooks ({names}) is wrapped in {wrapper.name}, a dynamic loss "
        "scale that is not dtsgd_viz's (model.compile adds tf-keras' own LossScaleOptimizer "
        "under the 'mixed_float16' policy). What fails: it skips every update whose gradients "
        "overflow while the iteration count moves on, and for a skipped update the inner "
        "optimizer's apply_gradients, where the hooks run, never runs and nothing tells the "
        "hooks, so a Recorder could not tell a skipped update from a lost one (and tf-keras' "
        "own keeps a wrong scale on a mesh). What works instead: wrap the SGD in "
        "dtsgd_viz.MeshLossScaleOptimizer(opt) and pass that to model.compile: it skips the "
        "same updates with a scale that is right on a mesh and tells the hooks of each "
        "(recording.skipped_steps); or record with the 'mixed_bfloat16' policy (no loss "
        "scale) or a fixed loss scale: model.compile(optimizer=tf_keras.mixed_precision."
        "LossScaleOptimizer(opt, dynamic=False, initial_scale=2**k))."
    )
