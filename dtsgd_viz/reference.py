"""The three SGD update rules exactly as tf-keras 2.21 computes them, in numpy.

With gradient ``g``, learning rate ``lr``, momentum ``mu``, parameter ``p`` and
velocity ``v`` (the momentum slot, zero before the first update), tf-keras'
``SGD.update_step`` does, in float32 and in this order of operations::

    v <- (-g) * lr + v * mu                 # every rule: the slot is always updated
    plain    (mu = 0):  p <- p + v          # so v = -lr * g: ordinary gradient descent
    momentum:           p <- p + v          # heavy ball (Polyak)
    nesterov:           p <- p + ((-g) * lr + v * mu)   # with the *new* v

Nesterov is the "look-ahead-free" reformulation of Sutskever et al. (2013) that
Keras and optax use (optax's ``sgd(nesterov=True)`` docstring gives both forms):
the parameter moves by the momentum of the new velocity plus the current
gradient step, which equals classical Nesterov evaluated at the look-ahead point
``p + mu * v`` after a change of variables. Note the slot exists even when
``mu = 0``: plain SGD keeps ``v = -lr * g`` in it (and a NaN there stays NaN,
because ``NaN * 0`` is NaN).

    >>> import numpy as np
    >>> p, v = sgd_step(np.float32(1.0), np.float32(1.0), np.float32(0.0), 0.1, 0.9, False)
    >>> float(p), float(v)
    (0.8999999761581421, -0.10000000149011612)
"""

from __future__ import annotations

import numpy as np


def sgd_step(param, grad, velocity, learning_rate, momentum=0.0, nesterov=False):
    """One update: returns ``(new_param, new_velocity)``, computed in the dtype of
    ``param`` with tf-keras' order of operations."""
    param = np.asarray(param)
    dt = param.dtype
    lr = dt.type(learning_rate)
    mu = dt.type(momentum)
    g = np.asarray(grad, dt)
    v = np.asarray(velocity, dt)
    step = (-g) * lr
    v_new = step + v * mu
    if nesterov:
        p_new = param + (step + v_new * mu)
    else:
        p_new = param + v_new
    return p_new.astype(dt), v_new.astype(dt)


def replay(initial, grads, learning_rates, momentum=0.0, nesterov=False):
    """Apply recorded gradients ``grads[t]`` from ``initial``; returns the
    parameters and velocities after each step, shapes ``(n_steps, *shape)``."""
    p = np.asarray(initial)
    v = np.zeros_like(p)
    grads = np.asarray(grads)
    lrs = np.broadcast_to(np.asarray(learning_rates, np.float64), (len(grads),))
    ps, vs = [], []
    for g, lr in zip(grads, lrs):
        p, v = sgd_step(p, g, v, lr, momentum, nesterov)
        ps.append(p)
        vs.append(v)
    shape = (0, *p.shape)
    return (np.stack(ps) if ps else np.zeros(shape, p.dtype),
            np.stack(vs) if vs else np.zeros(shape, p.dtype))


def run(grad_fn, initial, steps, learning_rate, momentum=0.0, nesterov=False):
    """Optimize from ``initial`` with gradients from ``grad_fn(param)``; returns the
    parameters ``(steps + 1, *shape)`` including the start (used for parameter sweeps)."""
    p = np.asarray(initial)
    v = np.zeros_like(p)
    out = [p]
    for _ in range(steps):
        p, v = sgd_step(p, grad_fn(p), v, learning_rate, momentum, nesterov)
        out.append(p)
    return np.stack(out)


def check_recording(recording, rtol=1e-5, atol=1e-6):
    """Steps where the recorded update does not follow the documented rule.

    For each variable, recomputes every update from the recorded previous parameter
    and velocity, the recorded gradient and the recorded learning rate with
    ``sgd_step``, and compares with the recorded result. Returns
    ``{name: array of steps}`` (empty arrays when everything agrees). Needs all three
    kinds, every step recorded (``every=1``) and no dropped steps.

    This is how one sees, for instance, an update that used the *previous*
    velocity: a read-after-write hazard inside a DTensor ``tf.function``.
    """
    missing = [k for k in ("param", "velocity", "grad") if k not in recording.kinds]
    if missing:
        raise ValueError(f"check_recording needs kinds param, velocity and grad; missing {missing}.")
    steps = np.asarray(recording.steps)
    if len(steps) and (np.any(np.diff(steps) != 1) or len(recording.dropped_steps)):
        raise ValueError(
            "check_recording needs consecutive steps (Recorder(every=1), nothing dropped). "
            f"Received steps {steps[:5].tolist()}... with {len(recording.dropped_steps)} dropped."
        )
    hp = recording.hyperparameters
    out = {}
    for name in recording.variables:
        p = recording.global_values(name, "param")
        v = recording.global_values(name, "velocity")
        g = recording.global_values(name, "grad")
        p_prev = np.concatenate([recording.initial(name)[None], p[:-1]])
        v0 = np.zeros_like(p[:1]) if steps[:1].tolist() == [1] else v[:1] * np.nan
        v_prev = np.concatenate([v0, v[:-1]])
        bad = []
        for i in range(len(steps)):
            if not np.all(np.isfinite(v_prev[i])):
                continue  # unknown starting velocity (recording began mid-run)
            p_ref, v_ref = sgd_step(p_prev[i], g[i], v_prev[i], hp.learning_rate[i],
                                    hp.momentum, hp.nesterov)
            ok = (np.allclose(p[i], p_ref, rtol=rtol, atol=atol, equal_nan=True)
                  and np.allclose(v[i], v_ref, rtol=rtol, atol=atol, equal_nan=True))
            if not ok:
                bad.append(int(steps[i]))
        out[name] = np.asarray(bad, np.int64)
    return out
