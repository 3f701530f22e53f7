"""``Recorder.keras_callback``: a tf-keras ``Callback`` that flushes a recorder during and
after ``model.fit``::

    model.fit(x, y, epochs=3, callbacks=[rec.keras_callback()])

Before the first update it runs ``dtsgd_viz.preflight`` on the model: a known DTensor
trap (LayerNormalization's epsilon, a row-sharded Embedding, ...) raises
``DTensorTrapError`` naming the layer and the fix, instead of DTensor's MLIR error when the
step is traced.

tf-keras is imported when the callback is made.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def flush_callback(*, hold: Callable[[int, bool], None], interval: Callable[[], int], flush: Callable[..., int]) -> Any:
    """A tf-keras callback flushing a ``Recorder`` during and after ``model.fit``:
    ``hold(steps, tuned)`` sizes its ring to hold ``steps`` updates between two flushes,
    ``interval()`` is how many updates may pass between two flushes, ``flush(final,
    wait=True)`` flushes (``wait=False``: without waiting for the devices).

    With ``steps_per_execution=k`` tf-keras runs k updates inside one call and calls the
    callback once per call: before training it has the ring sized to hold them
    (``hold``). Its flushes during an epoch wait for nothing (tf-keras
    times ``on_train_batch_end`` against the batch, whose updates the devices are still
    running, and warns when it is slower); the host copies are made at the end of each
    epoch, of training, or when the recording is read."""
    import tf_keras

    class _Flush(tf_keras.callbacks.Callback):
        since, last, per_call = 0, -1, 1

        def __init__(self):
            super().__init__()
            # it never reads the logs: otherwise tf-keras converts them to numpy for
            # it after every batch, a wait for the devices each step (and a
            # "callback is slow" warning)
            self._supports_tf_logs = True

        def on_train_begin(self, logs=None):
            from ..dtensor.preflight import check_model

            check_model(self.model)
            spe = getattr(self.model, "_steps_per_execution", None)
            self.per_call = 1 if spe is None else int(spe.numpy())
            hold(self.per_call, bool(getattr(self.model, "autotune_steps_per_execution", 0)))
            flush(True)  # updates made outside this callback's fits
            self.since = 0

        def on_epoch_begin(self, epoch, logs=None):
            self.last = -1

        def on_train_batch_end(self, batch, logs=None):
            # called once per execution: count the batches, not the calls
            ran, self.last = batch - self.last, batch
            self.since += ran
            # flush now if the next execution could overwrite what is not yet read
            if self.since + max(self.per_call, ran) > interval():
                flush(False, wait=False)
                self.since = 0

        def on_epoch_end(self, epoch, logs=None):
            flush(False)  # tf-keras has just waited for the devices
            self.since = 0

        def on_train_end(self, logs=None):
            flush(True)
            self.since = 0

    return _Flush()
