"""``PathExplorer``'s figure: the paths and the loss over one close-up panel per run.

At the paths panel's scale most updates are a few pixels long (Nesterov's, once it
runs along the valley, are 1/30 of the view), so the explorer shows every run's
update up close under the paths, redrawn for each update the slider shows: each
term a thick arrow tip to tail at its true length, Nesterov's look-ahead point, every
run on one zoom and a run too small at it inset closer (``views.update.zoom``, as
``plot_update`` draws them), the zoom said in the one-line caption; the dotted box on
the paths says where each close-up is. One grid, no subfigures: the paths row
and the close-up row share the figure's width, the caption sits between them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
from numpy.typing import ArrayLike

from ..views.core import style
from ..views.core.figure import fit, headline, new_figure
from ..views.paths.frames import ZOOM_BOX_LOOK, ZOOM_BOX_Z, draw_zoom
from ..views.paths.geometry import rule_name
from ..views.paths.labels import (
    HARD,
    TOUCH,
    boxes_overlap,
    leader_cost,
    panel_obstacles,
    place_text,
    renderer_of,
    spot_costs,
    text_box,
)
from ..views.paths.loss import nest_loss_dots
from ..views.paths.names import name_runs, open_rings_on_star, place_names
from ..views.paths.plot import draw_paths
from ..views.paths.scene import settings_line
from ..views.paths.titles import path_title, short_arrows
from ..views.update import geometry as upd
from ..views.update import panel as update_panel
from ..views.update.zoom import draw_inset, shared_zoom, zoom_caption

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine
    from matplotlib.patches import Rectangle
    from matplotlib.text import Annotation, Text

    from ..recording import Recording
    from ..theory.surfaces import Surface
    from ..views.paths.frames import PathArtists
    from ..views.paths.plot import PathsView
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
    "zoom_callouts",
    "shown_box",
    "callout_spot",
    "follow_headline",
    "headline_parts",
    "move_loss_dots",
    "show_arrows",
]

CLOSE_UP_SIZE = (style.WIDTH, 8.3)  # headline, paths and loss, caption, a close-up per run
CLOSE_UP_CAPTION = "Below: update {k}, {zoom}"  # one line; {zoom}: ``views.update.zoom.zoom_caption``
CAPTION_SIZE = style.TICK_SIZE  # the caption's type: over style.NOTE_SIZE, the smallest allowed
MIN_BOX_PX = 22.0  # a close-up's box on the paths is drawn at least this many pixels wide
CALLOUT_GAPS = (3.0, 6.0, 10.0, 16.0, 24.0, 34.0, 46.0, 60.0, 78.0, 100.0)  # px off its box
CALLOUT_LEADER_PX = 7.0  # a callout further than this off its box hangs on a leader
TRAIL_KEEP = 2  # the path's segments a close-up keeps before the update (older ones crowd it)
BOTTOM_MARGIN = 0.02  # of the figure's height, blank under the close-ups' tick labels


def update_finding(scene: PathScene, index: int) -> str:
    """The headline at recording index ``index`` (update ``u``):
    ``path_findings.findings_of(scene, upto=u).headline()``, which run's mean loss over
    the last updates up to ``u`` is lowest and how many times lower than the others',
    as ``print(dtsgd_viz.findings(runs, surface, upto=u))`` says it: ``"After update 20,
    Nesterov is lowest: 6.2× below plain, 223× below momentum (mean loss, k = 17–20)"``
    (runs by their house names, ``path_geometry.rule_name``); runs that
    diverged by then are named."""
    from ..views.paths.findings import findings_of

    update = int(next(iter(scene.recordings.values())).steps[index])
    return findings_of(scene, upto=update, paths=False).headline()


def set_finding(fig: Figure, text: str) -> None:
    """Put ``text`` in ``fig``'s headline (``views.core.figure.headline``), keeping its line
    count: the settings line hangs under it. A finding longer than the first is set a
    little smaller (down to ``style.TITLE_SIZE``) to fit those lines, else not wrapped
    (it would run into the settings line)."""
    title = _suptitle(fig)
    assert title is not None  # a headline to keep (follow_headline checks)
    old = title.get_text()
    body = old.rstrip("\n")
    size = style.SUPTITLE_SIZE
    lines = fit(text, fig.get_figwidth() * 72.0, size, bold=True)
    while lines.count("\n") > body.count("\n") and size > style.TITLE_SIZE:  # a little smaller, to fit
        size -= 0.5
        lines = fit(text, fig.get_figwidth() * 72.0, size, bold=True)
    if lines.count("\n") > body.count("\n"):
        lines = text
    title.set_fontsize(size)
    title.set_text(lines + "\n" * (body.count("\n") - lines.count("\n")) + old[len(body) :])


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
    """The ``PathsView`` the explorer updates: ``draw_paths``' figure without close-ups
    (``zoom`` False or no arrows), else paths and loss over one close-up axes per run
    (``artists.zoom_axes``, their boxes ``artists.zoom_boxes``; the widget draws them)."""
    if not (zoom and arrows) or step is None:
        view = draw_paths(recordings, surface, step, name=name, arrows=arrows, zoom=False, note=note)
        tidy_loss_axis(view.artists.ax_loss)
        return _named(view)
    fig = new_figure(CLOSE_UP_SIZE)
    keys = list(cast("Mapping[str, Recording]", recordings)) if hasattr(recordings, "keys") else ["recording"]
    n = max(1, len(keys))
    # room for tick labels that change with the update, and a margin under the close-ups
    engine = cast("ConstrainedLayoutEngine", fig.get_layout_engine())  # new_figure's: constrained
    engine.set(w_pad=0.1, rect=(0.0, BOTTOM_MARGIN, 1.0, 1.0 - BOTTOM_MARGIN))
    grid = fig.add_gridspec(3, 2 * n, height_ratios=[1.33, 0.09, 0.86])
    half = n  # the top row: paths on the left half, loss on the right
    ax_path = fig.add_subplot(grid[0, :half])
    ax_loss = fig.add_subplot(grid[0, half:])
    gap = fig.add_subplot(grid[1, :])  # the caption's row, between the paths and the close-ups
    gap.axis("off")
    close = [fig.add_subplot(grid[2, 2 * i : 2 * i + 2]) for i in range(n)]
    for i, ax in enumerate(close):  # the squares' slack towards the figure's edges: their
        # tick labels and titles change width with the update after the layout ran
        ax.set_anchor("E" if i == 0 and n > 1 else "W" if i == n - 1 and n > 1 else "C")
    view = draw_paths(recordings, surface, step, name=name, ax=(ax_path, ax_loss), arrows=arrows, zoom=False, note=note)
    scene, art = view.scene, view.artists
    assert view.update is not None  # step was given: draw_paths drew it
    index = int(np.flatnonzero(np.asarray(next(iter(scene.recordings.values())).steps) == view.update)[0])
    headline(fig, update_finding(scene, index), settings_line(scene))
    tidy_loss_axis(ax_loss)
    if not art.arrows:  # the recording can't give arrows: no close-ups to draw
        for ax in [gap, *close]:
            ax.remove()
        return view
    art.zoom_axes = dict(zip(scene.coords, close))
    # over the star and the paths, under the rings: a box grown to MIN_BOX_PX frames its run's ring
    art.zoom_boxes = {key: _zoom_box(ax_path, key, scene.colors[key], ZOOM_BOX_Z) for key in scene.coords}
    for key in scene.coords:  # "×33" beside each box (on a leader when off it): which close-up looks there
        ax_path.annotate(
            "",
            (0, 0),
            xytext=(0, 0),
            textcoords="data",
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
            color=scene.colors[key],
            ha="center",
            va="center",
            gid=f"zoom-callout:{key}",
            zorder=7.5,
            annotation_clip=False,
            bbox=dict(boxstyle="round,pad=0.12", fc="white", ec="none", alpha=0.85),
            arrowprops=dict(arrowstyle="-", color=scene.colors[key], lw=0.8, shrinkA=0, shrinkB=0),
        )
    art.caption = gap.text(
        0.5,
        0.5,
        explorer_caption(view.update),
        transform=gap.transAxes,
        fontsize=CAPTION_SIZE,
        color=style.SUBTITLE_COLOR,
        ha="center",
        va="center",
        gid="caption",
    )
    ax_path.set_xlabel(ax_path.get_xlabel(), labelpad=1.0)
    return _named(view)


def _named(view):
    """``view`` with each run's name written on its path (``path_names.name_runs``, on
    the laid-out figure): the runs are told apart by more than colour."""
    view.figure.draw_without_rendering()
    art = view.artists
    art.run_names = name_runs(view.scene, art, style.run_looks(view.scene.coords))
    return view


def move_loss_dots(art: PathArtists, dots: Mapping[str, tuple[float, float]]) -> None:
    """Put each run's loss dot at ``dots[config] = (update, loss)``, rings round the
    last where they coincide (``path_loss.nest_loss_dots``)."""
    for key, (s, loss) in dots.items():
        art.loss_markers[key].set_data([s], [loss])
    nest_loss_dots(art.loss_markers)


def show_arrows(scene: PathScene, art: PathArtists, update: int, title: str) -> None:
    """With close-ups, a run's arrows on the paths panel only where they show (a speck
    under its ring, ``path_titles.short_arrows``, is hidden: its close-up draws it),
    and the paths panel's ``title`` naming the runs whose arrows it draws."""
    short = short_arrows(scene, art, update) if art.zoom_axes and art.arrows else []
    for (key, _), q in art.arrows.items():
        q.set_visible(key not in short)
    if short:
        shown = len(short) < len(scene.coords)
        title = path_title(scene, update, short=short) if shown else f"Update {int(update)}: its terms up close below"
    assert art.title is not None  # draw_scene titles the paths panel
    art.title.set_text(title)


