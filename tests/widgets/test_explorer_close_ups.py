"""PathExplorer's close-ups: at every update the slider shows, each run's update is
drawn up close, every run on one zoom with its terms at their true length (a run too
small there seen in its inset), the caption's ×N is that zoom, no two texts of the
figure overlap, and the figure stays a notebook column wide with nothing cut off."""

import re

import matplotlib
import numpy as np
import pytest

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.update import geometry as upd
from dtsgd_viz.views.update.zoom import span_text
from dtsgd_viz.widgets import PathExplorer
from dtsgd_viz.widgets.explorer_figure import (
    CLOSE_UP_SIZE,
    TRAIL_KEEP,
    close_up_title,
    tidy_loss_axis,
    update_finding,
)

matplotlib.use("Agg")

STEPS = 12
ROTATED = surfaces.RotatedQuadratic()
MIN_PX = 8.0  # an arrow shorter than this on screen is not seen


@pytest.fixture(scope="module")
def recs():
    return dtsgd_viz.run(ROTATED, CONFIGS, STEPS)


@pytest.fixture(scope="module")
def explorer(recs):
    return PathExplorer(recs, ROTATED, step=5)


def screen_lengths(ax, prefix):
    """``{gid: length in pixels}`` of the quivers of ``ax`` whose gid starts with ``prefix``."""
    out = {}
    for q in ax.collections:
        gid = q.get_gid() or ""
        if gid.startswith(prefix):
            tail = np.asarray(q.get_offsets()[0], np.float64)
            tip = tail + [float(q.U[0]), float(q.V[0])]
            a, b = ax.transData.transform([tail, tip])
            out[gid] = float(np.hypot(*(b - a)))
    return out


