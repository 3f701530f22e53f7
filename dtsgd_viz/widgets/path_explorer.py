"""``PathExplorer``: scrub through ``plot_paths`` update by update with a slider and Play.

    recs = dtsgd_viz.run(surfaces.RotatedQuadratic(), configs, steps=200)
    dtsgd_viz.widgets.PathExplorer(recs, surfaces.RotatedQuadratic())   # last in a cell

The slider's value is the update shown, as ``recording.steps`` counts them (the first
is 1). What follows the update (markers, arrows, trails, close-ups, loss markers, the
update line, the titles) is computed up front (``path_tracks``, then ``path_frame``).
The static parts (contours, thin whole runs, loss curves) are kept as a pixel
background; a slider move draws only the moving artists onto it (Agg blitting).
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets
import numpy as np

from ..views.core import style
from ..views.paths import geometry as geo
from ..views.paths.frames import follow_update, path_title, set_trail, stacked_over, thin_paths
from ..views.update import geometry as upd
from ..views.update import panel
from ._canvas import FigureWidget
from .explorer_figure import (
    draw_close_ups,
    explorer_view,
    follow_headline,
    headline_parts,
    mark_mean,
    move_loss_dots,
    show_arrows,
    update_finding,
)

if TYPE_CHECKING:
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from ..recording import Recording
    from ..theory.surfaces import Surface
    from ..views.paths.scene import PathScene

__all__ = [
    "PathExplorer",
    "PathExplorerState",
    "path_explorer_state",
    "PathTrack",
    "shared_text",
    "path_tracks",
    "PathFrame",
    "path_frame",
]


# ---- pure: state, tracks, frames ----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PathExplorerState:
    """The updates the slider can show (``recording.steps``) and the one it shows
    (``updates[index]``)."""

    updates: tuple[int, ...]
    index: int

    @property
    def update(self) -> int:
        return self.updates[self.index]


def path_explorer_state(state: PathExplorerState, change: Mapping[str, Any]) -> PathExplorerState:
    """The state after ``{"name": "update", "new": k}`` (a traitlets change): update
    ``k``, or the nearest recorded one when ``k`` falls between recorded updates."""
    name, new = change["name"], change["new"]
    if name != "update":
        raise ValueError(f"Unknown change {name!r}. Allowed: ['update'].")
    u = np.asarray(state.updates)
    if isinstance(new, bool) or not isinstance(new, (int, np.integer)) or not u[0] <= new <= u[-1]:
        raise ValueError(
            f"update must be an int in {int(u[0])}..{int(u[-1])} ({geo.describe_updates(u)}). Received: {new!r}."
        )
    return dataclasses.replace(state, index=int(np.argmin(np.abs(u - int(new)))))


@dataclasses.dataclass(frozen=True, eq=False)
class PathTrack:
    """One optimizer's moving parts for every update, in plot coordinates.

    ``coords`` ``(n + 1, 2)``: the path (start first). ``loss_steps``/``loss``
    ``(n,)``: the loss panel's points. ``arrows``: ``((term, tails (n, 2), uvs (n,
    2)), ...)`` in drawing order, tip to tail (empty when arrows are off).
    ``iterates`` ``(n, 2)``: Nesterov's iterate ``p - mu*v_prev`` behind each
    look-ahead point (None for other rules or without arrows).
    """

    coords: np.ndarray
    loss_steps: np.ndarray
    loss: np.ndarray
    arrows: tuple
    iterates: np.ndarray | None = None


def arrows_possible(recording: Recording) -> bool:
    """Whether every update can be split into arrows (kinds param, grad and velocity,
    every update from update 1 recorded)."""
    steps = np.asarray(recording.steps)
    return {"param", "grad", "velocity"} <= set(recording.kinds) and np.array_equal(steps, np.arange(1, len(steps) + 1))


def _arrow_terms(recording, name, plane, coords):
    """``decompose_update`` + ``arrow_chain`` for every update at once (float64), and
    Nesterov's iterates."""
    n = len(recording)
    flat = lambda a: np.asarray(a, np.float64).reshape(n, -1)  # noqa: E731
    g = flat(recording.global_values(name, "grad"))
    v = flat(recording.global_values(name, "velocity"))
    hp = recording.hyperparameters
    lr = np.asarray(hp.learning_rate, np.float64).reshape(n, 1)
    mu = float(hp.momentum)
    iterates = None
    with np.errstate(invalid="ignore", over="ignore"):
        terms = [("gradient", -lr * g)]
        if mu != 0.0:
            v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
            terms.insert(0, ("lookahead", mu * v) if hp.nesterov else ("momentum", mu * v_prev))
            if hp.nesterov:
                iterates = coords[:-1] - (mu * v_prev) @ plane.basis.T
        out, tail = [], coords[:-1]
        for term, vec in terms:
            uv = vec @ plane.basis.T
            out.append((term, tail, uv))
            tail = tail + uv
    return tuple(out), iterates


