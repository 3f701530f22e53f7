"""The parts of a multi-client recording put together: plain numpy, no TensorFlow.

In a multi-client run each client's ``Recorder`` keeps the blocks its own devices hold
(``recording.part`` says which client and which devices) and saves that part.
``merge_recordings`` assembles the recording of the whole mesh, the one a single process
holding every device records. A block replicated across clients is kept once (from the
lowest client id holding it); steps where the copies disagree are flagged in
``mismatch``, as a single process flags its own replicas::

    dtsgd_viz.merge_recordings(["parts/part-0.npz", "parts/part-1.npz"])
    dtsgd_viz.load_recording("parts")          # the same: every .npz file of the folder
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence

import numpy as np

from .damage import StrPath
from .npz import read_npz
from .recording import KINDS, Recording, VariableRecord


class MergeError(ValueError):
    """Parts that do not make one recording: missing, repeated or mismatched."""


def merge_recordings(parts: Sequence[Recording | StrPath]) -> Recording:
    """One ``Recording`` of the whole mesh from the parts the clients of a multi-client run
    recorded (``Recording`` objects or paths of saved parts, in any order).

    Every client's part must be there once, and all must describe the same run: the same
    mesh, variables, layouts, kinds, mode, hyperparameters and steps. Otherwise a
    ``MergeError`` (a ``ValueError``) names the part and what differs. A single whole
    recording (a single-process run of the same script) is returned as it is.
    """
    named = []
    for i, p in enumerate(parts):
        if isinstance(p, Recording):
            named.append((f"part {i}" if p.part is None else f"the part of client {p.part.client_id}", p))
        else:
            named.append((os.fspath(p), read_npz(p)))
    if not named:
        raise MergeError("merge_recordings received no parts.")
    whole = [name for name, r in named if r.part is None]
    if whole:
        if len(named) == 1:
            return named[0][1]
        raise MergeError(
            f"{whole[0]} is a whole recording, not a client's part (Recording.part is None), "
            f"but it came with {len(named) - 1} other part(s). Merge the parts of one "
            "multi-client run only."
        )
    _check_clients(named)
    named.sort(key=lambda nr: nr[1].part.client_id)
    for name, r in named[1:]:
        _check_same_run(named[0], (name, r))
    _check_devices(named)
    return _merge([r for _, r in named])


def _check_clients(named) -> None:
    (first, r0), clients = named[0], {}
    n = r0.part.num_clients
    for name, r in named:
        if r.part.num_clients != n:
            raise MergeError(
                f"{name} is a part of a {r.part.num_clients}-client run, but {first} is a part of a {n}-client run."
            )
        if r.part.client_id in clients:
            raise MergeError(
                f"{name} and {clients[r.part.client_id]} are both the part of "
                f"client {r.part.client_id}: give each client's part once."
            )
        clients[r.part.client_id] = name
    missing = sorted(set(range(n)) - set(clients))
    if missing:
        got = ", ".join(f"client {c} ({clients[c]})" for c in sorted(clients))
        raise MergeError(
            f"The part(s) of client(s) {missing} of {n} are missing; received "
            f"{got}. Every client of the run saves its own part."
        )


def _check_same_run(ref, other) -> None:
    (rname, a), (name, b) = ref, other

    def differ(what, x, y):
        raise MergeError(f"{name} does not belong with {rname}: {what} differ ({y} vs {x}).")

    if a.mesh != b.mesh:
        differ("the meshes", a.mesh, b.mesh)
    if (a.mode, a.kinds) != (b.mode, b.kinds):
        differ("the recorded mode and kinds", (a.mode, list(a.kinds)), (b.mode, list(b.kinds)))
    if a.variables != b.variables:
        differ("the variables", list(a.variables), list(b.variables))
    for ra, rb in zip(a.records, b.records):
        if (ra.shape, ra.dtype) != (rb.shape, rb.dtype):
            differ(f"the shapes/dtypes of {ra.name!r}", (ra.shape, ra.dtype), (rb.shape, rb.dtype))
        if ra.layout != rb.layout:
            differ(f"the layouts of {ra.name!r}", ra.layout, rb.layout)
    if len(a) != len(b) or not np.array_equal(a.steps, b.steps):
        only = sorted(set(a.steps.tolist()) ^ set(b.steps.tolist()))
        differ(
            "the recorded steps",
            f"{len(a)} steps",
            f"{len(b)} steps" + (f"; not in both: {only[:5]}{'...' if len(only) > 5 else ''}" if only else ""),
        )
    ha, hb = a.hyperparameters, b.hyperparameters
    if (ha.momentum, ha.nesterov, ha.applied_momentum, ha.weight_decay, ha.decayed, ha.ema_overwrite_frequency) != (
        hb.momentum,
        hb.nesterov,
        hb.applied_momentum,
        hb.weight_decay,
        hb.decayed,
        hb.ema_overwrite_frequency,
    ):
        differ("momentum/nesterov", (ha.momentum, ha.nesterov), (hb.momentum, hb.nesterov))
    if not np.array_equal(ha.learning_rate, hb.learning_rate):
        differ("the learning rates", ha.learning_rate, hb.learning_rate)


def _check_devices(named) -> None:
    mesh, seen = named[0][1].mesh, {}
    for name, r in named:
        for d in r.part.devices:
            if not 0 <= d < mesh.num_devices:
                raise MergeError(f"{name} holds device {d}, outside {mesh}.")
            if d in seen:
                raise MergeError(f"{name} and {seen[d]} both hold mesh device {d}.")
            seen[d] = name
    missing = sorted(set(range(mesh.num_devices)) - set(seen))
    if missing:
        raise MergeError(
            f"No part holds mesh device(s) {missing} of {mesh}: a part is missing or was recorded on a different mesh."
        )


def _runs(pairs):
    """``(out_start, in_start, length)`` runs of consecutive ``(out, in)`` index pairs."""
    runs = []
    for o, i in pairs:
        if runs and runs[-1][0] + runs[-1][2] == o and runs[-1][1] + runs[-1][2] == i:
            runs[-1][2] += 1
        else:
            runs.append([o, i, 1])
    return runs


def _differs(a, b) -> np.ndarray:
    """Per step (axis 0): whether ``a`` and ``b`` differ anywhere (NaN equals NaN)."""
    diff = a != b
    if diff.any():
        diff &= ~(np.isnan(a) & np.isnan(b))
    return diff.reshape(len(diff), math.prod(diff.shape[1:])).any(axis=1)  # not -1: n may be 0


def _merge(parts) -> Recording:
    first, n = parts[0], len(parts[0])
    mismatch = np.bitwise_or.reduce([p.mismatch for p in parts])
    nonfinite = np.bitwise_or.reduce([p.nonfinite for p in parts])
    records = []
    for v, rec in enumerate(first.records):
        geom = rec.geometry
        held = [geom.held_groups(p.part.devices) for p in parts]
        owner = {}
        for pi, groups in enumerate(held):
            for i, (g, _) in enumerate(groups):
                owner.setdefault(g, (pi, i))
        initial = np.empty(rec.shape, rec.initial.dtype)
        for g, (pi, _) in owner.items():
            where = geom.blocks[geom.replica_groups[g][0]]
            initial[where] = parts[pi].records[v].initial[where]
        values = {}
        for attr in ("blocks", "stats"):
            out = {}
            for kind, arr in getattr(rec, attr).items():
                merged = np.empty((n, geom.num_unique, *arr.shape[2:]), arr.dtype)
                for pi, p in enumerate(parts):
                    mine = [(g, i) for i, (g, _) in enumerate(held[pi]) if owner[g] == (pi, i)]
                    src = getattr(p.records[v], attr)[kind]
                    for o, i, k in _runs(mine):
                        merged[:, o : o + k] = src[:, i : i + k]
                if attr == "blocks":  # copies on other clients: compared, as replicas are
                    bit = np.uint8(1 << KINDS.index(kind))
                    for pi, p in enumerate(parts):
                        src = p.records[v].blocks[kind]
                        for i, (g, _) in enumerate(held[pi]):
                            if owner[g] != (pi, i):
                                mismatch[_differs(merged[:, g], src[:, i]), v] |= bit
                out[kind] = merged
            values[attr] = out
        records.append(
            VariableRecord(rec.name, rec.shape, rec.dtype, rec.layout, initial, values["blocks"], values["stats"])
        )
    hp = first.hyperparameters
    return Recording(
        mesh=first.mesh,
        records=tuple(records),
        kinds=first.kinds,
        steps=first.steps.copy(),
        hyperparameters=dataclasses.replace(hp, learning_rate=hp.learning_rate.copy()),
        # the loss is a replicated value: every client saw the same one
        loss_values=first.loss_values.copy(),
        nonfinite=nonfinite,
        mismatch=mismatch,
        dropped_steps=np.unique(np.concatenate([p.dropped_steps for p in parts])).astype(np.int64),
        mode=first.mode,
        superseded_steps=np.unique(np.concatenate([p.superseded_steps for p in parts])).astype(np.int64),
        communication=first.communication,
        # the loss scale is replicated: every client skipped the same updates
        **_skipped(parts),
    )


def _skipped(parts) -> dict:
    """The skipped updates of all ``parts``, each once, with its loss scale."""
    steps, at = np.unique(np.concatenate([p.skipped_steps for p in parts]).astype(np.int64), return_index=True)
    scales = np.concatenate([p.skipped_loss_scale for p in parts]).astype(np.float64)
    return {"skipped_steps": steps, "skipped_loss_scale": scales[at]}
