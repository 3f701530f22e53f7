"""The one error every view gives for a recording with no steps.

An empty recording is a valid value (it saves, loads and has a layout), but there is
nothing to draw: the views say so, and why that usually happens, instead of drawing an
empty figure that could pass for a run that did nothing::

    >>> from dtsgd_viz.views.core.empty import check_not_empty
    >>> check_not_empty([], label="momentum")
    Traceback (most recent call last):
    ...
    ValueError: Recording 'momentum' has no steps ([]): nothing was recorded, so there is nothing to draw...
"""

from __future__ import annotations

from collections.abc import Sized

WHY = (
    "This usually means one of: Recorder(every=k) with every=k larger than the number of "
    "updates run (only iterations that are multiples of k are recorded); or the Recorder "
    "was attached after the step function (tf.function) was traced, so that function "
    "never calls it: attach it first (SGD(..., hooks=[rec])) or re-trace the step (a new "
    "tf.function)."
)


def check_not_empty(recording: Sized, label: str | None = None) -> None:
    """Raise ``ValueError`` if ``recording`` holds no steps, naming it (``label``: its
    key in a dict of recordings; otherwise its repr says which recording it is)."""
    if len(recording):
        return
    which = "The recording" if label is None else f"Recording {label!r}"
    raise ValueError(f"{which} has no steps ({recording!r}): nothing was recorded, so there is nothing to draw. {WHY}")
