"""Train a small model with the real DTensor SGD (Nesterov, ``exact_update=True``) on a
``{"x": 2, "y": 4}`` mesh spanning the clients of a multi-client run, streaming what a
``Recorder(path=STORE)`` sees and committing it after every update, then wait to be
killed. Client 1 commits only the first ``--commit-until`` updates: it trains the others
too (each update needs every client) but leaves them in its device buffers, so when
every client has trained ``--steps`` updates client 0 has committed them all and client 1
fewer, as when a run is killed between two clients' commits::

    dtsgd-viz launch --clients 2 --devices-per-client 4 tests/helpers/multiclient_lag.py \\
        STORE --steps 15 --commit-until 13 --pause 0.3

With two clients, ``x`` spans them: ``w`` (``[x, y]``) is split across both clients'
devices, ``v`` (``[unsharded, y]``) and ``b`` (replicated) are held by both.
"""

import argparse
import time


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("store")
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--commit-until", type=int, default=13)
    parser.add_argument("--pause", type=float, default=0.0, help="seconds between updates")
    args = parser.parse_args(argv)

    import numpy as np

    import dtsgd_viz

    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})  # first: it sets up (and connects) devices
    me = dtsgd_viz.client_info()

    import tensorflow as tf
    from tensorflow.experimental import dtensor

    rng = np.random.default_rng(0)
    X = rng.normal(size=(16, 8)).astype(np.float32)
    Y = rng.normal(size=(16, 16)).astype(np.float32)
    batch = dtensor.Layout(["x", "unsharded"], mesh)
    Xd, Yd = dtsgd_viz.shard(X, batch), dtsgd_viz.shard(Y, batch)
    w = dtsgd_viz.variable(
        0.3 * rng.normal(size=(8, 16)).astype(np.float32), dtensor.Layout(["x", "y"], mesh), name="w"
    )
    v = dtsgd_viz.variable(
        0.3 * rng.normal(size=(8, 16)).astype(np.float32), dtensor.Layout(["unsharded", "y"], mesh), name="v"
    )
    b = dtsgd_viz.variable(np.zeros(16, np.float32), dtensor.Layout.replicated(mesh, 1), name="b")
    rec = dtsgd_viz.Recorder(path=args.store)
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            pred = tf.matmul(Xd, w) + tf.tanh(tf.matmul(Xd, v)) + b
            loss = tf.reduce_mean((pred - Yd) ** 2)
        grads = tape.gradient(loss, [w, v, b])
        opt.apply_gradients(zip(grads, [w, v, b]), loss=loss)
        return loss

    for i in range(args.steps):
        step()
        if me.client_id == 0 or i + 1 <= args.commit_until:
            rec.flush()  # writes and commits the updates so far
        print(f"client {me.client_id}/{me.num_clients}: update {i + 1}", flush=True)
        time.sleep(args.pause)
    print(f"client {me.client_id}: trained {args.steps} updates; waiting to be killed", flush=True)
    time.sleep(3600)


if __name__ == "__main__":
    main()