def _zoom_box(ax, key, color, zorder) -> Rectangle:
    from matplotlib.patches import Rectangle

    box = Rectangle((0, 0), 0, 0, ec=color, zorder=zorder, gid=f"zoom-box:{key}", **ZOOM_BOX_LOOK)
    ax.add_patch(box)  # returns the box itself
    return box


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


def close_up_title(key: str, zoom: float) -> str:
    """A close-up's title: the run and how many times closer than the paths it is (the
    update shown is in the paths' title and the caption)."""
    name = rule_name(key)
    return f"{name} · zoom ×{zoom:.0f}" if zoom >= 9.5 else f"{name} · zoom ×{zoom:.1f}"


def zoom_callouts(art: PathArtists) -> dict[str, Annotation]:
    """``{config: Text}``: the zoom factor written beside each close-up's box on the paths."""
    texts = {(t.get_gid() or "")[13:]: t for t in art.ax_path.texts if (t.get_gid() or "").startswith("zoom-callout:")}
    return cast("dict[str, Annotation]", texts)  # explorer_view draws them with annotate


def shown_box(
    box: Sequence[tuple[float, float]], ax: Axes, min_px: float = MIN_BOX_PX
) -> tuple[tuple[float, float], ...]:
    """``box`` (``((x0, x1), (y0, y1))``, data) grown about its centre to at least
    ``min_px`` pixels a side on ``ax``: a ×50 close-up's box is a few pixels otherwise.

    >>> from matplotlib.figure import Figure
    >>> ax = Figure(figsize=(4, 4), dpi=100).add_axes((0, 0, 1, 1), xlim=(0, 4), ylim=(0, 4))
    >>> shown_box(((1.0, 1.01), (2.0, 3.0)), ax)   # 400 px for 4 units: 22 px is 0.22
    ((0.895, 1.115), (2.0, 3.0))
    """
    bbox = ax.get_window_extent()
    (ax0, ax1), (ay0, ay1) = ax.get_xlim(), ax.get_ylim()
    per_px = (abs(ax1 - ax0) / max(bbox.width, 1.0), abs(ay1 - ay0) / max(bbox.height, 1.0))
    out = []
    for (lo, hi), unit in zip(box, per_px):
        half, mid = max(hi - lo, min_px * unit) / 2.0, (lo + hi) / 2.0
        out.append((round(mid - half, 12), round(mid + half, 12)))
    return tuple(out)


