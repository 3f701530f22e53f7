"""Every view saves as PNG and SVG (issue 3, export)."""

import xml.etree.ElementTree as ET

import matplotlib
import pytest
from PIL import Image

import dtsgd_viz
from dtsgd_viz.theory import surfaces

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def recordings():
    return dtsgd_viz.run(surfaces.RotatedQuadratic(), {
        "momentum": dict(learning_rate=0.05, momentum=0.9),
        "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True)}, steps=6)


@pytest.mark.parametrize("view", ["layout", "shards", "paths"])
def test_views_save_as_png_and_svg(recordings, view, tmp_path):
    rec = recordings["nesterov"]
    fig = {
        "layout": lambda: dtsgd_viz.plot_layout(rec, name="w"),
        "shards": lambda: dtsgd_viz.plot_shards(rec, "w", "velocity", step=3),
        "paths": lambda: dtsgd_viz.plot_paths(recordings, surfaces.RotatedQuadratic(), step=3),
    }[view]()
    png, svg = tmp_path / f"{view}.png", tmp_path / f"{view}.svg"
    fig.savefig(png)
    fig.savefig(svg)
    with Image.open(png) as im:
        w, h = im.size
    assert (w, h) == tuple(round(x) for x in fig.get_size_inches() * fig.dpi)
    root = ET.parse(svg).getroot()
    assert root.tag.endswith("svg")
    texts = {t.get_text() for t in fig.findobj(matplotlib.text.Text) if t.get_text()}
    assert len(root.findall(".//{http://www.w3.org/2000/svg}path")) > 10
    assert texts  # the figure has titles/labels, and SVG keeps text as glyph paths