def path_tracks(scene: PathScene, arrows: bool) -> dict[str, PathTrack]:
    """``{config: PathTrack}`` for a ``PathsView.scene``."""
    out = {}
    for key, rec in scene.recordings.items():
        coords = scene.coords[key]
        steps, loss, _ = scene.losses[key]
        terms, iterates = _arrow_terms(rec, scene.name, scene.plane, coords) if arrows else ((), None)
        out[key] = PathTrack(coords, np.asarray(steps), np.asarray(loss, np.float64), terms, iterates)
    return out


@dataclasses.dataclass(frozen=True)
class PathFrame:
    """What the moving artists show at one update (data only, no pixels).

    Update n is marked as ``plot_paths`` and ``findings`` mark it:
    ``positions[config]``, the ring, at the parameters after update n (plot
    coordinates); ``arrows[(config, term)]``: ``(tail, uv)``, from the parameters
    before it; ``panels[config]``: the close-up's ``PanelData`` (when arrows are on);
    ``loss_markers[config]``: ``(n, loss after n updates)``; ``step_line``: n, the loss
    panel's grey line; ``title``, ``finding`` (``findings(..., upto=n)``)."""

    index: int
    update: int
    positions: dict
    arrows: dict
    loss_markers: dict
    step_line: float
    title: str
    panels: dict = dataclasses.field(default_factory=dict)
    finding: str = ""


def path_frame(scene: PathScene, tracks: dict[str, PathTrack], index: int) -> PathFrame:
    """The frame at recording index ``index``."""
    positions, arrows, markers, panels = {}, {}, {}, {}
    update = int(next(iter(scene.recordings.values())).steps[index])
    for key, t in tracks.items():
        after = min(index + 1, len(t.coords) - 1)  # the parameters after the update (scene.ring_index)
        positions[key] = (float(t.coords[after, 0]), float(t.coords[after, 1]))
        chain = []
        for term, tails, uvs in t.arrows:
            arrows[(key, term)] = (tuple(map(float, tails[index])), tuple(map(float, uvs[index])))
            chain.append((term, tails[index], uvs[index]))
        if chain:
            nesterov = None if t.iterates is None else (t.iterates[index], t.coords[index])
            panels[key] = panel.panel_data(key, update, t.coords, index, chain, nesterov, scene.box)
        markers[key] = (float(t.loss_steps[after]), float(t.loss[after]))
    first = next(iter(tracks.values()))
    after = min(index + 1, len(first.loss_steps) - 1)
    return PathFrame(
        index,
        update,
        positions,
        arrows,
        markers,
        float(first.loss_steps[after]),
        path_title(scene, update),
        panels,
        update_finding(scene, index),
    )


# ---- the widget ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class PathStatic:
    """What must not change while scrubbing: the paths and loss curves drawn, the axes
    limits, and how many backgrounds were rendered."""

    paths: dict
    loss_curves: dict
    limits: tuple
    backgrounds: int

    def same_as(self, other: PathStatic) -> bool:
        eq = lambda a, b: all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)  # noqa: E731
        return (
            self.paths.keys() == other.paths.keys()
            and eq(self.paths, other.paths)
            and self.loss_curves.keys() == other.loss_curves.keys()
            and eq(self.loss_curves, other.loss_curves)
            and self.limits == other.limits
            and self.backgrounds == other.backgrounds
        )


