"""Recording.to_tensorboard and `dtsgd-viz export`: per-block statistics as scalars and
each variable's values as histograms, by update, read back with TensorBoard's own event
reader and checked against numpy on the recorded values."""

import dataclasses
import math
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("tensorboard")
from helpers.parts import whole_recording  # noqa: E402
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator  # noqa: E402


def _read(logdir):
    acc = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "histograms": 0})
    acc.Reload()
    return acc


def _with_loss(r):
    return dataclasses.replace(r, loss_values=np.linspace(2.0, 1.0, len(r)))


def test_block_statistics_and_histograms_by_update(tmp_path):
    r = _with_loss(whole_recording(2, 16, 4, "both"))
    r.to_tensorboard(tmp_path / "tb")
    acc = _read(tmp_path / "tb")
    tags = acc.Tags()
    w = r.record("w")
    geom = w.geometry
    for g in range(geom.num_unique):  # block g of w's velocity: numpy on the recorded block
        events = acc.Scalars(f"w/velocity/norm/block {g}")
        assert [e.step for e in events] == r.steps.tolist()
        expected = np.sqrt((w.blocks["velocity"][:, g].astype(np.float64) ** 2).sum(axis=(1, 2)))
        np.testing.assert_allclose([e.value for e in events], expected, rtol=1e-6)
        maxabs = np.abs(w.blocks["velocity"][:, g]).max(axis=(1, 2))
        np.testing.assert_allclose([e.value for e in acc.Scalars(f"w/velocity/max_abs/block {g}")], maxabs, rtol=1e-6)
    whole = r.global_values("w", "param").astype(np.float64)
    np.testing.assert_allclose(
        [e.value for e in acc.Scalars("w/param/norm")], np.sqrt((whole**2).sum(axis=(1, 2))), rtol=1e-6
    )
    np.testing.assert_allclose([e.value for e in acc.Scalars("loss")], r.loss_values, rtol=1e-6)
    assert "r/grad" in tags["histograms"]
    hist = acc.Histograms("w/grad")
    assert [h.step for h in hist] == r.steps.tolist()
    g = r.global_values("w", "grad").astype(np.float64)
    last = hist[-1].histogram_value
    assert last.num == math.prod(w.shape) == sum(last.bucket)
    np.testing.assert_allclose([last.min, last.max, last.sum], [g[-1].min(), g[-1].max(), g[-1].sum()], rtol=1e-6)


def test_histograms_are_thinned_on_long_runs(tmp_path):
    r = whole_recording(2, 16, 30, "sharded")
    r.to_tensorboard(tmp_path / "tb", max_histograms=7)
    steps = [h.step for h in _read(tmp_path / "tb").Histograms("w/param")]
    assert len(steps) == 7 and steps[0] == 1 and steps[-1] == 30


def test_bad_max_histograms_is_refused(tmp_path):
    with pytest.raises(ValueError, match="max_histograms must be an int >= 1. Received: 0"):
        whole_recording(2, 16, 2, "sharded").to_tensorboard(tmp_path, max_histograms=0)


@pytest.mark.slow
def test_export_command_writes_a_saved_recording(tmp_path):
    r = whole_recording(2, 16, 3, "sharded")
    r.save(tmp_path / "run.npz")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "dtsgd_viz.cli",
            "export",
            str(tmp_path / "run.npz"),
            "--tensorboard",
            str(tmp_path / "tb"),
        ],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert "tensorboard --logdir" in out.stdout
    assert [e.step for e in _read(tmp_path / "tb").Scalars("w/param/norm")] == [1, 2, 3]


def test_a_second_export_is_refused_or_replaces_never_appends(tmp_path):
    """Exporting twice to one folder used to add a second event file: TensorBoard then
    read two points per update. Now it is refused, or replaces the first with overwrite."""
    first, second = whole_recording(2, 16, 4, "sharded"), _with_loss(whole_recording(2, 16, 6, "sharded"))
    first.to_tensorboard(tmp_path / "tb")
    other = tmp_path / "tb" / "events.out.tfevents.1.host.keras"  # another tool's file stays
    other.write_bytes(b"")
    with pytest.raises(FileExistsError, match=r"already holds a dtsgd_viz export .*overwrite=True"):
        second.to_tensorboard(tmp_path / "tb")
    assert [e.step for e in _read(tmp_path / "tb").Scalars("w/param/norm")] == [1, 2, 3, 4]
    second.to_tensorboard(tmp_path / "tb", overwrite=True)
    acc = _read(tmp_path / "tb")
    assert [e.step for e in acc.Scalars("w/param/norm")] == [1, 2, 3, 4, 5, 6]
    np.testing.assert_allclose([e.value for e in acc.Scalars("loss")], second.loss_values, rtol=1e-6)
    assert len([f for f in (tmp_path / "tb").iterdir() if f.name.endswith(".dtsgd_viz")]) == 1
    assert other.exists()


def test_runs_by_name_overlay_in_one_logdir(tmp_path):
    import dtsgd_viz

    a, b = _with_loss(whole_recording(2, 16, 3, "sharded")), whole_recording(2, 16, 5, "sharded")
    b = dataclasses.replace(b, loss_values=np.linspace(9.0, 3.0, 5))
    paths = dtsgd_viz.to_tensorboard({"momentum": a, "nesterov": b}, tmp_path / "logs")
    assert set(paths) == {"momentum", "nesterov"}
    for name, r in (("momentum", a), ("nesterov", b)):
        acc = _read(tmp_path / "logs" / name)
        np.testing.assert_allclose([e.value for e in acc.Scalars("loss")], r.loss_values, rtol=1e-6)
    with pytest.raises(FileExistsError, match="Run 'nesterov' already has a dtsgd_viz export"):
        dtsgd_viz.to_tensorboard({"nesterov": a}, tmp_path / "logs")
    with pytest.raises(ValueError, match=r"A run name is a non-empty folder name .*Received: '../x'"):
        a.to_tensorboard(tmp_path / "logs", run="../x")
    with pytest.raises(TypeError, match="Received: list"):
        dtsgd_viz.to_tensorboard([a], tmp_path / "logs")


@pytest.mark.slow
def test_export_command_refuses_a_second_export_and_takes_a_run_name(tmp_path):
    r = whole_recording(2, 16, 3, "sharded")
    r.save(tmp_path / "run.npz")
    cmd = [
        sys.executable,
        "-m",
        "dtsgd_viz.cli",
        "export",
        str(tmp_path / "run.npz"),
        "--tensorboard",
        str(tmp_path / "tb"),
        "--run",
        "a",
    ]
    assert subprocess.run(cmd, capture_output=True, text=True).returncode == 0
    again = subprocess.run(cmd, capture_output=True, text=True)
    assert again.returncode == 2 and "already holds a dtsgd_viz export" in again.stderr
    replaced = subprocess.run(cmd + ["--overwrite"], capture_output=True, text=True)
    assert replaced.returncode == 0, replaced.stderr
    assert [e.step for e in _read(tmp_path / "tb" / "a").Scalars("w/param/norm")] == [1, 2, 3]
    # tensorboard imports TensorFlow: its C++ start-up lines are not printed
    assert "oneDNN" not in replaced.stderr + replaced.stdout and "cpu_feature_guard" not in replaced.stderr
