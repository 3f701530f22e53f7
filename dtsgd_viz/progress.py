"""Progress bars for long work (``tqdm.auto``: a widget in Jupyter, text on stderr
elsewhere), shown only when asked: ``progress=True`` on ``dtsgd_viz.run``,
``Recorder.loop`` and ``widgets.phase_grid``; the ``dtsgd-viz demo`` command shows them
by default. ``DTSGD_VIZ_PROGRESS=0`` in the environment turns every bar off, asked for
or not (tests, CI logs). Nothing here imports tqdm until a bar is shown.

    >>> with bar(3, "quiet", progress=False) as b:
    ...     b.update()
    >>> list(iterate(range(3), False, "quiet"))
    [0, 1, 2]
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from tqdm.auto import tqdm

T = TypeVar("T")
Progress = bool | Callable[..., Any] | None
"""What ``progress=`` takes: True, False or None, or (where a caller accepts it) a callable."""

ENV = "DTSGD_VIZ_PROGRESS"


def check(progress: Progress, callable_ok: bool = False) -> Progress:
    """``progress`` is True, False or None (or, where a caller accepts it, a callable)."""
    if progress is None or isinstance(progress, bool) or (callable_ok and callable(progress)):
        return progress
    allowed = "callable, True, False or None" if callable_ok else "True, False or None"
    raise TypeError(f"progress must be {allowed}. Received: {progress!r}.")


def shown(progress: Progress) -> bool:
    """Whether a bar asked for with ``progress`` is shown (``DTSGD_VIZ_PROGRESS=0``
    turns them all off)."""
    return progress is True and os.environ.get(ENV, "").strip() != "0"


class _Off:
    """What ``bar`` returns when nothing is shown: takes the same calls, does nothing."""

    def update(self, n: float = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _bar_class() -> type[tqdm]:
    """``tqdm.auto``'s bar; as text (not a notebook widget), one that prints each state
    once: tqdm's ``close()`` prints the last line again even when the last update printed
    it, so a log (stderr to a file or a pipe, where the carriage returns do not overwrite)
    showed a run's final line twice."""
    from tqdm.auto import tqdm
    from tqdm.std import tqdm as text

    if tqdm.display is not text.display:  # a notebook widget: its close() does more
        return tqdm
    return _once_class(tqdm)


def _once_class(base):
    if base not in _ONCE:

        class Once(base):
            def display(self, msg=None, pos=None):
                # close() sets disable before it redraws: skip a redraw of what is shown
                if self.disable and msg is None and self.n == self.last_print_n:
                    return True
                return super().display(msg, pos)

        Once.__name__ = Once.__qualname__ = base.__name__
        _ONCE[base] = Once
    return _ONCE[base]


_ONCE: dict[type, type] = {}


def bar(total: int | None, desc: str, progress: Progress = True, **options: Any) -> tqdm | _Off:
    """A ``tqdm.auto`` bar of ``total`` steps (a context manager; ``.update(n)``), or a
    stand-in that shows nothing when ``progress`` is not True. As text, each line of it is
    printed once."""
    if not shown(progress):
        return _Off()
    return _bar_class()(total=total, desc=desc, unit="step", dynamic_ncols=True, **options)


def iterate(items: Iterable[T], progress: Progress, desc: str, **options: Any) -> Iterable[T]:
    """``items`` with a bar when ``progress`` is True (``tqdm.auto``), else ``items``."""
    if not shown(progress):
        return items
    return _bar_class()(items, desc=desc, unit="step", dynamic_ncols=True, **options)
