"""Issue #19, the widgets: every widget picture shows at 100% in a notebook column (at
most ``style.MAX_WIDTH_PX`` wide, its smallest text at least ``style.NOTE_SIZE``), the
``LiveMonitor`` reads as the other views do (x "update", the blocks named as the shard
views name them, at the ends of their lines, y labels, log norms), the pointer maps
pixels through the root figure (axes in a ``SubFigure``), and a widget's saved picture
carries a caption saying its controls' state. Checked through the artists' data."""

import base64
import importlib.util
import io
import pathlib
import re
import types

import matplotlib
import numpy as np
import pytest
from helpers import synthetic_store as synth
from helpers.builders import Problem, layout, make_sgd, run
from PIL import Image

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.geometry import shard_geometry
from dtsgd_viz.recorder.hostlog import assemble, entry
from dtsgd_viz.recording.store import StoreWriter
from dtsgd_viz.specs import LayoutSpec, MeshSpec
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.figure import headline_texts, new_figure
from dtsgd_viz.views.shards.geometry import block_patches
from dtsgd_viz.widgets import LiveMonitor, ShardExplorer
from dtsgd_viz.widgets._pointer import axes_at, data_to_pixel, pixel_to_data, png_size

matplotlib.use("Agg")

BUILD = pathlib.Path(__file__).resolve().parents[2] / "notebooks" / "build.py"


def _texts(fig):
    """Every visible, non-empty text of ``fig`` (tick labels as last drawn)."""
    from matplotlib.text import Text

    return [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]


def _fits_the_column(widget):
    w, h = png_size(widget.image.value)
    tight = widget.figure.get_tightbbox().width + 2 * style.PAD  # inches, as print_figure
    assert widget.figure.dpi == style.DPI
    assert w <= style.MAX_WIDTH_PX and tight * style.DPI <= style.MAX_WIDTH_PX, (w, tight)
    return w, h


# ---- LiveMonitor ----------------------------------------------------------------------


def _store(tmp_path, mode="full", steps=range(1, 31)):
    path = tmp_path / "run.zarr"
    writer = StoreWriter(path, synth.header(mode))
    writer.append(synth.entries(steps, mode))
    writer.close()
    return path


@pytest.mark.slow
def test_live_monitor_reads_as_the_other_views(tmp_path):
    monitor = LiveMonitor(_store(tmp_path), start=False)
    try:
        w, h = _fits_the_column(monitor)
        # style.LIVE_MONITOR_SIZE at style.DPI, and room for the headline (was 1035 x 360)
        assert (w, h) == (930, round(100 * (style.LIVE_MONITOR_SIZE[1] + 0.8)))
        for ax, xlabel in ((monitor.ax_loss, "updates made (k)"), (monitor.ax_norms, "update")):
            assert ax.get_xlabel() == xlabel and ax.get_ylabel()
            assert ax.get_legend() is None  # the names stand at the line ends instead
        assert monitor.ax_norms.get_ylabel() == "L2 norm of the block"
        assert monitor.ax_norms.get_yscale() == "log" and monitor.ax_loss.get_yscale() == "log"
        # the blocks named and coloured as plot_shards names and colours them
        geom = synth.watched()[0].geometry
        names = [p.label for p in block_patches(geom, synth.MESH.short_device_names)]
        assert names == [f"CPU:{d}" for d in range(8)]
        assert [t.get_text() for t in monitor.block_labels] == names
        assert [ln.get_label() for ln in monitor.norm_lines] == names
        colours = [c for c, _, _ in style.block_styles(geom)]
        assert [ln.get_color() for ln in monitor.norm_lines] == colours
        assert [t.get_bbox_patch().get_facecolor()[:3] for t in monitor.block_labels] == [
            matplotlib.colors.to_rgb(c) for c in colours
        ]
        # right of the data, none over another, each as near its line's end as spacing allows
        renderer = monitor.figure.canvas.get_renderer()
        boxes = [t.get_window_extent(renderer) for t in monitor.block_labels]
        ax_box = monitor.ax_norms.get_window_extent(renderer)
        assert all(b.x0 >= ax_box.x1 for b in boxes)
        assert all(b.x1 <= monitor.figure.bbox.width for b in boxes)
        order = sorted(boxes, key=lambda b: b.y0)
        assert all(a.y1 <= b.y0 + 0.5 for a, b in zip(order, order[1:]))
        assert all(ax_box.y0 <= b.y0 and b.y1 <= ax_box.y1 + 2 for b in boxes)
        # the smallest text at least NOTE_SIZE; no mathtext (its exponents are smaller)
        texts = _texts(monitor.figure)
        assert min(t.get_fontsize() for t in texts) >= style.NOTE_SIZE
        assert not any("$" in t.get_text() for t in texts)
        # the headline states the finding over the 30 stored updates (the loss, then the
        # median block norm), the settings from the store's header; the panels what they draw
        finding, settings = headline_texts(monitor.figure)
        loss_part, norm_part = finding.replace("\n", " ").split("; ")
        assert re.fullmatch(
            r"Loss (falls|grows) [0-9.]+x over updates 1-29|"
            r"Loss stays within 1.5x over updates 1-29",
            loss_part,
        ), loss_part
        v = monitor.state.loss
        assert ("falls" in loss_part) == (v[-1] < v[0] / 1.5)
        assert norm_part.startswith("the velocity's median block norm ")
        assert "lr=0.1, momentum=0.9, Nesterov" in settings
        assert "mesh x=2, y=4 (8 devices)" in settings
        assert monitor.ax_loss.get_title() == "loss"
        assert monitor.ax_loss.get_ylabel() == "loss after k updates"
        assert monitor.ax_norms.get_title() == "‖velocity‖ of each block of 'w'; black: their median"
        # the update axis starts at 0 (not at the first tick past the first update)
        # the loss recorded at update k is the loss after k - 1 updates, drawn at k - 1
        xs, ys = monitor.loss_line.get_data()
        np.testing.assert_array_equal(xs, monitor.state.steps - 1)
        np.testing.assert_array_equal(ys, monitor.state.loss)
        for ax, last in ((monitor.ax_loss, monitor.state.steps[-1] - 1), (monitor.ax_norms, monitor.state.steps[-1])):
            lo, hi = ax.get_xlim()
            assert lo == 0 and hi == last
            assert [t for t in ax.get_xticks() if lo <= t <= hi][0] == 0
    finally:
        monitor.close()


