"""Every picture the committed tutorials show fits a notebook column at 100%: at most
950 px wide as stored (IPython shows a PNG at its pixel size, shrunk when wider than the
column), so no figure's text is shown smaller than it was drawn (issue #19)."""

import base64
import json
import pathlib
import struct

import pytest

from dtsgd_viz.views.core import style

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parents[2] / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def pictures(path):
    nb = json.loads(path.read_text())
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            png = out.get("data", {}).get("image/png")
            if png:
                raw = base64.b64decode("".join(png) if isinstance(png, list) else png)
                assert raw[:8] == b"\x89PNG\r\n\x1a\n"
                yield i, struct.unpack(">II", raw[16:24])


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[nb.stem for nb in NOTEBOOKS])
def test_every_tutorial_picture_fits_the_notebook_column(notebook):
    found = list(pictures(notebook))
    assert found, notebook.name
    wide = [(cell, size) for cell, size in found if size[0] > style.MAX_WIDTH_PX]
    assert wide == [], f"{notebook.name}: cells wider than {style.MAX_WIDTH_PX} px: {wide}"
