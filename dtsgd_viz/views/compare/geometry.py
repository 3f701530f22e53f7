"""What ``plot_compare`` draws, in numpy: losses, parameter gaps, and ``compare_findings``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import numpy as np

from ..core.empty import check_not_empty, check_same_layout

if TYPE_CHECKING:
    from ...recording.recording import Recording

GAP_FLOOR = 1e-6  # a relative gap below this everywhere: the runs follow one path


def display_name(name: str) -> str:
    """A run's name as figures and printouts write it: a rule's as ``rule_name`` does, any other as given.

    >>> display_name("nesterov (default)"), display_name("momentum"), display_name("my run")
    ('Nesterov (default)', 'momentum', 'my run')
    """
    from ..core.style import rule_of
    from ..paths.geometry import RULE_NAMES

    rule = rule_of(name)
    if rule is None or not name.lower().startswith(rule):
        return name
    return RULE_NAMES[rule] + name[len(rule) :]


@dataclasses.dataclass(frozen=True)
class CompareData:
    names: tuple[str, ...]
    variables: tuple[str, ...]
    updates: np.ndarray  # (n,) the recorded updates (recording.steps)
    losses: dict[str, np.ndarray | None]  # run -> (n,) loss after updates - 1, or None
    gaps: dict[str, np.ndarray] | None  # run (not the first) -> (n,) relative gap, all variables
    variable_gaps: dict[str, dict[str, np.ndarray]] | None  # run -> variable -> (n,)
    diverged_at: dict[str, int | None]  # run -> its first update with NaN/Inf


@dataclasses.dataclass(frozen=True)
class Findings:
    """The numbers a comparison states (``compare_findings``); ``str()`` reads them."""

    names: tuple[str, ...]
    tail: int  # the losses' mean is over the last ``tail`` updates
    final_loss: dict[str, float | None]  # run -> mean loss over the tail
    lowest: str | None  # the run with the lowest tail loss
    highest: str | None  # the run with the highest
    ratio: float | None  # the highest tail loss over the lowest
    gap: dict[str, tuple[float, int]] | None  # run -> (largest relative gap, at update)
    variable_gap: dict[str, dict[str, tuple[float, int]]] | None  # run -> variable -> the same
    same_path: tuple[str, ...]  # runs whose parameters stay within GAP_FLOOR of the first's
    diverged_at: dict[str, int | None]

    def headline(self) -> str:
        """The figure's title: which run ends lowest, by how much, and the largest gap."""
        parts = []
        if self.lowest is not None and self.ratio is not None:
            if self.ratio < 1.0005:
                parts.append(f"the runs end at the same loss ({self.final_loss[self.lowest]:.3g})")
            else:
                parts.append(f"{display_name(self.lowest)} ends {_below(self.ratio)} {display_name(str(self.highest))}")
        diverged = [n for n in self.names if self.diverged_at.get(n) is not None]
        for name in diverged:
            parts.append(f"{display_name(name)} diverges at update {self.diverged_at[name]}")
        if self.same_path:
            same = " and ".join(map(display_name, self.same_path))
            parts.append(f"{same} follow{'s' if len(self.same_path) == 1 else ''} {display_name(self.names[0])}'s path")
        elif self.gap and not diverged:
            gap, at = max(self.gap.values(), key=lambda v: v[0])
            parts.append(f"parameters up to {percent_text(gap)} apart (update {at})")
        text = "; ".join(parts) if parts else "the runs compared"
        return "T" + text[1:] if text.startswith("the ") else text  # a run's name as display_name writes it

    def __str__(self) -> str:
        show, first = display_name, display_name(self.names[0])
        lines = [f"mean loss over the last {self.tail} update(s):"]
        for name in self.names:
            value = self.final_loss[name]
            lines.append(f"  {show(name)}: {'not recorded' if value is None else f'{value:.4g}'}")
        if self.ratio is not None and self.ratio < 1.0005:
            lines.append("the runs end at the same loss")
        elif self.ratio is not None and self.lowest is not None and self.highest is not None:
            lines.append(f"lowest: {show(self.lowest)}, {_below(self.ratio)} {show(self.highest)}")
        for run, (gap, at) in (self.gap or {}).items():
            if gap == 0:
                lines.append(f"{show(run)} vs {first}: identical parameters at every update")
                continue
            lines.append(f"{show(run)} vs {first}: parameters up to {percent_text(gap)} apart (after update {at})")
            for var, (g, a) in (self.variable_gap or {}).get(run, {}).items():
                lines.append(f"  {var}: {percent_text(g)} (after update {a})")
        for name in self.names:
            if self.diverged_at.get(name) is not None:
                lines.append(f"{show(name)}: NaN/Inf from update {self.diverged_at[name]}")
        return "\n".join(lines)


