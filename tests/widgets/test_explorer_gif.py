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
from dtsgd_viz.views import style
from dtsgd_viz.views._path_motion import shared_palette, with_palette

matplotlib.use("Agg")

ROTATED = surfaces.RotatedQuadratic()


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    recs = dtsgd_viz.run(ROTATED, CONFIGS, 8)
    anim = dtsgd_viz.animate(recs, ROTATED, frames=[2, 5, 8], zoom=False, hold=0)
    out = tmp_path_factory.mktemp("gif") / "paths.gif"
    anim.save(out, writer="pillow", dpi=60)   # asked lower than the figures' dpi
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
    assert not np.array_equal(frames[0][0], frames[-1][0])   # it moves


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
    assert 0.5 < (a == b).mean() < 1.0   # the still parts: the same palette indices

    def size(images):
        buf = io.BytesIO()
        images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], duration=200, loop=0)
        return len(buf.getvalue())

    own = [with_palette(f) for f in rgb]   # each frame its own adaptive palette
    assert size(one) < 0.9 * size(own)
    # the kept colours (the minimum's yellow among them) are exact in the shared palette
    pal = np.reshape(shared.getpalette()[:3 * 256], (-1, 3))
    yellow = np.round(np.array(to_rgb(style.MINIMUM_FACE)) * 255)
    assert np.any(np.all(pal == yellow, axis=1))


# ---- every frame of the demo's GIF reads: no label on another ------------------------


@pytest.fixture(scope="module")
def demo_gif():
    """The demo report's animation (``cli.report``): momentum vs Nesterov on the demo's
    surface, 20 frames over 40 updates, the last held."""
    from dtsgd_viz.cli import demo, report
    recs = dtsgd_viz.run(demo.path_surface(), demo.PATH_CONFIGS, demo.PATH_STEPS)
    anim = dtsgd_viz.animate(recs, demo.path_surface(), frames=report.GIF_FRAMES,
                             interval=report.GIF_INTERVAL, hold=2)
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
    return Text.get_window_extent(text, renderer)   # its characters (an annotation's holds its leader)


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


def test_no_label_of_any_gif_frame_overlaps_another_or_is_crossed_by_a_leader(demo_gif):
    seen = 0
    for update, fig in each_frame(demo_gif):
        r = fig.canvas.get_renderer()
        for ax in fig.axes:
            texts = [t for t in ax.texts if t.get_visible() and t.get_text().strip()]
            boxes = [_char_box(t, r) for t in texts]
            for i, (a, A) in enumerate(zip(texts, boxes)):
                for b, B in zip(texts[i + 1:], boxes[i + 1:]):
                    assert not A.overlaps(B), (update, a.get_text(), b.get_text())
                lead = _leader(a)
                for b, B in zip(texts, boxes):
                    if b is a or not len(lead):
                        continue
                    inside = ((lead[:, 0] > B.x0 + 0.5) & (lead[:, 0] < B.x1 - 0.5)
                              & (lead[:, 1] > B.y0 + 0.5) & (lead[:, 1] < B.y1 - 0.5))
                    assert not inside.any(), (update, f"{a.get_text()!r}'s leader through {b.get_text()!r}")
            seen += len(texts)
    assert seen > 20 * 8   # the close-ups' labels were there to check


def test_gif_loss_names_at_update_1_stand_apart_inside_the_frame(demo_gif):
    from dtsgd_viz.views.direct_labels import READABLE_GAP
    update, fig = next(each_frame(demo_gif))
    assert update == 1
    r = fig.canvas.get_renderer()
    ax_loss = [ax for ax in fig.axes if ax.get_title().startswith("Loss")][0]
    names = [t for t in ax_loss.texts if t.get_visible() and (t.get_gid() or "").startswith("label:")]
    assert len(names) == 2   # momentum and Nesterov, both at the one loss every run starts at
    a, b = sorted((t.get_window_extent(r) for t in names), key=lambda b: b.y0)
    px = fig.dpi / 72.0 * names[0].get_fontsize()
    assert (b.y0 + b.y1) / 2 - (a.y0 + a.y1) / 2 >= READABLE_GAP * px - 0.5   # air between them
    frame = ax_loss.get_window_extent(r)
    assert frame.y0 < a.y0 and b.y1 < frame.y1


def test_held_last_frame_draws_its_tiny_update_large_not_at_a_capped_zoom(demo_gif):
    """The last update of the demo run hardly moves: its close-up zooms in until its
    step fills a good part of the panel (at the explorer's cap, x50, it was a speck
    with four labels piled round it)."""
    fig = demo_gif._fig
    demo_gif._func(list(demo_gif.new_frame_seq())[-1])
    fig.canvas.draw()
    assert demo_gif.frame_updates[-1] == 40
    zooms = [ax for ax in fig.axes if "zoom ×" in ax.get_title()]
    assert len(zooms) == 2
    for ax in zooms:
        gid = lambda g: [ln for ln in ax.lines if (ln.get_gid() or "").startswith(g)]  # noqa: E731
        (here,), (there,) = gid("zoom-position"), gid("zoom-next")
        step = np.hypot(*(np.asarray(there.get_xydata()[0]) - here.get_xydata()[0]))
        assert step >= 0.2 * np.ptp(ax.get_xlim()), (ax.get_title(), step, ax.get_xlim())
