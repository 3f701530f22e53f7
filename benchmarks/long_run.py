"""Long-run figures: a stats recording of 100,000 updates of a 50-variable model, streamed
to disk, and what reading and drawing it costs.

    python benchmarks/long_run.py                      # 100,000 updates (long: see below)
    python benchmarks/long_run.py --updates 5000       # a smaller run, to estimate
    python benchmarks/long_run.py --quick              # 200 updates of 12 variables (smoke test)
    python benchmarks/long_run.py --views run.zarr     # only the read/draw figures of a store
    python benchmarks/long_run.py --updates 30000 --extend-to 100000   # + a 100,000 store

Workload: a LayoutMap MLP of ``--layers`` Dense layers (default 25: 50 variables) of
``--width`` units (default 32) on a 2x4 virtual CPU mesh {batch: 2, model: 4}: 64 examples
split over ``batch``, kernels split over ``model`` alternately by column and by row (as a
Megatron MLP does), biases of model-split outputs split too, the output layer's bias
replicated; Nesterov SGD in a ``tf.function``. The recorded run is the user's loop,
``for _ in rec.loop(n): step()`` with ``rec = Recorder(mode="stats", path="run.zarr")``
(p, v, g statistics of every block every update, streamed at each flush); the model
is ``workloads.deep_mlp(..., layout="megatron")``.

The plain step (the same model, tf-keras DTensor SGD, no recorder) runs in the same
process: after every ``--window`` recorded blocks of ``--block`` updates, one plain block.
A ratio is the median over these windows of the recorded time per update in the window
over the plain one in the block after it (also for the first and last tenth: does the
recorder slow down as the store grows?).

Then, on the finished store, each figure once per rep (``--reps``), the two variants of
a paired figure back to back, in alternating order: ``load_recording`` (floor: reading
every file's bytes; "before": the statistics then converted to float64, as the load did
before it kept them as stored), ``load_recording`` of the store's recording saved as a
``.npz`` ("before": saved with float64 statistics, as recordings were), ``LiveMonitor``'s
pure ``poll``/``readout`` and the real widget's refresh on a poll finding 100 new steps
(floor: a PNG of the figure, its lines empty), ``plot_shards`` + PNG (floor: the first
100 updates) and a ``ShardsView`` moved to another update in place (``ShardExplorer``'s
slider). "every point (before)": the decimation
patched to a pass-through. "noisy lines": the statistics times seeded log-normal noise
(this full-batch run's lines are smooth, which Agg's path simplification thins itself; a
minibatch run's are not). ``--extend-to N``: the same on a store of N updates, the
recorded ones repeated (renumbered, written by ``StoreWriter`` in batches of 1000).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import os
import pathlib
import shutil
import statistics
import sys
import tempfile
import time
import warnings

import numpy as np

import dtsgd_viz

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import workloads  # noqa: E402

NESTEROV = workloads.NESTEROV
warnings.filterwarnings("ignore", message="Recorder: .* did not follow the", category=RuntimeWarning)


# ---- the workload ------------------------------------------------------------------------


def build(layers, width):
    """``(mesh, make)``: ``make(opt)`` builds the seeded MLP and returns ``(step,
    variables)`` (``workloads.deep_mlp``, Megatron-style, 64 examples)."""
    mesh, make, _ = workloads.deep_mlp(layers, width, layout="megatron", examples=64, activation="tanh")
    return mesh, make


def record(args, path):
    """Run the recorded loop with plain blocks interleaved; the timings."""
    from dtsgd_viz import dtensor as _dtensor

    mesh, make = build(args.layers, args.width)
    plain, variables = make(workloads.plain_optimizer(mesh))  # as overhead.py's plain step
    n_vars = len(variables)
    rec = dtsgd_viz.Recorder(mode="stats", path=path)
    step, _ = make(dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec]))
    for _ in range(args.block):  # trace both before the clock starts
        last = plain()
    _dtensor.unpack(last)
    rec_times, plain_times, windows = [], [], []
    load0 = os.getloadavg()[0]
    start = time.perf_counter()
    t_block, t_first = start, None
    for i, _ in enumerate(rec.loop(args.updates)):
        last = step()
        if (i + 1) % args.block:
            continue
        _dtensor.unpack(last)  # DTensor runs asynchronously: wait for this block
        now = time.perf_counter()
        if t_first is None:  # the first block traced the recorded step: not timed
            t_first = now - start
        else:
            rec_times.append((now - t_block) / args.block)
        if len(rec_times) and len(rec_times) % args.window == 0:
            t0 = time.perf_counter()
            for _ in range(args.block):
                last = plain()
            _dtensor.unpack(last)
            plain_times.append((time.perf_counter() - t0) / args.block)
            windows.append(statistics.mean(rec_times[-args.window :]) / plain_times[-1])
            if len(windows) % 20 == 0:
                print(f"update {i + 1}/{args.updates}: recorded/plain {windows[-1]:.2f}x", file=sys.stderr, flush=True)
        t_block = time.perf_counter()
    t0 = time.perf_counter()
    rec.close()
    closed = time.perf_counter() - t0
    return dict(
        n_vars=n_vars,
        load=(load0, os.getloadavg()[0]),
        rec_times=rec_times,
        plain_times=plain_times,
        windows=windows,
        first=t_first,
        close=closed,
        total=time.perf_counter() - start,
    )


# ---- reading and drawing a store -----------------------------------------------------------


def store_size(path):
    sizes = [os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files]
    return sum(sizes), len(sizes)


def read_bytes(path):
    return sum(len(pathlib.Path(d, f).read_bytes()) for d, _, fs in os.walk(path) for f in fs)


def png(fig):
    fig.savefig(io.BytesIO(), format="png")


@contextlib.contextmanager
def no_decimation():
    """The views with their min/max decimation patched to a pass-through: every point
    drawn, as before the decimation (the rest of the code the same)."""
    from dtsgd_viz.views.shards import lines as _shard_lines
    from dtsgd_viz.widgets import live_monitor

    saved = _shard_lines.minmax_decimate
    _shard_lines.minmax_decimate = live_monitor.minmax_decimate = lambda x, y, columns: (np.asarray(x), np.asarray(y))
    try:
        yield
    finally:
        _shard_lines.minmax_decimate = live_monitor.minmax_decimate = saved


def _earlier(state, k):
    """The monitor's state as a poll ``k`` steps before the end left it."""
    status = dataclasses.replace(state.status, n_steps=state.n_steps - k, closed=False)
    return dataclasses.replace(
        state, steps=state.steps[:-k], loss=state.loss[:-k], norms=state.norms[:-k], status=status
    )


