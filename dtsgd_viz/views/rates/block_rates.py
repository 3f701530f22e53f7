"""Each ``ShardedQuadratic`` block at ``a = lr * h`` on both rules' rate curves, beside its error over the run."""

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

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike, DTypeLike

    from ...recording import Recording
    from ...theory.surfaces import ShardedQuadratic, Surface

RULE_NAMES = {False: "momentum", True: "Nesterov"}
RULE_LOOKS = {False: style.RULE_LOOKS["momentum"], True: style.RULE_LOOKS["nesterov"]}
RATE_FLOOR = -0.04  # the rate axis starts under 0: a block at rate 0 shows whole
TOP = 1.22  # a rate over this is drawn at it
ROOM = 1.15  # the x axis ends at ROOM x momentum's limit, just past its dotted line
# momentum's open square under Nesterov's triangle (rates near 0.95 at small lr·h), the measured star on top; s: pt²
MARKS = {False: dict(s=240, facecolors="none", linewidths=1.4, zorder=4), True: dict(s=90, linewidths=1.5, zorder=5)}
STAR_SIZE = 60
FIGSIZE = style.RATES_SIZE
NOISE_FLOOR = 100  # errors under NOISE_FLOOR * eps * max(||w_0 - w*||, ||w*||) are rounding
MIN_POINTS = 4  # a decay is fitted through at least this many usable errors


def measured_decay(
    errors: ArrayLike,
    steps: ArrayLike,
    dtype: DTypeLike = np.float32,
    scale: float | None = None,
    signed: ArrayLike | None = None,
) -> float:
    """Per-update decay: the largest root of ``c[k+1] = alpha c[k] + beta c[k-1]`` fitted to ``signed`` (or ``errors``);
    NaN under ``MIN_POINTS`` usable errors or on uneven steps.

    >>> round(measured_decay([1.0, 0.5, 0.25, 0.125], [0, 1, 2, 3]), 9)
    0.5
    >>> measured_decay([2.0, 1.8, 0.0, 0.0], [0, 1, 2, 3])
    nan
    """
    e = np.asarray(errors, np.float64)
    floor = NOISE_FLOOR * np.finfo(dtype).eps * max(e[0] if np.isfinite(e[0]) else 0.0, float(scale or 0.0))
    with np.errstate(invalid="ignore"):
        ok = np.isfinite(e) & (e > floor)
    idx = np.nonzero(ok)[0] if ok.all() else np.arange(int(np.argmin(ok)))  # usable up to the first that is not
    if len(idx) < MIN_POINTS:
        return float("nan")
    c = np.asarray(errors if signed is None else signed, np.float64)[idx]
    gaps = np.diff(np.asarray(steps, np.int64)[idx])
    if not np.all(gaps == gaps[0]):
        return float("nan")
    (alpha, beta), *_ = np.linalg.lstsq(np.column_stack([c[1:-1], c[:-2]]), c[2:], rcond=None)
    rho = float(np.max(np.abs(np.roots([1.0, -alpha, -beta]))))
    return rho ** (1.0 / int(gaps[0]))


@dataclasses.dataclass(frozen=True)
class BlockRates:
    """Per unique block of a ``ShardedQuadratic`` run: ``curvature``, ``errors`` (updates + 1, blocks), ``measured``."""

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
    floor: float = 0.0  # the errors' rounding floor: one ulp of the minimum per entry (0: none)
    diverging_from: int | None = None  # the update the run diverges from

    def positions(self, learning_rate: float | None = None) -> dict[bool, tuple[np.ndarray, np.ndarray]]:
        """``{nesterov: (a, rate)}`` of every block at ``learning_rate`` (default: the recorded one)."""
        a = float(self.learning_rate if learning_rate is None else learning_rate) * self.curvature
        return {n: (a, np.asarray(_rate(a, self.momentum, n), np.float64)) for n in (False, True)}


