"""What recording costs: ratios to the plain, un-instrumented DTensor SGD step.

    python benchmarks/overhead.py            # full run (a few minutes on 2 cores)
    python benchmarks/overhead.py --quick    # fewer blocks, for a smoke test

Every variant of a workload runs in this one process, interleaved block by block
(round robin); each ratio is the median over 20 rounds of the variant's block time over
the plain step's block time in the same round, after warm-up, so machine noise hits all
variants alike. Prints a markdown table of ratios; every row names its recorder settings
(mode, kinds, every, max_steps; max_steps=None keeps every recorded step) and how the
step function is driven. Workloads: one 2048x2048 (memory-bound) and one 256x256
parameter, a 2 ms LayoutMap MLP, a compute-bound LayoutMap MLP 256-1024-1024-1024-10
(~40 ms on a quiet 2-core machine) and the tutorials' transformer block (``workloads.py``
builds them).

Rows with a natural floor print it, measured in the same rounds as one more variant of
the plain step: stats rows, one device read of what they record (a per-block
``reduce_sum`` of every p, v and g inside the plain step); full p,v rows, a warm host copy
of the same bytes after the plain step (``np.copyto`` into arrays allocated once; every
10th step for the every-10 rows). "extra / floor's extra" is (ratio - 1) / (floor's ratio
- 1): what the recorder adds to the step over what its floor adds. The peers have none.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

import dtsgd_viz

dtsgd_viz.setup_devices(8)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
import workloads  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

from dtsgd_viz import dtensor as _dtensor  # noqa: E402

NESTEROV = workloads.NESTEROV
# The recorded variants time the default update, which computes what plain tf-keras does
# (the stale-velocity read included): the recorders' warning about it is expected here.
warnings.filterwarnings("ignore", message="Recorder: .* did not follow the", category=RuntimeWarning)
BLOCK = 10  # steps per timed block


class Variant:
    """One way of running the training step; ``step()`` does one update and whatever
    per-step host work the variant implies (flushes included, as ``rec.loop`` would)."""

    def __init__(self, name, step, rec=None, after=None, block=BLOCK, settings="-"):
        self.name, self._step, self.rec, self._after = name, step, rec, after
        self.settings = settings  # what the row assumes: the recorder's arguments
        self.block = block  # steps per timed block (1 for the very slow peers)
        self.times = []
        self.faults = 0  # minor page faults during the timed blocks (fresh memory touched)
        self._last = None
        # recorded variants run as a user would: inside rec.loop, which flushes as it goes
        self._loop = rec.loop(10**12) if rec is not None else None

    def step(self):
        if self._loop is not None:
            next(self._loop)
        self._last = self._step()
        if self._after is not None:
            self._after()

    def end_block(self):
        # DTensor functions run asynchronously: wait for this variant's work to finish
        last = self._last[0] if isinstance(self._last, tuple) else self._last  # (loss, extra)
        _dtensor.unpack(last)

    def close(self):
        if self._loop is not None:
            self._loop.close()  # the loop's final flush


# the workloads live in workloads.py; these names stay for the scripts that import them
_matrix_workload = workloads.matrix
_mlp_workload = workloads.sharded_mlp
_big_mlp_workload = workloads.big_mlp
_transformer_workload = workloads.transformer


PV = workloads.PV
RECORDED = [  # (row, Recorder arguments, off-steps run the step traced without the recorder)
    ("stats p,v,g every step", dict(mode="stats"), False),
    ("full p,v every step", dict(kinds=PV, max_steps=8), False),
    ("full p,v every step, read at flush (buffer_steps=0)", dict(kinds=PV, max_steps=8, buffer_steps=0), False),
    ("full p,v every 10 steps, one traced step", dict(kinds=PV, every=10, max_steps=8), False),
    ("full p,v every 10 steps, off-steps traced without the recorder", dict(kinds=PV, every=10, max_steps=8), True),
]
# each recorded row's floor (a plain-step variant measured in the same rounds)
READ = "floor: one device read of p,v,g (block reduce_sum in the plain step)"
COPY = "floor: warm host copy of p,v (np.copyto into arrays allocated once) after the plain step"
COPY10 = "floor: warm host copy of p,v every 10th plain step"
FLOOR_OF = {
    "stats p,v,g every step": READ,
    "full p,v every step": COPY,
    "full p,v every step, read at flush (buffer_steps=0)": COPY,
    "full p,v every 10 steps, one traced step": COPY10,
    "full p,v every 10 steps, off-steps traced without the recorder": COPY10,
}


class _WarmCopy:
    """After every ``every``-th step: ``np.copyto`` of every parameter's and velocity's
    bytes into host arrays allocated (and touched) once."""

    def __init__(self, variables, every=1):
        self.pairs = [(np.ones(v.shape, np.float32), np.zeros(v.shape, np.float32)) for v in variables for _ in PV]
        self.every, self.calls = every, 0

    def __call__(self):
        self.calls += 1
        if self.calls % self.every == 0:
            for src, dst in self.pairs:
                np.copyto(dst, src)


def _floor_variants(mesh, make, needed):
    out = []
    if READ in needed:
        step, _ = make(workloads.plain_optimizer(mesh), after=workloads.read_floor)
        out.append(Variant(READ, step, settings="tf-keras DTensor SGD + block sums"))
    for name, every in ((COPY, 1), (COPY10, 10)):
        if name in needed:
            step, variables = make(workloads.plain_optimizer(mesh))
            out.append(
                Variant(name, step, after=_WarmCopy(variables, every), settings="tf-keras DTensor SGD + np.copyto")
            )
    return out


def settings(kw, split=False):
    """A row's recorder settings, defaults spelled out."""
    kinds = ",".join(k[0] if k != "velocity" else "v" for k in kw.get("kinds", dtsgd_viz.KINDS))
    out = f"mode={kw.get('mode', 'full')}, kinds={kinds}, every={kw.get('every', 1)}, max_steps={kw.get('max_steps')}"
    if "buffer_steps" in kw:
        out += f", buffer_steps={kw['buffer_steps']}"
    return out + (", `rec.loop(n, step=step)`" if split else ", `rec.loop(n)` + `step()`")


