"""The close-ups' labels, measured through the renderer: no label's box overlaps another
label's box, an arrow's outline or a marker (plot_update on tutorial 01's and 03's runs,
PathExplorer at update 20 of tutorial 03's runs), and the look-ahead label's leader ends
at the look-ahead point."""

import numpy as np
import pytest
from matplotlib.text import Annotation, Text

from close_up_cases import T03_UPDATES, close_ups, plot_update_03


@pytest.fixture(scope="module")
def cases():
    """``{case: figure}``, drawn once for this module and ``test_update_arrows``."""
    return dict(close_ups())


def close_up_figures(cases):
    """The close-ups these checks were written for: tutorial 01's update 4 and 03's update
    5 (the tutorials' plot_update) and PathExplorer at 03's update 20."""
    for case in ("01 plot_update step 4", "03 plot_update step 5", "03 PathExplorer update 20"):
        yield case, cases[case]


def zoom_axes(fig):
    return [ax for ax in fig.axes if any((a.get_gid() or "").startswith("zoom-position:") for a in ax.lines)]


def arrow_polygons(ax):
    """Each zoom arrow's outline in display pixels (quiver's own polygon)."""
    out = []
    for q in ax.collections:
        if not (q.get_gid() or "").startswith("zoom-arrow:"):
            continue
        offset = q.get_offset_transform().transform(np.asarray(q.get_offsets())[0])
        for path in q.get_paths():
            out.append((q.get_gid(), q.get_transform().transform(path.vertices) + offset))
    return out


def marker_boxes(ax, dpi):
    """Each point marker's square extent in display pixels."""
    from matplotlib.transforms import Bbox
    out = []
    for line in ax.lines:
        if line.get_marker() in (None, "None", "", " ") or not line.get_visible():
            continue
        r = line.get_markersize() * dpi / 72.0 / 2
        for x, y in ax.transData.transform(line.get_xydata()):
            out.append((line.get_gid() or line.get_marker(), Bbox([[x - r, y - r], [x + r, y + r]])))
    return out


def overlap(a, b) -> float:
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(0.0, w) * max(0.0, h)


def test_no_label_covers_another_label_an_arrow_or_a_marker(cases):
    from matplotlib.path import Path
    checked = 0
    for case, fig in close_up_figures(cases):
        renderer = fig.canvas.get_renderer()
        fig.canvas.draw()
        for ax in zoom_axes(fig):
            # the text alone (an Annotation's own extent holds its leader too)
            labels = [(t.get_gid(), Text.get_window_extent(t, renderer)) for t in ax.texts
                      if isinstance(t, Annotation) and t.get_text()]
            assert labels, case
            polygons = arrow_polygons(ax)
            assert polygons, case
            markers = marker_boxes(ax, fig.dpi)
            for i, (gid, box) in enumerate(labels):
                for other, obox in labels[i + 1:]:
                    assert overlap(box, obox) == 0, f"{case}: {gid} over {other}"
                for arrow, verts in polygons:
                    assert not Path(verts).intersects_bbox(box, filled=True), f"{case}: {gid} over {arrow}"
                for mark, mbox in markers:
                    assert overlap(box, mbox) == 0, f"{case}: {gid} over marker {mark}"
                checked += 1
    assert checked >= 10


def test_the_look_ahead_leader_ends_at_the_look_ahead_point(cases):
    for case, fig in close_up_figures(cases):
        fig.canvas.draw()
        found = 0
        for ax in fig.axes:
            for t in ax.texts:
                if not (t.get_gid() or "").startswith("lookahead-label:"):
                    continue
                key = t.get_gid().split(":", 1)[1]
                mark = next(a for a in ax.lines if a.get_gid() == f"lookahead:{key}")
                point = ax.transData.transform(mark.get_xydata()[0])
                np.testing.assert_allclose(ax.transData.transform(t.xy), point, atol=1e-6)
                leader = t.arrow_patch.get_path().vertices   # display pixels, drawn over the path
                end = min(leader, key=lambda v: np.hypot(*(v - point)))
                # within the diamond it names (half its size), not short of it
                assert np.hypot(*(end - point)) <= mark.get_markersize() * fig.dpi / 72.0 / 2, case
                assert np.hypot(*(leader[0] - leader[-1])) > 5, case   # long enough to see
                assert t.get_zorder() > max(   # the annotation draws its leader at its own zorder
                    a.get_zorder() for a in [*ax.lines, *ax.collections]
                    if (a.get_gid() or "").startswith(("zoom-trail", "zoom-path", "zoom-position")))
                assert t.arrow_patch.get_path_effects(), case   # its white halo
                found += 1
        assert found == 1, case


