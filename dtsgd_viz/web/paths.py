"""``PathExplorer`` drawn by the browser: the paths on the loss contours, a close-up of the
update shown (every run at one scale, arrows at their true length) and the loss after
k updates, with a slider, Play and hover, live with or without a kernel.

    recs = dtsgd_viz.run(surfaces.RotatedQuadratic(), configs, steps=60)
    dtsgd_viz.web.PathExplorer(recs, surfaces.RotatedQuadratic())   # last in a cell

Python computes every number once (``path_state``: the projected paths, the terms of
each update, the close-up boxes, the loss, the ticks, the contour picture); the ES
module ``js/paths.js`` only maps them to pixels and handles the slider, Play and hover.
The state is plain data, so a saved notebook replays it with no kernel.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib import colors as mcolors
from matplotlib.ticker import MaxNLocator

from ..views.compare.geometry import tail_length
from ..views.core import style
from ..views.core.log_ticks import log_tick_texts
from ..views.paths import geometry as geo
from ..views.paths.findings import findings_of
from ..views.paths.frames import REST_LABEL, axis_names
from ..views.paths.loss import LOSS_XLABEL, MEAN_EDGE, MEAN_LABEL, MEAN_LW, MEAN_OUTLINE
from ..views.paths.scene import build_scene, settings_line
from ..views.update import geometry as upd
from ..views.update import panel
from ..views.update.plot import close_up_marks
from ..views.update.zoom import INSET_RECT, inset_text, shared_factor, shared_zoom, span_text
from ..widgets.explorer_figure import LATER_VEIL, TRAIL_KEEP
from . import encode
from .look import look_data, look_table
from .widget import BrowserWidget

if TYPE_CHECKING:
    from ..recording import Recording
    from ..theory.surfaces import Surface

__all__ = ["path_state", "loss_ticks", "update_ticks", "zoom_boxes", "close_key", "PathExplorer", "TERM_NAMES"]

# the rule's terms as the close-up and the hover name them
TERM_NAMES = dict(upd.TERM_SHORT)
FAINT_TINT, FAINT_LW = 0.62, 1.0  # the path so far in a close-up: towards white (past the gradient's), its width


def loss_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Log-axis ticks for losses in ``lo..hi``: the decades inside, with 2 and 5 between
    them while fewer than three decades show, and their labels in the views' one log
    format (``log_tick_texts``).

    Under a factor of about 2.5 (where 1, 2 and 5 give fewer than two ticks) evenly
    spaced round numbers instead:

    >>> loss_ticks(0.003, 0.4)
    ([0.005, 0.01, 0.02, 0.05, 0.1, 0.2], ['0.005', '0.01', '0.02', '0.05', '0.1', '0.2'])
    >>> loss_ticks(0.3, 0.4)
    ([0.3, 0.35, 0.4], ['0.3', '0.35', '0.4'])
    """
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
        return [], []
    a, b = int(np.floor(np.log10(lo))), int(np.ceil(np.log10(hi)))
    steps = (1.0,) if b - a > 3 else (1.0, 2.0, 5.0)
    ticks = [m * 10.0**k for k in range(a, b + 1) for m in steps]
    ticks = [float(f"{t:.3g}") for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
    if len(ticks) < 2:
        from matplotlib.ticker import MaxNLocator

        near = MaxNLocator(nbins=5, steps=[1, 2, 5, 10]).tick_values(lo, hi)
        ticks = [float(f"{t:.4g}") for t in near if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
    return ticks, log_tick_texts(ticks)


def update_ticks(last: int, most: int = 6) -> list[int]:
    """Whole-number ticks 0..``last`` at a 1-2-5 spacing, at most ``most`` of them.

    >>> update_ticks(60), update_ticks(3)
    ([0, 20, 40, 60], [0, 1, 2, 3])
    """
    for e in range(0, 12):
        for m in (1, 2, 5):
            step = m * 10**e
            if last // step + 1 <= most:
                return list(range(0, last + 1, step))
    return [0, last]


def contour_png(grid: tuple[np.ndarray, np.ndarray, np.ndarray], levels: np.ndarray, box: geo.Box, size_px: int) -> str:
    """The filled loss contours and their level lines over ``box``, as ``views.paths``
    draws them, with nothing else: a base64 PNG ``size_px`` square (``grid``: X, Y, Z)."""
    from matplotlib.colors import LogNorm
    from matplotlib.figure import Figure

    X, Y, Z = grid
    fig = Figure(figsize=(size_px / 100, size_px / 100), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_axis_off()
    with np.errstate(invalid="ignore", divide="ignore"):
        ax.contourf(
            X,
            Y,
            np.clip(Z, levels[0], levels[-1]),
            levels=levels,
            cmap=style.SEQUENTIAL_CMAP,
            norm=LogNorm(levels[0], levels[-1]),
            alpha=0.3,
        )
        ax.contour(X, Y, Z, levels=levels, colors="white", linewidths=0.6, alpha=0.8)
    ax.set_xlim(*box[0])
    ax.set_ylim(*box[1])
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _terms(
    rec, name: str, plane, coords: np.ndarray, kept: np.ndarray
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray | None]:
    """The update's terms at the kept updates: names, projected vectors ``(m, T, 2)``
    chained tip to tail from the position, full-space lengths ``(m, T + 1)`` of each
    term and of the whole step (float64), and Nesterov's iterates ``p - mu*v_prev``
    ``(m, 2)`` behind each look-ahead point (None for the other rules)."""
    n = len(rec)
    flat = lambda a: np.asarray(a, np.float64).reshape(n, -1)  # noqa: E731
    p = np.asarray(rec.path(name), np.float64).reshape(n + 1, -1)
    g = flat(rec.global_values(name, "grad"))
    v = flat(rec.global_values(name, "velocity"))
    hp = rec.hyperparameters
    lr = np.asarray(hp.learning_rate, np.float64).reshape(n, 1)
    mu = float(hp.momentum)
    iterates = None
    with np.errstate(invalid="ignore", over="ignore"):
        vecs, names = [-lr * g], ["gradient"]
        if mu != 0.0:
            v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
            names.insert(0, "lookahead" if hp.nesterov else "momentum")
            vecs.insert(0, mu * v if hp.nesterov else mu * v_prev)
            if hp.nesterov:
                iterates = coords[kept] - (mu * v_prev[kept]) @ plane.basis.T
        step = p[1:] - p[:-1]
        uvs = np.stack([vec[kept] @ plane.basis.T for vec in vecs], axis=1)
        lengths = np.stack([np.linalg.norm(vec[kept], axis=1) for vec in [*vecs, step]], axis=1)
    return names, uvs, lengths, iterates


def close_key(colors: list | None = None) -> list[dict[str, Any]]:
    """The key of the close-ups' marks as the still's key draws and names them
    (``views.update.plot.close_up_marks``; the path so far as pale as the browser draws it):
    ``[{"mark": "before" | "after" | "step" | "trail", "text", "color", "width"}]`` (a line's width, pixels);
    the step's and the path's ``"colors"``: each of ``colors`` (the path's tinted), drawn end to end."""
    out = []
    for (words, m), mark in zip(close_up_marks().items(), ("before", "after", "step", "trail")):
        color = m.get("mec", m.get("color"))
        if mark == "trail":  # as pale as the browser draws it (FAINT_TINT), wider: it reads as a sample
            color = panel.tint(style.SUBTITLE_COLOR, FAINT_TINT)
        width = m.get("lw", 0.0) * style.DPI / 72.0
        out.append({"mark": mark, "text": words, "color": mcolors.to_hex(color or "black"), "width": round(width, 3)})
        if colors:  # every mark drawn in each run's colour (the path's tinted): keyed so, side by side
            out[-1]["colors"] = [mcolors.to_hex(c if mark != "trail" else panel.tint(c, FAINT_TINT)) for c in colors]
    return out


def window_means(ks: np.ndarray, loss: np.ndarray, windows: list[list[int]]) -> list[float | None]:
    """The mean loss over each ``[a, b]`` of ``windows`` (k from a to b), as ``findings(..., upto=b).tail_loss``
    takes it; None where one is not finite. Linear in the run: cumulative sums, not a mean per window."""
    ks, loss = np.asarray(ks, np.int64), np.asarray(loss, np.float64)
    bad = np.concatenate([[0], np.cumsum(~np.isfinite(loss))])
    total = np.concatenate([[0.0], np.cumsum(np.where(np.isfinite(loss), loss, 0.0))])
    out: list[float | None] = []
    for a, b in windows:
        i, j = int(np.searchsorted(ks, a)), int(np.searchsorted(ks, b, side="right"))
        ok = j > i and bad[j] == bad[i]
        out.append(float((total[j] - total[i]) / (j - i)) if ok else None)
    return out


def zoom_boxes(
    positions: list[np.ndarray],
    chains: list[np.ndarray],
    nexts: list[np.ndarray],
    main: geo.Box,
    iterates: list[np.ndarray | None] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[str]]]:
    """The close-ups of every kept update on one shared zoom, as the explorer's still and
    ``plot_update`` frame them (``views.update.zoom.shared_zoom``: each run's box fitted
    to its position, arrow tips and Nesterov's iterate, all the largest one's size):
    ``(m, runs, 4)`` square boxes (x0, x1, y0, y1), ``(m,)`` how many times closer
    than the paths they are (``zoom.shared_factor``, the caption's ``×N``), and the
    insets of the updates too small at that zoom, as the still draws them
    (``zoom.draw_inset``): ``(m, runs, 4)`` their own boxes (NaN: no inset) and
    ``[m][runs]`` their marks (``zoom.inset_text``, the 1/N; ``""``: no inset). Without
    arrows (``chains`` of no terms) a box frames the position and the next point."""
    m, r = len(positions[0]), len(positions)
    boxes = np.full((m, r, 4), np.nan)
    inset_boxes = np.full((m, r, 4), np.nan)
    inset_texts = [[""] * r for _ in range(m)]
    factors = np.full(m, np.nan)
    for i in range(m):
        datas: dict[str, panel.PanelData] = {}
        for j in range(r):
            p0 = np.asarray(positions[j][i], np.float64)
            tail, chain = p0, []
            for uv in chains[j][i] if len(chains[j][i]) else [nexts[j][i] - p0]:
                chain.append(("term", tail, np.asarray(uv, np.float64)))
                tail = tail + uv
            it = None if iterates is None else iterates[j]
            nesterov = None if it is None else (it[i], p0)
            box = ((0.0, 1.0), (0.0, 1.0)) if np.all(np.isfinite(p0)) else None  # fit_box replaces it
            datas[str(j)] = panel.PanelData(str(j), i, p0, tuple(chain), nesterov, p0[None], box)
        own, shared, small = shared_zoom(datas, main)
        framed = {k: d for k, d in shared.items() if d.box is not None and np.all(np.isfinite(d.box))}
        for k, d in framed.items():
            assert d.box is not None  # (kept by the filter)
            (x0, x1), (y0, y1) = d.box
            boxes[i, int(k)] = (x0, x1, y0, y1)
            box = own[k].box
            if k in small and box is not None and np.all(np.isfinite(box)):
                (x0, x1), (y0, y1) = box
                inset_boxes[i, int(k)] = (x0, x1, y0, y1)
                inset_texts[i][int(k)] = inset_text(main, own[k])
        factors[i] = shared_factor(main, framed)
    return boxes, factors, inset_boxes, inset_texts


def path_state(
    recordings: Recording | Mapping[str, Recording],
    surface: Surface,
    *,
    name: str | None = None,
    step: int | None = None,
    max_points: int = encode.MAX_POINTS,
    contour_px: int = 420,
) -> dict[str, Any]:
    """Everything the browser's ``PathExplorer`` draws, as plain data (arrays as
    ``encode.array``): the runs and their looks, the box, the contour picture, the
    minima, and per run the path, the loss after k updates and, at each update n the
    slider shows, the parameters before it (``position``) and after it (``next``, where
    the ring is), the loss after it (``loss_at``, marked at ``marked_k`` = n as
    ``plot_paths`` and ``findings`` mark it, the headline's ``mean_window`` shaded), the
    terms (projected and their full-space lengths); the close-up boxes per update on one
    shared zoom (``zoom_boxes``), the headline at each (``headlines``, as
    ``findings(..., upto=n).headline()``) over the settings line, that zoom as the still's caption says it
    (``zoom_text``), the insets of the updates too small at it with their 1/N (``inset``,
    ``inset_text``, placed at ``inset_rect`` as ``zoom.draw_inset`` places them) and the
    key of the close-ups' marks (``close_key``).

    ``step``: the update shown first, as ``recording.steps`` counts them (None: the
    first); ``max_points``: at most this many updates on the slider (a longer run keeps
    that many, evenly spread, the last among them)."""
    scene = build_scene(recordings, surface, name)
    names = list(scene.recordings)
    n = min(len(r) for r in scene.recordings.values())
    steps = np.asarray(next(iter(scene.recordings.values())).steps[:n], np.int64)
    kept = encode.kept_indices(n, max_points)
    windows = [[int(steps[i - tail_length(int(i) + 1) + 1]), int(steps[i])] for i in kept]
    picked = None if step is None else geo.check_step(step, {k: steps for k in names})
    start = 0 if picked is None else geo.step_index(steps, picked)
    start = int(np.argmin(np.abs(kept - start)))
    arrows = all(upd.why_no_arrows(r) is None for r in scene.recordings.values())  # kinds and every update
    runs, positions, chains, nexts, iterates = {}, [], [], [], []
    loss_lo, loss_hi = np.inf, 0.0
    for key in names:
        rec, coords = scene.recordings[key], scene.coords[key]
        ks, loss, _ = scene.losses[key]
        path_idx = encode.kept_indices(n + 1, max_points + 1)
        finite = loss[np.isfinite(loss) & (loss > 0)]
        if len(finite):
            loss_lo, loss_hi = min(loss_lo, float(finite.min())), max(loss_hi, float(finite.max()))
        run: dict[str, Any] = {
            "path": encode.array(coords[path_idx]),
            "path_index": encode.array(path_idx, "<i4"),
            "loss_k": encode.array(np.asarray(ks)[path_idx], "<i4"),
            "loss": encode.array(np.asarray(loss)[path_idx]),
            "position": encode.array(coords[kept]),
            "next": encode.array(coords[kept + 1]),
            # the loss the panel marks at update n: after n updates, at the ring (as plot_paths)
            "loss_at": encode.array(np.asarray(loss)[kept + 1]),
        }
        color = scene.colors[key]
        run["tint"] = mcolors.to_hex(panel.tint(color, style.REMAINDER_TINT))
        # the path so far under a close-up's arrows: thin and paler than the gradient's arrow (panel.TINT)
        run["faint"] = look_data(style.Look(panel.tint(color, FAINT_TINT), "-", FAINT_LW))  # solid, as its key
        if arrows:
            terms, uvs, lengths, its = _terms(rec, scene.name, scene.plane, coords, kept)
            iterates.append(its)
            run.update(terms=terms, uvs=encode.array(uvs), lengths=encode.array(lengths))
            # each term lying along the one before (panel.lies_along): drawn beside it, as the still's beside_folds
            along = [[q > 0 and panel.lies_along(c[q - 1], c[q]) for q in range(len(c))] for c in np.asarray(uvs)]
            run["beside"] = encode.array(np.asarray(along, bool).reshape(uvs.shape[:2]), "<i4")
            run["term_colors"] = {t: mcolors.to_hex(panel.term_color(t, color)) for t in terms}
            chains.append(uvs)
        else:
            chains.append(np.zeros((len(kept), 0, 2)))
            iterates.append(None)
        positions.append(coords[kept])
        nexts.append(coords[kept + 1])
        runs[key] = run
    ticks, labels = loss_ticks(loss_lo, loss_hi)
    if ticks and ticks[0] > 3.0 * loss_lo:  # the curve's bottom unlabelled: the decade under it ticked too
        ticks, labels = loss_ticks(10.0 ** np.floor(np.log10(loss_lo)), loss_hi)
    if ticks and ticks[-1] < loss_hi / 3.0:  # and its top: the decade over it
        ticks, labels = loss_ticks(ticks[0], 10.0 ** np.ceil(np.log10(loss_hi)))
    zoom, factors, insets, inset_texts = zoom_boxes(positions, chains, nexts, scene.box, iterates)
    looks = style.run_looks(names)
    (ix, iy, iw, ih) = INSET_RECT
    return {
        "kind": "paths",
        "names": names,
        # over the panels, as the still's title: findings(..., upto=n).headline() at each update n, then the settings
        "headlines": [findings_of(scene, upto=int(steps[i]), paths=False).headline() for i in kept],
        "settings": settings_line(scene),
        "draw_order": sorted(names, key=lambda k: looks[k].zorder),  # each run's lines: the widest under
        "rule_names": {k: geo.rule_name(k) for k in names},
        "look": look_table(names),
        "box": [list(map(float, scene.box[0])), list(map(float, scene.box[1]))],
        "contours": contour_png(scene.grid, scene.levels, scene.box, contour_px),
        "minima": encode.array(scene.minima),
        # the paths panel's ticks (MaxNLocator's, clear of the box's corners) and axes' names, as the still's
        "box_ticks": [
            [float(t) for t in MaxNLocator(5).tick_values(a, b) if abs(2 * t - a - b) < 0.9 * (b - a)]
            for a, b in scene.box
        ],
        "axis_names": list(axis_names(scene)),
        "updates": encode.array(steps[kept], "<i4"),
        "last_update": int(steps[-1]),
        "n_updates": int(n),
        "index": start,
        "arrows": bool(arrows),
        "frame_index": [int(k) for k in kept],
        "marked_k": [int(k) + 1 for k in kept],  # the loss panel's k at each slider position: update n at k = n
        # the k whose mean loss findings(..., upto=n) compares (its window: the last tail_length(n))
        "mean_window": windows,
        "mean_loss": {key: window_means(*scene.losses[key][:2], windows) for key in names},  # the bars over it
        "mean_label": MEAN_LABEL,  # their key's words, as the stills' legends say them
        # their look, as the stills' mean_look: the run's colour in a dark outline (widths in points, as drawn)
        "mean_edge": {"color": mcolors.to_hex(MEAN_EDGE), "width": MEAN_LW, "outer": MEAN_LW + MEAN_OUTLINE},
        "later_veil": LATER_VEIL,  # the white over the loss after the update shown, as the still's
        "trail_dot": round(panel.TRAIL_DOT / 2 * style.DPI / 72.0, 3),  # the path so far's dots (radius, pixels)
        # a thin solid path in a white casing, as the stills' (style.Look.casing): its width in pixels, per run
        "cased": {
            k: round(lk.casing() * style.DPI / 72.0, 3)
            for k, lk in style.run_looks(scene.coords).items()
            if lk.casing()
        },
        "inset_ring": panel.INSET_RING,  # an inset's ring, smaller than a panel's (its short arrows show)
        "trail_keep": TRAIL_KEEP,  # the path's segments a close-up keeps before the update, as the still's
        "rest_label": REST_LABEL,  # the pale paths after the update shown, as the explorer still names them
        "zoom": encode.array(zoom),
        "zoom_factor": encode.array(factors),
        "zoom_text": [span_text(f) if np.isfinite(f) else "" for f in factors],  # the caption's 1/N
        "update_ticks": update_ticks(int(steps[-1])),
        "loss_xlabel": LOSS_XLABEL,  # the loss axis' words, as every loss panel says them
        # an update too small at the shared zoom drawn again at its own in an inset, as the still's (zoom.draw_inset):
        # its box, its 1/N and where in its close-up it sits (x, y from the upper left, w, h: shares of the side)
        "inset": encode.array(insets),
        "inset_text": inset_texts,
        "inset_rect": [ix, 1.0 - iy - ih, iw, ih],
        "close_key": close_key([scene.colors[k] for k in names]),
        "loss_range": [float(loss_lo), float(loss_hi)] if loss_hi > 0 else None,
        "loss_ticks": ticks,
        "loss_labels": labels,
        "term_names": TERM_NAMES,
        "runs": runs,
        "plane": "the parameters" if scene.plane.is_identity else "the paths' two main directions (PCA)",
    }


class PathExplorer(BrowserWidget):
    """The paths, a close-up of the update shown and the loss after k updates, drawn by
    the browser from ``path_state``; ``update`` (synced both ways) is the update shown,
    as ``recording.steps`` counts them.

    Args:
      recordings: ``{config: Recording}`` as ``dtsgd_viz.run`` returns (or one).
      surface: the surface they were recorded on.
      name: the recorded variable (None: the only one).
      step: the update shown first (None: the first; ``-1``: the last).
      max_points: at most this many updates on the slider (longer runs are spread).
    """

    _module = "paths.js"

    def __init__(
        self,
        recordings: Recording | Mapping[str, Recording],
        surface: Surface,
        *,
        name: str | None = None,
        step: int | None = None,
        max_points: int = encode.MAX_POINTS,
    ):
        state = path_state(recordings, surface, name=name, step=step, max_points=max_points)
        updates = encode.decode(state["updates"])
        super().__init__(data=state, update=int(updates[state["index"]]))
        self._recordings, self._surface, self._name = recordings, surface, name

    def snapshot_png(self) -> bytes:
        """The still picture of the update shown (``widgets.explorer_figure.explorer_still``:
        the paths, the loss, the headline at that update and every run's close-up on one
        zoom), for readers that run no scripts."""
        from ..widgets.explorer_figure import explorer_still

        fig = explorer_still(self._recordings, self._surface, int(self.update), name=self._name)
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=style.DPI)
        return buf.getvalue()
