"""The command-line demo: plain, momentum and Nesterov SGD on a sharded quadratic.

The parameter is an (8, 8) matrix laid out ``[batch, model]`` over a 2x4 mesh, so
each of the 8 devices holds a 4x2 block. Its loss is ``sum(c * (w - 1)**2 / 2)``
with a curvature ``c`` that differs from device to device (0.05 on the flattest
block to 1.0 on the steepest), so the per-shard velocities tell different stories.

Then momentum and Nesterov run on an ill-conditioned rotated quadratic (``PATH_*``)
for the path figures, and ``report.write_report`` draws everything into a folder
with an ``index.html`` (``demo-out/`` unless ``--out DIR`` says otherwise).
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

import numpy as np

from .. import progress as _progress

if TYPE_CHECKING:
    from ..geometry import ShardGeometry
    from ..recording import Recording
    from ..theory.surfaces import RotatedQuadratic, ShardedQuadratic

CONFIGS = {
    "plain": dict(learning_rate=0.5, momentum=0.0),
    "momentum": dict(learning_rate=0.5, momentum=0.9),
    "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True),
}
# Momentum vs Nesterov on a 2-D surface for the path figures and the GIF: at
# lr * largest curvature = 0.5 heavy-ball momentum keeps bouncing across the valley
# while Nesterov's look-ahead damps it.
PATH_CONFIGS = {
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}
PATH_STEPS = 40
DEFAULT_OUT = "demo-out"
SHAPE = (8, 8)
MESH = {"batch": 2, "model": 4}
SPECS = ("batch", "model")


def curvature(geometry: ShardGeometry) -> np.ndarray:
    """Per-element curvature, constant on each device's block, log-spaced 0.05..1."""
    c = np.empty(geometry.global_shape, np.float32)
    levels = np.geomspace(0.05, 1.0, geometry.num_unique).astype(np.float32)
    for g, devices in enumerate(geometry.replica_groups):
        c[geometry.blocks[devices[0]]] = levels[g]
    return c


@dataclasses.dataclass
class DemoRun:
    name: str
    recording: Recording
    seconds: float


# "[2/3] momentum  step 40/100 |#####     | 00:01": the demo's bars say which run and step
BAR = "{desc} step {n_fmt}/{total_fmt} |{bar:24}| {elapsed}"


def _bar(total, desc, progress, file):
    return _progress.bar(total, desc, progress, file=file, bar_format=BAR)


def run_demo(steps: int = 100, progress: bool = False, file: TextIO | None = None) -> list[DemoRun]:
    """Record the three optimizers for ``steps`` steps each; returns ``[DemoRun]``.
    ``progress=True`` shows a bar per optimizer (``tqdm.auto``, on ``file``: default
    stderr)."""
    from .. import dtensor as _dtensor

    tf = _dtensor.quiet_tensorflow_import()  # before the imports below load it
    from ..optimizer.sgd import SGD
    from ..recorder.recorder import Recorder

    mesh = _dtensor.make_mesh(MESH)
    layout = _dtensor.make_layout(SPECS, mesh)
    geometry = _dtensor.shard_geometry_of(SHAPE, layout)
    c = curvature(geometry)
    w0 = np.zeros(SHAPE, np.float32)
    C, target = _dtensor.put(c, layout), _dtensor.put(np.ones(SHAPE, np.float32), layout)
    runs = []
    for i, (name, config) in enumerate(CONFIGS.items(), 1):
        w = _dtensor.variable(w0, layout, name="w")
        rec = Recorder()
        opt = SGD(**config, mesh=mesh, hooks=[rec])

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(C * (w - target) ** 2 / 2.0)  # noqa: B023
            grads = tape.gradient(loss, [w])  # noqa: B023
            opt.apply_gradients(zip(grads, [w]), loss=loss)  # noqa: B023

        start = time.perf_counter()
        with _bar(steps, f"[{i}/{len(CONFIGS)}] {name:<9}", progress, file) as bar:
            for _ in rec.loop(steps):
                step()
                bar.update()
        runs.append(DemoRun(name, rec.recording, time.perf_counter() - start))
    return runs


def path_surface() -> RotatedQuadratic:
    from ..theory.surfaces import RotatedQuadratic

    return RotatedQuadratic(condition=10.0, angle=30.0)


def run_paths(steps: int = PATH_STEPS, progress: bool = False, file: TextIO | None = None) -> dict[str, Recording]:
    """Momentum and Nesterov on ``path_surface()``: ``{name: Recording}`` (``dtsgd_viz.run``),
    with a bar per optimizer when ``progress=True``."""
    from ..runs import run

    bars, shown = {}, {}

    def report(name, done, total):  # run reports about 20 times per config
        if name not in bars:
            bars[name] = _bar(total, f"[paths] {name:<9}", progress, file)
        bars[name].update(done - shown.get(name, 0))
        shown[name] = done
        if done == total:
            bars[name].close()

    return run(path_surface(), PATH_CONFIGS, steps, progress=report if _progress.shown(progress) else None)