def marker_discs(ax, dpi):
    """Each point mark's disc in display pixels: (name, centre, radius)."""
    out = []
    for line in ax.lines:
        if line.get_marker() in (None, "None", "", " ") or not line.get_visible():
            continue
        r = (line.get_markersize() + line.get_markeredgewidth()) * dpi / 72.0 / 2
        out += [(line.get_gid() or line.get_marker(), c, r) for c in ax.transData.transform(line.get_xydata())]
    return out


def test_no_label_or_leader_crosses_a_label_leader_arrow_or_mark_nor_leaves_its_axes(cases):
    """Measured on the drawn figure: each label's text box and the part of its leader
    beyond the mark it names, against the arrows' polygons as quiver drew them, every
    mark's disc, the other labels and leaders, and the frame."""
    from dtsgd_viz.views.update_label_check import conflicts
    checked = 0
    for case, fig in close_up_figures(cases):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in zoom_axes(fig):
            found = conflicts(ax, renderer, arrow_polygons(ax), marker_discs(ax, fig.dpi))
            assert not found, f"{case}: {found}"
            checked += len(ax.texts)
    assert checked >= 10


@pytest.mark.parametrize("update", T03_UPDATES)
def test_labels_stay_clear_at_many_updates_of_tutorial_03(update):
    """Updates 1 (v_prev = 0), 2 and 9 (short terms drawn longer), 5 and 20 (folding
    back), 30 (small steps): one of each case the panels lay out differently (updates 3,
    6 and 14, checked before, repeat 2's, 5's and 20's cases)."""
    from dtsgd_viz.views.update_label_check import conflicts
    fig = plot_update_03(update)
    renderer = fig.canvas.get_renderer()
    for ax in zoom_axes(fig):
        found = conflicts(ax, renderer, arrow_polygons(ax), marker_discs(ax, fig.dpi))
        assert not found, f"update {update}: {found}"


def drawn_path_points(ax, spacing=1.0):
    """Points every ``spacing`` pixels along the fading path and Nesterov's dotted line as
    drawn (display pixels), inside the axes."""
    lines = [np.asarray(seg) for c in ax.collections if (c.get_gid() or "").startswith("zoom-trail:")
             for seg in c.get_segments()]
    lines += [ln.get_xydata() for ln in ax.lines if (ln.get_gid() or "").startswith("iterate-line:")]
    pts = [np.zeros((0, 2))]
    for line in lines:
        xy = ax.transData.transform(np.asarray(line, np.float64))
        for a, b in zip(xy[:-1], xy[1:]):
            n = max(2, int(np.hypot(*(b - a)) / spacing) + 1)
            pts.append(a + np.linspace(0.0, 1.0, n)[:, None] * (b - a))
    pts = np.concatenate(pts)
    f = ax.bbox
    return pts[(pts[:, 0] >= f.x0) & (pts[:, 0] <= f.x1) & (pts[:, 1] >= f.y0) & (pts[:, 1] <= f.y1)]


def test_no_label_sits_on_the_path_or_the_dotted_line(cases):
    """In the tutorials' close-ups (01's update 4, 03's update 5, the explorer's), no
    label's text box lies over the fading path or Nesterov's dotted μ·v_prev line (a label
    crossed by a line reads as struck through). Elsewhere a crowded panel may still put
    one there, never over a label, arrow or mark (``update_labels.ON_PATH``)."""
    checked = 0
    for case, fig in close_up_figures(cases):
        renderer = fig.canvas.get_renderer()
        for ax in zoom_axes(fig):
            pts = drawn_path_points(ax)
            for t in ax.texts:
                if not (isinstance(t, Annotation) and t.get_text()):
                    continue
                b = Text.get_window_extent(t, renderer)
                under = (pts[:, 0] > b.x0) & (pts[:, 0] < b.x1) & (pts[:, 1] > b.y0) & (pts[:, 1] < b.y1)
                assert not under.any(), f"{case}: {t.get_gid()} over the path at {pts[under][:2]}"
                checked += 1
    assert checked >= 15


