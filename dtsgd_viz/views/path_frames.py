"""Drawing a path figure from its ``PathScene``: the loss contours, the paths, the
update taken apart into arrows (with a zoomed panel per run), the loss per update, the
legend and notes; and the pieces that follow the update (``set_trail``, ``draw_zoom``,
``path_title``), which ``plot_paths``, the animation and ``PathExplorer`` share.
Geometry comes from ``views.path_geometry`` and ``views.update_geometry``; this module
only draws.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from . import path_geometry as geo
from . import style
from . import update_geometry as upd
from . import update_panel as panel
from .figure import new_figure
from .path_scene import PathScene

__all__ = ["PathArtists", "draw_scene", "draw_zoom", "set_trail", "path_title", "panel_at"]


@dataclasses.dataclass
class PathArtists:
    """The artists an animation (or a widget) updates in place."""

    ax_path: object
    ax_loss: object | None
    paths: dict
    positions: dict = dataclasses.field(default_factory=dict)
    arrows: dict = dataclasses.field(default_factory=dict)     # (config, term) -> Quiver
    loss_markers: dict = dataclasses.field(default_factory=dict)
    loss_lines: dict = dataclasses.field(default_factory=dict)
    trails: dict = dataclasses.field(default_factory=dict)     # config -> LineCollection
    zoom_boxes: dict = dataclasses.field(default_factory=dict)  # config -> Rectangle
    zoom_axes: dict = dataclasses.field(default_factory=dict)   # config -> Axes
    step_line: object = None
    title: object = None
    note: object = None      # the Text saying why no arrows are drawn, if any
    diverged_note: object = None  # the Text naming the runs that diverged and when


def _outline(width=3.2):
    from matplotlib import patheffects
    return [patheffects.Stroke(linewidth=width, foreground="white", alpha=0.85), patheffects.Normal()]


def _axes(ax, zoom_keys=()):
    """``(fig, path_ax, loss_ax, zoom_axes, own)``: with ``zoom_keys`` a new figure has a
    second row holding one zoomed panel per run."""
    if ax is None:
        if not zoom_keys:
            fig = new_figure(figsize=(11.5, 5.2))
            ax_path, ax_loss = fig.subplots(1, 2, gridspec_kw=dict(width_ratios=[1.2, 1.0]))
            return fig, ax_path, ax_loss, {}, True
        fig = new_figure(figsize=(11.5, 9.4))
        top, bottom = fig.subfigures(2, 1, height_ratios=[1.2, 1.0], hspace=0.02)
        ax_path, ax_loss = top.subplots(1, 2, gridspec_kw=dict(width_ratios=[1.2, 1.0]))
        zooms = bottom.subplots(1, len(zoom_keys), squeeze=False)[0]
        bottom.suptitle("Each run's update up close: the momentum term in the run's colour, "
                        "the gradient term −lr·g in its light tint, tip to tail",
                        fontsize=style.FONT_SIZE + 1)
        return fig, ax_path, ax_loss, dict(zip(zoom_keys, zooms)), True
    if isinstance(ax, (tuple, list)):
        if len(ax) != 2:
            raise ValueError(f"ax must be one Axes or a pair (path_ax, loss_ax). Received: {len(ax)} axes.")
        return ax[0].figure, ax[0], ax[1], {}, False
    if not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes, a pair of them, or None. Received: {ax!r}.")
    return ax.figure, ax, None, {}, False


def _index(scene, key, update):
    return geo.step_index(scene.recordings[key].steps, update)



def draw_scene(scene: PathScene, update, ax, arrows, ghost=False, zoom=True,
               note=None) -> tuple[object, PathArtists]:
    """Draw ``scene`` at ``update`` (None: no update picked) on ``ax`` (None: a new
    figure, with a zoomed panel per run if ``zoom`` and there are arrows); ``ghost``
    draws the whole paths faintly under the growing ones (the animation). Returns the
    figure and the ``PathArtists`` that follow the update."""
    if arrows and update is not None and note is None:
        # draw what the recording allows: without the update before, no arrows, and say why
        note = _why_no_arrows(scene, update)
        if note:
            arrows = False

    zoom_keys = tuple(scene.coords) if (zoom and arrows and update is not None) else ()
    fig, ax_path, ax_loss, zoom_axes, own = _axes(ax, zoom_keys)
    _draw_contours(scene, ax_path.figure, ax_path)
    styles = panel.run_styles(scene.coords)

    art = PathArtists(ax_path, ax_loss, {}, zoom_axes=zoom_axes)
    # a dot per step while the dots stay apart; long runs are clearer as a line
    dots = max(len(c) for c in scene.coords.values()) <= 61
    picked = update is not None
    _draw_path_lines(scene, art, styles, ghost, dots, picked)
    min_label = _draw_start_and_minima(scene, ax_path)
    _frame_path_axes(scene, ax_path)
    handles = _legend_handles(scene, styles, dots, min_label)

    if picked:
        _draw_step(scene, update, art, arrows, handles, styles)

    art.title = ax_path.set_title(path_title(scene, update), fontsize=style.FONT_SIZE + 2)
    _draw_notes(scene, art, note)

    if ax_loss is not None:
        _draw_loss(scene, update, art, styles)
    _draw_legend_and_title(scene, fig, ax_path, handles, own)
    return fig, art


def _why_no_arrows(scene, update):
    """The first run's reason the update can't be drawn as arrows, or None."""
    for key, rec in scene.recordings.items():
        note = upd.why_no_arrows(rec, _index(scene, key, update))
        if note:
            return note
    return None


def _draw_path_lines(scene, art, styles, ghost, dots, picked):
    """Each run's path (faint under a picked update) and, with ``ghost``, its whole run."""
    ax_path = art.ax_path
    for key, c in scene.coords.items():
        color, st = scene.colors[key], styles[key]
        # a diverged run ends at the edge: drawn on, it would criss-cross the panel
        c = c[:geo.drawn_length(len(c), scene.diverged.get(key))]
        if ghost:
            ax_path.plot(c[:, 0], c[:, 1], "-", color=color, lw=1.0, alpha=0.3,
                         gid=f"path-ghost:{key}")
        # with an update picked, the whole path is a pale guide and the trail up to the
        # update is drawn over it, older updates fading
        (art.paths[key],) = ax_path.plot(
            c[:, 0], c[:, 1], ls=st["ls"], marker=st["marker"] if dots else "", color=color,
            lw=st["lw"] * (0.6 if picked else 1.0), ms=st["ms"], label=key, gid=f"path:{key}",
            alpha=0.3 if picked else 1.0, path_effects=None if picked else _outline(st["lw"] + 1.6),
            zorder=st["zorder"])


