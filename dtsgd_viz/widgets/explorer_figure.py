"""``PathExplorer``'s figure: the paths and the loss over one close-up panel per run.

Update n is marked as ``plot_paths`` and ``findings`` mark it: each run's ring at its
parameters after update n, the loss panel's grey line and rings at k = n (the loss
after n updates) and the pale band over the updates whose mean loss the headline
(``findings(..., upto=n)``) compares. At the paths panel's scale most updates are a few
pixels long, so the update's terms are drawn under the paths, one close-up per run on
one shared zoom (``views.update.zoom``, as ``plot_update`` draws them); the one-line
caption says that zoom once. One legend under the figure names the runs, the start, the minimum and the ring.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, cast

import numpy as np

from ..views.core import style
from ..views.core.figure import fit, headline, new_figure
from ..views.paths import geometry as geo
from ..views.paths.findings import findings_of
from ..views.paths.frames import REST_LABEL, SQUARE_PATHS_SIZE, PathArtists, draw_scene, legend_handles
from ..views.paths.loss import MEAN_LABEL, mark_window, mean_handle, mean_look
from ..views.paths.plot import PathsView
from ..views.paths.scene import build_scene, settings_line
from ..views.update import panel as update_panel
from ..views.update.plot import close_up_marks, key_handle
from ..views.update.zoom import draw_inset, shared_zoom, zoom_caption

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.lines import Line2D
    from matplotlib.text import Text

    from ..recording import Recording
    from ..theory.surfaces import Surface
    from ..views.paths.scene import PathScene
    from ..views.update.panel import PanelData

__all__ = [
    "CLOSE_UP_SIZE",
    "CLOSE_UP_CAPTION",
    "explorer_view",
    "draw_close_up",
    "draw_close_ups",
    "explorer_still",
    "close_up_title",
    "tidy_loss_axis",
    "update_finding",
    "explorer_caption",
    "set_finding",
    "mark_mean",
    "follow_headline",
    "headline_parts",
    "move_loss_dots",
    "show_arrows",
]

CLOSE_UP_SIZE = (style.WIDTH, 8.6)  # headline, paths and loss, caption, a close-up per run, legend
CLOSE_UP_CAPTION = "Below: update {k}, {zoom}"  # one line; {zoom}: ``views.update.zoom.zoom_caption``
CAPTION_SIZE = style.TICK_SIZE  # the caption's type: over style.NOTE_SIZE, the smallest allowed
TRAIL_KEEP = 2  # the path's segments a close-up keeps before the update (older ones crowd it)
BOTTOM_MARGIN = 0.02  # of the figure's height, blank under the legend
RING_CLEAR = 2.0  # points between a mean bar's end and the ring at the update shown (the browser's too)
LATER_VEIL = 0.6  # the white over the loss after the update shown: its lines as pale as the paths after it


def update_finding(scene: PathScene, index: int) -> str:
    """The headline at recording index ``index`` (update ``u``): ``findings_of(scene,
    upto=u).headline()``, as ``print(dtsgd_viz.findings(runs, surface, upto=u))`` says
    it, e.g. ``"Lowest mean loss over k = 17–20: Nesterov, 6.2× below plain, 223×
    below momentum"``."""
    update = int(next(iter(scene.recordings.values())).steps[index])
    return findings_of(scene, upto=update, paths=False).headline()


def set_finding(fig: Figure, text: str) -> None:
    """Put ``text`` in ``fig``'s headline (``views.core.figure.headline``), keeping its line
    count (the settings line hangs under it and the layout is fixed): a finding longer
    than the first is set a little smaller, down to ``style.TITLE_SIZE``, to fit."""
    title = _suptitle(fig)
    assert title is not None  # explorer_view titles its figure
    old = title.get_text()
    body = old.rstrip("\n")
    size, width = style.SUPTITLE_SIZE, fig.get_figwidth() * 72.0
    lines = fit(text, width, size, bold=True)
    while lines.count("\n") > body.count("\n") and size > style.TITLE_SIZE:
        size -= 0.5
        lines = fit(text, width, size, bold=True)
    title.set_fontsize(size)
    title.set_text(lines + "\n" * max(0, body.count("\n") - lines.count("\n")) + old[len(body) :])


def _suptitle(fig: Figure) -> Text | None:
    """``fig``'s suptitle (None before one is set)."""
    return fig._suptitle  # pyright: ignore[reportAttributeAccessIssue]  # matplotlib's stubs omit Figure._suptitle


