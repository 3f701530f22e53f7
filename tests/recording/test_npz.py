"""Recording.save and load_recording on plain data (no TensorFlow needed): a missing folder
is created, a path that cannot be written is named as the user gave it (never a temporary
file's name), and a failed save leaves nothing behind."""

import os

import numpy as np
import pytest
from helpers.parts import whole_recording

from dtsgd_viz import load_recording


def test_save_creates_missing_folders(tmp_path):
    r = whole_recording(2, 16, 3, "both")
    path = tmp_path / "parts" / "deeper" / "part-0.npz"
    assert r.save(path) == str(path)
    back = load_recording(path)
    np.testing.assert_array_equal(back.records[0].blocks["param"], r.records[0].blocks["param"])
    assert os.listdir(path.parent) == ["part-0.npz"]


def test_an_unwritable_path_is_named_as_given(tmp_path):
    r = whole_recording(2, 16, 2, "sharded")
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(OSError) as e:
        r.save(blocker / "run.npz")  # its "folder" is a file
    message = str(e.value)
    assert str(blocker) in message and ".tmp" not in message and ".partial" not in message
    assert os.listdir(tmp_path) == ["a-file"]


def test_a_communication_report_is_saved_and_loaded_with_the_recording(tmp_path):
    from dtsgd_viz import CommunicationReport
    from dtsgd_viz.recording import Collective

    r = whole_recording(2, 16, 2, "sharded")
    report = CommunicationReport(
        r.mesh,
        (
            Collective(
                "all-reduce", ("y",), 64, "float32", (4, 4), "activation gradient", groups=((0, 1, 2, 3), (4, 5, 6, 7))
            ),
        ),
        function="step",
    )
    back = load_recording(r.with_communication(report).save(tmp_path / "r.npz"))
    assert back.communication == report
    assert load_recording(r.save(tmp_path / "plain.npz")).communication is None
    with pytest.raises(TypeError, match=r"takes a CommunicationReport .*Received: dict"):
        r.with_communication({})
