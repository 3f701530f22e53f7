"""The apply variants compared in safety.py / repro_plain_tfkeras.py (plain tf-keras only,
besides dtsgd_viz's own optimizer where named)."""

import tensorflow as tf
from tensorflow.experimental import dtensor


def plain_apply(opt, grads, variables):
    opt.apply_gradients(zip(grads, variables))


def relayout_apply(opt, grads, variables):
    """Gradients relaid to their variables' layouts, and those fed to the update."""
    grads = [dtensor.relayout(g, v.layout) for g, v in zip(grads, variables)]
    opt.apply_gradients(zip(grads, variables))


_sinks = {}


def side_relayout_apply(opt, grads, variables):
    """The recorder's pattern without the recorder: the update gets the gradients as they
    are, and a copy relaid to the variable's layout goes to a side consumer (here: a
    buffer variable per gradient, laid out like the variable; no collective)."""
    key = id(opt)
    if key not in _sinks:
        with tf.init_scope():
            _sinks[key] = [
                dtensor.DVariable(
                    dtensor.call_with_layout(tf.zeros, v.layout, shape=v.shape, dtype=v.dtype), trainable=False
                )
                for v in variables
            ]
    pinned = [dtensor.relayout(g, v.layout) for g, v in zip(grads, variables)]
    opt.apply_gradients(zip(grads, variables))
    for s, p in zip(_sinks[key], pinned):
        s.assign(p)


def control_pin_apply(opt, grads, variables):
    """The relayouts computed but consumed by nothing: the update only waits for them
    (a control dependency), so no buffer and no extra op runs on the values."""
    pinned = [dtensor.relayout(g, v.layout) for g, v in zip(grads, variables)]
    with tf.control_dependencies(pinned):
        opt.apply_gradients(zip(grads, variables))