def _as_float64(r):
    """``r``'s statistics converted to float64, each array once: what the load did before
    it kept them in the float32 they are stored in."""
    return [np.asarray(s, np.float64) for v in r.records for s in v.stats.values()]


def _setups(path, scratch):
    """``(fixed, paired, points, name, n)``: callables timing one figure each; ``paired``
    maps a figure to ``(after, before)``: with decimation and without, or the load as it
    is and as it was; ``points``: what each variant draws. ``scratch``: a folder for the
    ``.npz`` files the load is also timed on."""
    from dtsgd_viz.recording.store import StoreReader
    from dtsgd_viz.views.shards.plot import draw_shards
    from dtsgd_viz.widgets import LiveMonitor
    from dtsgd_viz.widgets import live_monitor as lm

    rec = dtsgd_viz.load_recording(path)
    name = max(rec.variables, key=lambda v: rec.geometry(v).num_unique)  # the most lines
    short = StoreReader(path).read(0, 100)
    store = StoreReader(path)
    full = lm.poll(lm.monitor_state(), store)
    earlier = _earlier(full, 100)
    empty = LiveMonitor(path, start=False)
    for line in empty.norm_lines + [empty.loss_line]:
        line.set_data([], [])
    npz = os.path.join(scratch, "run.npz"), os.path.join(scratch, "run-float64.npz")
    rec.save(npz[0])
    dataclasses.replace(
        rec,
        records=tuple(
            dataclasses.replace(v, stats={k: s.astype(np.float64) for k, s in v.stats.items()}) for v in rec.records
        ),
    ).save(npz[1])
    fixed = {
        "floor: read every file's bytes": lambda: read_bytes(path),
        "poll, first (reads every step)": lambda: lm.poll(lm.monitor_state(), StoreReader(path)),
        "poll, 100 new steps": lambda: lm.poll(earlier, store),
        "poll, nothing new": lambda: lm.poll(full, store),
        "readout": lambda: lm.readout(full),
        "floor: plot_shards + PNG of the first 100 updates": lambda: png(
            dtsgd_viz.plot_shards(short, name, "velocity")
        ),
        "floor: LiveMonitor PNG, lines empty": empty.refresh,
    }
    rng = np.random.default_rng(0)
    # a noisy run (minibatch gradients): the stats times seeded noise, 4x up or down
    noisy = dataclasses.replace(
        rec,
        records=tuple(
            dataclasses.replace(v, stats={k: s * rng.lognormal(0, 0.7, s.shape[:2] + (1,)) for k, s in v.stats.items()})
            for v in rec.records
        ),
    )
    paired = {
        "load_recording": [lambda: dtsgd_viz.load_recording(path), lambda: _as_float64(dtsgd_viz.load_recording(path))],
        "load_recording of the .npz": [
            lambda: dtsgd_viz.load_recording(npz[0]),
            lambda: dtsgd_viz.load_recording(npz[1]),
        ],
    }
    points = {}
    for on in (True, False):

        def ctx(on=on):  # a fresh context each time: the patch is on while it is open
            return contextlib.nullcontext() if on else no_decimation()

        with ctx():
            view = draw_shards(rec, name, "velocity")
            monitor = LiveMonitor(path, start=False)
            monitor.state = earlier
            monitor.poll_now()

        def move(view=view):  # a ShardExplorer slider move: artists in place, PNG
            view.set_index(int(rng.integers(len(rec))))
            png(view.figure)

        def refresh(monitor=monitor, ctx=ctx):  # a poll finding 100 new steps: read, draw, PNG
            with ctx():
                monitor.state = earlier
                assert monitor.poll_now()

        def draw(ctx=ctx, r=rec):
            with ctx():
                png(dtsgd_viz.plot_shards(r, name, "velocity"))

        for key, fn in (
            ("plot_shards + PNG", draw),
            ("ShardsView in-place move + PNG", move),
            ("LiveMonitor refresh", refresh),
            ("plot_shards + PNG, noisy lines", lambda d=draw: d(r=noisy)),
        ):
            paired.setdefault(key, []).append(fn)
        points.setdefault("points drawn: plot_shards lines", []).append(
            sum(len(line.get_xdata()) for line in view.norm.lines)
        )
        points.setdefault("points drawn: LiveMonitor lines", []).append(
            sum(len(line.get_xdata()) for line in monitor.norm_lines + [monitor.loss_line])
        )
    return fixed, paired, points, name, len(rec)


