"""``PathExplorer``'s figure: the paths and the loss over one close-up panel per run.

At the paths panel's scale most updates are a few pixels long (Nesterov's, once it
runs along the valley, are 1/30 of the view), so the explorer shows every run's
update up close under the paths, redrawn for each update the slider shows: each
term a thick arrow tip to tail with its true length, Nesterov's look-ahead point,
and the zoom factor over the paths panel (``views.update_panel``); the dashed box
on the paths says where each close-up is. One grid, no subfigures: the paths row
and the close-up row share the figure's width, the caption sits between them.
"""

from __future__ import annotations

from ..views import style
from ..views.figure import headline, new_figure
from ..views import update_geometry as upd
from ..views.path_frames import caption_text, draw_zoom
from ..views.path_scene import finding, settings_line
from ..views.paths import draw_paths

__all__ = ["CLOSE_UP_SIZE", "CLOSE_UP_CAPTION", "explorer_view", "draw_close_up", "close_up_title",
           "tidy_loss_axis"]

CLOSE_UP_SIZE = (style.WIDTH, 8.3)   # headline, paths and loss, caption, a close-up per run
CLOSE_UP_CAPTION = ("Below, each run's update up close (dashed box on the paths): μ·v in the "
                    "run's colour, then −lr·g in its light tint, tip to tail,\nwith their lengths; "
                    "zoom ×N: N times closer than the paths; an arrow too short to see is drawn "
                    "longer, dashed, and says so")


def explorer_view(recordings, surface, step, *, name, arrows, zoom, note):
    """The ``PathsView`` the explorer updates: ``draw_paths``' figure without close-ups
    (``zoom`` False or no arrows), else paths and loss over one close-up axes per run
    (``artists.zoom_axes``, their boxes ``artists.zoom_boxes``; the widget draws them)."""
    if not (zoom and arrows) or step is None:
        view = draw_paths(recordings, surface, step, name=name, arrows=arrows, zoom=False, note=note)
        tidy_loss_axis(view.artists.ax_loss)
        return view
    fig = new_figure(CLOSE_UP_SIZE)
    keys = list(recordings) if hasattr(recordings, "keys") else ["recording"]
    n = max(1, len(keys))
    fig.get_layout_engine().set(w_pad=0.06)   # room for tick labels that change with the update
    grid = fig.add_gridspec(3, 2 * n, height_ratios=[1.3, 0.12, 0.86])
    half = n  # the top row: paths on the left half, loss on the right
    ax_path = fig.add_subplot(grid[0, :half])
    ax_loss = fig.add_subplot(grid[0, half:])
    gap = fig.add_subplot(grid[1, :])   # the caption's row, between the paths and the close-ups
    gap.axis("off")
    close = [fig.add_subplot(grid[2, 2 * i:2 * i + 2]) for i in range(n)]
    for i, ax in enumerate(close):   # the squares' slack towards the figure's edges: their
        # tick labels and titles change width with the update after the layout ran
        ax.set_anchor("E" if i == 0 and n > 1 else "W" if i == n - 1 and n > 1 else "C")
    view = draw_paths(recordings, surface, step, name=name, ax=(ax_path, ax_loss), arrows=arrows,
                      zoom=False, note=note)
    scene, art = view.scene, view.artists
    headline(fig, finding(scene), settings_line(scene))
    tidy_loss_axis(ax_loss)
    if not art.arrows:   # the recording can't give arrows: no close-ups to draw
        for ax in [gap, *close]:
            ax.remove()
        return view
    art.zoom_axes = dict(zip(scene.coords, close))
    art.zoom_boxes = {key: _zoom_box(ax_path, key, scene.colors[key]) for key in scene.coords}
    art.caption_tail = CLOSE_UP_CAPTION
    art.caption = gap.text(0.5, 0.5, caption_text(view.update, CLOSE_UP_CAPTION),
                           transform=gap.transAxes, fontsize=style.NOTE_SIZE,
                           color=style.SUBTITLE_COLOR, ha="center", va="center", gid="caption")
    ax_path.set_xlabel(ax_path.get_xlabel(), labelpad=1.0)
    return view


def _zoom_box(ax, key, color):
    from matplotlib.patches import Rectangle
    return ax.add_patch(Rectangle(
        # under the star: a tiny box on the minimum would make it look coloured
        (0, 0), 0, 0, fill=False, ec=color, lw=1.2, ls="--",
        zorder=style.ROLE_LOOKS["minimum"].zorder - 0.2, gid=f"zoom-box:{key}"))


def tidy_loss_axis(ax) -> None:
    """Ticks on round updates up to the last one drawn (0, 10, ... 60: the axis reads up
    to the last update; the room right of it holds the lines' names, no tick there)."""
    import numpy as np
    from matplotlib.ticker import FixedLocator, MaxNLocator
    if ax is None:
        return
    ends = [np.nanmax(np.asarray(ln.get_xdata(), np.float64)) for ln in ax.lines
            if (ln.get_gid() or "").startswith("loss:") and len(ln.get_xdata())]
    if not ends:
        return
    lo, last = ax.get_xlim()[0], max(ends)
    ticks = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], integer=True).tick_values(max(lo, 0), last)
    ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if lo <= t <= last + 1e-9]))


def close_up_title(key, zoom: float) -> str:
    """A close-up's title: the run and how many times closer than the paths it is (the
    update shown is in the paths' title and the caption)."""
    return f"{key} · zoom ×{zoom:.0f}" if zoom >= 9.5 else f"{key} · zoom ×{zoom:.1f}"


def draw_close_up(scene, art, key, data) -> None:
    """Redraw ``key``'s close-up at ``data`` (``path_frames.draw_zoom``: the panel and its
    box on the paths), titled by ``close_up_title``."""
    draw_zoom(scene, art, key, data)
    if data.box is not None:
        art.zoom_axes[key].set_title(close_up_title(key, upd.zoom_factor(scene.box, data.box)),
                                     fontsize=style.TITLE_SIZE, color=scene.colors[key],
                                     fontweight="bold")
