"""merge_recordings on plain data, no TensorFlow and no launch: the parts a run's clients
would save (tests/helpers/parts.py splits a whole recording by the devices each client
holds) put back together equal the whole, in any order; missing, repeated and mismatched
parts are refused naming what is wrong; replicas that disagree are flagged."""

import dataclasses
import subprocess
import sys

import numpy as np
import pytest
from helpers.parts import split, whole_recording

from dtsgd_viz import KINDS, MergeError, load_recording, merge_recordings


def _assert_same(a, b):
    assert a.mesh == b.mesh and a.kinds == b.kinds and a.variables == b.variables
    np.testing.assert_array_equal(a.steps, b.steps)
    for ra, rb in zip(a.records, b.records):
        np.testing.assert_array_equal(ra.initial, rb.initial)
        for kind in KINDS:
            np.testing.assert_array_equal(ra.blocks[kind], rb.blocks[kind])
    np.testing.assert_array_equal(a.mismatch, b.mismatch)
    assert b.part is None


@pytest.mark.parametrize("clients", [2, 4])
@pytest.mark.parametrize("which", ["sharded", "replicated", "both"])
def test_the_parts_merge_back_into_the_whole(clients, which):
    whole = whole_recording(clients, 16, 5, which)
    parts = split(whole, clients)
    _assert_same(whole, merge_recordings(parts))
    _assert_same(whole, merge_recordings(parts[::-1]))  # any order


def test_saved_parts_merge_without_tensorflow(tmp_path):
    whole = whole_recording(2, 16, 3, "both")
    for p in split(whole, 2):
        p.save(tmp_path / "parts" / f"part-{p.part.client_id}.npz")  # the folder is made
    code = (
        "import sys, dtsgd_viz; r = dtsgd_viz.load_recording(sys.argv[1]); "
        "assert 'tensorflow' not in sys.modules; print(len(r), r.part)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "parts")], capture_output=True, text=True, check=True
    ).stdout
    assert out.split() == ["3", "None"]
    _assert_same(whole, load_recording(tmp_path / "parts"))


def test_a_missing_part_is_named():
    parts = split(whole_recording(4, 16, 2, "sharded"), 4)
    with pytest.raises(MergeError, match=r"client\(s\) \[2\] of 4 are missing"):
        merge_recordings([parts[0], parts[1], parts[3]])


def test_a_repeated_part_is_named():
    parts = split(whole_recording(2, 16, 2, "sharded"), 2)
    with pytest.raises(MergeError, match="are both the part of client 0"):
        merge_recordings([parts[0], parts[0], parts[1]])


def test_parts_of_different_runs_are_refused():
    a = split(whole_recording(2, 16, 3, "sharded"), 2)
    b = split(whole_recording(2, 16, 4, "sharded"), 2)
    with pytest.raises(MergeError, match="the recorded steps differ"):
        merge_recordings([a[0], b[1]])


def test_replicas_that_disagree_are_flagged_at_their_step():
    whole = whole_recording(2, 16, 4, "replicated")
    parts = split(whole, 2)
    velocity = parts[1].records[0].blocks["velocity"]
    velocity[2, 1] += 1.0  # client 1's copy of block 1 differs at the third step
    merged = merge_recordings(parts)
    bit = 1 << KINDS.index("velocity")
    assert [int(m[0]) for m in merged.mismatch] == [0, 0, bit, 0]
    # the owner's copy (client 0, the lowest id) is kept
    np.testing.assert_array_equal(merged.records[0].blocks["velocity"], whole.records[0].blocks["velocity"])


def test_a_whole_recording_merges_to_itself():
    whole = whole_recording(2, 16, 2, "both")
    _assert_same(whole, merge_recordings([dataclasses.replace(whole)]))
