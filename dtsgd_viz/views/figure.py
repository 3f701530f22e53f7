"""Figures without pyplot: no global state, no backend switching, nothing at import.
Sizes, dpi and type come from ``views.style`` (the one scale)."""

from __future__ import annotations

from . import style


def new_figure(figsize=(style.WIDTH, 5.0), dpi=style.DPI, wspace=0.05):
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


def headline(fig, finding: str, settings: str | None = None):
    """Title ``fig`` with its ``finding`` (what the picture shows, bold) and, under it,
    the ``settings`` line (smaller, grey). Returns the subfigure to draw the panels in
    (``fig`` itself without settings); ``fig.axes`` still lists every panel. The
    settings line is that subfigure's ``suptitle``, so the layout leaves room for both.

    >>> fig = new_figure((4, 3))
    >>> body = headline(fig, "Nesterov ends lowest", "lr 0.05, μ 0.9")
    >>> ax = body.subplots()
    >>> fig.get_suptitle(), body.get_suptitle(), fig.axes == [ax]
    ('Nesterov ends lowest', 'lr 0.05, μ 0.9', True)
    """
    width = fig.get_figwidth() * 72.0   # points
    fig.suptitle(fit(finding, width, style.SUPTITLE_SIZE, bold=True), fontsize=style.SUPTITLE_SIZE,
                 fontweight="bold")
    if not settings:
        return fig
    body = fig.subfigures(1, 1)
    body.suptitle(fit(settings, width, style.SUBTITLE_SIZE), fontsize=style.SUBTITLE_SIZE,
                  color=style.SUBTITLE_COLOR)
    return body


def fit(text: str, width_points: float, fontsize: float, bold: bool = False) -> str:
    """``text`` broken into lines about ``width_points`` wide at ``fontsize`` (DejaVu
    Sans: ~0.58 em a character, ~0.64 bold), between words.

    >>> fit("one two three four", 60, 10)
    'one two\\nthree four'
    """
    import textwrap
    per_line = max(8, int(width_points / (fontsize * (0.64 if bold else 0.58))))
    return "\n".join(textwrap.fill(part, per_line, break_long_words=False)
                     for part in text.split("\n"))
