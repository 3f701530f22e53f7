"""The widget base: a matplotlib ``Figure`` (Agg, no pyplot) shown as PNG bytes in an
``ipywidgets.Image``.

Subclasses draw once, then on a trait change update artists in place
(``set_data``, ``set_array``, ``set_ydata``) and call ``refresh()``, which only
re-renders the PNG. Nothing here prints: errors in callbacks go to the widget log.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..views.core import style
from ..views.core.figure import new_figure

if TYPE_CHECKING:
    from matplotlib.figure import Figure


class FigureWidget:
    """Holds ``self.figure`` and shows it in ``self.image``; ``self.widget`` is the root
    (subclasses replace it with a box holding their controls and ``self.image``). By
    default the figure is ``style.WIDTH`` wide at ``style.DPI``: its PNG (930 px) shows at
    100% in a notebook column.

    Display it by making it the last expression of a notebook cell::

        fw = FigureWidget()
        fw.figure.add_subplot().plot([1, 3, 2])
        fw.refresh()
        fw
    """

    def __init__(
        self, figure: Figure | None = None, *, figsize: tuple[float, float] = (style.WIDTH, 5.0), dpi: float = style.DPI
    ):
        if figure is None:
            figure = new_figure(figsize, dpi)
        elif not hasattr(figure.canvas, "get_renderer"):
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            FigureCanvasAgg(figure)
        self.figure = figure
        # Layout runs on a full redraw only; in-place updates keep every axes still
        # (no jitter while playing) and render faster.
        self._layout_engine = figure.get_layout_engine()
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="100%"))
        self.widget = self.image
        self.renders = 0  # how many PNGs were made

    def render(self) -> bytes:
        """The figure as PNG bytes, as it stands."""
        buf = io.BytesIO()
        self.figure.savefig(buf, format="png")
        return buf.getvalue()

    def unfreeze_layout(self) -> None:
        """Let the figure's layout engine run again (before drawing new artists)."""
        if self._layout_engine is not None:
            self.figure.set_layout_engine(self._layout_engine)

    def refresh(self, relayout: bool = False) -> None:
        """Re-render after artists were updated in place and show the new PNG.
        ``relayout=True`` re-runs the layout engine first (labels changed size)."""
        if relayout:
            self.unfreeze_layout()
        self.image.value = self.render()
        self.renders += 1
        if self._layout_engine is not None:
            self.figure.set_layout_engine("none")  # keep the positions just computed

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        from IPython.display import display

        display(self.widget)
