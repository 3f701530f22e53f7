"""Synthetic plain-data recordings and the parts the clients of a run would save, built
without TensorFlow (``tests/recording/test_merge.py``, ``benchmarks/merge.py``): an
8-device mesh ``{"x": clients, "y": 8 // clients}`` (``x`` spans the clients) holding

- sharded: an n x n parameter laid out ``[x, y]``: every block on one client;
- replicated: an n x n/4 parameter laid out ``[unsharded, y]``: every block on every
  client.
"""

from __future__ import annotations

import numpy as np

from dtsgd_viz import KINDS
from dtsgd_viz.recording import Hyperparameters, Part, Recording, VariableRecord
from dtsgd_viz.specs import LayoutSpec, MeshSpec


def whole_recording(clients, n, steps, which, seed=0) -> Recording:
    k = 8 // clients
    mesh = MeshSpec.create({"x": clients, "y": k})
    rng = np.random.default_rng(seed)
    specs = {"sharded": ("w", (n, n), ("x", "y")), "replicated": ("r", (n, n // 4), ("unsharded", "y"))}
    records = []
    for key in ("sharded", "replicated") if which == "both" else (which,):
        name, shape, layout = specs[key]
        layout = LayoutSpec(layout, mesh)
        geom = VariableRecord(name, shape, "float32", layout, None, {}).geometry
        blocks = {kind: rng.standard_normal((steps, geom.num_unique, *geom.local_shape), np.float32) for kind in KINDS}
        records.append(VariableRecord(name, shape, "float32", layout, rng.standard_normal(shape, np.float32), blocks))
    v = len(records)
    return Recording(
        mesh,
        tuple(records),
        KINDS,
        np.arange(1, steps + 1),
        Hyperparameters(np.full(steps, 0.01), 0.9, True, 0.9),
        np.zeros(steps),
        np.zeros((steps, v), np.uint8),
        np.zeros((steps, v), np.uint8),
    )


def split(whole: Recording, clients: int) -> list[Recording]:
    """The parts the clients of a run holding ``whole`` would save."""
    k = whole.mesh.num_devices // clients
    parts = []
    for c in range(clients):
        part = Part(c, clients, tuple(range(c * k, (c + 1) * k)))
        records = []
        for r in whole.records:
            held = [g for g, _ in r.geometry.held_groups(part.devices)]
            initial = np.full(r.shape, np.nan, np.float32)
            for g in held:
                where = r.geometry.blocks[r.geometry.replica_groups[g][0]]
                initial[where] = r.initial[where]
            blocks = {kind: b[:, held].copy() for kind, b in r.blocks.items()}
            records.append(VariableRecord(r.name, r.shape, r.dtype, r.layout, initial, blocks))
        parts.append(
            Recording(
                whole.mesh,
                tuple(records),
                whole.kinds,
                whole.steps,
                whole.hyperparameters,
                whole.loss_values,
                whole.nonfinite,
                whole.mismatch,
                part=part,
            )
        )
    return parts