NEST_PX = 4.0  # a box drawn where another already is grows this many pixels each side


def nested_box(box: Sequence[float], drawn: Sequence[Sequence[float]], near: float = NEST_PX) -> tuple[float, ...]:
    """``box`` (pixels ``(x0, y0, x1, y1)``) grown by ``near`` each side, again, while
    each edge lies within ``near`` of one already ``drawn`` (two runs at one point have
    boxes of one size there: nested, both are seen).

    >>> nested_box((0, 0, 20, 20), [(1, -1, 21, 19)])
    (-4.0, -4.0, 24.0, 24.0)
    """
    box = tuple(float(v) for v in box)
    for _ in range(len(drawn) + 1):
        if not any(max(abs(a - b) for a, b in zip(box, d)) < near for d in drawn):
            break
        box = (box[0] - near, box[1] - near, box[2] + near, box[3] + near)
    return box


def callout_spot(
    box_px: Sequence[float],
    size_px: Sequence[float],
    obstacles: ArrayLike,
    taken: Iterable[Sequence[float]],
    frame: Sequence[float],
    gap: float = 3.0,
) -> tuple[float, float]:
    """Where a callout of ``size_px`` (w, h) goes beside the display box ``box_px``
    (x0, y0, x1, y1): the centre, right, left, above or below it (and the corners),
    holding the fewest ``obstacles`` points, overlapping no box of ``taken`` and inside
    ``frame``.

    >>> callout_spot((10, 10, 20, 20), (8, 4), [(26, 15)], [], (-50, -50, 100, 100))   # not right
    (3.0, 15.0)
    >>> callout_spot((10, 10, 20, 20), (8, 4), [(26, 15)], [], (0, 0, 100, 100))   # nor off the frame
    (15.0, 25.0)
    """
    x0, y0, x1, y1 = box_px
    w, h = size_px
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    dx, dy = (x1 - x0) / 2.0 + gap + w / 2.0, (y1 - y0) / 2.0 + gap + h / 2.0
    cands = [
        (cx + dx, cy),
        (cx - dx, cy),
        (cx, cy + dy),
        (cx, cy - dy),
        (cx + dx, cy + dy),
        (cx - dx, cy + dy),
        (cx + dx, cy - dy),
        (cx - dx, cy - dy),
    ]
    pts = np.asarray(obstacles, np.float64).reshape(-1, 2)
    best, cost = cands[0], np.inf
    for x, y in cands:
        b = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
        c = float(np.sum((pts[:, 0] >= b[0]) & (pts[:, 0] <= b[2]) & (pts[:, 1] >= b[1]) & (pts[:, 1] <= b[3])))
        c += 1000.0 * sum(b[0] < t[2] and b[2] > t[0] and b[1] < t[3] and b[3] > t[1] for t in taken)
        c += 1e6 * (b[0] < frame[0] or b[1] < frame[1] or b[2] > frame[2] or b[3] > frame[3])
        if c < cost:
            best, cost = (float(x), float(y)), c
    return best


