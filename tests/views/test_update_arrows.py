"""The close-ups' arrows as drawn (plot_update on tutorial 01's and 03's runs, PathExplorer
at update 20; ``close_up_cases`` builds them once): every arrow's direction reads (its
shaft at least two of its head lengths, in pixels, or it is drawn longer, dashed and says
so), an arrow folding back reaches out of the head before it and is drawn under it, the
update's true end is marked, every leader meets its own shaft and crosses no arrow, and
each panel's marks fill most of it."""

import numpy as np
import pytest
from matplotlib.path import Path
from matplotlib.text import Annotation

from close_up_cases import close_ups
from dtsgd_viz.views import update_arrows as arr


@pytest.fixture(scope="module")
def figures():
    """Tutorial 01's update 4, tutorial 03's updates 1, 2, 5, 9, 20, 30 and PathExplorer at
    its update 20, built once for this module and ``test_update_labels`` (``close_up_cases``)."""
    return list(close_ups())


def arrows_of(ax):
    """``[(quiver, tail_px, polygon_px)]``: each close-up arrow as quiver drew it."""
    out = []
    for q in ax.collections:
        if (q.get_gid() or "").startswith("zoom-arrow:"):
            tail = q.get_offset_transform().transform(np.asarray(q.get_offsets())[0])
            (path,) = q.get_paths()
            out.append((q, tail, q.get_transform().transform(path.vertices) + tail))
    return out


def zero(q) -> bool:
    """A zero-length term (update 1's μ·v_prev): quiver draws a speck, its label says "= 0"."""
    return float(np.hypot(float(q.U[0]), float(q.V[0]))) == 0.0


def shaft_and_head(tail, poly):
    """The drawn shaft's and head's lengths (pixels) along the arrow: the head from its
    widest point to its tip."""
    tip = poly[np.argmax(np.hypot(*(poly - tail).T))]
    u = (tip - tail) / np.hypot(*(tip - tail))
    along, across = (poly - tail) @ u, np.abs((poly - tail) @ np.array([-u[1], u[0]]))
    base = along[np.argmax(across)]
    return base, float(along.max() - base), u


def test_every_arrow_shows_its_direction_or_is_drawn_longer_and_says_so(figures):
    checked = lengthened = 0
    for case, fig in figures:
        for ax in fig.axes:
            labels = {t.get_gid(): t.get_text() for t in ax.texts}
            for q, tail, poly in arrows_of(ax):
                label = labels[q.get_gid().replace("zoom-arrow:", "zoom-label:")]
                if len(poly) < 3 or label.endswith("= 0"):
                    continue   # a zero-length term (update 1's μ·v_prev): no arrow, its label says "= 0"
                shaft, head, _ = shaft_and_head(tail, poly)
                assert shaft >= 2 * head * 0.97, f"{case} {q.get_gid()}: shaft {shaft:.1f} px, head {head:.1f} px"
                assert head >= 8.0, f"{case} {q.get_gid()}: a head of {head:.1f} px"   # big enough to point
                if getattr(q, "magnified", 1.0) > 1:
                    assert q.get_linestyle()[0][1] is not None, case          # dashed
                    assert f"drawn ×" in label and "longer" in label, case     # and says so
                    lengthened += 1
                else:
                    assert q.get_linestyle()[0][1] is None and "drawn" not in label, case
                checked += 1
    assert checked >= 15 and lengthened >= 2


def test_an_arrow_folding_back_reaches_out_of_the_head_before_it(figures):
    found = 0
    for case, fig in figures:
        for ax in fig.axes:
            drawn = arrows_of(ax)
            for (q1, t1, p1), (q2, t2, p2) in zip(drawn, drawn[1:]):
                if len(p1) < 3 or len(p2) < 3 or zero(q1) or zero(q2):
                    continue
                _, head1, u1 = shaft_and_head(t1, p1)
                _, _, u2 = shaft_and_head(t2, p2)
                if np.degrees(np.arccos(np.clip(u1 @ u2, -1, 1))) <= arr.FOLD:
                    continue
                assert q2.width < q1.width, case   # thinner: the one under it shows round it
                assert q2.get_zorder() < q1.get_zorder(), case   # under the head before it: that head shows whole
                reach = max(np.hypot(*(v - t2)) for v in p2)
                assert reach >= head1 + 2 * (reach - shaft_and_head(t2, p2)[0]) * 0.9, case
                found += 1
    assert found >= 1   # momentum's update 5 and 20 of tutorial 03 fold back