def _variants(mesh, make, rows=None, floors=True):
    out = []

    def plain_opt():
        return tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=mesh, jit_compile=False)

    step, _ = make(plain_opt())
    out.append(Variant("plain step (no recording)", step, settings="tf-keras DTensor SGD, no hooks"))
    if floors:
        out += _floor_variants(
            mesh, make, {FLOOR_OF[label] for label, _, _ in RECORDED if rows is None or label in rows}
        )
    for label, kw, split in RECORDED:
        if rows is not None and label not in rows:
            continue
        rec = dtsgd_viz.Recorder(**kw)
        opt = dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec])
        step, _ = make(opt)
        if split:  # what rec.loop(n, step=step) calls
            step = rec.step_function(step)
        out.append(Variant(label, step, rec=rec, settings=settings(kw, split)))
    if rows is not None:
        return out
    # peers: the naive per-step unpack loop, and TensorBoard histograms
    opt = plain_opt()
    step, variables = make(opt)

    def unpack_all(opt=opt, variables=variables):
        for v in variables:
            for t in dtensor.unpack(v.read_value()):
                t.numpy()
            for t in dtensor.unpack(opt.momentums[opt._index_dict[opt._var_key(v)]].read_value()):
                t.numpy()

    out.append(
        Variant(
            "peer: naive unpack p,v every step",
            step,
            after=unpack_all,
            settings="plain step + dtensor.unpack(...).numpy() of every p, v",
        )
    )
    if importlib.util.find_spec("tensorboard") is None:  # the "bench" extra
        print(
            "TensorBoard is not installed (pip install -e '.[bench]'): its peer is skipped", file=sys.stderr, flush=True
        )
        return out
    opt = plain_opt()
    inner, variables = make(opt)
    writer = tf.summary.create_file_writer(tempfile.mkdtemp(prefix="dtsgd_tb_"))

    @tf.function
    def tb_step():
        loss = inner()
        with writer.as_default():
            for i, v in enumerate(variables):
                tf.summary.histogram(f"param{i}", v.read_value(), step=opt.iterations)
                tf.summary.histogram(f"velocity{i}", opt.momentums[i].read_value(), step=opt.iterations)
        return loss

    # ~100x slower than the step: timed one step per round (20 steps, not 200)
    out.append(
        Variant(
            "peer: tf.summary.histogram p,v every step",
            tb_step,
            block=1,
            settings="plain step + tf.summary.histogram of every p, v in it",
        )
    )
    return out