def time_views(path, reps):
    """``{figure: [seconds per rep]}`` and ``{figure: ([with], [without])}``: each rep
    runs every figure once, the two variants of a paired one back to back."""
    import matplotlib

    matplotlib.use("Agg")
    warnings.simplefilter("ignore")  # e.g. a store of an older version: timed all the same
    with tempfile.TemporaryDirectory(prefix="dtsgd-long-run-npz-") as scratch:
        return _time_views(path, reps, scratch)


def _time_views(path, reps, scratch):
    fixed, paired, points, name, n = _setups(path, scratch)

    def clock(fn):
        t0 = time.perf_counter()
        fn()
        return time.perf_counter() - t0

    for fn in [*fixed.values(), *(f for fns in paired.values() for f in fns)]:
        fn()  # warm up
    times = {k: [] for k in fixed}
    pairs = {k: ([], []) for k in paired}
    for rep in range(reps):
        for k, fn in fixed.items():
            times[k].append(clock(fn))
        for k, fns in paired.items():
            order = (0, 1) if rep % 2 == 0 else (1, 0)
            for i in order:
                pairs[k][i].append(clock(fns[i]))
    return times, pairs, points, name, n


def extend(path, out, n, batch=1000):
    """A store of ``n`` updates at ``out``: the updates of ``path`` repeated (renumbered),
    written by ``StoreWriter`` in batches, as a recorder's flushes write them."""
    from dtsgd_viz.recording.store import StoreReader, StoreWriter

    reader = StoreReader(path)
    r = reader.read()
    writer = StoreWriter(out, reader.read(0, 0))
    m, lr = len(r), r.hyperparameters.learning_rate
    for start in range(0, n, batch):
        entries = []
        for s in range(start, min(n, start + batch)):
            i = s % m
            stats = {(v.name, k): v.stats[k][i] for v in r.records for k in r.kinds}
            entries.append(
                (
                    s + 1,
                    {"lr": float(lr[i]), "loss": float(r.loss_values[i]), "mismatch": r.mismatch[i], "stats": stats},
                )
            )
        writer.append(entries)
    writer.close()


# ---- the report ----------------------------------------------------------------------------


