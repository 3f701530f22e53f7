"""model.fit with steps_per_execution: the Keras callback keeps every update and is not
reported as slow (issue #15, item 2).

tf-keras runs ``steps_per_execution`` updates inside one call and calls the callback once
per call; it times ``on_train_batch_end`` over the first five calls of each fit (the
first call of a fresh step function also traces it, which hides any callback), so each
run starts with a one-execution fit that traces the step, and the fit after it is long
enough for tf-keras to make its check with steps_per_execution=10.
"""

import logging
import warnings

import numpy as np
import pytest
from helpers.builders import fit_dataset
from helpers.builders import layoutmap_mlp as _mlp
from helpers.builders import regression_data as _data

import dtsgd_viz

FITS = [(1, 10), (2, 25)]  # (epochs, steps_per_epoch) of each model.fit: 60 updates
STEPS = sum(e * n for e, n in FITS)


def _train(steps_per_execution=None):
    """The LayoutMap MLP on a DTensorDataset under model.fit with the default Recorder."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = _mlp(mesh)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.02, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True)
    x, y = _data()
    dds = fit_dataset(mesh, x, y)
    model.compile(optimizer=opt, loss="mse", steps_per_execution=steps_per_execution)
    callback = rec.keras_callback()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for epochs, steps in FITS:
            model.fit(dds, epochs=epochs, steps_per_epoch=steps, verbose=0, callbacks=[callback])
        recording = rec.recording
    ours = [str(w.message) for w in caught if "Recorder" in str(w.message)]
    return recording, ours


@pytest.fixture(scope="module")
def plain():
    recording, ours = _train()
    assert ours == []
    return recording


@pytest.mark.parametrize("steps_per_execution", [1, 2, 10])
@pytest.mark.slow
def test_fit_keeps_every_update_whatever_steps_per_execution(plain, steps_per_execution, caplog):
    caplog.set_level(logging.WARNING, logger="tensorflow")
    recording, ours = _train(steps_per_execution)
    assert ours == []  # neither overwritten steps nor a stale-velocity warning
    assert list(recording.steps) == list(range(1, STEPS + 1))
    assert len(recording.dropped_steps) == 0
    assert list(plain.steps) == list(recording.steps)
    for name in recording.variables:
        for kind in ("param", "velocity", "grad"):
            np.testing.assert_array_equal(recording.global_values(name, kind), plain.global_values(name, kind))
    np.testing.assert_array_equal(recording.loss, plain.loss)
    slow = [r.getMessage() for r in caplog.records if "is slow" in r.getMessage()]
    assert slow == []


@pytest.mark.slow
def test_the_callback_sizes_the_ring_before_the_first_trace():
    """With k updates per call the ring holds two calls' worth (and the step a periodic
    flush leaves) when that fits the staging budget; an asked-for smaller ring is raised
    to one call's worth, with a warning; a ring built before the callback saw the model
    cannot grow, and says so."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    variables = _mlp(mesh).trainable_variables

    def built(k, **kw):
        rec = dtsgd_viz.Recorder(**kw)
        rec._hold_executions(k)  # what the callback does at on_train_begin
        dtsgd_viz.SGD(0.02, momentum=0.9, mesh=mesh, hooks=[rec]).build(variables)
        return rec

    assert built(1).buffer_steps == 8  # the default
    assert built(2).buffer_steps == 8  # already holds two calls
    assert built(10).buffer_steps == 21
    assert built(10, kinds=("grad",)).buffer_steps == 20  # a periodic flush leaves none
    assert built(10, every=3).buffer_steps == 8  # 7 recorded steps in two calls, + 1
    with pytest.warns(RuntimeWarning, match=r"buffer_steps=4\) cannot hold the 10 updates"):
        assert built(10, buffer_steps=4).buffer_steps == 11
    with pytest.warns(RuntimeWarning, match="buffer_steps=0"):
        assert built(3, buffer_steps=0).buffer_steps == 4

    rec = built(1)
    rec._make_staging()
    with pytest.warns(
        RuntimeWarning,
        match=r"built .* for 7 updates between flushes, fewer "
        r"than the 10 .*buffer_steps=11",
    ):
        rec._hold_executions(10)
