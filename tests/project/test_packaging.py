"""The project itself: dependency lists in sync, a light import, the demo command."""

import collections
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tomllib
import types

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]


def _norm(req):
    match = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", req)
    assert match is not None, f"not a requirement: {req!r}"
    name, spec = match.groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def test_environment_yml_matches_pyproject():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = set(map(_norm, project["dependencies"]))
    for extra in project["optional-dependencies"].values():
        wanted |= set(map(_norm, extra))
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert set(map(_norm, pip)) == wanted
    python = [d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert python == ["python=3.11"] and project["requires-python"] == ">=3.11"


def test_import_is_light():
    code = (
        "import sys, dtsgd_viz; "
        "print(sorted(m for m in ('tensorflow', 'matplotlib', 'ipywidgets', 'IPython') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_public_names_resolve():
    import dtsgd_viz

    for name in dtsgd_viz.__all__:
        assert getattr(dtsgd_viz, name) is not None, name


def test_readme_commands_are_the_makefile_targets_ci_runs():
    readme = (ROOT / "README.md").read_text()
    assert "make demo" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()
    makefile = (ROOT / "Makefile").read_text()
    assert "dtsgd-viz demo" in makefile and "-m pytest" in makefile


@pytest.mark.slow
def test_cli_demo_runs_saves_and_writes_its_report(tmp_path):
    """The README's demo command end to end, at 12 updates per optimizer: still past the
    report's shard updates 3 and 10, the last (12) standing in for 30 (``shard_steps``),
    so the report holds the same 13 files; its GIF in 3 frames (``--gif-frames``: the
    default 20 take most of the run; test_cli_demo_gif_frames_default checks those). Its
    stated file count is the files it lists and writes, and no progress line is printed
    twice."""
    report = tmp_path / "report"
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "dtsgd_viz.cli",
            "demo",
            "--steps",
            "12",
            "--save",
            str(tmp_path),
            "--out",
            str(report),
            "--gif-frames",
            "3",
        ],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "DTSGD_VIZ_PROGRESS"},  # bars on
    )
    lines = out.stdout.splitlines()
    table = {
        line.split()[0]: line.split()
        for line in lines
        if line.split() and line.split()[0] in ("plain", "momentum", "nesterov")
    }
    assert set(table) == {"plain", "momentum", "nesterov"}
    assert all(row[-1] == "ok" for row in table.values())  # updates follow the rule
    assert "[3/3] nesterov  step 12/12" in out.stderr  # progress goes to stderr
    assert "I0000" not in out.stderr and "E0000" not in out.stderr  # TensorFlow kept quiet
    import dtsgd_viz

    rec = dtsgd_viz.load_recording(tmp_path / "nesterov.npz")
    assert len(rec) == 12 and rec.hyperparameters.nesterov
    # the printed loss is the loss after the last update, at the recorded parameters
    from dtsgd_viz.cli.demo import demo_surface

    assert float(table["nesterov"][3]) == float(f"{demo_surface().value_np(rec.path('w')[-1].astype('float64')):.3e}")
    # the closing note says where the report is and lists every file in it
    note = out.stdout[out.stdout.index("\nReport: ") :].strip().splitlines()
    files = len(os.listdir(report)) - 1  # the index is named apart: "10 files and index.html"
    assert note[0] == f"Report: {files} files and index.html in {report}{os.sep}"
    assert note[-1] == f"Open {report / 'index.html'} in a browser."
    listed = [line.split()[0] for line in note[1:-1]]
    assert "paths.gif" in listed and "update.png" in listed and "shards-nesterov-update012.png" in listed
    assert len(listed) == files and sorted(listed + ["index.html"]) == sorted(os.listdir(report))
    assert "[paths] nesterov  step 40/40" in out.stderr
    assert not (tmp_path / "demo-out").exists()  # --out replaces the default folder
    from PIL import Image

    with Image.open(report / "paths.gif") as gif:  # --gif-frames reaches the report
        assert gif.format == "GIF" and getattr(gif, "n_frames") == 3  # noqa: B009 (PIL's stubs lack it)
    assert "animating paths.gif (3 frames)" in out.stderr
    # no progress line twice (tqdm's close() would print a bar's last line again after the
    # last update printed it): a bar redraws with carriage returns, each a line of the log
    logged = [line.strip() for line in re.split(r"[\r\n]", out.stderr) if line.strip()]
    bars = [line for line in logged if re.match(r"^\[(?:\d/\d|paths)\] ", line)]
    for desc in ("[1/3] plain", "[2/3] momentum", "[3/3] nesterov", "[paths] momentum", "[paths] nesterov"):
        assert any(re.match(re.escape(desc) + r" +step (\d+)/\1 ", b) for b in bars), desc
    said = [line for line in logged if line.startswith(("writing ", "animating "))]
    assert said and [line for line, n in collections.Counter(bars + said).items() if n > 1] == []


