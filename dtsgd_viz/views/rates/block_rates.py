"""Shards on the rate curve: on a ``ShardedQuadratic`` every device block has its own
curvature ``h``, so at learning rate ``lr`` each block sits at ``a = lr * h`` on the
convergence-rate curve of each momentum rule (the spectral radius of the 2x2 iteration
matrix, ``dtsgd_viz.theory``). The figure puts every block there, for both rules, beside
the decay the recording measured on that block::

    s = dtsgd_viz.surfaces.ShardedQuadratic()
    r = dtsgd_viz.run(s, {"nesterov": dict(learning_rate=1.0, momentum=0.9, nesterov=True)},
                      steps=60)["nesterov"]
    fig = dtsgd_viz.plot_block_rates(r, s)

The measured decay of a block comes from the recording alone: on a quadratic each
update is linear in (error, velocity), so the block's error along its starting direction
obeys ``c[k+1] = alpha * c[k] + beta * c[k-1]``; ``alpha`` and ``beta`` are fitted by
least squares to the recorded errors above the float noise floor (``100 * eps *
max(||w_0 - target||, ||target||)`` on the block), and the decay is the largest root's
modulus, the per-update factor the error shrinks by. (A log-slope fit was biased by the
oscillation of under-damped blocks on short runs.) With fewer than 4 such errors it is
NaN, drawn as no star, and the key says why (a block whose error is exactly 0 from
update 2 on has a rate of 0 and nothing past its start to fit).
``block_rates`` computes everything (no drawing); ``RatesView.set_learning_rate`` moves
the blocks along the curves in place (the ``RateExplorer`` widget's slider).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ...theory.quadratic import convergence_boundary
from ...theory.quadratic import rate as _rate  # the closed-form spectral radius
from ..core import style
from ..core.diverging import diverging_update
from ..core.empty import check_not_empty
from ..core.figure import axes_size_inches, fit, headline, new_figure, root_figure
from ..core.log_ticks import use_log_ticks
from ..shards.geometry import block_patches, short_device_names
from .block_labels import ROOM, RateLabels, at_floor, draw_floor, label_block_ends, rates_finding, rates_settings

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike, DTypeLike

    from ...recording import Recording
    from ...theory.surfaces import ShardedQuadratic

__all__ = [
    "BlockRates",
    "block_rates",
    "decay_note",
    "measured_decay",
    "plot_block_rates",
    "RatesView",
    "rule_positions",
]

RULE_NAMES = {False: "momentum", True: "Nesterov"}
RULE_LOOKS = {False: style.RULE_LOOKS["momentum"], True: style.RULE_LOOKS["nesterov"]}
RULE_COLORS = {n: look.color for n, look in RULE_LOOKS.items()}
RULE_MARKERS = {n: look.marker for n, look in RULE_LOOKS.items()}  # the rules' markers: square, triangle
UNSTABLE_COLOR = "#CC3311"
RATE_FLOOR = -0.04
# the marks nest, widest outermost: momentum's block is an open ring wide enough to hold
# Nesterov's square (and the star in it) 0.012 of rate off its centre (at the smallest
# lr·h both rules' rates are near 0.95); Nesterov's block is an open square in the block's
# colour, white inside, wider than the star the run measured there (the star sits on it);
# s in points²
RING: dict[str, Any] = dict(s=380, facecolors="none", linewidths=1.6, zorder=8)
SQUARE: dict[str, Any] = dict(s=90, linewidths=1.5, zorder=5)
STAR_SIZE = 46
RING_RADIUS_PX = (RING["s"] ** 0.5 / 2 + RING["linewidths"] / 2) * 100 / 72  # at dpi 100
FIGSIZE = (style.WIDTH, 5.3)  # the rate panels and, above them, the finding and the settings


def _boundary(momentum, nesterov) -> float:
    """``a = lr * h`` past which a rule diverges."""
    return float(convergence_boundary(momentum, 1.0, nesterov))


NOISE_FLOOR = 100
"""Errors at or below ``NOISE_FLOOR * eps * max(||w_0 - target||, ||target||)`` on a block
are rounding, not decay: a fit stops at the first of them."""
MIN_POINTS = 4
"""A decay is fitted only through at least this many usable errors (update 0 included),
of which the later half is kept: fewer leave nothing past the start-up transient."""


def _usable(errors, steps, dtype: DTypeLike = np.float32, scale=None):
    """``(indices of the usable errors, why the series stops or None)``."""
    e = np.asarray(errors, np.float64)
    e0 = e[0] if np.isfinite(e[0]) else 0.0
    floor = NOISE_FLOOR * np.finfo(dtype).eps * max(e0, 0.0 if scale is None else float(scale))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(e) & (e > floor)
    why = None
    if not ok.all():  # a run that reached the floor (or blew up) stops there
        stop = int(np.argmin(ok))
        ok[stop:] = False
        k = int(np.asarray(steps)[stop])
        why = (
            f"reached exactly 0 at update {k}"
            if e[stop] == 0
            else f"left the float range at update {k}"
            if not np.isfinite(e[stop])
            else f"fell to the float noise floor at update {k}"
        )
    return np.nonzero(ok)[0], why


def measured_decay(
    errors: ArrayLike,
    steps: ArrayLike,
    dtype: DTypeLike = np.float32,
    scale: float | None = None,
    signed: ArrayLike | None = None,
) -> float:
    """Per-update decay factor of a block's error, measured from the recording.

    On a quadratic every update is linear in (error, velocity), so the block's error
    obeys a two-term recurrence ``c[k+1] = alpha * c[k] + beta * c[k-1]`` (Cayley-Hamilton
    on the 2x2 iteration matrix; with every d-th update recorded, the same holds for
    M^d). ``alpha, beta`` are fitted by least squares to the recorded ``signed`` series
    (the error along its starting direction; ``errors``, the norms, when None) and the
    rate is the largest root's modulus (its d-th root). Unlike a slope of log|error|,
    this is not biased by the oscillation of an under-damped block on a short run.
    Only errors above the float noise floor ``NOISE_FLOOR * eps * max(errors[0],
    scale)`` count; NaN when fewer than ``MIN_POINTS`` are usable (an error that
    reaches exactly 0 at update 2, a rate of 0, leaves only the start) or when the
    updates are not evenly recorded.

    >>> round(measured_decay([1.0, 0.5, 0.25, 0.125], [0, 1, 2, 3]), 9)
    0.5
    >>> measured_decay([2.0, 1.8, 0.0, 0.0], [0, 1, 2, 3])
    nan
    """
    idx, _ = _usable(errors, steps, dtype, scale)
    if len(idx) < MIN_POINTS:
        return float("nan")
    c = np.asarray(errors if signed is None else signed, np.float64)[idx]
    gaps = np.diff(np.asarray(steps, np.int64)[idx])
    if not np.all(gaps == gaps[0]):
        return float("nan")
    (alpha, beta), *_ = np.linalg.lstsq(np.column_stack([c[1:-1], c[:-2]]), c[2:], rcond=None)
    rho = float(np.max(np.abs(np.roots([1.0, -alpha, -beta]))))
    return rho ** (1.0 / int(gaps[0]))


def decay_note(errors: ArrayLike, steps: ArrayLike, dtype: DTypeLike = np.float32, scale: float | None = None) -> str:
    """Why ``measured_decay`` is NaN for this series ("" when it is not)."""
    idx, why = _usable(errors, steps, dtype, scale)
    if len(idx) >= MIN_POINTS:
        return ""
    return f"{why or 'the run ended'} ({len(idx)} usable error{'s' if len(idx) != 1 else ''}: too few to fit)"


@dataclasses.dataclass(frozen=True)
class BlockRates:
    """Per replica group (unique block) of a ``ShardedQuadratic`` recording: its
    ``curvature``, ``errors`` (``(n_updates + 1, n_blocks)``: ``||w - target||`` of the
    block at the start and after each recorded update), the ``measured`` decay (NaN
    where too few errors are usable; ``notes`` says why), and the run's ``learning_rate``,
    ``momentum`` and rule (``nesterov``)."""

    groups: tuple[tuple[int, ...], ...]
    labels: tuple[str, ...]
    colors: tuple[str, ...]
    linestyles: tuple
    curvature: np.ndarray
    updates: np.ndarray  # 0 then recording.steps
    errors: np.ndarray
    measured: np.ndarray
    learning_rate: float
    momentum: float
    nesterov: bool
    notes: tuple[str, ...] = ()  # per block: why ``measured`` is NaN ("" when it is not)
    floor: float = 0.0  # the errors' rounding floor: one ulp of the target per entry (0: none)
    diverging_from: int | None = None  # the update the run diverges from (``_diverging``)

    def positions(self, learning_rate: float | None = None) -> dict[bool, tuple[np.ndarray, np.ndarray]]:
        """``{nesterov: (a, rate)}`` of every block at ``learning_rate`` (default: the
        recorded one), on both rules' curves."""
        return rule_positions(
            self.curvature, self.momentum, self.learning_rate if learning_rate is None else learning_rate
        )


