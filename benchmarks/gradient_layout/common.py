"""Shared pieces: the issue's 40-layer Dense(64) LayoutMap MLP on a 2x4 mesh (80
variables), interleaved block timing, paired ratios. Run from this folder."""

from __future__ import annotations

import os
import statistics
import sys
import time

import numpy as np

import dtsgd_viz

dtsgd_viz.setup_devices(8)

import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

from dtsgd_viz import dtensor as _dtensor  # noqa: E402

NESTEROV = dict(learning_rate=0.01, momentum=0.9, nesterov=True)
LAYERS, WIDTH = int(os.environ.get("LAYERS", "40")), 64
LAYOUT = os.environ.get("LAYOUT", "col")  # how the kernels are split (build_model)
BATCH = int(os.environ.get("BATCH", "256"))
MESH = dtsgd_viz.make_mesh({"batch": 2, "model": 4})

_rng = np.random.default_rng(0)
_x = _rng.normal(size=(BATCH, WIDTH)).astype(np.float32)
_y = np.tanh(_x @ _rng.normal(size=(WIDTH, WIDTH)).astype(np.float32) / 8)
_data = dtensor.Layout(["batch", "unsharded"], MESH)
XB, YB = _dtensor.put(_x, _data), _dtensor.put(_y, _data)


def build_model(seed=0):
    """40 x Dense(64): kernels alternately split on their output / input dim over
    ``model`` (Megatron style), biases split where the output dim is; 80 variables."""
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=MESH)
    u, m = "unsharded", "model"
    for i in range(LAYERS):
        spec = {"megatron": [u, m] if i % 2 == 0 else [m, u], "col": [u, m], "row": [m, u], "rep": [u, u]}[LAYOUT]
        lm[f"l{i}.*kernel"] = dtensor.Layout(spec, MESH)
        lm[f"l{i}.*bias"] = dtensor.Layout([spec[1]], MESH)
    with lm.scope():
        tf_keras.utils.set_random_seed(seed)
        model = tf_keras.Sequential(
            [
                tf_keras.layers.Dense(
                    WIDTH,
                    activation="relu" if i < LAYERS - 1 else None,
                    name=f"l{i}",
                    **({"input_shape": (WIDTH,)} if i == 0 else {}),
                )
                for i in range(LAYERS)
            ]
        )
    assert len(model.trainable_variables) == 2 * LAYERS
    return model


def plain_opt(**kw):
    return tf_keras.dtensor.experimental.optimizers.SGD(**NESTEROV, mesh=MESH, **kw)


def make_step(opt, model=None, pass_loss=True, wrap=None):
    """A tf.function step: loss, gradients, apply_gradients. ``wrap(opt, grads, vars)``
    (optional) replaces the apply_gradients call."""
    model = model or build_model()
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(XB) - YB) ** 2)
        grads = tape.gradient(loss, variables)
        if wrap is not None:
            wrap(opt, grads, variables)
        elif pass_loss:
            opt.apply_gradients(zip(grads, variables), loss=loss)
        else:
            opt.apply_gradients(zip(grads, variables))
        return loss

    step.model, step.opt = model, opt
    return step


class Variant:
    def __init__(self, name, step, rec=None):
        self.name, self.step_fn, self.rec = name, step, rec
        self.times, self.first = [], None
        self._loop = rec.loop(10**12) if rec is not None else None
        self._last = None

    def step(self):
        if self._loop is not None:
            next(self._loop)
        self._last = self.step_fn()

    def wait(self):
        _dtensor.unpack(self._last)

    def close(self):
        if self._loop is not None:
            self._loop.close()


def first_calls(variants):
    for v in variants:
        t = time.perf_counter()
        v.step()
        v.wait()
        v.first = time.perf_counter() - t
        print(f"  first call {v.name}: {v.first:.2f} s", file=sys.stderr, flush=True)


def measure(variants, rounds=15, block=10, warmup=2):
    for _ in range(warmup):
        for v in variants:
            for _ in range(block):
                v.step()
            v.wait()
    for _ in range(rounds):
        for v in variants:
            t = time.perf_counter()
            for _ in range(block):
                v.step()
            v.wait()
            v.times.append((time.perf_counter() - t) / block)
    for v in variants:
        v.close()


def report(variants, title=""):
    base = variants[0]
    print(
        f"\n{title}\n| variant | step / {base.name} (median of paired rounds) | "
        f"first call / {base.name}'s | traced nodes |\n|---|---|---|---|"
    )
    for v in variants:
        r = statistics.median(t / b for t, b in zip(v.times, base.times))
        f = (v.first / base.first) if v.first and base.first else float("nan")
        print(f"| {v.name} | {r:.2f}x | {f:.2f}x | {nodes(v.step_fn)} |")
    print(
        f"(base median step {statistics.median(base.times) * 1e3:.1f} ms; {os.cpu_count()} CPUs, tf {tf.__version__})",
        flush=True,
    )


def nodes(fn, with_functions=True):
    g = fn.get_concrete_function().graph.as_graph_def()
    n = len(g.node)
    if with_functions:
        n += sum(len(f.node_def) for f in g.library.function)
    return n


def op_counts(fn):
    from collections import Counter

    g = fn.get_concrete_function().graph.as_graph_def()
    c = Counter(n.op for n in g.node)
    for f in g.library.function:
        c.update(n.op for n in f.node_def)
    return c
