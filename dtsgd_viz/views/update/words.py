"""The words of ``plot_update``'s headline (``update_finding``)."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from ..paths import geometry as geo
from . import geometry as upd

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["update_finding"]


def _times(f: float) -> str:  # paths.findings.times_text's words (importing it would make a cycle)
    return "∞×" if not np.isfinite(f) else f"{f:.0f}×" if f >= 9.5 else f"{f:.1f}×"


def update_finding(terms: Mapping[str, upd.UpdateTerms], update: int) -> str:
    """Which run's update is longest, by how much, how far the directions part; one run: what carries it.

    >>> from dtsgd_viz.views.update.geometry import UpdateTerms
    >>> t = lambda *v: UpdateTerms(2, 1, np.zeros(2), (("gradient", np.array(v)),), np.array(v))
    >>> update_finding({"a": t(3.0, 0.0), "b": t(0.0, 1.0)}, 2)
    "Update 2: a's step is 3.0× b's, 90° apart"
    >>> update_finding({"a": t(3.0, 0.0), "b": t(0.0, 1.0), "c": t(0.0, 0.5)}, 2)
    "Update 2: a's step is 3.0× b's and 6.0× c's, at 90° to both"
    >>> update_finding({"a": t(3.0, 0.0), "b": t(0.0, 1.0), "c": t(0.5, 0.0)}, 2)
    "Update 2: a's step is 3.0× b's and 6.0× c's, a's and b's 90° apart"
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
        return f"Update {int(update)}: {geo.rule_name(top)} steps {ok[top]:.3g}, {_carried(terms[top])}" + tail
    name = geo.rule_name
    others = [f"{'∞×' if not ok[k] > 0 else _times(ok[top] / ok[k])} {name(k)}'s" for k in ranked[1:]]
    text = f"Update {int(update)}: {name(top)}'s step is " + " and ".join(others)
    if min(ok.values()) > 0:  # the pair that parts most
        angles = {(a, b): _angle(terms[a].total, terms[b].total) for a, b in itertools.combinations(ranked, 2)}
        (a, b), angle = max(angles.items(), key=lambda kv: kv[1])
        if angle < 10:
            text += ", along the same line"
        elif len(ranked) == 2:
            text += f", {angle:.0f}° apart"
        elif a == top and all(abs(angles[(top, k)] - angle) < 5 for k in ranked[1:]):
            text += f", at {angle:.0f}° to " + ("both" if len(ranked) == 3 else "all the others")
        else:
            text += f", {name(a)}'s and {name(b)}'s {angle:.0f}° apart"
    return text + tail


def _carried(t: upd.UpdateTerms) -> str:
    """What carries one run's update: its larger term, and by how much."""
    sizes = [(k, float(np.linalg.norm(v))) for k, v in t.terms]
    if len(sizes) == 1:
        return "all of it the gradient term −lr·g"
    (k1, a), (k2, b) = sorted(sizes, key=lambda kv: -kv[1])[:2]
    return f"its {upd.TERM_SHORT[k1]} {_times(a / b if b > 0 else np.inf)} its {upd.TERM_SHORT[k2]}"


def _angle(u: ArrayLike, v: ArrayLike) -> float:
    """Degrees between ``u`` and ``v`` (0 if one is 0)."""
    u, v = np.asarray(u, np.float64).reshape(-1), np.asarray(v, np.float64).reshape(-1)
    n = float(np.linalg.norm(u) * np.linalg.norm(v))
    return float(np.degrees(np.arccos(np.clip(float(u @ v) / n, -1.0, 1.0)))) if n > 0 else 0.0
