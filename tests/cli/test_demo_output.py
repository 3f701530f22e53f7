"""What ``dtsgd-viz demo`` prints, run for real into a temporary folder: the report's
stated file count is the number of files it lists and of the files in the folder, and
no progress line is printed twice (tqdm's ``close()`` used to print a bar's last line
again after the last update had printed it: in a log, the Nesterov run ended twice)."""

import collections
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the demo, 12 updates per run: about half a minute

REPORT = re.compile(r"^Report: (\d+) files and (\S+) in (.+)$", re.M)
LISTED = re.compile(r"^  (\S+) +\S")
PROGRESS = re.compile(r"^\[(?:\d/\d|paths)\] ")


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo") / "report"
    env = {k: v for k, v in os.environ.items() if k != "DTSGD_VIZ_PROGRESS"}  # bars on
    run = subprocess.run(
        [sys.executable, "-m", "dtsgd_viz.cli", "demo", "--out", str(out), "--steps", "12", "--gif-frames", "3"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    return out, run.stdout, run.stderr


def test_the_stated_file_count_is_what_it_lists_and_writes(demo):
    out, stdout, _ = demo
    found = REPORT.findall(stdout)
    assert len(found) == 1, stdout
    count, index, folder = found[0]
    assert os.path.realpath(folder.rstrip(os.sep)) == os.path.realpath(out)
    after = stdout[stdout.index("Report: ") :].splitlines()[1:]
    listed = [m.group(1) for line in after if (m := LISTED.match(line))]
    assert int(count) == len(listed) == len(set(listed)) > 10
    assert index not in listed
    assert sorted(os.listdir(out)) == sorted([*listed, index])


def test_no_progress_line_is_printed_twice(demo):
    _, _, stderr = demo
    # a bar on a file or pipe redraws with carriage returns: each redraw is a line of the log
    lines = [line.strip() for line in re.split(r"[\r\n]", stderr) if line.strip()]
    bars = [line for line in lines if PROGRESS.match(line)]
    assert bars, stderr[-2000:]
    # every run's bar, ending at its last step
    for desc in ("[1/3] plain", "[2/3] momentum", "[3/3] nesterov", "[paths] momentum", "[paths] nesterov"):
        assert any(re.match(re.escape(desc) + r" +step (\d+)/\1 ", b) for b in bars), desc
    # ... and the report's messages, each once
    said = [line for line in lines if line.startswith(("writing ", "animating "))]
    assert said
    repeated = [line for line, n in collections.Counter(bars + said).items() if n > 1]
    assert repeated == []
