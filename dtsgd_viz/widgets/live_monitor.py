"""``LiveMonitor``: follow a store that another process is writing (``Recorder(path=...)``).

    dtsgd_viz.widgets.LiveMonitor("run.zarr")      # last expression of a cell

It shows how many steps have landed and how fast, the loss, and the L2 norm of every
block of one variable's velocity (or another kind) per optimizer update, refreshed as
steps are committed, under titles saying the finding so far. Blocks are named and
coloured as in ``plot_shards``, at their lines' right ends; log axes for norms and a
positive loss. The figure is ``style.LIVE_MONITOR_SIZE`` at ``style.DPI`` (930 px).
A thread polls every ``interval`` s through ``poll(state, store)`` (old state + what the
store holds -> new state; tested without a thread), reading only unseen steps. A resumed
store (``Recorder(path=..., resume=True)``) supersedes the steps after its checkpoint:
each poll drops the rows past what every unseen resume kept, then reads the new run's
steps. Polling stops when the run closes the store or the widget is closed. No
TensorFlow is imported.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from collections.abc import Mapping
from typing import Any

import ipywidgets as widgets
import numpy as np

from ..recording.store import PartStatus, StoreReader
from ..views.core import style
from ..views.paths.loss import LOSS_YLABEL
from ..views.shards.findings import median_line
from ..views.shards.geometry import block_patches, minmax_decimate
from ..views.shards.lines import MEDIAN_COLOR, MEDIAN_EDGE
from ..views.text.direct import axes_height_points, leaders, spread
from ._canvas import FigureWidget
from .live_monitor_axes import _frame, _scale_y, _tick_texts, snap_log_limits
from .live_monitor_text import (  # noqa: F401
    LIVE_MONITOR_HEADLINED_SIZE,
    loss_text,
    monitor_finding,
    monitor_settings,
    set_update_axis,
)

RATE_WINDOW = 10
"""Steps per second are measured over the last this many commits a poll saw."""
NAME_GAP = 1.85
"""Block names (chips ~1.6 font sizes tall) stand this many font sizes apart: air between."""
NAME_X = 1.055
NAME_MARGIN = 7.0  # points of air around the panels: the chips' boxes off the figure's edge
"""Axes fraction of the chips' left edge: room for leaders to the chips that moved."""


@dataclasses.dataclass(frozen=True, eq=False)
class MonitorState:
    """What the monitor has read so far: ``steps`` (the updates), ``loss`` and ``norms``
    (``(n, n_blocks)``, one column per stored block of ``variable``'s ``kind``, named in
    ``blocks`` as the shard views name it, by the devices holding it, and drawn in
    ``looks``: its ``(colour, line style)`` of ``style.block_styles``), the last
    ``status`` of the store (None until the run has created it) and ``seen``: ``(commit
    time, committed steps)`` of the last commits seen, for the rate."""

    variable: str | None = None
    kind: str | None = None
    blocks: tuple[str, ...] = ()
    looks: tuple[tuple[str, object], ...] = ()
    steps: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0, np.int64))
    loss: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    norms: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros((0, 0)))
    status: PartStatus | None = None
    seen: tuple[tuple[float, int], ...] = ()

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def closed(self) -> bool:
        return self.status is not None and self.status.closed

    @property
    def steps_per_second(self) -> float | None:
        if len(self.seen) < 2 or self.seen[-1][0] <= self.seen[0][0]:
            return None
        (t0, n0), (t1, n1) = self.seen[0], self.seen[-1]
        return (n1 - n0) / (t1 - t0)


def monitor_state(variable: str | None = None, kind: str | None = None) -> MonitorState:
    """The state before the first poll: follow ``variable`` (default: the first) and
    ``kind`` (default: velocity when recorded, else the first recorded kind)."""
    return MonitorState(variable, kind)


def block_names(header: Mapping[str, Any], index: int) -> tuple[tuple[str, ...], tuple[tuple[str, object], ...]]:
    """``(names, looks)`` of the blocks a store holds of variable number ``index``: each
    block's name as the shard views write it (``block_patches``: ``CPU:0``, ``CPU:0,4``,
    ``CPU:0-7``) and its ``(colour, line style)`` (``style.block_styles``), in the order
    of the store's columns (a client of a multi-client run: its devices' blocks only)."""
    from ..geometry import shard_geometry
    from ..specs import LayoutSpec

    v = header["variables"][index]
    layout = LayoutSpec.from_dict(v["layout"])
    geom = shard_geometry(tuple(v["shape"]), layout)
    patches, styles = block_patches(geom, layout.mesh.short_device_names), style.block_styles(geom)
    groups = range(len(geom.replica_groups))
    if "part" in header:  # a client of a multi-client run stores its devices' blocks
        groups = [g for g, _ in geom.held_groups(header["part"]["devices"])]
    return (tuple(patches[g].label for g in groups), tuple((styles[g][0], styles[g][2]) for g in groups))


