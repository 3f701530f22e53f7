"""``animate``: the paths update by update (a ``FuncAnimation``), laid out once; each frame moves what changes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from ..core import style
from ..core.figure import fit, headline, new_figure
from ..update import geometry as upd
from ..update import panel
from ..update.zoom import draw_inset, shared_factor, shared_zoom, span_text
from . import geometry as geo
from .findings import findings_of
from .frames import PathArtists, draw_scene, follow_update, panel_at, rest_line, row_legend, set_trail
from .loss import mark_window
from .scene import build_scene, path_title, ring_index, settings_line, short_runs

if TYPE_CHECKING:
    from pathlib import Path

    from matplotlib.animation import FuncAnimation, PillowWriter
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from PIL import Image

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface
    from .scene import PathScene

__all__ = ["animate", "shared_palette", "with_palette"]


def _frames(frames: int | Iterable[int] | None, steps: np.ndarray) -> list[int]:
    """Recording indices of the frames: None (every update), a count, or update numbers."""
    n = len(steps)
    if frames is None:
        return list(range(n))
    if isinstance(frames, (int, np.integer)) and not isinstance(frames, bool):
        if frames < 1:
            raise ValueError(f"frames must be >= 1. Received: frames={frames}.")
        return sorted(set(np.linspace(0, n - 1, min(int(frames), n)).round().astype(int).tolist()))
    if not isinstance(frames, Iterable):
        raise ValueError(
            "frames must be None (every update), an int >= 1 (evenly spaced frames) or a "
            f"list of update numbers. Received: frames={frames!r}."
        )
    items = list(frames)
    if not items:
        raise ValueError("frames is empty: give None, a number of frames, or update numbers.")
    if any(f is None for f in items):
        raise ValueError(
            "frames lists update numbers (ints, as recording.steps counts them, or "
            f"negative counts back from the last); None is not one. Received: "
            f"frames={items!r}. Allowed: {geo.describe_updates(steps)}."
        )
    try:  # each an update (None was refused above): check_step gives an update back
        return [geo.step_index(steps, cast(int, geo.check_step(f, {"recordings": steps}))) for f in items]
    except ValueError as e:
        raise ValueError(f"frames={items!r}: {e}") from None


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
    """A ``FuncAnimation`` of the paths and loss curves growing, titled ``findings(..., upto=k).headline()``.

    ``zoom``: each run's update up close on one shared zoom; ``frames``: None (every update), a number of evenly
    spaced frames, or update numbers; ``interval``: milliseconds per frame; ``hold``: extra frames of the last one.
    ``anim.frame_updates`` lists each frame's update; ``anim.save("paths.gif")`` keeps the colours exact.
    """
    from matplotlib.animation import FuncAnimation

    if isinstance(hold, bool) or not isinstance(hold, (int, np.integer)) or hold < 0:
        raise ValueError(f"hold must be an integer >= 0 (extra frames). Received: hold={hold!r}.")
    scene = build_scene(recordings, surface, name)
    n = min(len(r) for r in scene.recordings.values())
    steps = np.asarray(next(iter(scene.recordings.values())).steps[:n])
    frame_list = _frames(frames, steps)
    arrows = all(upd.why_no_arrows(r, i) is None for r in scene.recordings.values() for i in frame_list)
    found = {i: findings_of(scene, upto=int(steps[i])) for i in frame_list}
    heads = {i: f.headline() for i, f in found.items()}
    fig, ax_path, ax_loss, zooms = _figure(scene, arrows and zoom, heads)
    _, art = draw_scene(scene, int(steps[frame_list[0]]), (ax_path, ax_loss), arrows, legend=False)
    art.zoom_axes = zooms
    assert art.ax_loss is not None  # drawn with its loss panel
    art.ax_loss.set_autoscale_on(False)  # limits of the whole run while the curves grow
    _draw_loss_rests(art)
    looks = style.run_looks(scene.coords)
    row_legend(fig, scene, looks, "after the update", scene.coords)  # each run's bar, as mark_window draws it
    width = fig.get_figwidth() * 72.0
    title = cast("Any", fig)._suptitle  # the headline's Text: its blank lines keep the subtitle's room
    lines = max(fit(h, width, style.SUPTITLE_SIZE, bold=True).count("\n") for h in heads.values()) + 1
    blank = title.get_text().count("\n") + 1 - lines
    window: list[Artist] = []

    def update(i: int) -> list[Artist]:
        if i not in found:  # a frame the caller draws by its index
            found[i] = findings_of(scene, upto=int(steps[i]))
        text = fit(found[i].headline(), width, style.SUPTITLE_SIZE, bold=True)
        title.set_text(text + "\n" * (lines - 1 - text.count("\n") + blank))
        for a in window:
            a.remove()
        window[:] = mark_window(art, found[i])  # the updates this frame's headline compares
        return _move_to(scene, art, arrows, steps, i) + [title, *window]

    update(frame_list[0])
    fig.draw_without_rendering()  # laid out once: the panels never jitter as the texts change
    fig.set_layout_engine("none")
    update(frame_list[0])  # the close-ups and rings on the laid-out panels
    sequence = frame_list + [frame_list[-1]] * int(hold)
    anim = FuncAnimation(
        fig, update, frames=sequence, interval=interval, blit=False, repeat=True, cache_frame_data=False
    )
    setattr(anim, "frame_updates", [int(steps[i]) for i in sequence])  # noqa: B010  # our own: each frame's update
    anim.save = lambda filename, writer=None, *a, **kw: _save(anim, filename, writer, *a, **kw)
    return anim


def _figure(scene: PathScene, close_ups: bool, heads: Mapping[int, str]) -> tuple[Figure, Axes, Axes, dict[str, Axes]]:
    """The figure: the longest headline, the paths and the loss, and with ``close_ups`` a close-up per run."""
    from .frames import SQUARE_PATHS_SIZE

    size = style.PATHS_SIZE if close_ups else SQUARE_PATHS_SIZE if scene.plane.is_identity else style.PATHS_SIZE_NO_ZOOM
    fig = new_figure(size)
    longest = max(heads.values(), key=lambda h: len(fit(h, size[0] * 72.0, style.SUPTITLE_SIZE, bold=True)))
    headline(fig, longest, settings_line(scene))
    k = len(scene.coords)
    grid = fig.add_gridspec(2 if close_ups else 1, 2 * k, height_ratios=[1.15, 1.0] if close_ups else None)
    ax_path, ax_loss = fig.add_subplot(grid[0, :k]), fig.add_subplot(grid[0, k:])
    zooms = (
        {key: fig.add_subplot(grid[1, 2 * n : 2 * n + 2]) for n, key in enumerate(scene.coords)} if close_ups else {}
    )
    return fig, ax_path, ax_loss, zooms


def _draw_close_ups(scene: PathScene, art: PathArtists, index: int) -> None:
    """Every close-up at recording index ``index`` on one zoom; an inset for an update too small at it."""
    own, shared, small = shared_zoom({k: panel_at(scene, k, index, True) for k in scene.coords}, scene.box)
    zoom = shared_factor(scene.box, shared)
    styles = panel.run_styles(scene.coords)
    for key, ax in art.zoom_axes.items():
        for child in list(ax.child_axes):
            child.remove()
        data = shared[key]
        panel.draw_update_panel(ax, scene, data, scene.colors[key], styles[key], True, labels=key not in small)
        ax.set_title(
            f"{geo.rule_name(key)} · spans {span_text(zoom)}", fontsize=style.TITLE_SIZE, color=scene.colors[key]
        )
        if key in small and data.box is not None and own[key].box is not None:
            draw_inset(ax, scene, own[key], data, styles[key])


def _move_to(scene: PathScene, art: PathArtists, arrows: bool, steps: np.ndarray, i: int) -> list[Artist]:
    """Move ``art`` to recording index ``i``; returns the artists changed."""
    changed = follow_update(scene, art, int(steps[i]))
    for key, rec in scene.recordings.items():
        c = scene.coords[key]
        j = ring_index(scene, key, int(steps[i]))  # after the update: its arrows end there
        art.positions[key].set_data([c[j, 0]], [c[j, 1]])
        set_trail(art.trails[key], c, j, scene.colors[key])
        changed += [art.positions[key], art.trails[key]]
        if arrows:
            for term, tail, uv in upd.arrow_chain(upd.decompose_update(rec, scene.name, i), scene.plane):
                q = art.arrows[(key, term)]
                q.set_offsets([tail])
                q.set_UVC([uv[0]], [uv[1]])
                changed.append(q)
        s, loss, _ = scene.losses[key]
        art.loss_markers[key].set_data([s[j]], [loss[j]])
        grown = geo.up_to(art.loss_thin.get(key), j + 1, j)  # thinned as the whole line is
        art.loss_lines[key].set_data(s[grown], loss[grown])
        changed += [art.loss_markers[key], art.loss_lines[key]]
    if arrows and art.zoom_axes:
        _draw_close_ups(scene, art, i)
    first = next(iter(scene.coords))
    at = scene.losses[first][0][ring_index(scene, first, int(steps[i]))]  # at the rings
    assert art.step_line is not None and art.title is not None  # drawn at an update (draw_scene)
    art.step_line.set_xdata([at, at])
    short = short_runs(scene, int(steps[i])) if arrows else tuple(scene.coords)
    for (key, _), q in art.arrows.items():
        q.set_visible(key not in short)
    art.title.set_text(path_title(scene, int(steps[i]), short=short))
    return changed + [art.step_line, art.title]


def _draw_loss_rests(art: PathArtists) -> None:
    """Under each growing loss curve, its whole run as a thin lighter line in its rule's dash."""
    assert art.ax_loss is not None
    looks = style.run_looks(art.loss_lines)
    for key, line in art.loss_lines.items():
        look = {**rest_line(looks[key]), "zorder": line.get_zorder() - 0.5}
        art.ax_loss.plot(*line.get_data(), **look, gid=f"loss-rest:{key}")