def step_text(state: PathExplorerState, lengths: Mapping[str, int] | None = None) -> str:
    """The slider's label; ``lengths`` (``{config: recorded updates}``) adds, when the
    runs differ in length, that only the updates all runs share are shown."""
    u = state.updates
    if u == tuple(range(1, len(u) + 1)):
        text = f"update {state.update} of {u[-1]}"
    else:
        text = f"update {state.update}  ({state.index + 1} of {len(u)} recorded updates)"
    return text + shared_text(lengths)


def shared_text(lengths: Mapping[str, int] | None) -> str:
    """``"; showing the 10 updates all runs share; momentum and nesterov have 30"`` when
    the runs of ``lengths`` (``{config: recorded updates}``) differ in length, else ``""``."""
    if not lengths or len(set(lengths.values())) < 2:
        return ""
    n = min(lengths.values())
    longer = {}
    for key, m in lengths.items():
        if m > n:
            longer.setdefault(m, []).append(key)
    parts = []
    for m, keys in sorted(longer.items()):
        names = keys[0] if len(keys) == 1 else ", ".join(keys[:-1]) + " and " + keys[-1]
        parts.append(f"{names} {'has' if len(keys) == 1 else 'have'} {m}")
    return f"; showing the {n} updates all runs share; " + ", ".join(parts)


def _spacing(updates) -> int:
    """The slider's step: the recording's spacing when even, else 1 (the state snaps)."""
    d = np.diff(np.asarray(updates))
    return int(d[0]) if len(d) and np.all(d == d[0]) else 1


