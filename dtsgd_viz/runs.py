"""Run the real DTensor ``SGD`` on a surface, one recording per optimizer config.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> recs = dtsgd_viz.run(surfaces.RotatedQuadratic(), {
    ...     "momentum": dict(learning_rate=0.05, momentum=0.9),
    ...     "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
    ... }, steps=3)
    >>> recs["nesterov"].path("w").shape      # start + 3 steps, 2 coordinates
    (4, 2)
    >>> recs["nesterov"].layout("w").sharding_specs
    ('coord',)

A 2-D parameter is sharded over a mesh dim of size 2 so that each coordinate lives
on its own device; a ``ShardedQuadratic`` uses its own mesh and layout. Every config
starts from the same point, runs its update in a ``tf.function`` and reports the loss
before each update, which the recording keeps (``recording.loss``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from . import progress as _progress

if TYPE_CHECKING:
    from .recording.recording import Recording
    from .theory.surfaces.base import Surface

VARIABLE = "w"
"""The name of the optimized variable in every recording ``run`` returns."""

CONFIG_KEYS = ("learning_rate", "momentum", "nesterov", "exact_update")

__all__ = ["run", "VARIABLE", "CONFIG_KEYS"]


def _check_configs(configs) -> dict[str, dict]:
    if not isinstance(configs, Mapping) or not configs:
        raise ValueError(
            "configs must be a non-empty dict {name: dict(learning_rate=..., momentum=..., "
            f"nesterov=...)}}. Received: {configs!r}."
        )
    out = {}
    for name, config in configs.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"Config names must be non-empty strings. Received: {name!r}.")
        if not isinstance(config, Mapping):
            raise TypeError(f"Config {name!r} must be a dict of SGD arguments. Received: {config!r}.")
        unknown = sorted(set(config) - set(CONFIG_KEYS), key=str)
        if unknown:
            raise ValueError(f"Unknown key(s) {unknown} in config {name!r}. Allowed: {list(CONFIG_KEYS)}.")
        out[name] = dict(config)
    return out


def _check_int(name, value, low=1):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}. Received: {name}={value!r}.")
    return int(value)


def check_start(surface: Surface, start: ArrayLike | None) -> np.ndarray:
    shape = tuple(surface.shape)
    raw = surface.default_start if start is None else start
    try:
        x = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"start must be an array of shape {shape}. Received: {start!r}.") from None
    if x.shape != shape:
        raise ValueError(f"start must have shape {shape} for {type(surface).__name__}. Received: shape {x.shape}.")
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)
    if not np.all(np.isfinite(x32)):
        raise ValueError(f"start must be finite (in float32). Received: {x.tolist()}.")
    return x32


def _mesh_and_layout(surface, mesh):
    """The mesh to run on and the parameter's layout on it."""
    from . import dtensor as _dtensor

    specs = getattr(surface, "specs", None)
    if isinstance(mesh, Mapping):
        mesh = _dtensor.make_mesh(dict(mesh))
    if tuple(surface.shape) == (2,) and specs is None:
        if mesh is None:
            mesh = _dtensor.make_mesh({"coord": 2})
        dims = dict(zip(mesh.dim_names, mesh.shape()))
        pair = [n for n, s in dims.items() if s == 2]
        if not pair:
            raise ValueError(
                "A 2-D surface's parameter is sharded so that each coordinate lives on its "
                f"own device: the mesh needs a dim of size 2. Received: mesh dims {dims}."
            )
        return mesh, _dtensor.make_layout([pair[0]], mesh)
    if specs is not None:
        want = surface.mesh_dims
        if mesh is None:
            mesh = _dtensor.make_mesh(want)
        dims = dict(zip(mesh.dim_names, mesh.shape()))
        used = {s: want[s] for s in specs if s != "unsharded"}
        if any(dims.get(n) != s for n, s in used.items()):
            raise ValueError(
                f"{type(surface).__name__} lays its parameter out as {list(specs)} on mesh "
                f"dims {want}; the mesh must have those dims. Received: mesh dims {dims}."
            )
        return mesh, _dtensor.make_layout(specs, mesh)
    if mesh is None:
        mesh = _dtensor.make_mesh({"replica": 1})
    return mesh, _dtensor.replicated_layout(mesh, len(surface.shape))


