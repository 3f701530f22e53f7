"""The words of ``plot_block_rates``: the headline (what the blocks' rates show, then the
run's settings) and the labels written on the rate panel instead of a legend (each rule's
name on its curve, each stability limit at its dotted line, a short key to the marks).

    >>> stability_text("Nesterov", 1.357142)
    'Nesterov\\ndiverges\\npast 1.36'
    >>> at_floor([1.0, 1e-3, 0.0, 2e-7, 5e-7], 3e-7).tolist()   # held there once it is reached
    [1.0, 0.001, 3e-07, 3e-07, 3e-07]
    >>> floor_text(3.37e-7)
    'float32 round-off (below 3e-7)'
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, cast

import numpy as np
from matplotlib.transforms import blended_transform_factory

from ..core import style
from ..core.figure import fit, root_figure
from ..mesh.layout_colors import label_ink
from ..text.direct import READABLE_GAP, axes_height_points, leaders, spread

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.lines import Line2D
    from matplotlib.text import Text
    from matplotlib.typing import ColorType
    from numpy.typing import ArrayLike

    from ...theory.surfaces import Surface
    from .block_rates import BlockRates

__all__ = [
    "rates_finding",
    "rates_settings",
    "pack",
    "stability_text",
    "key_text",
    "RateLabels",
    "at_floor",
    "draw_floor",
    "floor_text",
    "label_block_ends",
]

KEY_WIDTH = 34  # characters a line of the key holds: it stays clear of Nesterov's dip
STEP = 1.07  # labels stand this factor (on the log x axis) off the line they name
NAME_SPAN = 3.0  # about the factor a name spans on the log x axis
ROOM = 1.15  # the x axis ends at ROOM x momentum's limit, just past its dotted line


def stability_text(rule: str, boundary: float, wide: bool = False) -> str:
    """The words at a rule's dotted stability limit (``wide``: on two lines, not three)."""
    return f"{rule}{' ' if wide else chr(10)}diverges\npast {boundary:.3g}"


def _rule(nesterov: bool) -> str:
    return "Nesterov" if nesterov else "momentum"


def rates_finding(
    rates: BlockRates, learning_rate: float | None = None, width_points: float = style.WIDTH * 72.0
) -> str:
    """What the figure shows at ``learning_rate`` (default: the recorded one): which blocks
    the run's rule makes converge fastest and slowest, and what the other rule would do,
    in the fullest wording that fits one line ``width_points`` wide (``figure.fit``).

    Rates are the spectral radii at ``a = lr * h`` (``BlockRates.positions``)."""
    pos = rates.positions(learning_rate)
    run, other = rates.nesterov, not rates.nesterov
    rho, h = pos[run][1], rates.curvature
    bad = rho >= 1.0
    recorded = learning_rate is None or float(learning_rate) == rates.learning_rate
    at = getattr(rates, "diverging_from", None) if recorded else None
    when = f" from update {at}" if at is not None and bad.any() else ""  # the run itself
    if bad.all():
        return f"Under {_rule(run)} every block diverges{when}: the learning rate is past its stability limit"
    ok = ~bad
    if bad.any():
        return _some_diverge(rates, rho, bad, pos[other][1], run, when, width_points)
    fast = int(np.flatnonzero(ok)[np.argmin(rho[ok])])
    slow = int(np.flatnonzero(ok)[np.argmax(rho[ok])])
    which = "steep" if h[fast] > h[slow] else "flat"
    n_bad = int(bad.sum())
    diverge = f" and {n_bad} diverge{'s' * (n_bad == 1)}" if n_bad else ""
    rho_o = pos[other][1]
    if np.all(rho_o < 1.0) and np.ptp(rho_o) < 0.01:
        tails = (
            f"; {_rule(other)} would hold every block at {float(np.mean(rho_o)):.2f}",
            f"; {_rule(other)}: {float(np.mean(rho_o)):.2f} on all",
        )
    elif np.all(rho_o < 1.0):
        tails = (
            f"; {_rule(other)} would range from {rho_o.min():.2f} to {rho_o.max():.2f}",
            f"; {_rule(other)}: {rho_o.min():.2f} to {rho_o.max():.2f}",
        )
    else:
        tails = (
            f"; {int(np.sum(rho_o >= 1.0))} would diverge under {_rule(other)}",
            f"; {int(np.sum(rho_o >= 1.0))} diverge under {_rule(other)}",
        )
    long = (
        f"Under {_rule(run)} the {which} blocks converge fastest (rate {rho[fast]:.2f} per update "
        f"at h = {h[fast]:.2g}, {rho[slow]:.2f} at h = {h[slow]:.2g}){diverge}"
    )
    short = (
        f"{_rule(run)[:1].upper()}{_rule(run)[1:]}: {which} blocks converge fastest (rate {rho[fast]:.2f} vs "
        f"{rho[slow]:.2f}){diverge}"
    )
    candidates = [long + tails[0], long + tails[1], short + tails[0], short + tails[1]]
    for text in candidates:  # the first that stays one line in the headline
        if "\n" not in fit(text, width_points, style.SUPTITLE_SIZE, bold=True):
            return text
    return candidates[-1]


