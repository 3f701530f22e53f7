"""Why momentum works, drawn on the real optimizer: on a quadratic the error splits along
the Hessian's eigenvectors, and each part (a *mode*) shrinks on its own, by the spectral
radius of its 2x2 iteration matrix per update (``dtsgd_viz.theory``).

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic(condition=10.0)
    >>> recs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9)}, steps=5)
    >>> fig = dtsgd_viz.plot_modes(recs, s)
    >>> [ax.get_label() for ax in fig.axes]
    ['mode:0', 'mode:1', 'rates']

One panel per eigenvector ``u_i`` (eigenvalue ``h_i``, ascending): ``|(p_k - p*) . u_i|``
for each recording over updates ``k`` (log scale), and dotted its envelope from theory
(``mode_envelope``: a bound the recorded curve never leaves and touches, shrinking by
``rho_i`` per update, ``rho_i`` the spectral radius at ``a = lr h_i``; near critical damping
the mode is ``(alpha + beta k) rho^k`` and so is the envelope). The last
panel: the rate of each recording's rule against ``a = lr h``, each eigenvalue marked.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ...theory import quadratic as theory
from ..core import style
from ..core.diverging import diverging_update
from ..core.empty import check_not_empty
from ..core.figure import fit, headline, new_figure
from ..core.log_ticks import use_log_ticks
from ..text.direct import label_ends
from .modes_rates import display_name as _display
from .modes_rates import draw_rates, subscript
from .modes_zoom import draw_zoom, zoom_mode

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from ...recording import Recording
    from ...theory.surfaces import Surface

__all__ = ["dash_word", "plot_modes", "mode_errors", "mode_envelope", "ModeData", "modes_data"]


# ---- pure -------------------------------------------------------------------------------


def mode_errors(path: ArrayLike, minimum: ArrayLike, eigenvectors: ArrayLike) -> np.ndarray:
    """``(n_steps + 1, n_modes)``: the error ``p_k - minimum`` projected on each
    eigenvector (columns of ``eigenvectors``), float64."""
    with np.errstate(invalid="ignore", over="ignore"):  # a diverged path: Inf/NaN, kept
        return (np.asarray(path, np.float64) - np.asarray(minimum, np.float64)) @ np.asarray(eigenvectors, np.float64)


def mode_envelope(e0: float, learning_rate: float, momentum: float, h: float, nesterov: bool, n: int) -> np.ndarray:
    """A bound ``env_k >= |e_k|`` for ``k = 0..n`` on the mode started at error ``e0``
    with zero velocity, which the mode touches: it shrinks by ``rho`` per update (times a
    factor linear in ``k`` near critical damping).

    With ``lambda_1`` the iteration matrix's eigenvalue of largest modulus ``rho`` and
    ``lambda_2`` the other, ``e_k = e0 lambda_1^k + beta d_k`` with
    ``beta = e_1 - e0 lambda_1`` and ``d_k = sum_{j<k} lambda_1^j lambda_2^(k-1-j)``
    (well conditioned at the double root, where ``d_k = k lambda^(k-1)``). The envelope
    is the smaller of two true bounds: ``|e0| rho^k + |beta| sum_{j<k} |lambda_1|^j
    |lambda_2|^(k-1-j)`` (exact for an over-damped mode, tight near critical damping)
    and ``|c_1| |lambda_1|^k + |c_2| |lambda_2|^k`` with ``e_k = c_1 lambda_1^k +
    c_2 lambda_2^k`` (for an oscillating mode ``2 |c_1| rho^k``, its amplitude).

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
    """Everything ``plot_modes`` draws, computed first: the Hessian's ``eigenvalues``
    (ascending) and ``eigenvectors`` (columns), and per recording key its ``errors``
    ``(n + 1, 2)``, ``envelopes`` ``(n + 1, 2)``, ``rates`` (one per mode), learning rate,
    momentum and rule."""

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
    """The per-mode errors, envelopes and rates of ``recordings`` (each a run of a 2-D
    parameter ``name`` on the quadratic ``surface``)."""
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
    """Refuse runs made on another surface: the loss recorded at update ``k`` (the loss
    at ``p_(k-1)``) must be ``surface.value_np`` there, up to float32 round-off."""
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


