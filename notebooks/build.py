"""Regenerate the executed tutorial notebooks from their sources.

    python notebooks/build.py               # every notebooks/src/*.py
    python notebooks/build.py 01 04         # only those whose name starts so

Each ``notebooks/src/NN_name.py`` is a script in the "percent" cell format
(``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell whose lines are
``#`` comments; in code, ``# %magic`` lines become IPython magics, as jupytext does, and a
``# NBVAL_IGNORE_OUTPUT`` line becomes the cell tag ``nbval-ignore-output``, so readers see
the code without the test's markers). It becomes ``notebooks/NN_name.ipynb``, executed top to bottom in
a real IPython kernel (nbclient) with the notebooks folder as working directory,
and saved with its outputs and widget state: that is what readers see and what
nbval compares (``python -m pytest notebooks``).

The kernel runs with ``--IPKernelApp.capture_fd_output=False`` so lines that
TensorFlow's C++ runtime writes straight to the process's stderr are not stored
as outputs (nbval's kernels would not show them, and the comparison would fail);
they go to a log file instead, named when a notebook fails.

A browser-drawn explorer (``dtsgd_viz.web``) runs from the stored widget state with no
kernel (the documentation site replays it); where no script runs (a GitHub file view)
its display carries a still PNG, captioned as such. A kernel-drawn widget
(``dtsgd_viz.widgets``) needs a live kernel; a static reader has only what the notebook
stores. Each widget view therefore also carries the widget's last
picture as an ``image/png`` beside it in the same output (``widget_snapshots``): Jupyter
shows the live widget, a reader that cannot runs it shows the picture. Under the picture
a caption strip says what the widget's controls were set to ("Static picture of the
widget — update: 20 · kind: velocity · ..."), so a static page says which state it shows
and the picture is never a bare copy of a figure shown beside it.
"""

from __future__ import annotations

import argparse
import os
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
CAPTION = "Static picture of the widget{controls} (run the notebook to use the controls)"
# the still of a browser-drawn explorer (dtsgd_viz.web), seen only where scripts do not run
STILL_CAPTION_KEY = "dtsgd_viz_still_caption"  # as dtsgd_viz.web.widget names it
# an explorer's own caption (``still_caption``: the update it was drawn at) comes with its
# still; one without says only what it is
LIVE_CAPTION = "Still picture of the explorer (live in Jupyter and on the documentation site)"
READOUT_CAPTION = "Static picture of the widget{readouts} (run the notebook to see it live)"
CAPTION_PX = 12  # the caption's font size in pixels: style.NOTE_SIZE at style.DPI
CAPTION_PAD = 6  # pixels above and below the caption's lines
CAPTION_INK = (77, 77, 77)  # style.SUBTITLE_COLOR
CAPTION_RULE = (221, 221, 221)  # a 1 px line between the picture and its caption
# controls whose value is one of their options' labels, and the on/off ones
CHOICES = ("DropdownModel", "SelectModel", "ToggleButtonsModel", "SelectionSliderModel", "RadioButtonsModel")
NUMBERS = ("IntSliderModel", "FloatSliderModel", "FloatLogSliderModel")
SWITCHES = ("CheckboxModel", "ToggleButtonModel")


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


NBVAL_MARKERS = ("NBVAL_IGNORE_OUTPUT", "NBVAL_CHECK_OUTPUT", "NBVAL_RAISES_EXCEPTION", "NBVAL_SKIP")


def nbval_tags(body: str) -> tuple[str, list[str]]:
    """A code cell's source without its nbval marker comments, and the cell tags that
    say the same to nbval (``# NBVAL_IGNORE_OUTPUT`` -> ``nbval-ignore-output``), so a
    reader of the notebook sees the code, not the test's instructions.

    >>> nbval_tags("# NBVAL_IGNORE_OUTPUT\\nfrom x import y\\n\\ny()")
    ('from x import y\\n\\ny()', ['nbval-ignore-output'])
    >>> nbval_tags("x = 1  # NBVAL_SKIP stays: only a whole-line marker moves")
    ('x = 1  # NBVAL_SKIP stays: only a whole-line marker moves', [])
    """
    keep, tags = [], []
    for line in body.splitlines():
        marker = line.strip().lstrip("#").strip()
        if line.strip().startswith("#") and marker in NBVAL_MARKERS:
            tags.append(marker.lower().replace("_", "-"))
        else:
            keep.append(line)
    return "\n".join(keep).strip("\n"), tags


