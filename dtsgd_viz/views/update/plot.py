"""``plot_update``: every run's same update up close, its terms as arrows, their lengths under (``paths/plot.py``'s
doctest draws it too)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core import style
from ..core.figure import headline, new_figure, root_figure
from ..paths import geometry as geo
from ..paths.findings import findings_of
from ..paths.frames import panel_at
from ..paths.scene import build_scene, default_update, settings_line
from . import geometry as upd
from . import panel
from .words import update_finding
from .zoom import draw_inset, shared_zoom, zoom_caption

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.typing import ColorType

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface

__all__ = ["plot_update", "update_finding", "term_lengths", "draw_lengths", "UPDATE_CAPTION"]

UPDATE_CAPTION = "Update {k} up close: {zoom}"  # {zoom}: ``zoom.zoom_caption``'s words
MAX_PANEL = 3.6  # inches: the largest panel side (one or two runs)
PANEL_GAP = 0.55  # inches between panels (their tick labels)
HEAD = 1.75  # inches over and under the panels: headline, the key, panel titles, ticks, caption
BAR_ROW = 0.15  # inches per bar of the lengths chart under the panels
BAR_HEAD = 0.7  # inches the chart adds: its axis, the gaps between its groups and over it
GROUP_GAP = 0.7  # bars of empty space between the chart's groups
KEY_BELOW = 30.0  # points from the chart's axis down to the key: its tick labels and axis label over it


def plot_update(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    step: int | None = None,
    *,
    name: str | None = None,
) -> Figure:
    """One optimizer update of every run up close, a panel per run, its terms' lengths under.

    Args:
      recordings: ``{config name: Recording}`` (what ``dtsgd_viz.run`` returns) or one ``Recording``, each
        with kinds ``param``, ``grad`` and ``velocity`` and the update before ``step`` (``Recorder(every=1)``).
      surface: the ``dtsgd_viz.surfaces`` surface the recordings were made on.
      step: the update to take apart (1 the first, -1 the last; None: where the runs differ most, as ``plot_paths``).
      name: the recorded variable (default: the only one).

    A key under the chart names the panels' marks. All panels share one zoom; an update under ``INSET_BELOW``
    of it is drawn again in an inset. The bars are what ``findings(runs, surface, step=step)`` prints. Bad input
    raises ``ValueError`` or ``TypeError``.
    """
    scene = build_scene(recordings, surface, name)
    update = geo.check_step(
        step, {k: r.steps for k, r in scene.recordings.items()}, none="the update where the runs differ most"
    )
    auto = update is None
    if auto:
        update = default_update(scene)
    assert update is not None
    index = {k: geo.step_index(r.steps, update) for k, r in scene.recordings.items()}
    whys = {k: upd.why_no_arrows(r, index[k]) for k, r in scene.recordings.items()}
    for key, why in whys.items():
        if why:
            raise ValueError(
                f"plot_update cannot take update {update} of {key!r} apart: {why.removeprefix('no update arrows: ')}. "
                "plot_paths(..., arrows=False) draws the paths without it."
            )
    keys = tuple(scene.recordings)
    found = findings_of(scene, step=update)
    assert found.terms is not None
    bars = term_lengths(found.terms)
    side = min(MAX_PANEL, (style.WIDTH - PANEL_GAP * len(keys)) / len(keys))
    chart = BAR_HEAD + BAR_ROW * len(bars)
    fig = new_figure((style.WIDTH, side + HEAD + chart), wspace=0.04)
    picked = " · the update where the runs differ most" if auto and len(keys) > 1 else ""
    finding = found.update_headline()
    assert finding is not None
    if scene.plane.dim > 2:  # measured on the recorded vectors, drawn projected (the subtitle says on what)
        finding = finding.replace(":", f", in all {scene.plane.dim} parameters:", 1)
    headline(fig, finding, settings_line(scene) + picked)
    grid = fig.add_gridspec(2, len(keys), height_ratios=(side + 0.45, chart))
    axes = dict(zip(keys, (fig.add_subplot(grid[0, i]) for i in range(len(keys)))))
    xlabel, ylabel = (
        f"{scene.name}[{i}]" if scene.plane.is_identity else f"principal direction {i + 1}" for i in (0, 1)
    )
    own, shared, insets = shared_zoom({k: panel_at(scene, k, index[k], True) for k in keys}, scene.box)
    styles = panel.run_styles(scene.coords)
    for key, ax in axes.items():
        data, color = shared[key], scene.colors[key]
        panel.draw_update_panel(ax, scene, data, color, styles[key], whole_path=False, labels=key not in insets)
        ax.set_title(geo.rule_name(key), fontsize=style.TITLE_SIZE, color=color, fontweight="bold")
        ax.set_xlabel(xlabel, fontsize=style.LABEL_SIZE, labelpad=2)
        ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE, labelpad=2)
        if key in insets:
            draw_inset(ax, scene, own[key], shared[key], styles[key], labels=True)
    chart = fig.add_subplot(grid[1, :])
    draw_lengths(chart, bars, scene.colors)
    _key(chart, list(scene.colors.values()))
    caption = UPDATE_CAPTION.format(k=update, zoom=zoom_caption(scene.box, shared, not scene.plane.is_identity))
    fig.supxlabel(caption, fontsize=style.NOTE_SIZE, color="0.3")
    fig.draw_without_rendering()  # the layout, once: the arrows' names are then kept inside their panels
    for ax in axes.values():
        panel.keep_labels_inside(ax)
    return fig


def close_up_marks(after: str | None = "after it", trail: bool = True, colors: Sequence = ()) -> dict[str, Any]:
    """``{name: Line2D keywords}``: the close-ups' marks as a key names them, a list of one per ``colors`` as drawn."""
    grey, ring = style.SUBTITLE_COLOR, style.ROLE_LOOKS["current"].marker
    ringed = dict(ls="none", marker=ring, ms=panel.RING_MS, mfc="none", mew=1.4)  # after it, as drawn (a tint)
    dot = dict(marker="o", ms=panel.TRAIL_DOT, mew=0)  # the path so far: its line and a dot, as drawn
    disk = dict(ls="none", marker="o", ms=panel.START_MS, mfc="white", mew=1.4)  # where g is taken, as drawn
    pale = lambda c: dict(ls="-", lw=panel.TRAIL_LW, color=panel.tint(c, panel.TRAIL_TINT), alpha=0.8) | dot  # noqa: E731
    marks = {
        "before the update: g taken here": [disk | {"mec": c} for c in colors] or disk | {"mec": grey},
        after: [ringed | {"mec": panel.tint(c, 0.3)} for c in colors] or ringed | {"mec": panel.tint(grey, 0.3)},
        "step (the arrows' sum)": [dict(ls="-", lw=1.1, color=c) for c in colors] or dict(ls="-", lw=1.1, color=grey),
        "path so far": [pale(c) for c in colors] or pale(grey),
    }
    return {k: {"mew": 1.4} | m if "marker" in m else m for k, m in marks.items() if k and (trail or "path" not in k)}