def test_the_dotted_line_reads_over_the_path_it_lies_along(cases):
    """Nesterov's μ·v_prev from the iterate is drawn over the fading path in round dots
    with a white halo, so where it lies along the path (tutorial 03's update 5) the dots
    still show."""
    found = 0
    for case, fig in cases.items():
        for ax in zoom_axes(fig):
            for ln in ax.lines:
                if not (ln.get_gid() or "").startswith("iterate-line:"):
                    continue
                trail = [c for c in ax.collections if (c.get_gid() or "").startswith("zoom-trail:")]
                assert all(ln.get_zorder() > c.get_zorder() for c in trail), case
                assert ln.get_path_effects() and ln.get_dash_capstyle() == "round", case
                found += 1
    assert found >= 6


def test_the_placement_sees_the_arrows_quiver_draws():
    """``arrow_polygon`` (what the labels keep off) is the outline quiver draws."""
    from matplotlib.path import Path
    from dtsgd_viz.views import update_labels as lab
    fig = plot_update_03(5)
    n = 0
    for ax in zoom_axes(fig):
        for q in ax.collections:
            if not (q.get_gid() or "").startswith("zoom-arrow:"):
                continue
            (drawn,) = [v for g, v in arrow_polygons(ax) if g == q.get_gid()]
            tail = ax.transData.transform(np.asarray(q.get_offsets())[0])
            tip = ax.transData.transform(np.asarray(q.get_offsets())[0] + [float(q.U[0]), float(q.V[0])])
            mine = lab.arrow_polygon(tail, tip, q.width * ax.bbox.width)   # each arrow its own width
            # every drawn vertex on or inside my outline (within a pixel), and the tips agree
            inside = Path(mine).contains_points(drawn, radius=2.0) | Path(mine[::-1]).contains_points(drawn, radius=2.0)
            assert inside.all(), q.get_gid()
            assert np.hypot(*(drawn - tip).T).min() < 1.0
            n += 1
    assert n == 5


def test_every_close_up_rings_the_start_and_names_what_it_marks(cases):
    from dtsgd_viz.views import style
    for case, fig in close_up_figures(cases):
        for ax in zoom_axes(fig):
            (ring,) = [a for a in ax.lines if (a.get_gid() or "").startswith("zoom-position:")]
            ring_mark = ring
            assert ring.get_marker() == "o" and ring.get_markerfacecolor() in ("white", (1, 1, 1, 1)), case
            look = [a for a in ax.lines if (a.get_gid() or "").startswith("lookahead:")]
            for diamond in look:   # Nesterov: the look-ahead diamond inside that ring
                np.testing.assert_allclose(diamond.get_xydata(), ring.get_xydata())
                assert diamond.get_markersize() < ring.get_markersize() and diamond.get_zorder() > ring.get_zorder()
            # the type of labels on the data: >= 9 px at dpi 100, the style's label size
            sizes = [t.get_fontsize() for t in ax.texts if t.get_text()]
            assert sizes and min(sizes) >= style.TICK_SIZE, case
            assert min(sizes) * 100 / 72 >= 9
            # the point an update reaches is always marked: at its true end, not at the end of a
            # last arrow drawn longer (test_update_arrows checks where)
            nxt = [a for a in ax.lines if (a.get_gid() or "").startswith("zoom-next:")]
            assert len(nxt) == 1, case
            if case.startswith(("01", "03 plot")):   # plot_update: the marks named on the data
                gids = {t.get_gid().split(":")[0]: t for t in ax.texts}
                ring = gids.get("position-label") or gids["lookahead-label"]
                assert ring.get_text().startswith("before"), case
                np.testing.assert_allclose(ring.xy, ring_mark.get_xydata()[0])
                if nxt:
                    assert gids["next-label"].get_text() == "after"
                    np.testing.assert_allclose(gids["next-label"].xy, nxt[0].get_xydata()[0])
                # the fading path is named where it shows, and drawn only up to the update
                assert "trail-label" in gids and gids["trail-label"].get_text() == "path so far", case
                assert not [a for a in ax.lines if (a.get_gid() or "").startswith("zoom-path:")], case
        if case.startswith(("01", "03 plot")):   # plot_update: the plane's axes named, a two-line key
            assert all(ax.get_xlabel() == "w[0]" and ax.get_ylabel() == "w[1]" for ax in fig.axes), case
            caption = fig.get_supxlabel()
            assert caption.count("\n") == 1, caption
            for mark in ("μ·v in the run's colour", "−lr·g in its tint", "drawn longer, dashed", "zoom ×N",
                         "dotted line: μ·v_prev from the iterate"):
                assert mark in caption, (case, mark)


