"""A store written without TensorFlow: host entries made with numpy, as a recorder's flush
would hand them to ``StoreWriter``. Run as a script, it writes batches into a store at a
steady pace (the process the ``LiveMonitor`` tests follow)::

    python tests/helpers/synthetic_store.py STORE --batches 6 --per-batch 3 --pause 0.3
"""

from __future__ import annotations

import argparse
import time
import types

import numpy as np

from dtsgd_viz.geometry import shard_geometry
from dtsgd_viz.recorder.hostlog import assemble, entry
from dtsgd_viz.recording import Part
from dtsgd_viz.recording.store import StoreWriter
from dtsgd_viz.specs import LayoutSpec, MeshSpec

MESH = MeshSpec.create({"x": 2, "y": 4})
KINDS = ("param", "velocity", "grad")


def watched():
    out = []
    for name, shape, specs in (("w", (8, 8), ("x", "y")), ("b", (8,), ("unsharded",))):
        geom = shard_geometry(shape, LayoutSpec(specs, MESH))
        # held: where each block's copies are (one process holds every device)
        held = tuple((g, tuple(devices)) for g, devices in enumerate(geom.replica_groups))
        out.append(types.SimpleNamespace(name=name, geometry=geom, dtype="float32", layout=geom.layout, held=held))
    return out


def entries(steps, mode="full", seed=0):
    """Host entries of ``steps``: the values of step s are a seeded function of s."""
    ws, out = watched(), []
    for s in steps:
        rng = np.random.default_rng(seed * 100_003 + int(s))
        data = {}
        for w in ws:
            for k in KINDS:
                if mode == "full":
                    g = rng.normal(size=w.geometry.global_shape).astype(np.float32) * s
                    data[(w.name, k)] = [g[b] for b in w.geometry.blocks]
                else:
                    data[(w.name, k)] = rng.normal(size=(w.geometry.num_unique, 3)).astype(np.float32)
        out.append((int(s), entry((s, 0.1, 1.0 / s), data, ws, KINDS, mode)))
    return out


def header(mode="full"):
    ws = watched()
    initial = [np.zeros(w.geometry.global_shape, np.float32) for w in ws]
    return assemble(
        [], ws, KINDS, mode, initial, mesh=MESH, momentum=0.9, nesterov=True, dropped=[], applied_momentum=0.9
    )


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("store")
    ap.add_argument("--mode", default="full")
    ap.add_argument("--batches", type=int, default=6)
    ap.add_argument("--per-batch", type=int, default=3)
    ap.add_argument("--pause", type=float, default=0.3)
    ap.add_argument("--no-close", action="store_true")
    ap.add_argument(
        "--close-after",
        default=None,
        help="wait until this file exists before closing the store (so a test "
        "can act while the store is still open, however slow the machine)",
    )
    args = ap.parse_args(argv)
    writer = StoreWriter(args.store, header(args.mode))
    k = args.per_batch
    for b in range(args.batches):
        time.sleep(args.pause)
        writer.append(entries(range(b * k + 1, b * k + k + 1), args.mode))
    time.sleep(args.pause)
    if args.close_after:
        import os

        deadline = time.monotonic() + 120
        while not os.path.exists(args.close_after) and time.monotonic() < deadline:
            time.sleep(0.02)
    if not args.no_close:
        writer.close()


if __name__ == "__main__":
    main()


# ---- a store of two clients' parts (x spans the two clients) ----


def client_watched(client):
    devices = tuple(range(4 * client, 4 * client + 4))  # x spans the two clients
    out = []
    for name, shape, specs in (("w", (8, 8), ("x", "y")), ("b", (8,), ("unsharded",))):
        geom = shard_geometry(shape, LayoutSpec(specs, MESH))
        out.append(
            types.SimpleNamespace(
                name=name, geometry=geom, dtype="float32", layout=geom.layout, held=geom.held_groups(devices)
            )
        )
    return out, devices


def client_header(client):
    ws, devices = client_watched(client)
    initial = [np.zeros(w.geometry.global_shape, np.float32) for w in ws]
    return assemble(
        [],
        ws,
        KINDS,
        "full",
        initial,
        mesh=MESH,
        momentum=0.9,
        nesterov=True,
        dropped=[],
        applied_momentum=0.9,
        part=Part(client, 2, devices),
    )


def client_entries(client, steps, seed=0):
    """What client ``client`` records of the updates ``steps`` (its devices' shards)."""
    ws, devices = client_watched(client)
    out = []
    for s in steps:
        rng = np.random.default_rng(seed * 100_003 + int(s))
        data = {}
        for w in ws:
            for k in KINDS:
                g = rng.normal(size=w.geometry.global_shape).astype(np.float32) * s
                data[(w.name, k)] = [g[w.geometry.blocks[d]] for d in devices]
        out.append((int(s), entry((s, 0.1, 1.0 / s), data, ws, KINDS, "full")))
    return out