def percent_text(gap: float) -> str:
    """A relative gap as the figures and printouts write it:

    >>> percent_text(0.0), percent_text(0.0598), percent_text(0.42), percent_text(3e-6)
    ('0%', '5.98%', '42%', '3.0e-06 of the norm')
    """
    if gap == 0:
        return "0%"
    if gap < 1e-4:
        return f"{gap:.1e} of the norm"
    return f"{gap:.2%}" if gap < 0.1 else f"{gap:.0%}"


def _below(ratio: float) -> str:
    """How far the lowest loss is below the highest: ``"12% below"``, ``"3.1x below"``."""
    if ratio < 2:
        return f"{(1 - 1 / ratio):.0%} below" if ratio >= 1.005 else f"{(1 - 1 / ratio):.1%} below"
    return f"{ratio:.1f}x below" if ratio < 10 else f"{ratio:.0f}x below"


def check_runs(runs: dict[str, Recording]) -> tuple[tuple[str, ...], list[Recording]]:
    """``(names, recordings)`` of two or more comparable recordings, else an error naming what differs."""
    if not isinstance(runs, dict):
        raise TypeError(
            "plot_compare takes a dict {run name: Recording}, e.g. "
            "{'momentum': rec_a, 'nesterov': rec_b}. Received: "
            f"{type(runs).__name__}."
        )
    if len(runs) < 2:
        raise ValueError(f"plot_compare compares at least two runs. Received {len(runs)}: {list(runs)}.")
    names, recs = tuple(str(k) for k in runs), list(runs.values())
    for name, r in zip(names, recs):
        if not (hasattr(r, "steps") and hasattr(r, "shard_stats")):
            raise TypeError(f"Run {name!r} is a {type(r).__name__}, not a dtsgd_viz Recording.")
        check_not_empty(r, label=name)
    first, r0 = names[0], recs[0]
    for name, r in zip(names[1:], recs[1:]):
        if r.mesh != r0.mesh:
            raise ValueError(
                f"Runs {first!r} and {name!r} are on different meshes ({r0.mesh} "
                f"vs {r.mesh}): compare runs of one model on one mesh."
            )
        if tuple(r.variables) != tuple(r0.variables):
            raise ValueError(
                f"Runs {first!r} and {name!r} record different variables ({list(r0.variables)} vs {list(r.variables)})."
            )
        for v in r0.variables:
            check_same_layout({first: r0, name: r}, v, "Compare runs of one model on one mesh.")
        if not np.array_equal(r.steps, r0.steps):
            raise ValueError(
                f"Runs {first!r} and {name!r} record different updates ({_span(r0.steps)} vs "
                f"{_span(r.steps)}): record both with the same Recorder settings and number "
                "of updates."
            )
    return names, recs


def _span(steps: np.ndarray) -> str:
    return f"{len(steps)} updates, {steps[0]}..{steps[-1]}" if len(steps) else "none"