def test_every_leader_meets_its_own_shaft_and_crosses_no_arrow(figures):
    """On the cases it was written for (03's updates 1 and 30 are checked by
    ``test_update_labels``' sweep, with ``update_label_check.conflicts``)."""
    checked = 0
    for case, fig in figures:
        if case.endswith((" step 1", " step 30")):
            continue
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            drawn = {q.get_gid(): (tail, poly) for q, tail, poly in arrows_of(ax)}
            quivers = {q.get_gid(): q for q, _, _ in arrows_of(ax)}
            for t in ax.texts:
                if not isinstance(t, Annotation) or t.arrow_patch is None:
                    continue
                t.update_positions(renderer)
                anchor = ax.transData.transform(t.xy)
                own = t.get_gid().replace("zoom-label:", "zoom-arrow:")
                if own in drawn and len(drawn[own][1]) >= 3 and not zero(quivers[own]):   # an arrow's name: on its shaft, not its head
                    tail, poly = drawn[own]
                    shaft, _, u = shaft_and_head(tail, poly)
                    assert 0 < (anchor - tail) @ u < shaft, f"{case}: {t.get_gid()} anchored on the head"
                leader = t.arrow_patch.get_path().vertices
                if len(leader) < 2:
                    continue
                far = max(leader, key=lambda v: np.hypot(*(v - anchor)))
                # the leader may touch what lies within the mark it names (a ring over an arrow's tail)
                ring = max([(line.get_markersize() + line.get_markeredgewidth()) * fig.dpi / 72 / 2 + 2
                            for line in ax.lines if line.get_marker() not in (None, "None", "", " ")
                            and np.hypot(*(ax.transData.transform(line.get_xydata()[0]) - anchor)) < 1.0],
                           default=0.0)
                n = np.hypot(*(far - anchor))
                for gid, (_, poly) in drawn.items():
                    if len(poly) < 3 or zero(quivers[gid]):
                        continue
                    # its own shaft, or an arrow folding back over it there: touched at the anchor only
                    on = gid == own or Path(poly, closed=True).contains_point(anchor, radius=2.0)
                    own_r = 0.5 * arr.SHAFT * ax.bbox.width + 4 if on else 0.0
                    if Path(poly, closed=True).contains_point(anchor):   # from inside it (the update's
                        along = anchor + np.linspace(0, 1, int(2 * n) + 2)[:, None] * (far - anchor)  # end in a head):
                        inside = np.flatnonzero(Path(poly, closed=True).contains_points(along))  # where it leaves
                        own_r = max(own_r, np.hypot(*(along[inside[-1]] - anchor)) + 2.0)
                    start = anchor + (far - anchor) * min(1.0, max(own_r, ring) / n)
                    assert not Path([start, far]).intersects_path(Path(poly, closed=True), filled=True), \
                        f"{case}: {t.get_gid()}'s leader crosses {gid}"
                checked += 1
    assert checked >= 25


def test_each_plot_update_panel_is_filled_by_what_it_draws(figures):
    """The tutorials' close-ups (01's update 4, 03's update 5) at the tightest box: the
    marks fill >= 68% of each panel along their longer side; elsewhere a panel whose
    labels need more room still >= 55% (``update_anatomy.TRIES``)."""
    for case, fig in figures:
        if "plot_update" not in case or case.endswith((" step 1", " step 30")):   # the cases it was written for
            continue
        # 0.68: tutorial 01's Nesterov panel takes its second box (pad 0.25) to keep the
        # look-ahead label off the path (a label over the path counts as a crossing)
        least = 0.68 if case in ("01 plot_update step 4", "03 plot_update step 5") else 0.55
        for ax in fig.axes:
            pts = [poly for _, _, poly in arrows_of(ax)]
            for line in ax.lines:
                if line.get_marker() not in (None, "None", "", " "):
                    r = (line.get_markersize() + line.get_markeredgewidth()) * fig.dpi / 72 / 2
                    c = ax.transData.transform(line.get_xydata())
                    pts += [c + r, c - r]
            pts = np.concatenate(pts)
            box = ax.bbox
            inside = pts[(pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)]
            fill = max(np.ptp(inside[:, 0]) / box.width, np.ptp(inside[:, 1]) / box.height)
            assert fill >= least, f"{case} {ax.get_title()}: the marks fill {fill:.0%}"