class PathExplorer(FigureWidget):
    """``plot_paths`` with an update slider and a linked Play; ``.widget`` is the root
    ``VBox``, ``.view`` the ``PathsView`` (scene and artists).

    Args:
      recordings: ``{config: Recording}`` as ``dtsgd_viz.run`` returns (or one).
      surface: the surface they were recorded on.
      name: the recorded variable.
      step: the update shown first, as ``recording.steps`` counts them (the first
        update is 1; ``-1`` the last); None: the first recorded update.
      arrows: draw the update arrows (when every update's grad and velocity were
        recorded; otherwise only the markers move).
      zoom: a close-up panel per run under the paths, following the update shown
        (its terms as thick arrows with their lengths, Nesterov's look-ahead point;
        ``explorer_figure``): at the paths' scale most updates are a few pixels. The
        panels are redrawn for every update (0.2-0.5 s a move); False: paths and loss
        only, ~20 ms a move.
      interval: Play's milliseconds per frame (None: 300 with the close-ups, the pace
        they redraw at, else 100); Play advances ``play.step`` updates per
        frame (about 200 frames for a whole run).
      figsize: the figure's size in inches (None: as ``plot_paths`` makes it).
      compress_level: zlib level of the PNG (1: fast, slightly larger).

    The slider's value is the update shown (``slider.value = 5`` shows update 5).
    """

    def __init__(
        self,
        recordings: Recording | Mapping[str, Recording],
        surface: Surface,
        *,
        name: str = "w",
        step: int | None = None,
        arrows: bool = True,
        zoom: bool = True,
        interval: int | None = None,
        figsize: tuple[float, float] | None = None,
        dpi: float = style.DPI,
        compress_level: int = 1,
    ):
        recs = recordings if isinstance(recordings, Mapping) else {"recording": recordings}
        ok = bool(arrows) and all(
            arrows_possible(r) for r in recs.values() if hasattr(r, "kinds") and hasattr(r, "steps")
        )
        # as plot_paths: without arrows where the recording can't give them, and a note why
        note = None
        if arrows and not ok:
            note = next(
                (
                    upd.why_no_arrows(r)
                    for r in recs.values()
                    if hasattr(r, "kinds") and hasattr(r, "steps") and upd.why_no_arrows(r)
                ),
                None,
            )
        first = None
        if step is None and recs and all(hasattr(r, "steps") and len(r) for r in recs.values()):
            first = -min(len(r) for r in recs.values())  # the first update they share
        # draw_paths checks everything (recordings, surface, name, step) with clear errors
        self.view = explorer_view(
            recordings, surface, first if step is None else step, name=name, arrows=ok, zoom=zoom, note=note
        )
        scene = self.view.scene
        n = min(len(r) for r in scene.recordings.values())
        updates = tuple(int(s) for s in next(iter(scene.recordings.values())).steps[:n])
        assert self.view.update is not None  # draw_paths drew step or the first shared update
        index = geo.step_index(updates, self.view.update)
        self.state = PathExplorerState(updates, index)
        pixels = self.view.figure.get_size_inches() * self.view.figure.dpi
        if figsize is not None:
            self.view.figure.set_size_inches(*figsize)
        self.view.figure.set_dpi(dpi)
        if np.any(self.view.figure.get_size_inches() * self.view.figure.dpi > pixels):
            thin_paths(scene, self.view.artists)  # a long run's lines as fine as the bigger figure's pixels
        super().__init__(self.view.figure)
        self.compress_level = int(compress_level)
        self.tracks = path_tracks(self.view.scene, ok)
        art = self.view.artists
        # drawn over the background in z-order, as a full draw would stack them; the
        # zoomed panels are redrawn whole for every update (their limits follow it)
        moving = [
            *art.positions.values(),
            *art.arrows.values(),
            *art.trails.values(),
            *art.loss_markers.values(),
            art.step_line,
            art.title,
            *art.paths.values(),
            *art.loss_lines.values(),  # redrawn over the headline's mean band, which moves
            *([art.caption] if art.caption else []),
            *headline_parts(self.figure, art),
        ]
        band = ("loss-window", "loss-mean:", "loss-later")  # the mean band and veil: replaced at each move, in _window
        self._still_moving = [a for a in moving + stacked_over(moving) if not (a.get_gid() or "").startswith(band)]
        self._window: list = []  # the mean band of the update shown (mark_mean), redrawn each move
        self._animated = False
        self.backgrounds = 0

        spacing = _spacing(updates)
        self.slider = widgets.IntSlider(
            value=updates[index],
            min=updates[0],
            max=updates[-1],
            step=spacing,
            description="update",
            readout=False,
            continuous_update=True,
        )
        self.play = widgets.Play(
            value=updates[index],
            min=updates[0],
            max=updates[-1],
            step=spacing * max(1, n // 200),
            description="play",
            interval=interval or (300 if art.zoom_axes else 100),
        )
        self._link = widgets.link((self.play, "value"), (self.slider, "value"))
        self.lengths = {k: len(r) for k, r in scene.recordings.items()}
        self.step_label = widgets.Label(step_text(self.state, self.lengths))
        self.widget = widgets.VBox([widgets.HBox([self.play, self.slider, self.step_label]), self.image])
        self.slider.observe(lambda change: self._on_step(change["new"]), names="value")
        self._apply(path_frame(self.view.scene, self.tracks, index))
        self._render_background()
        if art.zoom_axes:  # the panels' labels placed again, on the laid-out panels
            self._apply(path_frame(self.view.scene, self.tracks, index))
        self.refresh()

    # -- data views for tests and callers --

    def frame(self) -> PathFrame:
        """What the moving artists show now (pure data)."""
        return path_frame(self.view.scene, self.tracks, self.state.index)

    def static_state(self) -> PathStatic:
        """The time-independent part of the figure, read back from its artists."""
        art = self.view.artists
        paths = {k: np.asarray(line.get_xydata()) for k, line in (art.rests or art.paths).items()}  # whole runs
        curves = {}
        if art.ax_loss is not None:
            for line in art.ax_loss.lines:
                gid = line.get_gid() or ""
                if gid.startswith("loss:"):
                    curves[gid[5:]] = np.asarray(line.get_xydata())
        limits = tuple((ax.get_xlim(), ax.get_ylim()) for ax in (art.ax_path, art.ax_loss) if ax)
        return PathStatic(paths, curves, limits, self.backgrounds)

    # -- drawing --

    def _apply(self, frame: PathFrame) -> None:
        art, scene = self.view.artists, self.view.scene
        follow_update(scene, art, frame.update)
        for key, (x, y) in frame.positions.items():
            art.positions[key].set_data([x], [y])
            if key in art.trails:
                set_trail(art.trails[key], scene.coords[key], frame.index + 1, scene.colors[key])
        for key, (tail, uv) in frame.arrows.items():
            q = art.arrows[key]
            q.set_offsets([tail])
            q.set_UVC([uv[0]], [uv[1]])
        draw_close_ups(scene, art, {k: d for k, d in frame.panels.items() if k in art.zoom_axes})
        follow_headline(self.figure, scene, art, frame.update, frame.finding)
        move_loss_dots(art, frame.loss_markers)
        self._window = mark_mean(scene, art, frame.update)
        for a in self._window:
            a.set_animated(self._animated)
        assert art.step_line is not None  # draw_scene drew the loss panel's update line
        art.step_line.set_xdata([frame.step_line, frame.step_line])
        show_arrows(scene, art, frame.update, frame.title)

    def _moving(self) -> list:
        """What follows the update, in z-order as a full draw stacks it, then the close-ups
        (redrawn whole for every update: their limits follow it)."""
        art = self.view.artists
        return sorted([*self._still_moving, *self._window], key=lambda a: a.get_zorder()) + list(art.zoom_axes.values())

    def _set_animated(self, on: bool) -> None:
        self._animated = on
        for a in self._moving():
            a.set_animated(on)

    def _render_background(self) -> None:
        """Lay the figure out once with everything drawn, then keep the pixels of
        everything but the moving artists."""
        canvas = cast("FigureCanvasAgg", self.figure.canvas)  # FigureWidget's: an Agg canvas
        self.unfreeze_layout()
        self._set_animated(False)
        canvas.draw()
        self.figure.set_layout_engine("none")
        self._set_animated(True)
        canvas.draw()
        self._background = canvas.copy_from_bbox(self.figure.bbox)
        self.backgrounds += 1

    def _blit(self) -> np.ndarray:
        canvas = cast("FigureCanvasAgg", self.figure.canvas)  # FigureWidget's: an Agg canvas
        canvas.restore_region(self._background)
        for a in self._moving():
            self.figure.draw_artist(a)
        return np.asarray(canvas.buffer_rgba())

    def pixels(self) -> np.ndarray:
        """The current frame as an ``(H, W, 4)`` uint8 array (background + moving artists)."""
        return self._blit().copy()

    def full_pixels(self) -> np.ndarray:
        """The same frame drawn from scratch, every artist (slow; for checking)."""
        self._set_animated(False)
        try:
            canvas = cast("FigureCanvasAgg", self.figure.canvas)  # FigureWidget's: an Agg canvas
            canvas.draw()
            return np.asarray(canvas.buffer_rgba()).copy()
        finally:
            self._set_animated(True)

    def render(self) -> bytes:
        """The current frame as PNG bytes (blitted; the figure is not re-drawn)."""
        from PIL import Image

        rgb = Image.fromarray(self._blit()[..., :3])
        buf = io.BytesIO()
        rgb.save(buf, format="PNG", compress_level=self.compress_level)
        return buf.getvalue()

    def _on_step(self, value) -> None:
        self.state = path_explorer_state(self.state, {"name": "update", "new": value})
        if self.state.update != value:  # between recorded updates: show the nearest
            self.slider.value = self.state.update
            return
        self._apply(self.frame())
        self.refresh()
        self.step_label.value = step_text(self.state, self.lengths)
