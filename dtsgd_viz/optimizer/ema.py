"""The weights' moving average (``use_ema``) of ``dtsgd_viz.SGD`` on a DTensor mesh.

tf-keras 2.21 updates the averages only on its distribution-strategy path
(``Optimizer._distributed_apply_gradients_fn``). With a ``mesh`` it skips that path
and calls ``_BaseOptimizer._internal_apply_gradients``, which has no EMA code: the
averages keep the initial weights and ``finalize_variable_values`` (which
``model.fit`` calls at its end) writes those back, discarding the training.

This module does what the strategy path does, per variable, right after the
variable's own update: ``average <- ema_momentum * average + (1 - ema_momentum) * var``
(tf-keras' formula; tf-keras 2.21 has no warm-up), and every
``ema_overwrite_frequency`` steps ``var <- average``. Being part of the update, it
runs before the iteration count is incremented, before constraints and before the
hooks look, as on the strategy path.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from .. import dtensor as _dtensor


def _layout(variable):
    layout = getattr(variable, "layout", None)
    if layout is not None:
        return layout
    with tf.init_scope():
        return _dtensor.live_layout(variable)


def update_with_average(opt: Any, update: Any, gradient: Any, variable: Any) -> Any:
    """``update(gradient, variable)`` (tf-keras' ``_update_step``), then the average.

    The gradient is first relaid out like the variable. Without that, inside a
    DTensor ``tf.function``, a read of a variable after an update whose value comes
    from a gradient with another layout (a batch-sharded model's gradients) can
    return the value from *before* the update, which would average the wrong
    weights. The relayout changes no value; it also keeps tf-keras' own re-read of
    the momentum slot from seeing the old velocity, so with ``use_ema`` on a mesh
    even the default update follows the rule.
    """
    key = opt._var_key(variable)
    if getattr(variable, "_unique_id", None) is None or key not in opt._index_dict:
        return update(gradient, variable)  # tf-keras' own skip / error
    layout = _layout(variable)
    if layout is not None and not isinstance(gradient, tf.IndexedSlices):
        gradient = _dtensor.relayout(gradient, layout)
    update(gradient, variable)
    average = opt._model_variables_moving_average[opt._index_dict[key]]
    m = opt.ema_momentum
    new = m * average.read_value() + (1 - m) * variable.read_value()
    average.assign(new)
    if opt.ema_overwrite_frequency:
        # iterations still counts the previous steps here, as on tf-keras' path
        due = tf.equal((opt.iterations + 1) % opt.ema_overwrite_frequency, 0)

        def overwrite():
            variable.assign(new)
            return tf.constant(True)

        tf.cond(due, overwrite, lambda: tf.constant(False))