def test_fit_arrows_keeps_the_true_vectors_tip_to_tail():
    chain = [("momentum", np.zeros(2), np.array([1.0, 0.2])), ("gradient", np.array([1.0, 0.2]), np.array([-0.02, 0.01]))]
    drawn = arr.fit_arrows(chain, 1.5)
    for a, (_, tail, uv) in zip(drawn, chain):
        np.testing.assert_allclose(a.tail, tail)
        np.testing.assert_allclose(a.true_uv, uv)
    assert drawn[0].factor == 1.0 and drawn[1].dashed and drawn[1].covered > 0
    assert arr.fit_arrows([("gradient", np.zeros(2), np.zeros(2))], 1.0)[0].factor == 1.0   # zero stays zero


def test_the_update_ends_at_a_marked_point_even_where_the_last_arrow_is_drawn_longer(figures):
    """The dot "after" sits at the true end of the update (the last arrow's tail plus its
    true vector): under the last head where the arrow is drawn true, over the dashed shaft
    (and on top of every arrow) where it is drawn longer, and plot_update names it."""
    longer = 0
    for case, fig in figures:
        for ax in fig.axes:
            drawn = arrows_of(ax)
            if not drawn:
                continue
            q = drawn[-1][0]
            key = q.get_gid().split(":")[1]
            (dot,) = [ln for ln in ax.lines if ln.get_gid() == f"zoom-next:{key}"]
            tail = np.asarray(q.get_offsets()[0], np.float64)
            end = tail + np.array([float(q.U[0]), float(q.V[0])]) / getattr(q, "magnified", 1.0)
            np.testing.assert_allclose(dot.get_xydata()[0], end, rtol=1e-9, atol=1e-12)
            aside = any((ln.get_gid() or "").startswith("zoom-connector:") for ln in ax.lines)
            if getattr(q, "magnified", 1.0) > 1 or aside:   # drawn aside: its head is not over the end
                assert dot.get_zorder() > max(a.get_zorder() for a, _, _ in drawn), case
                longer += 1
            else:
                assert dot.get_zorder() < min(a.get_zorder() for a, _, _ in drawn), case
            if "plot_update" in case:
                (name,) = [t for t in ax.texts if t.get_gid() == f"next-label:{key}"]
                assert name.get_text() == "after"
                np.testing.assert_allclose(name.xy, end, rtol=1e-9, atol=1e-12)
    assert longer >= 2   # tutorial 03's update 5: momentum's and Nesterov's −lr·g


def test_the_explorers_close_ups_centre_what_they_draw(figures):
    """PathExplorer at tutorial 03's update 20: each close-up's arrows, marks and the path's
    part inside it sit in its middle (where equal aspect leaves range spare, it is shared
    out, not left as one band: the plain panel's box at ×50 left its top 35% empty), and
    plain's update fills its panel."""
    (fig,) = [f for case, f in figures if case == "03 PathExplorer update 20"]
    for ax in fig.axes:
        drawn = arrows_of(ax)
        if not drawn:
            continue
        pts = [poly for _, _, poly in drawn]
        for line in ax.lines:
            if line.get_marker() not in (None, "None", "", " ") and line.get_visible():
                pts.append(ax.transData.transform(line.get_xydata()))
        for c in ax.collections:
            if (c.get_gid() or "").startswith("zoom-trail:"):
                for s in c.get_segments():
                    a, b = ax.transData.transform(np.asarray(s, np.float64))
                    pts.append(a + np.linspace(0, 1, 50)[:, None] * (b - a))
        pts = np.concatenate(pts)
        box = ax.bbox
        pts = pts[(pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)]
        bands = [(pts[:, 0].min() - box.x0) / box.width, (box.x1 - pts[:, 0].max()) / box.width,
                 (pts[:, 1].min() - box.y0) / box.height, (box.y1 - pts[:, 1].max()) / box.height]
        # centred where equal aspect leaves range spare, and never a band as wide as plain's was
        assert max(bands) <= 0.33, f"{ax.get_title()}: empty bands {np.round(bands, 2)}"
        assert abs(bands[0] - bands[1]) <= 0.12 or min(bands[:2]) <= 0.05, f"{ax.get_title()}: {np.round(bands, 2)}"
        assert abs(bands[2] - bands[3]) <= 0.12 or min(bands[2:]) <= 0.05, f"{ax.get_title()}: {np.round(bands, 2)}"
        if ax.get_title().startswith("plain"):
            _, tail, poly = drawn[-1]
            assert np.hypot(*(poly - tail).T).max() >= 0.4 * box.width, ax.get_title()