def _some_diverge(rates, rho, bad, rho_o, run, when, width_points) -> str:
    """The headline when some blocks diverge under the run's rule and some converge: how
    many diverge (and from which update the run does), which converge, and the other rule."""
    n, n_bad, h = len(rho), int(bad.sum()), rates.curvature
    ok = np.flatnonzero(~bad)
    fast = int(ok[np.argmin(rho[ok])])
    if len(ok) == 1:
        rest = (
            f"only {rates.labels[fast]} (h = {h[fast]:.2g}) converges, at rate {rho[fast]:.2f}",
            f"only {rates.labels[fast]} converges ({rho[fast]:.2f})",
        )
    else:
        rest = (
            f"the other {len(ok)} converge, fastest at h = {h[fast]:.2g} (rate {rho[fast]:.2f})",
            f"{len(ok)} converge (fastest {rho[fast]:.2f})",
        )
    o_bad = int(np.sum(rho_o >= 1.0))
    tails = (
        (f"; {o_bad} would diverge under {_rule(not run)}", f"; {o_bad} under {_rule(not run)}")
        if o_bad
        else (f"; {_rule(not run)} would hold every block", "")
    )
    if o_bad == n:
        tails = (f"; all {n} would diverge under {_rule(not run)}", f"; all {n} under {_rule(not run)}")
    head = f"Under {_rule(run)} {n_bad} of {n} blocks diverge{when}"
    candidates = [f"{head}; {r}{t}" for r in rest for t in tails] + [f"{head}; {rest[-1]}"]
    for text in candidates:
        if "\n" not in fit(text, width_points, style.SUPTITLE_SIZE, bold=True):
            return text
    return candidates[-1]


def _unbroken(text: str) -> str:
    """``text`` with the spaces inside brackets made non-breaking: a line break never
    splits ``(curvature 0.05..1)``."""
    return re.sub(r"\([^()]*\)", lambda m: m.group(0).replace(" ", "\u00a0"), text)


def pack(parts: Iterable[str], width_points: float, fontsize: float = style.SUBTITLE_SIZE) -> str:
    """``parts`` joined by `` · `` on as few lines as fit ``width_points`` (``figure.fit``),
    a line break only between parts (a part longer than a line breaks between its words,
    never inside brackets)."""
    lines = []
    for part in (_unbroken(p) for p in parts):
        joined = f"{lines[-1]} · {part}" if lines else part
        if lines and "\n" not in fit(joined, width_points, fontsize):
            lines[-1] = joined
        else:
            lines.append(part)
    return "\n".join(lines)


def rates_settings(rates: BlockRates, surface: Surface, width_points: float = style.WIDTH * 72.0) -> str:
    """The run's settings and how close the measured decays came to theory, broken
    between its parts (never inside a bracket)."""
    label = getattr(surface, "label", type(surface).__name__)
    n = int(rates.updates[-1])
    parts = [
        f"real DTensor SGD, {_rule(rates.nesterov)}, lr {rates.learning_rate:g}, μ {rates.momentum:g}, {n} updates",
        label,
    ]
    theory = rates.positions()[rates.nesterov][1]
    ok = np.isfinite(rates.measured)
    if ok.any():
        off = float(np.max(np.abs(rates.measured[ok] - theory[ok])))
        parts.append(f"★ measured on the run: within {max(off, 1e-4):.1g} of theory")
    return pack(parts, width_points)