def _measure(variants, blocks, warmup=2, rotate=False, progress=False):
    """``warmup`` untimed rounds, then ``blocks`` timed ones, each running every variant
    once, round robin; ``rotate``: the order turns by one every round, so that no
    variant always runs right after the same one; ``progress``: each round said on
    stderr. Returns each variant's median."""
    order = list(variants)
    for r in range(warmup + blocks):
        for v in order:
            faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
            start = time.perf_counter()
            for _ in range(v.block):
                v.step()
            v.end_block()
            if r >= warmup:
                v.times.append((time.perf_counter() - start) / v.block)
                v.faults += resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults
        if rotate:
            order = order[1:] + order[:1]
        if progress:
            print(f"round {r + 1 - warmup}/{blocks}" if r >= warmup else "warm-up round", file=sys.stderr, flush=True)
    return {v.name: statistics.median(v.times) for v in variants}


def _paired_ratios(variants):
    """Each variant's median, over the rounds, of its block time / the first variant's
    block time in the same round: a burst of load from other processes slows the blocks
    of one round alike, so pairing them by round keeps it out of the ratio."""
    base = variants[0].times
    return {v.name: statistics.median(t / b for t, b in zip(v.times, base)) for v in variants}


def _graph_nodes(variant):
    """Nodes of the traced step (before DTensor expands each op onto every device)."""
    fn = variant._step
    fn = getattr(fn, "on", fn)  # a split step: the function traced with the recorder
    return len(fn.get_concrete_function().graph.get_operations()) if hasattr(fn, "get_concrete_function") else None


