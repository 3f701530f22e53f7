"""``dtsgd_viz.SGD``: the real tf-keras DTensor SGD with observe-only hooks, its options
and config, EMA on a mesh and mixed precision
(a dynamic loss scale that is right on a mesh)."""

from .loss_scale import MeshLossScaleOptimizer
from .mixed_precision import layout_autocast_variables
from .options import EMAOption, GradientsClipOption
from .sgd import SGD

__all__ = ["SGD", "EMAOption", "GradientsClipOption", "MeshLossScaleOptimizer", "layout_autocast_variables"]
