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

ENV = "DTSGD_VIZ_PROGRESS"


def check(progress, callable_ok=False):
    """``progress`` is True, False or None (or, where a caller accepts it, a callable)."""
    if progress is None or isinstance(progress, bool) or (callable_ok and callable(progress)):
        return progress
    allowed = "callable, True, False or None" if callable_ok else "True, False or None"
    raise TypeError(f"progress must be {allowed}. Received: {progress!r}.")


def shown(progress) -> bool:
    """Whether a bar asked for with ``progress`` is shown (``DTSGD_VIZ_PROGRESS=0``
    turns them all off)."""
    return progress is True and os.environ.get(ENV, "").strip() != "0"


class _Off:
    """What ``bar`` returns when nothing is shown: takes the same calls, does nothing."""

    def update(self, n=1):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def bar(total, desc, progress=True, **options):
    """A ``tqdm.auto`` bar of ``total`` steps (a context manager; ``.update(n)``), or a
    stand-in that shows nothing when ``progress`` is not True."""
    if not shown(progress):
        return _Off()
    from tqdm.auto import tqdm
    return tqdm(total=total, desc=desc, unit="step", dynamic_ncols=True, **options)


def iterate(items, progress, desc, **options):
    """``items`` with a bar when ``progress`` is True (``tqdm.auto``), else ``items``."""
    if not shown(progress):
        return items
    from tqdm.auto import tqdm
    return tqdm(items, desc=desc, unit="step", dynamic_ncols=True, **options)
