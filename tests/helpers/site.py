"""The documentation site built into a folder, as ``make docs`` builds it (``--strict``)."""

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def build_site(out: pathlib.Path) -> pathlib.Path:
    """Build the site into ``out`` (never into the checkout) and return ``out``; a failed
    build fails the caller's test with mkdocs' own message."""
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(out),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, (
        "mkdocs build --strict failed (pip install -e '.[docs]' installs the tools):\n" + build.stderr[-5000:]
    )
    return out
