"""``ShardExplorer({name: recording, ...})``: the same tensor of several runs at one update,
side by side on one colour scale, over each run's distance from the first run's across the
updates (``gap_lines``: the title's ``gaps`` at every update, the shown update marked). The
runs are checked as ``plot_compare`` checks them (one model, one mesh, the same recorded updates)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib import colors as mcolors

from ..views.compare import display_name, looks, percent_text
from ..views.core import style
from ..views.core.figure import fit, headline
from ..views.shards.findings import subject_text
from ..views.shards.geometry import as_image, axis_labels, run_limit, symmetric_limit, update_index
from ..views.shards.lines import STEP_LINE_COLOR, STEP_LINE_WIDTH
from ..views.shards.plot import TensorPanel

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..recording.recording import Recording

__all__ = ["RunsShardsView", "gap_lines", "gaps", "gaps_text", "tensor_norms"]


def tensor_norms(recording: Recording, name: str, kind: str) -> np.ndarray:
    """``(n,)``: the whole tensor's L2 norm per recorded update, from its unique blocks
    (each replica group once), in full and in stats mode."""
    geometry = recording.geometry(name)
    firsts = [group[0] for group in geometry.replica_groups]
    block = np.asarray(recording.shard_stats(name, kind)[:, firsts, 0], np.float64)
    return np.sqrt(np.sum(block**2, axis=1))


def gaps(runs: dict[str, Recording], name: str, kind: str = "velocity", step: int | None = None) -> dict[str, float]:
    """Each run's (not the first's) distance from the first run at optimizer update ``step``
    (as ``recording.steps`` counts them, -1 the last; None: the last), relative to the first
    run's: ``|x_run - x_first| / |x_first|`` of the whole ``kind`` tensor of ``name`` (a stats
    recording, which has no values: of its L2 norm, ``|n_run - n_first| / n_first``)."""
    names = list(runs)
    first = runs[names[0]]
    i = update_index(first, step)
    out = {}
    for run in names[1:]:
        if first.mode == "stats":
            a, b = (float(tensor_norms(r, name, kind)[i]) for r in (first, runs[run]))
            out[run] = abs(b - a) / a if a > 0 else float(b != a)
            continue
        a, b = (np.asarray(r.global_values(name, kind)[i], np.float64) for r in (first, runs[run]))
        base = float(np.linalg.norm(a))
        out[run] = float(np.linalg.norm(b - a)) / base if base > 0 else float(np.any(b != a))
    return out


def gap_lines(
    runs: dict[str, Recording], name: str, kind: str = "velocity", values: Mapping[str, np.ndarray] | None = None
) -> dict[str, np.ndarray]:
    """``gaps`` at every recorded update: ``{run: (n,)}`` for each run but the first, compared in
    float64 one chunk of updates (``CHUNK``) at a time, not the whole run at once. ``values``:
    each run's ``global_values(name, kind)`` where the caller holds them already (not assembled again)."""
    names = list(runs)
    first = runs[names[0]]
    if first.mode == "stats":
        a = tensor_norms(first, name, kind)
        diffs = {run: np.abs(tensor_norms(runs[run], name, kind) - a) for run in names[1:]}
        return {run: _relative(d, a, d != 0) for run, d in diffs.items()}
    held = values or {run: runs[run].global_values(name, kind) for run in names}  # each run assembled once
    base, others = held[names[0]], held
    out = {run: np.empty(len(first.steps)) for run in names[1:]}
    for lo in range(0, len(first.steps), CHUNK):
        a = np.asarray(base[lo : lo + CHUNK], np.float64).reshape(-1, int(np.prod(base.shape[1:])))
        for run in names[1:]:
            b = np.asarray(others[run][lo : lo + CHUNK], np.float64).reshape(a.shape)
            diff, size = np.linalg.norm(b - a, axis=1), np.linalg.norm(a, axis=1)
            out[run][lo : lo + len(a)] = _relative(diff, size, np.any(b != a, axis=1))
    return out


CHUNK = 256  # updates ``gap_lines`` takes at a time