def print_run(args, run, path, n):
    size, files = store_size(path)
    w, rec = run["windows"], run["rec_times"]
    tenth, plain = max(1, len(w) // 10), statistics.median(run["plain_times"])
    print(
        f"\n{n} updates, {run['n_vars']} variables (`--layers {args.layers} --width "
        f'{args.width}`), 2x4 mesh, `Recorder(mode="stats", path=...)`, `for _ in '
        f"rec.loop(n): step()`; {len(w)} windows of {args.window} blocks of {args.block} "
        f"recorded updates, each followed by a block of {args.block} plain ones\n"
    )
    rows = [
        (
            "time per update, recorded / plain (median over windows)",
            f"{statistics.median(w):.2f}x",
            "the same model, tf-keras DTensor SGD, no hooks",
        ),
        (
            "... first tenth of the windows; last tenth",
            f"{statistics.median(w[:tenth]):.2f}x; {statistics.median(w[-tenth:]):.2f}x",
            "the store grows meanwhile",
        ),
        (
            "mean recorded time per update / median plain",
            f"{statistics.mean(rec) / plain:.2f}x",
            "every flush included",
        ),
        (
            "per update: recorded; plain (absolute)",
            f"{statistics.mean(rec) * 1e3:.1f} ms; {plain * 1e3:.1f} ms",
            f"load average {run['load'][0]:.1f} at the start, {run['load'][1]:.1f} at the end, {os.cpu_count()} CPUs",
        ),
        (
            "recorded loop, wall time",
            f"{run['total']:.0f} s",
            f"plain blocks, tracing (first block {run['first']:.1f} s) and `rec.close()` ({run['close']:.2f} s) in",
        ),
        (
            "store size",
            f"{size / 1e6:.0f} MB in {files} files",
            f"{size / n / run['n_vars']:.0f} bytes per update per variable",
        ),
    ]
    print("| figure | value | assumes |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")


FLOORS = {
    "load_recording": "floor: read every file's bytes",
    "plot_shards + PNG": "floor: plot_shards + PNG of the first 100 updates",
    "LiveMonitor refresh": "floor: LiveMonitor PNG, lines empty",
}


def print_views(path, result, title):
    times, pairs, points, name, n = result
    size, files = store_size(path)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"\n{title}: {n} updates, {size / 1e6:.0f} MB in {files} files; medians of "
        f"{len(next(iter(times.values())))} reps; plot_shards of {name!r} velocity (its "
        "blocks' norm, mean and max |x| lines), Agg; LiveMonitor as built (90 dpi)\n"
    )
    print(
        "| figure | after (decimated; statistics as stored) | before (every point; float64) | before / after | floor |"
    )
    print("|---|---|---|---|---|")
    for k, v in med.items():
        if not k.startswith("floor"):
            print(f"| {k} | {v * 1e3:.1f} ms | | | {_floor(k, v, med)} |")
    for k, (on, off) in pairs.items():
        ratio = statistics.median(b / a for a, b in zip(on, off))
        a = statistics.median(on)
        print(
            f"| {k} | {a * 1e3:.0f} ms | {statistics.median(off) * 1e3:.0f} ms | {ratio:.2f}x | {_floor(k, a, med)} |"
        )
    for k, (on, off) in points.items():
        print(f"| {k} | {on} | {off} | | |")


def _floor(key, value, med):
    floor = FLOORS.get(key)
    if floor is None:
        return ""
    return f"{value / med[floor]:.1f}x {floor[7:]} ({med[floor] * 1e3:.0f} ms)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--updates", type=int, default=100_000)
    ap.add_argument("--layers", type=int, default=25, help="Dense layers (2 variables each)")
    ap.add_argument("--width", type=int, default=32, help="units per hidden layer")
    ap.add_argument("--block", type=int, default=50, help="updates per timed block")
    ap.add_argument("--window", type=int, default=10, help="recorded blocks per plain block")
    ap.add_argument("--reps", type=int, default=5, help="repeats of each read/draw timing")
    ap.add_argument("--dir", default=None, help="folder for the stores (default: tmp)")
    ap.add_argument("--keep", action="store_true", help="keep the stores (their paths printed)")
    ap.add_argument("--views", default=None, help="no training: time reading/drawing this store")
    ap.add_argument("--extend-to", type=int, help="views also on a store this long")
    ap.add_argument(
        "--quick", action="store_true", help="200 updates, 6 layers, blocks of 20, windows of 2, 1 rep (smoke test)"
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.updates, args.layers, args.block, args.window, args.reps = 200, 6, 20, 2, 1
    if 2 * args.layers < 50:
        print(f"--layers {args.layers}: only {2 * args.layers} variables", file=sys.stderr)
    folder = tempfile.mkdtemp(prefix="dtsgd-long-run-", dir=args.dir)
    path = args.views or os.path.join(folder, "run.zarr")
    try:
        if not args.views:
            run = record(args, path)
            print_run(args, run, path, args.updates)
        print_views(path, time_views(path, args.reps), "Reading and drawing the store")
        if args.extend_to:
            longer = os.path.join(folder, "extended.zarr")
            extend(path, longer, args.extend_to)
            print_views(longer, time_views(longer, args.reps), "The updates repeated")
        print(f"\n(stores in {folder}{'' if args.keep else ', removed'})")
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