def _copy_time(nbytes, reps=20):
    src = np.ones(nbytes // 4, np.float32)
    dst = np.empty_like(src)
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _fresh_fill_time(nbytes, reps=5):
    """Copying into newly allocated memory: the first touch of each page costs a fault."""
    src = np.ones(nbytes // 4, np.float32)
    times, kept = [], []  # kept alive, as a growing recording keeps them: always new pages
    for _ in range(reps):
        start = time.perf_counter()
        dst = np.empty_like(src)
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
        kept.append(dst)
    return statistics.median(times)


def _import_times(reps=5):
    def t(code):
        times = []
        for _ in range(reps):
            start = time.perf_counter()
            subprocess.run([sys.executable, "-c", code], check=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    light = (
        subprocess.run(
            [sys.executable, "-c", "import sys, dtsgd_viz; print('tensorflow' in sys.modules)"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        == "False"
    )
    return t("import dtsgd_viz"), t("import numpy"), t("pass"), light


def _view_latency(full_recording, moves=30):
    """PathExplorer slider moves over 3 x 10,000 steps, plot_paths of 3 x 10,000 updates
    and plot_shards of the 2048x2048 parameter, each next to a reference drawing measured
    in the same run (plot_paths: the same runs' first 60 updates)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import widget_latency as wl

    from dtsgd_viz.theory import surfaces
    from dtsgd_viz.widgets import PathExplorer

    surface = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
    recs = {name: wl.reference_recording(surface, 10_000, **cfg) for name, cfg in wl.CONFIGS.items()}
    explorer = PathExplorer(recs, surface)
    times = []
    for k in range(moves):
        start = time.perf_counter()
        explorer.slider.value = (k * 337) % 10_000
        times.append(time.perf_counter() - start)
    slider = statistics.median(times)
    full_draw = []
    for _ in range(3):
        start = time.perf_counter()
        fig = dtsgd_viz.plot_paths(recs, surface, step=5000)
        fig.canvas.draw()
        full_draw.append(time.perf_counter() - start)
    short = {name: wl.reference_recording(surface, 60, **cfg) for name, cfg in wl.CONFIGS.items()}
    short_draw = []
    for _ in range(3):
        start = time.perf_counter()
        fig = dtsgd_viz.plot_paths(short, surface, step=5)
        fig.canvas.draw()
        short_draw.append(time.perf_counter() - start)
    shard_times, bare_times = [], []
    values = full_recording.global_values("w", "velocity")[-1]
    for _ in range(3):
        start = time.perf_counter()
        fig = dtsgd_viz.plot_shards(full_recording, "w", "velocity")
        fig.canvas.draw()
        shard_times.append(time.perf_counter() - start)
        start = time.perf_counter()
        bare = Figure()
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(bare)
        bare.add_subplot().imshow(values, cmap="RdBu_r")
        bare.canvas.draw()
        bare_times.append(time.perf_counter() - start)
    return (
        slider,
        statistics.median(full_draw),
        statistics.median(shard_times),
        statistics.median(bare_times),
        statistics.median(short_draw),
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="3 blocks instead of 20 (smoke test)")
    ap.add_argument(
        "--only",
        choices=["2048", "256", "mlp", "bigmlp", "transformer"],
        action="append",
        help="measure these workloads only (repeatable)",
    )
    ap.add_argument("--no-views", action="store_true", help="skip the view and import timings")
    ap.add_argument("--no-floors", action="store_true", help="skip the floor variants")
    args = ap.parse_args(argv)
    blocks = 3 if args.quick else 20
    rows, per_byte = [], []
    builds = [
        ("2048", "2048x2048 on 2x4", lambda: workloads.matrix(2048)),
        ("256", "256x256 on 2x4", lambda: workloads.matrix(256)),
        ("mlp", "sharded MLP (LayoutMap)", workloads.sharded_mlp),
        ("bigmlp", "LayoutMap MLP 256-1024-1024-1024-10", workloads.big_mlp),
        ("transformer", "transformer block (dtsgd_viz.models)", workloads.transformer),
    ]
    full_rec = None
    plain_ms, profile = {}, []
    for key, label, build in builds:
        if args.only and key not in args.only:
            continue
        print(f"measuring {label} ...", file=sys.stderr, flush=True)
        mesh, make, _ = build()
        variants = _variants(mesh, make, floors=not args.no_floors)
        med = _measure(variants, blocks)
        for v in variants:
            v.close()  # the loops' final flushes
        base = med[variants[0].name]
        ratio = _paired_ratios(variants)
        plain_ms[label] = base * 1e3
        for v in variants:
            if v.name.startswith("floor: "):
                continue  # printed in the floor columns of the rows they are the floor of
            floor = FLOOR_OF.get(v.name) if not args.no_floors else None
            rows.append(
                (
                    label,
                    v.name,
                    v.settings,
                    f"{ratio[v.name]:.2f}x",
                    *workloads.floor_cells(ratio[v.name], floor and floor[7:], floor and ratio[floor]),
                )
            )
            steps = blocks * v.block
            profile.append((label, v.name, _graph_nodes(v), v.faults / steps))
        if label.startswith("2048"):
            per_step_bytes = 2 * 2048 * 2048 * 4
            copy = _copy_time(per_step_bytes)
            full = next(v for v in variants if v.name == "full p,v every step")
            start = time.perf_counter()
            r = full_rec = full.rec.recording  # assembles the kept steps: one host copy
            build = time.perf_counter() - start
            per_byte.append(
                (
                    label,
                    "reading the recording (assembling the kept steps) per byte / np.copyto per byte",
                    full.settings,
                    f"{build / len(r) / copy:.2f}x",
                )
            )
            per_byte.append(
                (
                    label,
                    "filling fresh memory / np.copyto into warm memory (same bytes)",
                    "-",
                    f"{_fresh_fill_time(per_step_bytes) / copy:.2f}x",
                )
            )
            raw = len(r) * per_step_bytes + r.initial("w").nbytes
            per_byte.append((label, "recorded bytes / raw unique shard bytes", full.settings, f"{r.nbytes / raw:.2f}x"))
    views = None
    if not args.no_views and full_rec is not None:
        print("measuring view latency ...", file=sys.stderr, flush=True)
        views = _view_latency(full_rec)
        imports = _import_times()
    print()
    print(
        "Every workload's step function is a `tf.function` computing the loss, its "
        "gradients (`tf.GradientTape`) and one `apply_gradients` of Nesterov SGD "
        f"({NESTEROV}); recorded rows use `dtsgd_viz.SGD(hooks=[rec])`, the plain row "
        "tf-keras' DTensor SGD. max_steps=None keeps every recorded step on the host. A row's "
        "floor is a plain-step variant measured in the same rounds; extra / floor's extra = "
        "(ratio - 1) / (floor / plain - 1) ('-': no floor, or it adds < 0.5%).\n"
    )
    print(
        workloads.table(
            [
                "workload",
                "measure",
                "recorder settings",
                "ratio to plain",
                "floor",
                "floor / plain",
                "extra / floor's extra",
            ],
            rows,
        )
    )
    print()
    print(workloads.table(["workload", "measure", "recorder settings", "ratio"], per_byte) if per_byte else "")
    if views:
        slider, full_draw, shards, bare, short_draw = views
        t_import, t_numpy, t_pass, light = imports
        print(
            f"| views | PathExplorer slider move, 3 x 10,000 steps / one full plot_paths draw | - | "
            f"{slider / full_draw:.3f}x ({slider * 1e3:.1f} ms median) |"
        )
        print(
            f"| views | plot_paths (built and drawn) of 3 x 10,000 updates / of 3 x 60 | - | "
            f"{full_draw / short_draw:.2f}x ({full_draw * 1e3:.0f} ms median) |"
        )
        print(
            f"| views | plot_shards of the 2048x2048 velocity / a bare imshow of it | - | "
            f"{shards / bare:.2f}x ({shards * 1e3:.0f} ms median) |"
        )
        print(
            f"| import | `import dtsgd_viz` / `import numpy` (process start included) | - | "
            f"{t_import / t_numpy:.2f}x ({t_import - t_pass:.2f} s over an empty interpreter; "
            f"TensorFlow imported: {not light}) |"
        )
    print(
        "\nProfile: nodes of the traced step function, and minor page faults per step (each a "
        "page of fresh memory touched; holding device buffers makes TensorFlow allocate "
        "new ones)\n"
    )
    print("| workload | variant | traced graph nodes | page faults / step |\n|---|---|---|---|")
    for label, name, nodes, faults in profile:
        print(f"| {label} | {name} | {nodes if nodes is not None else '-'} | {faults:.0f} |")
    print(
        f"\nratios: median over {blocks} rounds of (a block of {BLOCK} steps of the variant / "
        f"the plain step's block in the same round) (TensorBoard: single steps), variants "
        f"interleaved round robin; {os.cpu_count()} CPUs; python {sys.version.split()[0]}, "
        f"tensorflow {tf.__version__}"
    )
    print("for context, the plain step took: " + ", ".join(f"{label} {ms:.1f} ms" for label, ms in plain_ms.items()))


if __name__ == "__main__":
    main()
