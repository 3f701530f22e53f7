"""What a hook sees of one optimizer update, and the hook protocol.

A hook observes; it cannot change the math. It receives read-only tensors
(values, not variables), before and after each update, eagerly or while a
``tf.function`` is being traced (then the tensors are symbolic and the hook must
stay in-graph: the ``Recorder`` writes to device-side staging variables of its own).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable


@dataclasses.dataclass(frozen=True)
class UpdateEvent:
    """One ``apply_gradients`` call as a hook sees it.

    ``variables`` are the updated model variables (for identification only:
    names, shapes, layouts; hooks must not assign to them). The value tuples are
    aligned with ``variables``. ``velocities`` are ``None`` when the optimizer has no
    momentum slot. ``iteration`` is the optimizer's iteration after the update
    (the first update is 1); ``loss`` is ``None`` unless the loop reported it.
    """

    optimizer: Any
    variables: tuple
    grads: tuple
    params: tuple
    velocities: tuple | None
    iteration: Any
    learning_rate: Any
    loss: Any = None


@runtime_checkable
class Hook(Protocol):
    """Anything with these three methods can be passed to ``SGD(hooks=...)``."""

    def on_build(self, optimizer, variables) -> None:
        """Called once, eagerly, when the optimizer creates its slots for ``variables``."""

    def before_update(self, optimizer, variables, params) -> None:
        """Called before each update with the parameter values about to change."""

    def after_update(self, event: UpdateEvent) -> None:
        """Called after each update."""
