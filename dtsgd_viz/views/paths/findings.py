"""The numbers the path figures state: ``findings(runs, surface)``; ``print`` it beside the figures::

    >>> import dtsgd_viz
    >>> from dtsgd_viz import surfaces
    >>> s = surfaces.RotatedQuadratic()
    >>> runs = dtsgd_viz.run(s, {"momentum": dict(learning_rate=0.05, momentum=0.9),
    ...                          "nesterov": dict(learning_rate=0.05, momentum=0.9,
    ...                                           nesterov=True)}, steps=20)
    >>> f = dtsgd_viz.findings(runs, s)
    >>> f.window, f.ranking                 # the mean loss after 17..20 updates ranks them
    ((17, 20), ('nesterov', 'momentum'))
    >>> f.headline() == dtsgd_viz.plot_paths(runs, s).get_suptitle().rstrip("\\n").replace("\\n", " ")
    True

The loss after k updates is the surface at path point k (k = 0..N); without one ``recording.loss`` (``loss[i]``
after ``steps[i] - 1`` updates, k = 0..N - 1). Runs are compared by their mean loss over the last ``tail`` of those
(``compare.geometry.tail_length``), never at one point of a curve that may oscillate.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..compare.geometry import tail_length
from . import geometry as geo

if TYPE_CHECKING:
    from ...recording.recording import Recording
    from ...theory.surfaces.base import Surface
    from ..update.geometry import UpdateTerms
    from .scene import PathScene

__all__ = ["PathFindings", "findings", "findings_of", "times_text", "window_text", "LEVEL"]

LEVEL = 1.05  # the lowest two runs' mean losses within this factor: the runs end level


def times_text(f: float) -> str:
    """A ratio as the figures and the printout write it: ``"433×"``, ``"2.5×"``, ``"∞×"``."""
    return "∞×" if not np.isfinite(f) else f"{f:.0f}×" if f >= 10 else f"{f:.1f}×"


def window_text(window: tuple[int, int]) -> str:
    """``"mean loss over k = 33–40"`` (``k = 33–40`` never broken); one update: ``"loss after 40 updates"``."""
    a, b = window
    if a == b:
        return f"loss after {b} update{'s' if b != 1 else ''}"
    return f"mean loss over k\u00a0=\u00a0{a}–{b}"


def _loss_text(x: float | None) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.2e}"


@dataclasses.dataclass(frozen=True, eq=False)
class PathFindings:
    """What the path figures state (``findings``; ``str()`` prints it): the loss after ``last_k`` updates, the mean
    over ``window`` (``tail_loss``), its ``swing``, the ``ranking`` and ``times`` the lowest, the runs ``diverged``,
    where furthest ``apart``, ``step``'s ``terms`` and, with ``tol``, when each stays within it (``to_tolerance``)."""

    names: tuple[str, ...]
    from_surface: bool
    upto: int | None
    last_k: int
    final_loss: dict[str, float]
    tail: int
    window: tuple[int, int]
    tail_loss: dict[str, float]
    swing: dict[str, float]
    ranking: tuple[str, ...]
    times: dict[str, float]
    level: bool
    diverged: dict[str, int | None]
    apart: tuple[int, float] | None
    step: int | None
    terms: dict[str, UpdateTerms] | None
    tol: float | None = None
    to_tolerance: dict[str, int | None] | None = None

    @property
    def lowest(self) -> str | None:
        """The run with the lowest mean loss over ``window`` (None: no finite one)."""
        return self.ranking[0] if self.ranking else None

    def headline(self) -> str:
        """The title of ``plot_paths`` and ``animate``: the run with the lowest mean loss over ``window``, how many
        times below the next two (or that they are level) and which diverged, e.g.
        ``"Lowest mean loss over k = 51–60: Nesterov, 38× below plain, 948× below momentum"``."""
        name = geo.rule_name
        gone = [n for n in self.names if n in self.diverged]
        left = [
            name(n) + (f" diverged at update {self.diverged[n]}" if self.diverged[n] else " diverged") for n in gone
        ]
        tail = "; " + ", ".join(left) if gone else ""
        if not self.ranking:
            text = (", ".join(name(n) for n in gone) + " diverged") if gone else "The runs' paths"
            return _capital(text)
        best = self.ranking[0]
        low = self.tail_loss[best]
        said = window_text(self.window)  # the window ends at the last update counted (upto)
        if len(self.ranking) == 1:
            text = f"{said}: {name(best)} at {low:.2g}"
        elif self.level and any(self.times[n] > LEVEL for n in self.ranking):
            level = [n for n in self.ranking if self.times[n] <= LEVEL]
            below = ", ".join(f"{times_text(self.times[n])} below {name(n)}" for n in self.ranking[len(level) :][:2])
            text = f"lowest {said}: {' and '.join(name(n) for n in level)} level at {low:.2g}, {below}"
        elif self.level:
            text = f"{said}: the runs level at {low:.2g}"  # where they differ most: the path panel's title
        else:
            below = ", ".join(f"{times_text(self.times[n])} below {name(n)}" for n in self.ranking[1:3])
            text = f"lowest {said}: {name(best)}, {below}"
        return _capital(text + tail)

    def update_headline(self) -> str | None:
        """``plot_update``'s headline at ``step`` (``update_finding``); None without ``terms``."""
        if not self.terms:
            return None
        from ..update.words import update_finding

        assert self.step is not None  # the terms are of update ``step``
        return update_finding(self.terms, self.step)

    def update_lines(self) -> list[str]:
        """``plot_update``'s headline and each run's term and step lengths at ``step`` ([] without ``terms``)."""
        said = self.update_headline()
        if not said:
            return []
        from ..update.geometry import TERM_SHORT

        assert self.terms is not None
        name = geo.rule_name
        width = max(8, *(len(name(n)) for n in self.names)) + 2
        lines = [said]
        for n, t in self.terms.items():
            parts = [f"{TERM_SHORT.get(k, k)} {float(np.linalg.norm(v)):.3g}" for k, v in t.terms]
            lines.append(
                "  " + name(n).ljust(width) + "  ".join(parts) + f"  step {float(np.linalg.norm(t.total)):.3g}"
            )
        return lines

    def __str__(self) -> str:
        name = geo.rule_name
        width = max(8, *(len(name(n)) for n in self.names)) + 2
        source = (
            "from the surface at the recorded parameters"
            if self.from_surface
            else "as recorded (recording.loss[i]: after steps[i] - 1 updates)"
        )
        a, b = self.window
        cols = [f"k = {self.last_k}", f"mean k = {a}" if a == b else f"mean k = {a}–{b}", "max/min there"]
        if self.tol is not None:
            cols.append(f"within {self.tol:g}")
        lines = [f"loss after k updates, {source}:", "  " + "run".ljust(width) + "".join(c.rjust(16) for c in cols)]
        for n in self.names:
            row = [
                _loss_text(self.final_loss.get(n)),
                _loss_text(self.tail_loss.get(n)),
                "—" if not np.isfinite(self.swing.get(n, np.nan)) else times_text(self.swing[n]),
            ]
            if self.tol is not None:
                assert self.to_tolerance is not None  # computed with ``tol``
                k = self.to_tolerance.get(n)
                row.append("never" if k is None else f"from k = {k}")
            lines.append("  " + name(n).ljust(width) + "".join(c.rjust(16) for c in row))
        lines.append(self.headline())
        if self.apart is not None:
            u, d = self.apart
            lines.append(
                f"paths furthest apart after update {u}: {d:.3g} apart"
                if len(self.names) > 1
                else f"longest update: update {u}, {d:.3g} long"
            )
        lines += self.update_lines()
        return "\n".join(lines)


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def findings(
    runs: Recording | Mapping[str, Recording],
    surface: Surface | None = None,
    *,
    name: str | None = None,
    step: int | None = None,
    upto: int | None = None,
    tol: float | None = None,
) -> PathFindings:
    """The numbers ``plot_paths``, ``animate``, ``PathExplorer`` and ``plot_update`` state.

    ``surface``: the loss after k updates is its value at the recorded parameters (None: the recorded loss).
    ``step``: the update taken apart (None: where the runs are furthest apart); ``upto``: only the first ``upto``
    updates; ``tol``: also when each run's loss stays within ``tol`` of the minimum.
    """
    from .scene import _as_dict, build_scene

    if surface is not None:
        return findings_of(build_scene(runs, surface, name), step=step, upto=upto, tol=tol)
    recordings = _as_dict(runs)
    if name is not None or len(set.intersection(*(set(r.variables) for r in recordings.values()))) == 1:
        name = geo.select_variable(recordings, name)  # else no variable: the losses only
    losses: dict[str, tuple[np.ndarray, np.ndarray, bool]] = {}
    diverged: dict[str, int | None] = {}
    for key, r in recordings.items():
        loss = r.loss
        losses[key] = (
            np.asarray(r.steps, np.int64) - 1,
            np.full(len(r), np.nan) if loss is None else np.asarray(loss, np.float64),
            False,
        )
        bad = r.nonfinite_steps
        if len(bad):
            diverged[key] = int(bad[0])
    full = name is not None and all(r.mode == "full" and "param" in r.kinds for r in recordings.values())
    scene = types.SimpleNamespace(recordings=recordings, name=name, losses=losses, diverged=diverged, surface=None)
    return findings_of(scene, step=step, upto=upto, tol=tol, paths=full)


