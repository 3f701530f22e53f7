"""The one error every view gives for a recording with no steps (valid, but nothing to draw)::

>>> from dtsgd_viz.views.core.empty import check_not_empty
>>> check_not_empty([], label="momentum")
Traceback (most recent call last):
...
ValueError: Recording 'momentum' has no steps ([]): nothing was recorded, so there is nothing to draw...
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from typing import Any

WHY = (
    "This usually means one of: Recorder(every=k) with every=k larger than the number of "
    "updates run (only iterations that are multiples of k are recorded); or the Recorder "
    "was attached after the step function (tf.function) was traced, so that function "
    "never calls it: attach it first (SGD(..., hooks=[rec])) or re-trace the step (a new "
    "tf.function)."
)


def check_not_empty(recording: Sized, label: str | None = None) -> None:
    """Raise ``ValueError`` if ``recording`` holds no steps, naming it (``label``: its key in a dict of runs)."""
    if len(recording):
        return
    which = "The recording" if label is None else f"Recording {label!r}"
    raise ValueError(f"{which} has no steps ({recording!r}): nothing was recorded, so there is nothing to draw. {WHY}")


def check_same_layout(runs: Mapping[str, Any], variable: str, why: str) -> None:
    """Raise ``ValueError`` unless every run holds ``variable`` laid out as the first; ``why``: why views need it."""
    first_name, first = next(iter(runs.items()))
    for name, rec in runs.items():
        if variable not in rec.variables:
            raise ValueError(f"Unknown variable {variable!r} in run {name!r}. It has: {list(rec.variables)}.")
        if rec.shape(variable) != first.shape(variable) or rec.layout(variable) != first.layout(variable):
            raise ValueError(
                f"Runs {first_name!r} and {name!r} lay out {variable!r} differently: shape {first.shape(variable)} "
                f"as {first.layout(variable)} vs shape {rec.shape(variable)} as {rec.layout(variable)}. {why}"
            )


def check_runs(runs: Any, variable: str | None, why: str) -> tuple[str, ...]:
    """The variables to draw (``variable`` or all); ``ValueError`` unless ``runs`` holds alike, non-empty Recordings."""
    if not isinstance(runs, Mapping) or not runs:
        raise ValueError(
            f"runs must be a non-empty mapping of name -> Recording. Received: {type(runs).__name__} {runs!r}."
        )
    for name, rec in runs.items():
        if not hasattr(rec, "shard_values"):
            raise ValueError(f"Run {name!r} is not a Recording. Received: {type(rec).__name__}.")
        check_not_empty(rec, name)
    variables = tuple(next(iter(runs.values())).variables if variable is None else (variable,))
    for v in variables:
        check_same_layout(runs, v, why)
    return variables
