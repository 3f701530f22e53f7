"""Update paths: each optimizer's trajectory on the loss contours, one update taken
apart into its terms (on the paths and in a zoomed panel per run), and the loss per
update beside it. ``step=k`` is optimizer update k as ``recording.steps`` counts them.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic()
    >>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9),
    ...                          "nesterov": dict(learning_rate=0.05, momentum=0.9,
    ...                                           nesterov=True)}, steps=6)
    >>> fig = dtsgd_viz.plot_paths(recs, s, step=3)      # a matplotlib Figure
    >>> fig.axes[0].get_title()
    'Update 3: the paths so far (older updates fade; faint: the rest of the run)'
    >>> sorted(a.get_gid() for a in fig.axes[0].collections if "arrow" in (a.get_gid() or ""))
    ['arrow:momentum:gradient', 'arrow:momentum:momentum', 'arrow:nesterov:gradient', 'arrow:nesterov:lookahead']

``animate(recs, s)`` returns a ``FuncAnimation`` of the same figure going through the
run (``anim.save("paths.gif", writer="pillow")``).

Parameters of more than two numbers are drawn on the plane of their top two
principal directions (all paths together), and the loss is evaluated on that plane,
so the contours under a projected path are real. Geometry comes from the pure
``views.path_geometry``; this module only draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from . import path_geometry as geo
from . import update_panel as panel
from . import style
from .empty import check_not_empty
from .figure import new_figure
from ._path_motion import animate

__all__ = ["plot_paths", "animate", "draw_paths", "PathsView"]



@dataclasses.dataclass(frozen=True, eq=False)
class _Scene:
    """Everything a path figure shows, computed before any drawing."""

    surface: object
    name: str
    recordings: dict
    colors: dict
    plane: geo.Plane
    coords: dict          # config -> (n_steps + 1, 2) plot coordinates of the path
    box: tuple
    grid: tuple           # X, Y, Z
    levels: np.ndarray
    minima: np.ndarray    # (k, 2) plot coordinates
    minima_off_plane: float
    starts: np.ndarray    # (m, 2) distinct starts
    losses: dict          # config -> (steps, loss, from_surface)
    diverged: dict = dataclasses.field(default_factory=dict)  # config -> update it left the view


def _as_dict(recordings) -> dict:
    if hasattr(recordings, "path") and hasattr(recordings, "steps"):
        recordings = {"recording": recordings}
    if not isinstance(recordings, Mapping) or not recordings:
        raise ValueError(
            "recordings must be a non-empty dict {config name: Recording} (as dtsgd_viz.run "
            f"returns) or one Recording. Received: {recordings!r}."
        )
    for key, rec in recordings.items():
        if not (hasattr(rec, "path") and hasattr(rec, "steps")):
            raise TypeError(f"recordings[{key!r}] must be a Recording. Received: {type(rec).__name__}.")
        check_not_empty(rec, key)
    return dict(recordings)


def _scene(recordings, surface, name, diverged=None) -> _Scene:
    recordings = _as_dict(recordings)
    if not all(hasattr(surface, a) for a in ("shape", "value_np", "minimum")):
        raise TypeError(
            "surface must be a dtsgd_viz.surfaces surface (with shape, value_np and "
            f"minimum). Received: {type(surface).__name__}."
        )
    name = geo.select_variable(recordings, name)
    shape = tuple(surface.shape)
    dim = int(np.prod(shape))
    for key, rec in recordings.items():
        got = tuple(rec.shape(name))
        if got != shape:
            raise ValueError(
                f"Cannot draw {key!r} on {type(surface).__name__}: the surface takes parameters "
                f"of shape {shape} ({dim} numbers), but recorded variable {name!r} has shape "
                f"{got}. Pass the surface the recordings were made on."
            )
    if dim < 2:
        raise ValueError(
            f"plot_paths draws parameters of 2 or more numbers on a plane. Received: a "
            f"surface of shape {shape}."
        )
    paths = {k: r.path(name).astype(np.float64).reshape(-1, dim) for k, r in recordings.items()}
    plane = geo.identity_plane() if dim == 2 else geo.pca_plane(list(paths.values()))
    coords = {k: geo.project(p, plane) for k, p in paths.items()}
    view_box = getattr(surface, "view_box", None) if plane.is_identity else None
    if diverged is None:
        diverged = geo.diverged_runs(coords, view_box)
    diverged = {k: (None if u is None else int(u)) for k, u in diverged.items() if k in coords}
    # a diverged run counts for the box only until it leaves the view
    kept = [c if k not in diverged else c[:geo.drawn_length(len(c), diverged[k]) - 1]
            for k, c in coords.items()]
    box = geo.plot_box(view_box, np.concatenate(kept))
    grid = geo.loss_grid(surface.value_np, plane, shape, box)
    minima_flat = np.asarray(surface.minimum, np.float64).reshape(-1, dim)
    minima = geo.project(minima_flat, plane)
    off = float(np.max(np.linalg.norm(geo.lift(minima, plane) - minima_flat, axis=-1)))
    starts = np.unique(np.round(np.stack([c[0] for c in coords.values()]), 12), axis=0)
    losses = {}
    for k, r in recordings.items():
        if r.loss is not None:
            losses[k] = (np.asarray(r.steps), np.asarray(r.loss, np.float64), False)
        else:  # no loss reported: the loss after each recorded update, from the surface
            losses[k] = (np.asarray(r.steps), surface.value_np(r.global_values(name, "param")), True)
    return _Scene(surface, name, recordings, style.optimizer_colors(recordings), plane, coords,
                  box, grid, geo.log_levels(grid[2]), minima, off, starts, losses, diverged)


# ---- drawing ------------------------------------------------------------------------


@dataclasses.dataclass
class _Artists:
    """The artists an animation updates in place."""

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


def _draw(scene: _Scene, update, ax, arrows, ghost=False, zoom=True, note=None) -> tuple[object, _Artists]:
    from matplotlib.lines import Line2D

    if arrows and update is not None and note is None:
        # draw what the recording allows: without the update before, no arrows, and say why
        for key, rec in scene.recordings.items():
            note = geo.why_no_arrows(rec, _index(scene, key, update))
            if note:
                arrows = False
                break

    zoom_keys = tuple(scene.coords) if (zoom and arrows and update is not None) else ()
    fig, ax_path, ax_loss, zoom_axes, own = _axes(ax, zoom_keys)
    fs = style.FONT_SIZE
    _draw_contours(scene, ax_path.figure, ax_path)
    styles = panel.run_styles(scene.coords)

    art = _Artists(ax_path, ax_loss, {}, zoom_axes=zoom_axes)
    # a dot per step while the dots stay apart; long runs are clearer as a line
    dots = max(len(c) for c in scene.coords.values()) <= 61
    picked = update is not None
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
    ax_path.plot(scene.starts[:, 0], scene.starts[:, 1], "o", ms=9, mfc="white", mec="black",
                 mew=1.5, ls="none", label="start", gid="start", zorder=5)
    scale = max(1.0, float(np.abs(scene.plane.origin).max()))
    on_plane = scene.plane.is_identity or scene.minima_off_plane < 1e-6 * scale
    min_label = ("minima" if len(scene.minima) > 1 else "minimum") + (
        "" if on_plane else " (projected)")
    ax_path.plot(scene.minima[:, 0], scene.minima[:, 1], "*", ms=15, mfc="#F0E442", mec="black",
                 mew=1.0, ls="none", label=min_label, gid="minimum", zorder=5)
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

    handles = [Line2D([], [], color=scene.colors[k], lw=styles[k]["lw"], ls=styles[k]["ls"],
                      marker=styles[k]["marker"] if dots else "", ms=styles[k]["ms"], label=k)
               for k in scene.coords]
    handles += [Line2D([], [], ls="none", marker="o", ms=8, mfc="white", mec="black", label="start"),
                Line2D([], [], ls="none", marker="*", ms=12, mfc="#F0E442", mec="black",
                       label=min_label)]

    if picked:
        _draw_step(scene, update, art, arrows, handles, styles)

    art.title = ax_path.set_title(path_title(scene, update), fontsize=fs + 2)
    if scene.diverged:
        art.diverged_note = ax_path.text(
            0.99, 0.01, geo.diverged_note(scene.diverged) + "\n(left the view there; drawn up to it)",
            transform=ax_path.transAxes, ha="right", va="bottom", fontsize=fs - 1, color="#A04000",
            gid="diverged-note", zorder=8, bbox=dict(fc="white", ec="#D55E00", alpha=0.92, pad=2.0))
    if note:
        art.note = ax_path.text(0.01, 0.01, note, transform=ax_path.transAxes, ha="left", va="bottom",
                                fontsize=fs - 1, color="0.2", gid="arrows-note", zorder=8,
                                bbox=dict(fc="white", ec="0.7", alpha=0.9, pad=2.0))

    if ax_loss is not None:
        _draw_loss(scene, update, art, styles)
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
    return fig, art


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
    if update is None:
        return "Paths on the loss contours"
    return f"Update {int(update)}: the paths so far (older updates fade; faint: the rest of the run)"


def set_trail(trail, coords, index, color):
    """Point the fading trail ``trail`` (a LineCollection) at the path up to ``index``."""
    seg = panel.trail_segments(coords, index)
    trail.set_segments(list(seg))
    trail.set_color(panel.fade_rgba(color, len(seg)))


def _panel(scene, key, index, arrows):
    rec = scene.recordings[key]
    update = geo.decompose_update(rec, scene.name, index)
    return panel.panel_data(key, int(rec.steps[index]), scene.coords[key], index,
                            geo.arrow_chain(update, scene.plane),
                            geo.nesterov_points(update, scene.plane), scene.box)


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
        decomposed = geo.decompose_update(rec, scene.name, i)
        for term, tail, uv in geo.arrow_chain(decomposed, scene.plane):
            tc = panel.term_color(term, color)
            q = ax.quiver([tail[0]], [tail[1]], [uv[0]], [uv[1]], angles="xy", scale_units="xy",
                          scale=1.0, color=tc, width=0.008, headwidth=3.2,
                          headlength=3.8, headaxislength=3.4, edgecolor=color,
                          linewidth=0.6, zorder=7, gid=f"arrow:{key}:{term}")
            art.arrows[(key, term)] = q
            if term != "gradient":
                seen_terms.setdefault(geo.TERM_LABELS[term] + ", run colour", "0.3")
        if key in art.zoom_axes:
            art.zoom_boxes[key] = ax.add_patch(Rectangle(
                (0, 0), 0, 0, fill=False, ec=color, lw=1.2, ls="--", zorder=6,
                gid=f"zoom-box:{key}"))
            draw_zoom(scene, art, key, _panel(scene, key, i, arrows))
    if arrows:
        seen_terms[geo.TERM_LABELS["gradient"] + ", light tint"] = panel.tint("#555555")
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


# ---- public -------------------------------------------------------------------------


def plot_paths(recordings, surface, step=None, *, name=None, ax=None, arrows=True, zoom=True):
    """Paths of every optimizer on the loss contours of ``surface``, and loss per update.

    Args:
      recordings: ``{config name: Recording}`` (what ``dtsgd_viz.run`` returns) or one
        ``Recording``.
      surface: the ``dtsgd_viz.surfaces`` surface the recordings were made on.
      step: the optimizer update to take apart, as ``recording.steps`` counts them
        (the first update is 1; ``-1`` is the last, ``-2`` the one before). Its terms
        are drawn as arrows from the parameter before it: classical momentum
        ``mu*v_prev`` then ``-lr*g``; Nesterov (tf-keras form) ``mu*v_new`` then
        ``-lr*g``; they add up to the recorded update. The paths up to it fade with
        age and, in a new figure, a zoomed panel per run shows it up close (for
        Nesterov with the look-ahead point, where the gradient was taken). The loss
        panel marks the same update. None (default) picks no update.
      name: the recorded variable (default: the only one).
      ax: None for a new figure, one Axes (path panel only), or a pair
        ``(path_ax, loss_ax)`` (no zoomed panels then).
      arrows: False to mark the update without arrows. They need kinds ``grad`` and
        ``velocity`` and the update before ``step`` recorded; where the recording
        lacks them (``Recorder(every=3)``) the update is marked without arrows and a
        note on the path panel says why, as ``PathExplorer`` does.
      zoom: False to leave out the zoomed panels.

    Returns the matplotlib ``Figure`` (never shown, nothing printed).
    """
    scene = _scene(recordings, surface, name)
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()})
    fig, _ = _draw(scene, update, ax, arrows, zoom=zoom)
    return fig


@dataclasses.dataclass(frozen=True, eq=False)
class PathsView:
    """What ``draw_paths`` drew, for widgets that update it in place.

    ``scene`` holds the geometry (``coords``: each config's path in plot coordinates,
    ``losses``, ``plane``, ``colors``, ``box``, ``recordings``, ``name``); ``artists``
    the artists that follow the update (``positions``, ``arrows`` keyed by
    ``(config, term)``, ``trails``, ``zoom_boxes``, ``zoom_axes``, ``loss_markers``,
    ``step_line``, ``title``) and the static ``paths``, ``ax_path`` and ``ax_loss``.
    ``update`` is the update drawn (None if none).
    """

    figure: object
    scene: _Scene
    artists: _Artists
    arrows: bool
    update: int | None = None


def draw_paths(recordings, surface, step=None, *, name=None, ax=None, arrows=True,
               zoom=True, note=None, diverged=None) -> PathsView:
    """Like ``plot_paths`` (same arguments and errors) but returns the ``PathsView``.
    ``note``: a note for the path panel (why there are no arrows), drawn as
    ``plot_paths`` draws its own. ``diverged``: ``{config: update}`` of the runs that
    diverged and the update at which they left the view (None: found from the paths,
    ``_path_geometry.diverged_runs``); those paths are drawn up to there and named in
    a note on the path and loss panels."""
    scene = _scene(recordings, surface, name, diverged)
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()})
    fig, art = _draw(scene, update, ax, arrows, zoom=zoom, note=note)
    return PathsView(fig, scene, art, bool(arrows) and art.note is None, update)