@pytest.mark.slow
def test_every_update_has_each_runs_terms_visible_up_close(explorer, recs):
    from dtsgd_viz.views.text.clashes import clashes

    art = explorer.view.artists
    renderer = explorer.figure.canvas.get_renderer()
    assert art.zoom_axes.keys() == recs.keys()
    assert not [p for p in art.ax_path.patches if (p.get_gid() or "").startswith("zoom-box:")]  # one scale: no boxes
    small_on_paths = 0
    for u in range(1, STEPS + 1):
        explorer.slider.value = u
        explorer.pixels()  # drawn as the PNG is
        small_on_paths += sum(px < MIN_PX for px in screen_lengths(art.ax_path, "arrow:").values())
        for key, ax in art.zoom_axes.items():
            lengths = screen_lengths(ax, f"zoom-arrow:{key}:")
            terms = {gid.split(":")[2] for gid in lengths}
            want = {"gradient"} | (
                {"lookahead" if CONFIGS[key]["nesterov"] else "momentum"} if CONFIGS[key]["momentum"] else set()
            )
            assert terms == want, (u, key, terms)
            # true length: each arrow's pixels are its recorded term's length at the panel's scale
            per_unit = ax.bbox.width / np.ptp(ax.get_xlim())
            (rec,) = [recs[key]]
            i = list(rec.steps).index(u)
            chain = upd.arrow_chain(upd.decompose_update(rec, "w", i), explorer.view.scene.plane)
            for term, _, uv in chain:
                assert lengths[f"zoom-arrow:{key}:{term}"] == pytest.approx(np.hypot(*uv) * per_unit, rel=1e-6)
            # the update is seen: its longest arrow in the panel, or in the inset of a run too small
            seen = max(screen_lengths(ax.child_axes[0], f"zoom-arrow:{key}:").values()) if ax.child_axes else 0
            assert max(max(lengths.values()), seen) >= MIN_PX, (u, key, lengths, seen)
            # the close-up keeps only the path's last segments before the update
            trail = [c for c in ax.collections if c.get_gid() == f"zoom-trail:{key}"]
            assert all(len(c.get_segments()) <= TRAIL_KEEP for c in trail)
            assert not any(ln.get_visible() for ln in ax.lines if ln.get_gid() == f"zoom-path:{key}")
            assert ax.get_title() == rule_name(key)  # the zoom is said once, in the caption
        assert f"update {u}," in art.caption.get_text() and "\n" not in art.caption.get_text()
        # the caption's ×N: the paths' span over the close-ups' (one zoom), as zoom.times writes it
        span = np.ptp(next(iter(art.zoom_axes.values())).get_xlim())
        paths_span = max(np.ptp(art.ax_path.get_xlim()), np.ptp(art.ax_path.get_ylim()))
        assert f"every panel spans {span_text(paths_span / span)} of the paths' width" in art.caption.get_text(), u
        spans = [np.ptp(ax.get_xlim()) for ax in art.zoom_axes.values()]
        assert max(spans) == pytest.approx(min(spans), rel=1e-9)  # one zoom
        assert art.title.get_text().startswith(f"Update {u}:")
        # the headline says who is lowest after this update: by the mean loss after the
        # last updates up to it (numpy on the recorded parameters), as findings(upto=u) says it
        tail = max(1, min(10, u // 5))
        means = {
            k: ROTATED.value_np(r.path("w").astype(np.float64)[u - tail + 1 : u + 1]).mean() for k, r in recs.items()
        }
        low, second = sorted(means.values())[:2]
        finding = " ".join(headline_texts(explorer.figure)[0].split())
        window, said = finding.split(": ", 1)  # the window first: it ends at k = u
        assert re.fullmatch(rf"(?:Lowest )?(?:mean loss over k = \d+–{u}|loss after {u} updates?)", window), u
        if second > 1.05 * low:  # the best run after the colon
            assert said.startswith(f"{rule_name(min(means, key=means.get))}, "), u
        else:
            assert " level at " in said, u
        assert finding == " ".join(dtsgd_viz.findings(recs, ROTATED, upto=u).headline().split()), u
        # no two texts of any panel overlap (views.text.clashes)
        for ax in [art.ax_path, art.ax_loss, *art.zoom_axes.values()]:
            assert not clashes(ax, renderer), (u, clashes(ax, renderer))
    assert small_on_paths > 0  # the paths panel alone would hide some of these updates


@pytest.mark.slow
def test_close_ups_stay_inside_a_notebook_column_at_every_update(explorer):
    from dtsgd_viz.widgets._pointer import png_size

    fig, art = explorer.figure, explorer.view.artists
    renderer = fig.canvas.get_renderer()
    for u in (1, 4, 8, STEPS):
        explorer.slider.value = u
        explorer.pixels()
        assert png_size(explorer.image.value)[0] <= style.MAX_WIDTH_PX
        boxes = [ax.get_tightbbox(renderer) for ax in art.zoom_axes.values()]
        for key, b in zip(art.zoom_axes, boxes):  # ticks and titles change with the update
            assert b.x0 >= 0 and b.x1 <= fig.bbox.x1 and b.y0 >= 0, (u, key, b.bounds)
        titles = [ax.title.get_window_extent(renderer) for ax in art.zoom_axes.values()]
        assert all(a.x1 <= b.x0 for a, b in zip(titles, titles[1:])), [t.bounds for t in titles]
        # the caption sits between the paths row and the close-ups, touching neither
        cap = art.caption.get_window_extent(renderer)
        top = min(ax.get_tightbbox(renderer).y0 for ax in (art.ax_path, art.ax_loss))
        low = max(b.y1 for b in boxes)
        assert low <= cap.y0 and cap.y1 <= top, (cap.bounds, low, top)


@pytest.mark.slow
def test_without_zoom_the_explorer_keeps_paths_and_loss_only(recs):
    w = PathExplorer(recs, ROTATED, step=5, zoom=False)
    assert not w.view.artists.zoom_axes
    art = w.view.artists
    assert w.figure.axes == [art.ax_path, art.ax_loss]  # draw_paths' own figure, no close-up row
    assert w.figure.get_size_inches()[1] < CLOSE_UP_SIZE[1]
    w.slider.value = 9
    assert w.view.artists.title.get_text().startswith("Update 9:")


@pytest.mark.slow
def test_loss_ticks_are_round_and_end_at_the_last_update(explorer):
    ax = explorer.view.artists.ax_loss
    ticks = np.asarray(ax.get_xticks())
    last = max(np.max(ln.get_xdata()) for ln in ax.lines if (ln.get_gid() or "").startswith("loss:"))
    assert ticks.max() <= last and last - ticks.max() < np.diff(ticks).min()
    spacing = np.diff(ticks)
    assert np.all(spacing == spacing[0]) and spacing[0] in (1, 2, 5, 10, 20, 25, 50, 100)
    fig = matplotlib.figure.Figure()
    empty = fig.add_subplot()
    tidy_loss_axis(empty)  # no loss lines: the axis keeps its own ticks
    assert type(empty.xaxis.get_major_locator()).__name__ == "AutoLocator"


def test_close_up_titles_name_the_run_and_leave_the_zoom_to_the_caption():
    assert close_up_title("nesterov", 33.4) == "Nesterov"  # the house name
    assert close_up_title("plain") == "plain"


@pytest.mark.slow
def test_the_headline_follows_the_update_and_keeps_its_line_count(explorer):
    """The finding at each update replaces the one before without growing: the settings
    line hangs under it."""
    from dtsgd_viz.views.core.figure import headline_texts

    scene, fig = explorer.view.scene, explorer.figure
    lines = fig.get_suptitle().count("\n")
    for u in (2, 7, STEPS):
        explorer.slider.value = u
        finding, settings = headline_texts(fig)
        assert finding.replace("\n", " ") == update_finding(scene, u - 1)
        assert fig.get_suptitle().count("\n") == lines and "lr 0.05" in settings


def test_update_finding_ranks_the_losses_at_the_update(explorer):
    import dataclasses

    scene = explorer.view.scene
    i = 3
    loss = {k: v[1][i + 1] for k, v in scene.losses.items()}  # up to update 4 the mean is of one: after 4
    order = sorted(loss, key=loss.get)
    ranked = [rule_name(k) for k in order]  # as figures name them: "Nesterov"
    text = update_finding(scene, i)  # recording index 3: update 4; the loss after k = 4 updates
    assert text.startswith(f"Lowest loss after {i + 1} updates: {ranked[0]}, ")
    assert text.index(f"below {ranked[1]}") < text.index(f"below {ranked[2]}")
    # a run gone non-finite is said to have diverged, and ranked with none
    bad = dict(scene.losses)
    steps, values, own = bad[order[0]]
    bad[order[0]] = (steps, np.full_like(values, np.nan), own)
    text = update_finding(dataclasses.replace(scene, losses=bad), i)
    assert text.startswith(f"Lowest loss after {i + 1} updates: {ranked[1]}, ") and f"{ranked[0]} diverged" in text


@pytest.fixture(scope="module")
def tutorial_03():
    """The explorer as tutorial 03 shows it: its surface and runs (``helpers.builders``),
    at update 20."""
    from helpers.builders import tutorial_03_runs

    surface, recordings = tutorial_03_runs(60)
    explorer = PathExplorer(recordings, surface, step=20)
    explorer.pixels()
    return explorer


@pytest.mark.slow
def test_at_tutorial_03s_update_20_update_n_is_marked_at_k_n(tutorial_03):
    """Tutorial 03's explorer at update 20 marks it as plot_paths and findings do: the
    grey line and the dots at k = 20, each dot the loss after 20 updates, each ring at
    the parameters after update 20, the headline's mean band over findings' window, a bar at each run's mean;
    the paths panel carries no text tag (the legend names the marks), and the star is
    drawn over the paths, under the boxes and rings."""
    from helpers.builders import tutorial_03_runs

    surface, recordings = tutorial_03_runs(60)
    art = tutorial_03.view.artists
    assert list(art.step_line.get_xdata()) == [20, 20]
    for key, rec in recordings.items():
        p = rec.path("w").astype(np.float64)
        np.testing.assert_array_equal(art.positions[key].get_xydata(), p[20:21])
        np.testing.assert_allclose(art.loss_markers[key].get_xydata(), [[20, surface.value_np(p[20])]], rtol=1e-12)
    found = dtsgd_viz.findings(recordings, surface, upto=20)
    (band,) = [a for a in art.ax_loss.patches if a.get_gid() == "loss-window"]
    xs = np.asarray(band.get_path().transformed(band.get_patch_transform()).vertices)[:, 0]
    assert (xs.min(), xs.max()) == found.window
    bars = {ln.get_gid().split(":")[1]: ln for ln in art.ax_loss.lines if (ln.get_gid() or "").startswith("loss-mean:")}
    assert sorted(bars) == sorted(found.ranking)  # each run's mean over the band, as the headline compares them
    ring = art.ax_loss.transData.transform([[20, 1.0]])[0, 0]  # the rings' x, in pixels
    for key, bar in bars.items():  # over the band, stopping short of the ring at k = 20 (no tick through it)
        x0, x1 = bar.get_xdata()
        gap = (ring - art.ax_loss.transData.transform([[x1, 1.0]])[0, 0]) * 72 / art.ax_loss.figure.dpi  # points
        assert x0 == found.window[0] and found.window[0] < x1 < 20
        assert style.ROLE_LOOKS["current"].ms / 2 < gap < style.ROLE_LOOKS["current"].ms / 2 + 4
        np.testing.assert_allclose(bar.get_ydata(), [found.tail_loss[key]] * 2, rtol=1e-12)
    assert not [t for t in art.ax_path.texts if t.get_visible() and t.get_text()]
    z = {ln.get_gid(): ln.get_zorder() for ln in art.ax_path.lines}
    rings = [v for k, v in z.items() if k.startswith("position:")]
    paths = [v for k, v in z.items() if k.startswith("path:")]
    assert max(paths + rings) < z["minimum"]  # the star over both: a ring on it shows round it, in its halo


@pytest.mark.slow
def test_the_still_shows_the_update_its_headline_and_the_close_ups_on_one_zoom(recs):
    """``explorer_still`` (``web.PathExplorer``'s still): its headline is the printed
    ``findings(upto=u).headline()``, its close-ups share one zoom, the caption says it."""
    from dtsgd_viz.widgets.explorer_figure import explorer_still

    fig = explorer_still(recs, ROTATED, 7)
    headline = " ".join(headline_texts(fig)[0].split())
    assert headline == " ".join(dtsgd_viz.findings(recs, ROTATED, upto=7).headline().split())
    close = [ax for ax in fig.axes if any((ln.get_gid() or "").startswith("zoom-position:") for ln in ax.lines)]
    assert len(close) == len(recs)
    spans = [np.ptp(ax.get_xlim()) for ax in close]
    assert max(spans) == pytest.approx(min(spans), rel=1e-9)
    (caption,) = [t for t in fig.findobj(matplotlib.text.Text) if t.get_gid() == "caption"]
    assert caption.get_text().startswith("Below: update 7, every panel spans 1/") and "\n" not in caption.get_text()
    # the ×N read off the caption is the paths' span over the close-ups' (the shared zoom)
    ax_path, ax_loss = fig.axes[:2]
    paths_span = max(np.ptp(ax_path.get_xlim()), np.ptp(ax_path.get_ylim()))
    assert f"every panel spans {span_text(paths_span / spans[0])} of the paths' width" in caption.get_text()
    # update 7 read off the still's artists: the grey line and the dots at k = 7, each
    # dot the loss after 7 updates, each ring the parameters after update 7
    (step,) = [ln for ln in ax_loss.lines if ln.get_gid() == "step-line"]
    assert list(step.get_xdata()) == [7, 7] == [dtsgd_viz.findings(recs, ROTATED, upto=7).window[1]] * 2
    for key, rec in recs.items():
        p = rec.path("w").astype(np.float64)
        (dot,) = [ln for ln in ax_loss.lines if ln.get_gid() == f"loss-marker:{key}"]
        np.testing.assert_allclose(dot.get_xydata(), [[7, ROTATED.value_np(p[7])]], rtol=1e-12)
        (ring,) = [ln for ln in ax_path.lines if ln.get_gid() == f"position:{key}"]
        np.testing.assert_array_equal(ring.get_xydata(), p[7:8])
        # the one "after update k" look of plot_paths and the legend: an open ring in the run's colour
        (path,) = [ln for ln in ax_path.lines if ln.get_gid() == f"path:{key}"]
        assert ring.get_markerfacecolor() == "none" and ring.get_markeredgecolor() == path.get_color()


def test_the_explorers_rings_are_open_as_plot_paths_draws_them(explorer):
    """The kernel explorer's rings, at every update, are open rings as ``plot_paths``
    and the legend draw them, never a white disk that reads as another start."""
    for u in (1, 7, STEPS):
        explorer.slider.value = u
        rings = [ln for ln in explorer.figure.axes[0].lines if (ln.get_gid() or "").startswith("position:")]
        assert len(rings) == len(CONFIGS) and {r.get_markerfacecolor() for r in rings} == {"none"}
