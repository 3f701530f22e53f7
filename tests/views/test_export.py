"""Every view saves as PNG and SVG (issue 3, export)."""

import xml.etree.ElementTree as ET

import matplotlib
import numpy as np
import pytest
from PIL import Image

import dtsgd_viz
from dtsgd_viz.theory import surfaces

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def recordings():
    return dtsgd_viz.run(
        surfaces.RotatedQuadratic(),
        {
            "momentum": dict(learning_rate=0.05, momentum=0.9),
            "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
        },
        steps=6,
    )


@pytest.mark.parametrize("view", ["layout", "shards", "paths"])
@pytest.mark.slow
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


# ---- one scale: every figure at notebook size (issue 19) ------------------------------


def notebook_png_width(fig) -> int:
    """The width of the PNG a notebook shows for ``fig`` (IPython's ``print_figure``:
    ``fig.dpi``, cropped to the artists with 0.1 in of padding)."""
    import io

    from IPython.core.pylabtools import print_figure

    with Image.open(io.BytesIO(print_figure(fig, "png"))) as im:
        return im.width


def smallest_text_px(fig, dpi=None) -> tuple[float, str]:
    """The smallest drawn text of ``fig`` in pixels at ``dpi`` (default: the figure's)."""
    dpi = fig.dpi if dpi is None else dpi
    fig.draw_without_rendering()
    texts = [t for t in fig.findobj(matplotlib.text.Text) if t.get_text().strip() and t.get_visible()]
    t = min(texts, key=lambda t: t.get_fontsize())
    return t.get_fontsize() * dpi / 72, t.get_text()


@pytest.fixture(scope="module")
def story():
    """The runs of the momentum story: tutorial 03's three rules, every update recorded."""
    from helpers.builders import tutorial_03_runs

    return tutorial_03_runs(steps=30)


FIGURES = {
    "paths": lambda s, r: dtsgd_viz.plot_paths(r, s, step=5),
    "paths-auto": lambda s, r: dtsgd_viz.plot_paths(r, s),
    "update": lambda s, r: dtsgd_viz.plot_update(r, s, step=5),
    "modes": lambda s, r: dtsgd_viz.plot_modes(r, s),
    "phase": lambda s, r: dtsgd_viz.plot_phase(
        s, np.geomspace(1e-3, 0.2, 12), np.linspace(0, 0.95, 10), steps=60, tol=1e-3
    ),
    "animation": lambda s, r: _animation_figure(r, s),
}


def _animation_figure(recs, surface):
    anim = dtsgd_viz.animate(recs, surface, frames=2)
    anim._draw_was_started = True  # never saved here: keep matplotlib's deletion warning quiet
    return anim._fig


@pytest.mark.parametrize("view", sorted(FIGURES))
@pytest.mark.slow
def test_every_figure_fits_a_notebook_column_and_its_smallest_text_reads(story, view):
    from dtsgd_viz.views.core import style

    s, recs = story
    fig = FIGURES[view](s, recs)
    assert fig.dpi == style.DPI
    assert fig.get_size_inches()[0] * fig.dpi <= style.MAX_WIDTH_PX
    assert notebook_png_width(fig) <= style.MAX_WIDTH_PX  # as the notebook shows it
    px, text = smallest_text_px(fig)
    assert px >= style.MIN_TEXT_PX, (px, text)
    if view == "animation":  # the GIF the demo writes, at its own dpi
        assert smallest_text_px(fig, style.GIF_DPI)[0] >= style.MIN_TEXT_PX


@pytest.mark.slow
def test_block_rates_fit_a_notebook_column():
    from dtsgd_viz.views.core import style

    s = surfaces.ShardedQuadratic()
    rec = dtsgd_viz.run(s, {"nesterov": dict(learning_rate=1.5, momentum=0.6, nesterov=True)}, steps=20)["nesterov"]
    fig = dtsgd_viz.plot_block_rates(rec, s)
    assert notebook_png_width(fig) <= style.MAX_WIDTH_PX
    assert smallest_text_px(fig)[0] >= style.MIN_TEXT_PX


def run_lines(fig) -> dict:
    """``{(view, rule): (colour, dash pattern, width)}`` of the lines that stand for a
    rule: paths, loss lines, mode curves, rate curves, the ratio map's boundaries."""
    from matplotlib.colors import to_hex

    out = {}
    for ax in fig.axes:
        for line in ax.lines:
            gid = line.get_gid() or ""
            kind, _, rest = gid.partition(":")
            rule = rest.rsplit(":", 1)[-1]
            if kind in ("path", "loss", "mode", "rate", "ratio-boundary") and rule in ("plain", "momentum", "nesterov"):
                look = (to_hex(line.get_color()), str(line._unscaled_dash_pattern), line.get_linewidth())
                out.setdefault(rule, set()).add(look)
    return out


@pytest.mark.slow
def test_one_rule_has_one_look_in_every_figure_and_nesterov_is_never_the_faintest(story):
    from dtsgd_viz.views.core import style

    s, recs = story
    looks = {}
    for view in ("paths", "update", "modes", "phase"):
        for rule, seen in run_lines(FIGURES[view](s, recs)).items():
            looks.setdefault(rule, set()).update(seen)
    assert set(looks) == {"plain", "momentum", "nesterov"}
    for rule, seen in looks.items():
        assert len(seen) == 1, (rule, seen)  # one colour, dash pattern and width
        ((color, _, lw),) = seen
        assert (color, lw) == (style.RULE_LOOKS[rule].color.lower(), style.RULE_LOOKS[rule].lw)
    widths = {rule: next(iter(seen))[2] for rule, seen in looks.items()}
    assert widths["nesterov"] >= max(widths.values())
    # the narrower path over the wider: plain over momentum over Nesterov, so each shows where they coincide
    fig = FIGURES["paths"](s, recs)
    z = {
        line.get_gid()[5:]: line.get_zorder()
        for line in fig.axes[0].lines
        if (line.get_gid() or "").startswith("path:")
    }
    assert z["plain"] > z["momentum"] > z["nesterov"]
