"""The anatomy of one update: ``plot_update`` draws, for every run, one close-up panel of
the same optimizer update, its terms as thick arrows tip to tail (classical momentum
``mu*v_prev`` then ``-lr*g``; Nesterov, tf-keras form, ``mu*v_new`` then ``-lr*g``, with
the look-ahead point where ``g`` was taken), each named on a leader line, every panel on
one zoom and every arrow at its true length, and under the panels a chart of the terms'
lengths. The figure's title says what differs between the runs' updates; ``plot_paths``
draws the paths themselves. ``step=k`` is optimizer update k as ``recording.steps`` counts them.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic()
    >>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9),
    ...                          "nesterov": dict(learning_rate=0.05, momentum=0.9,
    ...                                           nesterov=True)}, steps=6)
    >>> fig = dtsgd_viz.plot_update(recs, s, step=3)     # a matplotlib Figure
    >>> [ax.get_title() for ax in fig.axes]     # a panel per run, then the lengths chart
    ['momentum', 'Nesterov', '']
    >>> sorted(a.get_gid() for ax in fig.axes for a in ax.collections
    ...        if (a.get_gid() or "").startswith("zoom-arrow:"))
    ['zoom-arrow:momentum:gradient', 'zoom-arrow:momentum:momentum', 'zoom-arrow:nesterov:gradient', 'zoom-arrow:nesterov:lookahead']

Without ``step`` it takes apart the update ``plot_paths`` picks: where the runs differ
most (``path_scene.default_update``). The geometry is ``views.update.geometry``'s; the
panels are drawn by ``views.update.panel``.
"""  # noqa: E501  (a doctest's expected output line)

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.figure import headline, new_figure
from ..paths import geometry as geo
from ..paths.findings import findings_of
from ..paths.frames import panel_at
from ..paths.scene import build_scene, default_update, settings_line
from . import geometry as upd
from . import labels as lab
from . import panel
from .arrows import fit_arrows
from .words import update_finding

if TYPE_CHECKING:
    from typing import Any

    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface
    from ..paths.scene import PathScene

__all__ = ["plot_update", "update_finding", "one_zoom", "fit_box", "term_lengths", "UPDATE_CAPTION"]

UPDATE_CAPTION = "Every panel {zoom} closer than plot_paths' paths, arrows at their true length"
INSET_NOTE = "; inset: {k} closer still"
FIT_PAD = 0.15  # of the data's size, round it: the data fill 3/4 of a panel
# (pad, crowded, smaller type sizes): what the panels try, in turn, until their labels cross
# nothing: more room round the data, then fewer names of marks (each at the largest type that fits)
SMALLER = (style.LABEL_SIZE, style.TICK_SIZE)
TRIES = ((FIT_PAD, False, SMALLER), (0.25, False, SMALLER), (0.35, False, SMALLER), (0.35, True, SMALLER))
FIT_MIN = 0.005  # of the paths panel: the smallest box (zoom x200), for an update that hardly moves
INSET_BELOW = 0.2  # an update spanning less than this of the shared box is drawn again, closer, in an inset
INSET_SIZE = 0.4  # of its panel's side: the inset's
LABEL_SIZE = style.LABEL_SIZE + 0.5  # the panels' labels: bigger than under the paths
MAX_PANEL = 3.6  # inches: the largest panel side (one or two runs)
PANEL_GAP = 0.55  # inches between panels (their tick labels)
HEAD = 1.75  # inches over and under the panels: headline, panel titles, ticks, caption
BAR_ROW = 0.15  # inches per bar of the lengths chart under the panels
BAR_HEAD = 0.7  # inches the chart adds: its axis, the gaps between its groups and over it


