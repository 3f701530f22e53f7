"""Arrays in a widget's state: little-endian bytes with their dtype and shape (ipywidgets
sends bytes as binary buffers; a saved notebook keeps them base64 in its widget state),
and the updates kept when a run has more than a slider's pixels."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["array", "decode", "kept_indices", "MAX_POINTS"]

MAX_POINTS = 2000  # a slider about 900 px wide: at most ~2 updates per pixel are kept


def array(a: Any, dtype: str = "<f8") -> dict[str, Any]:
    """``{"dtype": "float64", "shape": [...], "data": bytes}`` of ``a`` (C order)."""
    arr = np.ascontiguousarray(np.asarray(a), dtype=np.dtype(dtype))
    kind = {"f8": "float64", "f4": "float32", "i4": "int32"}[arr.dtype.str[1:]]
    return {"dtype": kind, "shape": list(arr.shape), "data": arr.tobytes()}


def decode(entry: dict[str, Any]) -> np.ndarray:
    """The array ``array`` encoded (bytes, memoryview or a base64 string).

    >>> decode(array([[1.5, 2.0]])).tolist()
    [[1.5, 2.0]]
    """
    data = entry["data"]
    if isinstance(data, str):
        import base64

        data = base64.b64decode(data)
    dt = {"float64": "<f8", "float32": "<f4", "int32": "<i4"}[entry["dtype"]]
    return np.frombuffer(bytes(data), dtype=dt).reshape(entry["shape"])


def kept_indices(n: int, max_points: int = MAX_POINTS) -> np.ndarray:
    """The indices ``0..n-1`` kept for a slider: all of them up to ``max_points``,
    else ``max_points`` evenly spread, the first and the last among them.

    >>> kept_indices(5).tolist()
    [0, 1, 2, 3, 4]
    >>> kept_indices(10, 4).tolist()
    [0, 3, 6, 9]
    """
    if n <= max_points:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, max_points)).astype(np.int64))