def rule_positions(
    curvature: ArrayLike, momentum: float, learning_rate: float
) -> dict[bool, tuple[np.ndarray, np.ndarray]]:
    """``{nesterov: (a, rate)}``: each block's ``a = lr * h`` and its rate under both rules."""
    a = float(learning_rate) * np.asarray(curvature, np.float64)
    return {n: (a, np.asarray(_rate(a, momentum, n), np.float64)) for n in (False, True)}


def block_rates(recording: Recording, surface: ShardedQuadratic, name: str = "w") -> BlockRates:
    """Everything ``plot_block_rates`` draws, computed from a full-mode recording of
    ``surface`` (a ``ShardedQuadratic``: its layout must be the recording's)."""
    check_not_empty(recording)
    if not hasattr(surface, "curvature") or not hasattr(surface, "layout_spec"):
        raise TypeError(
            "surface must be a dtsgd_viz.surfaces.ShardedQuadratic (a curvature "
            f"per device block). Received: {type(surface).__name__}."
        )
    geometry = recording.geometry(name)
    if tuple(geometry.global_shape) != tuple(surface.shape) or tuple(geometry.layout.sharding_specs) != tuple(
        surface.specs
    ):
        raise ValueError(
            f"The recording's {name!r} is {geometry.global_shape} laid out "
            f"{list(geometry.layout.sharding_specs)}; the surface is {tuple(surface.shape)} "
            f"laid out {list(surface.specs)}. Pass the surface the recording was run on."
        )
    if getattr(recording, "mode", "full") == "stats":
        raise ValueError(
            "block_rates needs the parameter's values: record with Recorder(mode='full') (dtsgd_viz.run does)."
        )
    hp = recording.hyperparameters
    path = recording.path(name).astype(np.float64)  # (n + 1, *shape)
    curvature = np.asarray(surface.curvature, np.float64)
    blocks = [geometry.blocks[d[0]] for d in geometry.replica_groups]
    ell = (slice(None),)
    errors = np.stack(
        [np.sqrt(np.sum((path[ell + b] - surface.target) ** 2, axis=tuple(range(1, path.ndim)))) for b in blocks], 1
    )
    updates = np.concatenate([[0], np.asarray(recording.steps)])
    dtype = recording.record(name).dtype
    # the target's size sets the rounding floor as much as the start error does
    scale = [float(np.sqrt(np.sum(np.broadcast_to(surface.target, path[(0,) + b].shape) ** 2))) for b in blocks]
    # each block's error along its starting direction (signed: the recurrence needs it)
    signed = []
    for b, norm0 in zip(blocks, errors[0]):
        e = (path[ell + b] - surface.target).reshape(len(path), -1)
        signed.append(e @ e[0] / norm0 if norm0 > 0 else np.zeros(len(path)))
    measured = np.array([measured_decay(errors[:, g], updates, dtype, scale[g], signed[g]) for g in range(len(blocks))])
    notes = tuple(decay_note(errors[:, g], updates, dtype, scale[g]) for g in range(len(blocks)))
    styles = style.block_styles(geometry)
    floor = float(np.finfo(dtype).eps) * max(scale)  # one ulp per entry of a block: rounding
    names = short_device_names(recording.shard_devices(name))
    return BlockRates(
        tuple(geometry.replica_groups),
        tuple(p.label for p in block_patches(geometry, names)),
        tuple(s[0] for s in styles),
        tuple(s[2] for s in styles),
        np.array([float(curvature[b].flat[0]) for b in blocks]),
        updates,
        errors,
        measured,
        float(hp.learning_rate[0]),
        float(hp.momentum),
        bool(hp.nesterov),
        notes,
        floor,
        diverging_update(recording),
    )