def _draw_start_and_minima(scene, ax_path) -> str:
    """The start points and the minima (starred); returns the minima's legend label."""
    ax_path.plot(scene.starts[:, 0], scene.starts[:, 1], "o", ms=9, mfc="white", mec="black",
                 mew=1.5, ls="none", label="start", gid="start", zorder=5)
    scale = max(1.0, float(np.abs(scene.plane.origin).max()))
    on_plane = scene.plane.is_identity or scene.minima_off_plane < 1e-6 * scale
    min_label = ("minima" if len(scene.minima) > 1 else "minimum") + (
        "" if on_plane else " (projected)")
    ax_path.plot(scene.minima[:, 0], scene.minima[:, 1], "*", ms=15, mfc="#F0E442", mec="black",
                 mew=1.0, ls="none", label=min_label, gid="minimum", zorder=5)
    return min_label


def _frame_path_axes(scene, ax_path):
    """Limits and axis labels: the parameters, or the principal directions of the plane."""
    fs = style.FONT_SIZE
    ax_path.set_xlim(*scene.box[0])
    ax_path.set_ylim(*scene.box[1])
    if scene.plane.is_identity:
        ax_path.set_xlabel(f"{scene.name}[0]", fontsize=fs + 1)
        ax_path.set_ylabel(f"{scene.name}[1]", fontsize=fs + 1)
        ax_path.set_aspect("equal", adjustable="box")
    else:
        e1, e2 = scene.plane.explained
        ax_path.set_xlabel(f"principal direction 1 of {scene.name} ({e1:.0%} of path variance)",
                           fontsize=fs + 1)
        ax_path.set_ylabel(f"principal direction 2 ({e2:.0%})", fontsize=fs + 1)
    ax_path.tick_params(labelsize=fs)


def _legend_handles(scene, styles, dots, min_label) -> list:
    """Legend entries of the runs, the start and the minima."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=scene.colors[k], lw=styles[k]["lw"], ls=styles[k]["ls"],
                      marker=styles[k]["marker"] if dots else "", ms=styles[k]["ms"], label=k)
               for k in scene.coords]
    handles += [Line2D([], [], ls="none", marker="o", ms=8, mfc="white", mec="black", label="start"),
                Line2D([], [], ls="none", marker="*", ms=12, mfc="#F0E442", mec="black",
                       label=min_label)]
    return handles


def _draw_notes(scene, art, note):
    """The path panel's notes: the runs that diverged, and why there are no arrows."""
    ax_path, fs = art.ax_path, style.FONT_SIZE
    if scene.diverged:
        art.diverged_note = ax_path.text(
            0.99, 0.01, geo.diverged_note(scene.diverged) + "\n(left the view there; drawn up to it)",
            transform=ax_path.transAxes, ha="right", va="bottom", fontsize=fs - 1, color="#A04000",
            gid="diverged-note", zorder=8, bbox=dict(fc="white", ec="#D55E00", alpha=0.92, pad=2.0))
    if note:
        art.note = ax_path.text(0.01, 0.01, note, transform=ax_path.transAxes, ha="left", va="bottom",
                                fontsize=fs - 1, color="0.2", gid="arrows-note", zorder=8,
                                bbox=dict(fc="white", ec="0.7", alpha=0.9, pad=2.0))


