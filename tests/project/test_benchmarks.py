"""The benchmark scripts run and print their tables (at their smallest settings, in a
subprocess: slow), and the pure helpers of ``benchmarks/workloads.py`` compute what the
tables say."""

import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks"
sys.path.insert(0, str(BENCH))

import workloads  # noqa: E402


def test_paired_ratios_take_the_median_of_per_round_ratios():
    times = {"plain": [1.0, 2.0, 1.0], "rec": [1.5, 2.2, 1.1]}
    assert workloads.paired_ratios(times, "plain") == pytest.approx({"plain": 1.0, "rec": 1.1})


def test_extra_over_floor():
    assert workloads.extra_over_floor(1.5, 1.25) == pytest.approx(2.0)
    assert workloads.extra_over_floor(0.9, 1.25) == pytest.approx(-0.4)
    assert workloads.extra_over_floor(1.5, 1.002) is None  # the floor adds nothing measurable
    assert workloads.extra_over_floor(1.5, None) is None


def test_floor_cells():
    assert workloads.floor_cells(1.5, None, None) == ("-", "-", "-")
    assert workloads.floor_cells(1.5, "copy", 1.25) == ("copy", "1.25x", "2.00x")
    assert workloads.floor_cells(1.5, "copy", 0.99) == ("copy", "0.99x", "-")


def test_rotations_put_every_name_first_once():
    orders = workloads.rotations("abcd", 4)
    assert orders[:2] == [list("abcd"), list("bcda")]
    assert sorted(o[0] for o in orders) == list("abcd")
    assert workloads.rotations("ab", 3)[2] == ["a", "b"]


def test_table():
    assert workloads.table(["a", "b"], [(1, "x")]) == "| a | b |\n|---|---|\n| 1 | x |"


def test_compile_time_ratios_pair_by_repeat():
    import compile_time

    results = [
        {
            "plain": {"first": 10.0, "steady": 1.0},
            "sgd": {"first": 12.0, "steady": 1.0},
            "stats": {"first": 11.0, "steady": 0.5},
            "full": {"first": 13.0, "steady": 2.0},
        },
        {
            "plain": {"first": 20.0, "steady": 2.0},
            "sgd": {"first": 20.0, "steady": 2.0},
            "stats": {"first": 20.0, "steady": 1.0},
            "full": {"first": 24.0, "steady": 4.0},
        },
    ]
    first = compile_time.ratios(results, "first", "plain")
    assert first["stats"] == pytest.approx(1.05) and first["full"] == pytest.approx(1.25)
    rows = {r[1].split(":")[0]: r for r in compile_time.rows(40, results)}
    assert rows["stats"][2] == "1.05x (0.96x sgd's)" and rows["stats"][5] == "yes (vs sgd: yes)"
    assert rows["full"][5] == "no (vs sgd: no)" and rows["plain"][4:] == ("-", "-")


def _run(script, *args, timeout=900):
    out = subprocess.run(
        [sys.executable, str(BENCH / script), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow
def test_overhead_quick_prints_rows_with_their_floors():
    out = _run("overhead.py", "--quick", "--only", "256", "--no-views")
    assert "| workload | measure | recorder settings | ratio to plain | floor | floor / plain |" in out
    stats = next(line for line in out.splitlines() if "| stats p,v,g every step |" in line)
    assert "one device read of p,v,g" in stats
    peer = next(line for line in out.splitlines() if "peer: naive unpack" in line)
    assert peer.endswith("| - | - | - |")


@pytest.mark.slow
def test_keep_every_step_quick_prints_its_floors():
    out = _run("keep_every_step.py", "--quick")
    assert "fresh-memory fill of p,v" in out and "warm host copy of p,v" in out
    assert "recording and reading included" in out


@pytest.mark.slow
def test_compile_time_quick_prints_its_table():
    """``--quick``'s one repeat and one block, at 2 layers instead of its 10: the trace
    (most of each child's time) grows with the layers, and the table is the same."""
    out = _run("compile_time.py", "--layers", "2", "--repeats", "1", "--blocks", "1")
    assert "| layers | variant | first call / plain's first call" in out
    assert sum(line.startswith("| 2 |") for line in out.splitlines()) == 4  # one row per variant


@pytest.mark.slow
def test_long_run_quick_prints_its_tables():
    # ``--quick`` (200 updates, blocks of 20, windows of 2, 1 rep) at 2 layers, not 6
    out = _run("long_run.py", "--updates", "200", "--layers", "2", "--block", "20", "--window", "2", "--reps", "1")
    assert "| time per update, recorded / plain (median over windows) |" in out
    assert "| load_recording |" in out


@pytest.mark.slow
def test_iterator_end_prints_both_settings():
    out = _run("iterator_end.py", "--rounds", "1", "--live", "0")
    rows = [line for line in out.splitlines() if line.startswith("| ") and "Dataset |" in line]
    assert [r.split(" | ")[:2] for r in rows] == [
        ["| tf.data.Dataset", "on"],
        ["| DTensorDataset", "on"],
        ["| tf.data.Dataset", "off"],
        ["| DTensorDataset", "off"],
    ]