def explorer_caption(update: int, zoom: str = "every panel on one zoom, arrows at their true length") -> str:
    """The one-line caption between the paths and the close-ups at ``update``; ``zoom``
    the close-ups' zoom in words (``views.update.zoom.zoom_caption``).

    >>> explorer_caption(20, "every panel ×33 closer than the paths")
    'Below: update 20, every panel ×33 closer than the paths'
    """
    return CLOSE_UP_CAPTION.format(k=int(update), zoom=zoom)


def explorer_view(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    step: int | None,
    *,
    name: str | None,
    arrows: bool,
    zoom: bool,
    note: str | None,
) -> PathsView:
    """The ``PathsView`` the explorer updates: the headline (``update_finding``), the
    paths and the loss marked at update ``step`` (the rings after it, the loss at k =
    ``step``, ``scene.ring_index``) and, with ``zoom`` and ``arrows``, one
    close-up axes per run under them (``artists.zoom_axes``; ``draw_close_ups`` draws them); one legend under it all."""
    scene = build_scene(recordings, surface, name)
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()})
    close = bool(zoom and arrows) and update is not None
    fig = new_figure(CLOSE_UP_SIZE if close else SQUARE_PATHS_SIZE)
    engine = cast("ConstrainedLayoutEngine", fig.get_layout_engine())  # new_figure's: constrained
    engine.set(w_pad=0.1, rect=(0.0, BOTTOM_MARGIN, 1.0, 1.0 - BOTTOM_MARGIN))
    n = len(scene.coords)
    rows = (3, [1.33, 0.09, 0.86]) if close else (1, [1.0])
    grid = fig.add_gridspec(rows[0], 2 * n, height_ratios=rows[1])
    ax_path, ax_loss = fig.add_subplot(grid[0, :n]), fig.add_subplot(grid[0, n:])
    _, art = draw_scene(scene, update, (ax_path, ax_loss), arrows, note=note, legend=False)
    view = PathsView(fig, scene, art, bool(arrows) and art.note is None, update)
    index = 0 if update is None else geo.step_index(next(iter(scene.recordings.values())).steps, update)
    headline(fig, update_finding(scene, index), settings_line(scene))
    tidy_loss_axis(ax_loss)
    looks = style.run_looks(scene.coords)
    handles = legend_handles(scene, looks, None if update is None else "after the update shown")
    labels = [h.get_label() for h in handles]
    extra = []  # read by column: the runs, the paths' marks, the close-ups' marks, the later updates and the mean
    if close and art.arrows:  # the close-ups' own marks (their ring is the update's, named above)
        extra += [
            (key_handle(m), k) for k, m in close_up_marks(None, True, [scene.colors[k] for k in scene.coords]).items()
        ]
    if art.rests:  # each run's later updates, pale and thin under its path: named once
        extra.append((rest_handle(art, looks), REST_LABEL))
    if update is not None:  # the headline's means, as bars over the band
        extra.append((mean_handle([mean_look(looks[k].color or "black") for k in scene.coords]), MEAN_LABEL))
    handles += [h for h, _ in extra]
    labels += [t for _, t in extra]
    from matplotlib.legend_handler import HandlerTuple

    ncols = 4 if len(handles) > 7 else len(handles)  # filled down each column (a group to a column, with close-ups)
    art.legend = fig.legend(
        handles=handles,
        labels=labels,
        handler_map={tuple: HandlerTuple(ndivide=None, pad=0.0)},  # each run's line end to end
        loc="outside lower center",
        ncols=ncols,
        fontsize=style.NOTE_SIZE,
        frameon=False,
        handlelength=style.handle_length(),
        columnspacing=1.2,
    )
    if update is not None:
        mark_mean(scene, art, update)
    if not close or not art.arrows:  # no close-ups, or the recording can't give the arrows
        return view
    gap = fig.add_subplot(grid[1, :])  # the caption's row, between the paths and the close-ups
    gap.axis("off")
    art.zoom_axes = {key: fig.add_subplot(grid[2, 2 * i : 2 * i + 2]) for i, key in enumerate(scene.coords)}
    assert update is not None  # close: an update to draw
    art.caption = gap.text(
        0.5,
        0.5,
        explorer_caption(update),
        transform=gap.transAxes,
        fontsize=CAPTION_SIZE,
        color=style.SUBTITLE_COLOR,
        ha="center",
        va="center",
        gid="caption",
    )
    return view


def rest_handle(art: PathArtists, looks: Mapping[str, style.Look]) -> tuple:
    """The legend entry of the paths after the update shown: each run's pale line
    (``frames``' ``path-rest:`` lines) side by side, in its colour, rule's dash and width as
    drawn, so it reads as no rule's own line. A tuple handle (the legend's ``HandlerTuple``)."""
    from matplotlib.lines import Line2D

    return tuple(
        Line2D([], [], color=ln.get_color(), ls=looks[key].ls, lw=ln.get_linewidth()) for key, ln in art.rests.items()
    )