def test_cli_demo_gif_frames_default(monkeypatch):
    """Without --gif-frames the demo's GIF has the report's default 20 frames (the CLI
    hands them to the demo, which hands them to write_report; tests/cli/test_demo_report.py
    checks that the GIF holds exactly the frames asked for), and --gif-frames N hands N."""
    import importlib
    import inspect

    from dtsgd_viz.cli import demo, report

    main = importlib.import_module("dtsgd_viz.cli.main")  # the package's `main` is its function
    handed = []
    monkeypatch.setattr(demo, "main", lambda **kwargs: handed.append(kwargs) or 0)
    assert main.main(["demo", "--out", "x"]) == 0 and main.main(["demo", "--gif-frames", "7"]) == 0
    assert [h["gif_frames"] for h in handed] == [20, 7]
    assert main.GIF_FRAMES == report.GIF_FRAMES == 20
    assert inspect.signature(report.write_report).parameters["gif_frames"].default == 20
    assert f"(default {report.GIF_FRAMES};" in " ".join(
        subprocess.run(
            [sys.executable, "-m", "dtsgd_viz.cli", "demo", "--help"], capture_output=True, text=True, check=True
        ).stdout.split()
    )


@pytest.mark.parametrize("given", ["1", "0", "-4", "2.5", "many"])
def test_cli_rejects_bad_gif_frames(given, capsys):
    """A GIF needs two frames to move: --gif-frames takes an integer >= 2, and says what
    it received otherwise (before any run starts)."""
    from dtsgd_viz.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(["demo", "--gif-frames", given])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"--gif-frames must be an integer >= 2 (received {given})" in err, err


