"""The close-ups of one update (``plot_update``'s panels, the explorer's close-up row and
the docs' GIF), checked on the drawn artists: no text runs into another
(``views.text.clashes``) or out of its panel, every arrow drawn at its true length tip to
tail onto the point the update reaches, each name beside the middle of its own shaft,
the explorer's close-ups on one zoom with the inset rule ``plot_update`` uses, the path
so far drawn light and thin. The figures are built once (``close_up_cases``)."""

import numpy as np
import pytest
from close_up_cases import SURFACE, close_ups, gif_last_frame, tutorial_03
from helpers.arrows import assert_tail

from dtsgd_viz.views.text.clashes import clashes, text_box
from dtsgd_viz.views.update import geometry as upd
from dtsgd_viz.views.update import panel

pytestmark = pytest.mark.slow  # the figures: a few seconds, built once


@pytest.fixture(scope="module")
def cases():
    """``{case: figure}``, drawn once for this module."""
    return dict(close_ups())


def zoom_axes(fig):
    """The close-ups of ``fig`` (an axes with a ring "before" the update), insets aside."""
    return [ax for ax in fig.axes if any((a.get_gid() or "").startswith("zoom-position:") for a in ax.lines)]


def arrows_of(ax):
    """``[(term, tail, uv, quiver)]`` in drawing order, as quiver holds them."""
    out = []
    for q in ax.collections:
        gid = q.get_gid() or ""
        if gid.startswith("zoom-arrow:"):
            out.append((gid.split(":")[2], np.asarray(q.get_offsets())[0], np.array([q.U[0], q.V[0]], float), q))
    return out


def test_no_text_clashes_or_leaves_its_close_up(cases):
    renderer = None
    for case, fig in cases.items():
        renderer = fig.canvas.get_renderer()
        for ax in zoom_axes(fig):
            assert clashes(ax, renderer) == [], (case, ax.get_title())
            frame = ax.get_window_extent(renderer)
            for t in ax.texts:
                x0, y0, x1, y1 = text_box(t, renderer)
                assert frame.x0 - 1 <= x0 and x1 <= frame.x1 + 1 and frame.y0 - 1 <= y0 and y1 <= frame.y1 + 1, (
                    case,
                    t.get_text(),
                )
    assert renderer is not None


def test_every_arrow_is_drawn_at_its_true_length_tip_to_tail_onto_the_point_after(cases):
    """The arrows start at the ring, each at the last one's tip, and end on the dot the
    update reaches: the recorded next point, the sum of the true terms."""
    checked = 0
    for case, fig in cases.items():
        for ax in zoom_axes(fig):
            arrows = arrows_of(ax)
            (ring,) = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("zoom-position:")]
            after = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("zoom-next:")]
            tip, before = ring.get_xydata()[0], None
            per_point = np.ptp(ax.get_xlim()) / (ax.bbox.width * 72.0 / fig.dpi)
            for _, tail, uv, q in arrows:
                shift = assert_tail(tail, tip, before, uv)  # none, but for an arrow turning back: moved beside it
                if before is not None and panel.lies_along(before, uv):
                    head = 0.5 * (panel.HEAD_WIDTH + 1) * panel.SHAFT * ax.bbox.width * 72.0 / fig.dpi  # points
                    assert 0 < np.hypot(*shift) / per_point <= head + 2 * panel.FOLD_GAP, case  # beside its head
                assert min(panel.THIN, panel.FOLD_FLOOR) - 1e-12 <= q.width <= panel.SHAFT + 1e-12, case
                tip, before = tail - shift + uv, uv
            assert len(after) == bool(arrows), case
            for line in after:
                np.testing.assert_allclose(line.get_xydata()[0], tip, atol=1e-12)
                inset = ax.get_axes_locator() is not None  # an inset's ring smaller: its short arrows show past it
                assert line.get_markersize() == panel.RING_MS * (panel.INSET_RING if inset else 1.0), case
            checked += 1
    assert checked >= 20


