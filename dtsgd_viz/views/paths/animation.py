"""``animate``: ``plot_paths`` going through a run update by update (a
``FuncAnimation``), at a pace one can follow, holding the last frame, the loss curves
drawn as far as the update shown. ``views.paths.scene`` computes the scene and
``views.paths.frames`` draws each frame's parts; this module only moves them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..core import style
from ..core.figure import canvas_renderer
from ..text.clashes import clashes
from ..update import geometry as upd
from . import geometry as geo
from .findings import findings_of
from .frames import draw_scene, draw_zoom, follow_update, panel_at, set_trail
from .gif_zoom import box_points, fitted_zoom, fixed_boxes, zoom_schedule
from .labels import boxes_overlap, renderer_of, text_box
from .loss import mark_window, nest_loss_dots
from .names import open_rings_on_star, place_names
from .scene import build_scene
from .thin import up_to
from .titles import path_title, short_arrows

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from numpy.typing import ArrayLike
    from PIL import Image

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface
    from ..update.panel import PanelData
    from .frames import PathArtists
    from .scene import PathScene

__all__ = ["animate"]


def _frames(frames: int | Iterable[int] | None, steps: np.ndarray) -> list[int]:
    """Recording indices of the frames: None (every update), a number of evenly spaced
    ones, or a list of update numbers."""
    n = len(steps)
    if frames is None:
        return list(range(n))
    if isinstance(frames, (int, np.integer)) and not isinstance(frames, bool):
        if frames < 1:
            raise ValueError(f"frames must be >= 1. Received: frames={frames}.")
        return sorted(set(np.linspace(0, n - 1, min(int(frames), n)).round().astype(int).tolist()))
    try:
        items = list(cast("Iterable[int]", frames))  # (a bool, not iterable: the TypeError below)
    except TypeError:
        raise ValueError(
            "frames must be None (every update), an int >= 1 (evenly spaced frames) or a "
            f"list of update numbers. Received: frames={frames!r}."
        ) from None
    for f in items:
        if f is None:
            raise ValueError(
                "frames lists update numbers (ints, as recording.steps counts them, or "
                f"negative counts back from the last); None is not one. Received: "
                f"frames={items!r}. Allowed: {geo.describe_updates(steps)}."
            )
    try:
        # f is an update (None was refused above): check_step gives an update back
        out = [geo.step_index(steps, cast(int, geo.check_step(f, {"recordings": steps}))) for f in items]
    except ValueError as e:
        raise ValueError(f"frames={items!r}: {e}") from None
    if not out:
        raise ValueError("frames is empty: give None, a number of frames, or update numbers.")
    return out


def animate(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    *,
    name: str | None = None,
    frames: int | Iterable[int] | None = None,
    interval: float = 250,
    hold: int = 8,
    zoom: bool = True,
) -> FuncAnimation:
    """A ``matplotlib.animation.FuncAnimation`` of ``plot_paths`` going through the run
    update by update: each path grows in its rule's look over its whole run drawn thin, the arrows, the zoomed
    panels and the loss marker follow the update, and the loss curves grow up to the
    update shown over their whole runs drawn thin (each named at its run's end, where
    the name stays). Each zoomed panel is drawn on the first box where its labels
    neither overlap nor are crossed by another's leader (``draw_clear_zoom``): an update
    that hardly moves is shown closer than the explorer shows it.

    ``frames``: None (every recorded update), a number of evenly spaced frames, or a
    list of update numbers (as ``recording.steps`` counts them). ``interval``:
    milliseconds per frame (250: four updates a second, slow enough to follow the
    arrows). ``hold``: how many extra frames the last frame is held for before the
    animation starts again. ``anim.frame_updates`` lists the update of every frame.
    Save with ``anim.save("paths.gif", writer="pillow")`` (MP4 needs ffmpeg; a GIF keeps
    the figure's colours exact, ``with_palette``); in a
    notebook, ``IPython.display.HTML(anim.to_jshtml())``.
    """
    from matplotlib.animation import FuncAnimation

    if isinstance(hold, bool) or not isinstance(hold, (int, np.integer)) or hold < 0:
        raise ValueError(f"hold must be an integer >= 0 (extra frames). Received: hold={hold!r}.")
    scene = build_scene(recordings, surface, name)
    n = min(len(r) for r in scene.recordings.values())
    steps = np.asarray(next(iter(scene.recordings.values())).steps[:n])
    frame_list = _frames(frames, steps)
    arrows = _arrows_drawable(scene, frame_list)
    fig, art = draw_scene(scene, int(steps[frame_list[0]]), None, arrows, zoom=zoom, run_names=True)
    assert art.ax_loss is not None  # a new figure's: with its loss panel
    ax_loss = art.ax_loss
    ax_loss.set_autoscale_on(False)  # limits of the whole run while the curves grow

    zooms = gif_zooms(scene, art, arrows, frame_list)
    art.frame_marks = [scene.coords[k][min(i, len(scene.coords[k]) - 1)] for k in scene.coords for i in frame_list]

    def update(i: int) -> list[Artist]:
        return _move_to(scene, art, arrows, steps, i, zooms)

    draw_loss_rests(scene, art)
    mark_window(art, findings_of(scene))  # the updates whose mean loss the headline compares
    update(frame_list[0])
    # Lay the figure out once: re-running the layout on every frame costs time and
    # makes the panels jitter as the title text changes.
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    sequence = frame_list + [frame_list[-1]] * int(hold)
    anim = FuncAnimation(
        fig, update, frames=sequence, interval=interval, blit=False, repeat=True, cache_frame_data=False
    )
    setattr(anim, "frame_updates", [int(steps[i]) for i in sequence])  # noqa: B010  # our own: each frame's update
    anim.save = lambda filename, writer=None, *a, **kw: _save(anim, filename, writer, *a, **kw)
    return anim


def _save(anim: FuncAnimation, filename: str | Path, writer: Any = None, *args: Any, **kwargs: Any) -> None:
    """``FuncAnimation.save``, but a GIF (``writer="pillow"``, or none for a ``.gif``)
    keeps the figure's role and rule colours exact (Pillow's adaptive palette merges the
    few pixels of the minimum's yellow star into the orange around it), is drawn at
    ``style.DPI`` at least (a lower ``dpi`` is raised to it: its frames as wide as the
    figures, its text at their sizes) and shares one palette over all its frames (the
    still parts stay the same pixels, so each frame stores only what moved)."""
    from matplotlib.animation import FuncAnimation

    if writer == "pillow" or (writer is None and str(filename).lower().endswith(".gif")):
        fps = (args[0] if args else kwargs.pop("fps", None)) or 1000.0 / anim._interval  # pyright: ignore[reportAttributeAccessIssue]  # private, not in the stubs
        writer = _palette_writer(fps)
        if len(args) < 2:  # dpi is FuncAnimation.save's 4th argument
            kwargs["dpi"] = max(float(kwargs.get("dpi") or style.DPI), float(style.DPI))
    return FuncAnimation.save(anim, filename, writer, *args, **kwargs)


# the colours a GIF frame's palette always holds exactly
KEPT_COLORS = (style.MINIMUM_FACE, *style.OPTIMIZER_COLORS.values(), "white", "black")


def _palette_writer(fps: float) -> PillowWriter:
    from matplotlib.animation import PillowWriter

    class PaletteWriter(PillowWriter):
        def finish(self) -> None:
            rgb = [f for f in self._frames if f.mode == "RGB"]
            shared = shared_palette(rgb) if rgb else None
            self._frames = [with_palette(f, shared) for f in self._frames]
            super().finish()

    return PaletteWriter(fps=fps)  # pyright: ignore[reportArgumentType]  # stubs: fps int; a float works


GIF_COLORS = 128  # a palette's colours: the figures' flat colours and their antialiasing


def _kept() -> list[tuple[int, ...]]:
    from matplotlib.colors import to_rgb

    return list(dict.fromkeys(tuple(round(255 * x) for x in to_rgb(c)) for c in KEPT_COLORS))


def _palette_image(frame: Image.Image, colors: int = GIF_COLORS) -> Image.Image:
    """A 1-pixel palette image: ``frame``'s adaptive palette, then ``KEPT_COLORS``."""
    from PIL import Image

    keep = _kept()
    n = colors - len(keep)
    adaptive = frame.quantize(n).getpalette()
    assert adaptive is not None  # a quantized image's
    palette = adaptive[: 3 * n]
    palette += [0] * (3 * n - len(palette)) + [x for rgb in keep for x in rgb]
    image = Image.new("P", (1, 1))
    image.putpalette(palette)
    return image


def shared_palette(frames: Sequence[Image.Image], samples: int = 4) -> Image.Image:
    """One palette image for all ``frames`` (RGB): the adaptive palette of a few of them
    (first, last and between) side by side, then ``KEPT_COLORS``."""
    from PIL import Image

    pick = [frames[i] for i in sorted(set(np.linspace(0, len(frames) - 1, samples).round().astype(int)))]
    strip = Image.new("RGB", (sum(f.width for f in pick), max(f.height for f in pick)), "white")
    x = 0
    for f in pick:
        strip.paste(f, (x, 0))
        x += f.width
    return _palette_image(strip)


def with_palette(frame: Image.Image, palette: Image.Image | None = None) -> Image.Image:
    """An RGB ``frame`` as a palette image: ``palette`` (a palette image,
    ``shared_palette``) or its own adaptive palette, then ``KEPT_COLORS``."""
    from PIL import Image

    if frame.mode != "RGB":
        return frame
    return frame.quantize(palette=palette or _palette_image(frame), dither=Image.Dither.NONE)


def _arrows_drawable(scene: PathScene, frame_list: Iterable[int]) -> bool:
    """Whether every run's update at every frame can be taken apart into arrows."""
    arrows = all({"grad", "velocity"} <= set(r.kinds) for r in scene.recordings.values())
    if arrows:
        try:
            for r in scene.recordings.values():
                for i in frame_list:
                    upd.decompose_update(r, scene.name, i)
        except ValueError:
            arrows = False
    return arrows


# the boxes a GIF's close-up may take, ``(pad, min_frac)`` of ``update_geometry.zoom_box``,
# in the order tried: first closer than the explorer's (0.3, 0.02) on an update that
# hardly moves (up to x200, not x50: its arrows drawn at their true lengths and its
# labels spread round them instead of piling round a speck), then more room round them
ZOOM_BOXES = ((0.3, 0.005), (0.3, 0.02), (0.45, 0.005), (0.45, 0.01), (0.6, 0.02), (0.2, 0.005))


def zoom_boxes(scene: PathScene, key: str, data: PanelData) -> list[PanelData]:
    """``data`` (a close-up's ``PanelData``) on each box of ``ZOOM_BOXES``, round the
    points its own box holds (``update_panel.panel_data``)."""
    if data.box is None:
        return [data]
    pts = box_points(scene, key, data)
    return [
        dataclasses.replace(data, box=upd.zoom_box(pts, scene.box, pad=pad, min_frac=min_frac))
        for pad, min_frac in ZOOM_BOXES
    ]


def gif_zooms(
    scene: PathScene, art: PathArtists, arrows: bool, frame_list: Sequence[int]
) -> dict[str, dict[int, tuple[float, float | None]]]:
    """``{config: {recording index: (zoom, previous zoom or None)}}``: each close-up's
    zoom per frame (``_gif_zoom.zoom_schedule``: one zoom per run while its updates fit
    and read at it), the previous zoom on the frames where it changes."""
    if not arrows:
        return {}
    out: dict[str, dict[int, tuple[float, float | None]]] = {}
    for key in art.zoom_axes:
        fitted = [fitted_zoom(scene, key, panel_at(scene, key, i, arrows)) for i in frame_list]
        plan = zoom_schedule(fitted)
        out[key] = {
            i: (z, plan[n - 1] if n and plan[n - 1] != z else None) for n, (i, z) in enumerate(zip(frame_list, plan))
        }
    return out


def draw_clear_zoom(
    scene: PathScene, art: PathArtists, key: str, i: int, arrows: bool, zoom: float | None = None
) -> int:
    """Draw ``key``'s close-up at recording index ``i`` so its labels clash nowhere
    (``_label_clashes.clashes``), on the first box where they do not (none: the one with
    the fewest clashes), its labels off the path too (a GIF is rendered once, offline: it
    can afford it). The boxes: ``zoom_boxes`` (sized to the update), or with ``zoom``
    one size, ``zoom`` times closer than the paths panel, placed round the update
    (``_gif_zoom.fixed_boxes``). Returns the clashes of the panel drawn."""
    ax = art.zoom_axes[key]
    renderer = canvas_renderer(ax.figure)
    data = panel_at(scene, key, i, arrows)
    tries = (
        zoom_boxes(scene, key, data)
        if zoom is None
        else [dataclasses.replace(data, box=b) for b in fixed_boxes(scene, key, data, zoom)]
    )
    best = None
    for n, data in enumerate(tries):
        draw_zoom(scene, art, key, data, avoid_path=True)
        found = len(clashes(ax, renderer))
        if found == 0:
            return 0
        if best is None or found < best[0]:
            best = (found, n)
    assert best is not None  # one box at least was tried
    if best[1] != len(tries) - 1:
        draw_zoom(scene, art, key, tries[best[1]], avoid_path=True)
    return best[0]


def _zoom_text(z: float) -> str:
    return f"×{z:.0f}" if z >= 9.5 else f"×{z:.1f}"


def flag_zoom_change(ax: Axes, was: float | None) -> None:
    """Say in the close-up's title that its zoom changed on this frame (from ``was``)."""
    if was is not None:
        ax.title.set_text(f"{ax.get_title()} (was {_zoom_text(was)})")


def _move_to(
    scene: PathScene,
    art: PathArtists,
    arrows: bool,
    steps: np.ndarray,
    i: int,
    zooms: Mapping[str, Mapping[int, tuple[float, float | None]]] | None = None,
) -> list[Artist]:
    """Move the artists ``art`` to recording index ``i`` (``zooms``: ``gif_zooms``);
    returns the artists changed."""
    changed = follow_update(scene, art, int(steps[i]), names=False)  # the paths grow, the thin rest stays
    for key, rec in scene.recordings.items():
        c, color = scene.coords[key], scene.colors[key]
        art.positions[key].set_data([c[i, 0]], [c[i, 1]])
        set_trail(art.trails[key], c, i, color)
        changed += [art.positions[key], art.trails[key]]
        if arrows:
            update_terms = upd.decompose_update(rec, scene.name, i)
            for term, tail, uv in upd.arrow_chain(update_terms, scene.plane):
                q = art.arrows[(key, term)]
                q.set_offsets([tail])
                q.set_UVC([uv[0]], [uv[1]])
                changed.append(q)
            if key in art.zoom_axes:
                zoom, was = (zooms or {}).get(key, {}).get(i, (None, None))
                draw_clear_zoom(scene, art, key, i, arrows, zoom)
                flag_zoom_change(art.zoom_axes[key], was)
        s, loss, _ = scene.losses[key]
        art.loss_markers[key].set_data([s[i]], [loss[i]])
        grown = up_to(art.loss_thin.get(key), i + 1, i)  # thinned as the whole line is
        art.loss_lines[key].set_data(s[grown], loss[grown])
        changed += [art.loss_markers[key], art.loss_lines[key]]
    nest_loss_dots(art.loss_markers)
    open_rings_on_star(art)
    at = next(iter(scene.losses.values()))[0][i]  # at the dots: the loss after the updates before it
    assert art.step_line is not None and art.title is not None  # drawn at an update (draw_scene)
    art.step_line.set_xdata([at, at])
    # the title names only the runs whose arrows show on the paths panel (the close-ups show all)
    short = short_arrows(scene, art, int(steps[i])) if arrows else ()
    art.title.set_text(path_title(scene, int(steps[i]), short=short))
    # the start and minimum names stay where they are until a ring, arrow or zoom box
    # reaches them (a name jumping every frame reads as motion); then placed again
    marks = [p for k in scene.coords for p in scene.coords[k][[i, min(i + 1, len(scene.coords[k]) - 1)]]]
    if not getattr(art, "names_placed", False):  # first placed off every frame's rings
        marks += list(getattr(art, "frame_marks", []))
    names = [] if _names_clear(art, marks) else place_names(art, marks, scene)
    return changed + [art.step_line, art.title] + names


NAME_CLEARANCE = 4.0  # pixels a ring or zoom box keeps off a placed name before it moves


def _names_clear(art: PathArtists, marks: Iterable[ArrayLike]) -> bool:
    """Whether the start and minimum names (``art.names``), once placed, are still clear
    of ``marks`` (plot coordinates: the rings and arrow ends) and the zoom boxes."""
    if not getattr(art, "names_placed", False):
        art.names_placed = True
        return False
    ax = art.ax_path
    renderer = renderer_of(ax.figure)
    ring = 0.5 * style.ROLE_LOOKS["current"].ms * ax.figure.dpi / 72.0 + NAME_CLEARANCE
    spots = [ax.transData.transform(np.asarray(m, np.float64)) for m in marks]
    boxes = [r.get_window_extent(renderer).extents for r in art.zoom_boxes.values() if r.get_width() > 0]
    for ann in art.names.values():
        if not ann.get_visible():
            continue
        box = text_box(ann, renderer)
        if any(boxes_overlap(box, (x - ring, y - ring, x + ring, y + ring)) for x, y in spots):
            return False
        if any(boxes_overlap(box, b, NAME_CLEARANCE) for b in boxes):
            return False
    return True


def draw_loss_rests(scene: PathScene, art: PathArtists) -> dict[str, Line2D]:
    """Under each growing loss curve, its whole run as a thin lighter line in its rule's
    dash (as the paths' remainders: ``path_frames.REST_WIDTH``, ``REST_TINT``), so the
    names right of the spine stand at the ends of lines from the first frame on."""
    from ..update.panel import tint
    from .frames import REST_TINT, REST_WIDTH

    rest = style.ROLE_LOOKS["remainder"]
    runs = style.run_looks(art.loss_lines)  # the rules' dashes (get_linestyle() says "--" for every one)
    out: dict[str, Line2D] = {}
    for key, line in art.loss_lines.items():
        assert art.ax_loss is not None  # the loss lines are on it
        look = dict(rest.line(tint(line.get_color(), REST_TINT)))
        look.update(ls=runs[key].ls, lw=min(REST_WIDTH, line.get_linewidth()), zorder=line.get_zorder() - 0.5)
        (out[key],) = art.ax_loss.plot(*line.get_data(), **look, marker="", gid=f"loss-rest:{key}")
    art.loss_rests = out
    return out