def test_cli_rejects_bad_steps():
    out = subprocess.run(
        [sys.executable, "-m", "dtsgd_viz.cli", "demo", "--steps", "0"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "--steps must be >= 1 (received 0)" in out.stderr


def test_cli_app_rejects_a_bad_port_and_builds_the_voila_command():
    out = subprocess.run(
        [sys.executable, "-m", "dtsgd_viz.cli", "app", "--port", "70000"], capture_output=True, text=True
    )
    assert out.returncode == 2 and "port must be an integer in 1..65535. Received: 70000" in out.stderr
    from dtsgd_viz.cli.app import DASHBOARD, voila_command

    cmd = voila_command(9000)
    assert cmd[1] == DASHBOARD and "--port=9000" in cmd and "--Voila.ip=127.0.0.1" in cmd
    assert pathlib.Path(DASHBOARD).is_file()


def test_readme_uses_no_private_module():
    readme = (ROOT / "README.md").read_text()
    for block in re.findall(r"```python\n(.*?)```", readme, re.S):
        assert not re.search(r"\b_[a-z]+\.|import _|from dtsgd_viz import _", block), block


def _tree_state(root):
    """The checkout's top-level entries and the egg-info's files with their times."""
    state = {p.name: None for p in root.iterdir()}
    for info in root.glob("*.egg-info"):
        state.update({str(f): f.stat().st_mtime_ns for f in info.iterdir()})
    return state


QUICK_START_RAN = "the README's example ran"
README_CHECKS_PASSED = "the README example's results checked"


@pytest.fixture(scope="module")
def wheel_quick_start(tmp_path_factory):
    """A wheel of the package built from a copy of the checkout, installed into a folder
    of its own, and the README's example run once from it (that folder first on the path),
    followed by checks of what the example made: the build's output, the install folder,
    the example's process and its folder. The example prints ``QUICK_START_RAN`` once it
    ran and ``README_CHECKS_PASSED`` once the checks of its results passed, so a failure
    of either is told apart."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    wheels, target, source = tmp_path / "wheels", tmp_path / "site", tmp_path / "source"
    # built from a copy: pip wheel writes build/ and the egg-info beside the sources, and the
    # test suite leaves the checkout as it was
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "dtsgd_viz", source / "dtsgd_viz", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    before = _tree_state(ROOT)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(wheels)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    after = _tree_state(ROOT)
    assert build.returncode == 0, build.stderr
    wheel = next(wheels.glob("dtsgd_viz-*.whl"))
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target), str(wheel)],
        check=True,
        timeout=600,
    )
    example = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert example is not None, "README.md has no python example"
    code = example.group(1)
    code = "import dtsgd_viz, sys\nassert dtsgd_viz.__file__.startswith(sys.argv[1]), dtsgd_viz.__file__\n" + code
    code += f"\nprint({QUICK_START_RAN!r}, flush=True)\n"
    code += "assert r.global_values('w', 'velocity').shape == (100, 8, 8)\n"
    code += "assert all(len(v) == 0 for v in dtsgd_viz.reference.check_recording(r).values())\n"
    code += f"print({README_CHECKS_PASSED!r}, flush=True)\n"
    run_in = tmp_path / "example"
    run_in.mkdir()
    env = {**os.environ, "PYTHONPATH": str(target)}
    out = subprocess.run(
        [sys.executable, "-c", code, str(target)], cwd=run_in, env=env, capture_output=True, text=True, timeout=600
    )
    return types.SimpleNamespace(before=before, after=after, build=build, target=target, out=out, folder=run_in)


@pytest.mark.slow
def test_a_wheel_installs_and_runs_the_quick_start(wheel_quick_start):
    """A wheel (not the editable install) holds every module and data file the quick
    start needs: installed into a folder of its own, put first on the path."""
    made = wheel_quick_start
    assert made.after == made.before
    assert "warning" not in made.build.stderr.lower(), made.build.stderr  # no packaging warnings of ours
    assert (made.target / "dtsgd_viz" / "py.typed").exists()
    assert (made.target / "dtsgd_viz" / "cli" / "app" / "dashboard.ipynb").exists()
    assert QUICK_START_RAN in made.out.stdout, made.out.stderr[-3000:]


@pytest.mark.slow
def test_readme_example_runs(wheel_quick_start):
    """The README's example (run once, from the wheel's install of the same sources: the
    fixture) ends without an error, its recording holds every update's velocity and
    follows the rule, and it saved its file."""
    out = wheel_quick_start.out
    assert out.returncode == 0 and README_CHECKS_PASSED in out.stdout, out.stderr[-3000:]
    assert (wheel_quick_start.folder / "nesterov.npz").exists()


@pytest.mark.slow
def test_every_command_has_a_clean_help():
    for args in ([], ["demo"], ["app"], ["launch"]):
        out = subprocess.run(
            [sys.executable, "-m", "dtsgd_viz.cli", *args, "--help"], capture_output=True, text=True, timeout=120
        )
        assert out.returncode == 0 and out.stdout.startswith("usage: dtsgd-viz"), out.stderr
        assert "``" not in out.stdout and "entry point" not in out.stdout
