"""Recordings of the 2-D path surfaces built by the numpy reference alone (no
TensorFlow), and the path figures' arrow note, shared by the view and widget tests."""

import numpy as np

from dtsgd_viz.geometry import shard_geometry
from dtsgd_viz.recording.recording import Hyperparameters, Recording, VariableRecord
from dtsgd_viz.specs import LayoutSpec, MeshSpec
from dtsgd_viz.theory import reference


def synthetic(surface, steps, lr, mu=0.0, nesterov=False, every=1, kinds=("param", "velocity", "grad")):
    """A Recording built by the numpy reference alone (no TensorFlow)."""
    start = surface.default_start.astype(np.float32)
    p, v, g = start, np.zeros_like(start), []
    ps, vs = [], []
    for _ in range(steps):
        grad = surface.grad_np(p).astype(np.float32)
        p, v = reference.sgd_step(p, grad, v, lr, mu, nesterov)
        ps.append(p), vs.append(v), g.append(grad)
    keep = slice(every - 1, None, every)
    mesh = MeshSpec.create({"coord": 2})
    layout = LayoutSpec(("coord",), mesh)
    geom = shard_geometry(surface.shape, layout)
    values = {"param": ps, "velocity": vs, "grad": g}
    stacked = {k: np.stack(v) if v else np.zeros((0, 2), np.float32) for k, v in values.items()}
    blocks = {k: geom.split(stacked[k][keep]) for k in kinds}
    n = len(np.arange(steps)[keep])
    loss = surface.value_np(np.stack([start, *ps])[:-1])[keep]
    return Recording(
        mesh,
        (VariableRecord("w", surface.shape, "float32", layout, start, blocks),),
        tuple(kinds),
        np.arange(1, steps + 1)[keep],
        Hyperparameters(np.full(n, lr), mu, nesterov),
        loss,
        np.zeros((n, 1), np.uint8),
        np.zeros((n, 1), np.uint8),
    )


def note_text(fig):
    texts = [t for ax in fig.axes for t in ax.texts if t.get_gid() == "arrows-note"]
    return texts[0].get_text() if texts else None
