"""A dynamic loss scale (``mixed_float16``) that is right on a DTensor mesh.

tf-keras' ``LossScaleOptimizer`` (``LossScaleOptimizerV3`` for the new optimizers) keeps
its dynamic state in two plain ``tf.Variable``s, the current loss scale and the count of
good steps (``_DynamicLossScaleState._add_weight``). On a mesh they are single-device
variables on CPU:0. DTensor accepts them in a train step, but every device of the mesh
then runs the scale update on the one shared variable, one after the other: on a 2x4 mesh
the counter moves by 8 per good step, one overflow divides the scale by 2**8 instead of 2,
and the scale grows about 8 times too early. Nothing raises, and skipping itself still
works, so training goes on with a wrong scale.

``MeshLossScaleOptimizer`` runs tf-keras' own constructor with those two variables made
replicated ``DVariable``s on the inner optimizer's mesh; everything else is tf-keras,
unchanged (checkpoints keep tf-keras' keys). It also counts the skipped updates:

>>> import dtsgd_viz
>>> mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
>>> opt = dtsgd_viz.MeshLossScaleOptimizer(dtsgd_viz.SGD(0.01, mesh=mesh))
>>> float(opt.loss_scale), int(opt.skipped_steps)
(32768.0, 0)
>>> dtsgd_viz.layout_of(opt.dynamic_counter).sharding_specs   # one copy per device
()

Pass it to ``model.compile`` yourself: under ``mixed_float16``, ``compile`` wraps a bare
optimizer in the plain tf-keras class, and keeps one that is already a loss scale
optimizer. Without a mesh (an inner optimizer with no ``mesh=``) it is the plain class.

Recording under it: the inner optimizer's ``apply_gradients`` runs in the branch of a
``tf.cond`` that a skipped update does not take (eagerly it is not called at all), so the
hooks of ``dtsgd_viz.SGD`` never see a skipped update there. ``MeshLossScaleOptimizer``
tells them instead: before tf-keras counts the update, a branch of its own, taken only by
a skipped update, calls each hook's ``skipped_update(optimizer, iteration, loss_scale)``.
A ``Recorder`` then records every applied update under its iteration and lists the
skipped ones in ``recording.skipped_steps``, with the loss scale each used in
``recording.skipped_loss_scale``. The scale and its counter are checkpointed with the
optimizer (tf-keras' keys), so a run restored from a checkpoint skips the same updates.
Any other dynamic loss scale skips updates unseen, so ``dtsgd_viz.SGD`` refuses hooks
under it, whichever of the two is built first.
"""

from __future__ import annotations

from typing import Any, cast

import tensorflow as tf
import tf_keras
from tf_keras.src.mixed_precision import loss_scale_optimizer as _lso

from ..dtensor.values import replicated_variables, unpack
from ..recorder.capture import cond


def _mesh_of(optimizer):
    """The mesh a tf-keras DTensor optimizer updates on (its ``mesh=``), or None."""
    return getattr(optimizer, "_mesh", None)


@tf_keras.saving.register_keras_serializable(package="dtsgd_viz")
class MeshLossScaleOptimizer(_lso.LossScaleOptimizerV3):
    """``tf_keras.mixed_precision.LossScaleOptimizer`` whose loss scale and good-steps
    counter are replicated on the inner optimizer's mesh. Same arguments, same rule:

    * an update whose gradients are not all finite is skipped: the inner optimizer does
      not apply it, ``iterations`` still moves by 1, the scale is halved (never below 1)
      and the counter goes back to 0;
    * after ``dynamic_growth_steps`` finite updates in a row the scale doubles and the
      counter goes back to 0.

    ``skipped_steps`` (a replicated int64 variable, not checkpointed) counts the skipped
    updates since construction, so ``iterations - skipped_steps`` are the applied ones
    when both started at 0. The hooks of an inner ``dtsgd_viz.SGD`` are told of each
    skipped update (see the module docstring).
    """

    @tf.__internal__.tracking.no_automatic_dependency_tracking
    def __init__(
        self,
        inner_optimizer: Any,
        dynamic: bool = True,
        initial_scale: float | None = None,
        dynamic_growth_steps: int | None = None,
    ):
        # the only variables tf-keras creates here are the loss scale's two
        with replicated_variables(_mesh_of(inner_optimizer)):
            super().__init__(
                inner_optimizer, dynamic=dynamic, initial_scale=initial_scale, dynamic_growth_steps=dynamic_growth_steps
            )
            # untracked (see the decorator): checkpoints keep exactly tf-keras' format
            # (tf.Variable takes a Python number; its stubs say Tensor only)
            self._skipped_steps = tf.Variable(cast(Any, 0), dtype=tf.int64, trainable=False, name="skipped_steps")

    @property
    def skipped_steps(self) -> Any:
        """Updates skipped because a gradient was inf or NaN (always 0 for a fixed scale)."""
        return self._skipped_steps

    def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        grads_and_vars = list(grads_and_vars)
        if self.dynamic:
            # the very test tf-keras' dynamic scale makes (None gradients are ignored)
            finite = _lso._is_all_finite([g for g, _ in grads_and_vars])
            self._skipped_steps.assign_add(tf.cast(tf.logical_not(finite), tf.int64))
            self._report_skip(grads_and_vars, finite)
        return super().apply_gradients(grads_and_vars, *args, **kwargs)

    def _report_skip(self, grads_and_vars, finite):
        """Tell the inner ``dtsgd_viz.SGD``'s hooks when this update is skipped, before
        tf-keras counts it and halves the scale: eagerly, or in a ``tf.cond`` branch of
        its own that only a skipped update takes (a step without hooks traces nothing)."""
        inner = self._optimizer
        if not getattr(inner, "hooks", ()) or not callable(getattr(inner, "report_skipped_update", None)):
            return
        with tf.init_scope():  # as tf-keras does next: the hooks learn the variables first
            self.build([v for _, v in grads_and_vars])
        scale = self.loss_scale  # the scale this update used

        def skipped():
            inner.report_skipped_update(scale)
            return tf.constant(True)

        if tf.executing_eagerly():
            if not bool(unpack(finite)[0]):
                skipped()
            return
        cond(finite, lambda: tf.constant(False), skipped)
