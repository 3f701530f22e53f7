"""One update's parameter, velocity slot and gradient, the same device blocks outlined on each."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core import style
from ..core.diverging import diverging_text
from ..core.figure import fit, headline, new_figure
from .findings import KIND_NOUNS, STATS_ONLY_TEXT, layout_text, times_text
from .geometry import as_image, axis_labels, flagged_steps, image_shape, settings_text, short_device_names, update_index
from .tensor_panel import TensorPanel, box_aspect

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording import Recording

__all__ = ["plot_update_shards", "magnitude_text"]


CAPTIONS = {
    "param": "parameter after update {}",
    "velocity": "velocity slot after update {}",
    "grad": "gradient of update {}",
}


def magnitude_text(largest: dict) -> str | None:
    """Each kind's max |value| (``largest``) against the first's; None for one kind or a 0 or non-finite one::

    >>> magnitude_text({"param": 0.5, "velocity": 0.005, "grad": 2.0})
    'velocity 100x smaller, gradient 4x larger than the parameter'
    """
    kinds = list(largest)
    if len(kinds) < 2 or not all(np.isfinite(v) and v > 0 for v in largest.values()):
        return None
    ref = largest[kinds[0]]
    said = [(KIND_NOUNS[k], ref / largest[k]) for k in kinds[1:]]
    items = ", ".join(f"{n} {times_text(max(f, 1 / f))} {'smaller' if f >= 1 else 'larger'}" for n, f in said)
    return f"{items} than the {KIND_NOUNS[kinds[0]]}"


def _shown_kinds(recording, kinds) -> list[str]:  # the recorded ones of ``kinds``; raises for unknown or none
    unknown = [k for k in kinds if k not in KIND_NOUNS]
    if unknown or not kinds:
        raise ValueError(f"kinds must be some of {list(KIND_NOUNS)}. Received: {list(kinds)}.")
    shown = [k for k in kinds if k in recording.kinds]
    if not shown:
        raise ValueError(f"None of the kinds {list(kinds)} was recorded (Recorder kinds={list(recording.kinds)}).")
    return shown


STACKED_HEIGHT = 1.4  # inches: a stacked panel's heatmap
STACKED_EXTRA = 1.0  # inches a stacked panel takes beside its heatmap (caption, chips, ticks)


def stacked(shape: Sequence[int]) -> bool:
    """Whether the panels of a (flat) tensor of ``shape`` stand one under another::

    >>> stacked((4, 16)), stacked((8, 8))
    (True, False)
    """
    aspect = box_aspect(shape)
    return aspect is not None and aspect < 0.7


def _figure_size(shape: Sequence[int], panels: int) -> tuple[float, float]:
    if stacked(shape):  # the headline, then each panel's heatmap and its extras
        return (style.WIDTH, 0.8 + panels * (STACKED_HEIGHT + STACKED_EXTRA))
    rows, cols = image_shape(shape)
    aspect = min(max(rows / cols, 0.15), 1.6)  # wide tensors: a short figure
    return (style.WIDTH * max(panels, 2) / 3, max(3.6, 2.9 + 2.5 * aspect))


def _suptitle(recording, name, index, kinds, shown, stats_only, largest) -> tuple[str, str]:
    """``(finding, settings)``: the magnitudes compared; the run's settings, layout and what is missing."""
    subject = f"{name!r} at update {int(recording.steps[index])} of {int(recording.steps[-1])}"
    if index in flagged_steps(recording, name)[1]:
        subject += " (replicas disagree)"
    compared = magnitude_text(largest) if largest else None
    head = f"{subject}, largest |value|: {compared}" if compared else f"{subject}: {', '.join(shown)} share one layout"
    diverging = diverging_text(recording)
    head += f"; {diverging}" if diverging else ""
    parts = [settings_text(recording, index), layout_text(recording.layout(name))]
    missing = [k for k in kinds if k not in shown]
    if missing:
        parts.append(f"not recorded: {', '.join(missing)}")
    if stats_only:
        parts.append(STATS_ONLY_TEXT)
    if "\n" in fit(head, style.WIDTH * 72, style.SUPTITLE_SIZE, bold=True):
        head = head.replace(": ", ":\n", 1)
    return head, " · ".join(parts)


def plot_update_shards(
    recording: Recording,
    name: str,
    step: int | None = None,
    *,
    kinds: Sequence[str] = ("param", "velocity", "grad"),
) -> Figure:
    """The parameter, velocity and gradient of ``name`` at optimizer update ``step`` (-1 or None: the last),
    side by side (flat: stacked), each on its own colour scale; the title is ``magnitude_text``."""
    index = update_index(recording, step)
    geometry = recording.geometry(name)  # unknown variable: the Recording's own error
    shown = _shown_kinds(recording, kinds)
    stats_only = getattr(recording, "mode", "full") == "stats"
    stack = stacked(geometry.global_shape)
    fig = new_figure(_figure_size(geometry.global_shape, len(shown)), wspace=0.02)
    axes = fig.subplots(len(shown), 1, squeeze=False)[:, 0] if stack else fig.subplots(1, len(shown), squeeze=False)[0]
    names = short_device_names(recording.shard_devices(name))
    xlabel, ylabel, _ = axis_labels(geometry.layout)
    fig._dtsgd_panels = panels = {}  # pyright: ignore[reportAttributeAccessIssue]  # our own attribute: tests read it
    largest = {}  # each kind's max |x|, compared in the title
    for ax, kind in zip(axes, shown):
        image = None
        if not stats_only:
            values = recording.global_values(name, kind)[index]
            image = as_image(np.asarray(values, np.float32 if values.dtype.name == "bfloat16" else values.dtype))
            data = np.asarray(values, np.float64)
            largest[kind] = float(np.abs(data).max()) if np.isfinite(data).all() else np.nan
        panels[kind] = panel = TensorPanel(
            ax,
            geometry,
            names,
            image,
            colorbar_label=f"{kind} value",
            colorbar=True if stack else "below",
            aspect="fill" if stack else None,
        )
        size = style.TITLE_SIZE if stack else style.NOTE_SIZE + 0.5
        ax.set_title(CAPTIONS[kind].format(recording.steps[index]), fontsize=size, pad=panel.title_pad())
        ax.set_xlabel(xlabel if ax is axes[-1] or not stack else "", fontsize=style.LABEL_SIZE)
        ax.set_ylabel(ylabel if (stack or ax is axes[0]) else "", fontsize=style.LABEL_SIZE)
    headline(fig, *_suptitle(recording, name, index, kinds, shown, stats_only, largest))
    return fig