# ---- drawing ----------------------------------------------------------------------------


def plot_modes(
    recordings: Recording | dict[str, Recording],
    surface: Surface,
    *,
    name: str = "w",
    figsize: tuple[float, float] = style.MODES_SIZE,
    dpi: float = style.DPI,
) -> Figure:
    """Each Hessian eigenvector's error over updates, per recording, from the real
    recorded parameters (log scale), with its envelope from theory (``mode_envelope``); and,
    under them, each rule's rate against ``lr * h`` with the eigenvalues marked. Lines are
    named where they end; the headline says which run's slowest direction shrinks
    fastest. Returns a ``Figure``.

    Args:
      recordings: a ``Recording`` or ``{name: Recording}`` of runs on ``surface`` (as
        ``dtsgd_viz.run`` returns), every update recorded.
      surface: a quadratic with a ``hessian`` (``surfaces.RotatedQuadratic``).
    """
    data = modes_data(recordings, surface, name)
    looks = style.run_looks(list(data.errors))
    fig = new_figure(figsize, dpi)
    diverging = {key: diverging_update(rec) for key, rec in _as_dict(recordings).items()}
    body = headline(fig, _finding(data, diverging=diverging), _settings(data, surface))
    n_modes = len(data.eigenvalues)
    grid = body.add_gridspec(2, n_modes, height_ratios=[1.0, 0.9])
    axes = [body.add_subplot(grid[0, i]) for i in range(n_modes)]
    names = ["slow" if i == 0 else "fast" if i == n_modes - 1 else "" for i in range(n_modes)]
    for i, ax in enumerate(axes):
        _draw_mode(ax, data, i, names[i], looks)
    axes[0].set_ylabel("|(p_k − p*) · u|  (log scale)", fontsize=style.LABEL_SIZE)
    i = zoom_mode(data)
    if i is None:
        draw_rates(body.add_subplot(grid[1, :]), data, looks)
        return fig
    # runs a few hundredths apart on one direction: that band drawn again, zoomed, beside
    row = grid[1, :].subgridspec(1, 2, width_ratios=[1.7, 1.0], wspace=0.04)
    rates_ax, zoom_ax = body.add_subplot(row[0, 0]), body.add_subplot(row[0, 1])
    limits = draw_zoom(zoom_ax, data, looks, i)
    draw_rates(rates_ax, data, looks, zoom=limits)
    return fig


def _diverging_finding(worst, diverging) -> str:
    """The headline of runs some of which diverge (rate >= 1 on some direction): each
    diverging run with the update it diverges from (``diverging_update``; its rate when
    the run is too short to show it) and the fastest of the others."""
    gone = [k for k in sorted(worst, key=worst.get) if worst[k] >= 1.0]
    left = [k for k in sorted(worst, key=worst.get) if worst[k] < 1.0]
    every = len(gone) > 1 and not left
    parts = []
    for k in gone:
        at = diverging.get(k)
        when = f" from update {at}" if at is not None else ""
        verb = "" if every else " diverges"
        parts.append(f"{_display(k)}{verb}{when} (ρ = {worst[k]:.3g})")
    if every:  # one verb for them all
        who = "Both runs diverge" if len(gone) == 2 else "Every run diverges"
        ats = {diverging.get(k) for k in gone}
        if len(ats) == 1 and None not in ats:  # from one update: said once
            return f"{who} from update {ats.pop()}: " + ", ".join(f"{_display(k)} ρ = {worst[k]:.3g}" for k in gone)
        return f"{who}: " + ", ".join(parts)
    if left:
        verb = "converges fastest" if len(left) > 1 else "converges"
        parts.append(f"{_display(left[0])} {verb} (ρ = {worst[left[0]]:.3f})")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:]


