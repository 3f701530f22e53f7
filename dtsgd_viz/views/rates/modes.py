"""Why momentum works: on a quadratic each eigenvector's part of the error (a *mode*) shrinks by its own rate.

>>> import dtsgd_viz
>>> s = dtsgd_viz.surfaces.RotatedQuadratic(condition=10.0)
>>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9)}, steps=5)
>>> fig = dtsgd_viz.plot_modes(recs, s)
>>> [ax.get_label() for ax in fig.axes]
['mode:0', 'mode:1', 'rates']
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import numpy as np

from ...theory import quadratic as theory
from ..compare.geometry import display_name
from ..core import style
from ..core.diverging import diverging_update
from ..core.empty import check_not_empty
from ..core.figure import headline, new_figure
from ..core.log_ticks import use_log_ticks

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from ...recording import Recording
    from ...theory.surfaces import Surface
    from ..core.style import Look


def mode_errors(path: ArrayLike, minimum: ArrayLike, eigenvectors: ArrayLike) -> np.ndarray:
    """``(n_steps + 1, n_modes)``: the error ``p_k - minimum`` on each eigenvector (column)."""
    with np.errstate(invalid="ignore", over="ignore"):  # a diverged path: Inf/NaN, kept
        return (np.asarray(path, np.float64) - np.asarray(minimum, np.float64)) @ np.asarray(eigenvectors, np.float64)


def mode_envelope(e0: float, learning_rate: float, momentum: float, h: float, nesterov: bool, n: int) -> np.ndarray:
    """A bound ``env_k >= |e_k|`` (k = 0..n) that the mode started at ``e0`` at rest touches: the smaller of
    ``|e0| rho^k + |beta| sum_{j<k} |l1|^j |l2|^(k-1-j)`` and ``|c1| |l1|^k + |c2| |l2|^k``, l1, l2 eig(``M``).

    >>> mode_envelope(2.0, 0.1, 0.0, 1.0, False, 3).round(6).tolist()   # plain SGD: 2 * 0.9^k
    [2.0, 1.8, 1.62, 1.458]
    """
    M = theory.iteration_matrix(learning_rate, momentum, h, nesterov)
    lam = np.linalg.eigvals(M).astype(np.complex128)
    lam = lam[np.argsort(-np.abs(lam), kind="stable")]
    r1, r2 = float(abs(lam[0])), float(abs(lam[1]))
    e0 = float(e0)
    e1 = float((M @ np.array([e0, 0.0]))[0])
    beta = e1 - e0 * lam[0]
    k = np.arange(n + 1)
    with np.errstate(over="ignore", invalid="ignore"):
        # S_k = sum_{j<k} r1^j r2^(k-1-j), by S_{k+1} = r1 S_k + r2^k (no cancellation)
        s = np.zeros(n + 1)
        p2 = 1.0
        for i in range(n):
            s[i + 1] = r1 * s[i] + p2
            p2 *= r2
        jordan = abs(e0) * r1**k + abs(beta) * s
        gap = lam[0] - lam[1]
        if abs(gap) > 1e-12 * max(r1, 1e-300):
            c2 = -beta / gap
            c1 = e0 - c2
            modal = abs(c1) * r1**k + abs(c2) * r2**k
            return np.fmin(jordan, modal)
    return jordan


@dataclasses.dataclass(frozen=True, eq=False)
class ModeData:
    """Everything ``plot_modes`` draws: the Hessian's eigenpairs and each run's modes."""

    eigenvalues: np.ndarray
    eigenvectors: np.ndarray
    errors: dict
    envelopes: dict
    rates: dict
    settings: dict  # key -> (learning_rate, momentum, nesterov)


def _as_dict(recordings) -> dict:
    if hasattr(recordings, "path") and hasattr(recordings, "steps"):
        return {"run": recordings}
    if isinstance(recordings, dict) and recordings and all(hasattr(r, "path") for r in recordings.values()):
        return dict(recordings)
    raise TypeError(
        "recordings must be a Recording or a non-empty dict {name: Recording}. "
        f"Received: {type(recordings).__name__}."
    )


def modes_data(recordings: Recording | dict[str, Recording], surface: Surface, name: str = "w") -> ModeData:
    """The per-mode errors, envelopes and rates of ``recordings`` on the quadratic ``surface``."""
    hessian = getattr(surface, "hessian", None)
    if hessian is None:
        raise ValueError(
            "plot_modes needs a quadratic surface with a Hessian (e.g. surfaces.RotatedQuadratic): "
            f"modes are its eigenvectors. Received: {type(surface).__name__}, which has no 'hessian'."
        )
    H = np.asarray(hessian, np.float64)
    recs = _as_dict(recordings)
    evals, evecs = np.linalg.eigh(H)
    minimum = np.asarray(surface.minimum, np.float64)[0]
    errors, envelopes, rates, settings = {}, {}, {}, {}
    for key, rec in recs.items():
        check_not_empty(rec, key)
        if name not in rec.variables:
            raise ValueError(f"Recording {key!r} has no variable {name!r}. Received variables: {list(rec.variables)}.")
        shape = tuple(rec.shape(name))
        if shape != H.shape[:1]:
            raise ValueError(
                f"plot_modes draws a {H.shape[0]}-D path on {type(surface).__name__}; recording "
                f"{key!r} holds {name!r} of shape {shape}. Allowed: shape {H.shape[:1]}."
            )
        if not np.array_equal(np.diff(rec.steps), np.ones(len(rec.steps) - 1)) or rec.steps[0] != 1:
            raise ValueError(
                f"Recording {key!r} must hold every update from the first (every=1) to "
                f"compare with rho^k. Received steps {rec.steps[:5].tolist()}..."
            )
        hp = rec.hyperparameters
        lrs = np.asarray(hp.learning_rate, np.float64).ravel()
        if lrs.size and not np.allclose(lrs, lrs[0]):
            raise ValueError(
                f"Recording {key!r} has a learning rate that changes; the modes' rates need a constant one."
            )
        lr = float(lrs[0]) if lrs.size else float("nan")
        mu = float(hp.applied_momentum if hp.applied_momentum is not None else hp.momentum)
        nesterov = bool(hp.nesterov)
        _check_same_surface(rec, key, surface, name)
        e = mode_errors(rec.path(name), minimum, evecs)
        errors[key] = e
        envelopes[key] = np.stack(
            [mode_envelope(e[0, i], lr, mu, h, nesterov, len(e) - 1) for i, h in enumerate(evals)], axis=1
        )
        rates[key] = np.asarray(theory.rate(lr * np.asarray(evals, np.float64), mu, nesterov), np.float64)
        settings[key] = (lr, mu, nesterov)
    return ModeData(evals, evecs, errors, envelopes, rates, settings)


def _check_same_surface(rec, key, surface, name):
    """Refuse runs made on another surface: the recorded losses must be ``surface.value_np``'s."""
    loss = rec.loss
    value_np = getattr(surface, "value_np", None)
    if loss is None or value_np is None:
        return
    path = rec.path(name).astype(np.float64)
    expected = np.asarray(value_np(path[: len(loss)]), np.float64)
    got = np.asarray(loss, np.float64)
    ok = np.isfinite(got) & np.isfinite(expected)
    if not ok.any():
        return
    with np.errstate(invalid="ignore", over="ignore"):  # a diverging run's huge losses
        scale = float(np.max(np.abs(expected[ok])))
        off = np.abs(got - expected) > 1e-3 * np.abs(expected) + 1e-5 * scale
    off &= ok
    if off.any():
        j = int(np.argmax(off))
        label = getattr(surface, "label", type(surface).__name__)
        raise ValueError(
            f"Recording {key!r} was not made on the {label} ({surface!r}): at update {int(rec.steps[j])} it "
            f"recorded loss {got[j]:.6g}, where this surface gives {expected[j]:.6g} "
            f"({int(off.sum())} of {int(ok.sum())} recorded losses differ). Pass the surface the run was "
            "made on."
        )


