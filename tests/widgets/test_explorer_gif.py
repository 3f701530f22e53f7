"""The explorer's animated twin, ``animate(...).save("paths.gif")``: frames as wide as
the figures (their type at the figures' sizes), one palette for every frame, so the
still parts stay the same pixels and each frame stores only what moved."""

import io

import matplotlib
import numpy as np
import pytest
from matplotlib.animation import AbstractMovieWriter

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.paths.animation import shared_palette, with_palette
from dtsgd_viz.views.paths.loss import MEAN_LABEL

pytestmark = pytest.mark.slow  # every check draws GIF frames of real runs

matplotlib.use("Agg")

ROTATED = surfaces.RotatedQuadratic()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    recs = dtsgd_viz.run(ROTATED, CONFIGS, 8)
    anim = dtsgd_viz.animate(recs, ROTATED, frames=[2, 5, 8], zoom=False, hold=0)
    out = tmp_path_factory.mktemp("gif") / "paths.gif"
    anim.save(out, writer="pillow", dpi=60)  # asked lower than the figures' dpi
    return anim, out


def frames_of(path):
    from PIL import Image

    out = []
    with Image.open(path) as im:
        for n in range(im.n_frames):
            im.seek(n)
            out.append((np.asarray(im.convert("RGB")), im.getpalette()))
        size = im.size
    return out, size


def test_gif_frames_are_as_wide_as_the_figures(saved):
    anim, path = saved
    frames, (width, height) = frames_of(path)
    w_in, h_in = anim._fig.get_size_inches()
    assert (width, height) == (round(w_in * style.DPI), round(h_in * style.DPI))
    assert width <= style.MAX_WIDTH_PX and len(frames) == 3
    assert not np.array_equal(frames[0][0], frames[-1][0])  # it moves


class Grab(AbstractMovieWriter):
    """A movie writer keeping each frame as an RGB image (matplotlib's writer API)."""

    def setup(self, fig, outfile, dpi=None):
        super().setup(fig, outfile, dpi)
        self.frames = []

    def grab_frame(self, **kwargs):
        from PIL import Image

        buf = io.BytesIO()
        self.fig.savefig(buf, format="rgba", dpi=self.dpi)
        w, h = (round(x * self.dpi) for x in self.fig.get_size_inches())
        rgba = np.frombuffer(buf.getvalue(), np.uint8).reshape(h, w, 4)
        self.frames.append(Image.fromarray(rgba[..., :3].copy()))

    def finish(self):
        pass


def test_gif_frames_share_one_palette_and_store_only_what_moved(saved, tmp_path):
    from matplotlib.animation import FuncAnimation
    from matplotlib.colors import to_rgb

    anim, _ = saved
    grab = Grab(fps=5)
    FuncAnimation.save(anim, tmp_path / "frames.raw", writer=grab, dpi=style.DPI)
    rgb = grab.frames
    shared = shared_palette(rgb)
    one = [with_palette(f, shared) for f in rgb]
    assert len({tuple(f.getpalette()) for f in one}) == 1
    a, b = (np.asarray(f) for f in one[:2])
    assert 0.5 < (a == b).mean() < 1.0  # the still parts: the same palette indices

    def size(images):
        buf = io.BytesIO()
        images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=200, loop=0)
        return len(buf.getvalue())

    own = [with_palette(f) for f in rgb]  # each frame its own adaptive palette
    assert size(one) < 0.9 * size(own)
    # the kept colours (the minimum's yellow among them) are exact in the shared palette
    pal = np.reshape(shared.getpalette()[: 3 * 256], (-1, 3))
    yellow = np.round(np.array(to_rgb(style.MINIMUM_FACE)) * 255)
    assert np.any(np.all(pal == yellow, axis=1))


# ---- every frame of the demo's GIF reads: no label on another ------------------------


@pytest.fixture(scope="module")
def demo_gif():
    """The demo report's animation (``cli.report``): momentum vs Nesterov on the demo's
    surface, 20 frames over 40 updates, the last held."""
    from dtsgd_viz.cli import demo, report

    recs = dtsgd_viz.run(demo.path_surface(), demo.PATH_CONFIGS, demo.PATH_STEPS)
    anim = dtsgd_viz.animate(recs, demo.path_surface(), frames=report.GIF_FRAMES, interval=report.GIF_INTERVAL, hold=2)
    return anim


