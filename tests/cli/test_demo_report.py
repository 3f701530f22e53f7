"""The demo report (``dtsgd-viz demo --out DIR``): every file is written and opens, the
index shows them all, and the figures hold the recorded data (rebuilt with the same
functions the report uses and compared with the recordings)."""

import contextlib
import html
import html.parser
import io
import os

import numpy as np
import pytest
from helpers.arrows import assert_tail
from PIL import Image

from dtsgd_viz.cli import demo, report
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.mesh.layout import layout_table
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.update import geometry as upd

pytestmark = pytest.mark.slow  # runs the demo once (~15 s)

STEPS = 12  # the sharded demo's updates per optimizer
PATH_STEPS = 10  # the path run's
GIF_FRAMES = 5
WRITING = {}  # what writing the report printed and told its progress callback


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Run the demo's recordings once and write the report, as ``demo.main`` does."""
    runs = demo.run_demo(STEPS)
    shard_recs = {r.name: r.recording for r in runs}
    paths = demo.run_paths(PATH_STEPS)
    out = tmp_path_factory.mktemp("report")
    printed, messages = io.StringIO(), []
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        result = report.write_report(
            out,
            shard_recs,
            paths,
            demo.path_surface(),
            summary=demo.summary(runs),
            gif_frames=GIF_FRAMES,
            progress=messages.append,
        )
    WRITING.update(printed=printed.getvalue(), messages=messages)  # what writing it said
    return result, shard_recs, paths


