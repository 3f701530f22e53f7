"""Regenerate the executed tutorial notebooks from their sources.

    python notebooks/build.py               # every notebooks/src/*.py
    python notebooks/build.py 01 04         # only those whose name starts so

Each ``notebooks/src/NN_name.py`` is a script in the "percent" cell format
(``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell whose lines are
``#`` comments; in code, ``# %magic`` lines become IPython magics, as jupytext does). It becomes ``notebooks/NN_name.ipynb``, executed top to bottom in
a real IPython kernel (nbclient) with the notebooks folder as working directory,
and saved with its outputs and widget state: that is what readers see and what
nbval compares (``python -m pytest notebooks``).

The kernel runs with ``--IPKernelApp.capture_fd_output=False`` so lines that
TensorFlow's C++ runtime writes straight to the process's stderr are not stored
as outputs (nbval's kernels would not show them, and the comparison would fail);
they go to a log file instead, named when a notebook fails.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import sys
import tempfile
import time

HERE = pathlib.Path(__file__).resolve().parent
SOURCES = HERE / "src"
MAGIC = re.compile(r"^# %[a-z]")
KERNEL = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}


def parse_cells(text: str) -> list[tuple[str, str]]:
    """``[(cell_type, source)]`` of a percent-format script.

    >>> parse_cells("# %% [markdown]\\n# # Title\\n#\\n# Some *prose*.\\n\\n# %%\\nx = 1\\nx\\n")
    [('markdown', '# Title\\n\\nSome *prose*.'), ('code', 'x = 1\\nx')]
    >>> parse_cells("# %%\\n# %matplotlib inline\\n# a comment\\n")
    [('code', '%matplotlib inline\\n# a comment')]
    """
    cells, kind, lines = [], None, []

    def flush():
        if kind is None:
            return
        body = "\n".join(lines).strip("\n")
        if kind == "code":  # IPython magics are commented out in the script: "# %matplotlib"
            body = "\n".join(line[2:] if MAGIC.match(line) else line for line in body.splitlines())
        if kind == "markdown":
            out = []
            for line in body.splitlines():
                if line and not line.startswith("#"):
                    raise ValueError(f"A markdown cell line must start with '#'. Received: {line!r}.")
                out.append(line[2:] if line.startswith("# ") else line[1:])
            body = "\n".join(out)
        if body:
            cells.append((kind, body))

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            marker = line[4:].strip()
            if marker not in ("", "[markdown]"):
                raise ValueError(f"Unknown cell marker {line!r}: use '# %%' or '# %% [markdown]'.")
            kind, lines = ("markdown" if marker else "code"), []
        elif kind is None:
            if line.strip():
                raise ValueError(f"Text before the first '# %%' marker: {line!r}.")
        else:
            lines.append(line)
    flush()
    return cells


def notebook(source: pathlib.Path):
    """The (unexecuted) notebook of a percent-format script."""
    import nbformat
    nb = nbformat.v4.new_notebook()
    make = {"code": nbformat.v4.new_code_cell, "markdown": nbformat.v4.new_markdown_cell}
    nb.cells = [make[kind](body) for kind, body in parse_cells(source.read_text())]
    for i, cell in enumerate(nb.cells):
        cell.id = f"{source.stem[:2]}-{i:02d}"  # stable ids: rebuilding changes no line
    nb.metadata["kernelspec"] = dict(KERNEL)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def build(source: pathlib.Path, log_dir: pathlib.Path) -> tuple[pathlib.Path, float]:
    """Execute ``source``'s notebook and write it next to the sources' folder."""
    import nbformat
    from nbclient import NotebookClient

    nb = notebook(source)
    log = log_dir / f"{source.stem}.kernel.log"
    client = NotebookClient(
        nb, timeout=600, kernel_name=KERNEL["name"], record_timing=False,
        store_widget_state=True, resources={"metadata": {"path": str(HERE)}},
        extra_arguments=["--IPKernelApp.capture_fd_output=False"],
    )
    start = time.perf_counter()
    with open(log, "wb") as f:
        try:
            client.execute(stdout=f, stderr=f)
        except Exception:
            print(f"{source.name} failed; the kernel's own output is in {log}", file=sys.stderr)
            raise
    seconds = time.perf_counter() - start
    nb.metadata["language_info"] = {k: nb.metadata["language_info"][k]
                                    for k in ("name", "version") if k in nb.metadata["language_info"]}
    target = HERE / f"{source.stem}.ipynb"
    nbformat.write(nb, str(target))
    return target, seconds


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate the executed tutorial notebooks.")
    parser.add_argument("names", nargs="*", help="prefixes of the notebooks to build (default: all)")
    args = parser.parse_args(argv)
    sources = sorted(SOURCES.glob("[0-9][0-9]_*.py"))
    if args.names:
        sources = [s for s in sources if any(s.stem.startswith(n) for n in args.names)]
        if not sources:
            parser.error(f"no source in {SOURCES} starts with {args.names}")
    logs = pathlib.Path(tempfile.mkdtemp(prefix="dtsgd-nb-"))  # kept if a notebook fails
    for source in sources:
        target, seconds = build(source, logs)
        print(f"{target.relative_to(HERE.parent)}  executed in {seconds:.1f} s", flush=True)
    shutil.rmtree(logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
