"""How long the end of a tf.data iterator takes, with tf.data's autotuning on (the
default) and off (``dtsgd_viz.models.untuned()``): plain TensorFlow, no dtsgd_viz.

    python benchmarks/iterator_end.py              # about a minute on 2 cores
    python benchmarks/iterator_end.py --rounds 20 --live 2

Each round makes one iterator of each kind, in turn: a plain ``tf.data.Dataset`` of an
in-memory array (batched, repeating) and a ``dtensor.DTensorDataset`` over it on a
``{"batch": 2, "model": 4}`` mesh of 8 virtual CPU devices (what ``model.fit`` iterates
for a ``LayoutMap`` model), each with autotuning on and off. Each iterator yields 3
batches, lives ``--live`` seconds (as an iterator does between ``fit``'s first batch and
its end), and is deleted; the deletion is timed. With autotuning on, TensorFlow 2.21's
tuning thread is not woken when the iterator ends, and the deletion waits (CPU idle) for
the rest of the thread's current tuning period: up to seconds. The table gives, per
kind, the median and the longest deletion and how many took over 0.1 s.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import tensorflow as tf
from tensorflow.experimental import dtensor


def _options(autotune: bool) -> tf.data.Options:
    options = tf.data.Options()
    options.autotune.enabled = autotune
    return options


def _datasets(mesh, autotune: bool) -> dict:
    x = np.random.default_rng(0).normal(size=(256, 4)).astype(np.float32)
    plain = tf.data.Dataset.from_tensor_slices((x, x)).batch(8, drop_remainder=True).repeat()
    plain = plain.with_options(_options(autotune))
    layout = dtensor.Layout(["batch", "unsharded"], mesh)
    on_mesh = dtensor.DTensorDataset(
        plain,
        mesh=mesh,
        layouts=(layout, layout),
        global_batch_size=16,
        batch_dim="batch",
        dataset_already_batched=True,
    )
    return {"tf.data.Dataset": plain, "DTensorDataset": on_mesh}


def _end_time(dataset, live: float) -> float:
    it = iter(dataset)
    for _ in range(3):
        next(it)
    time.sleep(live)
    start = time.perf_counter()
    del it
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--live", type=float, default=1.0, help="seconds each iterator lives before its end")
    args = parser.parse_args()
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 8)
    mesh = dtensor.create_mesh([("batch", 2), ("model", 4)], device_type="CPU")
    kinds = {(name, tuned): ds for tuned in (True, False) for name, ds in _datasets(mesh, tuned).items()}
    times: dict = {k: [] for k in kinds}
    for _ in range(args.rounds):
        for key, ds in kinds.items():  # interleaved: a machine that slows down slows them all
            times[key].append(_end_time(ds, args.live))
    print(f"{args.rounds} iterators of each kind, each living {args.live:g} s before its end")
    print(f"(TensorFlow {tf.__version__})")
    print()
    print("| dataset | autotune | median end | longest end | ends over 0.1 s |")
    print("|---|---|---|---|---|")
    for (name, tuned), ts in times.items():
        slow, state = sum(t > 0.1 for t in ts), "on" if tuned else "off"
        print(f"| {name} | {state} | {statistics.median(ts):.3f} s | {max(ts):.2f} s | {slow} of {len(ts)} |")


if __name__ == "__main__":
    main()