def findings_of(
    scene: PathScene | types.SimpleNamespace,
    *,
    step: int | None = None,
    upto: int | None = None,
    tol: float | None = None,
    paths: bool = True,
) -> PathFindings:
    """``findings`` of a ``PathScene``; ``paths``: the recorded parameters give ``apart`` and ``terms``."""
    from ..core.steps import resolve_update
    from ..update import geometry as upd
    from .scene import compared_paths, default_update

    names = tuple(scene.recordings)
    common = geo.common_steps(r.steps for r in scene.recordings.values())
    if upto is not None:
        upto = resolve_update(upto, common, none="all", held=f"the runs share {len(common)} updates")
    from_surface = any(s for _, _, s in scene.losses.values())
    last_k, final, tail_loss, swing, windows = None, {}, {}, {}, []
    gone = {k: u for k, u in scene.diverged.items() if upto is None or u is None or u <= upto}
    for key in names:
        ks, loss, surface_run = scene.losses[key]
        ks, loss = np.asarray(ks, np.int64), np.asarray(loss, np.float64)
        keep = ks <= (upto if upto is not None else (common[-1] if surface_run else common[-1] - 1))
        ks, loss = ks[keep], loss[keep]
        tail = tail_length(len(ks) - 1 if surface_run else len(ks))
        last_k = int(ks[-1]) if last_k is None and len(ks) else last_k
        final[key] = float(loss[-1]) if len(loss) else float("nan")
        window = loss[-tail:]
        windows.append((int(ks[-tail]), int(ks[-1]), tail) if len(ks) else (0, 0, tail))
        with np.errstate(invalid="ignore", over="ignore"):
            ok = window[np.isfinite(window)]
            tail_loss[key] = float(ok.mean()) if len(ok) == len(window) and len(ok) else float("nan")
            swing[key] = (
                float(ok.max() / ok.min()) if len(ok) == len(window) and len(ok) and ok.min() > 0 else float("nan")
            )
        unrecorded = not surface_run and scene.recordings[key].loss is None
        if not np.isfinite(tail_loss[key]) and key not in gone and not unrecorded:
            bad = np.flatnonzero(~np.isfinite(loss))
            gone[key] = int(ks[bad[0]]) if len(bad) else None
    assert last_k is not None  # every run keeps k = last_k at least
    a, b, tail = windows[0]
    ranking = tuple(
        sorted(
            (k for k in names if k not in gone and np.isfinite(tail_loss[k]) and tail_loss[k] >= 0),
            key=lambda k: tail_loss[k],
        )
    )
    low = tail_loss[ranking[0]] if ranking else np.nan
    times = {k: (tail_loss[k] / low if low > 0 else np.inf) for k in ranking}
    level = len(ranking) >= 2 and times[ranking[1]] <= LEVEL
    apart = at = terms = None
    if paths and scene.name is not None:
        u = default_update(scene, upto)
        if u is not None:
            i = int(np.searchsorted(common, u))
            d = geo.run_distances(compared_paths(scene))
            apart = (int(u), float(d[i]) if i < len(d) else float("nan"))
        at = apart[0] if step is None and apart is not None else step
        if at is not None:
            at = geo.check_step(at, {k: r.steps for k, r in scene.recordings.items()})
            assert at is not None
            index = {k: geo.step_index(r.steps, at) for k, r in scene.recordings.items()}
            if all(upd.why_no_arrows(r, index[k]) is None for k, r in scene.recordings.items()):
                terms = {k: upd.decompose_update(r, scene.name, index[k]) for k, r in scene.recordings.items()}
    to_tol = None
    if tol is not None:
        from ...theory.convergence import steps_to_tolerance

        floor = float(getattr(scene.surface, "min_value", 0.0)) if scene.surface is not None else 0.0
        to_tol = {}
        for key in names:
            ks, loss, _ = scene.losses[key]
            keep = np.asarray(ks) <= last_k
            k = int(steps_to_tolerance(np.asarray(loss, np.float64)[keep], floor, float(tol)))
            to_tol[key] = None if k < 0 else int(np.asarray(ks)[keep][k])
    return PathFindings(
        names,
        from_surface,
        upto,
        last_k,
        final,
        tail,
        (a, b),
        tail_loss,
        swing,
        ranking,
        times,
        level,
        gone,
        apart,
        at,
        terms,
        None if tol is None else float(tol),
        to_tol,
    )