def plot_update(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    step: int | None = None,
    *,
    name: str | None = None,
) -> Figure:
    """One optimizer update of every run, up close: one panel per run, side by side, on
    one zoom, and the lengths of its terms as bars under them.

    Args:
      recordings: ``{config name: Recording}`` (what ``dtsgd_viz.run`` returns) or one
        ``Recording``, each with kinds ``param``, ``grad`` and ``velocity`` and the
        update before ``step`` recorded (``Recorder(every=1)``).
      surface: the ``dtsgd_viz.surfaces`` surface the recordings were made on.
      step: the optimizer update to take apart, as ``recording.steps`` counts them
        (the first update is 1; ``-1`` is the last). None (default): the update where
        the runs differ most, the one ``plot_paths`` picks (``path_scene.default_update``).
      name: the recorded variable (default: the only one).

    Each panel holds the run's position before the update, the terms as arrows at their
    true length tip to tail ending on the recorded next point, Nesterov's iterate and
    look-ahead point, the loss contours and the fading path. Every panel has the same
    zoom (its title says how many times closer than ``plot_paths``' path panel), so
    lengths compare by eye; an update too small to read at that zoom (under
    ``INSET_BELOW`` of the panel) is drawn again in an inset at its own zoom, titled with
    how much closer. Under the panels, one bar per run and term: the lengths
    ``print(findings(runs, surface, step=step))`` prints (``|μ·v|``, ``|lr·g|`` and
    ``|step|``, in all the parameters). Parameters of more than two numbers are on the
    same plane as ``plot_paths`` draws them.

    Returns the matplotlib ``Figure`` (never shown, nothing printed). Raises
    ``ValueError`` / ``TypeError`` naming what was received for bad input, and
    ``ValueError`` when the recording cannot give the update's terms.
    """
    scene = build_scene(recordings, surface, name)
    update = geo.check_step(
        step, {k: r.steps for k, r in scene.recordings.items()}, none="the update where the runs differ most"
    )
    auto = update is None
    if auto:
        update = default_update(scene)
    assert update is not None  # the recordings hold updates (build_scene checked): one is picked
    index = {k: geo.step_index(r.steps, update) for k, r in scene.recordings.items()}
    for key, rec in scene.recordings.items():
        why = upd.why_no_arrows(rec, index[key])
        if why:
            raise ValueError(
                f"plot_update cannot take update {update} of {key!r} apart: "
                f"{why[len('no update arrows: ') :] if why.startswith('no update arrows: ') else why}. "
                "plot_paths(..., arrows=False) draws the paths without it."
            )
    keys = tuple(scene.recordings)
    found = findings_of(scene, step=update)
    assert found.terms is not None  # every run's update can be taken apart (checked above)
    bars = term_lengths(found.terms)
    side = min(MAX_PANEL, (style.WIDTH - PANEL_GAP * len(keys)) / len(keys))
    chart = BAR_HEAD + BAR_ROW * len(bars)
    fig = new_figure((style.WIDTH, side + HEAD + chart), wspace=0.04)
    picked = " · the update where the runs differ most" if auto and len(keys) > 1 else ""
    finding = found.update_headline()
    assert finding is not None  # the terms are there (above)
    if scene.plane.dim > 2:  # measured on the recorded vectors, drawn projected (the subtitle says on what)
        finding = _phrase_line(finding, f"in all {scene.plane.dim} parameters", style.SUPTITLE_SIZE)
    headline(fig, finding, settings_line(scene) + picked)
    grid = fig.add_gridspec(2, len(keys), height_ratios=(side + 0.45, chart))
    axes = [fig.add_subplot(grid[0, i]) for i in range(len(keys))]
    raw = [panel_at(scene, key, index[key], True) for key in keys]
    styles = panel.run_styles(scene.coords)
    xlabel, ylabel = (
        (f"{scene.name}[0]", f"{scene.name}[1]")
        if scene.plane.is_identity
        else ("principal direction 1", "principal direction 2")
    )
    for ax in axes:
        ax.set_xlabel(xlabel, fontsize=style.LABEL_SIZE, labelpad=2)
        ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE, labelpad=2)
    draw_lengths(fig.add_subplot(grid[1, :]), bars, scene.colors)
    own = [fit_box(d, scene.box, TRIES[0][0]) for d in raw]
    insets = {i for i, d in enumerate(own) if _too_small(d, own)}

    def draw_all(datas: Sequence[panel.PanelData], crowded: bool, sizes: Sequence[float]) -> float:
        cost = 0.0
        for i, (key, ax) in enumerate(zip(keys, axes)):
            cost = max(
                cost,
                panel.draw_update_panel(
                    ax,
                    scene,
                    datas[i],
                    scene.colors[key],
                    styles[key],
                    True,
                    label_size=LABEL_SIZE,
                    smaller=sizes,
                    name_marks=True,
                    whole_path=False,
                    crowded=crowded,
                    true_length=True,
                    labels=i not in insets,
                    lengths=False,
                ),
            )
            # the zoom is said once, in the caption: the title names the run
            ax.set_title(geo.rule_name(key), fontsize=style.TITLE_SIZE, color=scene.colors[key], fontweight="bold")
        return cost

    where = lambda: np.array([ax.get_position().bounds for ax in axes])  # noqa: E731
    for pad, crowded, sizes in TRIES:  # one zoom: every panel tries the same room, together
        datas = one_zoom([fit_box(d, scene.box, pad) for d in raw])
        _caption(fig, scene, own, datas, insets)  # before the layout: it takes room under the panels
        fig.draw_without_rendering()  # the labels are placed in the panels' pixels, which the layout moves
        before = where()
        cost = draw_all(datas, crowded, sizes)
        fig.draw_without_rendering()
        if np.abs(where() - before).max() * fig.bbox.width > 0.5:  # the layout moved them: place again
            cost = draw_all(datas, crowded, sizes)
        if cost < lab.HARD / 2:
            break
    for i in sorted(insets):
        _draw_inset(axes[i], scene, own[i], datas[i], keys[i], styles[keys[i]])
    return fig


