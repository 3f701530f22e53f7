"""Giving a recorder's memory back once its device buffers are freed.

On virtual CPU devices the ring of a full-mode ``Recorder`` (``buffer_steps`` copies of
every recorded tensor, laid out like it) is host memory, allocated by TensorFlow's
oneDNN CPU allocator. By default that allocator keeps every large buffer it frees in a
pool of its own (a BFC allocator): a collected recorder's ring goes back to that pool,
which the process's later tensors reuse (a second recording holds no more than the
first), but never to the system. With ``TF_ONEDNN_USE_SYSTEM_ALLOCATOR=1`` in the
environment before TensorFlow makes its first tensor (``SYSTEM_ALLOCATOR_ENV``), it
allocates with ``malloc``; glibc then keeps the freed shards in its arenas (chunks below
its mmap threshold, which rises to 32 MiB as large chunks are freed) and
``malloc_trim(0)`` hands them back to the system. ``Staging`` asks for that trim when it
is collected: at once, and again when the garbage collection that collected it ends, as
the buffers of a recorder collected with its optimizer and step (they refer to each
other) may be freed after it. Without glibc nothing is trimmed.

The system allocator costs time and peak memory: on a 4096x4096 step about 10% more CPU
per step, and glibc's arenas reuse one another's free chunks less well than the pool
(``benchmarks/memory_return.py`` prints both), so dtsgd_viz leaves the choice to the user.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
import weakref
from typing import Any

__all__ = ["SYSTEM_ALLOCATOR_ENV", "give_back_when_collected", "trim"]

SYSTEM_ALLOCATOR_ENV = "TF_ONEDNN_USE_SYSTEM_ALLOCATOR"
"""TensorFlow's switch from its oneDNN pool to ``malloc`` (read at its first tensor)."""

_state = {"pending": False, "hooked": False}


@functools.cache
def _malloc_trim():
    """glibc's ``malloc_trim``, or None (another C library, or none found)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        fn = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
    return fn


def trim() -> bool:
    """Hand the free memory of glibc's arenas back to the system (``malloc_trim(0)``);
    returns whether any was (always False without glibc)."""
    fn = _malloc_trim()
    return bool(fn(0)) if fn is not None else False


def _after_collection(phase, info):
    if phase == "stop" and _state["pending"]:
        _state["pending"] = False
        trim()


def _collected():
    _state["pending"] = True
    trim()


def give_back_when_collected(owner: Any) -> None:
    """Trim glibc's free memory once ``owner`` (an object holding device buffers) is
    collected, and once more after the garbage collection that collected it."""
    if not _state["hooked"]:
        gc.callbacks.append(_after_collection)
        _state["hooked"] = True
    weakref.finalize(owner, _collected).atexit = False