class _Refs(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.imgs, self.links, self.anchors, self.ids = [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "img":
            self.imgs.append(attrs["src"])
        elif tag == "a" and not attrs["href"].startswith("#"):
            self.links.append(attrs["href"])
        elif tag == "a":
            self.anchors.append(attrs["href"][1:])
        elif "id" in attrs:
            self.ids.append(attrs["id"])


def _png_size(fig):
    """The pixel size of ``fig`` as the report saves it: what it draws (its tight box)
    plus ``PNG_PAD`` inches a side."""
    if not hasattr(fig.canvas, "get_renderer"):  # drawn for saving only: give it Agg's
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    box = fig.get_tightbbox(fig.canvas.get_renderer()).padded(report.PNG_PAD)
    w, h = box.width * report.PNG_DPI, box.height * report.PNG_DPI
    assert w <= fig.get_figwidth() * report.PNG_DPI + 2 * report.PNG_PAD * report.PNG_DPI + 1
    return int(w), int(h)  # Agg truncates the size in pixels


def _same_size(im, fig):
    want = _png_size(fig)
    assert all(abs(a - b) <= 1 for a, b in zip(im.size, want)), (im.size, want)


def _margins(im):
    """Pixels of plain background from each edge of the image to the first drawn one
    (left, top, right, bottom)."""
    a = np.asarray(im.convert("RGB")).astype(int)
    drawn = np.abs(a - a[0, 0]).sum(axis=2) > 30
    rows, cols = np.flatnonzero(drawn.any(axis=1)), np.flatnonzero(drawn.any(axis=0))
    return cols[0], rows[0], a.shape[1] - 1 - cols[-1], a.shape[0] - 1 - rows[-1]


def test_files_exist_and_open(made):
    result, shard_recs, _ = made
    names = [i.filename for i in result.items]
    assert names[:3] == ["summary.txt", "layout.png", "layout.txt"]
    # shard figures: momentum and Nesterov (not plain) after updates 3, 10 and the last (12)
    assert [n for n in names if n.startswith("shards-")] == [
        f"shards-{c}-update{i:03d}.png" for i in (3, 10, 12) for c in ("momentum", "nesterov")
    ]
    assert names[-3:] == ["paths.png", "update.png", "paths.gif"]
    assert sorted(os.listdir(result.directory)) == sorted(names + ["index.html"])
    for path in result.paths():
        assert os.path.getsize(path) > 100, path
    for item in result.items:
        path = os.path.join(result.directory, item.filename)
        if item.filename.endswith(".png"):
            with Image.open(path) as im:
                assert im.format == "PNG"
                assert 500 <= im.width <= 2000 and 400 <= im.height <= 1500, (item, im.size)
        elif item.filename.endswith(".gif"):
            with Image.open(path) as im:
                assert im.format == "GIF" and im.n_frames == GIF_FRAMES > 1
                assert 600 <= im.width <= 1500 and 250 <= im.height <= 1000
                first = np.asarray(im.convert("RGB"))
                im.seek(im.n_frames - 1)
                last = np.asarray(im.convert("RGB"))
            assert np.any(first != last)  # the animation moves
        else:
            assert item.kind == "text"


def test_index_shows_every_file(made):
    result, _, _ = made
    with open(result.index, encoding="utf-8") as f:
        page = f.read()
    refs = _Refs()
    refs.feed(page)
    images = [i.filename for i in result.items if i.kind == "image"]
    texts = [i.filename for i in result.items if i.kind == "text"]
    assert refs.imgs == images and refs.links == texts
    assert refs.anchors == refs.ids and len(refs.ids) == len(result.items)  # contents list
    for name in refs.imgs + refs.links:
        assert os.path.exists(os.path.join(result.directory, name)), name
    for item in result.items:  # every caption is on the page
        assert html.escape(item.caption) in page
    # the text files are shown inline as well
    with open(os.path.join(result.directory, "layout.txt"), encoding="utf-8") as f:
        assert html.escape(f.read().strip()) in page


def test_layout_text_and_figure_are_the_recorded_layout(made):
    result, shard_recs, _ = made
    rec = shard_recs["nesterov"]
    with open(os.path.join(result.directory, "layout.txt"), encoding="utf-8") as f:
        assert f.read() == str(layout_table(rec, name="w")) + "\n"
    fig = report.layout_figure(rec)
    blocks = [p for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("block-")]
    geom = rec.geometry("w")
    assert len(blocks) == geom.num_unique == 8
    with Image.open(os.path.join(result.directory, "layout.png")) as im:
        _same_size(im, fig)
        # cropped to what it draws: no margin past the pad (and a pixel of antialiasing)
        assert max(_margins(im)) <= report.PNG_PAD * report.PNG_DPI + 2, _margins(im)


def test_path_figure_holds_the_recorded_paths_and_arrows(made):
    result, _, paths = made
    step = report.arrow_step(paths)
    fig = report.path_figure(paths, demo.path_surface())
    ax = fig.axes[0]
    lines = {ln.get_gid(): ln for ln in ax.lines if ln.get_gid()}
    u = int(paths["momentum"].steps[step])
    for name, rec in paths.items():
        # each path whole, in its rule's look (no faded part), the update ringed on it
        np.testing.assert_allclose(lines[f"path:{name}"].get_xydata(), rec.path("w"), rtol=1e-6)
        assert f"path-rest:{name}" not in lines
        # the marked position is the parameters after the update, where its arrows end
        np.testing.assert_allclose(lines[f"position:{name}"].get_xydata()[0], rec.path("w")[step + 1])
    arrows = {q.get_gid() for q in ax.collections if (q.get_gid() or "").startswith("arrow:")}
    if arrows:  # every arrow long enough to see: drawn, and the title says so
        assert arrows == {
            "arrow:momentum:gradient",
            "arrow:momentum:momentum",
            "arrow:nesterov:gradient",
            "arrow:nesterov:lookahead",
        }
        assert ax.get_title().startswith(f"Update {u}:")
    else:  # a speck among them: none drawn; plot_update (update.png) takes it apart
        assert ax.get_title() == f"Update {u} marked"
    # one idea: the paths and the loss, no close-ups (update.png holds those)
    assert len(fig.axes) == 2
    assert not [a for a in ax.patches if (a.get_gid() or "").startswith("zoom-box:")]
    with Image.open(os.path.join(result.directory, "paths.png")) as im:
        _same_size(im, fig)


def test_update_figure_takes_the_same_update_apart_up_close(made):
    result, _, paths = made
    step = report.arrow_step(paths)
    fig = report.update_figure(paths, demo.path_surface())
    assert len(fig.axes) == len(paths) + 1  # a panel per run and the lengths chart
    assert fig.get_suptitle().startswith(f"Update {int(paths[next(iter(paths))].steps[step])}:")
    for name, rec in paths.items():
        path = rec.path("w").astype(np.float64)
        (ax,) = [a for a in fig.axes if a.get_title() == rule_name(name)]
        arrows = [q for q in ax.collections if (q.get_gid() or "").startswith(f"zoom-arrow:{name}:")]
        assert len(arrows) == 2  # the momentum (or look-ahead) term, then the gradient
        tip, before = path[step], None
        for q in arrows:  # tip to tail (or beside the arrow before, along it), ending on the recorded next point
            uv = np.array([float(q.U[0]), float(q.V[0])])  # at its true length
            assert_tail(np.asarray(q.get_offsets())[0], tip, before, uv, atol=1e-6)
            tip, before = tip + uv, uv
        np.testing.assert_allclose(tip, path[step + 1], rtol=1e-5, atol=1e-6)
    with Image.open(os.path.join(result.directory, "update.png")) as im:
        _same_size(im, fig)


def _segment_distance(point, end):
    """Distance from ``point`` to the segment from the origin to ``end``."""
    t = np.clip(point @ end / (end @ end), 0.0, 1.0)
    return float(np.hypot(*(point - t * end)))


def test_arrow_step_is_where_the_arrows_leave_the_path(made):
    _, _, paths = made
    scores = []
    for i in range(PATH_STEPS):
        score = 0.0
        for rec in paths.values():
            update = upd.decompose_update(rec, "w", i)
            (_, first), (_, second) = update.terms  # momentum/look-ahead, then gradient
            np.testing.assert_allclose(first + second, update.total, atol=1e-5)
            score += _segment_distance(first, update.total)
        scores.append(score)
    step = report.arrow_step(paths)
    assert scores[step] == pytest.approx(max(scores)) and scores[step] > 0.1
    assert step > 0  # at step 0 the velocity is still zero: no momentum arrow
    assert step == 3  # what the demo's settings give: momentum overshoots, gradient pulls back


def test_shard_figures_hold_the_recorded_velocity(made):
    result, shard_recs, _ = made
    rec = shard_recs["momentum"]
    velocity = rec.global_values("w", "velocity")
    for i in report.shard_steps(len(rec)):
        fig = report.shard_figure(rec, "w", i)
        heat = fig.axes[0].images[0]
        np.testing.assert_array_equal(np.asarray(heat.get_array()), velocity[i])
        # said in the figure's title (its finding) or, drawn into axes, the panel's
        said = " ".join(" ".join(t or "" for t in (*headline_texts(fig), fig.axes[0].get_title())).split())
        assert f"after update {int(rec.steps[i])}" in said
        name = f"shards-momentum-update{int(rec.steps[i]):03d}.png"
        with Image.open(os.path.join(result.directory, name)) as im:
            _same_size(im, fig)


def test_report_prints_nothing_and_rejects_empty_input(made, tmp_path):
    result, shard_recs, paths = made
    # writing the report (the fixture's) printed nothing; its progress went to the callback
    assert WRITING["printed"] == ""
    messages = WRITING["messages"]
    assert messages[0] == "writing layout.png" and messages[-1].startswith("animating")
    with pytest.raises(ValueError, match="path_recordings must be a non-empty dict"):
        report.write_report(tmp_path, shard_recs, {}, demo.path_surface())
    for frames in (1, 2.5, True):  # a GIF needs two frames to move
        with pytest.raises(ValueError, match=rf"gif_frames must be an integer >= 2 \(received {frames}\)"):
            report.write_report(tmp_path / "no", shard_recs, paths, demo.path_surface(), gif_frames=frames)
    assert not (tmp_path / "no").exists()  # refused before writing anything


def test_a_short_demo_names_the_update_its_velocity_table_shows():
    """With fewer than 10 updates the table is of the last one, and says so."""
    runs = demo.run_demo(3)
    text = demo.summary(runs)
    assert "Velocity |v| per device after 3 steps" in text
    nesterov = runs[-1].recording
    norms = np.linalg.norm(nesterov.shard_values("w", "velocity")[2].reshape(8, -1), axis=1)
    table = text[text.index("  nesterov:") :].splitlines()[1:3]
    assert np.allclose([float(x) for row in table for x in row.split()], norms, atol=5e-5)
