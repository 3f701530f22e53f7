"""``PathExplorer``: scrub through ``plot_paths`` with a step slider and Play.

    recs = dtsgd_viz.run(surfaces.RotatedQuadratic(), configs, steps=200)
    dtsgd_viz.widgets.PathExplorer(recs, surfaces.RotatedQuadratic())   # last in a cell

Everything that follows the step (the position markers, the update arrows, the loss
markers, the step line and the title) is computed up front by pure functions
(``path_tracks``, then ``path_frame`` per step). The static parts (contours, the full
paths, the loss curves, legends) are rendered once and kept as a pixel background;
a slider move restores that background, draws only the moving artists onto it
(Agg blitting) and encodes the PNG with light compression, so scrubbing a
10,000-step recording costs the same as a 10-step one.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Mapping

import ipywidgets as widgets
import numpy as np

from ..views import _path_geometry as geo
from ..views.paths import _path_title, draw_paths
from ._canvas import FigureWidget

__all__ = ["PathExplorer", "PathExplorerState", "path_explorer_state", "PathTrack",
           "path_tracks", "PathFrame", "path_frame"]


# ---- pure: state, tracks, frames ----------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PathExplorerState:
    """The recorded steps (iterations) the slider can show, and the one it shows
    (``step`` indexes ``steps``)."""

    steps: tuple[int, ...]
    step: int

    @property
    def iteration(self) -> int:
        return self.steps[self.step]


def path_explorer_state(state: PathExplorerState, change) -> PathExplorerState:
    """The state after ``{"name": "step", "new": index}`` (a traitlets change)."""
    name, new = change["name"], change["new"]
    if name != "step":
        raise ValueError(f"Unknown change {name!r}. Allowed: ['step'].")
    n = len(state.steps)
    if isinstance(new, bool) or not isinstance(new, (int, np.integer)) or not 0 <= new < n:
        raise ValueError(f"step must be an int in 0..{n - 1}. Received: {new!r}.")
    return dataclasses.replace(state, step=int(new))


@dataclasses.dataclass(frozen=True, eq=False)
class PathTrack:
    """One optimizer's moving parts for every step, in plot coordinates.

    ``coords`` ``(n + 1, 2)``: the path (start first). ``loss_steps``/``loss``
    ``(n,)``: the loss panel's points. ``arrows``: ``((term, tails (n, 2), uvs (n,
    2)), ...)`` in drawing order, tip to tail (empty when arrows are off).
    """

    coords: np.ndarray
    loss_steps: np.ndarray
    loss: np.ndarray
    arrows: tuple


def arrows_possible(recording) -> bool:
    """Whether every step's update can be split into arrows (kinds param, grad and
    velocity, every step from step 1 recorded)."""
    steps = np.asarray(recording.steps)
    return ({"param", "grad", "velocity"} <= set(recording.kinds)
            and np.array_equal(steps, np.arange(1, len(steps) + 1)))


def _arrow_terms(recording, name, plane, coords):
    """``decompose_update`` + ``arrow_chain`` for every step at once (float64)."""
    n = len(recording)
    flat = lambda a: np.asarray(a, np.float64).reshape(n, -1)  # noqa: E731
    g = flat(recording.global_values(name, "grad"))
    v = flat(recording.global_values(name, "velocity"))
    hp = recording.hyperparameters
    lr = np.asarray(hp.learning_rate, np.float64).reshape(n, 1)
    mu = float(hp.momentum)
    with np.errstate(invalid="ignore", over="ignore"):
        terms = [("gradient", -lr * g)]
        if mu != 0.0:
            v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
            terms.insert(0, ("lookahead", mu * v) if hp.nesterov else ("momentum", mu * v_prev))
        out, tail = [], coords[:-1]
        for term, vec in terms:
            uv = vec @ plane.basis.T
            out.append((term, tail, uv))
            tail = tail + uv
    return tuple(out)


def path_tracks(scene, arrows: bool) -> dict[str, PathTrack]:
    """``{config: PathTrack}`` for a ``PathsView.scene``."""
    out = {}
    for key, rec in scene.recordings.items():
        coords = scene.coords[key]
        steps, loss, _ = scene.losses[key]
        terms = _arrow_terms(rec, scene.name, scene.plane, coords) if arrows else ()
        out[key] = PathTrack(coords, np.asarray(steps), np.asarray(loss, np.float64), terms)
    return out


@dataclasses.dataclass(frozen=True)
class PathFrame:
    """What the moving artists show at one step (data only, no pixels).

    ``positions[config]``: the parameter before the update (plot coordinates);
    ``arrows[(config, term)]``: ``(tail, uv)``; ``loss_markers[config]``:
    ``(step, loss)``; ``step_line``: the loss panel's step; ``title``.
    """

    index: int
    iteration: int
    positions: dict
    arrows: dict
    loss_markers: dict
    step_line: float
    title: str


def path_frame(scene, tracks: dict[str, PathTrack], index: int) -> PathFrame:
    """The frame at recording index ``index``."""
    positions, arrows, markers = {}, {}, {}
    for key, t in tracks.items():
        positions[key] = (float(t.coords[index, 0]), float(t.coords[index, 1]))
        for term, tails, uvs in t.arrows:
            arrows[(key, term)] = (tuple(map(float, tails[index])), tuple(map(float, uvs[index])))
        markers[key] = (float(t.loss_steps[index]), float(t.loss[index]))
    first = next(iter(tracks.values()))
    return PathFrame(index, int(next(iter(scene.recordings.values())).steps[index]), positions,
                     arrows, markers, float(first.loss_steps[index]), _path_title(scene, index))


# ---- the widget ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, eq=False)
class PathStatic:
    """What must not change while scrubbing: the drawn paths and loss curves (as the
    artists hold them), the axes limits, and how many backgrounds were rendered."""

    paths: dict
    loss_curves: dict
    limits: tuple
    backgrounds: int

    def same_as(self, other: PathStatic) -> bool:
        eq = lambda a, b: all(np.array_equal(a[k], b[k], equal_nan=True) for k in a)  # noqa: E731
        return (self.paths.keys() == other.paths.keys() and eq(self.paths, other.paths)
                and self.loss_curves.keys() == other.loss_curves.keys()
                and eq(self.loss_curves, other.loss_curves)
                and self.limits == other.limits and self.backgrounds == other.backgrounds)


def step_text(state: PathExplorerState) -> str:
    return f"iteration {state.iteration}  (recorded step {state.step + 1} of {len(state.steps)})"


class PathExplorer(FigureWidget):
    """``plot_paths`` with a step slider and a linked Play; ``.widget`` is the root
    ``VBox``, ``.view`` the ``PathsView`` (scene and artists).

    Args:
      recordings: ``{config: Recording}`` as ``dtsgd_viz.run`` returns (or one).
      surface: the surface they were recorded on.
      name: the recorded variable.
      step: the step index shown first.
      arrows: draw the update arrows (when every step's grad and velocity were
        recorded; otherwise only the markers move).
      interval: Play's milliseconds per frame; Play advances ``play.step`` steps per
        frame (about 200 frames for a whole run).
      compress_level: zlib level of the PNG (1: fast, slightly larger).
    """

    def __init__(self, recordings, surface, *, name="w", step=0, arrows=True, interval=100,
                 figsize=(11.5, 5.2), dpi=90, compress_level=1):
        recs = recordings if isinstance(recordings, Mapping) else {"recording": recordings}
        ok = bool(arrows) and all(arrows_possible(r) for r in recs.values()
                                  if hasattr(r, "kinds") and hasattr(r, "steps"))
        # draw_paths checks everything (recordings, surface, name, step) with clear errors
        self.view = draw_paths(recordings, surface, step, name=name, arrows=ok)
        scene = self.view.scene
        n = min(len(r) for r in scene.recordings.values())
        index = geo.check_step(step, {k: len(r) for k, r in scene.recordings.items()})
        steps = tuple(int(s) for s in next(iter(scene.recordings.values())).steps[:n])
        self.state = PathExplorerState(steps, index)
        self.view.figure.set_size_inches(*figsize)
        self.view.figure.set_dpi(dpi)
        super().__init__(self.view.figure)
        self.compress_level = int(compress_level)
        self.tracks = path_tracks(self.view.scene, ok)
        art = self.view.artists
        # drawn over the background in z-order, as a full draw would stack them
        self._moving = sorted([*art.positions.values(), *art.arrows.values(),
                               *art.loss_markers.values(), art.step_line, art.title],
                              key=lambda a: a.get_zorder())
        self.backgrounds = 0

        self.slider = widgets.IntSlider(value=index, min=0, max=n - 1, description="step",
                                        readout=False, continuous_update=True)
        self.play = widgets.Play(value=index, min=0, max=n - 1, step=max(1, n // 200),
                                 interval=interval, description="play")
        self._link = widgets.link((self.play, "value"), (self.slider, "value"))
        self.step_label = widgets.Label(step_text(self.state))
        self.widget = widgets.VBox([widgets.HBox([self.play, self.slider, self.step_label]),
                                    self.image])
        self.slider.observe(lambda change: self._on_step(change["new"]), names="value")
        self._apply(path_frame(self.view.scene, self.tracks, index))
        self._render_background()
        self.refresh()

    # -- data views for tests and callers --

    def frame(self) -> PathFrame:
        """What the moving artists show now (pure data)."""
        return path_frame(self.view.scene, self.tracks, self.state.step)

    def static_state(self) -> PathStatic:
        """The time-independent part of the figure, read back from its artists."""
        art = self.view.artists
        paths = {k: np.asarray(line.get_xydata()) for k, line in art.paths.items()}
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
        art = self.view.artists
        for key, (x, y) in frame.positions.items():
            art.positions[key].set_data([x], [y])
        for key, (tail, uv) in frame.arrows.items():
            q = art.arrows[key]
            q.set_offsets([tail])
            q.set_UVC([uv[0]], [uv[1]])
        for key, (s, loss) in frame.loss_markers.items():
            art.loss_markers[key].set_data([s], [loss])
        art.step_line.set_xdata([frame.step_line, frame.step_line])
        art.title.set_text(frame.title)

    def _render_background(self) -> None:
        """Lay the figure out once with everything drawn, then keep the pixels of
        everything but the moving artists."""
        canvas = self.figure.canvas
        self.unfreeze_layout()
        for a in self._moving:
            a.set_animated(False)
        canvas.draw()
        self.figure.set_layout_engine("none")
        for a in self._moving:
            a.set_animated(True)
        canvas.draw()
        self._background = canvas.copy_from_bbox(self.figure.bbox)
        self.backgrounds += 1

    def _blit(self) -> np.ndarray:
        canvas = self.figure.canvas
        canvas.restore_region(self._background)
        for a in self._moving:
            self.figure.draw_artist(a)
        return np.asarray(canvas.buffer_rgba())

    def pixels(self) -> np.ndarray:
        """The current frame as an ``(H, W, 4)`` uint8 array (background + moving artists)."""
        return self._blit().copy()

    def full_pixels(self) -> np.ndarray:
        """The same frame drawn from scratch, every artist (slow; for checking)."""
        for a in self._moving:
            a.set_animated(False)
        try:
            self.figure.canvas.draw()
            return np.asarray(self.figure.canvas.buffer_rgba()).copy()
        finally:
            for a in self._moving:
                a.set_animated(True)

    def render(self) -> bytes:
        """The current frame as PNG bytes (blitted; the figure is not re-drawn)."""
        from PIL import Image
        rgb = Image.fromarray(self._blit()[..., :3])
        buf = io.BytesIO()
        rgb.save(buf, format="PNG", compress_level=self.compress_level)
        return buf.getvalue()

    def _on_step(self, value) -> None:
        self.state = path_explorer_state(self.state, {"name": "step", "new": value})
        self._apply(self.frame())
        self.refresh()
        self.step_label.value = step_text(self.state)