def each_frame(anim):
    """Draw every frame of ``anim`` as its writer does; yields (update, figure)."""
    fig = anim._fig
    for update, frame in zip(anim.frame_updates, anim.new_frame_seq()):
        anim._func(frame)
        fig.canvas.draw()
        yield update, fig


def _char_box(text, renderer):
    from matplotlib.text import Text

    return Text.get_window_extent(text, renderer)  # its characters (an annotation's holds its leader)


def _leader(text):
    """The drawn leader of an annotation, in pixels: its arrow's vertices (drawn: display)."""
    from matplotlib.text import Annotation

    if not isinstance(text, Annotation) or text.arrow_patch is None:
        return np.zeros((0, 2))
    verts = np.asarray(text.arrow_patch.get_path().vertices, np.float64)
    if len(verts) < 2:
        return verts
    t = np.linspace(0.0, 1.0, 60)[:, None]
    return np.concatenate([a + t * (b - a) for a, b in zip(verts[:-1], verts[1:])])


def _reading(fig):
    """What the tests read of a frame, taken right after it is drawn: per axes its title,
    limits and frame, its visible texts (characters' box, whole extent with the leader,
    the leader's points, size, gid) and its lines (gid, first point in data and in
    pixels, marker face, size, zorder); the close-ups' insets after the figure's axes."""
    from types import SimpleNamespace as NS

    r = fig.canvas.get_renderer()
    axes = []
    for ax in [*fig.axes, *(c for a in fig.axes for c in a.child_axes)]:  # the insets too
        texts = [
            NS(
                text=t.get_text(),
                gid=t.get_gid() or "",
                fontsize=t.get_fontsize(),
                chars=_char_box(t, r).frozen(),
                extent=t.get_window_extent(r).frozen(),
                leader=_leader(t),
            )
            for t in ax.texts
            if t.get_visible()
        ]
        lines = []
        for ln in ax.lines:
            xy = np.asarray(ln.get_xydata(), np.float64).reshape(-1, 2)
            first = xy[0].copy() if len(xy) else None
            lines.append(
                NS(
                    gid=ln.get_gid() or "",
                    xy=first,
                    px=None if first is None else ax.transData.transform(first),
                    face=ln.get_markerfacecolor(),
                    size=ln.get_markersize(),
                    zorder=ln.get_zorder(),
                )
            )
        axes.append(
            NS(
                title=ax.get_title(),
                xlim=ax.get_xlim(),
                ylim=ax.get_ylim(),
                frame=ax.get_window_extent(r).frozen(),
                texts=texts,
                lines=lines,
            )
        )
    return NS(dpi=fig.dpi, axes=axes)


@pytest.fixture(scope="module")
def demo_frames(demo_gif):
    """Every frame of the demo's GIF (its 20 and the held last), drawn once in the
    writer's order from the first, each read right after it is drawn: the tests below
    check these readings instead of drawing all the frames again each."""
    frames = [(update, _reading(fig)) for update, fig in each_frame(demo_gif)]
    assert [u for u, _ in frames] == demo_gif.frame_updates  # every frame drawn
    return frames


def test_no_label_of_any_gif_frame_overlaps_another_or_is_crossed_by_a_leader(demo_frames):
    seen = 0
    for update, frame in demo_frames:
        for ax in frame.axes:
            texts = [t for t in ax.texts if t.text.strip()]
            for i, a in enumerate(texts):
                for b in texts[i + 1 :]:
                    assert not a.chars.overlaps(b.chars), (update, a.text, b.text)
                lead = a.leader
                for b in texts:
                    if b is a or not len(lead):
                        continue
                    B = b.chars
                    inside = (
                        (lead[:, 0] > B.x0 + 0.5)
                        & (lead[:, 0] < B.x1 - 0.5)
                        & (lead[:, 1] > B.y0 + 0.5)
                        & (lead[:, 1] < B.y1 - 0.5)
                    )
                    assert not inside.any(), (update, f"{a.text!r}'s leader through {b.text!r}")
            seen += len(texts) if "· spans 1/" in ax.title else 0
    # the close-ups' names of their terms were there to check (an inset's are not)
    assert seen >= 2 * len(demo_frames)


def _loss_axes(frame):
    return [ax for ax in frame.axes if ax.title.startswith("Loss")][0]