def block_rates(recording: Recording, surface: ShardedQuadratic, name: str = "w") -> BlockRates:
    """Everything ``plot_block_rates`` draws, from a full-mode recording of ``surface``."""
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
    blocks = [geometry.blocks[d[0]] for d in geometry.replica_groups]
    ell = (slice(None),)
    diffs = [(path[ell + b] - surface.target).reshape(len(path), -1) for b in blocks]
    errors = np.stack([np.sqrt(np.sum(e**2, axis=1)) for e in diffs], 1)
    updates = np.concatenate([[0], np.asarray(recording.steps)])
    dtype = recording.record(name).dtype
    scale = [float(np.sqrt(np.sum(np.broadcast_to(surface.target, path[(0,) + b].shape) ** 2))) for b in blocks]
    # each block's error along its starting direction (signed: the recurrence needs it)
    signed = [e @ e[0] / n0 if n0 > 0 else np.zeros(len(path)) for e, n0 in zip(diffs, errors[0])]
    g = range(len(blocks))
    measured = np.array([measured_decay(errors[:, i], updates, dtype, scale[i], signed[i]) for i in g])
    styles = style.block_styles(geometry)
    names = short_device_names(recording.shard_devices(name))
    return BlockRates(
        tuple(geometry.replica_groups),
        tuple(p.label for p in block_patches(geometry, names)),
        tuple(s[0] for s in styles),
        tuple(s[2] for s in styles),
        np.array([float(np.asarray(surface.curvature, np.float64)[b].flat[0]) for b in blocks]),
        updates,
        errors,
        measured,
        float(hp.learning_rate[0]),
        float(hp.momentum),
        bool(hp.nesterov),
        float(np.finfo(dtype).eps) * max(scale),  # one ulp per entry of a block: rounding
        diverging_update(recording),
    )


def rates_finding(rates: BlockRates, learning_rate: float | None = None) -> str:
    """The headline at ``learning_rate``: fastest and slowest blocks (or how many diverge) per rule, the run's first."""
    pos = rates.positions(learning_rate)
    run, other = RULE_NAMES[rates.nesterov], RULE_NAMES[not rates.nesterov]
    rho, rho_o, h = pos[rates.nesterov][1], pos[not rates.nesterov][1], rates.curvature
    bad = rho >= 1.0
    recorded = learning_rate is None or float(learning_rate) == rates.learning_rate
    at = rates.diverging_from if recorded else None
    when = f" from update {at}" if at is not None and bad.any() else ""
    if bad.all():
        return f"Under {run} every block diverges{when}: the learning rate is past its stability limit"
    o_bad = int(np.sum(rho_o >= 1.0))
    if o_bad:
        tail = f"; {o_bad} would diverge under {other}"
    elif np.ptp(rho_o) < 0.01:
        tail = f"; under {other} all {float(np.mean(rho_o)):.2f}"
    else:
        tail = f"; under {other} {rho_o.min():.2f} to {rho_o.max():.2f}"
    ok = np.flatnonzero(~bad)
    fast, slow = int(ok[np.argmin(rho[ok])]), int(ok[np.argmax(rho[ok])])
    if bad.any():
        return (
            f"Under {run} {int(bad.sum())} of {len(rho)} blocks diverge{when}; the fastest rate {rho[fast]:.2f}{tail}"
        )
    which = "steep" if h[fast] > h[slow] else "flat"
    return f"{run[:1].upper()}{run[1:]}: {which} blocks converge fastest ({rho[fast]:.2f} vs {rho[slow]:.2f}){tail}"


def rates_settings(rates: BlockRates, surface: Surface) -> str:
    label = getattr(surface, "label", type(surface).__name__)
    run = f"{RULE_NAMES[rates.nesterov]}, lr {rates.learning_rate:g}, μ {rates.momentum:g}"
    return f"real DTensor SGD, {run}, {int(rates.updates[-1])} updates · {label}"


def theory_gap(rates: BlockRates) -> float:
    """The largest gap between a block's measured decay and theory's rate (NaN: none measured)."""
    ok = np.isfinite(rates.measured)
    theory = rates.positions()[rates.nesterov][1]
    return float(np.max(np.abs(rates.measured[ok] - theory[ok]))) if ok.any() else float("nan")


def at_floor(errors: ArrayLike, floor: float) -> np.ndarray:
    """``errors`` held at ``floor`` from the first that reaches it on (0: unchanged).

    >>> at_floor([1.0, 1e-3, 0.0, 2e-7, 5e-7], 3e-7).tolist()
    [1.0, 0.001, 3e-07, 3e-07, 3e-07]
    """
    e = np.asarray(errors, np.float64).copy()
    if floor > 0:
        hit = np.flatnonzero(np.isfinite(e) & (e <= floor))
        if hit.size:
            e[hit[0] :] = floor
    return np.where(e > 0, e, np.nan)