def test_each_name_sits_beside_the_middle_of_its_own_shaft_on_the_outer_side_of_the_turn(cases):
    for case, fig in cases.items():
        for ax in zoom_axes(fig):
            names = {t.get_gid().split(":")[2]: t for t in ax.texts if (t.get_gid() or "").startswith("zoom-label:")}
            arrows = arrows_of(ax)
            if not names:  # an inset's run: named nowhere (too small at the shared zoom)
                assert ax.child_axes, case
                continue
            assert sorted(names) == sorted(a[0] for a in arrows), case
            spots = panel.label_spots([(term, tail, uv) for term, tail, uv, _ in arrows])
            for (term, tail, uv, _), (anchor, side) in zip(arrows, spots):
                np.testing.assert_allclose(names[term].xy, anchor, atol=1e-12)
                if np.hypot(*uv) > 0:
                    np.testing.assert_allclose(anchor, tail + uv / 2, atol=1e-12)
                    assert abs(float(side @ uv)) < 1e-9 * np.hypot(*uv)  # beside it, across the shaft
                    off = np.asarray(names[term].xyann)  # points, as seen: the same side, unless the
                    # name was slid back inside its panel (then it rests on the panel's edge)
                    box, frame = names[term].get_window_extent(), ax.get_window_extent()
                    edge = min(box.x0 - frame.x0, frame.x1 - box.x1, box.y0 - frame.y0, frame.y1 - box.y1)
                    slid = edge < (4.0 + 1.5) * fig.dpi / 72  # keep_labels_inside's pad (an inset's more), in pixels
                    seen = ax.transData.transform(anchor + side) - ax.transData.transform(anchor)
                    assert slid or float(off @ seen) > 0, (case, term)


def test_label_spots_face_away_from_each_other_across_the_corner():
    for turn in (1.0, -1.0):  # a left turn, then a right one
        chain = [
            ("momentum", np.zeros(2), np.array([1.0, 0.0])),
            ("gradient", np.array([1.0, 0.0]), np.array([-0.3, turn])),
        ]
        (a1, s1), (a2, s2) = panel.label_spots(chain)
        inside = np.array([1.7 / 3, turn / 3])  # the centroid of the triangle the chain turns round
        assert float(s1 @ (inside - a1)) < 0 and float(s2 @ (inside - a2)) < 0


def test_a_term_lying_along_the_one_before_is_named_on_the_side_it_is_moved_to():
    u = np.array([1.0, 0.0])
    for v in ([0.2, 0.01], [-0.3, 0.02], [0.2, -0.01], [-0.3, -0.02], [0.5, 0.5]):  # on, back, each way; a turn
        v = np.asarray(v)
        drawn = panel.fit_arrows([("momentum", (0, 0), u), ("gradient", u, v)], 2.0)
        first, second = panel.beside_folds(drawn, 2.0, 0.01)
        moved = second.tail - u  # beside_folds' shift: across the first arrow, or none at a real turn
        assert np.hypot(*moved) > 0 if panel.lies_along(u, v) else np.hypot(*moved) == 0
        (_, s1), (anchor, side) = panel.label_spots([(a.term, a.tail, a.uv) for a in (first, second)])
        np.testing.assert_allclose(anchor, second.tail + v / 2)
        if panel.lies_along(u, v):  # its name off the other's shaft and head: on the side it was moved to
            assert float(moved @ side) > 0, v
        else:  # at a real (left) turn both names outside it, as before
            assert float(s1 @ [0.0, 1.0]) < 0 and float(side @ [1.0, -1.0]) > 0


def test_fit_arrows_keeps_the_true_vectors_and_thins_a_fold_back():
    chain = [
        ("momentum", np.zeros(2), np.array([1.0, 0.0])),
        ("gradient", np.array([1.0, 0.0]), np.array([-0.6, 0.01])),
    ]
    first, back = panel.fit_arrows(chain, 2.0)
    for a, (_, tail, uv) in zip((first, back), chain):
        np.testing.assert_array_equal(a.tail, tail)
        np.testing.assert_array_equal(a.uv, uv)  # true length: never drawn longer
    assert first.width == panel.SHAFT and back.width < first.width  # the fold shows round it
    (tiny,) = panel.fit_arrows([("gradient", np.zeros(2), np.array([1e-6, 0.0]))], 2.0)
    assert tiny.width == panel.THIN and tiny.uv[0] == 1e-6


