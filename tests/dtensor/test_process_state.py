"""dtsgd_viz leaves no process state that breaks later DTensor work (issue #9, item 8).

tf-keras' DTensor tests reset TensorFlow's eager context and build a fresh 2x2 CPU mesh
for every test. Run after an instrumented SGD, that set-up must work as it does after
tf-keras' own SGD. The sequence needs a process of its own: it resets the context, and
this test process keeps the 8 devices ``conftest.py`` made.
"""

import os
import subprocess
import sys
import textwrap

import pytest

SEQUENCE = textwrap.dedent("""
    import numpy as np
    import tensorflow as tf
    from tf_keras.dtensor.experimental.optimizers import Adam
    from tf_keras.src.dtensor import test_util

    import dtsgd_viz

    # 1. The instrumented SGD without a mesh, eagerly and in a tf.function.
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, hooks=[rec])
    var = tf.Variable(np.ones((4, 4), np.float32))
    opt.apply_gradients([(tf.ones((4, 4)), var)])
    tf.function(lambda: opt.apply_gradients([(tf.ones((4, 4)), var)]))()
    assert list(rec.recording.steps) == [1, 2], rec.recording.steps

    # 2. A fresh 2x2 CPU mesh as tf-keras' DTensor tests make it (the eager context is
    #    reset and the CPU split again), and a DTensor Adam on it.
    dtensor = tf.experimental.dtensor
    ids = test_util.create_device_ids_array((2, 2))
    mesh = test_util.DTensorBaseTest.configTestMesh({"CPU": dtensor.Mesh(
        ["X", "Y"], ids, np.ravel(ids).tolist(), test_util.create_device_list((2, 2), "CPU"))})
    adam = Adam(mesh=mesh)
    init = dtensor.copy_to_mesh(tf.ones((4, 4)), dtensor.Layout.replicated(mesh, rank=2))
    weights = dtensor.DVariable(init, trainable=True)
    adam.apply_gradients([(tf.ones_like(init), weights)])
    print("adam iterations:", int(adam.iterations.numpy()))
""")


@pytest.mark.slow
def test_dtensor_adam_on_a_fresh_mesh_after_the_instrumented_sgd():
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    done = subprocess.run([sys.executable, "-c", SEQUENCE], capture_output=True, text=True, env=env, timeout=300)
    # before the fix: NotFoundError: Could not find device for node: {{node Relayout}}
    assert done.returncode == 0, done.stderr[-3000:]
    assert "adam iterations: 1" in done.stdout