def _caption(
    fig: Figure, scene: PathScene, own: Sequence[panel.PanelData], datas: Sequence[panel.PanelData], insets: set[int]
) -> None:
    """The one-line caption: the shared zoom over ``plot_paths``' paths panel, and the insets'."""
    closer = sorted({_closer_text(own[i], datas[i]) for i in insets})
    box = datas[0].box
    zoom = upd.zoom_factor(scene.box, box) if box is not None else float("nan")
    fig.supxlabel(
        UPDATE_CAPTION.format(zoom=_times(zoom)) + (INSET_NOTE.format(k=", ".join(closer)) if closer else ""),
        fontsize=style.NOTE_SIZE,
        color=style.SUBTITLE_COLOR,
    )


def term_lengths(terms: Mapping[str, upd.UpdateTerms]) -> list[tuple[str, str, float]]:
    """``[(run, what, length)]``: each run's ``|μ·v|`` (classical momentum's μ·v_prev,
    Nesterov's μ·v_new), ``|lr·g|`` and ``|step|`` at the update, in all the parameters:
    the numbers ``print(findings(..., step=k))`` prints after each run's name, in the
    order the lengths chart draws them (by term, then run)."""
    rows: list[tuple[str, str, float]] = []
    for what in ("|μ·v|", "|lr·g|", "|step|"):
        for run, t in terms.items():
            vectors = dict(t.terms)
            if what == "|step|":
                vec = t.total
            elif what == "|lr·g|":
                vec = vectors.get("gradient")
            else:
                vec = vectors.get("momentum", vectors.get("lookahead"))
            if vec is not None:
                rows.append((run, what, float(np.linalg.norm(vec))))
    return rows