def leaders_of(ax, renderer):
    """``[(annotation, anchor_px, far_end_px, text_box)]``: each drawn label's leader."""
    out = []
    for t in ax.texts:
        if not (isinstance(t, Annotation) and t.get_text()) or t.arrow_patch is None:
            continue
        t.update_positions(renderer)
        anchor = ax.transData.transform(t.xy)
        verts = t.arrow_patch.get_path().vertices
        if len(verts) < 2:
            continue
        far = np.asarray(max(verts, key=lambda v: np.hypot(*(v - anchor))), np.float64)
        b = Text.get_window_extent(t, renderer)
        out.append((t, anchor, far, (b.x0, b.y0, b.x1, b.y1)))
    return out


def test_no_leader_reads_as_a_sign_or_a_tick_at_its_text(cases):
    """A leader never meets its label's text in line with it, at the middle of its left or
    right side, where it reads as a sign ("−μ·v_prev 1.1", tutorial 03's explorer at update
    20), and at least 8 px of it show beyond the mark or shaft it names (a shorter one is a
    tick at the text's end): in every close-up, the dashboard's explorer at update 1 too."""
    from dtsgd_viz.views.update_label_check import _hidden
    checked = 0
    for case, fig in cases.items():
        renderer = fig.canvas.get_renderer()
        for ax in zoom_axes(fig):
            polygons, discs = arrow_polygons(ax), marker_discs(ax, fig.dpi)
            for t, anchor, far, (x0, y0, x1, y1) in leaders_of(ax, renderer):
                seen = np.hypot(*(far - anchor)) - _hidden(anchor, far, polygons, discs)
                assert seen >= 7.5, f"{case}: {t.get_gid()}'s leader shows {seen:.1f} px"
                at_side = far[0] < x0 or far[0] > x1
                assert not (at_side and y0 + 3 < far[1] < y1 - 3), \
                    f"{case}: {t.get_gid()}'s leader meets the middle of its text's side at {far.round(1)}"
                checked += 1
    assert checked >= 40


def test_the_check_sees_a_leader_that_reads_as_a_sign():
    """``conflicts`` reports the flaw the placement avoids: the label "μ·v_prev 1.1" moved
    just right of its shaft, its leader a short dash at the text's start."""
    import dtsgd_viz
    from dtsgd_viz.views.update_label_check import conflicts
    from close_up_cases import SURFACE, tutorial_03
    fig = dtsgd_viz.plot_update(tutorial_03(), SURFACE, step=20)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (ax,) = [a for a in zoom_axes(fig) if a.get_title().startswith("momentum")]
    (t,) = [t for t in ax.texts if t.get_gid() == "zoom-label:momentum:momentum"]
    t.set_ha("left")
    t.set_va("center")
    t.xyann = (7.0, 0.0)
    found = conflicts(ax, renderer, arrow_polygons(ax), marker_discs(ax, fig.dpi))
    assert any("zoom-label:momentum:momentum's leader reads as a" in f for f in found), found


