"""``RateExplorer``: slide the learning rate and watch every device block of a
``ShardedQuadratic`` move along both momentum rules' rate curves::

    s = dtsgd_viz.surfaces.ShardedQuadratic()
    r = dtsgd_viz.run(s, {"nesterov": dict(learning_rate=1.5, momentum=0.6, nesterov=True)},
                      steps=40)["nesterov"]
    dtsgd_viz.widgets.RateExplorer(r, s)

The slider goes through ``rate_state`` (pure: the rates and a learning rate -> where
each block sits and which blocks are past each rule's stability boundary), which the
tests call directly; the figure (``views.rates.block_rates``) is updated in place.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import ipywidgets as widgets
import numpy as np

from ..views.core import style
from ..views.rates.block_rates import RULE_NAMES, RatesView, block_rates
from ._canvas import FigureWidget

if TYPE_CHECKING:
    from ..recording import Recording
    from ..theory.surfaces import ShardedQuadratic
    from ..views.rates.block_rates import BlockRates


@dataclasses.dataclass(frozen=True)
class RateState:
    """Each block's ``a = lr * h`` and rate under both rules (``rates[nesterov]``) at
    ``learning_rate``, and which blocks are past each rule's stability boundary."""

    learning_rate: float
    a: np.ndarray
    rates: dict
    unstable: dict

    def text(self) -> str:
        n = len(self.a)
        parts = [f"{RULE_NAMES[k]}: {int(self.unstable[k].sum())} of {n} blocks unstable" for k in (False, True)]
        return f"lr={self.learning_rate:.3g}  ·  " + "  ·  ".join(parts)


def rate_state(rates: BlockRates, learning_rate: float) -> RateState:
    """Where the blocks of ``rates`` (a ``BlockRates``) sit at ``learning_rate`` (> 0)."""
    lr = float(learning_rate)
    if not math.isfinite(lr) or lr <= 0:
        raise ValueError(f"learning_rate must be a finite number > 0. Received: {learning_rate!r}.")
    pos = rates.positions(lr)
    a = pos[False][0]
    return RateState(lr, a, {k: pos[k][1] for k in pos}, {k: pos[k][1] >= 1.0 for k in pos})


class RateExplorer(FigureWidget):
    """``plot_block_rates`` with a learning-rate slider (log scale, two decades below and
    one above the recorded rate). ``.widget`` is the root ``VBox``, ``.view`` the
    ``RatesView``, ``.state`` the ``RateState`` shown."""

    def __init__(
        self,
        recording: Recording,
        surface: ShardedQuadratic,
        name: str = "w",
        *,
        figsize: tuple[float, float] = style.RATES_SIZE,
        dpi: float = style.DPI,
    ):
        super().__init__(figsize=figsize, dpi=dpi)
        self.rates = block_rates(recording, surface, name)
        lr = self.rates.learning_rate
        self.state = rate_state(self.rates, lr)
        self.slider = widgets.FloatLogSlider(
            value=lr,
            base=10,
            min=math.log10(lr) - 2,
            max=math.log10(lr) + 1,
            step=0.02,
            description="learning rate",
            readout_format=".3g",
            continuous_update=True,
            style={"description_width": "90px"},
            layout=widgets.Layout(width="420px"),
        )
        self.label = widgets.Label(self.state.text())
        curve_ax, error_ax = self.figure.subplots(1, 2, width_ratios=[1.2, 1])
        self.view = RatesView(self.rates, curve_ax, error_ax, lr_range=(lr / 100, lr * 10))
        self.widget = widgets.VBox([widgets.HBox([self.slider, self.label]), self.image])
        self.slider.observe(lambda c: self._on_change(c["new"]), names="value")
        self.refresh(relayout=True)

    def _on_change(self, value):
        self.state = rate_state(self.rates, value)
        self.view.set_learning_rate(self.state.learning_rate)
        self.label.value = self.state.text()
        self.refresh()