def draw_lengths(ax: Axes, rows: Sequence[tuple[str, str, float]], colors: Mapping[str, ColorType]) -> None:
    """The lengths chart: one thin horizontal bar per ``(run, what, length)`` on one
    linear axis, grouped by term (the group's name on the left), in the run's colour
    (its tint for ``|lr·g|``, as the arrows; open for ``|step|``), each with the run's
    name and its length at its end (``.3g``, as ``findings`` prints it)."""
    groups: list[str] = []
    y, at = [], 0.0
    for i, (_, what, _) in enumerate(rows):
        if i and what != rows[i - 1][1]:
            at += GROUP_GAP
        if what not in groups:
            groups.append(what)
        y.append(-at)
        at += 1.0
    for (run, what, length), yy in zip(rows, y):
        color = colors[run]
        face = panel.tint(color) if what == "|lr·g|" else "white" if what == "|step|" else color
        ax.barh(yy, length, height=0.78, color=face, edgecolor=color, linewidth=1.1, gid=f"length:{run}:{what}")
        ax.text(
            length,
            yy,
            f" {geo.rule_name(run)} {length:.3g}",
            va="center",
            ha="left",
            fontsize=style.NOTE_SIZE,
            color=color,
            gid=f"length-label:{run}:{what}",
        )
    centres = [float(np.mean([yy for (_, w, _), yy in zip(rows, y) if w == g])) for g in groups]
    ax.set_yticks(centres, groups, fontsize=style.LABEL_SIZE)
    ax.tick_params(axis="y", length=0)
    top = max((r[2] for r in rows if np.isfinite(r[2])), default=1.0) or 1.0
    ax.set_xlim(0, 1.25 * top)  # room for the names at the longest bar's end
    ax.set_ylim(min(y) - 0.6, 0.6)
    ax.tick_params(axis="x", labelsize=style.TICK_SIZE, pad=1.5)
    ax.set_xlabel("length (parameter units)", fontsize=style.LABEL_SIZE, labelpad=2)
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)


GROUP_GAP = 0.7  # bars of empty space between the chart's groups


def _span(data: panel.PanelData) -> float:
    assert data.box is not None
    return max(float(np.ptp(data.box[0])), float(np.ptp(data.box[1])))


def _too_small(data: panel.PanelData, all_data: Sequence[panel.PanelData]) -> bool:
    """Whether ``data``'s own box is under ``INSET_BELOW`` of the shared one (the largest):
    too small to read at the shared zoom, so drawn again in an inset."""
    spans = [_span(d) for d in all_data if d.box is not None]
    return data.box is not None and len(spans) > 1 and _span(data) < INSET_BELOW * max(spans)


def _times(k: float) -> str:
    return f"×{k:.0f}" if k >= 9.5 else f"×{k:.1f}"


def _closer_text(own: panel.PanelData, shared: panel.PanelData) -> str:
    return _times(_span(shared) / _span(own))


def inset_bounds(shared: panel.PanelData) -> tuple[float, float, float, float]:
    """Where an inset sits in its panel (axes fractions): the corner the path so far
    crosses least (the update itself is in the middle of the shared box)."""
    assert shared.box is not None
    (x0, x1), (y0, y1) = shared.box
    trail = np.asarray(shared.trail, np.float64).reshape(-1, 2)
    t = np.linspace(0.0, 1.0, 20)[:, None]
    pts = np.concatenate([p + t * (q - p) for p, q in zip(trail[:-1], trail[1:])] or [trail])
    fx, fy = (pts[:, 0] - x0) / (x1 - x0), (pts[:, 1] - y0) / (y1 - y0)
    w, m = INSET_SIZE, 0.02
    corners = [(1 - w - m, 1 - w - m), (m, 1 - w - m), (1 - w - m, m), (m, m)]  # upper right first
    hits = [int(np.sum((fx >= cx) & (fx <= cx + w) & (fy >= cy) & (fy <= cy + w))) for cx, cy in corners]
    cx, cy = corners[int(np.argmin(hits))]
    return (cx, cy, w, w)


