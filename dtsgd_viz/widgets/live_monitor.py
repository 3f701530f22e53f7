"""``LiveMonitor``: follow a store that another process is writing (``Recorder(path=...)``).

    dtsgd_viz.widgets.LiveMonitor("run.zarr")      # last expression of a cell

It shows how many steps have landed and how fast, the loss, and the L2 norm of every
shard of one variable's velocity (or another kind) over time, refreshed as new steps
are committed. A background thread polls every ``interval`` seconds; each poll goes
through ``poll(state, store)`` (old state + what the store now holds -> new state;
tested without a thread or a browser), reads only the steps it has not seen, and
updates the lines in place. A run that resumes the store (``Recorder(path=...,
resume=True)``) supersedes the steps after its checkpoint, so the committed count can
drop: each poll drops the rows past what every resume it had not seen kept, then reads
the new run's steps (never the superseded ones twice). Polling stops when the run closes
the store or the widget is closed. No TensorFlow is imported.
"""

from __future__ import annotations

import dataclasses
import threading

import ipywidgets as widgets
import numpy as np

from ..recording.store import PartStatus, StoreReader
from ..views.shard_geometry import minmax_decimate
from ..views.style import device_color
from ._canvas import FigureWidget

RATE_WINDOW = 10
"""Steps per second are measured over the last this many commits a poll saw."""


@dataclasses.dataclass(frozen=True, eq=False)
class MonitorState:
    """What the monitor has read so far: ``steps`` (iterations), ``loss`` and ``norms``
    (``(n, n_blocks)``, one column per stored block of ``variable``'s ``kind``, labelled
    by the devices holding it in ``blocks``), the last ``status`` of the store (None
    until the run has created it) and ``seen``: ``(commit time, committed steps)`` of
    the last commits seen, for the rate."""

    variable: str | None = None
    kind: str | None = None
    blocks: tuple[str, ...] = ()
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


def monitor_state(variable=None, kind=None) -> MonitorState:
    """The state before the first poll: follow ``variable`` (default: the first) and
    ``kind`` (default: velocity when recorded, else the first recorded kind)."""
    return MonitorState(variable, kind)


def _labels(header, index) -> tuple[str, ...]:
    from ..geometry import shard_geometry
    from ..specs import LayoutSpec
    v = header["variables"][index]
    geom = shard_geometry(tuple(v["shape"]), LayoutSpec.from_dict(v["layout"]))
    groups = geom.replica_groups
    if "part" in header:  # a client of a multi-client run stores its devices' blocks
        groups = [geom.replica_groups[g] for g, _ in geom.held_groups(header["part"]["devices"])]
    return tuple("devices " + ",".join(map(str, g)) if len(g) > 1 else f"device {g[0]}"
                 for g in groups)


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
        state = dataclasses.replace(state, variable=variable, kind=kind,
                                    blocks=_labels(header, index),
                                    norms=np.zeros((0, len(_labels(header, index)))),
                                    seen=((status.started, 0),))
    state = _drop_superseded(state, status)
    start, stop = state.n_steps, status.n_steps
    if stop > start:
        steps = np.concatenate([state.steps, store.rows("steps", start, stop)])
        loss = np.concatenate([state.loss, store.rows("loss", start, stop)])
        norms = np.concatenate([state.norms, store.block_norms(state.variable, state.kind,
                                                               start, stop)])
    else:
        steps, loss, norms = state.steps, state.loss, state.norms
    seen = state.seen
    if stop != seen[-1][1]:
        seen = (seen + ((status.time, stop),))[-RATE_WINDOW:]
    return dataclasses.replace(state, steps=steps, loss=loss, norms=norms, status=status,
                               seen=seen)


def _drop_superseded(state: MonitorState, status: PartStatus) -> MonitorState:
    """``state`` without the rows a resume since its last poll superseded (those past
    the steps it kept), and its rate measured from that resume."""
    keep = state.n_steps
    new = status.resumes[len(state.status.resumes) if state.status is not None else 0:]
    for r in new:
        keep = min(keep, r.kept)
    keep = min(keep, status.n_steps)
    if keep == state.n_steps and not new:
        return state
    seen = ((new[-1].time, new[-1].kept),) if new else ((status.time, keep),)
    return dataclasses.replace(state, steps=state.steps[:keep], loss=state.loss[:keep],
                               norms=state.norms[:keep], seen=seen)


def readout(state: MonitorState) -> str:
    """One line: steps so far, the last update, steps/s, running or closed."""
    if state.status is None:
        return "waiting for the run to create the store (no store at this path yet)"
    last = state.status.last_step
    text = f"{state.n_steps} steps" + ("" if last is None else f" (last update {last})")
    if state.status.resumes:
        text += f" · resumed from update {state.status.resumes[-1].iteration}"
    rate = state.steps_per_second
    if rate is not None:
        text += f" · {rate:.1f} steps/s"
    return text + (" · closed: the run has ended" if state.closed else " · running")


def _columns(ax) -> int:
    return max(1, int(np.ceil(ax.bbox.width)))  # pixel columns at the figure's dpi


class LiveMonitor(FigureWidget):
    """Follows the store at ``path`` (``Recorder(path=...)``), written by another
    process: a readout, the loss and per-shard norms of ``variable``'s ``kind``.
    ``client``: which part of a multi-client store. ``.widget`` is the root ``VBox``;
    ``poll_now()`` polls once; ``close()`` stops polling and closes the widget."""

    def __init__(self, path, variable=None, kind=None, *, client=0, interval=1.0,
                 start=True, figsize=(11.5, 4.0), dpi=90):
        import os
        if os.path.isfile(path):
            raise ValueError(
                f"LiveMonitor follows a store folder written by Recorder(path=...); {path!r} "
                "is a file (a saved recording? open it with dtsgd_viz.load_recording).")
        self.store = StoreReader(path, client)
        self.state = monitor_state(variable, kind)
        self.interval = float(interval)
        self.error = None  # the last poll's exception, shown in the readout
        super().__init__(figsize=figsize, dpi=dpi)
        self.label = widgets.Label(readout(self.state))
        self.widget = widgets.VBox([self.label, self.image])
        self.ax_loss, self.ax_norms = self.figure.subplots(1, 2)
        (self.loss_line,) = self.ax_loss.plot([], [], color="#333333", lw=1.2)
        self.ax_loss.set(xlabel="iteration", title="loss")
        self.ax_norms.set(xlabel="iteration")
        self.norm_lines = []
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

    def stop(self, timeout=5.0) -> None:
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
        if not self.norm_lines and state.blocks:
            n = len(state.blocks)
            self.norm_lines = [self.ax_norms.plot([], [], color=device_color(i, n), lw=1.0,
                                                  label=label)[0]
                               for i, label in enumerate(state.blocks)]
            self.ax_norms.set_title(f"‖{state.kind}‖ per shard: {state.variable}")
            if n <= 10:
                self.ax_norms.legend(fontsize=7, loc="upper left", ncol=2)
            self.unfreeze_layout()
        x = state.steps
        # a long run has more steps than pixel columns: each column's min and max drawn
        self.loss_line.set_data(*minmax_decimate(x, state.loss, _columns(self.ax_loss)))
        for i, line in enumerate(self.norm_lines):
            line.set_data(*minmax_decimate(x, state.norms[:, i], _columns(self.ax_norms)))
        for ax in (self.ax_loss, self.ax_norms):
            ax.relim()
            ax.autoscale_view()
        self.refresh()
