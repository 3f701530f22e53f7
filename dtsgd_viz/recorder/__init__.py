"""The ``Recorder`` hook: what it stages on the devices, how it sizes its ring, how it
moves the data to the host (``hostlog``), the split step, the Keras callback and the
watch on the update rule."""

from .recorder import Recorder, variable_name

__all__ = ["Recorder", "variable_name"]
