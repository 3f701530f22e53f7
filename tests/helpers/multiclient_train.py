"""Train a small model with the real DTensor SGD (Nesterov, ``exact_update=True``) on a
``{"x": 2, "y": 4}`` mesh and save what the Recorder saw. The same script runs in one
process or as every client of a multi-client run; each process saves its recording as
``OUT/part-<client id>.npz`` (a whole recording when single-process), what a
stats-mode Recorder on the same optimizer saw as ``OUT/stats/part-<client id>.npz``, and
a third Recorder streams to the store ``OUT/store`` (each client its own part)::

    python tests/helpers/multiclient_train.py OUT
    dtsgd-viz launch --clients 2 --devices-per-client 4 tests/helpers/multiclient_train.py OUT

With two clients, ``x`` spans them: ``w`` (``[x, y]``) is split across both clients'
devices, ``v`` (``[unsharded, y]``) and ``b`` (replicated) are held by both, and the data
is sharded by batch over ``x``.
"""

import argparse
import os


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--steps", type=int, default=6)
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

    rec, stats = dtsgd_viz.Recorder(), dtsgd_viz.Recorder(mode="stats")
    streamed = dtsgd_viz.Recorder(path=os.path.join(args.out, "store"))
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec, stats, streamed], exact_update=True)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            pred = tf.matmul(Xd, w) + tf.tanh(tf.matmul(Xd, v)) + b
            loss = tf.reduce_mean((pred - Yd) ** 2)
        grads = tape.gradient(loss, [w, v, b])
        opt.apply_gradients(zip(grads, [w, v, b]), loss=loss)
        return loss

    for i in streamed.loop(rec.loop(args.steps)):
        loss = step()
        print(f"client {me.client_id}/{me.num_clients}: step {i + 1} loss {float(dtsgd_viz.to_numpy(loss)):.5f}")
    # w is split across the clients: each holds the blocks of its own devices only
    print(f"client {me.client_id}: holds {len(dtsgd_viz.device_values(w))} blocks of w")
    if me.multi_client:
        try:
            dtsgd_viz.to_numpy(w)
        except ValueError as e:
            print(e)
    os.makedirs(os.path.join(args.out, "stats"), exist_ok=True)
    stats.recording.save(os.path.join(args.out, "stats", f"part-{me.client_id}.npz"))
    streamed.close()
    path = rec.recording.save(os.path.join(args.out, f"part-{me.client_id}.npz"))
    print(f"saved {path}")


if __name__ == "__main__":
    main()
