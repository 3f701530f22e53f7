"""How long a step-slider move of ``PathExplorer`` takes (issue 5 target: <= 30 ms median
for a 10,000-step, 3-optimizer recording on the Agg backend), PNG included.

    python benchmarks/widget_latency.py            # recordings built by the numpy reference
    python benchmarks/widget_latency.py --real     # recorded from the real DTensor SGD (minutes)
    python benchmarks/widget_latency.py --steps 60 2000 10000   # one table row per length

Prints, for each run length (default 60 and 10,000 updates), a table row with the
median slider move (state transition, in-place artist update, blit and PNG encode:
everything between ``slider.value = k`` and the new ``image.value``) and its ratio to
one full ``plot_paths`` draw + PNG of the same recordings, measured in the same run.

By default the recordings are assembled from ``dtsgd_viz.reference`` (the same
update rule, float32) into ``Recording`` objects with every kind, since recording
30,000 real DTensor steps takes minutes; the widget sees the same data structure
either way. ``--real`` records them with ``dtsgd_viz.run``.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time

import numpy as np

CONFIGS = {
    "plain": dict(learning_rate=0.02, momentum=0.0, nesterov=False),
    "momentum": dict(learning_rate=0.02, momentum=0.9, nesterov=False),
    "nesterov": dict(learning_rate=0.02, momentum=0.9, nesterov=True),
}


def reference_recording(surface, steps, learning_rate, momentum, nesterov):
    """A full-mode ``Recording`` of ``steps`` updates made by the numpy reference."""
    from dtsgd_viz.geometry import shard_geometry
    from dtsgd_viz.recording.recording import Hyperparameters, Recording, VariableRecord
    from dtsgd_viz.specs import LayoutSpec, MeshSpec
    from dtsgd_viz.theory import reference

    start = surface.default_start.astype(np.float32)
    p, v = start, np.zeros_like(start)
    ps, vs, gs, loss = [], [], [], []
    for _ in range(steps):
        g = surface.grad_np(p).astype(np.float32)
        loss.append(surface.value_np(p))
        p, v = reference.sgd_step(p, g, v, learning_rate, momentum, nesterov)
        ps.append(p), vs.append(v), gs.append(g)
    mesh = MeshSpec.create({"coord": 2})
    layout = LayoutSpec(("coord",), mesh)
    geom = shard_geometry(surface.shape, layout)
    blocks = {k: geom.split(np.stack(a)) for k, a in (("param", ps), ("velocity", vs), ("grad", gs))}
    return Recording(
        mesh,
        (VariableRecord("w", surface.shape, "float32", layout, start, blocks),),
        ("param", "velocity", "grad"),
        np.arange(1, steps + 1),
        Hyperparameters(np.full(steps, learning_rate), momentum, nesterov),
        np.asarray(loss, np.float64),
        np.zeros((steps, 1), np.uint8),
        np.zeros((steps, 1), np.uint8),
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[60, 10_000], help="run lengths to measure, one table row each"
    )
    parser.add_argument("--moves", type=int, default=60, help="slider moves to time")
    parser.add_argument("--full", type=int, default=3, help="full plot_paths draws to time")
    parser.add_argument("--real", action="store_true", help="record with the real DTensor SGD")
    args = parser.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import dtsgd_viz
    from dtsgd_viz.theory import surfaces

    surface = surfaces.RotatedQuadratic()
    if args.real:
        dtsgd_viz.setup_devices(2)
    source = "real DTensor SGD (dtsgd_viz.run)" if args.real else "numpy reference rule"
    print(
        f"PathExplorer slider move (state transition, in-place update, blit, PNG), "
        f"{len(CONFIGS)} optimizers ({source}), Agg; target <= 30 ms\n"
    )
    print(
        "| updates | made | widget built | slider move: median (p10-p90) | PNG | full plot_paths + PNG "
        "| move / full draw | target |\n|---|---|---|---|---|---|---|---|"
    )
    for steps in args.steps:
        print(_row(dtsgd_viz, surface, steps, args), flush=True)
    return 0


def _row(dtsgd_viz, surface, steps, args) -> str:
    """One table row: the explorer built and moved ``args.moves`` times, and
    ``args.full`` full ``plot_paths`` draws, on runs of ``steps`` updates."""
    t0 = time.perf_counter()
    if args.real:
        recs = dtsgd_viz.run(surface, CONFIGS, steps)
    else:
        recs = {k: reference_recording(surface, steps, **c) for k, c in CONFIGS.items()}
    made = time.perf_counter() - t0

    from dtsgd_viz.widgets import PathExplorer

    t0 = time.perf_counter()
    w = PathExplorer(recs, surface)
    built = time.perf_counter() - t0

    rng = np.random.default_rng(0)
    targets = rng.integers(1, steps + 1, size=args.moves + 5)  # update numbers
    times = []
    for i, k in enumerate(targets):
        t0 = time.perf_counter()
        w.slider.value = int(k)
        dt = time.perf_counter() - t0
        if i >= 5:  # warm-up
            times.append(dt)

    full = []
    for _ in range(args.full):
        k = int(rng.integers(1, steps + 1))
        t0 = time.perf_counter()
        fig = dtsgd_viz.plot_paths(recs, surface, step=k)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=w.figure.dpi)
        full.append(time.perf_counter() - t0)

    med, full_med = statistics.median(times), statistics.median(full)
    h, wd = w.pixels().shape[:2]
    return (
        f"| {steps:,} | {made:.1f} s | {built * 1e3:.0f} ms | {med * 1e3:.1f} ms "
        f"({np.percentile(times, 10) * 1e3:.1f}-{np.percentile(times, 90) * 1e3:.1f}) | "
        f"{wd}x{h} px, {len(w.image.value) / 1024:.0f} KiB | {full_med * 1e3:.0f} ms | "
        f"{med / full_med:.3f}x | {'met' if med <= 0.030 else 'not met'} |"
    )


if __name__ == "__main__":
    sys.exit(main())
