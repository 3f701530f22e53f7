"""``ShardExplorer`` drawn by the browser: a recorded tensor at one update as a heatmap with
each device's block outlined, beside each block's L2 norm over the updates, with
variable and kind pickers, a slider, Play and hover, live with or without a kernel.

    rec = dtsgd_viz.load_recording("nesterov.npz")
    dtsgd_viz.web.ShardExplorer(rec, step=5)                       # last in a cell
    dtsgd_viz.web.ShardExplorer({"momentum": a, "nesterov": b})   # side by side

Python computes every number once (``shard_state``): each variable's blocks (from
``views.shards.geometry``: rectangles of the 2-D image, devices, slice, replica group,
bytes), its values at the kept updates sampled down to at most ``MAX_CELLS`` cells a
side, the colour limits (fixed over the run, and each update's own), and each block's
norm over the updates; the ES module ``js/shards.js`` only maps them to pixels.
"""

from __future__ import annotations

import io
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import traitlets
from matplotlib import colormaps
from matplotlib import colors as mcolors

from ..recording.memory import format_bytes, itemsize
from ..views.core import style
from ..views.core.empty import check_not_empty
from ..views.shards.findings import subject_text
from ..views.shards.geometry import (
    axis_labels,
    block_norm_lines,
    block_patches,
    image_shape,
    run_limit,
    short_device_names,
    slice_boundaries,
    symmetric_limit,
    update_index,
)
from ..views.shards.tensor_panel import NONFINITE_COLOR, box_aspect
from ..views.shards.view import KIND_NOUNS, layout_text
from . import encode
from .look import look_data, look_table
from .paths import loss_ticks, update_ticks
from .widget import BrowserWidget

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..geometry import ShardGeometry
    from ..recording import Recording

__all__ = ["shard_state", "ShardExplorer", "kept_cells", "slice_text", "colour_table", "MAX_CELLS", "LUT_SIZE"]

MAX_CELLS = 300  # cells a side at most: the heatmap is about 450 px wide
MIN_CELLS = 16  # ... and at least this many while the state is shrunk to its budget
MAX_BYTES = 150_000  # the values' bytes in the state at most (200 KB as base64): a saved state under 300 KB
LUT_SIZE = 64  # colours in the diverging lookup table


def kept_cells(n: int, most: int) -> np.ndarray:
    """The indices of the ``n`` rows (or columns) of an image kept when it is drawn in at
    most ``most`` cells: all of them, else the element at each cell's middle (what
    ``imshow(interpolation="nearest")`` shows at that size: a real value, never a mean).

    >>> kept_cells(4, 300).tolist(), kept_cells(10, 4).tolist()
    ([0, 1, 2, 3], [1, 3, 6, 8])
    """
    if n <= most:
        return np.arange(n)
    return np.floor((np.arange(most) + 0.5) * (n / most)).astype(np.int64)


def slice_text(block: Sequence[slice]) -> str:
    """A block's slice of the global tensor as numpy writes it.

    >>> slice_text((slice(0, 512), slice(256, 512))), slice_text(())
    ('[0:512, 256:512]', '[] (a scalar)')
    """
    if not block:
        return "[] (a scalar)"
    return "[" + ", ".join(f"{s.start}:{s.stop}" for s in block) + "]"


def colour_table(n: int = LUT_SIZE) -> list[str]:
    """``n`` hex colours of ``style.DIVERGING_CMAP`` at the middles of ``n`` equal bins of
    ``-limit..limit`` (bin ``k``: values in ``[-L + 2Lk/n, -L + 2L(k+1)/n)``)."""
    cmap = colormaps[style.DIVERGING_CMAP]
    return [mcolors.to_hex(cmap((k + 0.5) / n)) for k in range(n)]