def key_text(no_star_note: str = "", unstable: bool = False) -> str:
    """The short key in the rate panel's free corner: what a ring, a square and a star are, the red
    x while a block is past a limit, and why a block has no star."""
    lines = [
        "□ a block at lr·h under momentum,",
        "△ under Nesterov (colours: right)",
        "★ its decay, measured on the run",
    ]
    if unstable:
        lines.append("✕ past its rule's limit (dotted)")
    for line in no_star_note.split("\n") if no_star_note else []:
        lines += textwrap.wrap(line, KEY_WIDTH, subsequent_indent="  ") or [""]
    return "\n".join(lines)


class RateLabels:
    """The rate panel's direct labels (``texts``: gid -> ``Text``): the rules' names
    (``name-momentum``, ``name-Nesterov``), their limits (``limit-...``, at the dotted
    lines), the rate-1 note (``stability-note``) and the ``key``."""

    def __init__(
        self,
        ax: Axes,
        momentum: float,
        boundaries: dict[bool, float],
        rate: Callable[[ArrayLike, ArrayLike, bool], np.ndarray],
        lo: float,
    ):
        self.ax = ax
        b_m, b_n = boundaries[False], boundaries[True]
        common = dict(fontsize=style.NOTE_SIZE, zorder=8)
        halo = dict(fc="white", ec="none", alpha=0.85, pad=1.0)
        self.texts = {}

        def put(gid, x, y, text, **kw):
            kw = {**common, "bbox": halo, **kw}
            self.texts[gid] = ax.text(x, y, text, gid=gid, **kw)

        # every block past Nesterov's limit (lo over it): the names' ground reaches past lo
        grid = np.geomspace(lo, max(b_n, lo * STEP * NAME_SPAN), 400)
        top = np.fmax(rate(grid, momentum, False), rate(grid, momentum, True))
        # the rate-1 note where both curves have come down from 1 (small steps creep at ~1)
        x_note = float(grid[np.argmax(top < 0.975)]) if (top < 0.975).any() else lo
        put(
            "stability-note",
            max(lo * STEP, x_note),
            1.005,
            "rate 1: past this the error grows",
            va="bottom",
            color="0.3",
            bbox=None,
        )
        # Nesterov's name at the left, under both curves over about its width
        x_n = lo * STEP
        near = grid[(grid >= x_n) & (grid <= x_n * NAME_SPAN)]
        near = near if len(near) else np.array([x_n])
        y_n = float(np.min(np.fmin(rate(near, momentum, False), rate(near, momentum, True)))) - 0.06
        y_n = min(max(y_n, 0.12), 1.1)  # on the axis (0..1.25), however far past the limits
        put(
            "name-Nesterov",
            x_n,
            y_n,
            "Nesterov",
            va="top",
            ha="left",
            color=style.RULE_LOOKS["nesterov"].color,
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
        )
        if np.min(rate(near, momentum, True)) > 1.2:  # its curve above the axis here: no name
            self.texts["name-Nesterov"].set_visible(False)
        # momentum's curve is flat until its limit, then leaves the top; between the two
        # limits Nesterov's curve is above the top: momentum's name (under its flat part)
        # and its limit stand there, left of its dotted line, and the axis can end just
        # past that line
        x_m = b_m / STEP
        put(
            "name-momentum",
            x_m,
            float(rate(np.array([x_m]), momentum, False)[0]) - 0.035,
            "momentum",
            va="top",
            ha="right",
            color=style.RULE_LOOKS["momentum"].color,
            fontsize=style.LABEL_SIZE,
            fontweight="bold",
        )
        put(
            "limit-momentum",
            x_m,
            0.45,
            stability_text("momentum", b_m),
            va="center",
            ha="right",
            color=style.RULE_LOOKS["momentum"].color,
        )
        # Nesterov's at its dotted line's top end: left of it, above 1, nothing is drawn
        put(
            "limit-Nesterov",
            b_n / STEP,
            1.23,
            stability_text("Nesterov", b_n, wide=True),
            va="top",
            ha="right",
            color=style.RULE_LOOKS["nesterov"].color,
        )
        for rule, b in (("momentum", b_m), ("Nesterov", b_n)):  # a limit left of the axis:
            if b / STEP < lo * STEP:  # its dotted line is not drawn, its words say nothing
                self.texts[f"limit-{rule}"].set_visible(False)
        put("key", lo * STEP, 0.03, key_text(), va="bottom", ha="left", color="0.2", linespacing=1.3)

    def place_momentum_name(self, marks: np.ndarray, radius_px: float = 5.0, air_px: float = 3.0) -> None:
        """Move momentum's name (under its flat part, first left of its limit) to the
        right-most place under its curve where it keeps ``air_px`` off every other curve,
        dotted line, label and mark (``marks``: data points, ``radius_px`` each); it
        stays put when none is clear. Measured with the figure's layout."""
        ax, t = self.ax, self.texts["name-momentum"]
        fig = root_figure(ax)
        fig.draw_without_rendering()
        renderer = cast("FigureCanvasAgg", fig.canvas).get_renderer()  # new_figure's Agg canvas
        frame = ax.get_window_extent(renderer)
        box = t.get_window_extent(renderer)
        w, h = box.width, box.height
        to_px = ax.transData.transform
        own = next(ln for ln in ax.lines if ln.get_gid() == "curve-momentum")
        xs, ys = np.asarray(own.get_xdata(), float), np.asarray(own.get_ydata(), float)
        points = [to_px(np.column_stack([xs, ys]))]
        for ln in ax.lines:
            gid = ln.get_gid() or ""
            if gid.startswith("curve-") and ln is not own:
                points.append(to_px(np.column_stack([ln.get_xdata(), ln.get_ydata()])))
            elif gid.startswith("boundary-"):
                x = to_px((np.asarray(ln.get_xdata())[0], 1.0))[0]
                points.append(np.column_stack([np.full(100, x), np.linspace(frame.y0, frame.y1, 100)]))
        pts = np.concatenate([q[np.all(np.isfinite(q), axis=1)] for q in points])
        marks_px = to_px(np.asarray(marks, float).reshape(-1, 2)) if len(marks) else np.zeros((0, 2))
        others = [u.get_window_extent(renderer) for g, u in self.texts.items() if g != "name-momentum"]
        own_px = points[0]
        best = None
        candidates = [
            (x1, drop)
            for drop in (0.0, 0.5 * h, h)  # right edge, right first
            for x1 in np.linspace(frame.x1 - air_px, frame.x0 + w + air_px, 120)
        ]
        for x1, drop in candidates:
            x0 = x1 - w
            under = own_px[(own_px[:, 0] >= x0 - radius_px) & (own_px[:, 0] <= x1 + radius_px)]
            if not len(under):
                continue
            y1 = float(under[:, 1].min()) - radius_px - air_px - 1.0 - drop  # under the curve's marks
            y0 = y1 - h
            if y0 < frame.y0 + air_px or y1 > frame.y1 - air_px:  # inside the axes only
                continue
            near = pts[
                (pts[:, 0] > x0 - air_px)
                & (pts[:, 0] < x1 + air_px)
                & (pts[:, 1] > y0 - air_px)
                & (pts[:, 1] < y1 + air_px)
            ]
            hit = marks_px[
                (marks_px[:, 0] > x0 - radius_px - air_px)
                & (marks_px[:, 0] < x1 + radius_px + air_px)
                & (marks_px[:, 1] > y0 - radius_px - air_px)
                & (marks_px[:, 1] < y1 + radius_px + air_px)
            ]
            if (
                len(near)
                or len(hit)
                or any(
                    o.x0 < x1 + air_px and x0 - air_px < o.x1 and o.y0 < y1 + air_px and y0 - air_px < o.y1
                    for o in others
                )
            ):
                continue
            best = (x1, y1)
            break
        if best is not None:
            t.set_position(tuple(ax.transData.inverted().transform(best)))
        self._clear_key(renderer)

    def _clear_key(self, renderer) -> None:
        """A limit's words over the key (a short axis: every block past the limits, the
        dotted line near the left edge) go above it, or are left out when there is no room
        there either: the key names the limits' dotted lines."""
        key = self.texts["key"].get_window_extent(renderer)
        frame = self.ax.get_window_extent(renderer)
        for gid in ("limit-momentum", "limit-Nesterov"):
            t = self.texts[gid]
            if not t.get_visible() or not t.get_window_extent(renderer).overlaps(key):
                continue
            t.set_va("bottom")
            t.set_y(float(self.ax.transData.inverted().transform((0, key.y1 + 4))[1]))
            box = t.get_window_extent(renderer)
            if box.y1 > frame.y1 - 2 or any(
                box.overlaps(o.get_window_extent(renderer))
                for g, o in self.texts.items()
                if g != gid and o.get_visible()
            ):
                t.set_visible(False)

    def set_key(self, no_star_note: str, unstable: bool) -> None:
        self.texts["key"].set_text(key_text(no_star_note, unstable))