def _draw_legend_and_title(scene, fig, ax_path, handles, own):
    """The legend (under a figure of our own, else in the path panel) and, in a figure of
    our own, the title naming the surface and the plane."""
    fs = style.FONT_SIZE
    if own:
        leg_fig = ax_path.figure
        leg_fig.legend(handles=handles, fontsize=fs, loc="outside lower center",
                       ncol=min(len(handles), 5 if len(handles) <= 5 else 4), frameon=False)
    else:
        ax_path.legend(handles=handles, fontsize=fs - 1, loc="best", framealpha=0.9)
    if own:
        dim = scene.plane.dim
        what = (f"{dim} parameters, drawn on the plane of their top two principal directions"
                if not scene.plane.is_identity else "2 parameters")
        label = getattr(scene.surface, "label", type(scene.surface).__name__)
        fig.suptitle(f"Update paths on the {label}\n({what})", fontsize=fs + 3)


def _draw_contours(scene, fig, ax):
    """Pale filled log-spaced loss contours (so the paths stand out), white level lines
    and a colour bar."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator

    X, Y, Z = scene.grid
    levels = scene.levels
    with np.errstate(invalid="ignore", divide="ignore"):
        cf = ax.contourf(X, Y, np.clip(Z, levels[0], levels[-1]), levels=levels,
                         cmap=style.SEQUENTIAL_CMAP, norm=LogNorm(levels[0], levels[-1]),
                         alpha=CONTOUR_ALPHA)
        ax.contour(X, Y, Z, levels=levels, colors="white", linewidths=0.6, alpha=0.8)
    cbar = fig.colorbar(cf, ax=ax, pad=0.01, fraction=0.05, ticks=LogLocator(),
                        format=LogFormatterSciNotation())
    cbar.set_label("loss (log scale)" if scene.plane.is_identity
                   else "loss on this plane (log scale)", fontsize=style.FONT_SIZE)
    cbar.ax.tick_params(labelsize=style.FONT_SIZE - 1)


CONTOUR_ALPHA = 0.3
FEW_POINTS = 3   # loss lines of this many points or fewer get markers


def path_title(scene, update):
    """The path panel's title at ``update`` (None: no update picked)."""
    if update is None:
        return "Paths on the loss contours"
    return f"Update {int(update)}: the paths so far (older updates fade; faint: the rest of the run)"


def set_trail(trail, coords, index, color):
    """Point the fading trail ``trail`` (a LineCollection) at the path up to ``index``."""
    seg = panel.trail_segments(coords, index)
    trail.set_segments(list(seg))
    trail.set_color(panel.fade_rgba(color, len(seg)))


def panel_at(scene, key, index, arrows):
    """The ``PanelData`` of ``key``'s zoomed panel at recording index ``index``."""
    rec = scene.recordings[key]
    update = upd.decompose_update(rec, scene.name, index)
    return panel.panel_data(key, int(rec.steps[index]), scene.coords[key], index,
                            upd.arrow_chain(update, scene.plane),
                            upd.nesterov_points(update, scene.plane), scene.box)


def draw_zoom(scene, art, key, data):
    """Redraw ``key``'s zoomed panel and move its box on the path panel."""
    panel.draw_update_panel(art.zoom_axes[key], scene, data, scene.colors[key],
                            panel.run_styles(scene.coords)[key], scene.plane.is_identity)
    if data.box is not None and key in art.zoom_boxes:
        (x0, x1), (y0, y1) = data.box
        art.zoom_boxes[key].set_bounds(x0, y0, x1 - x0, y1 - y0)


