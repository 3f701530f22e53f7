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

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from ..recording.recording import Recording


def sgd_step(
    param: ArrayLike,
    grad: ArrayLike,
    velocity: ArrayLike,
    learning_rate: ArrayLike,
    momentum: ArrayLike = 0.0,
    nesterov: bool = False,
    weight_decay: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """One update: returns ``(new_param, new_velocity)``, computed in the dtype of
    ``param`` with tf-keras' order of operations. With ``weight_decay`` (decoupled, as
    tf-keras' ``SGD(weight_decay=...)``) the parameter first loses
    ``param * weight_decay * learning_rate``; the gradient is the one computed before."""
    param = np.asarray(param)
    dt = param.dtype
    lr = dt.type(learning_rate)
    mu = dt.type(momentum)
    if weight_decay is not None:
        param = (param - param * dt.type(weight_decay) * lr).astype(dt)
    g = np.asarray(grad, dt)
    v = np.asarray(velocity, dt)
    step = (-g) * lr
    v_new = step + v * mu
    if nesterov:
        p_new = param + (step + v_new * mu)
    else:
        p_new = param + v_new
    return p_new.astype(dt), v_new.astype(dt)


def replay(
    initial: ArrayLike,
    grads: Sequence[ArrayLike] | np.ndarray,
    learning_rates: ArrayLike,
    momentum: float = 0.0,
    nesterov: bool = False,
    weight_decay: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Apply recorded gradients ``grads[t]`` from ``initial``; returns the
    parameters and velocities after each step, shapes ``(n_steps, *shape)``."""
    p = np.asarray(initial)
    v = np.zeros_like(p)
    grads = np.asarray(grads)
    lrs = np.broadcast_to(np.asarray(learning_rates, np.float64), (len(grads),))
    ps, vs = [], []
    for g, lr in zip(grads, lrs):
        p, v = sgd_step(p, g, v, lr, momentum, nesterov, weight_decay)
        ps.append(p)
        vs.append(v)
    shape = (0, *p.shape)
    return (np.stack(ps) if ps else np.zeros(shape, p.dtype), np.stack(vs) if vs else np.zeros(shape, p.dtype))


def replay_ema(
    initial: ArrayLike,
    grads: Sequence[ArrayLike] | np.ndarray,
    learning_rates: ArrayLike,
    momentum: float = 0.0,
    nesterov: bool = False,
    ema_momentum: float = 0.99,
    overwrite_frequency: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``replay`` with tf-keras' moving average of the weights (``use_ema=True``).

    After each step's update, in float32::

        average <- ema_momentum * average + (1 - ema_momentum) * p   # average starts at p0
        p <- average            # after steps that are multiples of overwrite_frequency

    (tf-keras 2.21 uses this formula from the first step on, with no warm-up.)
    Returns the parameters (after any overwrite), velocities and averages after each
    step, each ``(n_steps, *shape)``.
    """
    p = np.asarray(initial)
    dt = p.dtype
    m, one_minus_m = dt.type(ema_momentum), dt.type(1 - ema_momentum)
    v, average = np.zeros_like(p), p.copy()
    lrs = np.broadcast_to(np.asarray(learning_rates, np.float64), (len(grads),))
    ps, vs, avgs = [], [], []
    for step, (g, lr) in enumerate(zip(np.asarray(grads), lrs), start=1):
        p, v = sgd_step(p, g, v, lr, momentum, nesterov)
        average = (m * average + one_minus_m * p).astype(dt)
        if overwrite_frequency and step % overwrite_frequency == 0:
            p = average.copy()
        ps.append(p)
        vs.append(v)
        avgs.append(average)
    return np.stack(ps), np.stack(vs), np.stack(avgs)


def run(
    grad_fn: Callable[[np.ndarray], ArrayLike],
    initial: ArrayLike,
    steps: int,
    learning_rate: float,
    momentum: float = 0.0,
    nesterov: bool = False,
) -> np.ndarray:
    """Optimize from ``initial`` with gradients from ``grad_fn(param)``; returns the
    parameters ``(steps + 1, *shape)`` including the start (used for parameter sweeps)."""
    p = np.asarray(initial)
    v = np.zeros_like(p)
    out = [p]
    for _ in range(steps):
        p, v = sgd_step(p, grad_fn(p), v, learning_rate, momentum, nesterov)
        out.append(p)
    return np.stack(out)


RTOL = 1e-3
"""How far an update may be from the rule, as a fraction of its own size (see
``update_deviation``)."""

ULPS = 1
"""...plus this many units in the last place of the recorded and of the recomputed
result, element by element: the rounding a different order of the same float operations
can leave. A 1% deviation is therefore flagged whenever the update is larger than about
``200 * ULPS`` units in the last place of the parameter (float32: a parameter near 1.0
moving by more than ~2.4e-5 per element); below that, rounding and 1% cannot be told
apart."""


def _norm(x) -> float:
    return float(np.sqrt(np.sum(np.square(np.asarray(x, np.float64)))))


def _finfo(dtype):
    if dtype.name == "bfloat16":  # numpy's finfo does not know ml_dtypes' types
        import ml_dtypes

        return ml_dtypes.finfo(dtype)
    return np.finfo(dtype)


def _ulp_floor(x, ulps=ULPS) -> float:
    x = np.asarray(x)
    info = _finfo(x.dtype)
    spacing = np.abs(np.asarray(x, np.float64)) * float(info.eps)
    tiny = float(info.smallest_normal) * float(info.eps)
    return ulps * _norm(np.maximum(spacing, tiny))


def update_deviation(
    p_prev: ArrayLike,
    v_prev: ArrayLike,
    grad: ArrayLike,
    learning_rate: float,
    momentum: float,
    nesterov: bool,
    p: ArrayLike,
    v: ArrayLike,
    weight_decay: float | None = None,
) -> float:
    """How far one recorded update ``(p_prev, v_prev) -> (p, v)`` is from the rule, as a
    fraction of the update's own size (0 for an exact update, 0.01 for 1%, inf when it
    has no size but moved).

    The rule's update is ``(p_ref, v_ref) = sgd_step(p_prev, grad, v_prev, ...)``. The
    parameter's deviation ``||p - p_ref||`` is measured against
    ``max(||p_ref - p_prev||, ||learning_rate * grad||)`` (the step it should have taken,
    or the gradient term when momentum cancels that step), the velocity's
    ``||v - v_ref||`` against ``max(||v_ref||, ||learning_rate * grad||)`` (L2 norms over
    the whole tensor, in float64). Before dividing, ``ULPS`` units in the last place of
    the recorded and the recomputed result (per element) are taken off each deviation:
    float rounding never counts.
    The larger of the two fractions is returned. It does not depend on the parameter's
    own magnitude, so a LayerNorm ``gamma`` near 1.0 moving by 1e-4 is judged on the
    1e-4.
    """
    p_ref, v_ref = sgd_step(p_prev, grad, v_prev, learning_rate, momentum, nesterov, weight_decay)
    grad_term = _norm(np.float64(learning_rate) * np.asarray(grad, np.float64))
    worst = 0.0
    for got, ref, size in (
        (p, p_ref, _norm(np.asarray(p_ref, np.float64) - np.asarray(p_prev, np.float64))),
        (v, v_ref, _norm(v_ref)),
    ):
        got64, ref64 = np.asarray(got, np.float64), np.asarray(ref, np.float64)
        if np.array_equal(got64, ref64, equal_nan=True):
            continue
        if not (np.all(np.isfinite(got64)) and np.all(np.isfinite(ref64))):
            return float("inf")  # NaN/Inf on one side only
        excess = max(0.0, _norm(got64 - ref64) - _ulp_floor(ref) - _ulp_floor(got))
        scale = max(size, grad_term)
        if excess > 0:
            worst = max(worst, excess / scale if scale > 0 else float("inf"))
    return worst


def step_deviation(
    p_prev: ArrayLike,
    v_prev: ArrayLike,
    momentum: float,
    nesterov: bool,
    p: ArrayLike,
    v: ArrayLike,
    decay: float = 0.0,
) -> float:
    """How far the parameter's move ``p - p_prev`` is from what the recorded velocities
    say it must be, as a fraction of its size, without the gradient: every rule moves
    ``p`` by ``v`` (plain and momentum) or by ``v + momentum * (v - v_prev)`` (Nesterov:
    ``-lr * g = v - momentum * v_prev``). An update that moved with the previous step's
    velocity is far off; rounding (two units in the last place of ``p``, four of ``v``
    and two of ``v_prev``, element by element) never counts. Arrays may be flat lists of the unique
    blocks: only norms are taken. This is the check a ``Recorder`` runs as it records."""
    p_prev, p, v_prev, v = (np.asarray(x) for x in (p_prev, p, v_prev, v))
    mu = np.float64(np.asarray(momentum, p.dtype))  # as tf-keras applies it
    moved = np.asarray(p, np.float64) - np.asarray(p_prev, np.float64)
    v64, vp64 = np.asarray(v, np.float64), np.asarray(v_prev, np.float64)
    expected = v64 + mu * (v64 - vp64) if nesterov else v64
    if decay:  # weight decay's own move: p_prev * weight_decay * learning_rate
        expected = expected - np.float64(decay) * np.asarray(p_prev, np.float64)
    if not (np.all(np.isfinite(moved)) and np.all(np.isfinite(expected))):
        return 0.0  # NaN/Inf are flagged elsewhere (recording.nonfinite_steps)
    # the velocities stand in for the gradient term, so their rounding counts twice
    floor = 2 * (_ulp_floor(p) + 2 * _ulp_floor(v) + _ulp_floor(v_prev))
    excess = _norm(moved - expected) - floor
    if excess <= 0:
        return 0.0
    scale = max(_norm(expected), _norm(v64 - mu * vp64))
    return excess / scale if scale > 0 else float("inf")


NONFINITE, UNKNOWN_START, EMA_OVERWRITE = (
    "non-finite",
    "unknown starting velocity",
    "weights overwritten by their moving average",
)
"""Why ``check_recording`` leaves an update unchecked: a NaN or Inf in its previous
parameter or velocity, its gradient or its result (no size to measure a deviation
against); a recording that began mid-run (the first update's starting velocity is not
recorded); an EMA overwrite (``ema_overwrite_frequency``), which no SGD rule makes."""


class RuleCheck(dict):
    """``{variable: array of steps}`` off the rule, as ``check_recording`` returns it;
    ``.deviation[variable]`` holds, per recorded step, how far the update was from the
    rule as a fraction of its size (NaN where it was not checked), ``.unchecked[variable]``
    the steps it did not check, by reason (``NONFINITE``, ``UNKNOWN_START``,
    ``EMA_OVERWRITE``; ``.nonfinite[variable]`` the first), and ``str()`` lists the
    flagged updates and the unchecked ones: it says every update follows the rule only
    when every update was checked."""

    def __init__(
        self,
        flagged: Mapping[str, np.ndarray],
        deviation: Mapping[str, np.ndarray],
        steps: np.ndarray,
        rtol: float,
        unchecked: Mapping[str, Mapping[str, Any]] | None = None,
    ):
        super().__init__(flagged)
        self.deviation, self.steps, self.rtol = deviation, steps, rtol
        self.unchecked = {name: dict(unchecked.get(name, {})) if unchecked else {} for name in flagged}

    @property
    def nonfinite(self) -> dict:
        """``{variable: array of steps}`` not checked because a value is NaN or Inf."""
        return {name: why.get(NONFINITE, np.zeros(0, np.int64)) for name, why in self.unchecked.items()}

    def __str__(self) -> str:
        lines, skipped = [], []
        for name, bad in self.items():
            if len(bad):
                dev = self.deviation[name][np.isin(self.steps, bad)]
                worst = np.nanmax(dev)
                lines.append(
                    f"{name}: {len(bad)} update(s) off the rule (updates "
                    f"{_ranges(bad)}), up to {_pct(worst)} of the update's size"
                )
            for why, steps in self.unchecked[name].items():
                if len(steps):
                    skipped.append(f"{name}: {len(steps)} update(s) not checked, {why} (updates {_ranges(steps)})")
        if not lines:
            within = f"within {_pct(self.rtol)} of its size"
            lines.append(
                f"every update follows the rule ({within})"
                if not skipped
                else f"every update checked follows the rule ({within}); not all were:"
            )
        return "\n".join(lines + skipped)


def _pct(x) -> str:
    return "inf" if not np.isfinite(x) else f"{100 * x:.3g}%"


def _ranges(steps) -> str:
    steps = [int(s) for s in steps]
    out, start = [], 0
    for i in range(1, len(steps) + 1):
        if i == len(steps) or steps[i] != steps[i - 1] + 1:
            a, b = steps[start], steps[i - 1]
            out.append(str(a) if a == b else f"{a}-{b}")
            start = i
    return ", ".join(out)


def check_recording(recording: Recording, rtol: float = RTOL) -> RuleCheck:
    """Updates that do not follow the documented rule.

    For each variable, recomputes every update from the recorded previous parameter
    and velocity, the recorded gradient and the learning rate and momentum as tf-keras
    applied them, with ``sgd_step``, and flags the update when it deviates from that by
    more than ``rtol`` (default 0.1%) of the update's own size, after float rounding
    (see ``update_deviation``): float32 rounding never trips it, a 1% deviation always
    does. Returns a ``RuleCheck``: ``{name: array of steps}`` (empty arrays when
    everything agrees), with ``.deviation`` per step and a readable ``str()``. Needs all
    three kinds, every step recorded (``every=1``) and no dropped steps. An update a
    dynamic loss scale skipped (``recording.skipped_steps``) changed nothing, so the
    update after it starts from the state before it.

    This is how one sees, for instance, an update that used the *previous*
    velocity: a read-after-write hazard inside a DTensor ``tf.function``.
    """
    if not (isinstance(rtol, (int, float)) and not isinstance(rtol, bool) and rtol >= 0):
        raise ValueError(f"rtol must be a number >= 0. Received: rtol={rtol!r}.")
    missing = [k for k in ("param", "velocity", "grad") if k not in recording.kinds]
    if missing:
        raise ValueError(f"check_recording needs kinds param, velocity and grad; missing {missing}.")
    steps = np.asarray(recording.steps)
    # every update that ran, applied or skipped
    ran = np.union1d(steps, getattr(recording, "skipped_steps", np.zeros(0, np.int64)))
    if len(steps) and (np.any(np.diff(ran) != 1) or len(recording.dropped_steps)):
        raise ValueError(
            "check_recording needs consecutive steps (Recorder(every=1), nothing dropped). "
            f"Received steps {steps[:5].tolist()}... with {len(recording.dropped_steps)} dropped."
        )
    hp = recording.hyperparameters
    momentum = applied_momentum(hp)
    overwrite = getattr(hp, "ema_overwrite_frequency", None)
    flagged, deviation, unchecked = {}, {}, {}
    for name in recording.variables:
        p = recording.global_values(name, "param")
        v = recording.global_values(name, "velocity")
        g = recording.global_values(name, "grad")
        p_prev = np.concatenate([recording.initial(name)[None], p[:-1]])
        v0 = np.zeros_like(p[:1]) if ran[:1].tolist() == [1] else v[:1] * np.nan
        v_prev = np.concatenate([v0, v[:-1]])
        dev = np.full(len(steps), np.nan)
        wd = hp.weight_decay if name in getattr(hp, "decayed", ()) else None
        why = {}
        pf, vf, gf = (_finite_steps(x) for x in (p, v, g))
        finite = (
            pf & vf & gf & np.concatenate([_finite_steps(p_prev[:1]), pf[:-1]]) & (np.concatenate([[True], vf[:-1]]))
        )
        for i in range(len(steps)):
            reason = None
            if i == 0 and v0.size and np.isnan(v0).all():
                reason = UNKNOWN_START  # the recording began mid-run
            elif not finite[i]:
                reason = NONFINITE
            elif overwrite and steps[i] % overwrite == 0:
                reason = EMA_OVERWRITE
            if reason is not None:
                why.setdefault(reason, []).append(int(steps[i]))
                continue
            dev[i] = update_deviation(
                p_prev[i], v_prev[i], g[i], hp.learning_rate[i], momentum, hp.nesterov, p[i], v[i], wd
            )
        flagged[name] = steps[dev > rtol].astype(np.int64)
        deviation[name] = dev
        unchecked[name] = {k: np.asarray(v, np.int64) for k, v in why.items()}
    return RuleCheck(flagged, deviation, steps, rtol, unchecked)


def _finite_steps(values) -> np.ndarray:
    """Per step (the leading axis), whether every value is finite."""
    return np.array([bool(np.all(np.isfinite(np.asarray(x, np.float64)))) for x in values], dtype=bool).reshape(
        len(values)
    )


def applied_momentum(hyperparameters: Any) -> float:
    """The momentum as tf-keras applies it: ``tf.cast(momentum, variable.dtype)`` turns the
    Python float into a float32 tensor first, so a float64 variable moves with
    ``float64(float32(0.9))``, not 0.9. Recordings store it as recorded
    (``hyperparameters.applied_momentum``); older ones get it computed the same way."""
    applied = getattr(hyperparameters, "applied_momentum", None)
    if applied is not None:
        return float(applied)
    return float(np.float32(hyperparameters.momentum))