def run(
    surface: Surface,
    configs: Mapping[str, Mapping[str, Any]],
    steps: int,
    mesh: Any = None,
    start: ArrayLike | None = None,
    every: int = 1,
    progress: bool | Callable[[str, int, int], None] | None = None,
) -> dict[str, Recording]:
    """Optimize ``surface`` with the real DTensor ``SGD`` once per config.

    Args:
      surface: a ``dtsgd_viz.surfaces`` surface (anything with ``shape``,
        ``default_start`` and ``value_tf(w, mesh)``).
      configs: ``{name: dict(learning_rate=..., momentum=..., nesterov=...)}``
        (also ``exact_update``); each runs from the same start.
      steps: updates per config (>= 1).
      mesh: a DTensor ``Mesh``, a dict of mesh dims, or None for the surface's default
        (``{"coord": 2}`` for 2-D surfaces, the surface's own mesh for a
        ``ShardedQuadratic``).
      start: the starting parameter (shape ``surface.shape``); default
        ``surface.default_start``.
      every: record every ``every``-th update.
      progress: True shows a progress bar per config (``tqdm.auto``: a widget in
        Jupyter, text on stderr elsewhere; ``DTSGD_VIZ_PROGRESS=0`` turns it off); a
        callable is called as ``progress(name, done, steps)`` about 20 times per config
        and after its last step; None or False (the default) shows nothing.

    Returns ``{name: Recording}`` with the parameter recorded as ``"w"`` (all kinds,
    and the loss before each update). Nothing is cached: each call runs afresh.
    """
    if not all(hasattr(surface, a) for a in ("shape", "value_tf", "default_start")):
        raise TypeError(
            "surface must be a dtsgd_viz.surfaces surface (with shape, value_tf and "
            f"default_start). Received: {type(surface).__name__}."
        )
    configs = _check_configs(configs)
    steps = _check_int("steps", steps)
    every = _check_int("every", every)
    _progress.check(progress, callable_ok=True)
    start = check_start(surface, start)

    mesh, layout = _mesh_and_layout(surface, mesh)
    prepared = _optimizers(configs, mesh, every)
    return {
        name: _run_config(surface, name, rec, opt, start, layout, mesh, steps, progress) for name, rec, opt in prepared
    }


def _optimizers(configs, mesh, every) -> list:
    """``(name, Recorder, SGD)`` per config, every optimizer built first, so a bad config
    fails before any run starts."""
    from .optimizer.sgd import SGD
    from .recorder.recorder import Recorder

    prepared = []
    for name, config in configs.items():
        rec = Recorder(every=every)
        prepared.append((name, rec, SGD(**config, mesh=mesh, hooks=[rec])))
    return prepared


def _run_config(surface, name, rec, opt, start, layout, mesh, steps, progress):
    """Run ``opt`` for ``steps`` updates from ``start`` (a fresh variable with ``layout``),
    reporting ``progress`` as ``run`` says; returns what ``rec`` recorded."""
    from . import dtensor as _dtensor

    tf = _dtensor.quiet_tensorflow_import()

    w = _dtensor.variable(start, layout, name=VARIABLE)

    @tf.function
    def step(w=w, opt=opt):
        with tf.GradientTape() as tape:
            value = surface.value_tf(w, mesh)
        grads = tape.gradient(value, [w])
        opt.apply_gradients(zip(grads, [w]), loss=value)

    report_every = max(1, math.ceil(steps / 20))
    with _progress.bar(steps, name, progress is True) as bar:
        for k in rec.loop(steps):
            step()
            bar.update()
            done = k + 1
            if callable(progress) and (done % report_every == 0 or done == steps):
                progress(name, done, steps)
    return rec.recording