def _save(anim: FuncAnimation, filename: str | Path, writer: Any = None, *args: Any, **kwargs: Any) -> None:
    """``FuncAnimation.save``; a GIF keeps the style's colours exact on one palette, at ``style.DPI`` at least."""
    from matplotlib.animation import FuncAnimation

    if writer == "pillow" or (writer is None and str(filename).lower().endswith(".gif")):
        fps = (args[0] if args else kwargs.pop("fps", None)) or 1000.0 / anim._interval  # pyright: ignore[reportAttributeAccessIssue]  # private, not in the stubs
        writer = _palette_writer(fps)
        if len(args) < 2:  # dpi is FuncAnimation.save's 4th argument
            kwargs["dpi"] = max(float(kwargs.get("dpi") or style.DPI), float(style.DPI))
    return FuncAnimation.save(anim, filename, writer, *args, **kwargs)


KEPT_COLORS = (style.MINIMUM_FACE, *style.OPTIMIZER_COLORS.values(), "white", "black")  # exact in every GIF palette


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


def _palette_image(frame: Image.Image, colors: int = GIF_COLORS) -> Image.Image:
    """A 1-pixel palette image: ``frame``'s adaptive palette, then ``KEPT_COLORS``."""
    from matplotlib.colors import to_rgb
    from PIL import Image

    keep = list(dict.fromkeys(tuple(round(255 * x) for x in to_rgb(c)) for c in KEPT_COLORS))
    n = colors - len(keep)
    adaptive = frame.quantize(n).getpalette()
    assert adaptive is not None
    palette = adaptive[: 3 * n]
    palette += [0] * (3 * n - len(palette)) + [x for rgb in keep for x in rgb]
    image = Image.new("P", (1, 1))
    image.putpalette(palette)
    return image


def shared_palette(frames: Sequence[Image.Image], samples: int = 4) -> Image.Image:
    """One palette image for all RGB ``frames``: a few frames' adaptive palette, then ``KEPT_COLORS``."""
    from PIL import Image

    pick = [frames[i] for i in sorted(set(np.linspace(0, len(frames) - 1, samples).round().astype(int)))]
    strip = Image.new("RGB", (sum(f.width for f in pick), max(f.height for f in pick)), "white")
    x = 0
    for f in pick:
        strip.paste(f, (x, 0))
        x += f.width
    return _palette_image(strip)


def with_palette(frame: Image.Image, palette: Image.Image | None = None) -> Image.Image:
    """An RGB ``frame`` as a palette image on ``palette`` (None: its own), ``KEPT_COLORS`` exact."""
    from PIL import Image

    if frame.mode != "RGB":
        return frame
    return frame.quantize(palette=palette or _palette_image(frame), dither=Image.Dither.NONE)