def test_the_gifs_held_frame_draws_nesterovs_arrows_well_beyond_its_ring():
    """The docs' GIF holds its last frame (update 40): there Nesterov's update has all but
    stopped, so its close-up takes the closest zoom (``_gif_zoom.zoom_schedule``, and says
    it changed). Its μ·v_new arrow is then >= 4 ring radii long, and each arrow's name hangs
    off its own shaft, away from the ring the arrows share (>= 2 ring radii from it)."""
    from close_up_cases import gif_last_frame
    from dtsgd_viz.views._gif_zoom import ZOOMS
    _, fig = gif_last_frame()
    (ax,) = [a for a in fig.axes if a.get_title().startswith("Nesterov")]
    assert f"×{ZOOMS[-1]:.0f}" in ax.get_title() and "(was ×" in ax.get_title(), ax.get_title()
    (ring,) = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("zoom-position:")]
    r = (ring.get_markersize() + ring.get_markeredgewidth()) * fig.dpi / 72 / 2
    centre = ax.transData.transform(ring.get_xydata()[0])
    drawn = {q.get_gid(): (tail, poly) for q, tail, poly in arrows_of(ax)}
    tail, poly = drawn["zoom-arrow:nesterov:lookahead"]
    assert np.hypot(*(poly - tail).T).max() >= 4 * r
    for gid in drawn:
        (t,) = [t for t in ax.texts if t.get_gid() == gid.replace("zoom-arrow:", "zoom-label:")]
        anchor = ax.transData.transform(t.xy)
        assert np.hypot(*(anchor - centre)) >= 2 * r, f"{gid}'s name at the ring"


def test_zoom_schedule_gives_the_held_last_frame_the_closest_zoom_once_the_run_has_stopped():
    from dtsgd_viz.views._gif_zoom import ZOOMS, zoom_schedule
    assert zoom_schedule([30.0, 50.0, 120.0, 200.0]) == [30.0, 30.0, 30.0, ZOOMS[-1]]
    assert zoom_schedule([30.0, 50.0, 120.0, 100.0]) == [30.0] * 4   # not stopped: one zoom
    assert zoom_schedule([150.0, 200.0, 200.0]) == [150.0] * 3       # closest already, near enough


def _chain_px(ax):
    """``[(quiver, drawn tail, unit, shaft length, half width)]`` in display pixels, and
    ``{gid: connector display points}``."""
    out = []
    for q, tail, poly in arrows_of(ax):
        shaft, _, u = shaft_and_head(tail, poly)
        out.append((q, tail, u, shaft, 0.5 * q.width * ax.bbox.width))
    joins = {ln.get_gid(): ln.get_transform().transform(ln.get_xydata()) for ln in ax.lines
             if (ln.get_gid() or "").startswith("zoom-connector:")}
    return out, joins