def poll(state: MonitorState, store: StoreReader) -> MonitorState:
    """The state after reading what ``store`` committed since ``state`` (only the new
    steps are read). Returns ``state`` itself when nothing changed."""
    status = store.status()
    if status is None or (state.status is not None and status == state.status):
        return state
    if state.status is None:  # first sight of the store: choose what to follow
        header = store.header
        names = [v["name"] for v in header["variables"]]
        variable = state.variable if state.variable is not None else (names or [None])[0]
        index = store.variable_index(variable)
        kinds = header["kinds"]
        kind = state.kind or ("velocity" if "velocity" in kinds else kinds[0])
        if kind not in kinds:
            raise ValueError(f"Kind {kind!r} was not recorded. Recorded kinds: {kinds}.")
        names, looks = block_names(header, index)
        state = dataclasses.replace(
            state,
            variable=variable,
            kind=kind,
            blocks=names,
            looks=looks,
            norms=np.zeros((0, len(names))),
            seen=((status.started, 0),),
        )
    state = _drop_superseded(state, status)
    start, stop = state.n_steps, status.n_steps
    if stop > start:
        steps = np.concatenate([state.steps, store.rows("steps", start, stop)])
        loss = np.concatenate([state.loss, store.rows("loss", start, stop)])
        assert state.variable is not None and state.kind is not None  # chosen at the first sight of the store
        norms = np.concatenate([state.norms, store.block_norms(state.variable, state.kind, start, stop)])
    else:
        steps, loss, norms = state.steps, state.loss, state.norms
    seen = state.seen
    if stop != seen[-1][1]:
        seen = (seen + ((status.time, stop),))[-RATE_WINDOW:]
    return dataclasses.replace(state, steps=steps, loss=loss, norms=norms, status=status, seen=seen)


def _drop_superseded(state: MonitorState, status: PartStatus) -> MonitorState:
    """``state`` without the rows a resume since its last poll superseded (those past
    the steps it kept), and its rate measured from that resume."""
    keep = state.n_steps
    new = status.resumes[len(state.status.resumes) if state.status is not None else 0 :]
    for r in new:
        keep = min(keep, r.kept)
    keep = min(keep, status.n_steps)
    if keep == state.n_steps and not new:
        return state
    seen = ((new[-1].time, new[-1].kept),) if new else ((status.time, keep),)
    return dataclasses.replace(
        state, steps=state.steps[:keep], loss=state.loss[:keep], norms=state.norms[:keep], seen=seen
    )


def readout(state: MonitorState) -> str:
    """One line: updates recorded so far, the last update, updates/s, running or closed."""
    if state.status is None:
        return "waiting for the run to create the store (no store at this path yet)"
    last = state.status.last_step
    first = int(state.steps[0]) if len(state.steps) else None
    text = f"{state.n_steps} updates recorded"
    if last is not None and first is not None:  # as the title's loss span counts them: the loss is before each
        text += f" ({first}-{last}; loss taken before each)" if first < last else f" (update {last})"
    elif last is not None:
        text += f" (last update {last})"
    if state.status.resumes:
        text += f" · resumed from update {state.status.resumes[-1].iteration}"
    rate = state.steps_per_second
    if rate is not None:
        text += f" · {rate:.1f} updates/s"
    return text + (" · closed: the run has ended" if state.closed else " · running")


def _columns(ax) -> int:
    return max(1, int(np.ceil(ax.bbox.width)))  # pixel columns at the figure's dpi