def mark_mean(scene: PathScene, art: PathArtists, update: int) -> list[Artist]:
    """The loss panel's pale band over the updates whose mean loss the headline at
    ``update`` compares (``findings_of(scene, upto=update).window``, ``loss.mark_window``)
    and each run's mean over it as a bar, those of the update shown before removed; the loss after it faded, as
    the paths after it are (``loss-later``: a white veil over the lines, under the marks). Returns the artists drawn."""
    if art.ax_loss is None:
        return []
    for a in [*art.ax_loss.patches, *art.ax_loss.lines, *art.ax_loss.texts]:
        if (a.get_gid() or "").startswith(("loss-window", "loss-mean:", "loss-later")):
            a.remove()
    found = findings_of(scene, upto=int(update), paths=False)
    lim = art.ax_loss.get_xlim()  # kept: the veil is not data to autoscale to
    veil = art.ax_loss.axvspan(found.window[1], lim[1], color="white", alpha=LATER_VEIL, lw=0)
    art.ax_loss.set_xlim(lim)
    veil.set(zorder=style.ROLE_LOOKS["update_line"].zorder - 0.1, gid="loss-later")
    marks = mark_window(art, found)
    ax, clear = art.ax_loss, style.ROLE_LOOKS["current"].ms / 2 + RING_CLEAR  # points
    per_point = float(np.ptp(lim)) / (ax.get_window_extent().width * 72.0 / ax.figure.dpi)
    for bar in [m for m in marks if (m.get_gid() or "").startswith("loss-mean:")]:  # short of the ring at k = n
        x0, x1 = (float(x) for x in np.asarray(cast("Line2D", bar).get_xdata(), np.float64))  # a bar: two points
        if abs(x1 - update) < clear * per_point:
            cast("Line2D", bar).set_xdata([x0, max(x0 + 3 * per_point, update - clear * per_point)])
    return [veil, *marks]


def move_loss_dots(art: PathArtists, dots: Mapping[str, tuple[float, float]]) -> None:
    """Put each run's loss dot at ``dots[config] = (k, loss)``."""
    for key, (s, loss) in dots.items():
        art.loss_markers[key].set_data([s], [loss])


def show_arrows(scene: PathScene, art: PathArtists, update: int, title: str) -> None:
    """With close-ups, no arrows on the paths panel (at its scale they are specks or a
    tangle; the close-ups draw them) and its title says so; else ``title``."""
    for q in art.arrows.values():
        q.set_visible(not art.zoom_axes)
    assert art.title is not None  # draw_scene titles the paths panel
    art.title.set_text(f"Update {int(update)}: its terms up close below" if art.zoom_axes and art.arrows else title)


def tidy_loss_axis(ax: Axes | None) -> None:
    """Ticks on round updates up to the last one drawn (0, 10, ... 60: the axis reads up
    to the last update; the room right of it holds the lines' names, no tick there)."""
    from matplotlib.ticker import FixedLocator, MaxNLocator

    if ax is None:
        return
    ends = [
        np.nanmax(np.asarray(ln.get_xdata(), np.float64))
        for ln in ax.lines
        if (ln.get_gid() or "").startswith("loss:") and len(np.asarray(ln.get_xdata()))
    ]
    if not ends:
        return
    lo, last = ax.get_xlim()[0], max(ends)
    ticks = MaxNLocator(nbins=6, steps=[1, 2, 2.5, 5, 10], integer=True).tick_values(max(lo, 0), last)
    ax.xaxis.set_major_locator(FixedLocator([t for t in ticks if lo <= t <= last + 1e-9]))


def close_up_title(key: str, zoom: float | None = None) -> str:
    """A close-up's title: the run's name (``zoom`` is kept for callers; the one shared
    zoom is said once, in the caption)."""
    return geo.rule_name(key)


