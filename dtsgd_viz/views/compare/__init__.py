"""Recorded runs of any model compared, no surface needed: ``plot_compare`` draws the losses and
the parameters' distance between the runs; ``compare_findings`` gives its title's numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .draw import draw, looks
from .geometry import compare_data, compare_findings, display_name, findings_of, percent_text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording.recording import Recording

__all__ = ["compare_data", "compare_findings", "display_name", "looks", "percent_text", "plot_compare"]


def plot_compare(runs: dict[str, Recording], variable: str | None = None) -> Figure:
    """Compare recorded runs (``{run name: Recording}``, two or more, of one model on one
    mesh, recording the same updates): the loss after each update of every run (log), and
    the parameters' distance from the first run's (full-mode runs). The title's numbers
    are ``compare_findings(runs, variable)``."""
    data = compare_data(runs, variable)
    return draw(data, findings_of(data))