def key_handle(mark: dict | list[dict]) -> Any:
    """A ``close_up_marks`` entry's legend handle: a line, or a tuple of them (end to end: ``HandlerTuple(pad=0)``)."""
    from matplotlib.lines import Line2D

    return tuple(key_handle(m) for m in mark) if isinstance(mark, list) else Line2D([0, 1], [0, 0], **mark)


def _key(chart: Axes, colors: Sequence) -> None:
    """One row under the lengths chart naming the panels' marks, in grey (the step in each run's colour)."""
    from matplotlib.legend_handler import HandlerTuple
    from matplotlib.transforms import offset_copy

    marks = close_up_marks(colors=colors)
    chart.legend(
        [key_handle(m) for m in marks.values()],
        list(marks),
        handler_map={tuple: HandlerTuple(ndivide=None, pad=0.0)},
        loc="upper center",
        bbox_to_anchor=(0.5, 0.0),
        bbox_transform=offset_copy(chart.transAxes, root_figure(chart), y=-KEY_BELOW, units="points"),
        ncols=len(marks),
        fontsize=style.NOTE_SIZE,
        frameon=False,
        handletextpad=0.4,
        columnspacing=1.6,
        borderaxespad=0.0,
    )


def term_lengths(terms: Mapping[str, upd.UpdateTerms]) -> list[tuple[str, str, float]]:
    """``[(run, what, length)]``: ``|μ·v|``, ``|−lr·g|``, ``|step|`` as ``findings(..., step=k)`` prints them."""
    rows = [(run, "|μ·v|" if k != "gradient" else "|−lr·g|", v) for run, t in terms.items() for k, v in t.terms]
    rows += [(run, "|step|", t.total) for run, t in terms.items()]
    order = ("|μ·v|", "|−lr·g|", "|step|")
    return [(run, what, float(np.linalg.norm(v))) for run, what, v in sorted(rows, key=lambda r: order.index(r[1]))]


def draw_lengths(ax: Axes, rows: Sequence[tuple[str, str, float]], colors: Mapping[str, ColorType]) -> None:
    """A bar per ``(run, what, length)``, grouped by term, coloured as the run's arrows, its length at its end."""
    groups = list(dict.fromkeys(what for _, what, _ in rows))
    y = [-i - GROUP_GAP * groups.index(what) for i, (_, what, _) in enumerate(rows)]
    for (run, what, length), yy in zip(rows, y):
        color = colors[run]
        face = panel.tint(color) if what == "|−lr·g|" else "white" if what == "|step|" else color
        ax.barh(yy, length, height=0.78, color=face, edgecolor=color, linewidth=1.1, gid=f"length:{run}:{what}")
        term = upd.TERM_SHORT["lookahead" if style.rule_of(run) == "nesterov" else "momentum"] + " "
        ax.text(
            length,
            yy,
            f" {geo.rule_name(run)} {term if what == '|μ·v|' else ''}{length:.3g}",
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
    ax.set_xlim(0, 1.3 * top)  # room for the names at the longest bar's end
    ax.set_ylim(min(y) - 0.6, 0.6)
    ax.tick_params(axis="x", labelsize=style.TICK_SIZE, pad=1.5)
    ax.set_xlabel("length (parameter units)", fontsize=style.LABEL_SIZE, labelpad=2)
    for spine in ("top", "right", "left"):
        ax.spines[spine].set_visible(False)