# ---- the error panel: the rounding floor and the blocks' names at their lines' ends -----

FLOOR_FACE = "#EFEFEF"
END_X = 1.07  # the names' left edge, in axes widths (the leaders run from the right spine)
END_AIR = 3.0  # points of air between two stacked names


def at_floor(errors: ArrayLike, floor: float) -> np.ndarray:
    """``errors`` held at ``floor`` from the first that reaches it on (what follows is
    rounding, and a log axis would drop its zeros); unchanged when ``floor`` is 0."""
    e = np.asarray(errors, np.float64).copy()
    if floor > 0:
        hit = np.flatnonzero(np.isfinite(e) & (e <= floor))
        if hit.size:
            e[hit[0] :] = floor
    return np.where(e > 0, e, np.nan)


def floor_text(floor: float) -> str:
    """The words on the shaded floor."""
    mantissa, exponent = f"{floor:.0e}".split("e")
    return f"float32 round-off (below {mantissa}e{int(exponent)})"


def draw_floor(ax: Axes, floor: float, top: float) -> Text | None:
    """Shade the log axis under ``floor`` and name it; the axis runs from a little under
    it to a little over ``top``. Returns the ``Text`` (None when there is no floor)."""
    if not floor > 0:
        return None
    lo = floor / 4.0
    ax.set_ylim(lo, 2.5 * top)
    ax.axhspan(lo, floor, color=FLOOR_FACE, lw=0, zorder=0.5, gid="floor")
    ax.axhline(floor, color="0.55", lw=0.8, zorder=0.6, gid="floor-line")
    return ax.text(
        0.03,
        np.sqrt(lo * floor),
        floor_text(floor),
        transform=blended_transform_factory(ax.transAxes, ax.transData),
        ha="left",
        va="center",
        fontsize=style.NOTE_SIZE,
        color="0.3",
        gid="floor-label",
    )