def test_the_explorers_close_ups_share_one_zoom_and_inset_a_run_too_small(cases):
    """At tutorial 03's updates 20 and 1: every close-up the same span, the one-line
    caption (not the titles) giving the zoom over the paths panel; a run inset exactly where
    ``zoom.needs_inset`` says, the inset titled by how much closer it is."""
    from dtsgd_viz.views.paths.scene import build_scene
    from dtsgd_viz.views.update import zoom

    scene = build_scene(tutorial_03(), SURFACE, None)
    for step in (20, 1):
        fig = cases[f"03 PathExplorer update {step}"]
        axes = zoom_axes(fig)
        assert len(axes) == 3
        spans = [max(np.ptp(ax.get_xlim()), np.ptp(ax.get_ylim())) for ax in axes]
        assert max(spans) == pytest.approx(min(spans), rel=1e-9)
        factor = zoom.span_text(upd.zoom_factor(scene.box, (axes[0].get_xlim(), axes[0].get_ylim())))
        assert not any("×" in ax.get_title() for ax in axes)  # the shared zoom is said once, in the caption
        (caption,) = [t for t in fig.findobj() if getattr(t, "get_gid", lambda: None)() == "caption"]
        text = caption.get_text()
        assert "\n" not in text
        assert text.startswith(f"Below: update {step}, every panel spans {factor} of the paths' width")
        for ax in axes:
            if ax.child_axes:
                (inset,) = ax.child_axes
                own = max(np.ptp(inset.get_xlim()), np.ptp(inset.get_ylim()))
                assert own < zoom.INSET_BELOW * spans[0]
                (said,) = [t.get_text() for t in inset.texts if (t.get_gid() or "").startswith("inset-zoom:")]
                closer = upd.zoom_factor(scene.box, (inset.get_xlim(), inset.get_ylim()))  # of the paths' width
                assert said == zoom.span_text(closer) and said not in text  # said once, in the inset


def test_the_gifs_held_frame_draws_its_close_ups_clean():
    _, fig = gif_last_frame()
    axes = zoom_axes(fig)
    assert axes
    for ax in axes:
        assert clashes(ax) == []
        assert arrows_of(ax)


def test_the_path_so_far_is_drawn_light_and_thin_unlike_the_arrows(cases):
    """The path up to the update, the leg into the ring too, in the run's tint, at most
    ``TRAIL_ALPHA`` opaque and thinner than any arrow's shaft: momentum's leg into "before"
    (tutorial 03, update 5) does not read as the start of μ·v_prev."""
    from matplotlib.colors import to_rgb

    checked = 0
    for case, fig in cases.items():
        for ax in zoom_axes(fig):
            for c in ax.collections:
                gid = c.get_gid() or ""
                if not gid.startswith("zoom-trail:") or not len(c.get_segments()):
                    continue
                (ring,) = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("zoom-position:")]
                run = np.asarray(to_rgb(ring.get_markeredgecolor()))
                rgba = np.asarray(c.get_colors())
                assert rgba[:, 3].max() <= panel.TRAIL_ALPHA + 1e-9, case
                assert np.all(rgba[:, :3] >= run - 1e-9) and np.all(rgba[-1, :3] > run + 0.1 * (1 - run) - 1e-9), case
                lw_px = max(c.get_linewidths()) * fig.dpi / 72
                shafts = [
                    q.width * ax.bbox.width for q in ax.collections if (q.get_gid() or "").startswith("zoom-arrow:")
                ]
                assert lw_px < min(shafts), case
                # a dot at each earlier point of the path (its segments' starts), in the line's colours: the path
                # so far reads as points taken, unlike the pale lines of the updates after the one shown
                (dots,) = [d for d in ax.collections if d.get_gid() == gid.replace("zoom-trail:", "zoom-trail-points:")]
                starts = np.asarray([seg[0] for seg in c.get_segments()])
                np.testing.assert_allclose(np.asarray(dots.get_offsets()), starts, err_msg=case)
                np.testing.assert_allclose(dots.get_facecolors(), rgba, err_msg=case)
                checked += 1
    assert checked >= 10


def test_a_head_never_hides_the_short_arrow_that_starts_under_it():
    """tutorial 03's momentum at update 5: -lr·g (0.233) starts at the tip of μ·v_prev
    (2.26); μ·v_prev's head is at most NEXT_HEAD of it (or the thinnest arrow's)."""
    chain = [
        ("momentum", np.zeros(2), np.array([0.0, 2.26])),
        ("gradient", np.array([0.0, 2.26]), np.array([0.05, -0.227])),
    ]
    span = 2.6
    first, _ = panel.fit_arrows(chain, span)
    head = first.width * panel.HEAD_LENGTH  # of the panel's width, as the next arrow's length / span
    assert first.width == panel.THIN or head <= panel.NEXT_HEAD * np.hypot(0.05, -0.227) / span + 1e-12
    assert first.width < panel.SHAFT  # thinner than a lone arrow of its length would be
    (alone,) = panel.fit_arrows(chain[:1], span)
    assert alone.width == panel.SHAFT
