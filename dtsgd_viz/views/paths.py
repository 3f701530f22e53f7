"""Update paths: each optimizer's trajectory on the loss contours, the update at a step
split into its terms, and the loss per step beside it.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic()
    >>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9),
    ...                          "nesterov": dict(learning_rate=0.05, momentum=0.9,
    ...                                           nesterov=True)}, steps=6)
    >>> fig = dtsgd_viz.plot_paths(recs, s, step=3)      # a matplotlib Figure
    >>> sorted(a.get_gid() for a in fig.axes[0].collections if a.get_gid())
    ['arrow:momentum:gradient', 'arrow:momentum:momentum', 'arrow:nesterov:gradient', 'arrow:nesterov:lookahead']

``animate(recs, s)`` returns a ``FuncAnimation`` of the same figure stepping through
the run (``anim.save("paths.gif", writer="pillow")``).

Parameters of more than two numbers are drawn on the plane of their top two
principal directions (all paths together), and the loss is evaluated on that plane,
so the contours under a projected path are real. Geometry comes from the pure
``views._path_geometry``; this module only draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import numpy as np

from . import _path_geometry as geo
from . import style
from ._empty import check_not_empty
from ._figure import new_figure

__all__ = ["plot_paths", "animate", "draw_paths", "PathsView"]

_GRADIENT_COLOR = "#000000"


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


def _scene(recordings, surface, name) -> _Scene:
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
    box = geo.plot_box(view_box, np.concatenate(list(coords.values())))
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
                  box, grid, geo.log_levels(grid[2]), minima, off, starts, losses)


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
    step_line: object = None
    title: object = None


def _outline(width=3.2):
    from matplotlib import patheffects
    return [patheffects.Stroke(linewidth=width, foreground="white", alpha=0.85), patheffects.Normal()]


def _axes(ax):
    if ax is None:
        fig = new_figure(figsize=(11.5, 5.2))
        ax_path, ax_loss = fig.subplots(1, 2, gridspec_kw=dict(width_ratios=[1.2, 1.0]))
        return fig, ax_path, ax_loss, True
    if isinstance(ax, (tuple, list)):
        if len(ax) != 2:
            raise ValueError(f"ax must be one Axes or a pair (path_ax, loss_ax). Received: {len(ax)} axes.")
        return ax[0].figure, ax[0], ax[1], False
    if not hasattr(ax, "plot"):
        raise TypeError(f"ax must be a matplotlib Axes, a pair of them, or None. Received: {ax!r}.")
    return ax.figure, ax, None, False


def _draw(scene: _Scene, step, ax, arrows, ghost=False) -> tuple[object, _Artists]:
    from matplotlib.lines import Line2D

    fig, ax_path, ax_loss, own = _axes(ax)
    fs = style.FONT_SIZE
    _draw_contours(scene, fig, ax_path)

    art = _Artists(ax_path, ax_loss, {})
    # a dot per step while the dots stay apart; long runs are clearer as a line
    marker = "o" if max(len(c) for c in scene.coords.values()) <= 61 else ""
    for key, c in scene.coords.items():
        color = scene.colors[key]
        if ghost:
            ax_path.plot(c[:, 0], c[:, 1], "-", color=color, lw=1.0, alpha=0.35,
                         gid=f"path-ghost:{key}")
        (art.paths[key],) = ax_path.plot(
            c[:, 0], c[:, 1], "-", marker=marker, color=color, lw=1.6, ms=2.8, label=key,
            gid=f"path:{key}", path_effects=_outline(), zorder=3)
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

    handles = [Line2D([], [], color=scene.colors[k], lw=1.6, marker=marker, ms=3, label=k)
               for k in scene.coords]
    handles += [Line2D([], [], ls="none", marker="o", ms=8, mfc="white", mec="black", label="start"),
                Line2D([], [], ls="none", marker="*", ms=12, mfc="#F0E442", mec="black",
                       label=min_label)]

    if step is not None:
        _draw_step(scene, step, art, arrows, handles)

    art.title = ax_path.set_title(_path_title(scene, step), fontsize=fs + 2)

    if ax_loss is not None:
        _draw_loss(scene, step, art)
    if own:
        fig.legend(handles=handles, fontsize=fs, loc="outside lower center",
                   ncol=min(len(handles), 4), frameon=False)
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
    """Filled log-spaced loss contours, white level lines and a colour bar."""
    from matplotlib.colors import LogNorm
    from matplotlib.ticker import LogFormatterSciNotation, LogLocator

    X, Y, Z = scene.grid
    levels = scene.levels
    with np.errstate(invalid="ignore", divide="ignore"):
        cf = ax.contourf(X, Y, np.clip(Z, levels[0], levels[-1]), levels=levels,
                         cmap=style.SEQUENTIAL_CMAP, norm=LogNorm(levels[0], levels[-1]),
                         alpha=0.75)
        ax.contour(X, Y, Z, levels=levels, colors="white", linewidths=0.45, alpha=0.6)
    cbar = fig.colorbar(cf, ax=ax, pad=0.01, fraction=0.05, ticks=LogLocator(),
                        format=LogFormatterSciNotation())
    cbar.set_label("loss (log scale)" if scene.plane.is_identity
                   else "loss on this plane (log scale)", fontsize=style.FONT_SIZE)
    cbar.ax.tick_params(labelsize=style.FONT_SIZE - 1)


def _path_title(scene, step):
    if step is None:
        return "Paths on the loss contours"
    s = int(next(iter(scene.recordings.values())).steps[step])
    return f"Update of step {s} as arrows, tip to tail"


def _draw_step(scene, step, art, arrows, handles):
    from matplotlib.lines import Line2D

    ax = art.ax_path
    seen_terms = {}
    for key, rec in scene.recordings.items():
        color = scene.colors[key]
        c = scene.coords[key]
        (art.positions[key],) = ax.plot([c[step, 0]], [c[step, 1]], "o", ms=8, mfc="none",
                                        mec=color, mew=2.0, gid=f"position:{key}", zorder=6)
        if not arrows:
            continue
        update = geo.decompose_update(rec, scene.name, step)
        for term, tail, uv in geo.arrow_chain(update, scene.plane):
            term_color = _GRADIENT_COLOR if term == "gradient" else color
            q = ax.quiver([tail[0]], [tail[1]], [uv[0]], [uv[1]], angles="xy", scale_units="xy",
                          scale=1.0, color=term_color, width=0.010, headwidth=3.2,
                          headlength=3.8, headaxislength=3.4, edgecolor="white",
                          linewidth=0.6, zorder=7, gid=f"arrow:{key}:{term}")
            art.arrows[(key, term)] = q
            label = geo.TERM_LABELS[term] if term == "gradient" else f"{key}: {geo.TERM_LABELS[term]}"
            seen_terms.setdefault(label, term_color)
    for label, color in seen_terms.items():
        handles.append(Line2D([], [], ls="none", marker=r"$\rightarrow$", ms=14, color=color,
                              label=label))


def _draw_loss(scene, step, art):
    ax = art.ax_loss
    fs = style.FONT_SIZE
    from_surface = False
    for key, (steps, loss, computed) in scene.losses.items():
        from_surface |= computed
        ax.plot(steps, loss, "-", color=scene.colors[key], lw=1.5, label=key, gid=f"loss:{key}")
        if step is not None:
            (art.loss_markers[key],) = ax.plot([steps[step]], [loss[step]], "o", ms=7,
                                               color=scene.colors[key], mec="white",
                                               gid=f"loss-marker:{key}", zorder=5)
    ax.set_yscale("log")
    ax.set_xlabel("step", fontsize=fs + 1)
    ax.set_ylabel("loss after the update (from the surface)" if from_surface
                  else "loss (before the update)", fontsize=fs + 1)
    ax.set_title("Loss per step (log scale)", fontsize=fs + 2)
    ax.grid(True, which="major", alpha=0.3)
    ax.tick_params(labelsize=fs)
    if step is not None:
        x = next(iter(scene.losses.values()))[0][step]
        art.step_line = ax.axvline(x, color="0.35", ls="--", lw=0.9, gid="step-line")


# ---- public -------------------------------------------------------------------------


def plot_paths(recordings, surface, step=None, *, name=None, ax=None, arrows=True):
    """Paths of every optimizer on the loss contours of ``surface``, and loss per step.

    Args:
      recordings: ``{config name: Recording}`` (what ``dtsgd_viz.run`` returns) or one
        ``Recording``.
      surface: the ``dtsgd_viz.surfaces`` surface the recordings were made on.
      step: an index into the recordings' steps (negative counts from the end) at
        which the update is drawn as arrows from the parameter before it: classical
        momentum ``mu*v_prev`` then ``-lr*g``; Nesterov (tf-keras form) the
        look-ahead ``mu*v_new`` then ``-lr*g``; they add up to the recorded step.
        The loss panel marks the same step. None draws no arrows.
      name: the recorded variable (default: the only one).
      ax: None for a new two-panel figure, one Axes (path panel only), or a pair
        ``(path_ax, loss_ax)``.
      arrows: False to mark the step without arrows (they need kinds ``grad`` and
        ``velocity`` recorded every step).

    Returns the matplotlib ``Figure`` (never shown, nothing printed).
    """
    scene = _scene(recordings, surface, name)
    step = geo.check_step(step, {k: len(r) for k, r in scene.recordings.items()})
    fig, _ = _draw(scene, step, ax, arrows)
    return fig


@dataclasses.dataclass(frozen=True, eq=False)
class PathsView:
    """What ``draw_paths`` drew, for widgets that update it in place.

    ``scene`` holds the geometry (``coords``: each config's path in plot coordinates,
    ``losses``, ``plane``, ``colors``, ``box``, ``recordings``, ``name``); ``artists``
    the artists that follow the step (``positions``, ``arrows`` keyed by
    ``(config, term)``, ``loss_markers``, ``step_line``, ``title``) and the static
    ``paths``, ``ax_path`` and ``ax_loss``.
    """

    figure: object
    scene: _Scene
    artists: _Artists
    arrows: bool


def draw_paths(recordings, surface, step=None, *, name=None, ax=None, arrows=True) -> PathsView:
    """Like ``plot_paths`` (same arguments and errors) but returns the ``PathsView``."""
    scene = _scene(recordings, surface, name)
    step = geo.check_step(step, {k: len(r) for k, r in scene.recordings.items()})
    fig, art = _draw(scene, step, ax, arrows)
    return PathsView(fig, scene, art, bool(arrows))


def _frames(frames, n) -> list[int]:
    if frames is None:
        return list(range(n))
    if isinstance(frames, (int, np.integer)) and not isinstance(frames, bool):
        if frames < 1:
            raise ValueError(f"frames must be >= 1. Received: frames={frames}.")
        return sorted(set(np.linspace(0, n - 1, min(int(frames), n)).round().astype(int).tolist()))
    out = [geo.check_step(f, {"recordings": n}) for f in frames]
    if not out:
        raise ValueError("frames is empty: give None, a number of frames, or step indices.")
    return out


def animate(recordings, surface, *, name=None, frames=None, interval=100):
    """A ``matplotlib.animation.FuncAnimation`` of ``plot_paths`` stepping through the
    run: each path grows, the arrows and the loss marker follow the step.

    ``frames``: None (every step), a number of evenly spaced frames, or a list of
    step indices. Artists are updated in place. Save with
    ``anim.save("paths.gif", writer="pillow")`` (MP4 needs ffmpeg); in a notebook,
    ``IPython.display.HTML(anim.to_jshtml())``.
    """
    from matplotlib.animation import FuncAnimation

    scene = _scene(recordings, surface, name)
    n = min(len(r) for r in scene.recordings.values())
    frame_list = _frames(frames, n)
    arrows = all({"grad", "velocity"} <= set(r.kinds) for r in scene.recordings.values())
    if arrows:
        try:
            for r in scene.recordings.values():
                for i in frame_list:
                    geo.decompose_update(r, scene.name, i)
        except ValueError:
            arrows = False
    fig, art = _draw(scene, frame_list[0], None, arrows, ghost=True)

    def update(i):
        changed = []
        for key, rec in scene.recordings.items():
            c = scene.coords[key]
            art.paths[key].set_data(c[:i + 2, 0], c[:i + 2, 1])
            art.positions[key].set_data([c[i, 0]], [c[i, 1]])
            changed += [art.paths[key], art.positions[key]]
            if arrows:
                update_terms = geo.decompose_update(rec, scene.name, i)
                for term, tail, uv in geo.arrow_chain(update_terms, scene.plane):
                    q = art.arrows[(key, term)]
                    q.set_offsets([tail])
                    q.set_UVC([uv[0]], [uv[1]])
                    changed.append(q)
            steps, loss, _ = scene.losses[key]
            art.loss_markers[key].set_data([steps[i]], [loss[i]])
            changed.append(art.loss_markers[key])
        x = next(iter(scene.losses.values()))[0][i]
        art.step_line.set_xdata([x, x])
        art.title.set_text(_path_title(scene, i))
        return changed + [art.step_line, art.title]

    update(frame_list[0])
    # Lay the figure out once: re-running the layout on every frame costs time and
    # makes the panels jitter as the title text changes.
    fig.draw_without_rendering()
    fig.set_layout_engine("none")
    return FuncAnimation(fig, update, frames=frame_list, interval=interval, blit=False,
                         repeat=True)
