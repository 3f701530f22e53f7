"""Figures without pyplot: no global state, no backend switching, nothing at import."""

from __future__ import annotations


def new_figure(figsize=(11.5, 5.0), dpi=100, wspace=0.05):
    """A ``Figure`` with its own Agg canvas and constrained layout (never registered
    with pyplot, so it is never shown twice in a notebook and never leaks). The
    ``wspace`` gap between panels leaves room for colour bar labels that change
    width when a widget updates the figure without re-running the layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    fig.get_layout_engine().set(wspace=wspace)
    FigureCanvasAgg(fig)
    return fig