def floor_text(floor: float) -> str:
    """The words on the shaded rounding floor.

    >>> floor_text(3.37e-7)
    'float32 round-off (below 3e-7)'
    """
    mantissa, exponent = f"{floor:.0e}".split("e")
    return f"float32 round-off (below {mantissa}e{int(exponent)})"


class RatesView:
    """The figure's artists; ``lr_range``: the learning rates the x axis must hold (a slider's)."""

    def __init__(
        self,
        rates: BlockRates,
        curve_ax: Axes,
        error_ax: Axes,
        learning_rate: float | None = None,
        lr_range: tuple[float, float] | None = None,
    ):
        self.rates, self.curve_ax, self.error_ax = rates, curve_ax, error_ax
        r, ax = rates, curve_ax
        self.figure = root_figure(curve_ax)
        self.learning_rate = r.learning_rate if learning_rate is None else float(learning_rate)
        a_rec = r.learning_rate * r.curvature
        lr_lo, lr_hi = lr_range or (r.learning_rate, r.learning_rate)
        self.boundaries = {n: float(convergence_boundary(r.momentum, 1.0, n)) for n in (False, True)}
        hi = max(ROOM * self.boundaries[False], 1.5 * lr_hi * r.curvature.max())
        lo = min(a_rec.min(), lr_lo * r.curvature.min()) / 1.6
        grid = np.geomspace(lo, hi, 600)
        self.markers = {}
        for n in (False, True):
            name, look = RULE_NAMES[n], RULE_LOOKS[n]
            ax.plot(grid, _rate(grid, r.momentum, n), **look.line(), label=name, gid=f"curve-{name}")
            ax.axvline(self.boundaries[n], **style.ROLE_LOOKS["limit"].line(look.color), gid=f"boundary-{name}")
            mark: dict[str, Any] = {**MARKS[n], **({"facecolors": "white"} if n else {})}  # Nesterov's white inside
            self.markers[n] = ax.scatter([], [], marker=look.marker, gid=f"blocks-{name}", **mark)
        ax.axhline(1.0, **style.ROLE_LOOKS["stability"].line(), gid="stability-line")
        ok = np.isfinite(r.measured)
        self.measured_marks = ax.scatter(
            a_rec[ok],
            r.measured[ok],
            s=STAR_SIZE,
            marker="*",
            c=np.array(r.colors)[ok],
            edgecolors="black",
            linewidths=0.7,
            zorder=7,  # over both rules' marks
            gid="measured",
        )
        ax.set_xscale("log")
        ax.set_xlim(lo, hi)
        use_log_ticks(ax.xaxis)  # the one log tick format (core.log_ticks)
        if hi / lo < 100:  # under two decades matplotlib labels the minor ticks, crowded: 1-2-5
            from matplotlib.ticker import LogLocator

            ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.set_ylim(RATE_FLOOR, 1.25)
        ax.set_xlabel("lr · h  (learning rate × the block's curvature, log scale)", fontsize=style.LABEL_SIZE)
        ax.set_ylabel("rate: error factor per update (over 1: grows)", fontsize=style.LABEL_SIZE)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.grid(True, color="#E5E5E5", lw=0.6)
        self.set_learning_rate(self.learning_rate)
        self._key()
        self._draw_errors(error_ax)

    def _key(self) -> None:
        """The rate panel's legend (a block past a limit sits over the rate-1 line; the title counts them)."""
        from matplotlib.lines import Line2D

        ax, handles = self.curve_ax, []
        for n in (False, True):  # the curve with its blocks' mark; its limit dotted in its colour
            look, label = RULE_LOOKS[n], f"{RULE_NAMES[n]}, limit lr·h {self.boundaries[n]:.3g} (dotted)"
            handles.append(
                Line2D([], [], **look.line(), marker=look.marker, mfc="white", mec=look.color, ms=8, label=label)
            )
        gap = theory_gap(self.rates)
        star = "measured" + (f", within {max(gap, 1e-4):.1g} of theory" if np.isfinite(gap) else "")
        handles.append(Line2D([], [], ls="none", marker="*", ms=11, mfc="0.6", mec="black", label=star))
        # lower left: under the curves, which start near 1 at small lr·h
        legend = ax.legend(handles=handles, loc="lower left", fontsize=style.NOTE_SIZE, framealpha=0.9)
        legend.set_gid("rates-key")
        legend.set_zorder(10)

    def _draw_errors(self, ax: Axes) -> None:
        """Each block's error over the run, the rounding floor shaded, a key of the blocks at the right."""
        from matplotlib.transforms import blended_transform_factory

        r = self.rates
        self.error_lines = [
            ax.plot(r.updates, at_floor(r.errors[:, g], r.floor), color=r.colors[g], ls=r.linestyles[g], lw=1.6)[0]
            for g in range(len(r.labels))
        ]
        for g, line in enumerate(self.error_lines):
            line.set_gid(f"error-{g}")
        ax.set_yscale("log")
        use_log_ticks(ax.yaxis)
        finite = r.errors[np.isfinite(r.errors)]
        top = max(np.nanmax(r.errors[0]), float(finite.max()) if finite.size else 0.0)  # a diverging block's growth
        if r.floor > 0:
            ax.set_ylim(r.floor / 4.0, 2.5 * top)
            ax.axhspan(r.floor / 4.0, r.floor, color="#EFEFEF", lw=0, zorder=0.5, gid="floor")
            ax.text(
                0.03,
                r.floor / 2.0,
                floor_text(r.floor),
                transform=blended_transform_factory(ax.transAxes, ax.transData),
                va="center",
                fontsize=style.NOTE_SIZE,
                color="0.3",
                gid="floor-label",
            )
        ax.set_xlim(r.updates[0] - 0.02 * (r.updates[-1] - r.updates[0]), r.updates[-1])
        ax.set_xlabel("optimizer update", fontsize=style.LABEL_SIZE)
        ax.set_ylabel("distance from the minimum on the block", fontsize=style.LABEL_SIZE)
        ax.tick_params(labelsize=style.TICK_SIZE)
        ax.set_title(f"Each block's error over the {RULE_NAMES[r.nesterov]} run", fontsize=style.TITLE_SIZE)
        ax.grid(True, color="#E5E5E5", lw=0.6)
        labels = [f"{label} h={h:.2g}" for label, h in zip(r.labels, r.curvature)]
        at = {"loc": "center left", "bbox_to_anchor": (1.0, 0.5)}
        ax.legend(self.error_lines, labels, **at, frameon=False, fontsize=style.NOTE_SIZE).set_gid("error-key")

    def set_learning_rate(self, learning_rate: float) -> None:
        """Move every block along both curves to ``a = learning_rate * h``, in place."""
        r = self.rates
        self.learning_rate = float(learning_rate)
        self.unstable = {}
        for n, (a, rho) in r.positions(self.learning_rate).items():
            self.markers[n].set_offsets(np.column_stack([a, np.minimum(rho, TOP)]))
            self.markers[n].set_edgecolors(r.colors)
            self.unstable[n] = rho >= 1.0
        past = [
            f"{int(self.unstable[n].sum())} past {RULE_NAMES[n]}'s limit"
            for n in (False, True)
            if self.unstable[n].any()
        ]
        title = f"{len(r.labels)} blocks at lr={self.learning_rate:.3g}: " + (", ".join(past) or "none past a limit")
        width = axes_size_inches(self.curve_ax)[0] * 72
        self.curve_ax.set_title(fit(title, width, style.TITLE_SIZE), fontsize=style.TITLE_SIZE)


def plot_block_rates(
    recording: Recording, surface: ShardedQuadratic, name: str = "w", *, learning_rate: float | None = None
) -> Figure:
    """Every device block of a ``ShardedQuadratic`` recording on both rules' rate curves (x: ``lr * h``), measured
    decays as stars, each block's error beside; ``learning_rate`` places the blocks for another one."""
    return draw_block_rates(recording, surface, name, learning_rate=learning_rate).figure


def draw_block_rates(
    recording: Recording, surface: ShardedQuadratic, name: str = "w", *, learning_rate: float | None = None
) -> RatesView:
    """Like ``plot_block_rates`` but returns the ``RatesView``."""
    rates = block_rates(recording, surface, name)
    fig = headline(new_figure(FIGSIZE), rates_finding(rates, learning_rate), rates_settings(rates, surface))
    curve_ax, error_ax = fig.subplots(1, 2, width_ratios=[1.6, 1])
    return RatesView(rates, curve_ax, error_ax, learning_rate)
