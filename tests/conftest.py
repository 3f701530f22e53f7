"""Test set-up: 8 virtual CPU devices, created once before TensorFlow starts."""

import numpy as np
import pytest

import dtsgd_viz

# Split the CPU before anything initialises TensorFlow's devices (later it raises).
dtsgd_viz.setup_devices(8)

# One shared table of optimizer configs, fed to every test that runs the optimizer.
CONFIGS = {
    "plain": dict(learning_rate=0.1, momentum=0.0, nesterov=False),
    "momentum": dict(learning_rate=0.05, momentum=0.9, nesterov=False),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}


@pytest.fixture(params=sorted(CONFIGS))
def config(request):
    return dict(CONFIGS[request.param])


@pytest.fixture(autouse=True)
def _doctest_numpy_repr(request):
    """Doctests show numbers as the reference documentation does (``0.9``, not
    ``np.float32(0.9)``)."""
    if type(request.node).__name__ != "DoctestItem":
        yield
        return
    old = np.get_printoptions()
    np.set_printoptions(legacy="1.25")
    try:
        yield
    finally:
        np.set_printoptions(**old)
