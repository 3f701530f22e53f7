"""What a hook sees of one optimizer update, and the hook protocol.

A hook observes; it cannot change the math. It receives read-only tensors
(values, not variables), before and after each update, eagerly or while a
``tf.function`` is being traced (then the tensors are symbolic and the hook must
stay in-graph: the ``Recorder`` writes to device-side staging variables of its own).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable


class LazyValues(Sequence):
    """A tuple of tensors read on first access (``len`` does not read).

    ``params`` and ``velocities`` are handed to hooks this way: inside a ``tf.function``
    a read no hook looks at would otherwise still run, on every device, every step."""

    def __init__(self, read: Callable[[], Iterable[Any]], length: int):
        self._read, self._len = read, length
        self._values: tuple[Any, ...] | None = None

    def _get(self) -> tuple[Any, ...]:
        if self._values is None:
            self._values = tuple(self._read())
        return self._values

    def __getitem__(self, index: int | slice) -> Any:
        return self._get()[index]

    def __len__(self) -> int:
        return self._len

    def __iter__(self) -> Iterator[Any]:
        return iter(self._get())

    def __repr__(self) -> str:
        return f"LazyValues({self._len} values, {'read' if self._values else 'not read yet'})"


@dataclasses.dataclass(frozen=True)
class UpdateEvent:
    """One ``apply_gradients`` call as a hook sees it.

    ``variables`` are the updated model variables (for identification only:
    names, shapes, layouts; hooks must not assign to them). The value tuples are
    aligned with ``variables`` (``params`` and ``velocities`` are read when first
    looked at: see ``LazyValues``). ``iteration`` is the optimizer's iteration after the update
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
    """Anything with these three methods can be passed to ``SGD(hooks=...)``.

    Under a dynamic loss scale (``MeshLossScaleOptimizer``) a hook also needs
    ``skipped_update(optimizer, iteration, loss_scale)``: called, eagerly or traced, for
    each update the scale skips, with the iteration it makes and the scale it used."""

    def on_build(self, optimizer: Any, variables: Sequence[Any]) -> None:
        """Called once, eagerly, when the optimizer creates its slots for ``variables``."""

    def before_update(self, optimizer: Any, variables: Sequence[Any], params: Sequence[Any]) -> None:
        """Called before each update with the parameter values about to change."""

    def after_update(self, event: UpdateEvent) -> None:
        """Called after each update."""
