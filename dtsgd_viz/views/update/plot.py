"""The anatomy of one update: ``plot_update`` draws, for every run, one close-up panel of
the same optimizer update, its terms as thick arrows tip to tail (classical momentum
``mu*v_prev`` then ``-lr*g``; Nesterov, tf-keras form, ``mu*v_new`` then ``-lr*g``, with
the look-ahead point where ``g`` was taken), each named on a leader line with its true
length, and the zoom factor over ``plot_paths``' path panel in the panel's title. The
figure's title says what differs between the runs' updates; ``plot_paths`` draws the
paths themselves. ``step=k`` is optimizer update k as ``recording.steps`` counts them.

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic()
    >>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9),
    ...                          "nesterov": dict(learning_rate=0.05, momentum=0.9,
    ...                                           nesterov=True)}, steps=6)
    >>> fig = dtsgd_viz.plot_update(recs, s, step=3)     # a matplotlib Figure
    >>> [ax.get_title().split(" · ")[0] for ax in fig.axes]
    ['momentum: update 3', 'Nesterov: update 3']
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
    from matplotlib.figure import Figure

    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface

__all__ = ["plot_update", "update_finding", "shared_zoom", "fit_box", "UPDATE_CAPTION"]

UPDATE_CAPTION = (
    "μ·v in the run's colour, then −lr·g in its tint, tip to tail, with their lengths; "
    "too short to read: drawn longer, dashed\n"
    "zoom ×N: N times closer than plot_paths' paths panel"
)
SAME_ZOOM = ", one for every panel (lengths compare)"
OWN_ZOOM = ", its own in each panel"
NESTEROV_NOTE = " · Nesterov's dotted line: μ·v_prev from the iterate"
SHARED_ZOOM = 1.1  # panels whose boxes are within this factor of each other share one zoom
FIT_PAD = 0.15  # of the data's size, round it: the data fill 3/4 of a panel
# (pad, crowded, smaller type sizes): what a panel tries, in turn, until its labels cross nothing:
# more room round the data, then fewer names of marks (each at the largest type that fits)
SMALLER = (style.LABEL_SIZE, style.TICK_SIZE)
TRIES = ((FIT_PAD, False, SMALLER), (0.25, False, SMALLER), (0.35, False, SMALLER), (0.35, True, SMALLER))
FIT_MIN = 0.005  # of the paths panel: the smallest box (zoom x200), for an update that hardly moves
LABEL_SIZE = style.LABEL_SIZE + 0.5  # the panels' labels: bigger than under the paths
MAX_PANEL = 4.3  # inches: the largest panel side (one or two runs)
PANEL_GAP = 0.55  # inches between panels (their tick labels)
HEAD = 1.95  # inches over and under the panels: headline, panel titles, ticks, caption


def plot_update(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    step: int | None = None,
    *,
    name: str | None = None,
) -> Figure:
    """One optimizer update of every run, up close: one panel per run, side by side.

    Args:
      recordings: ``{config name: Recording}`` (what ``dtsgd_viz.run`` returns) or one
        ``Recording``, each with kinds ``param``, ``grad`` and ``velocity`` and the
        update before ``step`` recorded (``Recorder(every=1)``).
      surface: the ``dtsgd_viz.surfaces`` surface the recordings were made on.
      step: the optimizer update to take apart, as ``recording.steps`` counts them
        (the first update is 1; ``-1`` is the last). None (default): the update where
        the runs differ most, the one ``plot_paths`` picks (``path_scene.default_update``).
      name: the recorded variable (default: the only one).

    Each panel holds the run's position before the update, the terms as arrows tip to
    tail ending on the recorded next point, Nesterov's iterate and look-ahead point,
    the loss contours and the fading path; its title names the run, the update and
    how many times closer it is than ``plot_paths``' path panel. Parameters of more
    than two numbers are on the same plane as ``plot_paths`` draws them.

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
    side = min(MAX_PANEL, (style.WIDTH - PANEL_GAP * len(keys)) / len(keys))
    fig = new_figure((style.WIDTH, side + HEAD), wspace=0.04)
    picked = " · the update where the runs differ most" if auto and len(keys) > 1 else ""
    finding = findings_of(scene, step=update).update_headline()  # update_finding(terms, update)
    assert finding is not None  # every run's update can be taken apart (checked above)
    if scene.plane.dim > 2:  # measured on the recorded vectors, drawn projected (the subtitle says on what)
        finding = _phrase_line(finding, f"in all {scene.plane.dim} parameters", style.SUPTITLE_SIZE)
    headline(fig, finding, settings_line(scene) + picked)
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    raw = [panel_at(scene, key, index[key], True) for key in keys]
    pads = [0] * len(keys)  # each panel's try (TRIES): the tightest box its labels fit in
    datas, same = shared_zoom([fit_box(d, scene.box, TRIES[0][0]) for d in raw])
    nesterov = any(d.nesterov is not None for d in datas)
    caption = lambda same: (
        UPDATE_CAPTION
        + ("" if len(keys) < 2 else SAME_ZOOM if same else OWN_ZOOM)  # noqa: E731
        + (NESTEROV_NOTE if nesterov else "")
    )
    fig.supxlabel(caption(same), fontsize=style.NOTE_SIZE, color=style.SUBTITLE_COLOR)
    styles = panel.run_styles(scene.coords)
    xlabel, ylabel = (
        (f"{scene.name}[0]", f"{scene.name}[1]")
        if scene.plane.is_identity
        else ("principal direction 1", "principal direction 2")
    )
    for ax in axes:
        ax.set_xlabel(xlabel, fontsize=style.LABEL_SIZE, labelpad=2)
        ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE, labelpad=2)
    # twice: the labels are placed in the panels' pixels, which the first layout moves
    for _ in range(2):
        fig.draw_without_rendering()
        for i, (key, ax) in enumerate(zip(keys, axes)):
            while True:  # equal aspect on every plane (its rows are orthonormal): the angles show true
                _, crowded, sizes = TRIES[pads[i]]
                cost = panel.draw_update_panel(
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
                )
                if cost < lab.HARD / 2 or pads[i] == len(TRIES) - 1:
                    break
                pads[i] += 1  # the labels cross something: more room round the arrows, then fewer names
                if same:  # no longer one zoom: every panel its own (redrawn on the next pass)
                    same = False
                    fig.supxlabel(caption(same), fontsize=style.NOTE_SIZE, color=style.SUBTITLE_COLOR)
                    datas = [fit_box(d, scene.box, TRIES[p][0]) for d, p in zip(raw, pads)]
                datas[i] = fit_box(raw[i], scene.box, TRIES[pads[i]][0])
    least = min(ax.title.get_fontsize() for ax in axes)  # one title size: the smallest that fits every panel
    for ax in axes:
        ax.title.set_fontsize(least)
    return fig


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
        drawn = [a.tail + a.uv for a in fit_arrows(data.chain, float(np.ptp(box[0])))]
        box = upd.zoom_box(pts + drawn, main_box, pad=pad, min_frac=FIT_MIN)
    return dataclasses.replace(data, box=box)