def _finding(data, width_points=style.WIDTH * 72.0, diverging=None) -> str:
    """Which run's slowest direction shrinks fastest, by its rate per update: the fullest
    wording that fits one headline line ``width_points`` wide; runs whose rate is 1 or
    more are named as diverging (``diverging``: run -> the update it diverges from)."""
    worst = {k: float(np.max(r)) for k, r in data.rates.items()}
    if any(v >= 1.0 for v in worst.values()):
        return _diverging_finding(worst, diverging or {})
    slowest = {int(np.argmax(r)) for r in data.rates.values()}
    ranked = sorted(worst, key=worst.__getitem__)
    best = ranked[0]
    best = best[:1].upper() + best[1:]  # the sentence's first word
    rho = worst[ranked[0]]
    if len(ranked) == 1:
        return f"{best}: the error shrinks by ρ = {rho:.3f} per update along its slowest direction"
    others = ", ".join(f"{k} {worst[k]:.3f}" for k in ranked[1:])
    where = f"h{subscript(slowest.pop() + 1)}" if len(slowest) == 1 else "its slowest direction"
    candidates = [
        f"{best} converges fastest: its slowest direction shrinks by ρ = {rho:.3f} per update ({others})",
        f"{best} converges fastest: rate ρ = {rho:.3f} per update on {where} ({others})",
        f"{best} converges fastest: rate ρ = {rho:.3f} on {where} ({others})",
    ]
    for text in candidates:
        if "\n" not in fit(text, width_points, style.SUPTITLE_SIZE, bold=True):
            return text
    return candidates[-1]


def _settings(data, surface) -> str:
    label = getattr(surface, "label", type(surface).__name__)
    lrs = {lr for lr, _, _ in data.settings.values()}
    mus = {mu for _, mu, _ in data.settings.values() if mu}
    hp = ", ".join(([f"lr {min(lrs):g}"] if len(lrs) == 1 else []) + ([f"μ {min(mus):.3g}"] if len(mus) == 1 else []))
    envelope = dash_word(style.ROLE_LOOKS["envelope"].ls)
    return " · ".join(
        p
        for p in (
            f"real DTensor SGD on the {label}",
            hp,
            f"lines: the recorded runs; {envelope}, in each run's colour: its bound ∝ ρᵏ from theory",
        )
        if p
    )


def dash_word(ls: object) -> str:
    """``solid``, ``dotted`` (dashes no longer than 1.5 line widths) or ``dashed`` for a
    matplotlib line style.

    >>> [dash_word(ls) for ls in ("-", ":", "--", (0, (1.0, 1.3)), (0, (4.0, 1.6)))]
    ['solid', 'dotted', 'dashed', 'dotted', 'dashed']
    """
    if ls in ("-", "solid"):
        return "solid"
    if ls in (":", "dotted"):
        return "dotted"
    if isinstance(ls, tuple) and ls[1] and max(ls[1][::2]) <= 1.5:
        return "dotted"
    return "dashed"


def _draw_mode(ax, data, i, name, looks):
    """Mode ``i``: each run's recorded error along its eigenvector in the run's look, the
    envelope dotted in the run's colour, each run named where its line ends."""
    ax.set_label(f"mode:{i}")
    h = data.eigenvalues[i]
    envelope = style.ROLE_LOOKS["envelope"]
    floor, ends = np.inf, []
    for key, e in data.errors.items():
        look = looks[key]
        k = np.arange(len(e))
        err = np.abs(e[:, i])
        shown = np.where(np.isfinite(err) & (err > 0), err, np.nan)
        ax.plot(k, shown, **look.line(), gid=f"mode:{i}:{key}", label=f"{key} (recorded)")
        env = data.envelopes[key][:, i]
        ax.plot(k, np.where(env > 0, env, np.nan), **envelope.line(look.color), alpha=0.9, gid=f"envelope:{i}:{key}")
        if np.isfinite(shown).any():
            floor = min(floor, np.nanmin(shown))
        ends.append((key, k, shown, look.color))
    ax.set_yscale("log")
    use_log_ticks(ax.yaxis)  # the one log tick format (core.log_ticks)
    if np.isfinite(floor):  # float32 round-off at the bottom is not the story
        top = max(float(np.nanmax(np.abs(e[0, i]))) for e in data.errors.values())
        if any(float(np.max(r)) >= 1.0 for r in data.rates.values()):
            # a diverging run grows off the start's scale: the axis reaches its largest error
            errs = np.concatenate([np.abs(e[:, i]) for e in data.errors.values()])
            grown = errs[np.isfinite(errs)]
            ax.set_ylim(
                max(floor / 2, 1e-6 * top),  # the converging runs still on it
                3 * max(top, float(grown.max()) if grown.size else top),
            )
        else:
            ax.set_ylim(max(floor / 2, 1e-6 * top), 3 * top)
    low = ax.get_ylim()[0]
    on_chart, gone = [], []  # each name where its line last shows
    n = max((len(k) for _, k, _, _ in ends), default=1)
    for key, k, shown, color in ends:
        j = np.flatnonzero(np.isfinite(shown) & (shown >= low))
        if j.size and k[j[-1]] >= 0.15 * (n - 1):
            on_chart.append((_display(key), k[j[-1]], shown[j[-1]], color))
        elif j.size:  # gone to round-off within the first updates: one note, not names at 0
            gone.append((key, int(k[j[-1]]) + 1))
    u = data.eigenvectors[:, i]
    ax.set_title(
        f"{name} direction u{subscript(i + 1)} = ({u[0]:.2f}, {u[1]:.2f}), h = {h:g}".strip(), fontsize=style.TITLE_SIZE
    )
    ax.set_xlabel("update k", fontsize=style.LABEL_SIZE)
    ax.tick_params(labelsize=style.TICK_SIZE)
    ax.grid(True, which="major", color="0.9", lw=0.6)
    label_ends(ax, on_chart)
    if gone:
        _note_gone(ax, i, gone, ends, looks, low)
    _name_hidden_envelopes(ax, i, data, looks)