def _assert_folded_arrow_drawn_aside(ax, case):
    """The second arrow folds back (> 150°) and is drawn beside the first: its shaft's
    centre line >= the two half widths + 1 px from the first's over their overlap, its
    connector starts at the first arrow's true tip and ends at its drawn tail, its drawn
    tip is level with its true one along the arrow, and the "after" dot stays true."""
    (q1, t1, u1, s1, h1), (q2, t2, u2, s2, h2) = _chain_px(ax)[0]
    joins = _chain_px(ax)[1]
    assert np.degrees(np.arccos(np.clip(u1 @ u2, -1, 1))) > 150, case
    along = t2 + np.linspace(0, s2, 200)[:, None] * u2           # the second shaft's centre line
    x = (along - t1) @ u1
    over = (x > 0) & (x < s1)                                      # beside the first shaft
    assert over.sum() >= 20, case
    gap = np.abs((along[over] - t1) @ np.array([-u1[1], u1[0]]))
    assert gap.min() >= h1 + h2 + 1.0, f"{case}: shafts {gap.min():.1f} px apart, need {h1 + h2 + 1:.1f}"
    tip1 = ax.transData.transform(np.asarray(q2.get_offsets()[0]))   # the first's true tip = the second's true tail
    (join,) = joins.values()
    assert np.hypot(*(join[0] - tip1)) < 0.5 and np.hypot(*(join[-1] - t2)) < 0.5, case
    true_tip = ax.transData.transform(np.asarray(q2.get_offsets()[0]) + [float(q2.U[0]), float(q2.V[0])])
    drawn_tip = t2 + (true_tip - tip1)
    assert abs((drawn_tip - true_tip) @ u2) < 0.5, case
    key = q2.get_gid().split(":")[1]
    (dot,) = [ln for ln in ax.lines if ln.get_gid() == f"zoom-next:{key}"]
    end = np.asarray(q2.get_offsets()[0]) + np.array([float(q2.U[0]), float(q2.V[0])]) / getattr(q2, "magnified", 1.0)
    np.testing.assert_allclose(dot.get_xydata()[0], end, rtol=1e-9, atol=1e-12)


def test_the_gifs_held_frame_draws_nesterovs_folding_gradient_beside_its_look_ahead_term():
    """Update 40 of the docs' GIF: Nesterov's −lr·g turns straight back over μ·v_new; it
    is drawn a shaft width + 3 px aside, joined to μ·v_new's tip. Momentum's −lr·g (not
    folding back) is drawn where it is."""
    from close_up_cases import gif_last_frame
    _, fig = gif_last_frame()
    (ax,) = [a for a in fig.axes if a.get_title().startswith("Nesterov")]
    _assert_folded_arrow_drawn_aside(ax, "gif Nesterov")
    (mom,) = [a for a in fig.axes if a.get_title().startswith("momentum")]
    drawn, joins = _chain_px(mom)
    assert len(drawn) == 2 and not joins
    for q, tail, *_ in drawn:   # drawn at its true tail
        assert np.hypot(*(tail - mom.transData.transform(np.asarray(q.get_offsets()[0])))) < 1e-6


def test_a_synthetic_fold_is_drawn_aside_and_one_leaning_away_is_not():
    from close_up_cases import folded_panel
    for lean in (0.0, 0.002, -0.02):
        fig, ax, _ = folded_panel(lean)
        _assert_folded_arrow_drawn_aside(ax, f"lean {lean}")
    _, ax, _ = folded_panel(0.9)   # −lr·g at ~124° to μ·v_new: apart by itself
    drawn, joins = _chain_px(ax)
    assert not joins
    for q, tail, *_ in drawn:
        assert np.hypot(*(tail - ax.transData.transform(np.asarray(q.get_offsets()[0])))) < 1e-6


def test_no_close_up_that_does_not_fold_straight_back_is_drawn_aside(figures):
    for case, fig in figures:
        for ax in fig.axes:
            drawn, joins = _chain_px(ax)
            for (_, _, u1, _, _), (q2, t2, u2, _, _) in zip(drawn, drawn[1:]):
                moved = np.hypot(*(t2 - ax.transData.transform(np.asarray(q2.get_offsets()[0])))) > 1e-6
                if moved:
                    assert np.degrees(np.arccos(np.clip(u1 @ u2, -1, 1))) > 150, case
                    assert len(joins) == 1, case
            if not any(np.hypot(*(t - ax.transData.transform(np.asarray(q.get_offsets()[0])))) > 1e-6
                       for q, t, *_ in drawn):
                assert not joins, case


def test_fold_shift_to_either_side_keeps_the_shafts_apart():
    from dtsgd_viz.views.update_fold import fold_shift
    tail1, tip1, w1, w2 = np.zeros(2), np.array([200.0, 0.0]), 10.0, 5.0
    uv2 = np.array([-150.0, 3.0])   # leaning 3 px up over its length
    for flip in (1.0, -1.0):
        s = fold_shift(tail1, tip1, w1, tip1, uv2, w2, flip)
        pts = tip1 + s + np.linspace(0, 1, 50)[:, None] * uv2
        assert np.abs(pts[:, 1]).min() >= w1 / 2 + w2 / 2 + 1, flip
        assert np.sign(s[1]) == flip   # to the side it leans to, or (flip -1) the other