def test_gif_loss_curves_grow_over_their_whole_runs(saved):
    """The loss panel draws each whole run thin under its growing curve (the legend
    names the runs: no name on the panel)."""
    anim, _ = saved
    recs = dtsgd_viz.run(ROTATED, CONFIGS, 8)
    fig = anim._fig
    ax = [a for a in fig.axes if a.get_title().startswith("Loss")][0]
    for frame, update in zip(anim.new_frame_seq(), anim.frame_updates):
        anim._func(frame)
        fig.canvas.draw()
        rests = {ln.get_gid()[10:]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("loss-rest:")}
        grown = {ln.get_gid()[5:]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("loss:")}
        assert rests.keys() == grown.keys() == recs.keys()
        for key, ln in rests.items():
            after = ROTATED.value_np(recs[key].path("w").astype(np.float64))  # after k = 0..N updates
            np.testing.assert_allclose(ln.get_ydata(), after, rtol=1e-6)  # the whole run
            assert ln.get_linewidth() < grown[key].get_linewidth() and ln.get_zorder() < grown[key].get_zorder()
            assert len(grown[key].get_xdata()) == update + 1  # k = 0..update: up to the ring, after it
        assert not ax.texts


def test_no_frame_writes_a_name_on_the_paths(demo_frames, demo_gif):
    """The start, the minimum and the runs are named once, in the legend under the panels:
    nothing on the paths panel moves from frame to frame but the data."""
    for update, frame in demo_frames:
        ax = [a for a in frame.axes if a.title.startswith(("Update", "Paths"))][0]
        assert not [t for t in ax.texts if t.text.strip()], update
    (legend,) = demo_gif._fig.legends
    assert [t.get_text() for t in legend.get_texts()][-4:] == ["start", "minimum", "after the update", MEAN_LABEL]


def test_every_frames_close_ups_share_one_zoom_and_a_tiny_update_gets_an_inset(demo_frames, demo_gif):
    """As ``plot_update``: one box size for every close-up of a frame, its zoom over the
    paths panel in each title, every arrow at its true length inside it, and an update
    under ``INSET_BELOW`` of the box drawn again in an inset marked with how much closer."""
    from dtsgd_viz.views.update.geometry import zoom_factor
    from dtsgd_viz.views.update.zoom import INSET_BELOW

    insets = 0
    for update, frame in demo_frames:
        paths = [a for a in frame.axes if a.title.startswith(("Update", "Paths"))][0]
        close = [ax for ax in frame.axes if "· spans 1/" in ax.title]
        assert len(close) == 2, update
        spans = {float(np.ptp(ax.xlim)) for ax in close}
        assert max(spans) == pytest.approx(min(spans), rel=1e-9), update  # one box size
        zoom = zoom_factor((paths.xlim, paths.ylim), (close[0].xlim, close[0].ylim))
        for ax in close:
            shown = float(ax.title.split("1/")[1])
            assert shown == pytest.approx(zoom, rel=0.06, abs=0.06), (update, ax.title)
            (x0, x1), (y0, y1) = ax.xlim, ax.ylim
            for line in ax.lines:
                if line.gid.startswith(("zoom-position", "zoom-next")):
                    x, y = line.xy
                    assert x0 <= x <= x1 and y0 <= y <= y1, (update, line.gid)
        for ax in frame.axes:
            marks = [t for t in ax.texts if t.gid.startswith("inset-zoom:")]
            if marks:  # an inset: its update is under INSET_BELOW of the shared box
                insets += 1
                (mark,) = marks
                own = float(np.ptp(ax.xlim))
                assert own < INSET_BELOW * max(spans) * 1.001, update
                closer = zoom_factor((paths.xlim, paths.ylim), (ax.xlim, ax.ylim))  # of the paths' width
                assert float(mark.text.removeprefix("1/")) == pytest.approx(closer, rel=0.06), update
    assert insets  # the run's last updates hardly move: drawn up close in an inset
    assert demo_gif.frame_updates[-1] == 40


def _loss_dots(frame):
    return [ln for ln in _loss_axes(frame).lines if ln.gid.startswith("loss-marker:")]


def test_loss_dots_nest_only_where_they_meet(demo_frames):
    """Every run's mark is an open ring (the path panel's); rings closer than a ring's
    width: the earlier wider, round the later; apart, one size."""
    apart = 0
    for update, frame in demo_frames:
        dots = _loss_dots(frame)
        assert len(dots) == 2, update
        a, b = dots
        meet = np.hypot(*(a.px - b.px)) < 8.0 * frame.dpi / 72
        if meet:
            ring, dot = sorted(dots, key=lambda d: -d.size)
            assert ring.size >= dot.size + 4, update
        else:
            apart += 1
            assert a.size == b.size, update
        assert all(d.face == "none" for d in dots), update
    assert apart