def _note_gone(ax, i, gone, ends, looks, low):
    """Runs gone below the axis within the first updates: each line drawn on down to the
    axis' bottom where it leaves it (a plunge, not a sliver ending mid-air), and one note
    beside the plunges, its arrow at them."""
    series = {key: (k, shown) for key, k, shown, _ in ends}
    for key, u in gone:
        k, shown = series[key]
        j = u - 1  # the last update still on the axis
        ax.plot([k[j], k[min(u, len(k) - 1)]], [shown[j], low / 30.0], **looks[key].line(), gid=f"plunge:{i}:{key}")
    names = " and ".join(_display(key) for key, _ in gone)
    last = max(u for _, u in gone)
    n = max(len(k) for k, _ in series.values())
    ax.annotate(
        f"{names}: below {low:.0e} within {last} update{'s' * (last > 1)}",
        xy=(last + 0.6, low * 3.0),
        xytext=(last + 0.06 * (n - 1), low * 3.0),
        ha="left",
        va="center",
        fontsize=style.NOTE_SIZE,
        color="0.25",
        gid=f"gone:{i}",
        arrowprops=dict(arrowstyle="->", color="0.25", lw=0.9, shrinkA=2, shrinkB=0),
    )


def _name_hidden_envelopes(ax, i, data, looks, near=0.04):
    """A run's dotted envelope lying on another run's line (within ``near`` decades, about 3 px
    at a notebook's size, over nearly all of it: plain's and momentum's bounds along plain's line on the slow
    direction) cannot be seen there: a note above the line says whose bound runs on it."""
    for key, env in data.envelopes.items():
        env = env[:, i]
        for other, e in data.errors.items():
            if other == key:
                continue
            line = np.abs(e[:, i])
            with np.errstate(divide="ignore", invalid="ignore"):
                off = np.abs(np.log10(env[1:]) - np.log10(line[1:]))
            if not np.isfinite(off).all() or np.mean(off < near) < 0.9:
                continue
            n = len(line) - 1
            if n < 20:  # too short a run for a note over its line
                break
            k = int(0.62 * n)
            own = (
                "its own bound\nand "
                if np.max(np.abs(np.log10(data.envelopes[other][1:, i]) - np.log10(line[1:]))) < near
                else ""
            )
            ax.annotate(
                f"on {_display(other)}'s line: {own}{_display(key)}'s (dotted),\nwhich {_display(key)}'s peaks touch",
                xy=(k, line[k]),
                xytext=(0.32 * n, ax.get_ylim()[1] / 1.5),
                ha="left",
                va="top",  # under the top
                fontsize=style.NOTE_SIZE,
                color=looks[key].color,
                gid=f"hidden-envelope:{i}:{key}",
                arrowprops=dict(arrowstyle="-", color=looks[key].color, lw=0.9, shrinkA=1, shrinkB=1),
            )
            break