def place_callouts(scene: PathScene, art: PathArtists) -> None:
    """Grow each close-up's box on the paths to ``MIN_BOX_PX``, write its zoom factor
    beside it and the start and minimum names beside their points, all placed by one
    scoring (``views.paths.labels``) off the paths, markers, boxes and each other."""
    ax = art.ax_path
    callouts = zoom_callouts(art)
    boxes = {}
    for key, rect in art.zoom_boxes.items():
        x, y, w, h = rect.get_x(), rect.get_y(), rect.get_width(), rect.get_height()
        if key not in art.zoom_axes or not (w > 0 and h > 0):
            continue
        (bx0, bx1), (by0, by1) = shown_box(((x, x + w), (y, y + h)), ax)
        px = (*ax.transData.transform((bx0, by0)), *ax.transData.transform((bx1, by1)))
        px = nested_box(px, list(boxes.values()))
        (bx0, by0), (bx1, by1) = ax.transData.inverted().transform([px[:2], px[2:]])
        rect.set_bounds(bx0, by0, bx1 - bx0, by1 - by0)
        boxes[key] = px
    renderer = renderer_of(ax.figure)
    for key, text in callouts.items():
        text.set_text(art.zoom_axes[key].get_title().rsplit(" ", 1)[-1] if key in boxes else "")  # "×33"
        arrow = getattr(text, "arrow_patch", None)
        if key not in boxes and arrow is not None:
            arrow.set_visible(False)
    obs = panel_obstacles(art, skip={*callouts.values(), *art.names.values()})
    for key, b in boxes.items():
        text = callouts.get(key)
        if text is None:
            continue
        x0, y0, x1, y1 = text_box(text, renderer)
        w, h = x1 - x0, y1 - y0
        others = [o for k, o in boxes.items() if k != key]
        pts = (obs.points, obs.weights)

        def lead(c, b=b, pts=pts):  # the paths its leader crosses (>= 0)
            end = np.clip(((c[0] + c[2]) / 2.0, (c[1] + c[3]) / 2.0), b[:2], b[2:])
            return 3.0 * leader_cost(obs, _box_edge(c[:4], end), end, points=pts) if c[4] > CALLOUT_LEADER_PX else 0.0

        # paths under it, boxes, distance, then leader crossings: the first cheapest candidate,
        # the leader measured only for those that could still win
        cands = _callout_candidates(b, (w, h))
        base = (
            spot_costs(obs, [c[:4] for c in cands], points=pts, touch=TOUCH)
            + [c[4] for c in cands]
            + [HARD * sum(boxes_overlap(c[:4], o) for o in others) for c in cands]
        )
        best, cost = None, np.inf
        for i in np.argsort(base, kind="stable"):
            if base[i] > cost:
                break
            total = base[i] + lead(cands[i])
            if total < cost or (total == cost and i < best):
                best, cost = int(i), total
        assert best is not None  # the cheapest candidate: every cost is finite
        spot = cands[best]
        place_text(text, spot[:4])
        end = np.clip(((spot[0] + spot[2]) / 2.0, (spot[1] + spot[3]) / 2.0), b[:2], b[2:])
        text.xy = tuple(ax.transData.inverted().transform(end))
        if text.arrow_patch is not None:  # a leader only where the callout sits off its box
            text.arrow_patch.set_visible(spot[4] > CALLOUT_LEADER_PX)
        obs.add_box(spot[:4])
        if spot[4] > CALLOUT_LEADER_PX:  # the names keep off its leader too
            obs.add_polyline([_box_edge(spot[:4], end), end])
    place_names(art, (), scene)  # now off the callouts too


