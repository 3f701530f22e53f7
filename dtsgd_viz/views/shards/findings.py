"""The words and numbers the shard figures print, as pure functions a notebook can call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ...recording import Recording
    from ...specs import LayoutSpec

__all__ = [
    "KIND_NOUNS",
    "STATS_ONLY_TEXT",
    "change_text",
    "layout_text",
    "median_line",
    "norm_change_text",
    "norm_panel_text",
    "spread_text",
    "subject_text",
    "times_text",
]

KIND_NOUNS = {"param": "parameter", "velocity": "velocity", "grad": "gradient"}
STATS_ONLY_TEXT = (
    "values not recorded: mode='stats' keeps each block's norm, mean and max |x|; mode='full' keeps the values"
)
HUMP = 3.0  # a rise to a peak inside the run, said as one when over this (and a fall over 1.5x after)


def times_text(k: float) -> str:
    """A factor ``k >= 1`` as the titles say it, always "x" (past 10,000 in the log ticks' ``1e5`` form)::

    >>> times_text(6.31), times_text(412.0), times_text(2e5), times_text(2.54e7)
    ('6.3x', '410x', '2e5x', '2.5e7x')
    """
    if k < 10:
        return f"{k:.2g}x"
    rounded = float(f"{k:.2g}")
    if rounded < 1e4:
        return f"{rounded:.0f}x"
    e = int(np.floor(np.log10(rounded)))
    return f"{rounded / 10.0**e:g}e{e}x"


def subject_text(kind: str, name: str, update: int, last: int) -> str:
    """A gradient "at update k of N", a parameter or velocity "after update k of N" (``last``: N)::

    >>> subject_text("velocity", "w", 10, 60), subject_text("grad", "w", 3, 60)
    ("velocity of 'w' after update 10 of 60", "gradient of 'w' at update 3 of 60")
    """
    when = "at" if kind == "grad" else "after"
    return f"{KIND_NOUNS.get(kind, kind)} of {name!r} {when} update {update} of {last}"


def layout_text(layout: LayoutSpec) -> str:
    """The layout in the settings line: its specs, the mesh, the replicas of each block::

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> layout_text(LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4})))
    'laid out [unsharded, model] on mesh (batch 2, model 4), 2 replicas per block'
    """
    mesh = layout.mesh
    dims = "(" + ", ".join(f"{d} {mesh.dim_size(d)}" for d in mesh.dim_names) + ")"
    copies = int(np.prod([mesh.dim_size(d) for d in mesh.dim_names if d not in layout.sharding_specs]))
    text = f"laid out [{', '.join(layout.sharding_specs)}] on mesh {dims}"
    return text + (f", {copies} replicas per block" if copies > 1 else "")


TIE = 1e-3  # block norms within this fraction of each other (equal to three figures) are a tie


def spread_text(norms: ArrayLike, names: Sequence[str]) -> str:
    """The largest of one update's block ``norms`` over the smallest, named; NaN/Inf or 0 blocks first::

    >>> spread_text([1.0, 1.2], ["a", "b"]), spread_text([2.0], ["CPU:0-7"])
    ('block norms span 1.2x (largest b, smallest a)', 'one block, held whole by every device')
    >>> spread_text([1.0, 1.2, 1.2, 0.5], ["a", "b", "c", "d"])  # within TIE: tied
    'block norms span 2.4x (largest b and c tied, smallest d)'
    >>> spread_text([1.0, 1.2, np.inf, np.nan], ["a", "b", "c", "d"])
    'c, d NaN/Inf; the other 2 block norms span 1.2x (largest b, smallest a)'
    """
    norms = np.asarray(norms, np.float64).ravel()
    if len(norms) == 1:
        return "one block, held whole by every device"
    ok = np.isfinite(norms) & (norms > 0)
    if not ok.any():
        return "every block's norm is 0" if np.all(norms == 0) else "no block's norm is finite"
    if ok.sum() < 2:
        return f"only {names[int(np.flatnonzero(ok)[0])]}'s norm is finite and above 0"
    cols = np.flatnonzero(ok)
    hi, lo = int(cols[np.argmax(norms[ok])]), int(cols[np.argmin(norms[ok])])

    def tied(at: int) -> str:  # the blocks within TIE of the one at ``at``, named as one
        near = [names[int(c)] for c in cols if abs(norms[c] - norms[at]) <= TIE * norms[at]]
        return near[0] if len(near) == 1 else " and ".join(near) + " tied"

    head = f"block norms span {times_text(norms[hi] / norms[lo])} (largest {tied(hi)}, smallest {tied(lo)})"
    left = [(what, np.flatnonzero(w)) for what, w in (("NaN/Inf", ~np.isfinite(norms)), ("0", norms == 0)) if w.any()]
    if not left:
        return head
    said = "; ".join(
        (", ".join(names[int(g)] for g in c) if len(c) <= 3 else f"{len(c)} blocks") + f" {w}" for w, c in left
    )
    return f"{said}; the other {int(ok.sum())} {head}"


def median_line(data: ArrayLike) -> np.ndarray:
    """The median over the finite norms above 0 of each update (``data``: updates x blocks), NaN where none is."""
    data = np.asarray(data, np.float64)
    kept = np.where(np.isfinite(data) & (data > 0), data, np.nan)
    out = np.full(kept.shape[0], np.nan)
    some = np.isfinite(kept).any(1)
    out[some] = np.nanmedian(kept[some], 1)
    return out


def norm_change_text(data: ArrayLike, updates: ArrayLike) -> str:
    """How ``median_line`` changes from its first to its last finite update, a hump (``HUMP``) said as one::

    >>> norm_change_text(np.array([[0.0], [1.0], [9.0], [3.0]]), [1, 2, 3, 4])
    'median rises 9x from update 2 to 3, then falls 3x'
    """
    med, u = median_line(data), np.asarray(updates)
    ok = np.flatnonzero(np.isfinite(med))
    if len(u) < 2 or len(ok) < 2:
        return "each block's L2 norm over the updates"
    a, b, p = int(ok[0]), int(ok[-1]), int(ok[np.argmax(med[ok])])
    f = float(med[b] / med[a])
    if a < p < b and med[p] / med[a] > HUMP and med[p] / med[b] > 1.5:
        since = f" from update {u[a]} to {u[p]}" if a else f" to update {u[p]}"
        return f"median rises {times_text(med[p] / med[a])}{since}, then falls {times_text(med[p] / med[b])}"
    span = f"from update {u[a]} to {u[b]}"  # the range used, said: a decimated run starts past update 1
    if 1 / 1.5 <= f <= 1.5:
        return f"median stays within 1.5x {span} ({f:.2g}x)"
    return f"median {'grows' if f > 1 else 'falls'} {times_text(max(f, 1 / f))} {span}"


def norm_panel_text(recording: Recording, name: str, kind: str = "velocity") -> str:
    """The norm panel's title of ``plot_shards(recording, name, kind)``."""
    from .geometry import block_norm_lines

    updates, lines = block_norm_lines(recording, name, kind)
    return norm_change_text(lines, updates)


def change_text(data: ArrayLike, updates: ArrayLike, names: Sequence[str]) -> str:
    """``norm_change_text`` in whole words, for the live monitor's headline (``names``: one per block)::

    >>> change_text(np.array([[1.0], [9.0], [3.0]]), [1, 2, 3], ["CPU:0"])
    'block norm rises 9x to a peak at update 2, then falls 3x'
    """
    text = norm_change_text(data, updates).replace(" to update ", " to a peak at update ")
    return text.replace("median", "block norm" if len(names) == 1 else "median block norm", 1)