class RatesView:
    """The figure's artists: ``curve_ax`` (rate against ``lr * h``, log x), ``error_ax``
    (each block's error over the updates, log y). ``markers[nesterov]`` is one ``Line2D``
    per rule holding every block's position; ``measured_marks`` the measured decays
    (at the recorded ``lr``); ``unstable_marks[nesterov]`` the blocks past that rule's
    stability boundary at the shown learning rate. ``lr_range``: the learning rates the
    x axis must hold (a slider's span)."""

    def __init__(
        self,
        rates: BlockRates,
        curve_ax: Axes,
        error_ax: Axes | None = None,
        learning_rate: float | None = None,
        lr_range: tuple[float, float] | None = None,
    ):
        self.rates, self.curve_ax, self.error_ax = rates, curve_ax, error_ax
        self.figure = root_figure(curve_ax)
        r = rates
        self.learning_rate = r.learning_rate if learning_rate is None else float(learning_rate)
        ax = curve_ax
        a_rec = r.learning_rate * r.curvature
        lr_lo, lr_hi = lr_range or (r.learning_rate, r.learning_rate)  # a slider's span
        self.boundaries = {n: _boundary(r.momentum, n) for n in (False, True)}
        hi = max(ROOM * self.boundaries[False], 1.5 * lr_hi * r.curvature.max())
        lo = min(a_rec.min(), lr_lo * r.curvature.min()) / 1.6
        grid = np.geomspace(lo, hi, 600)
        for n in (False, True):
            ax.plot(
                grid,
                _rate(grid, r.momentum, n),
                **RULE_LOOKS[n].line(),
                label=f"{RULE_NAMES[n]} rate (theory)",
                gid=f"curve-{RULE_NAMES[n]}",
            )
            limit = style.ROLE_LOOKS["limit"]
            ax.axvline(self.boundaries[n], **limit.line(RULE_COLORS[n]), gid=f"boundary-{RULE_NAMES[n]}")
        ax.axhline(1.0, **style.ROLE_LOOKS["stability"].line(), gid="stability-line")
        self.labels = RateLabels(ax, r.momentum, self.boundaries, _rate, lo)
        self.markers, self.unstable_marks = {}, {}
        for n in (False, True):
            # momentum's blocks are open squares (its marker) in the block's colour, wider
            # than Nesterov's triangle and drawn over it: where both rules' marks meet
            # (small lr·h, where both rates are near 0.95) the triangle and its star show
            # inside the square; the star shows inside its triangle instead of covering it
            look = RING if not n else dict(SQUARE, facecolors="white")
            self.markers[n] = ax.scatter([], [], marker=RULE_MARKERS[n], gid=f"blocks-{RULE_NAMES[n]}", **look)
            (self.unstable_marks[n],) = ax.plot(
                [],
                [],
                ls="none",
                marker="x",
                ms=11,
                mew=2.2,
                color=UNSTABLE_COLOR,
                zorder=6,
                gid=f"unstable-{RULE_NAMES[n]}",
            )
        ok = np.isfinite(r.measured)
        self.measured_marks = ax.scatter(
            a_rec[ok],
            r.measured[ok],
            s=STAR_SIZE,
            marker="*",
            c=np.array(r.colors)[ok],
            edgecolors="black",
            linewidths=0.7,
            zorder=7,
            gid="measured",
        )
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        use_log_ticks(ax.xaxis)  # the one log tick format (core.log_ticks)
        if hi / lo < 100:  # under two decades matplotlib labels the minor ticks, crowded:
            from matplotlib.ticker import LogLocator

            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # 1-2-5, plain
        ax.set_ylim(RATE_FLOOR, 1.25)  # under 0: a block at rate 0 shows whole
        ax.set_xlabel("lr · h  (learning rate × the block's curvature)", fontsize=style.LABEL_SIZE)
        ax.set_ylabel("rate: error factor per update", fontsize=style.LABEL_SIZE)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.grid(True, color="#E5E5E5", lw=0.6)
        if error_ax is not None:
            self._draw_errors(error_ax)
        self.set_learning_rate(self.learning_rate)
        # momentum's name clear of the blocks where they are drawn first
        pos = r.positions(self.learning_rate)
        self.labels.place_momentum_name(
            radius_px=RING_RADIUS_PX * self.figure.dpi / 100,
            marks=np.concatenate(
                [np.column_stack([a, np.minimum(rho, 1.22)]) for a, rho in pos.values()]
                + [self.measured_marks.get_offsets()]
            ),
        )

    def _key(self):
        """The rate panel's key (no legend: the curves and limits are named on the
        chart): the red x only while some block is past a stability limit, the no-star
        note only while some block has no star."""
        self.no_star_note = self._no_star_note()
        self.labels.set_key(self.no_star_note, any(bad.any() for bad in getattr(self, "unstable", {}).values()))

    def _no_star_note(self) -> str:
        """The key's lines on the blocks without a star ("" when every block has one)."""
        r = self.rates
        missing = [g for g in range(len(r.labels)) if not np.isfinite(r.measured[g])]
        if not missing:
            return ""
        notes = r.notes or ("",) * len(r.labels)
        lines = [f"{r.labels[g]}: {notes[g] or 'no decay could be fitted'}" for g in missing[:3]]
        if len(missing) > 3:
            lines.append(f"and {len(missing) - 3} more blocks")
        return "no star (no decay to measure):\n" + "\n".join(lines)

    def _draw_errors(self, ax):
        """Each block's error over the run, held at the rounding floor once it reaches it
        (below it a log axis would drop the zeros and scatter the rest), the floor shaded
        and named, each line named at its end."""
        r = self.rates
        self.error_lines = []
        for g, label in enumerate(r.labels):
            e = at_floor(r.errors[:, g], r.floor)
            self.error_lines.append(
                ax.plot(
                    r.updates,
                    e,
                    color=r.colors[g],
                    ls=r.linestyles[g],
                    lw=1.6,
                    label=f"{label} {r.curvature[g]:.2g}",
                    gid=f"error-{g}",
                )[0]
            )
        ax.set_yscale("log")
        use_log_ticks(ax.yaxis)
        finite = r.errors[np.isfinite(r.errors)]
        # a diverging block's error grows off its start's scale: the axis reaches it
        self.floor_band = draw_floor(
            ax, r.floor, max(np.nanmax(r.errors[0]), float(finite.max()) if finite.size else 0.0)
        )
        ax.set_xlim(r.updates[0] - 0.02 * (r.updates[-1] - r.updates[0]), r.updates[-1])
        ax.set_xlabel("optimizer update", fontsize=style.LABEL_SIZE)
        ax.set_ylabel("||w − target|| on the block", fontsize=style.LABEL_SIZE)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.set_title(f"Each block's error over the {RULE_NAMES[r.nesterov]} run", fontsize=style.TITLE_SIZE)
        ax.grid(True, color="#E5E5E5", lw=0.6)
        self.end_labels, self.leader_lines = label_block_ends(
            ax,
            [ln.get_ydata()[-1] for ln in self.error_lines],
            [f"{label}  h={h:.2g}" for label, h in zip(r.labels, r.curvature)],
            r.colors,
        )

    def set_learning_rate(self, learning_rate: float) -> None:
        """Move every block along both curves to ``a = learning_rate * h``, in place,
        and mark the blocks past each rule's stability boundary."""
        r = self.rates
        self.learning_rate = float(learning_rate)
        pos = r.positions(self.learning_rate)
        self.unstable = {}
        for n, (a, rho) in pos.items():
            self.markers[n].set_offsets(np.column_stack([a, np.minimum(rho, 1.22)]))
            # open marks: the block's colour is the ring's or the square's (a square is
            # white inside: the star on it and the curve under it stay apart)
            self.markers[n].set_facecolors("white" if n else "none")
            self.markers[n].set_edgecolors(r.colors)
            bad = rho >= 1.0
            self.unstable[n] = bad
            self.unstable_marks[n].set_data(a[bad], np.minimum(rho[bad], 1.22))
        past = [
            f"{int(self.unstable[n].sum())} past {RULE_NAMES[n]}'s limit"
            for n in (False, True)
            if self.unstable[n].any()
        ]
        width = axes_size_inches(self.curve_ax)[0] * 72  # about
        self.curve_ax.set_title(
            fit(
                f"{len(r.labels)} blocks at lr={self.learning_rate:.3g}: "
                + (", ".join(past) if past else "all converge under both rules"),
                width,
                style.TITLE_SIZE,
            ),
            fontsize=style.TITLE_SIZE,
        )
        self._key()


