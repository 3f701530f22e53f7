"""Recorded runs of any model compared, no surface needed: ``plot_compare`` and its numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .draw import draw, looks
from .geometry import compare_data, compare_findings, display_name, findings_of, percent_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording.recording import Recording

__all__ = ["compare_data", "compare_findings", "display_name", "looks", "percent_text", "plot_compare"]


def plot_compare(runs: dict[str, Recording], variable: str | None = None) -> Figure:
    """Each run's loss (log) and, full-mode, its parameters' distance from the first run's, for two or more
    runs of one model on one mesh and the same updates; the title's numbers: ``compare_findings``."""
    data = compare_data(runs, variable)
    return draw(data, findings_of(data))
