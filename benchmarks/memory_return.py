"""What a full-mode recording holds in memory, and whether the process gets it back.

    python benchmarks/memory_return.py                  # 4096x4096, about a minute
    python benchmarks/memory_return.py --n 2048 --layout unsharded,model

Workload: one n x n float32 parameter on a 2x4 virtual CPU mesh, a quadratic loss,
momentum SGD in a ``tf.function``, recorded by ``Recorder(buffer_steps=4)`` (parameter,
velocity, gradient) over 4 updates driven by ``rec.loop``, then ``rec.recording`` read.
Each row runs in a fresh process: first the same step without a recorder (its optimizer
then deleted: the baseline holds what training alone leaves), then ``--repeats``
recorded runs, each followed by deleting the recording, the recorder, the optimizer and
the step and a ``gc.collect()``. Memory is the process's resident set
(``/proc/self/status``: VmRSS now, VmHWM the peak since the run began, reset through
``/proc/self/clear_refs``):

- data: the recording's bytes (``Recording.nbytes``, each distinct block once);
- staging: the ring on the devices, ``buffer_steps`` x 3 tensors laid out like the
  parameter (a block replicated over ``batch`` is held twice);
- peak over baseline, next to data + staging, the most a recorder should hold;
- after: what stays once everything is deleted, over the baseline;
- collected: whether the ``Recorder`` was collected (a weak reference to it is dead).

Rows: ``tf pool`` (TensorFlow's default: its oneDNN CPU allocator keeps every large
buffer it frees in a BFC pool for the process's later tensors, never returning it to
the system) and ``system`` (``TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1``: ``malloc``, whose free
arena memory dtsgd_viz hands back with ``malloc_trim`` once a recorder's device buffers
are collected; see ``dtsgd_viz/recorder/host_memory.py``). A ``no recorder`` row is the
same training run once more after the baseline: what the step alone adds.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import weakref

GIB = 2**30
ALLOCATOR = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"  # dtsgd_viz.dtensor.devices.SYSTEM_ALLOCATOR_ENV
ROWS = {"tf pool": {ALLOCATOR: None}, "system": {ALLOCATOR: "1"}}


def _status() -> tuple[int, int]:
    """(VmRSS, VmHWM) in bytes."""
    got = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                got[key] = int(value.split()[0]) * 1024
    return got["VmRSS"], got["VmHWM"]


def _reset_peak() -> None:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # VmHWM := VmRSS


def child(n: int, layout: list[str], steps: int, slots: int, repeats: int) -> dict:
    """Runs in the measured process: the baseline, then ``repeats`` recorded runs."""
    import numpy as np

    import dtsgd_viz

    dtsgd_viz.setup_devices(8)
    import tensorflow as tf
    from tensorflow.experimental import dtensor

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    lay = dtensor.Layout(layout, mesh)
    w = dtsgd_viz.variable(np.zeros((n, n), np.float32), lay, name="w")
    C = dtsgd_viz.shard(np.full((n, n), 0.5, np.float32), lay)

    def run(hooks):
        opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=hooks, exact_update=True)

        @tf.function
        def step():
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(C * (w - 1.0) ** 2 / 2)
            opt.apply_gradients(zip(tape.gradient(loss, [w]), [w]), loss=loss)

        return opt, step

    opt, step = run([])
    for _ in range(steps):
        step()
    del opt, step
    gc.collect()
    baseline = _status()[0]
    geometry = dtsgd_viz.shard_geometry((n, n), dtsgd_viz.layout_of(w))
    device_bytes = geometry.num_devices * int(np.prod(geometry.local_shape)) * 4
    out = {"baseline": baseline, "runs": []}
    _reset_peak()  # training alone again: what the same step costs without a recorder
    opt, step = run([])
    for _ in range(steps):
        step()
    del opt, step
    gc.collect()
    out["plain"] = {"peak": _status()[1], "after": _status()[0]}
    for _ in range(repeats):
        _reset_peak()
        rec = dtsgd_viz.Recorder(buffer_steps=slots)
        opt, step = run([rec])
        for _ in rec.loop(steps):
            step()
        r = rec.recording
        data, staging = r.nbytes, rec.buffer_steps * len(rec.kinds) * device_bytes
        peak = _status()[1]
        alive = weakref.ref(rec)
        del r, rec, opt, step
        gc.collect()
        out["runs"].append(
            {"data": data, "staging": staging, "peak": peak, "after": _status()[0], "collected": alive() is None}
        )
    return out


def measure(n=4096, layout=("batch", "model"), steps=4, slots=4, repeats=3, env=None, timeout=900) -> dict:
    """``child``'s numbers, from a fresh process with ``env`` added to the environment
    (a value None: that variable removed)."""
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--child",
        "--n",
        str(n),
        "--layout",
        ",".join(layout),
        "--steps",
        str(steps),
        "--slots",
        str(slots),
        "--repeats",
        str(repeats),
    ]
    env = {**os.environ, **(env or {})}
    proc = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={k: v for k, v in env.items() if v is not None},
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(f"the measured process failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _gib(x) -> str:
    return f"{x / GIB:.2f}"


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=4096)
    p.add_argument("--layout", default="batch,model")
    p.add_argument("--steps", type=int, default=4)
    p.add_argument("--slots", type=int, default=4)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    layout = a.layout.split(",")
    if a.child:
        print(json.dumps(child(a.n, layout, a.steps, a.slots, a.repeats)))
        return
    print(
        f"{a.n}x{a.n} float32 laid out {layout} on batch=2, model=4; ring of {a.slots}, {a.steps} updates recorded; GiB"
    )
    header = (
        "allocator",
        "run",
        "baseline",
        "data",
        "staging",
        "peak - baseline",
        "data + staging",
        "after - baseline",
        "collected",
    )
    rows = []
    for name, env in ROWS.items():
        got = measure(a.n, layout, a.steps, a.slots, a.repeats, env)
        base = got["baseline"]
        rows.append(
            (
                name,
                "no recorder",
                _gib(base),
                "-",
                "-",
                _gib(got["plain"]["peak"] - base),
                "-",
                _gib(got["plain"]["after"] - base),
                "-",
            )
        )
        for i, r in enumerate(got["runs"], start=1):
            rows.append(
                (
                    name,
                    str(i),
                    _gib(base),
                    _gib(r["data"]),
                    _gib(r["staging"]),
                    _gib(r["peak"] - base),
                    _gib(r["data"] + r["staging"]),
                    _gib(r["after"] - base),
                    "yes" if r["collected"] else "NO",
                )
            )
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    for r in (header, *rows):
        print("  ".join(v.rjust(w) for v, w in zip(r, widths)))


if __name__ == "__main__":
    main()