def _runs(recordings: Recording | Mapping[str, Recording]) -> dict[str, Recording]:
    if isinstance(recordings, Mapping):
        runs = {str(k): v for k, v in recordings.items()}
        if not runs:
            raise ValueError(
                "ShardExplorer takes a Recording or a dict {run name: Recording}. Received: an empty dict."
            )
        if len(runs) > 1:
            from ..views.compare.geometry import check_runs

            check_runs(runs)
        for k, r in runs.items():
            if not (hasattr(r, "steps") and hasattr(r, "kinds")):
                raise TypeError(f"Run {k!r} is a {type(r).__name__}, not a dtsgd_viz Recording.")
            check_not_empty(r, label=k)
        return runs
    if not (hasattr(recordings, "steps") and hasattr(recordings, "kinds")):
        raise TypeError(
            f"ShardExplorer takes a Recording or a dict {{run name: Recording}}. Received: {type(recordings).__name__}."
        )
    check_not_empty(recordings)
    return {"recording": recordings}


def _values(rec: Recording, name: str, kind: str) -> np.ndarray:
    v = rec.global_values(name, kind)
    return v.astype(np.float32) if v.dtype.name == "bfloat16" else v


def _blocks(geometry: ShardGeometry, devices: Sequence[str], dtype: str) -> list[dict[str, Any]]:
    short = short_device_names(devices)
    size = itemsize(dtype)
    styles = style.block_styles(geometry)
    elements = math.prod(geometry.local_shape)
    out = []
    for p in block_patches(geometry, short):
        block = geometry.blocks[p.devices[0]]
        out.append(
            {
                "group": p.group,
                "devices": [devices[d] for d in p.devices],
                "short": [short[d] for d in p.devices],
                "device_index": list(p.devices),
                "label": p.label,
                "slice": slice_text(block),
                "rects": [list(r) for r in p.rects],
                "elements": int(elements),
                "bytes": int(elements * size),
                "bytes_text": format_bytes(elements * size),
                "color": mcolors.to_hex(styles[p.group][0]),
                "text_color": _ink(styles[p.group][0]),
            }
        )
    return out


def _ink(color: Any) -> str:
    """Black or white, whichever reads on ``color`` (as the block chips of ``views.shards``)."""
    r, g, b = mcolors.to_rgb(color)
    return "#000000" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "#ffffff"


