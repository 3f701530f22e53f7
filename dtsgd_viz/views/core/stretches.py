"""Maximal stretches of consecutive ``True`` in a boolean array: where two paths
coincide (``path_casing``), where two block lines lie on each other (``_shard_coincide``).

    >>> true_stretches([False, True, True, False, True, False, True, True, True])
    [(1, 2), (4, 4), (6, 8)]
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["true_stretches"]


def true_stretches(mask: ArrayLike) -> list[tuple[int, int]]:
    """``[(i, j)]``: the first and last index (inclusive) of each maximal run of
    ``True`` in ``mask``, in order."""
    m = np.asarray(mask, bool).reshape(-1)
    if not m.size:
        return []
    edges = np.diff(np.concatenate([[0], m.astype(np.int8), [0]]))
    starts, ends = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1) - 1
    return [(int(i), int(j)) for i, j in zip(starts, ends)]
