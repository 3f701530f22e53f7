"""A recording rebuilt by numpy replay, with the stale velocity put in where a test says:
the truth ``stale_hits`` is checked against. Each unique block is replayed from the
recording's initial value with its recorded gradients, by ``reference.sgd_step`` (the rule)
except at the chosen ``(update, block)`` pairs, where the parameter moves with the
previous velocity as tf-keras' stale read makes it (the slot still gets the new one)."""

import dataclasses

import numpy as np

from dtsgd_viz.recording import Hyperparameters
from dtsgd_viz.theory import reference


def replay_with_stale(recording, stale_at, learning_rate, momentum, nesterov, weight_decay=None):
    """``recording`` with every variable's parameters and velocities replayed under
    ``learning_rate``/``momentum``/``nesterov`` (and decoupled ``weight_decay`` on every
    variable), moving with the previous velocity at ``stale_at[variable]``: a set of
    ``(update, block)`` pairs (blocks in ``replica_groups`` order)."""
    records = []
    for record in recording.records:
        geometry = record.geometry
        grads = record.blocks["grad"]
        p = geometry.split(record.initial).astype(np.float32)
        v = np.zeros_like(p)
        lr, mu = np.float32(learning_rate), np.float32(momentum)
        ps, vs = [], []
        for i, step in enumerate(recording.steps):
            p_next, v_next = reference.sgd_step(p, grads[i], v, learning_rate, momentum, nesterov, weight_decay)
            for b in range(geometry.num_unique):
                if (int(step), b) not in stale_at.get(record.name, ()):
                    continue
                start = p[b] if weight_decay is None else p[b] - p[b] * np.float32(weight_decay) * lr
                # tf-keras' arithmetic with the slot read before its assign landed
                moved = ((-grads[i][b]) * lr + v[b] * mu) if nesterov else v[b]
                p_next[b] = (start + moved).astype(np.float32)
            p, v = p_next, v_next
            ps.append(p)
            vs.append(v)
        blocks = {"param": np.stack(ps), "velocity": np.stack(vs), "grad": grads}
        records.append(dataclasses.replace(record, blocks=blocks))
    n = len(recording.steps)
    hp = Hyperparameters(
        np.full(n, np.float64(np.float32(learning_rate))),
        float(momentum),
        bool(nesterov),
        float(np.float32(momentum)),
        None if weight_decay is None else float(np.float32(weight_decay)),
        () if weight_decay is None else tuple(recording.variables),
    )
    return dataclasses.replace(recording, records=tuple(records), hyperparameters=hp)


def expected_verdicts(recording, variable, stale_at, classes):
    """``(n_steps, n_devices)``: the index of ``stale`` where ``stale_at`` put the stale
    velocity (every device of that block), of ``rule`` elsewhere."""
    geometry = recording.geometry(variable)
    out = np.full((len(recording.steps), geometry.num_devices), classes.index("rule"))
    for i, step in enumerate(recording.steps):
        for d in range(geometry.num_devices):
            if (int(step), geometry.group_of[d]) in stale_at.get(variable, ()):
                out[i, d] = classes.index("stale")
    return out