def _trim_close_up(ax: Axes, key: str) -> None:
    """Keep only the path's last ``TRAIL_KEEP`` segments before the update in a close-up:
    the whole path faintly and the older trail crowd a wide (×5) one."""
    for artist in [*ax.lines, *ax.collections]:
        gid = artist.get_gid() or ""
        if gid == f"zoom-path:{key}":
            artist.set_visible(False)
        elif gid == f"zoom-trail:{key}":
            segs, colors = artist.get_segments(), artist.get_colors()  # pyright: ignore[reportAttributeAccessIssue]
            artist.set_segments(segs[-TRAIL_KEEP:])  # pyright: ignore[reportAttributeAccessIssue]
            artist.set_color(colors[-TRAIL_KEEP:] if len(colors) == len(segs) else colors)  # pyright: ignore[reportAttributeAccessIssue]
        elif gid == f"zoom-trail-points:{key}":
            offs, colors = artist.get_offsets(), artist.get_facecolors()  # pyright: ignore[reportAttributeAccessIssue]
            artist.set_offsets(offs[-TRAIL_KEEP:])  # pyright: ignore[reportAttributeAccessIssue]
            if len(colors) == len(offs):
                artist.set_facecolor(colors[-TRAIL_KEEP:])  # pyright: ignore[reportAttributeAccessIssue]


def draw_close_up(scene: PathScene, art: PathArtists, key: str, data: PanelData) -> None:
    """Redraw ``key``'s close-up at ``data`` (``update.panel.draw_update_panel``), titled with the run's name, with
    only the path's last segments. ``draw_close_ups`` draws every run's on one zoom."""
    ax = art.zoom_axes[key]
    style_of = update_panel.run_styles(scene.coords)[key]
    update_panel.draw_update_panel(ax, scene, data, scene.colors[key], style_of, scene.plane.is_identity)
    _trim_close_up(ax, key)
    ax.set_title(close_up_title(key), fontsize=style.TITLE_SIZE, color=scene.colors[key], fontweight="bold")


def draw_close_ups(scene: PathScene, art: PathArtists, panels: Mapping[str, PanelData]) -> None:
    """Redraw every run's close-up at ``panels`` (``{config: PanelData}``) on one zoom,
    as ``plot_update`` does (``views.update.zoom.shared_zoom``): each box the size of the
    largest, arrows at their true length, a run too small at that zoom drawn again closer
    in an inset; the caption says the zoom once."""
    if not panels:
        return
    own, shared, insets = shared_zoom(panels, scene.box)
    styles = update_panel.run_styles(scene.coords)
    for key, data in shared.items():
        ax = art.zoom_axes[key]
        for child in list(ax.child_axes):  # the inset of the update shown before
            child.remove()
        draw_close_up(scene, art, key, data)
        if key in insets:
            for t in [t for t in ax.texts if (t.get_gid() or "").startswith("zoom-label:")]:
                t.remove()  # named in no panel too small to name it in: its inset shows it
            draw_inset(ax, scene, own[key], data, styles[key], labels=True)
        update_panel.keep_labels_inside(ax)
    if art.caption is not None:
        update = next(iter(panels.values())).update
        words = zoom_caption(scene.box, shared, not scene.plane.is_identity)
        art.caption.set_text(explorer_caption(update, words))


def explorer_still(
    recordings: Recording | Mapping[str, Recording], surface: Surface, step: int, *, name: str | None = None
) -> Figure:
    """The explorer's picture at update ``step``, drawn once with no widget (the still of
    ``web.PathExplorer`` for readers that run no scripts): the headline
    ``findings(..., upto=step).headline()`` (``update_finding``), the paths ringed after
    the update, the loss marked at k = ``step`` with the headline's mean band and, where
    the recordings give the update's terms, every run's close-up on one zoom
    (``draw_close_ups``). Returns the ``Figure``."""
    from ..views.paths.frames import panel_at
    from ..views.update import geometry as upd

    recs = recordings if isinstance(recordings, Mapping) else {"recording": recordings}
    arrows = all(upd.why_no_arrows(r) is None for r in recs.values() if hasattr(r, "kinds"))
    view = explorer_view(recordings, surface, step, name=name, arrows=arrows, zoom=True, note=None)
    scene, art = view.scene, view.artists
    assert view.update is not None  # step was given: explorer_view drew it
    index = {k: geo.step_index(r.steps, view.update) for k, r in scene.recordings.items()}
    view.figure.draw_without_rendering()  # the layout, once: the close-ups' names are then kept inside them
    draw_close_ups(scene, art, {k: panel_at(scene, k, index[k], True) for k in art.zoom_axes})
    assert art.title is not None  # draw_scene titles the paths panel
    show_arrows(scene, art, view.update, art.title.get_text())
    return view.figure


def headline_parts(fig: Figure, art: PathArtists) -> list[Text]:
    """The texts ``follow_headline`` changes: the headline."""
    title = _suptitle(fig)
    return [title] if title is not None else []


def follow_headline(fig: Figure, scene: PathScene, art: PathArtists, update: int, text: str) -> None:
    """After the update moved to ``update``: the headline ``text`` (``update_finding``)."""
    if _suptitle(fig) is not None and text:
        set_finding(fig, text)