def _diverging_finding(worst: dict, diverging: dict) -> str:
    gone = [k for k in sorted(worst, key=worst.__getitem__) if worst[k] >= 1.0]
    left = [k for k in sorted(worst, key=worst.__getitem__) if worst[k] < 1.0]
    at = {k: f" from update {diverging[k]}" if diverging.get(k) is not None else "" for k in gone}
    text = "Runs that diverge: " + ", ".join(f"{display_name(k)} ρ = {worst[k]:.3g}{at[k]}" for k in gone)
    if left:
        text += f"; {display_name(left[0])} converges{' fastest' * (len(left) > 1)} (ρ = {worst[left[0]]:.3f})"
    return text


def subscript(i: int) -> str:
    """``i`` in subscript digits.

    >>> subscript(12)
    '₁₂'
    """
    return str(i).translate(str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉"))


def _finding(data: ModeData, diverging: dict | None = None) -> str:
    """Which run's slowest direction shrinks fastest, by its rate per update."""
    worst = {k: float(np.max(r)) for k, r in data.rates.items()}
    if any(v >= 1.0 for v in worst.values()):
        return _diverging_finding(worst, diverging or {})
    ranked = sorted(worst, key=worst.__getitem__)
    best = display_name(ranked[0])
    best = best[:1].upper() + best[1:]
    if len(ranked) == 1:
        return f"{best}: the error shrinks by ρ = {worst[ranked[0]]:.3f} per update along its slowest direction"
    slowest = {int(np.argmax(r)) for r in data.rates.values()}
    where = f"h{subscript(slowest.pop() + 1)}" if len(slowest) == 1 else "its slowest direction"
    others = ", ".join(f"{display_name(k)} {worst[k]:.3f}" for k in ranked[1:])
    return f"{best} converges fastest: rate ρ = {worst[ranked[0]]:.3f} on {where} ({others})"


def _settings(data: ModeData, surface: Surface) -> str:
    label = getattr(surface, "label", type(surface).__name__)
    lrs = {lr for lr, _, _ in data.settings.values()}
    mus = {mu for _, mu, _ in data.settings.values() if mu}
    hp = [f"lr {min(lrs):g}"] * (len(lrs) == 1) + [f"μ {min(mus):.3g}"] * (len(mus) == 1)
    return " · ".join([f"real DTensor SGD on the {label}", *hp])


def _mark(look: Look, j: int, n: int) -> dict:
    """Run ``j`` of ``n``'s mark: concentric, the first largest, open but the last."""
    filled = j == n - 1
    return dict(
        marker=look.marker or "o",
        ms=6.8 + 3.4 * (n - 1 - j if n > 1 else 1),
        color=look.color,
        mfc=look.color if filled else "none",
        mec="black" if filled else look.color,
        mew=0.8 if filled else 2.0,
    )


def zoom_mode(data: ModeData) -> int | None:
    """The slowest direction whose runs' rates differ by under ``ZOOM_SPREAD``, or None."""
    if len(data.rates) < 2:
        return None
    rates = np.array(list(data.rates.values()))  # (runs, modes)
    spread = np.ptp(rates, axis=0)
    ok = [i for i in range(rates.shape[1]) if 1e-4 < spread[i] < ZOOM_SPREAD and rates[:, i].min() > 0.05]
    return max(ok, key=lambda i: rates[:, i].max()) if ok else None


ZOOM_SPREAD = 0.08  # runs closer than this in rate on one direction get the zoom
OFF_SCALE = 1.04  # a rate past this is drawn as an arrow at it


def plot_modes(recordings: Recording | dict[str, Recording], surface: Surface, *, name: str = "w") -> Figure:
    """Each eigenvector's recorded error and theory's envelope; under them each rule's rate against ``lr * h``.

    Args:
      recordings: a ``Recording`` or ``{name: Recording}`` (as ``dtsgd_viz.run`` returns), every update recorded.
      surface: a quadratic with a ``hessian`` (``surfaces.RotatedQuadratic``).
    """
    data = modes_data(recordings, surface, name)
    looks = style.run_looks(list(data.errors))
    diverging = {key: diverging_update(rec) for key, rec in _as_dict(recordings).items()}
    body = headline(new_figure(style.MODES_SIZE), _finding(data, diverging), _settings(data, surface))
    n_modes = len(data.eigenvalues)
    grid = body.add_gridspec(2, n_modes, height_ratios=[1.0, 0.9])
    axes = [body.add_subplot(grid[0, 0])]
    axes += [body.add_subplot(grid[0, i], sharey=axes[0]) for i in range(1, n_modes)]
    for i, ax in enumerate(axes):
        _draw_mode(ax, data, i, "flat" if i == 0 else "steep" if i == n_modes - 1 else "", looks)
    axes[0].set_ylabel("|(p_k − p*) · u|  (log scale)", fontsize=style.LABEL_SIZE)
    i = zoom_mode(data)
    if i is None:
        _draw_rates(body.add_subplot(grid[1, :]), data, looks)
        return body
    row = grid[1, :].subgridspec(1, 2, width_ratios=[1.7, 1.0], wspace=0.04)
    _draw_rates(body.add_subplot(row[0, 0]), data, looks)
    _draw_zoom(body.add_subplot(row[0, 1]), data, looks, i)
    return body


def _draw_mode(ax: Axes, data: ModeData, i: int, name: str, looks: dict) -> None:
    ax.set_label(f"mode:{i}")
    envelope = style.ROLE_LOOKS["envelope"]
    errs = [np.abs(e[:, i]) for e in data.errors.values()]
    finite = np.concatenate([e[np.isfinite(e) & (e > 0)] for e in errs])
    top = max(float(np.nanmax(np.abs(e[0]))) for e in data.errors.values())  # every mode's start
    if any(float(np.max(r)) >= 1.0 for r in data.rates.values()) and finite.size:  # a run grows off the start
        top = max(top, float(finite.max()))
    low = max(float(finite.min()) / 2, 1e-4 * top) if finite.size else 1e-4 * top
    ax.set_yscale("log")
    ax.set_ylim(low, 3 * top)
    for key, e in zip(data.errors, errs):
        look, k = looks[key], np.arange(len(e))
        shown = np.where(np.isfinite(e) & (e > 0), e, np.nan)
        ax.plot(k, shown, **look.line(), gid=f"mode:{i}:{key}", label=f"{key} (recorded)")
        env = data.envelopes[key][:, i]
        ax.plot(k, np.where(env > 0, env, np.nan), **envelope.line(look.color), alpha=0.9, gid=f"envelope:{i}:{key}")
        j = np.flatnonzero(np.isfinite(shown) & (shown >= low))
        if j.size and j[-1] < 0.15 * (len(e) - 1):  # gone within the first updates: on down to the axis' bottom
            u = min(j[-1] + 1, len(e) - 1)
            ax.plot([j[-1], u], [float(shown[j[-1]]), low / 30.0], **look.line(), gid=f"plunge:{i}:{key}")
    use_log_ticks(ax.yaxis)  # the one log tick format (core.log_ticks)
    u = data.eigenvectors[:, i]
    title = f"{name} direction u{subscript(i + 1)} = ({u[0]:.2f}, {u[1]:.2f}), h = {data.eigenvalues[i]:g}"
    ax.set_title(title.strip(), fontsize=style.TITLE_SIZE)
    ax.set_xlabel("update k", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(True, which="major", color="0.9", lw=0.6)
    if i == 0:
        _mode_key(ax, data, looks)


def _mode_key(ax: Axes, data: ModeData, looks: dict) -> None:
    """The direction panels' key: each run's line and the envelope (the zoom's key names the rate marks)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], **looks[key].line(), label=display_name(key)) for key in data.settings]
    handles.append(Line2D([], [], **style.ROLE_LOOKS["envelope"].line("0.3"), label="bound ∝ ρᵏ (theory)"))
    ax.legend(
        handles=handles, loc="lower left", fontsize=style.NOTE_SIZE, framealpha=0.9, handlelength=style.handle_length()
    ).set_gid("mark-key")


def _draw_rates(ax: Axes, data: ModeData, looks: dict) -> None:
    """Each run's rule: its rate against ``a = lr * h``, every eigenvalue marked on it."""
    ax.set_label("rates")
    a_marks = np.array([lr * h for lr, _, _ in data.settings.values() for h in data.eigenvalues])
    lo = a_marks.min() / 10 if np.all(a_marks > 0) else 1e-3
    # the curves' stable part in view, however far past the limits every run is
    lo = min(lo, 0.3 * min(float(theory.convergence_boundary(mu, 1.0, n)) for _, mu, n in data.settings.values()))
    drawn, n_runs = set(), len(data.settings)
    for j, (key, (lr, mu, nesterov)) in enumerate(data.settings.items()):
        a = np.geomspace(
            lo, max(float(theory.convergence_boundary(mu, 1.0, nesterov)) * 1.15, a_marks.max() * 1.2), 400
        )
        if (mu, nesterov) not in drawn:
            drawn.add((mu, nesterov))
            ax.plot(a, theory.rate(a, mu, nesterov), **looks[key].line(), gid=f"rate:{key}")
        mark = _mark(looks[key], j, n_runs)
        for i, h in enumerate(data.eigenvalues):
            rho = float(data.rates[key][i])
            up: dict[str, Any] = dict(marker="$\u2191$", ms=12, color=looks[key].color)  # off the scale: an arrow
            ax.plot(
                [lr * h],
                [min(rho, OFF_SCALE)],
                ls="none",
                **(up if rho > OFF_SCALE else mark),
                zorder=6 + 0.01 * j,
                clip_on=False,
                gid=f"mark:{i}:{key}",
            )
    tops = {}
    for lr in sorted({lr for lr, _, _ in data.settings.values()}):
        for i, h in enumerate(data.eigenvalues):
            ax.axvline(lr * h, **style.ROLE_LOOKS["guide"].line())
            tops.setdefault(float(lr * h), f"h{subscript(i + 1)}={h:g}")
    ax.axhline(1.0, **style.ROLE_LOOKS["stability"].line())
    ax.set_xscale("log")
    use_log_ticks(ax.xaxis)  # the one log tick format (core.log_ticks)
    ax.set_ylim(-0.06, 1.1)
    top = ax.secondary_xaxis("top")
    top.set_xticks(list(tops), labels=list(tops.values()), fontsize=style.NOTE_SIZE)
    top.tick_params(length=0, pad=1)
    ax.set_xlabel("lr·h  (learning rate × the direction's curvature h, log scale)", fontsize=style.LABEL_SIZE)
    ax.set_ylabel("rate ρ per update", fontsize=style.LABEL_SIZE)
    ax.set_title("Each rule's rate against lr·h; above 1 it diverges", fontsize=style.TITLE_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)


def _draw_zoom(ax: Axes, data: ModeData, looks: dict, i: int) -> None:
    from matplotlib.lines import Line2D

    ax.set_label("rate-zoom")
    h = float(data.eigenvalues[i])
    a_runs = np.array([lr * h for lr, _, _ in data.settings.values()])
    rates = np.array([data.rates[k][i] for k in data.settings])
    span = max(float(np.ptp(rates)), 0.02)
    a = np.linspace(a_runs.min() * 0.4, a_runs.max() * 1.7, 300)
    drawn, handles, n = set(), [], len(data.settings)
    for j, (key, (lr, mu, nesterov)) in enumerate(data.settings.items()):
        if (mu, nesterov) not in drawn:
            drawn.add((mu, nesterov))
            ax.plot(a, theory.rate(a, mu, nesterov), **looks[key].line(), gid=f"zoom-rate:{key}")
        mark = _mark(looks[key], j, n)
        ax.plot([lr * h], [data.rates[key][i]], ls="none", **mark, zorder=6 + 0.01 * j, gid=f"zoom-mark:{key}")
        label = f"{display_name(key)} {data.rates[key][i]:.3f}"
        handles.append(Line2D([], [], ls="none", **mark, label=label))
    ax.set_xlim(a[0], a[-1])
    ax.set_ylim(rates.min() - 0.5 * span, rates.max() + 1.6 * span)  # room over the runs for the legend
    ax.set_title(f"zoom on h{subscript(i + 1)} = {h:g}: each run's ρ", fontsize=style.TITLE_SIZE)
    ax.set_xlabel("lr·h", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(True, color="0.92", lw=0.6)
    ax.legend(handles=handles, loc="upper right", fontsize=style.NOTE_SIZE).set_gid("zoom-key")
