"""The ``Recorder`` hook: what it stages on the devices (``staging``, ``capture``), how it
sizes its ring (``ring``: plain arithmetic), how it moves the data to the host (``flush``,
``hostlog``), the split step (``split_step``), the Keras callback (``keras_callback``)
and the watch on the update rule (``rulewatch``).

``Recorder`` (and ``variable_name``) are imported on first use, so the plain-data
modules (``ring``) import without TensorFlow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported on first use (``__getattr__``)
    from ..dtensor.model import variable_name
    from .recorder import Recorder

__all__ = ["Recorder", "variable_name"]


def __getattr__(name: str) -> Any:
    if name == "Recorder":
        from ..dtensor import quiet_tensorflow_import

        quiet_tensorflow_import()  # before recorder.py imports TensorFlow: its start-up lines
        from .recorder import Recorder

        return Recorder
    if name == "variable_name":
        from ..dtensor.model import variable_name

        return variable_name
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