def compare_data(runs: dict[str, Recording], variable: str | None = None) -> CompareData:
    """The arrays ``plot_compare`` draws, from a dict ``{run name: Recording}``."""
    names, recs = check_runs(runs)
    r0 = recs[0]
    if variable is not None and variable not in r0.variables:
        raise ValueError(f"Unknown variable {variable!r}. The runs record: {list(r0.variables)}.")
    variables = tuple(r0.variables) if variable is None else (variable,)
    losses = {n: (None if r.loss is None else np.asarray(r.loss, np.float64)) for n, r in zip(names, recs)}
    gaps = variable_gaps = None
    if all(r.mode == "full" and "param" in r.kinds for r in recs):
        gaps, variable_gaps = {}, {}
        ref = {v: r0.global_values(v, "param").astype(np.float64).reshape(len(r0), -1) for v in variables}
        ref_sq = sum(np.sum(ref[v] ** 2, axis=1) for v in variables)
        for n, r in zip(names[1:], recs[1:]):
            diff_sq, variable_gaps[n] = 0.0, {}
            for v in variables:
                d = np.sum((r.global_values(v, "param").astype(np.float64).reshape(len(r), -1) - ref[v]) ** 2, axis=1)
                variable_gaps[n][v] = _relative(d, np.sum(ref[v] ** 2, axis=1))
                diff_sq = diff_sq + d
            gaps[n] = _relative(diff_sq, ref_sq)
    diverged = {}
    for n, r in zip(names, recs):
        bad = r.nonfinite_steps
        diverged[n] = int(bad[0]) if len(bad) else None
    return CompareData(names, variables, np.asarray(r0.steps), losses, gaps, variable_gaps, diverged)


def _relative(diff_sq: np.ndarray | float, ref_sq: np.ndarray | float) -> np.ndarray:
    """``sqrt(diff_sq / ref_sq)`` (the absolute gap where the reference is 0)."""
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.sqrt(np.where(ref_sq > 0, diff_sq / np.where(ref_sq > 0, ref_sq, 1.0), diff_sq))


def tail_length(n: int) -> int:
    """The updates the final losses are averaged over: a fifth of the run, 1 to 10."""
    return max(1, min(10, n // 5))


def findings_of(data: CompareData) -> Findings:
    n = len(data.updates)
    tail = tail_length(n)
    final = {}
    for name in data.names:
        loss = data.losses[name]
        if loss is None:
            final[name] = None
            continue
        last = loss[-tail:]
        last = last[np.isfinite(last)]
        final[name] = float(last.mean()) if last.size else float("nan")
    known = {k: v for k, v in final.items() if v is not None and np.isfinite(v)}
    lowest = min(known, key=lambda k: known[k]) if len(known) >= 2 else None
    highest = max(known, key=lambda k: known[k]) if len(known) >= 2 else None
    ratio = None
    if lowest is not None and known[lowest] > 0:
        ratio = max(known.values()) / known[lowest]
    gap = variable_gap = None
    same = []
    if data.gaps is not None:
        assert data.variable_gaps is not None
        gap = {run: _largest(values, data.updates) for run, values in data.gaps.items()}
        variable_gap = {
            run: {v: _largest(g, data.updates) for v, g in by_var.items()} for run, by_var in data.variable_gaps.items()
        }
        same = [run for run, (g, _) in gap.items() if 0 <= g < GAP_FLOOR]
    return Findings(
        data.names, tail, final, lowest, highest, ratio, gap, variable_gap, tuple(same), dict(data.diverged_at)
    )


def _largest(values: np.ndarray, updates: np.ndarray) -> tuple[float, int]:
    """The largest finite value and its update (``(nan, 0)``: none finite)."""
    finite = np.isfinite(values)
    if not finite.any():
        return float("nan"), 0
    i = int(np.argmax(np.where(finite, values, -np.inf)))
    return float(values[i]), int(updates[i])


def compare_findings(runs: dict[str, Recording], variable: str | None = None) -> Findings:
    """The numbers ``plot_compare(runs, variable)`` states (``Findings``), to print beside it."""
    return findings_of(compare_data(runs, variable))