@pytest.mark.slow
def test_a_single_block_is_named_at_its_line_end(tmp_path):
    monitor = LiveMonitor(_store(tmp_path), "b", start=False)
    try:
        (label,) = monitor.block_labels
        assert label.get_text() == "CPU:0-7"  # b is replicated over the 8 devices
        ax = monitor.ax_norms
        last = (monitor.state.steps[-1], monitor.state.norms[-1, 0])
        y = (ax.transData + ax.transAxes.inverted()).transform(last)[1]
        assert label.get_position()[1] == pytest.approx(np.clip(y, 0.02, 0.98))
        assert ax.get_xlim()[1] == monitor.state.steps[-1]  # the line ends by its name
    finally:
        monitor.close()


@pytest.mark.slow
def test_a_loss_below_zero_is_drawn_on_a_linear_axis(tmp_path):
    path = tmp_path / "run.zarr"
    writer = StoreWriter(path, synth.header("full"))
    ws = synth.watched()
    writer.append(synth.entries(range(1, 11)))
    monitor = LiveMonitor(path, start=False)
    try:
        assert monitor.ax_loss.get_yscale() == "log"
        more = []
        for s in range(11, 16):  # the loss goes below 0: a log axis could not show it
            data = {
                (w.name, k): [
                    np.full(w.geometry.global_shape, s, np.float32)[b] for b in w.geometry.blocks
                ]  # a block per device
                for w in ws
                for k in synth.KINDS
            }
            more.append((s, entry((s, 0.1, 5.0 - s), data, ws, synth.KINDS, "full")))
        writer.append(more)
        assert monitor.poll_now()
        assert monitor.ax_loss.get_yscale() == "linear"
        assert monitor.ax_norms.get_yscale() == "log"  # norms stay positive
        assert monitor.ax_loss.get_ylim()[0] <= -10
        _fits_the_column(monitor)
    finally:
        writer.close()
        monitor.close()


