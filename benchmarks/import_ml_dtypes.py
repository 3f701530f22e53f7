"""How long ``import ml_dtypes`` takes (TensorFlow imports it first thing) for two of its
versions side by side, with the numpy installed here: plain Python, no dtsgd_viz.

    python benchmarks/import_ml_dtypes.py                 # 0.6.0 against 0.7.0, ~1 minute
    python benchmarks/import_ml_dtypes.py --versions 0.5.4 0.7.0 --rounds 9

Each version is installed (``pip install --target``, no dependencies) into a temporary
folder, then each round starts a fresh ``python -c "import numpy; import ml_dtypes"``
per version, in turn, with that folder first on ``sys.path``, and reads the import's
own time (``-X importtime``: ml_dtypes' cumulative microseconds), so Python's start and
numpy's import are left out. The table gives the median and the longest per version,
and their ratio. ml_dtypes 0.7.0 registers its ufunc loops with numpy one at a time,
which numpy 2.4 makes slow; pyproject.toml keeps ``ml_dtypes<0.7`` for that.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile


def _install(version: str, where: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", where, f"ml_dtypes=={version}"],
        check=True,
    )


def _import_seconds(where: str) -> float:
    code = f"import sys; sys.path.insert(0, {where!r}); import numpy; import ml_dtypes"
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], capture_output=True, text=True, check=True)
    line = [ln for ln in proc.stderr.splitlines() if re.search(r"\|\s*ml_dtypes$", ln)][-1]
    return int(line.split("|")[1]) / 1e6


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--versions", nargs=2, default=["0.6.0", "0.7.0"])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    import numpy

    with tempfile.TemporaryDirectory() as tmp:
        folders = {}
        for v in args.versions:
            folders[v] = f"{tmp}/{v}"
            _install(v, folders[v])
        times: dict[str, list[float]] = {v: [] for v in args.versions}
        for _ in range(args.rounds):
            for v in args.versions:
                times[v].append(_import_seconds(folders[v]))
    a, b = args.versions
    print(f"`import ml_dtypes` with numpy {numpy.__version__}, Python {sys.version.split()[0]}; {args.rounds} rounds\n")
    print("| ml_dtypes | median | longest |")
    print("|---|---|---|")
    for v in args.versions:
        print(f"| {v} | {statistics.median(times[v]) * 1e3:.1f} ms | {max(times[v]) * 1e3:.1f} ms |")
    print(f"\n{b} / {a} (medians): {statistics.median(times[b]) / statistics.median(times[a]):.0f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
