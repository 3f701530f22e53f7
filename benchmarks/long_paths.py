"""What the path views cost on long runs (issue 29, item 9: linear in the updates drawn).

    python benchmarks/long_paths.py                      # 60, 500, 2,000, 10,000 updates
    python benchmarks/long_paths.py --steps 60 10000     # one table row per length
    python benchmarks/long_paths.py --reference          # the numpy reference rule (seconds, not minutes)

Settings: tutorial 03's surface (``RotatedQuadratic(condition=20, angle=30)``, its
default start) and its three runs (plain, momentum 0.9, Nesterov 0.9, all at
learning rate 0.05), recorded with every kind (param, velocity, grad) by the real
DTensor SGD (``dtsgd_viz.run`` on 2 virtual CPUs, the parameter split over them) or,
with ``--reference``, by ``dtsgd_viz.theory.reference`` (same rule, float32). Agg
backend, the figures at their default size and dpi.

Each row runs in a fresh process (so its peak RSS is its own): it records the runs,
builds and draws (``fig.canvas.draw()``) ``plot_paths(recs, surface, step=5)`` once cold and ``--repeats`` times warm
(the median is printed), opens a ``PathExplorer`` (default: with its close-ups),
moves its slider to ``--moves`` random updates (median), and builds
``animate(..., frames=--frames)`` and renders each of its frames (the GIF's work
without the encoder). Peak RSS is ``ru_maxrss`` of the row's process, recording
included.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

CONFIGS = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}


def _recordings(steps, reference):
    from dtsgd_viz.theory import surfaces

    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    if reference:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from widget_latency import reference_recording

        return surface, {
            k: reference_recording(surface, steps, c["learning_rate"], c["momentum"], c.get("nesterov", False))
            for k, c in CONFIGS.items()
        }
    import dtsgd_viz

    dtsgd_viz.setup_devices(2)
    return surface, dtsgd_viz.run(surface, CONFIGS, steps)


def measure(steps, reference, repeats, moves, frames) -> dict:
    """One row's figures, in this process."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    import dtsgd_viz
    from dtsgd_viz.widgets import PathExplorer

    t0 = time.perf_counter()
    surface, recs = _recordings(steps, reference)
    out = {"steps": steps, "made": time.perf_counter() - t0}

    def timed(f):
        t = time.perf_counter()
        v = f()
        return time.perf_counter() - t, v

    def paths():
        fig = dtsgd_viz.plot_paths(recs, surface, step=5)
        fig.canvas.draw()
        return fig

    out["cold"], fig = timed(paths)
    plt.close(fig)
    warm = []
    for _ in range(repeats):
        dt, fig = timed(paths)
        warm.append(dt)
        plt.close(fig)
    out["warm"] = statistics.median(warm)

    out["open"], w = timed(lambda: PathExplorer(recs, surface))
    rng = np.random.default_rng(0)
    times = []
    for k in rng.integers(1, steps + 1, size=moves):
        dt, _ = timed(lambda k=k: setattr(w.slider, "value", int(k)))
        times.append(dt)
    out["move"] = statistics.median(times)
    plt.close(w.figure)

    def gif():
        anim = dtsgd_viz.animate(recs, surface, frames=frames, hold=0)
        for i in range(frames):
            anim._func(i)
            anim._fig.canvas.draw()
        plt.close(anim._fig)

    out["animate"], _ = timed(gif)
    out["rss"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--steps", type=int, nargs="+", default=[60, 500, 2_000, 10_000], help="updates per run, one table row each"
    )
    parser.add_argument("--reference", action="store_true", help="runs made by the numpy reference rule")
    parser.add_argument("--repeats", type=int, default=3, help="warm plot_paths draws (median)")
    parser.add_argument("--moves", type=int, default=10, help="slider moves to time (median)")
    parser.add_argument("--frames", type=int, default=4, help="animation frames drawn")
    parser.add_argument("--row", type=int, help=argparse.SUPPRESS)  # one row, in this process
    args = parser.parse_args(argv)
    if args.row is not None:
        print(json.dumps(measure(args.row, args.reference, args.repeats, args.moves, args.frames)))
        return 0
    source = "numpy reference rule" if args.reference else "real DTensor SGD (dtsgd_viz.run, 2 CPUs)"
    print(
        f"Path views on tutorial 03's three runs ({source}), Agg; each row a fresh process; "
        f"plot_paths(step=5) built and drawn, median of {args.repeats} warm, slider median of {args.moves} moves, "
        f"animate of {args.frames} frames rendered\n"
    )
    print(
        "| updates drawn | recorded in | plot_paths cold | plot_paths warm | PathExplorer open "
        "| slider move | animate | peak RSS |\n|---|---|---|---|---|---|---|---|"
    )
    for steps in args.steps:
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--row",
            str(steps),
            "--repeats",
            str(args.repeats),
            "--moves",
            str(args.moves),
            "--frames",
            str(args.frames),
        ] + (["--reference"] if args.reference else [])
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            print(f"| {steps:,} | failed: {done.stderr.strip().splitlines()[-1:]} |||||||", flush=True)
            continue
        r = json.loads(done.stdout.strip().splitlines()[-1])
        print(
            f"| {steps:,} | {r['made']:.1f} s | {r['cold']:.2f} s | {r['warm']:.2f} s | {r['open']:.2f} s "
            f"| {r['move'] * 1e3:.0f} ms | {r['animate']:.2f} s | {r['rss']:.0f} MB |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