class LiveMonitor(FigureWidget):
    """Follows the store at ``path`` (``Recorder(path=...)``), written by another
    process: a readout, the loss and each block's L2 norm of ``variable``'s ``kind``
    per update, the blocks named at their lines' ends (``.block_labels``). ``client``:
    which part of a multi-client store. ``.widget`` is the root ``VBox``; ``poll_now()``
    polls once; ``close()`` stops polling and closes the widget."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        variable: str | None = None,
        kind: str | None = None,
        *,
        client: int = 0,
        interval: float = 1.0,
        start: bool = True,
        figsize: tuple[float, float] = LIVE_MONITOR_HEADLINED_SIZE,
        dpi: float = style.DPI,
    ):
        if os.path.isfile(path):
            raise ValueError(
                f"LiveMonitor follows a store folder written by Recorder(path=...); {path!r} "
                "is a file (a saved recording? open it with dtsgd_viz.load_recording)."
            )
        self.store, self.client = StoreReader(path, client), client
        self.state = monitor_state(variable, kind)
        self.interval = float(interval)
        self.error = None  # the last poll's exception, shown in the readout
        super().__init__(figsize=figsize, dpi=dpi)
        set_pads = getattr(self._layout_engine, "set", None)
        if set_pads is not None:  # the name chips' boxes pad past their
            set_pads(w_pad=NAME_MARGIN / 72)  # text, which the layout sees
        self.label = widgets.Label(readout(self.state))
        self.widget = widgets.VBox([self.label, self.image])
        self.ax_loss, self.ax_norms = self.figure.subplots(1, 2)
        (self.loss_line,) = self.ax_loss.plot([], [], color="#333333", lw=1.2, gid="loss")
        for ax in (self.ax_loss, self.ax_norms):
            _frame(ax)
        self.ax_loss.set_xlabel("updates made (k)", fontsize=style.LABEL_SIZE)  # as every loss axis
        self.ax_loss.set_title("loss", fontsize=style.TITLE_SIZE)
        self.ax_loss.set_ylabel(LOSS_YLABEL, fontsize=style.LABEL_SIZE)
        self.ax_norms.set_ylabel("L2 norm of the block", fontsize=style.LABEL_SIZE)
        self.norm_lines = []
        self.median_line = None  # the median block's norm, what the headline speaks of
        self.block_labels = []  # the blocks' names at the right ends of their lines
        self._ticks = None  # the y scales and tick labels the layout was made for
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = None
        self.poll_now()
        if start and not self.state.closed:
            self.start()

    # ---- polling -----------------------------------------------------------------------

    def poll_now(self) -> bool:
        """Poll the store once; True when it held something new (the figure is redrawn)."""
        with self._lock:
            try:
                new = poll(self.state, self.store)
                self.error = None
            except Exception as e:  # noqa: BLE001 - shown, and polling goes on
                self.error = e
                self.label.value = f"{readout(self.state)} · poll failed: {e}"
                return False
            if new is self.state:
                return False
            self._draw(new)
            self.state = new
            self.label.value = readout(new)
            return True

    def start(self) -> None:
        """Poll every ``interval`` seconds in a background thread until the store is
        closed or ``close()`` is called."""
        if self.polling:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="LiveMonitor", daemon=True)
        self._thread.start()

    @property
    def polling(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.widget.comm is None:  # the widget was closed
                break
            self.poll_now()
            if self.state.closed:
                break

    def stop(self, timeout: float | None = 5.0) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def close(self) -> None:
        """Stop polling and close the widget."""
        self.stop()
        self.widget.close()
        self.label.close()
        self.image.close()

    # ---- drawing -----------------------------------------------------------------------

    def _draw(self, state: MonitorState) -> None:
        relayout = False
        if not self.norm_lines and state.blocks:
            self.norm_lines = [
                self.ax_norms.plot([], [], color=c, ls=ls, lw=1.4, label=name, gid=f"norm-{i}")[0]
                for i, (name, (c, ls)) in enumerate(zip(state.blocks, state.looks))
            ]
            if len(state.blocks) > 1:  # the headline's median, as the shard views draw it: over the lines
                (self.median_line,) = self.ax_norms.plot(
                    [], [], color=MEDIAN_COLOR, lw=1.4, zorder=2.6, gid="norm-median", path_effects=MEDIAN_EDGE
                )
            self.block_labels = self._name_blocks(state.blocks)
            relayout = True
        x = state.steps
        relayout |= self._set_titles(state)
        # a long run has more steps than pixel columns: each column's min and max drawn
        # the loss recorded at update k is the one before it: the loss after k - 1 updates
        self.loss_line.set_data(*minmax_decimate(x - 1, state.loss, _columns(self.ax_loss)))
        for i, line in enumerate(self.norm_lines):
            line.set_data(*minmax_decimate(x, state.norms[:, i], _columns(self.ax_norms)))
        if self.median_line is not None and len(x):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN updates: NaN
                med = median_line(state.norms)
            self.median_line.set_data(*minmax_decimate(x, med, _columns(self.ax_norms)))
        _scale_y(self.ax_loss, state.loss)
        _scale_y(self.ax_norms, state.norms, zeros=True)
        for ax, xs in ((self.ax_loss, x - 1), (self.ax_norms, x)):
            ax.relim()
            ax.autoscale_view()
            set_update_axis(ax, xs)  # from update 0, to the last (by the names)
        snap_log_limits(self.ax_loss)  # a labelled tick at each end of the loss axis
        ticks = tuple(_tick_texts(ax) for ax in (self.ax_loss, self.ax_norms))
        if relayout or ticks != self._ticks:  # new names, or the y tick labels changed width
            self._ticks = ticks
            self.unfreeze_layout()
            self.figure.draw_without_rendering()  # lays out: the labels are placed in it
        self._place_names(state)
        self.refresh()

    def _set_titles(self, state) -> bool:
        """The headline (finding so far, settings), what each panel draws; True when
        the headline's lines changed (the layout must make room)."""
        from ..views.core.figure import headline, headline_texts

        self.ax_loss.set_title("loss", fontsize=style.TITLE_SIZE)
        if state.blocks:
            grey = "; black: their median" if len(state.blocks) > 1 else ""
            self.ax_norms.set_title(
                f"‖{state.kind}‖ of each block of {state.variable!r}{grey}", fontsize=style.TITLE_SIZE
            )
        try:
            lr = self.store.rows("learning_rate", state.n_steps - 1, state.n_steps)[-1]
        except Exception:  # noqa: BLE001 - no rows yet, or an older store: lr left out
            lr = None
        part = self.store.header.get("part")  # a client's blocks: the median is of those
        who = None if part is None else f"client {self.client}'s {len(state.blocks)} blocks"
        texts = (
            monitor_finding(state.steps, state.loss, state.norms, state.kind, state.blocks, who=who),
            monitor_settings(self.store.header, lr),
        )
        if texts == getattr(self, "_headline", None):
            return False
        for a in [a for a in self.figure.artists if a.get_gid() == "subtitle"]:
            a.remove()
        self._headline, was = texts, [t.count("\n") for t in headline_texts(self.figure) if t]
        headline(self.figure, *texts)
        return was != [t.count("\n") for t in headline_texts(self.figure) if t]

    def _name_blocks(self, names):
        """A name per block right of the norm axes, on a chip of its colour (as the
        shard views' block labels), or a note when more blocks than fit its height one
        above the other."""
        from matplotlib.colors import to_rgb

        ax = self.ax_norms
        if len(names) * NAME_GAP * style.LABEL_SIZE > 0.96 * axes_height_points(ax):
            return [
                ax.text(
                    1.02,
                    0.5,
                    f"{len(names)} blocks:\ncoloured as\nin plot_shards",
                    transform=ax.transAxes,
                    ha="left",
                    va="center",
                    fontsize=style.NOTE_SIZE,
                    color="0.3",
                    gid="blocks-note",
                )
            ]
        out = []
        for name, line in zip(names, self.norm_lines):
            r, g, b = to_rgb(line.get_color())
            ink = "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.5 else "white"
            out.append(
                ax.text(
                    NAME_X,
                    0.5,
                    name,
                    transform=ax.transAxes,
                    ha="left",
                    va="center",
                    fontsize=style.LABEL_SIZE,
                    color=ink,
                    clip_on=False,
                    gid=f"block-label:{name}",
                    bbox=dict(boxstyle="round,pad=0.2", facecolor=line.get_color(), edgecolor="none"),
                )
            )
        return out

    def _place_names(self, state):
        """Each block's name at the height of its line's last drawable point, pushed
        apart so no two overprint."""
        ax, texts = self.ax_norms, self.block_labels
        if len(texts) != len(self.norm_lines):  # the note: nothing to place
            return
        log = ax.get_yscale() == "log"
        to_axes = ax.transData + ax.transAxes.inverted()
        shown, fracs = [], []
        for i, text in enumerate(texts):
            y = state.norms[:, i]
            ok = np.flatnonzero(np.isfinite(y) & ((y > 0) if log else True))
            text.set_visible(len(ok) > 0)
            if len(ok):
                shown.append(text)
                fracs.append(to_axes.transform((state.steps[ok[-1]], y[ok[-1]]))[1])
        gap = NAME_GAP * style.LABEL_SIZE / axes_height_points(ax)
        placed = spread(fracs, gap, 0.02, 0.98)
        for text, f in zip(shown, placed):
            text.set_y(f)
        for line in getattr(self, "leader_lines", []):
            line.remove()
        colors = [t.get_bbox_patch().get_facecolor() for t in shown]
        self.leader_lines = leaders(
            ax, fracs, placed, colors, x1=NAME_X - 0.004, min_shift=0.2 * gap, gid="name-leader"
        )
