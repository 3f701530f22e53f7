"""A plain-data recording as the recorder assembles it, for view tests that need no
TensorFlow: blocks per replica group (full mode) or stats per device (stats mode),
values decaying 0.9 per update."""

import numpy as np

from dtsgd_viz import KINDS, LayoutSpec, MeshSpec
from dtsgd_viz.recording import Hyperparameters, Recording, VariableRecord

MESH = MeshSpec.create({"batch": 2, "model": 4})


def recording(variables, steps=20, mode="full", kinds=KINDS, updates=None, seed=0, mesh=MESH):
    """A recording of ``variables`` ``[(name, shape, specs)]`` on ``mesh``, as the
    recorder would assemble it (blocks per replica group, or stats per device)."""
    rng = np.random.default_rng(seed)
    records = []
    for name, shape, specs in variables:
        layout = LayoutSpec(specs, mesh)
        geom = VariableRecord(name, shape, "float32", layout, None, {}).geometry
        decay = 0.9 ** np.arange(steps)
        blocks, stats = {}, {}
        for k in kinds:
            if mode == "full":
                b = rng.standard_normal((steps, geom.num_unique, *geom.local_shape))
                blocks[k] = (b * decay.reshape(-1, *[1] * (b.ndim - 1))).astype(np.float32)
            else:
                per = np.abs(rng.standard_normal((steps, geom.num_unique, 3))) + 0.01
                per[..., 1] -= 0.5
                per = per * decay[:, None, None]
                stats[k] = per[:, list(geom.group_of)].astype(np.float32)
        records.append(
            VariableRecord(name, shape, "float32", layout, rng.standard_normal(shape).astype(np.float32), blocks, stats)
        )
    v = len(records)
    return Recording(
        mesh,
        tuple(records),
        tuple(kinds),
        np.arange(1, steps + 1) if updates is None else np.asarray(updates),
        Hyperparameters(np.full(steps, 0.05), 0.9, True, 0.9),
        np.linspace(1, 0.1, steps),
        np.zeros((steps, v), np.uint8),
        np.zeros((steps, v), np.uint8),
        mode=mode,
    )
