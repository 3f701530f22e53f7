"""Running a step once and putting its variables back (for ``communication``).

DTensor compiles a function only when it runs it (there is no compile-only entry), so
reading the collectives of a step it never ran means running it once. ``run_restoring``
copies every variable the traced function captures (``cf.variables``: weights, optimizer
slots and ``iterations``, random generator states) on its own layout before the call and
assigns the copies back after it, so the model and the optimizer are left bit for bit as
they were. Not restored: Python side effects (a ``Recorder`` hook sees the extra step)
and the batches an iterator argument gave.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

from .devices import quiet_tensorflow_import


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """Hold fd 2 (TensorFlow's C++ lines about compiling and profiling) in a temporary
    file while the step runs, and replay it if the step raises. ``DTSGD_VIZ_TF_LOGS=1``
    keeps the lines."""
    if os.environ.get("DTSGD_VIZ_TF_LOGS") == "1":
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode(errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def snapshot(variables: Iterable[Any]) -> list[Any]:
    """A copy of each variable's value, on its own layout."""
    tf = quiet_tensorflow_import()
    with tf.init_scope():
        return [tf.identity(v.read_value()) for v in variables]


def restore(variables: Iterable[Any], saved: Iterable[Any]) -> None:
    tf = quiet_tensorflow_import()
    with tf.init_scope():
        for v, value in zip(variables, saved):
            v.assign(value)


def _wait(out) -> None:
    """Block until the step's outputs exist (DTensor returns before the devices finish)."""
    tf = quiet_tensorflow_import()
    from tensorflow.experimental import dtensor

    for t in tf.nest.flatten(out):
        if isinstance(t, tf.Tensor):
            try:
                [c.numpy() for c in dtensor.unpack(t)]
            except Exception:  # noqa: BLE001 - not a DTensor
                t.numpy()


def run_restoring(
    fn: Callable[..., Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    variables: Iterable[Any],
    profile_dir: str | None = None,
) -> None:
    """Call ``fn(*args, **kwargs)`` once (under the profiler, writing to ``profile_dir``,
    if given) and put every variable of ``variables`` back as it was."""
    tf = quiet_tensorflow_import()
    variables = list(variables)
    saved = snapshot(variables)
    try:
        if profile_dir:
            tf.profiler.experimental.start(profile_dir)
        try:
            _wait(fn(*args, **kwargs))
        finally:
            if profile_dir:
                tf.profiler.experimental.stop()
    finally:
        restore(variables, saved)
