"""Figures without pyplot (no global state, no backend switching), titled and sized by ``views.core.style``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from . import style

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axes._base import _AxesBase
    from matplotlib.backend_bases import RendererBase
    from matplotlib.figure import Figure, SubFigure


def new_figure(
    figsize: tuple[float, float] = (style.WIDTH, 5.0), dpi: float = style.DPI, wspace: float = 0.05
) -> Figure:
    """A constrained-layout ``Figure`` on its own Agg canvas, never in pyplot; ``wspace``: room for colour bars."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    engine = fig.get_layout_engine()
    assert isinstance(engine, ConstrainedLayoutEngine)  # layout="constrained" made it
    engine.set(wspace=wspace)
    FigureCanvasAgg(fig)
    return fig


def root_figure(ax: _AxesBase) -> Figure:
    """The ``Figure`` that ``ax`` is drawn in, also when ``ax`` sits in a ``SubFigure``."""
    return ax.figure.figure  # pyright: ignore[reportReturnType]  # stubs: Figure | SubFigure | None


def axes_size_inches(ax: Axes) -> tuple[float, float]:
    """``ax``'s width and height in inches (in a figure or a subfigure)."""
    pos, parent = ax.get_position(), ax.figure
    assert parent is not None  # an Axes is made in a figure
    dpi = root_figure(ax).dpi
    return pos.width * parent.bbox.width / dpi, pos.height * parent.bbox.height / dpi


def canvas_renderer(fig: Figure | SubFigure) -> RendererBase:
    """The renderer of ``fig``'s canvas (``new_figure``'s Agg one; another may raise ``AttributeError``)."""
    return fig.canvas.get_renderer()  # pyright: ignore[reportAttributeAccessIssue]  # stubs: FigureCanvasBase


def headline(fig: Figure, finding: str, settings: str | None = None) -> Figure:
    """Title ``fig`` with its ``finding`` (bold ``suptitle``) over the ``settings`` (grey annotation gid ``subtitle``).

    >>> fig = new_figure((4, 3))
    >>> fig = headline(fig, "Nesterov ends lowest", "lr 0.05, μ 0.9")
    >>> headline_texts(fig)
    ('Nesterov ends lowest', 'lr 0.05, μ 0.9')
    """
    width = fig.get_figwidth() * 72.0  # points
    finding = fit(finding, width, style.SUPTITLE_SIZE, bold=True)
    if not settings:
        fig.suptitle(finding, fontsize=style.SUPTITLE_SIZE, fontweight="bold")
        return fig
    settings = fit(settings, width, style.SUBTITLE_SIZE)
    n, m = finding.count("\n") + 1, settings.count("\n") + 1
    blank = int(np.ceil(m * style.SUBTITLE_SIZE / style.SUPTITLE_SIZE))  # title lines that hold the settings
    title = fig.suptitle(finding + "\n" * blank, fontsize=style.SUPTITLE_SIZE, fontweight="bold", linespacing=1.25)
    from matplotlib.text import Annotation

    fig.add_artist(
        Annotation(
            settings,
            (0.5, 1.0),
            xycoords=title,
            xytext=(0, -(n * 1.25 * style.SUPTITLE_SIZE + 1.0)),
            textcoords="offset points",
            fontsize=style.SUBTITLE_SIZE,
            color=style.SUBTITLE_COLOR,
            ha="center",
            va="top",
            gid="subtitle",
            linespacing=1.2,
            in_layout=True,  # a tight bounding box (a notebook's PNG) keeps it whole
        )
    )
    return fig


def headline_texts(fig: Figure) -> tuple[str, str | None]:
    """``(finding, settings)`` of a figure titled by ``headline``."""
    sub = [t for t in [*fig.texts, *fig.artists] if t.get_gid() == "subtitle"]
    return fig.get_suptitle().rstrip("\n"), (sub[0].get_text() if sub else None)


def fit(text: str, width_points: float, fontsize: float, bold: bool = False) -> str:
    """``text`` broken between words into lines about ``width_points`` wide at ``fontsize`` (DejaVu Sans).

    >>> fit("one two three four", 60, 10)   # even lines
    'one two\\nthree four'
    """
    import textwrap

    per_line = max(8, int(width_points / (fontsize * (0.64 if bold else 0.58))))
    wrap = lambda part, n: textwrap.wrap(part, n, break_long_words=False)  # noqa: E731
    out = []
    for part in text.split("\n"):  # as few lines as at ``per_line``, as even as they go (no word alone on the last)
        n, lines = per_line, len(wrap(part, per_line))
        while n > 8 and len(wrap(part, n - 1)) == lines:
            n -= 1
        out.append("\n".join(wrap(part, n)))
    return "\n".join(out)
