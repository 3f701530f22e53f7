"""``dtsgd_viz.SGD``: the real tf-keras DTensor SGD with observe-only hooks, its options
and config, EMA on a mesh and mixed precision."""

from .mixed_precision import layout_autocast_variables
from .options import EMAOption, GradientsClipOption
from .sgd import SGD

__all__ = ["SGD", "EMAOption", "GradientsClipOption", "layout_autocast_variables"]