def _relative(diff: np.ndarray, base: np.ndarray, differs: np.ndarray) -> np.ndarray:
    """``diff / base``; where ``base`` is 0: 1 where anything differs (``differs``), else 0, as ``gaps``."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(base > 0, diff / np.where(base > 0, base, 1.0), np.asarray(differs, np.float64))


def gaps_text(
    runs: dict[str, Recording],
    name: str,
    kind: str = "velocity",
    step: int | None = None,
    found: Mapping[str, float] | None = None,
) -> str:
    """The title of the runs side by side: the tensor shown and how far each run is from the
    first at update ``step`` (``gaps``; ``found``: those gaps where the caller has them, as
    ``gap_lines`` at that update)::

        velocity of 'w' after update 10 of 12: Nesterov 42% from momentum
    """
    first = runs[next(iter(runs))]
    steps = first.steps
    i = update_index(first, step)
    base = next(iter(runs))
    what = "" if first.mode != "stats" else "'s norm"
    said = [
        f"{display_name(run)} equal to {display_name(base)}"
        if gap == 0
        else f"{display_name(run)}{what} {percent_text(gap)} from {display_name(base)}{what}"
        for run, gap in (found if found is not None else gaps(runs, name, kind, int(steps[i]))).items()
    ]
    return f"{subject_text(kind, name, int(steps[i]), int(steps[-1]))}: {', '.join(said)}"


class RunsShardsView:
    """The runs' panels on ``figure``: ``heatmaps`` (one per run, full mode), ``lines``
    (one norm line per run), ``markers`` (the shown update on each line), ``limit`` (the
    shared colour limit, None in stats mode). ``set_index``/``set_kind``/
    ``set_fixed_scale`` update them in place, as ``ShardsView``'s do."""

    def __init__(
        self, runs: dict[str, Recording], name: str, kind: str, index: int, *, figure: Figure, fixed_scale: bool = True
    ):
        self.runs, self.name, self.kind, self.index = runs, name, kind, index
        self.fixed_scale, self.figure = bool(fixed_scale), figure
        self.names = list(runs)
        self.others = self.names[1:]  # the runs compared with the first (the gap panel's lines)
        self.look = looks(self.names)
        first = runs[self.names[0]]
        self.updates = np.asarray(first.steps)
        self.stats_only = first.mode == "stats"
        grid = figure.add_gridspec(2, len(self.names), height_ratios=[1.35, 1])
        self.heat_axes = [] if self.stats_only else [figure.add_subplot(grid[0, i]) for i in range(len(self.names))]
        self.norm_ax = figure.add_subplot(grid[1, :] if not self.stats_only else grid[:, :])
        self.heatmaps, self.panels, self.lines, self.markers = [], [], [], []
        self._load()
        for i, run in enumerate(self.names):
            if self.stats_only:
                break
            panel = TensorPanel(
                self.heat_axes[i],
                first.geometry(name),
                _short(first.shard_devices(name)),
                as_image(self.values[run][index]),
                limit=self._limit(),
                colorbar=i == len(self.names) - 1,
                colorbar_label=f"{kind} value",
            )
            self.panels.append(panel)
            self.heatmaps.append(panel.heatmap)
            self._chip(self.heat_axes[i], run, panel.title_pad())
            xlabel, ylabel, _ = axis_labels(first.geometry(name).layout)
            self.heat_axes[i].set_xlabel(xlabel, fontsize=style.LABEL_SIZE)
            if i == 0:
                self.heat_axes[i].set_ylabel(ylabel, fontsize=style.LABEL_SIZE)
        current = style.ROLE_LOOKS["current"]  # the update shown: a white-faced ring
        for run in self.others:  # each run's distance from the first: the title's gaps at every update
            (line,) = self.norm_ax.plot(
                self.updates, self._percent(run), label=display_name(run), **self.look[run].line()
            )
            ring: dict[str, Any] = dict(
                marker=current.marker, ms=current.ms, mfc="white", mec=self.look[run].color, mew=current.lw
            )
            (marker,) = self.norm_ax.plot([], [], ls="none", zorder=current.zorder, **ring)
            self.lines.append(line)
            self.markers.append(marker)
        # the update shown, as the shards' norm panels mark it: a thin grey line under the rings (they may coincide)
        self.step_line = self.norm_ax.axvline(0, color=STEP_LINE_COLOR, lw=STEP_LINE_WIDTH, zorder=1.5, gid="step-line")
        self._floor()
        self.norm_ax.set_xlabel("update", fontsize=style.LABEL_SIZE)
        self.norm_ax.set_ylabel(self._ylabel(), fontsize=style.LABEL_SIZE)  # the title names the tensor
        self.norm_ax.tick_params(labelsize=style.TICK_SIZE)
        self.norm_ax.grid(alpha=0.3)
        self.norm_ax.legend(fontsize=style.NOTE_SIZE, frameon=False, loc="best")
        self._set_markers()
        self._title()

    def _chip(self, ax, run: str, pad: float) -> None:
        """The run's name over its heatmap on a chip in its rule's colour (the lines' look)."""
        color = self.look[run].color or "black"
        ink = "black" if float(np.dot(mcolors.to_rgb(color), (0.299, 0.587, 0.114))) > 0.5 else "white"
        box = dict(boxstyle="round,pad=0.3", facecolor=color, edgecolor="none")
        ax.set_title(display_name(run), fontsize=style.TITLE_SIZE, pad=pad + 3, color=ink, fontweight="bold", bbox=box)

    def _load(self):
        self.values = {}
        if not self.stats_only:
            for run, r in self.runs.items():
                v = r.global_values(self.name, self.kind)
                self.values[run] = v.astype(np.float32) if v.dtype.name == "bfloat16" else v
        self.gaps = gap_lines(self.runs, self.name, self.kind, self.values or None)  # from the values held
        self._run_limit = None

    def _limit(self) -> float | None:
        """One colour limit for every run: over the whole of every run when the scale is
        fixed, else over every run at the shown update."""
        if self.stats_only:
            return None
        if self.fixed_scale:
            if self._run_limit is None:
                self._run_limit = max(run_limit(v) for v in self.values.values())
            return self._run_limit
        return max(symmetric_limit(v[self.index]) for v in self.values.values())

    @property
    def limit(self) -> float | None:
        return self._limit()

    def _percent(self, run: str) -> np.ndarray:
        """``run``'s distance from the first run at every update, in percent (not finite: not drawn)."""
        v = 100.0 * np.asarray(self.gaps[run], np.float64)
        return np.where(np.isfinite(v), v, np.nan)

    def _floor(self) -> None:
        """The gap axis from just under 0: a run equal to the first is a line at 0, drawn whole, its ring too."""
        top = max([float(np.nanmax(ln.get_ydata(), initial=0.0)) for ln in self.lines] + [0.0]) or 1.0
        self.norm_ax.set_ylim(-0.06 * top, 1.08 * top)

    def _ylabel(self) -> str:
        """The gap panel's axis: how far from the first run, in percent of the first's (``gaps``)."""
        first = display_name(self.names[0])
        if self.stats_only:
            return f"‖{self.kind}‖ gap\nfrom {first}'s, %"
        return f"{self.kind} gap\nfrom {first},\n% of its norm"

    def _set_markers(self):
        for run, marker in zip(self.others, self.markers):
            marker.set_data([self.updates[self.index]], self._percent(run)[self.index : self.index + 1])
        self.step_line.set_xdata([self.updates[self.index]] * 2)

    def title(self) -> str:
        """The figure's title: ``gaps_text`` at the shown update."""
        found = {run: float(line[self.index]) for run, line in self.gaps.items()}  # gap_lines: no reassembly
        return gaps_text(self.runs, self.name, self.kind, int(self.updates[self.index]), found)

    def _title(self):
        update = self.updates[self.index]
        scale = "fixed over the run" if self.fixed_scale else f"of update {update}"
        finding = self.title()
        if "\n" in fit(finding, self.figure.get_figwidth() * 72, style.SUPTITLE_SIZE, bold=True):
            finding = finding.replace(": ", ":\n", 1)  # the subject, then the gaps
        for old in [a for a in [*self.figure.texts, *self.figure.artists] if a.get_gid() == "subtitle"]:
            old.remove()  # the last update's
        headline(self.figure, finding, f"every run on one colour scale, {scale}")

    def set_index(self, index: int) -> None:
        self.index = int(index)
        limit = self._limit()
        for run, heatmap in zip(self.names, self.heatmaps):
            assert limit is not None  # heatmaps are drawn in full mode only, which has a limit
            heatmap.set_data(as_image(self.values[run][self.index]))
            heatmap.set_clim(-limit, limit)
        self._set_markers()
        self._title()

    def set_kind(self, kind: str) -> None:
        self.kind = kind
        self._load()
        for run, line in zip(self.others, self.lines):
            line.set_ydata(self._percent(run))
        self.norm_ax.relim()
        self.norm_ax.autoscale_view()
        self._floor()
        self.norm_ax.set_ylabel(self._ylabel(), fontsize=style.LABEL_SIZE)
        for panel in self.panels:
            if panel.colorbar is not None:
                panel.colorbar.set_label(f"{kind} value")
        self.set_index(self.index)

    def set_fixed_scale(self, fixed: bool) -> None:
        self.fixed_scale = bool(fixed)
        self.set_index(self.index)


def _short(devices):
    return [d.split("/")[-1].replace("device:", "") for d in devices]