def plot_block_rates(
    recording: Recording,
    surface: ShardedQuadratic,
    name: str = "w",
    *,
    learning_rate: float | None = None,
    ax: tuple[Axes, Axes] | None = None,
) -> Figure:
    """Every device block of a ``ShardedQuadratic`` recording on the convergence-rate
    curves of both momentum rules (x: ``lr * h``, the block's curvature times the
    learning rate; y: the spectral radius of the rule's iteration matrix), with the
    decay measured on each block (stars, at the recorded learning rate) and, beside,
    each block's error ``||w - target||`` over the updates. ``learning_rate`` places the
    blocks for another learning rate (default: the recorded one); blocks past a rule's
    stability boundary get a red x. Returns the ``Figure``.

    ``ax``: None (a new figure) or a pair ``(curve_ax, error_ax)``.
    """
    return draw_block_rates(recording, surface, name, learning_rate=learning_rate, ax=ax).figure


def draw_block_rates(
    recording: Recording,
    surface: ShardedQuadratic,
    name: str = "w",
    *,
    learning_rate: float | None = None,
    ax: tuple[Axes, Axes] | None = None,
) -> RatesView:
    """Like ``plot_block_rates`` but returns the ``RatesView``."""
    rates = block_rates(recording, surface, name)
    if ax is None:
        fig = headline(new_figure(FIGSIZE), rates_finding(rates, learning_rate), rates_settings(rates, surface))
        curve_ax, error_ax = fig.subplots(1, 2, width_ratios=[1.9, 1])
    else:
        curve_ax, error_ax = ax
    return RatesView(rates, curve_ax, error_ax, learning_rate)