def _draw_step(scene, update, art, arrows, handles, styles):
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    ax = art.ax_path
    seen_terms = {}
    for key, rec in scene.recordings.items():
        color, st = scene.colors[key], styles[key]
        c = scene.coords[key]
        i = _index(scene, key, update)
        art.trails[key] = LineCollection([], linewidths=st["lw"], linestyles=[st["ls"]],
                                         gid=f"trail:{key}", zorder=st["zorder"] + 0.5)
        ax.add_collection(art.trails[key])
        set_trail(art.trails[key], c, i, color)
        (art.positions[key],) = ax.plot([c[i, 0]], [c[i, 1]], "o", ms=9, mfc="white",
                                        mec=color, mew=2.0, gid=f"position:{key}", zorder=6)
        if not arrows:
            continue
        decomposed = upd.decompose_update(rec, scene.name, i)
        for term, tail, uv in upd.arrow_chain(decomposed, scene.plane):
            tc = panel.term_color(term, color)
            q = ax.quiver([tail[0]], [tail[1]], [uv[0]], [uv[1]], angles="xy", scale_units="xy",
                          scale=1.0, color=tc, width=0.008, headwidth=3.2,
                          headlength=3.8, headaxislength=3.4, edgecolor=color,
                          linewidth=0.6, zorder=7, gid=f"arrow:{key}:{term}")
            art.arrows[(key, term)] = q
            if term != "gradient":
                seen_terms.setdefault(upd.TERM_LABELS[term] + ", run colour", "0.3")
        if key in art.zoom_axes:
            art.zoom_boxes[key] = ax.add_patch(Rectangle(
                (0, 0), 0, 0, fill=False, ec=color, lw=1.2, ls="--", zorder=6,
                gid=f"zoom-box:{key}"))
            draw_zoom(scene, art, key, panel_at(scene, key, i, arrows))
    if arrows:
        seen_terms[upd.TERM_LABELS["gradient"] + ", light tint"] = panel.tint("#555555")
    for label, color in seen_terms.items():
        handles.append(Line2D([], [], ls="none", marker=r"$\rightarrow$", ms=14, color=color,
                              label=label))
    if any(r.hyperparameters.nesterov and r.hyperparameters.momentum
           for r in scene.recordings.values()) and art.zoom_axes:
        handles.append(Line2D([], [], ls="none", marker="D", ms=6, color="0.3",
                              label="Nesterov look-ahead point (g taken there)"))
        handles.append(Line2D([], [], ls=":", lw=1.4, marker="s", ms=6, mfc="white", mec="0.3", color="0.3",
                              label="classical iterate p − μ·v (dotted)"))


def _draw_loss(scene, update, art, styles):
    ax = art.ax_loss
    fs = style.FONT_SIZE
    from_surface = False
    lost = {}   # runs whose loss stops being finite without having left the view
    for key, (steps, loss, computed) in scene.losses.items():
        from_surface |= computed
        few = len(steps) <= FEW_POINTS   # one point per line draws nothing without a marker
        (art.loss_lines[key],) = ax.plot(steps, loss, ls=styles[key]["ls"], color=scene.colors[key],
                                         lw=max(1.4, styles[key]["lw"] * 0.6), label=key,
                                         marker=styles[key]["marker"] or "o" if few else "",
                                         ms=6, gid=f"loss:{key}")
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(loss) & (loss > 0)
        if key in scene.diverged or not finite.all():
            # where the log axis ends for this run: its last finite loss
            last = np.flatnonzero(finite)
            if len(last):
                ax.plot([steps[last[-1]]], [loss[last[-1]]], "x", ms=11, mew=2.5,
                        color=scene.colors[key], gid=f"loss-diverged:{key}", zorder=6)
            if key not in scene.diverged:
                lost[key] = int(steps[last[-1] + 1]) if len(last) and last[-1] + 1 < len(steps) else None
        if update is not None:
            i = _index(scene, key, update)
            (art.loss_markers[key],) = ax.plot([steps[i]], [loss[i]], "o", ms=7,
                                               color=scene.colors[key], mec="white",
                                               gid=f"loss-marker:{key}", zorder=5)
    ax.set_yscale("log")
    ax.set_xlabel("update", fontsize=fs + 1)
    ax.set_ylabel("loss after the update (from the surface)" if from_surface
                  else "loss (before the update)", fontsize=fs + 1)
    ax.set_title("Loss per update (log scale)", fontsize=fs + 2)
    ax.grid(True, which="major", alpha=0.3)
    ax.tick_params(labelsize=fs)
    from matplotlib.ticker import MaxNLocator
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))  # updates are whole numbers
    first = min(int(st[0]) for st, _, _ in scene.losses.values())
    last = max(int(st[-1]) for st, _, _ in scene.losses.values())
    if last - first < 4:  # a short run: a margin of half an update, ticks on the updates
        ax.set_xlim(first - 0.5, last + 0.5)
    if scene.diverged or lost:
        lines = [geo.diverged_note(scene.diverged)] if scene.diverged else []
        lines += [f"{k}: loss not finite from update {u}" if u else f"{k}: loss not finite"
                  for k, u in lost.items()]
        ax.text(0.01, 0.01, "\n".join(lines) + "\n(x: the last finite loss)", transform=ax.transAxes,
                ha="left", va="bottom", fontsize=fs - 1, color="#A04000", gid="loss-diverged-note",
                zorder=8, bbox=dict(fc="white", ec="#D55E00", alpha=0.92, pad=2.0))
    if update is not None:
        art.step_line = ax.axvline(update, color="0.35", ls="--", lw=0.9, gid="step-line")
