"""Report the collectives of one training step of a model-sharded MLP 24-64-32 on a
``{"batch": 2, "model": 4}`` mesh (kernels ``[unsharded, model]``, biases ``[model]``,
data by ``batch``), with the real DTensor SGD. Each process writes
``OUT/first-<client id>.json`` (the first report: it runs the step once, restoring the
variables), ``OUT/second-<client id>.json`` (a report of the compiled step: not run) and
``OUT/iterations-<client id>.txt`` (the optimizer's step count after both reports)::

    python tests/helpers/multiclient_comm.py OUT
    dtsgd-viz launch --clients 2 --devices-per-client 4 tests/helpers/multiclient_comm.py OUT

With two clients each holds 4 of the mesh's 8 devices (client 0 ids 0-3, client 1 ids
4-7): the ``batch`` groups ``(0, 4)``, ... span the clients. A report that runs the step
is collective: every client makes it, in the same order.
"""

import argparse
import os

SHAPES = {"w1": (24, 64), "b1": (64,), "w2": (64, 32), "b2": (32,)}
SPECS = {"w1": ("unsharded", "model"), "b1": ("model",), "w2": ("unsharded", "model"), "b2": ("model",)}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    args = parser.parse_args(argv)

    import numpy as np

    import dtsgd_viz

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})  # first: it connects the clients
    me = dtsgd_viz.client_info()

    import tensorflow as tf
    from tensorflow.experimental import dtensor

    rng = np.random.default_rng(0)
    batch = dtensor.Layout(["batch", "unsharded"], mesh)
    x = dtsgd_viz.shard(rng.normal(size=(16, 24)).astype(np.float32), batch)
    y = dtsgd_viz.shard(rng.normal(size=(16, 32)).astype(np.float32), batch)
    params = [
        dtsgd_viz.variable(
            0.2 * rng.normal(size=SHAPES[n]).astype(np.float32), dtensor.Layout(list(SPECS[n]), mesh), name=n
        )
        for n in SHAPES
    ]
    w1, b1, w2, b2 = params
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh)

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            pred = tf.matmul(tf.nn.relu(tf.matmul(x, w1) + b1), w2) + b2
            loss = tf.reduce_mean((pred - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, params), params), loss=loss)
        return loss

    os.makedirs(args.out, exist_ok=True)
    first = dtsgd_viz.communication(step)  # compiles by running it (every client at once)
    second = dtsgd_viz.communication(step)
    first.save(os.path.join(args.out, f"first-{me.client_id}.json"))
    second.save(os.path.join(args.out, f"second-{me.client_id}.json"))
    with open(os.path.join(args.out, f"iterations-{me.client_id}.txt"), "w") as f:
        f.write(str(int(dtsgd_viz.to_numpy(opt.iterations))))
    print(
        f"client {me.client_id}/{me.num_clients}: {len(first.collectives)} collectives, "
        f"ran_step {first.ran_step} then {second.ran_step}"
    )


if __name__ == "__main__":
    main()