@pytest.mark.slow
def test_more_blocks_than_fit_get_a_note(tmp_path):
    """32 blocks cannot be named one above the other in the axes' height: a note says
    where their colours come from instead."""
    mesh = MeshSpec.create({"x": 4, "y": 8})
    geom = shard_geometry((8, 16), LayoutSpec(("x", "y"), mesh))
    held = tuple((g, tuple(d)) for g, d in enumerate(geom.replica_groups))
    ws = [types.SimpleNamespace(name="w", geometry=geom, dtype="float32", layout=geom.layout, held=held)]
    header = assemble(
        [],
        ws,
        ("velocity",),
        "stats",
        [np.zeros((8, 16), np.float32)],
        mesh=mesh,
        momentum=0.9,
        nesterov=False,
        dropped=[],
        applied_momentum=0.9,
    )
    path = tmp_path / "run.zarr"
    writer = StoreWriter(path, header)
    rng = np.random.default_rng(0)
    stats = np.abs(rng.normal(size=(20, 32, 3))).astype(np.float32)
    writer.append(
        [
            (s, entry((s, 0.1, 1.0 / s), {("w", "velocity"): stats[s - 1]}, ws, ("velocity",), "stats"))
            for s in range(1, 21)
        ]
    )
    writer.close()
    monitor = LiveMonitor(path, start=False)
    try:
        assert len(monitor.norm_lines) == 32
        (note,) = monitor.block_labels
        assert note.get_text().startswith("32 blocks") and note.get_fontsize() >= style.NOTE_SIZE
        _fits_the_column(monitor)
    finally:
        monitor.close()


# ---- ShardExplorer ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_recording():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    problem = Problem((4, 8), layout(mesh, "x", "y"), seed=0)
    rec = dtsgd_viz.Recorder()
    run(problem, make_sgd(CONFIGS["nesterov"], mesh, hooks=[rec]), 6, mode="eager-apply")
    return rec.recording


@pytest.mark.slow
def test_shard_explorer_fits_the_column(small_recording):
    explorer = ShardExplorer(small_recording, step=3)
    assert _fits_the_column(explorer) == (930, 500)  # style.SHARD_EXPLORER_SIZE (was 1035 x 450)
    assert tuple(explorer.figure.get_size_inches()) == pytest.approx(style.SHARD_EXPLORER_SIZE)
    explorer.kind.value = "grad"  # an in-place update keeps the size
    explorer.variable.value = "w"
    assert png_size(explorer.image.value) == (930, 500)


# ---- the pointer through a SubFigure ------------------------------------------------------


def test_a_click_in_a_subfigure_maps_to_its_data():
    """A red square drawn at a known data point of an axes inside the right SubFigure:
    the PNG pixel where it is maps back to that point, and the point maps to it."""
    fig = new_figure((6, 3), dpi=100)
    left, right = fig.subfigures(1, 2)
    ax_left, ax = left.add_subplot(), right.add_subplot()
    for a in (ax_left, ax):
        a.set_xlim(0, 10)
        a.set_ylim(0, 10)
    ax.plot([3.0], [7.0], "s", color="red", ms=6)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    red = (rgb[..., 0] > 200) & (rgb[..., 1] < 60) & (rgb[..., 2] < 60)
    ys, xs = np.nonzero(red)
    px, py = xs.mean(), ys.mean()
    size = png_size(png)
    per_pixel = 10.0 / ax.bbox.width
    np.testing.assert_allclose(pixel_to_data(ax, px, py, size), (3.0, 7.0), atol=2 * per_pixel)
    np.testing.assert_allclose(data_to_pixel(ax, 3.0, 7.0, size), (px, py), atol=1.0)
    assert axes_at([ax_left, ax], px, py, size) is ax
    # a PNG shown at half size (ipyevents' dataX/dataY are the image's own pixels)
    np.testing.assert_allclose(
        pixel_to_data(ax, px / 2, py / 2, (size[0] / 2, size[1] / 2)), (3.0, 7.0), atol=4 * per_pixel
    )


# ---- a widget's saved picture carries its controls' state ---------------------------------


@pytest.fixture(scope="module")
def build():
    spec = importlib.util.spec_from_file_location("notebook_build", BUILD)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _png_b64(size=(930, 500)):
    rgb = np.zeros((size[1], size[0], 3), np.uint8)
    rgb[..., 0] = np.arange(size[0]) % 256  # a pattern: the picture must stay as it was
    rgb[..., 1] = (np.arange(size[1]) % 256)[:, None]
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="png")
    return base64.b64encode(buf.getvalue()).decode(), rgb


def _model(name, **state):
    return {"model_name": name, "model_module": "@jupyter-widgets/controls", "state": state}


def _notebook(build, state, model_id):
    out = {
        "output_type": "display_data",
        "metadata": {},
        "data": {build.WIDGET_VIEW: {"model_id": model_id, "version_major": 2}, "text/plain": "VBox()"},
    }
    return {
        "metadata": {"widgets": {build.WIDGET_STATE: {"state": state}}},
        "cells": [{"cell_type": "code", "outputs": [out]}],
    }, out