def label_block_ends(
    ax: Axes, ends: Sequence[float], names: Sequence[str], colors: Sequence[ColorType]
) -> tuple[list[Text], list[Line2D]]:
    """Name each error line right of the axes, at its end's height (``ends``: the last
    values), the names pushed apart a readable gap and a leader from each line's end to
    a name that moved. Measured after the figure's layout. Returns ``(texts, leaders)``."""
    fig = root_figure(ax)
    trans = blended_transform_factory(ax.transAxes, ax.transAxes)
    texts = [
        ax.text(
            END_X,
            0.5,
            name,
            transform=trans,
            ha="left",
            va="center",
            fontsize=style.NOTE_SIZE,
            fontweight="bold",
            color=label_ink(c),
            clip_on=False,
            gid=f"end-label-{g}",
        )
        for g, (name, c) in enumerate(zip(names, colors))
    ]
    fig.draw_without_rendering()  # the axes' real height sets the gap
    lo, hi = np.log10(ax.get_ylim()) if ax.get_yscale() == "log" else ax.get_ylim()
    fracs, shown = [], []
    for g, y in enumerate(ends):
        if np.isfinite(y) and (y > 0 or ax.get_yscale() != "log"):
            v = np.log10(y) if ax.get_yscale() == "log" else y
            fracs.append(float(np.clip((v - lo) / (hi - lo), 0.0, 1.0)))
            shown.append(g)
    readable = READABLE_GAP * style.NOTE_SIZE / axes_height_points(ax)
    # the names' real height and END_AIR points between neighbours (bold text is taller
    # than READABLE_GAP allows for)
    renderer = cast("FigureCanvasAgg", fig.canvas).get_renderer()  # new_figure's Agg canvas
    tall = max((t.get_window_extent(renderer).height * 72.0 / fig.dpi for t in texts), default=0.0)
    gap = max(readable, (tall + END_AIR) / axes_height_points(ax))
    placed = spread(fracs, gap, 0.02, 0.98)
    for g, t in enumerate(texts):
        t.set_visible(g in shown)
    for g, f in zip(shown, placed):
        texts[g].set_y(f)
    lines = leaders(
        ax,
        fracs,
        placed,
        [colors[g] for g in shown],
        x0=1.0,
        x1=END_X - 0.01,
        min_shift=0.25 * readable,
        gid="end-leader",
    )
    return texts, lines