def _box_edge(box, towards):
    """The point of ``box``'s edge (display) nearest ``towards`` (outside it)."""
    return np.clip(np.asarray(towards, np.float64), box[:2], box[2:])


def _callout_candidates(box, size, gaps=CALLOUT_GAPS):
    """Boxes of ``size`` beside the display ``box`` (x0, y0, x1, y1): right, left,
    above, below and the corners, ``gap`` pixels off it (the gap last)."""
    x0, y0, x1, y1 = box
    w, h = size
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    out = []
    for g in gaps:
        dx, dy = (x1 - x0) / 2.0 + g + w / 2.0, (y1 - y0) / 2.0 + g + h / 2.0
        for x, y in (
            (cx + dx, cy),
            (cx - dx, cy),
            (cx, cy + dy),
            (cx, cy - dy),
            (cx + dx, cy + dy),
            (cx - dx, cy + dy),
            (cx + dx, cy - dy),
            (cx - dx, cy - dy),
            (cx + dx, y1 - h / 2),
            (cx + dx, y0 + h / 2),
            (cx - dx, y1 - h / 2),
            (cx - dx, y0 + h / 2),
        ):
            out.append((x - w / 2, y - h / 2, x + w / 2, y + h / 2, g))
    return out


def _trim_close_up(ax, key) -> None:
    """Keep only the path's last ``TRAIL_KEEP`` segments before the update in a close-up:
    the whole path faintly and the older trail crowd a wide (×5) one."""
    for artist in [*ax.lines, *ax.collections]:
        gid = artist.get_gid() or ""
        if gid == f"zoom-path:{key}":
            artist.set_visible(False)
        elif gid == f"zoom-trail:{key}":
            segs, colors = artist.get_segments(), artist.get_colors()
            artist.set_segments(segs[-TRAIL_KEEP:])
            artist.set_color(colors[-TRAIL_KEEP:] if len(colors) == len(segs) else colors)
        elif gid == f"zoom-trail-points:{key}":
            offs, colors = artist.get_offsets(), artist.get_facecolors()
            artist.set_offsets(offs[-TRAIL_KEEP:])
            if len(colors) == len(offs):
                artist.set_facecolor(colors[-TRAIL_KEEP:])


