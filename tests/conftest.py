"""Test set-up: 8 virtual CPU devices, created once before TensorFlow starts."""

import os

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


@pytest.fixture
def ram_path(tmp_path):
    """A fresh empty folder in memory (a tmpfs: ``/dev/shm`` where the machine has one,
    else ``tmp_path``), removed after the test. For tests that rewrite and reread small
    files thousands of times (the bit-flip sweeps): on a busy disk the page writeback,
    not the checks, would take most of their time, and what they check does not depend
    on the file system."""
    import pathlib
    import shutil
    import tempfile

    shm = pathlib.Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        yield tmp_path
        return
    folder = pathlib.Path(tempfile.mkdtemp(prefix="dtsgd-viz-test-", dir=shm))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
