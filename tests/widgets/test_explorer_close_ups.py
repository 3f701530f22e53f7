"""PathExplorer's close-ups: at every update the slider shows, each run's update is
drawn up close, every run on one zoom with its terms at their true length (a run too
small there seen in its inset), and the figure stays a notebook column wide with
nothing cut off at its edges."""

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
from dtsgd_viz.widgets import PathExplorer
from dtsgd_viz.widgets.explorer_figure import (
    CLOSE_UP_SIZE,
    MIN_BOX_PX,
    NEST_PX,
    TRAIL_KEEP,
    close_up_title,
    tidy_loss_axis,
    update_finding,
    zoom_callouts,
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
    art = explorer.view.artists
    assert art.zoom_axes.keys() == recs.keys() and art.zoom_boxes.keys() == recs.keys()
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
            # the dotted box on the paths is where the close-up looks: centred on its view,
            # holding it, and at least MIN_BOX_PX on screen (a x50 box is a few pixels)
            box = art.zoom_boxes[key]
            (x0, x1), (y0, y1) = ax.get_xlim(), ax.get_ylim()
            assert np.isclose(box.get_x() + box.get_width() / 2, (x0 + x1) / 2)
            assert np.isclose(box.get_y() + box.get_height() / 2, (y0 + y1) / 2)
            assert box.get_width() >= (x1 - x0) - 1e-9 and box.get_height() >= (y1 - y0) - 1e-9
            corners = art.ax_path.transData.transform(
                [(box.get_x(), box.get_y()), (box.get_x() + box.get_width(), box.get_y() + box.get_height())]
            )
            assert np.all(np.diff(corners, axis=0) >= MIN_BOX_PX - 0.01), (u, key, corners)
            # its zoom factor written beside it, in the run's colour, off the other boxes
            callout = zoom_callouts(art)[key]
            assert callout.get_text() == ax.get_title().rsplit(" ", 1)[-1]
            assert callout.get_color() == art.zoom_boxes[key].get_edgecolor() or np.allclose(
                matplotlib.colors.to_rgba(callout.get_color()), box.get_edgecolor()
            )
            # the close-up keeps only the path's last segments before the update
            trail = [c for c in ax.collections if c.get_gid() == f"zoom-trail:{key}"]
            assert all(len(c.get_segments()) <= TRAIL_KEEP for c in trail)
            assert not any(ln.get_visible() for ln in ax.lines if ln.get_gid() == f"zoom-path:{key}")
            assert ax.get_title().startswith(f"{rule_name(key)} · zoom ×")
        assert f"update {u}," in art.caption.get_text() and "\n" not in art.caption.get_text()
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
        best = f"{rule_name(min(means, key=means.get))} is lowest" if second > 1.05 * low else "the runs are level"
        finding = " ".join(headline_texts(explorer.figure)[0].split())
        assert finding.startswith(f"After update {u}, {best}"), u
        assert finding == " ".join(dtsgd_viz.findings(recs, ROTATED, upto=u).headline().split()), u
        # the callouts' own boxes (Text's extent: an annotation's would add its leader)
        callouts = [matplotlib.text.Text.get_window_extent(t) for t in zoom_callouts(art).values()]
        assert all(not a.overlaps(b) for i, a in enumerate(callouts) for b in callouts[i + 1 :]), u
        # two runs at one point (update 1: all start together) have nested boxes, not one over the other
        rects = [
            art.ax_path.transData.transform(
                [(b.get_x(), b.get_y()), (b.get_x() + b.get_width(), b.get_y() + b.get_height())]
            ).ravel()
            for b in art.zoom_boxes.values()
        ]
        apart = [np.max(np.abs(a - b)) for i, a in enumerate(rects) for b in rects[i + 1 :]]
        assert min(apart) >= NEST_PX - 0.01, (u, apart)
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
    assert not w.view.artists.zoom_axes and not w.view.artists.zoom_boxes
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


def test_close_up_titles_give_the_zoom_factor():
    assert close_up_title("nesterov", 33.4) == "Nesterov · zoom ×33"  # the house name
    assert close_up_title("plain", 4.86) == "plain · zoom ×4.9"


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
    assert text.startswith(f"After update {i + 1}, {ranked[0]} is lowest: ")
    assert text.index(f"below {ranked[1]}") < text.index(f"below {ranked[2]}")
    # a run gone non-finite is said to have diverged, and ranked with none
    bad = dict(scene.losses)
    steps, values, own = bad[order[0]]
    bad[order[0]] = (steps, np.full_like(values, np.nan), own)
    text = update_finding(dataclasses.replace(scene, losses=bad), i)
    assert text.startswith(f"After update {i + 1}, {ranked[1]} is lowest") and f"{ranked[0]} diverged" in text


CALLOUT_UPDATES = (1, 2, 3, 6, STEPS)


@pytest.mark.slow
def test_the_callouts_and_names_on_the_paths_overlap_nothing(explorer, recs):
    """At updates 1-3 (the boxes frame the start and move most), 6 and the last: each ×N
    callout and the start / minimum names stay inside the paths panel, off each other,
    the rings, the start, the star and the other boxes. (The other updates repeat these
    cases; test_every_update_... still draws every one.)"""
    from matplotlib.text import Text

    from dtsgd_viz.views.paths.labels import boxes_overlap

    art = explorer.view.artists
    ax = art.ax_path
    for u in CALLOUT_UPDATES:
        explorer.slider.value = u
        explorer.pixels()
        r = explorer.figure.canvas.get_renderer()
        labels = {
            t.get_gid(): Text.get_window_extent(t, r)
            for t in ax.texts
            if t.get_visible()
            and t.get_text()
            and (t.get_gid() or "").split(":")[0] in ("zoom-callout", "start-label", "minimum-label")
        }
        assert {f"zoom-callout:{k}" for k in recs} <= set(labels)
        boxes = {
            k: ax.transData.transform(
                [(b.get_x(), b.get_y()), (b.get_x() + b.get_width(), b.get_y() + b.get_height())]
            ).ravel()
            for k, b in art.zoom_boxes.items()
        }
        marks = [
            ax.transData.transform(ln.get_xydata()[0])
            for ln in ax.lines
            if ln.get_gid() in ("start", "minimum") or (ln.get_gid() or "").startswith("position:")
        ]
        f = ax.get_window_extent()
        items = [(g, (e.x0, e.y0, e.x1, e.y1)) for g, e in labels.items()]
        for n, (gid, b) in enumerate(items):
            assert f.x0 <= b[0] and b[2] <= f.x1 and f.y0 <= b[1] and b[3] <= f.y1, (u, gid)
            assert not any(boxes_overlap(b, c) for _, c in items[n + 1 :]), (u, gid)
            assert not any(boxes_overlap(b, (x - 3, y - 3, x + 3, y + 3)) for x, y in marks), (u, gid)
            own = gid.split(":")[1] if gid.startswith("zoom-callout:") else None
            # a name may cross only a box around its own point (at update 1 they frame the start),
            # a callout only a box over its own
            point = None if own else ax.transData.transform(art.names[gid].xy)
            around = lambda c: (
                c[0] <= point[0] <= c[2] and c[1] <= point[1] <= c[3]  # noqa: B023
                if point is not None  # noqa: E731, B023
                else boxes_overlap(c, boxes[own])  # noqa: B023
            )  # boxes stacked on each other  # noqa: B023
            assert not any(boxes_overlap(b, c) for k, c in boxes.items() if k != own and not around(c)), (u, gid)


def _drawn_points(line, spacing=0.5):
    """Points every ``spacing`` display pixels along ``line``'s drawn segments."""
    xy = line.get_transform().transform(np.asarray(line.get_xydata(), np.float64).reshape(-1, 2))
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    out = [xy]
    for a, b in zip(xy[:-1], xy[1:]):
        n = max(2, int(np.hypot(*(b - a)) / spacing) + 1)
        out.append(a + np.linspace(0.0, 1.0, n)[:, None] * (b - a))
    return np.concatenate(out)


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
def test_at_tutorial_03s_update_20_no_label_covers_a_path(tutorial_03):
    """The ×N callouts and the start / minimum names sit where no run's drawn path (bold
    or thin) runs, inside the paths panel, on a leader when far off their box or point;
    the star is drawn over the boxes and rings, under the labels."""
    from dtsgd_viz.views.paths.labels import text_box

    art = tutorial_03.view.artists
    ax = art.ax_path
    r = tutorial_03.figure.canvas.get_renderer()
    labels = [
        t
        for t in ax.texts
        if t.get_visible()
        and t.get_text()
        and (t.get_gid() or "").split(":")[0] in ("zoom-callout", "start-label", "minimum-label")
    ]
    assert {t.get_gid() for t in labels} >= {"start-label", "minimum-label", "zoom-callout:nesterov"}
    paths = [ln for ln in ax.lines if (ln.get_gid() or "").split(":")[0] in ("path", "path-rest")]
    assert len(paths) == 6
    points = np.concatenate([_drawn_points(ln) for ln in paths])
    f = ax.get_window_extent()
    for t in labels:
        x0, y0, x1, y1 = text_box(t, r, pad=0.0)  # the white box behind the text
        assert f.x0 <= x0 and x1 <= f.x1 and f.y0 <= y0 and y1 <= f.y1, t.get_gid()
        under = (points[:, 0] >= x0) & (points[:, 0] <= x1) & (points[:, 1] >= y0) & (points[:, 1] <= y1)
        assert not under.any(), (t.get_gid(), points[under][:3])
        arrow = getattr(t, "arrow_patch", None)
        if arrow is not None and arrow.get_visible():  # a leader from the label to its own target
            target = ax.transData.transform(t.xy)
            if t.get_gid().startswith("zoom-callout:"):
                b = art.zoom_boxes[t.get_gid()[13:]]
                lo = ax.transData.transform((b.get_x(), b.get_y()))
                hi = ax.transData.transform((b.get_x() + b.get_width(), b.get_y() + b.get_height()))
                assert np.all(target >= lo - 0.5) and np.all(target <= hi + 0.5), t.get_gid()
    z = {ln.get_gid(): ln.get_zorder() for ln in ax.lines}
    rings = [v for k, v in z.items() if k.startswith("position:")]
    # the star over every path, under the rings and zoom boxes (a ring over it opens its face)
    paths = [v for k, v in z.items() if k.startswith("path:")]
    assert max(paths) < z["minimum"] < min(rings)
    assert z["minimum"] < min(b.get_zorder() for b in art.zoom_boxes.values())
    assert z["minimum"] < min(t.get_zorder() for t in labels)


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
    assert caption.get_text().startswith("Below: update 7, every panel ×") and "\n" not in caption.get_text()