def demo_surface() -> ShardedQuadratic:
    """The demo's loss as a surface: ``sum(c * (w - 1)**2 / 2)`` on the 2x4 mesh, ``c``
    log-spaced 0.05..1 over the blocks (``ShardedQuadratic``'s defaults, ``curvature``)."""
    from ..theory.surfaces import ShardedQuadratic

    return ShardedQuadratic(SHAPE, tuple(MESH.items()), SPECS, curvature=(0.05, 1.0), target=1.0)


def summary(runs: Sequence[DemoRun], tol: float = 1e-3) -> str:
    """A short, readable text summary of the demo runs, in ``dtsgd_viz.findings``'
    numbers (the loss after k updates, at the recorded parameters)."""
    from ..views.paths.findings import findings

    first = runs[0].recording
    geom = first.geometry("w")
    mesh = first.mesh
    found = findings({run.name: run.recording for run in runs}, demo_surface(), tol=tol)
    a, b = found.window
    lines = [
        f"Parameter 'w' {geom.global_shape} laid out [{', '.join(first.layout('w').sharding_specs)}]"
        f" on {mesh}: each device holds a {'x'.join(map(str, geom.local_shape))} block.",
        "Loss sum(c*(w-1)^2/2), curvature c per device from 0.05 to 1.0; start w=0.",
        f"Loss after k updates (k = 0..{found.last_k}), at the recorded parameters:",
        "",
        f"{'optimizer':<10}{'lr':>5}{'mom':>6}  {'after ' + str(found.last_k):>11}  "
        f"{f'mean k={a}-{b}':>14}  {'<=' + format(tol, 'g') + ' from k':>13}  {'rule check':>10}",
    ]
    from ..theory.reference import check_recording

    assert found.to_tolerance is not None  # findings fills it whenever tol is given
    for run in runs:
        r = run.recording
        hp = r.hyperparameters
        reach = found.to_tolerance[run.name]
        bad = sum(len(v) for v in check_recording(r).values())
        lines.append(
            f"{run.name:<10}{hp.learning_rate[0]:>5g}{hp.momentum:>6g}  {found.final_loss[run.name]:>11.3e}  "
            f"{found.tail_loss[run.name]:>14.3e}  {('never' if reach is None else str(reach)):>13}  "
            f"{'ok' if not bad else f'{bad} off':>10}"
        )
    lines += ["", found.headline().replace("\u00a0", " ")]
    shown = min(10, len(first))  # the velocity early on, while the devices still differ
    lines += ["", f"Velocity |v| per device after {shown} steps (mesh rows: batch, columns: model):"]
    for run in runs:
        if run.recording.hyperparameters.momentum == 0:
            continue
        norms = np.linalg.norm(
            run.recording.shard_values("w", "velocity")[shown - 1].reshape(mesh.num_devices, -1), axis=1
        ).reshape(mesh.dim_sizes)
        lines.append(f"  {run.name}:")
        lines += ["    " + "  ".join(f"{x:8.4f}" for x in row) for row in norms]
    return "\n".join(lines)


def main(
    steps: int = 100,
    save: str | None = None,
    out_dir: str | None = DEFAULT_OUT,
    out: TextIO = sys.stdout,
    err: TextIO = sys.stderr,
    path_steps: int = PATH_STEPS,
    gif_frames: int | None = None,
) -> int:
    """Run the demo, print its summary to ``out`` (progress bars and messages to
    ``err``; ``DTSGD_VIZ_PROGRESS=0`` turns the bars off), save the recordings in
    ``save`` if given, and write the report to ``out_dir`` (None: none), its GIF in
    ``gif_frames`` frames (None: ``report.GIF_FRAMES``)."""
    import os

    def progress(msg):
        print(msg, file=err, flush=True)

    print(
        f"dtsgd_viz demo: plain / momentum / Nesterov SGD, {steps} steps each, on a "
        f"{'x'.join(map(str, MESH.values()))} virtual CPU mesh (real DTensor optimizer).",
        file=out,
        flush=True,
    )
    runs = run_demo(steps, progress=True, file=err)
    text = summary(runs)
    print(text, file=out, flush=True)
    if save:
        os.makedirs(save, exist_ok=True)
        for run in runs:
            path = run.recording.save(os.path.join(save, f"{run.name}.npz"))
            print(f"saved {path}", file=out)
    if out_dir is None:
        return 0
    from . import report

    paths = run_paths(path_steps, progress=True, file=err)
    frames = report.GIF_FRAMES if gif_frames is None else gif_frames
    result = report.write_report(
        out_dir,
        {r.name: r.recording for r in runs},
        paths,
        path_surface(),
        summary=text,
        gif_frames=frames,
        progress=progress,
    )
    print(
        f"\nReport: {len(result.items)} files and {os.path.basename(result.index)} in {result.directory}{os.sep}",
        file=out,
    )
    for item in result.items:
        print(f"  {item.filename:<28} {item.title}", file=out)
    print(f"Open {os.path.abspath(result.index)} in a browser.", file=out)
    return 0