def test_a_snapshot_says_its_controls_state(build):
    png, rgb = _png_b64()
    ids = lambda *names: [f"IPY_MODEL_{n}" for n in names]  # noqa: E731
    state = {
        "root": _model("VBoxModel", children=ids("top", "mid", "img")),
        "top": _model("HBoxModel", children=ids("var", "kind", "fixed")),
        "var": _model("DropdownModel", description="variable", _options_labels=["w", "b"], index=1),
        "kind": _model(
            "ToggleButtonsModel", description="kind", _options_labels=["param", "velocity", "grad"], index=1
        ),
        "fixed": _model("CheckboxModel", description="fixed scale", value=True),
        "mid": _model("HBoxModel", children=ids("play", "step", "lr", "pick", "label")),
        "play": _model("PlayModel", value=19, min=0, max=59),
        "step": _model("IntSliderModel", description="step", value=20, readout_format="d"),
        "lr": _model("FloatSliderModel", description="lr", value=0.0512, readout_format=".3f"),
        "pick": _model("SelectionSliderModel", description="rule", _options_labels=["plain", "nesterov"], index=0),
        "label": _model("LabelModel", value="update 20 (recorded update 20 of 60)"),
        "img": {
            "model_name": "ImageModel",
            "state": {"format": "png"},
            "buffers": [{"path": ["value"], "encoding": "base64", "data": png}],
        },
    }
    nb, out = _notebook(build, state, "root")
    assert build.widget_snapshots(nb) == 1
    caption = (
        "Static picture of the widget — variable: b · kind: velocity · fixed scale: on"
        " · play: frame 20 of 60 · step: 20 · lr: 0.051 · rule: plain"
        " (run the notebook to use the controls)"
    )
    assert out["metadata"]["dtsgd_viz"]["snapshot_caption"] == caption
    shown = np.asarray(Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"]))).convert("RGB")).astype(int)
    h, w = rgb.shape[:2]
    assert shown.shape[1] == w and shown.shape[0] > h  # as wide; a strip under it
    np.testing.assert_array_equal(shown[:h], rgb)  # the picture itself unchanged
    strip = shown[h:]
    ink = np.nonzero((strip < 160).all(axis=-1).any(axis=1))[0]
    assert len(ink) and ink.max() - ink.min() + 1 >= style.MIN_TEXT_PX  # text, 9 px or taller
    assert build.CAPTION_PX >= style.NOTE_SIZE * style.DPI / 72
    one_line = strip.shape[0]
    # a narrower picture wraps the caption: the strip grows, the width stays
    narrow, _ = _png_b64((300, 80))
    state["img"]["buffers"][0]["data"] = narrow
    nb, out = _notebook(build, state, "root")
    build.widget_snapshots(nb)
    again = Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"])))
    assert again.size[0] == 300 and again.size[1] - 80 > one_line


def test_a_snapshot_of_a_widget_without_controls_says_its_readout(build):
    png, _ = _png_b64((200, 100))
    state = {
        "root": _model("VBoxModel", children=["IPY_MODEL_label", "IPY_MODEL_img"]),
        "label": _model("LabelModel", value="18 steps · closed: the run has ended"),
        "img": {
            "model_name": "ImageModel",
            "state": {"format": "png"},
            "buffers": [{"path": ["value"], "encoding": "base64", "data": png}],
        },
    }
    nb, out = _notebook(build, state, "root")
    build.widget_snapshots(nb)
    assert out["metadata"]["dtsgd_viz"]["snapshot_caption"] == (
        "Static picture of the widget — 18 steps · closed: the run has ended (run the notebook to see it live)"
    )


@pytest.mark.slow
def test_a_real_widgets_saved_state_gives_its_caption(build, small_recording):
    """The state ipywidgets saves of a real ShardExplorer (what nbclient stores)."""
    import ipywidgets

    explorer = ShardExplorer(small_recording, step=3)
    explorer.kind.value = "grad"
    manager = ipywidgets.Widget.get_manager_state(drop_defaults=False)
    nb, out = _notebook(build, manager["state"], explorer.widget.model_id)
    assert build.widget_snapshots(nb) == 1
    assert out["metadata"]["dtsgd_viz"]["snapshot_caption"] == (
        "Static picture of the widget — variable: w · kind: grad"
        " · colour scale fixed over the run: on · play: frame 3 of 6 · update: 3"
        " (run the notebook to use the controls)"
    )
    picture = Image.open(io.BytesIO(base64.b64decode(out["data"]["image/png"])))
    assert picture.size[0] == 930 and picture.size[1] > 500
    assert png_size(explorer.image.value) == (930, 500)  # the widget's own PNG is untouched
