"""Comparing recorded runs of any model, no surface needed: ``plot_compare`` draws the
losses, the parameters' distance between the runs and each device's velocity norm,
laid out like the mesh, on shared scales; ``compare_findings`` gives the numbers its
title states (print them beside the figure)::

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

    - the loss after each update of every run, overlaid (log scale);
    - the parameters' distance from the first run's, ``||p - p_first|| / ||p_first||``
      over every variable (or ``variable``), per update (full-mode recordings);
    - each device's velocity norm under every run, one small panel per device laid out
      like the mesh, all on one scale (runs without a momentum slot are left out).

    Runs of one rule are told apart (a second Nesterov run is drawn in a lighter tint).
    A run with NaN/Inf says from which update. The title's numbers are
    ``compare_findings(runs, variable)``.
    """
    data = compare_data(runs, variable)
    return draw(data, findings_of(data))