def test_the_dashboards_step_through_keeps_its_labels_off_the_arrows(cases):
    """PathExplorer at update 1 (the dashboard's step-through): Nesterov's "iterate =
    look-ahead (v_prev = 0): g here" crosses no arrow's shaft (quiver's drawn outline), no
    two leaders cross, and nothing else clashes (``conflicts``)."""
    from matplotlib.path import Path
    from matplotlib.transforms import Bbox
    from dtsgd_viz.views.update_hits import _seg_seg
    from dtsgd_viz.views.update_label_check import conflicts
    fig = cases["03 PathExplorer update 1"]
    renderer = fig.canvas.get_renderer()
    axes = zoom_axes(fig)
    assert len(axes) == 3
    for ax in axes:
        polygons = arrow_polygons(ax)
        leaders = leaders_of(ax, renderer)
        for t, _, _, box in leaders:
            for gid, poly in polygons:
                assert not Path(poly).intersects_bbox(Bbox([box[:2], box[2:]]), filled=True), \
                    f"{t.get_gid()} over {gid}"
        for i, (t, a, b, _) in enumerate(leaders):
            for u, c, d, _ in leaders[i + 1:]:
                assert not _seg_seg(a, b, c, d), f"{t.get_gid()}'s leader across {u.get_gid()}'s"
        assert not conflicts(ax, renderer, polygons, marker_discs(ax, fig.dpi)), ax.get_title()
    (nes,) = [ax for ax in axes if ax.get_title().startswith("Nesterov")]
    (look,) = [t for t in nes.texts if (t.get_gid() or "").startswith("lookahead-label:")]
    assert "iterate" in look.get_text() and "look-ahead" in look.get_text() and "v_prev = 0" in look.get_text()


def trail_polyline(ax):
    """The drawn fading path's segments, display pixels: ``[(a, b)]``."""
    return [tuple(ax.transData.transform(np.asarray(s, np.float64))) for c in ax.collections
            if (c.get_gid() or "").startswith("zoom-trail:") for s in c.get_segments()]


def _seg_point(a, b, p) -> float:
    d = b - a
    t = np.clip((p - a) @ d / (float(d @ d) or 1.0), 0.0, 1.0)
    return float(np.hypot(*(a + t * d - p)))


@pytest.mark.parametrize("case", ["01 plot_update step 4", "03 plot_update step 5", "03 plot_update step 9",
                                  "03 plot_update step 20"])
def test_path_so_far_names_the_path_itself_clear_of_the_other_marks(cases, case):
    """"path so far" ends on the drawn path (within a pixel), not on Nesterov's dotted
    μ·v_prev line lying along it nor on an arrow: >= 8 px from both, and from the marks."""
    fig = cases[case]
    found = 0
    for ax in zoom_axes(fig):
        labels = [t for t in ax.texts if (t.get_gid() or "").startswith("trail-label:")]
        if not labels:
            continue
        (t,) = labels
        p = ax.transData.transform(t.xy)
        assert min(_seg_point(a, b, p) for a, b in trail_polyline(ax)) < 1.0, f"{case}: off the path"
        for line in ax.lines:
            gid = line.get_gid() or ""
            if gid.startswith("iterate-line:"):
                a, b = ax.transData.transform(line.get_xydata())
                assert _seg_point(a, b, p) >= 8.0, f"{case}: on the dotted line"
            elif gid.startswith(("iterate:", "zoom-position:", "zoom-next:")):
                r = (line.get_markersize() + line.get_markeredgewidth()) * fig.dpi / 72 / 2
                assert np.hypot(*(ax.transData.transform(line.get_xydata()[0]) - p)) >= r + 4.0, (case, gid)
        for gid, poly in arrow_polygons(ax):
            from matplotlib.path import Path
            assert not Path(poly).contains_point(p, radius=16.0), f"{case}: on {gid}"
        found += 1
    assert found >= 2


def test_the_path_so_far_is_drawn_light_and_thin_unlike_the_arrows(cases):
    """The path up to the update, the leg into the ring too, in the run's tint, at most
    ``TRAIL_ALPHA`` opaque and thinner than any arrow's shaft: momentum's leg into "before"
    (tutorial 03, update 5) does not read as the start of μ·v_prev."""
    from matplotlib.colors import to_rgb
    from dtsgd_viz.views import update_panel as panel
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
                shafts = [q.width * ax.bbox.width for q in ax.collections if (q.get_gid() or "").startswith("zoom-arrow:")]
                assert lw_px < min(shafts), case
                checked += 1
    assert checked >= 10
