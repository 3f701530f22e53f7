"""Progress bars on long work (tqdm.auto; text on stderr outside Jupyter): shown when
asked (``progress=True``), absent by default, and off everywhere with
``DTSGD_VIZ_PROGRESS=0``. The demo command shows them by default (tests/project/test_packaging.py
reads its bars on stderr)."""

import contextlib
import io

import pytest

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import surfaces
from dtsgd_viz.widgets import phase_grid

SURFACE = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("DTSGD_VIZ_PROGRESS", raising=False)


def stderr_of(fn):
    """What ``fn()`` writes to ``sys.stderr`` (where tqdm writes outside Jupyter)."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        fn()
    return err.getvalue()


def grid(**kwargs):
    return phase_grid(SURFACE, [0.01, 0.05], [0.0, 0.9], steps=3, tol=1e-3, nesterov=True, **kwargs)


def test_recorder_loop_shows_a_bar_only_when_asked():
    shown = stderr_of(lambda: list(dtsgd_viz.Recorder().loop(4, progress=True)))
    assert "recording" in shown and "4/4" in shown
    assert stderr_of(lambda: list(dtsgd_viz.Recorder().loop(4))) == ""


@pytest.mark.slow
def test_run_shows_a_bar_per_config_only_when_asked():
    configs = {name: CONFIGS[name] for name in ("plain", "nesterov")}
    shown = stderr_of(lambda: dtsgd_viz.run(SURFACE, configs, 5, progress=True))
    assert "plain" in shown and "nesterov" in shown and shown.count("5/5") == 2
    assert "5/5" not in stderr_of(lambda: dtsgd_viz.run(SURFACE, configs, 5))


def test_phase_grid_shows_a_bar_only_when_asked():
    shown = stderr_of(lambda: grid(progress=True))
    assert "phase grid (nesterov)" in shown and "3/3" in shown
    assert stderr_of(grid) == ""


def test_the_environment_turns_every_bar_off(monkeypatch):
    monkeypatch.setenv("DTSGD_VIZ_PROGRESS", "0")
    assert stderr_of(lambda: grid(progress=True)) == ""
    assert stderr_of(lambda: list(dtsgd_viz.Recorder().loop(4, progress=True))) == ""


def test_progress_must_be_a_bool():
    with pytest.raises(TypeError, match="progress must be True, False or None. Received: 'yes'"):
        grid(progress="yes")
