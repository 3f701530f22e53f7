"""Checks of a line thinned for its width (``views.shards.geometry.minmax_decimate``):
the drawn points against every original point, column by column."""

from __future__ import annotations

import numpy as np


def columns_of(x, columns):
    """The pixel column (0..columns-1) of each x, as the decimation cuts them."""
    x = np.asarray(x, np.float64)
    lo, span = x.min(), x.max() - x.min()
    return np.clip(((x - lo) * (columns / span)).astype(np.int64), 0, columns - 1)


def check_envelope(x, y, xs, ys, columns):
    """The drawn ``(xs, ys)`` are original points, in order, at most 3 a column (2 when
    the column holds no NaN) plus the ends; each column keeps its min and max (so every
    original value lies within what it kept), a NaN where it had one, and the ends."""
    x, y, xs, ys = (np.asarray(a, np.float64) for a in (x, y, xs, ys))
    at = np.searchsorted(x, xs)
    assert np.array_equal(x[at], xs) and np.all(np.diff(xs) > 0)  # original x, in order
    assert np.array_equal(y[at], ys, equal_nan=True)  # and their values
    assert xs[0] == x[0] and xs[-1] == x[-1]
    col, kept_col = columns_of(x, columns), columns_of(xs, columns)
    nan = np.isnan(y)
    for c in np.unique(col):
        vals, kept = y[col == c], ys[kept_col == c]
        assert len(kept) <= (3 if np.isnan(vals).any() else 2) + 2 * (c in (0, columns - 1))
        if (~np.isnan(vals)).any():
            assert np.nanmin(kept) == np.nanmin(vals) and np.nanmax(kept) == np.nanmax(vals)
        assert np.isnan(kept).any() == np.isnan(vals).any()  # a gap stays a gap
    if (~nan).any():
        assert np.nanmax(ys) == np.nanmax(y) and np.nanmin(ys) == np.nanmin(y)
