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
most (``path_scene.default_update``). The geometry is ``views.update_geometry``'s; the
panels are drawn by ``views.update_panel``.
"""

from __future__ import annotations

import numpy as np

from . import path_geometry as geo
from . import style
from . import update_geometry as upd
from . import update_panel as panel
from .figure import headline, new_figure
from .path_frames import panel_at
from .path_scene import build_scene, default_update, settings_line

__all__ = ["plot_update", "update_finding", "shared_zoom", "UPDATE_CAPTION"]

UPDATE_CAPTION = ("○ the parameters before the update, ● after it; μ·v in the run's colour, then −lr·g "
                  "in its tint, tip to tail, each with its length\n"
                  "zoom ×N: N times closer than the paths panel of plot_paths; an arrow too short to see "
                  "is drawn longer, dashed, and says so")
NESTEROV_NOTE = ("\nNesterov: g is taken at the parameters themselves (◆, the look-ahead point); "
                 "□ the iterate p − μ·v_prev, dotted: μ·v_prev from it")
SAME_ZOOM = "\none zoom for every panel: the arrows' lengths compare across them"
OWN_ZOOM = "\neach panel has its own zoom: compare lengths across panels by their numbers, not by eye"
SHARED_ZOOM = 3.0   # panels whose boxes are within this factor of each other share one zoom
LABEL_SIZE = style.LABEL_SIZE + 0.5   # the panels' labels: bigger than under the paths
MAX_PANEL = 4.3    # inches: the largest panel side (one or two runs)
PANEL_GAP = 0.55   # inches between panels (their tick labels)
HEAD = 1.95        # inches over and under the panels: headline, panel titles, ticks, caption


def plot_update(recordings, surface, step=None, *, name=None):
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
    update = geo.check_step(step, {k: r.steps for k, r in scene.recordings.items()},
                            none="the update where the runs differ most")
    auto = update is None
    if auto:
        update = default_update(scene)
    index = {k: geo.step_index(r.steps, update) for k, r in scene.recordings.items()}
    for key, rec in scene.recordings.items():
        why = upd.why_no_arrows(rec, index[key])
        if why:
            raise ValueError(f"plot_update cannot take update {update} of {key!r} apart: "
                             f"{why[len('no update arrows: '):] if why.startswith('no update arrows: ') else why}. "
                             "plot_paths(..., arrows=False) draws the paths without it.")
    terms = {k: upd.decompose_update(r, scene.name, index[k]) for k, r in scene.recordings.items()}
    keys = tuple(scene.recordings)
    side = min(MAX_PANEL, (style.WIDTH - PANEL_GAP * len(keys)) / len(keys))
    fig = new_figure((style.WIDTH, side + HEAD), wspace=0.04)
    picked = " · the update where the runs differ most" if auto and len(keys) > 1 else ""
    finding = update_finding(terms, update)
    if scene.plane.dim > 2:   # measured on the recorded vectors, drawn projected
        finding += f" (in all {scene.plane.dim} parameters; drawn on the plane of the paths)"
    headline(fig, finding, settings_line(scene) + picked)
    axes = fig.subplots(1, len(keys), squeeze=False)[0]
    datas, same = shared_zoom([panel_at(scene, key, index[key], True) for key in keys])
    nesterov = any(d.nesterov is not None for d in datas)
    fig.supxlabel(UPDATE_CAPTION + (NESTEROV_NOTE if nesterov else "")
                  + ("" if len(keys) < 2 else SAME_ZOOM if same else OWN_ZOOM),
                  fontsize=style.NOTE_SIZE, color=style.SUBTITLE_COLOR)
    styles = panel.run_styles(scene.coords)
    xlabel, ylabel = ((f"{scene.name}[0]", f"{scene.name}[1]") if scene.plane.is_identity
                      else ("principal direction 1", "principal direction 2"))
    for ax in axes:
        ax.set_xlabel(xlabel, fontsize=style.LABEL_SIZE, labelpad=2)
        ax.set_ylabel(ylabel, fontsize=style.LABEL_SIZE, labelpad=2)
    # twice: the labels are placed in the panels' pixels, which the first layout moves
    for _ in range(2):
        fig.draw_without_rendering()
        for key, ax, data in zip(keys, axes, datas):
            # equal aspect on every plane (its rows are orthonormal): the angles the title quotes show true
            panel.draw_update_panel(ax, scene, data, scene.colors[key],
                                    styles[key], True, label_size=LABEL_SIZE,
                                    smaller=(style.LABEL_SIZE, style.TICK_SIZE))
    return fig


def shared_zoom(datas, within=SHARED_ZOOM):
    """``(datas, same)``: the panels' ``PanelData`` with one box size for all (the
    largest, each box kept on its own centre) when their boxes are within ``within``
    times of each other, so one zoom lets the eye compare the arrows; else as given.

    >>> from dtsgd_viz.views.update_panel import PanelData
    >>> d = lambda s: PanelData("k", 1, np.zeros(2), (), None, np.zeros((1, 2)), ((0, s), (0, s)))
    >>> [x.box for x in shared_zoom([d(1.0), d(2.0)])[0]]
    [((-0.5, 1.5), (-0.5, 1.5)), ((0.0, 2.0), (0.0, 2.0))]
    >>> shared_zoom([d(1.0), d(5.0)])[1]
    False
    """
    import dataclasses
    boxes = [d.box for d in datas]
    if any(b is None for b in boxes) or len(datas) < 2:
        return list(datas), False
    spans = [max(float(np.ptp(b[0])), float(np.ptp(b[1]))) for b in boxes]
    if max(spans) > within * min(spans):
        return list(datas), False
    half = max(spans) / 2
    out = []
    for d, b in zip(datas, boxes):
        cx, cy = (b[0][0] + b[0][1]) / 2, (b[1][0] + b[1][1]) / 2
        out.append(dataclasses.replace(d, box=((cx - half, cx + half), (cy - half, cy + half))))
    return out, True


def _length(x: float) -> str:
    return f"{x:.3g}"


def _times(f: float) -> str:
    return f"{f:.0f}×" if f >= 9.5 else f"{f:.1f}×"


def update_finding(terms, update) -> str:
    """The headline of ``plot_update``: ``terms`` is ``{config: UpdateTerms}`` at
    ``update``. Which run's update is longest and by how much (its length, in parameter
    units) against the others', and how far their directions part; one run: its
    length and what carries it.

    >>> from dtsgd_viz.views.update_geometry import UpdateTerms
    >>> t = lambda *v: UpdateTerms(2, 1, np.zeros(2), (("gradient", np.array(v)),), np.array(v))
    >>> update_finding({"a": t(3.0, 0.0), "b": t(0.0, 1.0)}, 2)
    "Update 2: a's step is 3.0× b's, 90° apart"
    """
    with np.errstate(invalid="ignore", over="ignore"):
        size = {k: float(np.linalg.norm(t.total)) for k, t in terms.items()}
    ok = {k: v for k, v in size.items() if np.isfinite(v)}
    bad = [k for k in size if k not in ok]
    tail = ("; " + ", ".join(bad) + ": not finite") if bad else ""
    if not ok:
        return f"Update {int(update)}: not finite" + tail
    ranked = sorted(ok, key=lambda k: -ok[k])
    top = ranked[0]
    if len(ranked) == 1:
        return f"Update {int(update)}: {geo.rule_name(top)} steps {_length(ok[top])}, {_carried(terms[top])}" + tail
    name = geo.rule_name
    others = [f"{'∞×' if not ok[k] > 0 else _times(ok[top] / ok[k])} {name(k)}'s" for k in ranked[1:]]
    text = f"Update {int(update)}: {name(top)}'s step is " + " and ".join(others)
    angle = _largest_angle([terms[k].total for k in ranked])
    if angle is not None and angle >= 10:
        text += f", {angle:.0f}° apart" if len(ranked) == 2 else f", up to {angle:.0f}° apart"
    elif angle is not None:
        text += ", along the same line"
    return text + tail


def _carried(t) -> str:
    """What carries one run's update: its larger term, and by how much."""
    sizes = [(k, float(np.linalg.norm(v))) for k, v in t.terms]
    if len(sizes) == 1:
        return "all of it the gradient term −lr·g"
    (k1, a), (k2, b) = sorted(sizes, key=lambda kv: -kv[1])[:2]
    ratio = a / b if b > 0 else np.inf
    return f"its {upd.TERM_SHORT[k1]} {'∞×' if not np.isfinite(ratio) else _times(ratio)} its {upd.TERM_SHORT[k2]}"


def _largest_angle(vectors) -> float | None:
    """The largest angle in degrees between any two of ``vectors`` (None if one is 0)."""
    vs = [np.asarray(v, np.float64).reshape(-1) for v in vectors]
    norms = [np.linalg.norm(v) for v in vs]
    if min(norms) == 0:
        return None
    best = 0.0
    for i in range(len(vs)):
        for j in range(i + 1, len(vs)):
            c = float(np.clip(vs[i] @ vs[j] / (norms[i] * norms[j]), -1.0, 1.0))
            best = max(best, float(np.degrees(np.arccos(c))))
    return best