def shared_zoom(datas: Sequence[panel.PanelData], within: float = SHARED_ZOOM) -> tuple[list[panel.PanelData], bool]:
    """``(datas, same)``: the panels' ``PanelData`` with one box size for all (the
    largest, each box kept on its own centre) when their boxes are within ``within``
    times of each other, so one zoom lets the eye compare the arrows; else as given.

    >>> from dtsgd_viz.views.update.panel import PanelData
    >>> d = lambda s: PanelData("k", 1, np.zeros(2), (), None, np.zeros((1, 2)), ((0, s), (0, s)))
    >>> [x.box for x in shared_zoom([d(1.0), d(1.05)])[0]]
    [((-0.025, 1.025), (-0.025, 1.025)), ((0.0, 1.05), (0.0, 1.05))]
    >>> shared_zoom([d(1.0), d(2.0)])[1]
    False
    """
    import dataclasses

    given = [d.box for d in datas]
    if any(b is None for b in given) or len(datas) < 2:
        return list(datas), False
    boxes = [b for b in given if b is not None]  # every one of them
    spans = [max(float(np.ptp(b[0])), float(np.ptp(b[1]))) for b in boxes]
    if max(spans) > within * min(spans):
        return list(datas), False
    half = max(spans) / 2
    out = []
    for d, b in zip(datas, boxes):
        cx, cy = (b[0][0] + b[0][1]) / 2, (b[1][0] + b[1][1]) / 2
        out.append(dataclasses.replace(d, box=((cx - half, cx + half), (cy - half, cy + half))))
    return out, True
