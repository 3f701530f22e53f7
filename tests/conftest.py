"""Test set-up: 8 virtual CPU devices, created once before TensorFlow starts."""

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