def draw_close_up(scene: PathScene, art: PathArtists, key: str, data: PanelData) -> None:
    """Redraw ``key``'s close-up at ``data`` (``path_frames.draw_zoom``: the panel and its
    box on the paths), titled by ``close_up_title``, with only the path's last segments.
    ``draw_close_ups`` draws every run's on one zoom."""
    draw_zoom(scene, art, key, data)
    _trim_close_up(art.zoom_axes[key], key)
    if data.box is not None:
        art.zoom_axes[key].set_title(
            close_up_title(key, upd.zoom_factor(scene.box, data.box)),
            fontsize=style.TITLE_SIZE,
            color=scene.colors[key],
            fontweight="bold",
        )


def draw_close_ups(scene: PathScene, art: PathArtists, panels: Mapping[str, PanelData]) -> None:
    """Redraw every run's close-up at ``panels`` (``{config: PanelData}``) on one zoom,
    as ``plot_update`` does (``views.update.zoom.shared_zoom``): each box the size of the
    largest, arrows at their true length, a run too small at that zoom drawn again closer
    in an inset and unnamed in its panel; the caption says the zoom in one line."""
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
            draw_inset(ax, scene, own[key], data, styles[key])
        update_panel.keep_labels_inside(ax)
    if art.caption is not None:
        update = next(iter(panels.values())).update
        art.caption.set_text(
            explorer_caption(update, zoom_caption(scene.box, own, shared, insets, not scene.plane.is_identity))
        )


def explorer_still(
    recordings: Recording | Mapping[str, Recording], surface: Surface, step: int, *, name: str | None = None
) -> Figure:
    """The explorer's picture at update ``step``, drawn once with no widget (the still of
    ``web.PathExplorer`` for readers that run no scripts): the paths and the loss, the
    headline ``findings(..., upto=step).headline()`` (``update_finding``) and, where the
    recordings give the update's terms, every run's close-up on one zoom
    (``draw_close_ups``). Returns the ``Figure``."""
    from ..views.paths.frames import panel_at

    recs = recordings if isinstance(recordings, Mapping) else {"recording": recordings}
    arrows = all(upd.why_no_arrows(r) is None for r in recs.values() if hasattr(r, "kinds"))
    view = explorer_view(recordings, surface, step, name=name, arrows=arrows, zoom=True, note=None)
    scene, art = view.scene, view.artists
    assert view.update is not None  # step was given: draw_paths drew it
    index = {k: int(np.flatnonzero(np.asarray(r.steps) == view.update)[0]) for k, r in scene.recordings.items()}
    if art.zoom_axes:
        draw_close_ups(scene, art, {k: panel_at(scene, k, index[k], True) for k in art.zoom_axes})
        assert art.title is not None  # draw_scene titles the paths panel
        show_arrows(scene, art, view.update, art.title.get_text())
    view.figure.draw_without_rendering()  # the layout, once: then the close-ups' names kept inside, the callouts placed
    for ax in art.zoom_axes.values():
        update_panel.keep_labels_inside(ax)
    follow_headline(view.figure, scene, art, view.update, update_finding(scene, next(iter(index.values()))))
    return view.figure


def headline_parts(fig: Figure, art: PathArtists) -> list[Text]:
    """The texts ``follow_headline`` changes: the headline and the boxes' callouts."""
    title = _suptitle(fig)
    return [*zoom_callouts(art).values(), *([title] if title is not None else [])]


def follow_headline(fig: Figure, scene: PathScene, art: PathArtists, update: int, text: str) -> None:
    """After the close-ups were drawn at ``update`` (``draw_close_ups``, which also sets
    the caption): their boxes' callouts and the headline (``text``, ``update_finding``);
    a ring on the star shows it through."""
    open_rings_on_star(art)
    if art.zoom_axes:
        place_callouts(scene, art)
    if _suptitle(fig) is not None and text:
        set_finding(fig, text)
