"""Comparing recorded runs of any model, no surface needed: ``plot_compare`` draws the
losses and the parameters' distance between the runs; ``compare_findings`` gives the
numbers its title states (print them beside the figure); ``compare_data`` keeps each
device's velocity norm too, for printing::

    fig = dtsgd_viz.plot_compare({"momentum": rec_a, "nesterov": rec_b})
    print(dtsgd_viz.compare_findings({"momentum": rec_a, "nesterov": rec_b}))
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .draw import draw, looks
from .geometry import CompareData, Findings, compare_data, compare_findings, findings_of

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ...recording.recording import Recording

__all__ = ["CompareData", "Findings", "compare_data", "compare_findings", "looks", "plot_compare"]


def plot_compare(runs: dict[str, Recording], variable: str | None = None) -> Figure:
    """Compare recorded runs (``{run name: Recording}``, two or more, of one model on one
    mesh, recording the same updates) in one Figure:

    - the loss after each update of every run, overlaid (log scale), each run's mean
      over the last updates (the ends the title compares) across a shaded band;
    - the parameters' distance from the first run's, ``||p - p_first|| / ||p_first||``
      over every variable (or ``variable``), per update (full-mode recordings).

    Runs of one rule are told apart (a second Nesterov run is drawn in a lighter tint); a
    run on the first run's path is drawn thin over it and the legend says so. A run with
    NaN/Inf says from which update. The title's numbers are ``compare_findings(runs,
    variable)``.
    """
    data = compare_data(runs, variable)
    return draw(data, findings_of(data))