def notebook(source: pathlib.Path):
    """The (unexecuted) notebook of a percent-format script; nbval's marker comments
    become cell tags (``nbval_tags``)."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = []
    for kind, body in parse_cells(source.read_text()):
        if kind == "markdown":
            nb.cells.append(nbformat.v4.new_markdown_cell(body))
            continue
        body, tags = nbval_tags(body)
        cell = nbformat.v4.new_code_cell(body)
        if tags:
            cell.metadata["tags"] = tags
        nb.cells.append(cell)
    for i, cell in enumerate(nb.cells):
        cell.id = f"{source.stem[:2]}-{i:02d}"  # stable ids: rebuilding changes no line
    nb.metadata["kernelspec"] = dict(KERNEL)
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def control_text(model) -> str | None:
    """What one saved control says: ``"description: value"`` (the option's label of a
    Dropdown, Select, ToggleButtons or SelectionSlider; a slider's value; on/off of a
    Checkbox; the frame of a Play, from 1), None for a model that is not a control.

    >>> control_text({"model_name": "ToggleButtonsModel", "state": {
    ...     "description": "kind", "_options_labels": ["param", "velocity"], "index": 1}})
    'kind: velocity'
    >>> control_text({"model_name": "CheckboxModel", "state": {"description": "fixed scale",
    ...                                                       "value": True}})
    'fixed scale: on'
    """
    name, st = model.get("model_name"), model.get("state", {})
    if name in CHOICES:
        labels, i = st.get("_options_labels", []), st.get("index")
        value = labels[i] if isinstance(i, int) and 0 <= i < len(labels) else "none"
    elif name in NUMBERS:
        value = st.get("value")
        try:
            value = format(value, st.get("readout_format") or "")
        except (TypeError, ValueError):
            value = str(value)
    elif name in SWITCHES:
        value = "on" if st.get("value") else "off"
    elif name == "PlayModel":  # frames counted from 1, as a reader counts them
        lo, v, hi = (st.get(k, 0) for k in ("min", "value", "max"))
        value = f"frame {v - lo + 1} of {hi - lo + 1}"
        st = dict(st, description=st.get("description") or "play")
    else:
        return None
    description = str(st.get("description") or "").strip()
    return f"{description}: {value}" if description else str(value)


def snapshot_caption(state, model_id) -> str:
    """The caption of the widget ``model_id``'s saved picture: its controls, read from
    the saved widget ``state`` depth first through the boxes' children (as the picture
    is found), in the order they stand; a widget without controls (``LiveMonitor``):
    its readouts (``Label`` texts) instead.

    >>> state = {"v": {"model_name": "VBoxModel", "state": {"children": ["IPY_MODEL_s"]}},
    ...          "s": {"model_name": "IntSliderModel", "state": {"description": "update",
    ...                                                          "value": 20}}}
    >>> snapshot_caption(state, "v")
    'Static picture of the widget — update: 20 (run the notebook to use the controls)'
    """
    parts, readouts, seen = [], [], set()

    def walk(model_id):
        model = state.get(model_id)
        if model is None or model_id in seen:
            return
        seen.add(model_id)
        text = control_text(model)
        if text is not None:
            parts.append(text)
        elif model.get("model_name") == "LabelModel" and model["state"].get("value"):
            readouts.append(str(model["state"]["value"]))
        for child in model.get("state", {}).get("children", []):
            walk(child.removeprefix("IPY_MODEL_"))

    walk(model_id)
    if not parts and readouts:
        return READOUT_CAPTION.format(readouts=" — " + " · ".join(readouts))
    return CAPTION.format(controls=" — " + " · ".join(parts) if parts else "")


def _wrap(text, font, width) -> list[str]:
    lines = [""]
    for word in text.split(" "):
        line = f"{lines[-1]} {word}" if lines[-1] else word
        if font.getlength(line) <= width or not lines[-1]:
            lines[-1] = line
        else:
            lines.append(word)
    return lines


def captioned_png(png_b64: str, caption: str) -> str:
    """The base64 PNG ``png_b64`` with a white strip under it holding ``caption``
    (``CAPTION_PX`` DejaVu Sans, wrapped to the picture's width): the width and the
    picture itself unchanged."""
    import base64
    import io

    from matplotlib import font_manager
    from PIL import Image, ImageDraw, ImageFont

    picture = Image.open(io.BytesIO(base64.b64decode(png_b64)))
    picture = picture.convert("RGBA" if "A" in picture.getbands() or picture.mode == "P" else "RGB")
    font = ImageFont.truetype(font_manager.findfont("DejaVu Sans"), CAPTION_PX)
    w, h = picture.size
    lines = _wrap(caption, font, w - 2 * CAPTION_PAD)
    step = round(1.3 * CAPTION_PX)
    out = Image.new(picture.mode, (w, h + 1 + 2 * CAPTION_PAD + step * len(lines)), "white")
    out.paste(picture, (0, 0))
    draw = ImageDraw.Draw(out)
    draw.line([(0, h), (w - 1, h)], fill=CAPTION_RULE)
    for k, line in enumerate(lines):
        draw.text((CAPTION_PAD, h + 1 + CAPTION_PAD + k * step), line, font=font, fill=CAPTION_INK)
    buf = io.BytesIO()
    out.save(buf, format="png", optimize=True)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def widget_snapshots(nb) -> int:
    """Add to each widget view output the widget's last picture (``image/png``): the
    first PNG ``Image`` widget found, depth first, in the saved widget state under the
    view's model, with a caption strip under it saying its controls' state
    (``snapshot_caption``; the text is also kept in the output's metadata, under
    ``dtsgd_viz``). Returns how many views got one.

    >>> import base64, io; from PIL import Image
    >>> buf = io.BytesIO(); Image.new("RGB", (400, 100), "white").save(buf, format="png")
    >>> state = {"v": {"model_name": "VBoxModel", "state": {
    ...              "children": ["IPY_MODEL_c", "IPY_MODEL_i"]}},
    ...          "c": {"model_name": "CheckboxModel", "state": {"description": "fixed scale",
    ...                                                         "value": True}},
    ...          "i": {"model_name": "ImageModel", "state": {"format": "png"},
    ...                "buffers": [{"path": ["value"], "encoding": "base64",
    ...                             "data": base64.b64encode(buf.getvalue()).decode()}]}}
    >>> nb = {"metadata": {"widgets": {WIDGET_STATE: {"state": state}}},
    ...       "cells": [{"cell_type": "code", "outputs": [{"output_type": "display_data",
    ...                  "data": {WIDGET_VIEW: {"model_id": "v"}, "text/plain": "VBox()"}}]}]}
    >>> widget_snapshots(nb)
    1
    >>> out = nb["cells"][0]["outputs"][0]
    >>> out["metadata"]["dtsgd_viz"]["snapshot_caption"]
    'Static picture of the widget — fixed scale: on (run the notebook to use the controls)'
    >>> Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"]))).size
    (400, 145)
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
            if (
                WIDGET_VIEW in data
                and "image/png" in data
                and state.get(data[WIDGET_VIEW]["model_id"], {}).get("model_module") == "anywidget"
            ):
                # a browser-drawn explorer (dtsgd_viz.web) brought its own still; said as such
                if "dtsgd_viz" not in out.get("metadata", {}):
                    # the explorer's own caption (dtsgd_viz.web.widget.STILL_CAPTION_KEY), else what it is
                    caption = out.get("metadata", {}).get(STILL_CAPTION_KEY) or LIVE_CAPTION
                    png = data["image/png"]
                    data["image/png"] = captioned_png("".join(png) if isinstance(png, list) else png, caption)
                    out.setdefault("metadata", {})["dtsgd_viz"] = {"snapshot_caption": caption}
                    added += 1
            elif WIDGET_VIEW in data:
                model_id = data[WIDGET_VIEW]["model_id"]
                png = picture(model_id, set())
                if png is not None:
                    caption = snapshot_caption(state, model_id)
                    data["image/png"] = captioned_png(png, caption)
                    out.setdefault("metadata", {})["dtsgd_viz"] = {"snapshot_caption": caption}
                    added += 1
    return added


def build(source: pathlib.Path, log_dir: pathlib.Path) -> tuple[pathlib.Path, float]:
    """Execute ``source``'s notebook and write it next to the sources' folder."""
    import nbformat
    from nbclient import NotebookClient

    nb = notebook(source)
    log = log_dir / f"{source.stem}.kernel.log"
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name=KERNEL["name"],
        record_timing=False,
        store_widget_state=True,
        resources={"metadata": {"path": str(HERE)}},
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
    nb.metadata["language_info"] = {
        k: nb.metadata["language_info"][k] for k in ("name", "version") if k in nb.metadata["language_info"]
    }
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
    # the browser-drawn explorers (dtsgd_viz.web) add a still PNG to each display, for
    # readers that run no scripts (dtsgd_viz.web.widget.STILLS_ENV; the kernels inherit it)
    os.environ["DTSGD_VIZ_STILLS"] = "1"
    logs = pathlib.Path(tempfile.mkdtemp(prefix="dtsgd-nb-"))  # kept if a notebook fails
    for source in sources:
        target, seconds = build(source, logs)
        print(f"{target.relative_to(HERE.parent)}  executed in {seconds:.1f} s", flush=True)
    shutil.rmtree(logs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