def _draw_inset(
    ax: Axes,
    scene: PathScene,
    own: panel.PanelData,
    shared: panel.PanelData,
    key: str,
    run_style: Mapping[str, Any],
) -> Axes:
    """The update at its own zoom in an inset of ``ax`` (``inset_bounds``), titled by how
    much closer it is, and a dotted box on ``ax`` round the part it enlarges."""
    from matplotlib.patches import Rectangle

    assert own.box is not None
    inset = ax.inset_axes(inset_bounds(shared), zorder=20)
    panel.draw_update_panel(
        inset,
        scene,
        own,
        scene.colors[key],
        run_style,
        True,
        name_marks=False,
        whole_path=False,
        true_length=True,
        labels=False,
    )
    inset.set_title("")
    inset.text(
        0.04,
        0.96,
        _closer_text(own, shared),
        transform=inset.transAxes,
        ha="left",
        va="top",
        fontsize=style.NOTE_SIZE,
        color=scene.colors[key],
        fontweight="bold",
        gid=f"inset-zoom:{key}",
    )
    inset.tick_params(labelleft=False, labelbottom=False, length=0)
    inset.set_facecolor("white")
    (a0, a1), (b0, b1) = own.box
    ax.add_patch(
        Rectangle(
            (a0, b0),
            a1 - a0,
            b1 - b0,
            fill=False,
            ec=scene.colors[key],
            lw=0.9,
            ls=":",
            zorder=8,
            gid=f"inset-box:{key}",
        )
    )
    return inset


def _phrase_line(finding: str, phrase: str, size: float) -> str:
    """``finding`` and ``phrase`` on one line where they fit the figure's width, else the
    phrase on a line of its own: a headline breaks between phrases, never inside one.

    >>> _phrase_line("Update 2: a's step is 3.0× b's", "in all 8 parameters", 12)
    "Update 2: a's step is 3.0× b's in all 8 parameters"
    """
    from ..core.figure import fit

    one = f"{finding} {phrase}"
    return one if "\n" not in fit(one, style.WIDTH * 72.0, size, bold=True) else f"{finding},\n{phrase}"


def fit_box(data: panel.PanelData, main_box: geo.Box, pad: float = FIT_PAD) -> panel.PanelData:
    """``data`` (a ``PanelData``) with its zoom box fitted to what the panel draws: the
    position, the arrows' tips as drawn (an arrow drawn longer reaches further,
    ``update_arrows.fit_arrows``) and Nesterov's points, ``pad`` of their size round
    them, so they fill about ``1 / (1 + 2 pad)`` of the panel along their longer side."""
    import dataclasses

    if data.box is None:
        return data
    pts = [np.asarray(data.position, np.float64)]
    pts += [np.asarray(tail) + np.asarray(uv) for _, tail, uv in data.chain]
    pts += list(data.nesterov or ())
    box = upd.zoom_box(pts, main_box, pad=pad, min_frac=FIT_MIN)
    for _ in range(3):  # a longer drawn arrow grows the box, which grows the arrow: settles fast
        if box is None:
            return data
        drawn = [a.tail + a.uv for a in fit_arrows(data.chain, float(np.ptp(box[0])), stretch=False)]
        box = upd.zoom_box(pts + drawn, main_box, pad=pad, min_frac=FIT_MIN)
    return dataclasses.replace(data, box=box)


def one_zoom(datas: Sequence[panel.PanelData]) -> list[panel.PanelData]:
    """The panels' ``PanelData`` with one box size for all, the largest (each box kept
    on its own centre): one zoom, so the eye compares the arrows' lengths.

    >>> from dtsgd_viz.views.update.panel import PanelData
    >>> d = lambda s: PanelData("k", 1, np.zeros(2), (), None, np.zeros((1, 2)), ((0, s), (0, s)))
    >>> [x.box for x in one_zoom([d(1.0), d(2.0)])]
    [((-0.5, 1.5), (-0.5, 1.5)), ((0.0, 2.0), (0.0, 2.0))]
    """
    import dataclasses

    boxes = [d.box for d in datas if d.box is not None]
    if not boxes:
        return list(datas)
    half = max(max(float(np.ptp(b[0])), float(np.ptp(b[1]))) for b in boxes) / 2
    out = []
    for d in datas:
        if d.box is None:
            out.append(d)
            continue
        cx, cy = (d.box[0][0] + d.box[0][1]) / 2, (d.box[1][0] + d.box[1][1]) / 2
        out.append(dataclasses.replace(d, box=((cx - half, cx + half), (cy - half, cy + half))))
    return out
