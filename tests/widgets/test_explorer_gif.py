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
