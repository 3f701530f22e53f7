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

A widget needs a live kernel; a static reader (GitHub, the documentation site) has only
what the notebook stores. Each widget view therefore also carries the widget's last
picture as an ``image/png`` beside it in the same output (``widget_snapshots``): Jupyter
shows the live widget, a reader that cannot runs it shows the picture.
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
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


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


def widget_snapshots(nb) -> int:
    """Add to each widget view output the widget's last picture (``image/png``): the
    first PNG ``Image`` widget found, depth first, in the saved widget state under the
    view's model. Returns how many views got one.

    >>> state = {"v": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_i"]}},
    ...          "i": {"model_name": "ImageModel", "state": {"format": "png"},
    ...                "buffers": [{"path": ["value"], "encoding": "base64", "data": "iVBO"}]}}
    >>> nb = {"metadata": {"widgets": {WIDGET_STATE: {"state": state}}},
    ...       "cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data",
    ...                  "data": {WIDGET_VIEW: {"model_id": "v"}, "text/plain": "VBox()"}}]}]}
    >>> widget_snapshots(nb), nb["cells"][0]["outputs"][0]["data"]["image/png"]
    (1, 'iVBO')
    """
    state = nb.get("metadata", {}).get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})

    def picture(model_id, seen):
        model = state.get(model_id)
        if model is None or model_id in seen:
            return None
        seen.add(model_id)
        if model["model_name"] == "ImageModel" and model["state"].get("format") == "png":
            for buffer in model.get("buffers", []):
                if buffer["path"] == ["value"] and buffer.get("encoding") == "base64":
                    return buffer["data"]
        for child in model["state"].get("children", []):
            found = picture(child.removeprefix("IPY_MODEL_"), seen)
            if found is not None:
                return found
        return None

    added = 0
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                png = picture(data[WIDGET_VIEW]["model_id"], set())
                if png is not None:
                    data["image/png"] = png
                    added += 1
    return added


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
    widget_snapshots(nb)
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
