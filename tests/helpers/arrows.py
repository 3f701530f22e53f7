"""The close-ups' arrows are drawn tip to tail, except one lying along the one before (``panel.lies_along``:
turning back over 120° or on under 15°), which ``panel.beside_folds`` moves beside it: across it, never along."""

import numpy as np

from dtsgd_viz.views.update import panel


def assert_tail(tail, tip, before, uv, atol=1e-12):
    """``tail`` is ``tip`` (where the last arrow ended, unmoved) or, for ``uv`` lying along ``before``,
    ``tip`` moved across ``before`` only. Returns the shift."""
    shift = np.asarray(tail, np.float64) - np.asarray(tip, np.float64)
    if before is not None and panel.lies_along(before, uv):
        assert abs(float(shift @ before)) < 1e-9 * np.hypot(*before)  # across, not along
    else:
        np.testing.assert_allclose(shift, 0.0, atol=atol)
    return shift