def _ticks(geometry: ShardGeometry, blocks: list[dict[str, Any]]) -> tuple[list[float], list[float], list[str]]:
    """``(x ticks, y ticks, y labels)`` in image cells: the block boundaries (as the
    heatmaps of ``views.shards`` tick them); a rank-3+ tensor's rows by d0 slice."""
    shape = geometry.global_shape
    rows, cols = image_shape(shape)
    xs = sorted({r[0] for b in blocks for r in b["rects"]} | {cols})
    xs = xs if len(xs) <= 17 else xs[:: -(-len(xs) // 16)]
    if len(shape) == 2:
        ys = sorted({r[1] for b in blocks for r in b["rects"]} | {rows})
        ys = ys if len(ys) <= 17 else ys[:: -(-len(ys) // 16)]
        return [float(x) for x in xs], [float(y) for y in ys], [str(y) for y in ys]
    if len(shape) < 2:
        return [float(x) for x in xs], [], []
    per = rows // shape[0]
    ks = list(range(shape[0]))[:: -(-shape[0] // 12)]
    return [float(x) for x in xs], [per * (k + 0.5) for k in ks], [f"d0={k}" for k in ks]


def _norm_axis(norms: np.ndarray) -> dict[str, Any]:
    """The log axis of the norm lines: ``norm_range`` (None: no positive norm), its
    ``norm_ticks`` and ``norm_labels`` (``loss_ticks``); a range with fewer than two
    1-2-5 ticks inside is widened to the 1-2-5 numbers either side of it."""
    positive = norms[np.isfinite(norms) & (norms > 0)]
    if not len(positive):
        return {"norm_range": None, "norm_ticks": [], "norm_labels": []}
    lo, hi = float(positive.min()), float(positive.max())
    ticks, labels = loss_ticks(lo, hi)
    if len(ticks) < 2:
        grid = [
            m * 10.0**e
            for e in range(int(np.floor(np.log10(lo))) - 1, int(np.ceil(np.log10(hi))) + 2)
            for m in (1, 2, 5)
        ]
        lo = max([g for g in grid if g <= lo * (1 + 1e-9)] or [lo])
        hi = min([g for g in grid if g >= hi * (1 - 1e-9)] or [hi])
        lo, hi = (lo / 2, hi * 2) if hi <= lo else (lo, hi)
        ticks, labels = loss_ticks(lo, hi)
    return {"norm_range": [lo, hi], "norm_ticks": ticks, "norm_labels": labels}


def _cell_budget(shapes: list[tuple[int, int]], frames: int, bytes_per: int, max_bytes: int) -> int:
    """The largest cap on cells a side (``MAX_CELLS`` down to ``MIN_CELLS``) at which
    every tensor's sampled values (``frames`` pictures of each) fit ``max_bytes``."""
    cap = MAX_CELLS
    while True:
        total = sum(min(r, cap) * min(c, cap) for r, c in shapes) * frames * bytes_per
        if total <= max_bytes or cap <= MIN_CELLS:
            return cap
        cap = max(MIN_CELLS, int(cap * 0.8))


def shard_state(
    recordings: Recording | Mapping[str, Recording],
    *,
    variable: str | None = None,
    kind: str | None = None,
    step: int | None = None,
    max_points: int = encode.MAX_POINTS,
    max_bytes: int = MAX_BYTES,
) -> dict[str, Any]:
    """Everything the browser's ``ShardExplorer`` draws, as plain data (arrays as
    ``encode.array``): per variable its global shape, its 2-D image's shape, its blocks
    (rectangles in image cells, devices, slice, replica group, bytes, colour), the rows
    and columns of the image kept (``kept_cells``), and per kind and run the kept values
    ``(m, rows, cols)`` with each update's min, max and symmetric colour limit (over
    the whole tensor, not the kept cells), the run's fixed limit and each block's L2
    norm at the kept updates (``block_norm_lines``).

    ``variable``/``kind``: shown first (None: the first variable, velocity if recorded);
    ``step``: the update shown first, as ``recording.steps`` counts them (-1 the last;
    None: the first); ``max_points``: at most this many updates on the slider;
    ``max_bytes``: the sampled values' budget (tensors are sampled coarser, down to
    ``MIN_CELLS`` a side, and then the slider keeps fewer updates, evenly spread, the
    first and the last among them, to fit it)."""
    runs = _runs(recordings)
    names = list(runs)
    first = runs[names[0]]
    variables, kinds = list(first.variables), list(first.kinds)
    if variable is not None and variable not in variables:
        raise ValueError(f"Unknown variable {variable!r}. This recording has: {variables}.")
    if kind is not None and kind not in kinds:
        raise ValueError(f"Kind {kind!r} was not recorded. Recorded kinds: {kinds}.")
    steps = np.asarray(first.steps, np.int64)
    n = len(steps)
    start = 0 if step is None else update_index(first, step)
    kept = encode.kept_indices(n, max_points)
    index = int(np.argmin(np.abs(kept - start)))
    stats_only = getattr(first, "mode", "full") == "stats"
    shapes = [image_shape(first.geometry(v).global_shape) for v in variables]
    value_dtype = "<f8" if any(first.record(v).dtype == "float64" for v in variables) else "<f4"
    bytes_per = int(value_dtype[-1])
    # the norm lines (float32, a point per block and kept update) come out of the budget first
    blocks = sum(len(first.geometry(v).replica_groups) for v in variables)
    norm_bytes = blocks * len(kept) * len(kinds) * len(names) * 4
    max_bytes = max(max_bytes - norm_bytes, max_bytes // 3)
    cap = _cell_budget(shapes, len(kept) * len(kinds) * len(names), bytes_per, max_bytes)
    picture = sum(min(r, cap) * min(c, cap) for r, c in shapes) * len(kinds) * len(names) * bytes_per
    kept_norms = kept  # the norm lines keep every update the slider could (they are small)
    if not stats_only and picture * len(kept) > max_bytes:  # still too big: fewer updates on the slider
        kept = encode.kept_indices(n, max(2, max_bytes // max(picture, 1) - 1))
        kept = np.union1d(kept, [start])  # the update asked for is kept
        index = int(np.searchsorted(kept, start))
    norm_index = [int(np.argmin(np.abs(kept_norms - k))) for k in kept]
    tensors: dict[str, Any] = {}
    for v in variables:
        geometry, rec0 = first.geometry(v), first.record(v)
        rows, cols = image_shape(geometry.global_shape)
        keep_r, keep_c = kept_cells(rows, cap), kept_cells(cols, cap)
        xlabel, ylabel, note = axis_labels(geometry.layout)
        per_kind: dict[str, Any] = {}
        for k in kinds:
            entry: dict[str, Any] = {"runs": {}}
            limits = []
            update_limits = np.zeros(len(kept))
            for run in names:
                r = runs[run]
                _, lines = block_norm_lines(r, v, k)
                data: dict[str, Any] = {"norms": encode.array(lines[kept_norms], "<f4")}  # drawn: float32
                if not stats_only:
                    values = _values(r, v, k)
                    image = values.reshape((n, rows, cols))
                    shown = image[kept]
                    flat = shown.reshape(len(kept), -1).astype(np.float64)
                    ok = np.isfinite(flat)
                    lo = np.where(ok.any(axis=1), np.min(np.where(ok, flat, np.inf), axis=1), np.nan)
                    hi = np.where(ok.any(axis=1), np.max(np.where(ok, flat, -np.inf), axis=1), np.nan)
                    own = np.array([symmetric_limit(x) for x in shown])
                    update_limits = np.maximum(update_limits, own)
                    limits.append(run_limit(values))
                    data.update(
                        values=encode.array(shown[:, keep_r][:, :, keep_c], value_dtype),
                        min=encode.array(lo),
                        max=encode.array(hi),
                        limit=encode.array(own),
                    )
                entry["runs"][run] = data
            all_norms = np.concatenate([encode.decode(entry["runs"][run]["norms"]).ravel() for run in names])
            entry.update(_norm_axis(all_norms))
            if not stats_only:
                entry["fixed_limit"] = float(max(limits))  # one scale for every run
                entry["update_limit"] = encode.array(update_limits)
            per_kind[k] = entry
        blocks = _blocks(geometry, first.shard_devices(v), rec0.dtype)
        xticks, yticks, ylabels = _ticks(geometry, blocks)
        tensors[v] = {
            "shape": list(geometry.global_shape),
            "box_aspect": box_aspect(geometry.global_shape),
            "xticks": xticks,
            "yticks": yticks,
            "ylabels": ylabels,
            "image": [rows, cols],
            "dtype": rec0.dtype,
            "itemsize": itemsize(rec0.dtype),
            "rows": encode.array(keep_r, "<i4"),
            "cols": encode.array(keep_c, "<i4"),
            "blocks": blocks,
            "slice_rows": list(slice_boundaries(geometry.global_shape)),
            "axis": [xlabel, ylabel, note],
            "layout": layout_text(geometry.layout),
            "kinds": per_kind,
        }
    return {
        "kind": "shards",
        "names": names,
        "variables": variables,
        "kinds": kinds,
        "variable": variable if variable is not None else variables[0],
        "shown_kind": kind if kind is not None else ("velocity" if "velocity" in kinds else kinds[0]),
        "stats_only": bool(stats_only),
        "kind_nouns": {k: KIND_NOUNS.get(k, k) for k in kinds},
        "look": _looks(names),
        "lut": colour_table(),
        "nonfinite_color": mcolors.to_hex(NONFINITE_COLOR),
        "updates": encode.array(steps[kept], "<i4"),
        "frame_index": [int(i) for i in kept],
        "norm_updates": encode.array(steps[kept_norms], "<i4"),
        "norm_index": norm_index,
        "n_updates": int(n),
        "last_update": int(steps[-1]),
        "first_update": int(steps[0]),
        "index": index,
        "update_ticks": [t for t in update_ticks(int(steps[-1])) if t >= int(steps[0])] or [int(steps[0])],
        "max_cells": int(cap),
        "tensors": tensors,
    }


def _looks(names: list[str]) -> dict[str, Any]:
    """The style table, with each run's look as ``plot_compare`` draws the runs (a second
    run of one rule tinted, so no two runs look alike)."""
    from ..views.compare.draw import looks

    table = look_table(names)
    table["runs"] = {name: look_data(look) for name, look in looks(names).items()}
    return table


class ShardExplorer(BrowserWidget):
    """A recorded tensor at one update, its device blocks outlined, beside each block's
    norm over the updates, drawn by the browser from ``shard_state``. ``update`` (synced
    both ways) is the update shown, as ``recording.steps`` counts them; ``variable`` and
    ``kind`` (synced too) what the pickers show.

    Args:
      recordings: one ``Recording``, or ``{run name: Recording}`` (runs of one model on
        one mesh, side by side on one colour scale).
      variable: shown first (None: the first recorded).
      kind: shown first (None: velocity if recorded, else the first kind).
      step: the update shown first (None: the first; ``-1``: the last).
      max_points: at most this many updates on the slider (longer runs are spread).
      max_bytes: the values' budget in the saved state (``shard_state``): a larger one
        keeps more cells and more updates, and makes a larger notebook.
    """

    _module = "shards.js"
    variable = traitlets.Unicode("").tag(sync=True)
    kind = traitlets.Unicode("").tag(sync=True)

    def __init__(
        self,
        recordings: Recording | Mapping[str, Recording],
        variable: str | None = None,
        kind: str | None = None,
        step: int | None = None,
        *,
        max_points: int = encode.MAX_POINTS,
        max_bytes: int = MAX_BYTES,
    ):
        state = shard_state(
            recordings, variable=variable, kind=kind, step=step, max_points=max_points, max_bytes=max_bytes
        )
        updates = encode.decode(state["updates"])
        super().__init__(
            data=state, update=int(updates[state["index"]]), variable=state["variable"], kind=state["shown_kind"]
        )
        self._runs = _runs(recordings)

    @traitlets.validate("variable")
    def _valid_variable(self, proposal: Any) -> str:
        allowed = self.data.get("variables", [])
        if allowed and proposal["value"] not in allowed:
            raise traitlets.TraitError(f"variable must be one of {allowed}. Received: {proposal['value']!r}.")
        return proposal["value"]

    @traitlets.validate("kind")
    def _valid_kind(self, proposal: Any) -> str:
        allowed = self.data.get("kinds", [])
        if allowed and proposal["value"] not in allowed:
            raise traitlets.TraitError(f"kind must be one of {allowed} (recorded). Received: {proposal['value']!r}.")
        return proposal["value"]

    @traitlets.validate("update")
    def _valid_update(self, proposal: Any) -> int:
        lo, hi = self.data.get("first_update"), self.data.get("last_update")
        value = proposal["value"]
        if lo is not None and not lo <= value <= hi:
            raise traitlets.TraitError(f"update must be a recorded update in {lo}..{hi}. Received: {value!r}.")
        return value

    def _still_update(self) -> int:
        """The recorded update the still shows: the nearest to ``update``."""
        steps = np.asarray(next(iter(self._runs.values())).steps)
        return int(steps[int(np.argmin(np.abs(steps - int(self.update))))])

    def still_caption(self) -> str:
        """What the still shows: the kind, the variable and the update, on that update's colour scale."""
        last = int(next(iter(self._runs.values())).steps[-1])
        update = self._still_update()
        what = subject_text(self.kind, self.variable, update, last)
        return (
            f"Still picture: {what}, on update {update}'s colour scale (live in Jupyter and on the documentation site)"
        )

    def still_figure(self) -> Figure:
        """The still picture of what the pickers and the slider show (``plot_shards``; runs
        side by side as the kernel-drawn explorer draws them), for readers that run no
        scripts, on the shown update's colour scale (``still_caption`` says so): on the
        whole run's, a late update's small values fade to white."""
        steps = np.asarray(next(iter(self._runs.values())).steps)
        update = self._still_update()
        if len(self._runs) == 1:
            from ..views.shards.plot import plot_shards

            return plot_shards(next(iter(self._runs.values())), self.variable, self.kind, update, fixed_scale=False)
        from ..views.core.figure import new_figure
        from ..widgets.shard_runs import RunsShardsView

        fig = new_figure(style.SHARD_EXPLORER_SIZE)
        index = int(np.searchsorted(steps, update))
        RunsShardsView(self._runs, self.variable, self.kind, index, figure=fig, fixed_scale=False)
        return fig

    def snapshot_png(self) -> bytes:
        """``still_figure`` as a PNG, cropped and padded as a notebook shows a figure (its
        y label, at the figure's edge, is never cut)."""
        fig = self.still_figure()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=style.DPI, bbox_inches="tight", pad_inches=style.PAD)
        return buf.getvalue()
