"""One label placement for the path panels (``views.paths.labels``): the start and minimum
names, the runs' names, none overlapping another label, a marker or the frame; where two
paths coincide both are seen (``views.paths.casing``); what the caption explains."""

import numpy as np
import pytest
from helpers.synthetic_paths import synthetic
from matplotlib.colors import to_rgb
from matplotlib.text import Text

import dtsgd_viz
from dtsgd_viz.theory import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.paths.casing import CASING_EDGE, _distance_to_polyline, coinciding
from dtsgd_viz.views.paths.labels import Obstacles, best_spot, boxes_overlap, spot_cost

VALLEY = surfaces.RotatedQuadratic(condition=10.0, angle=30.0)
NARROW = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)


@pytest.fixture(scope="module")
def two():
    return {"momentum": synthetic(VALLEY, 40, 0.05, 0.9), "nesterov": synthetic(VALLEY, 40, 0.05, 0.9, True)}


@pytest.fixture(scope="module")
def three():
    return {
        "plain": synthetic(NARROW, 60, 0.05),
        "momentum": synthetic(NARROW, 60, 0.05, 0.9),
        "nesterov": synthetic(NARROW, 60, 0.05, 0.9, True),
    }


@pytest.fixture(scope="module")
def two_at(two):
    """``plot_paths(two, VALLEY, step=step)``, drawn once per step: the tests using it only read it."""
    drawn = {}

    def at(step):
        if step not in drawn:
            drawn[step] = dtsgd_viz.plot_paths(two, VALLEY, step=step)
        return drawn[step]

    return at


@pytest.fixture(scope="module")
def two_at_4(two_at):
    return two_at(4)


@pytest.fixture(scope="module")
def three_at_5(three):
    """``plot_paths(three, NARROW, step=5)``, drawn once: the tests using it only read it."""
    return dtsgd_viz.plot_paths(three, NARROW, step=5)


def _boxes(fig):
    """``{gid: display box}`` of the path panel's names (their text, not their leaders)."""
    ax = fig.axes[0]
    r = fig.canvas.get_renderer()
    out = {}
    for t in ax.texts:
        if (
            t.get_visible()
            and t.get_text()
            and (t.get_gid() or "").split(":")[0] in ("start-label", "minimum-label", "run-name")
        ):
            e = Text.get_window_extent(t, r)
            out[t.get_gid()] = (e.x0, e.y0, e.x1, e.y1)
    return out


def _markers(fig):
    ax = fig.axes[0]
    out = {}
    for ln in ax.lines:
        gid = ln.get_gid() or ""
        if gid in ("start", "minimum") or gid.startswith("position:"):
            out[gid] = ax.transData.transform(ln.get_xydata()[0])
    return out


def test_the_pure_scoring_keeps_a_label_off_lines_boxes_and_the_frame():
    obs = Obstacles((0, 0, 200, 100))
    obs.add_polyline([[0, 50], [200, 50]])
    obs.add_box((110, 55, 140, 80))  # another label, above-right of the anchor
    box = best_spot(obs, (100, 50), (30, 10), radii=(4.0, 8.0))
    assert spot_cost(obs, box) < 1.0
    assert not boxes_overlap(box, obs.boxes[0]) and not (box[1] < 50 < box[3])
    assert 0 <= box[0] and box[2] <= 200 and 0 <= box[1] and box[3] <= 100


@pytest.mark.parametrize("runs, figure", [("two", "two_at_4"), ("three", "three_at_5")])
@pytest.mark.slow
def test_no_name_overlaps_another_a_marker_or_leaves_the_panel(runs, figure, request):
    recs = request.getfixturevalue(runs)
    fig = request.getfixturevalue(figure)  # plot_paths(two, VALLEY, step=4), plot_paths(three, NARROW, step=5)
    fig.canvas.draw()
    boxes = _boxes(fig)
    assert {"start-label", "minimum-label", *(f"run-name:{k}" for k in recs)} <= set(boxes)
    f = fig.axes[0].get_window_extent()
    items = list(boxes.items())
    for n, (gid, b) in enumerate(items):
        assert f.x0 <= b[0] and b[2] <= f.x1 and f.y0 <= b[1] and b[3] <= f.y1, gid
        for other, c in items[n + 1 :]:
            assert not boxes_overlap(b, c), (gid, other)
        for mark, (x, y) in _markers(fig).items():
            assert not boxes_overlap(b, (x - 4, y - 4, x + 4, y + 4)), (gid, mark)


@pytest.mark.slow
def test_the_minimum_is_named_where_no_path_runs(two_at_4):
    fig = two_at_4  # plot_paths(two, VALLEY, step=4)
    fig.canvas.draw()
    ax = fig.axes[0]
    b = _boxes(fig)["minimum-label"]
    for ln in ax.lines:
        if (ln.get_gid() or "").startswith("path:"):
            xy = ax.transData.transform(ln.get_xydata())
            t = np.linspace(0, 1, 40)[:, None, None]
            pts = (xy[:-1] + t * (xy[1:] - xy[:-1])).reshape(-1, 2)
            inside = (pts[:, 0] > b[0]) & (pts[:, 0] < b[2]) & (pts[:, 1] > b[1]) & (pts[:, 1] < b[3])
            assert not inside.any(), ln.get_gid()


def test_where_two_paths_coincide_the_lower_one_is_a_casing_under_the_upper(two, two_at_4):
    c = {k: r.path("w").astype(np.float64) for k, r in two.items()}
    shared = coinciding(c["nesterov"], c["momentum"], tol=0.02)
    assert shared and np.allclose(shared[0][0], c["nesterov"][0])  # from the start on
    fig = two_at_4  # plot_paths(two, VALLEY, step=4)
    ax = fig.axes[0]
    casing = [a for a in ax.collections if a.get_gid() == "path-casing:momentum"]
    lines = {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("path:")}
    assert len(casing) == 1 and not [a for a in ax.collections if a.get_gid() == "path-casing:nesterov"]
    widths = casing[0].get_linewidths()
    momentum, nesterov = style.RULE_LOOKS["momentum"], style.RULE_LOOKS["nesterov"]
    # both seen: blue edges CASING_EDGE wide each side of Nesterov's line (on top), under it
    assert min(widths) >= nesterov.lw + 2 * CASING_EDGE - 1e-9
    assert lines["path:nesterov"].get_zorder() > casing[0].get_zorder()
    assert casing[0].get_zorder() < lines["path:momentum"].get_zorder()
    assert tuple(casing[0].get_colors()[0][:3]) == pytest.approx(to_rgb(momentum.color))
    # along Nesterov's line as drawn, so its edges are even on both sides (not a sliver
    # where momentum's path converges onto it): each casing point lies on Nesterov's
    # line on screen (both may be shifted into lanes)
    fig.draw_without_rendering()
    upper = lines["path:nesterov"]
    drawn = upper.get_transform().transform(upper.get_xydata().astype(np.float64))
    for seg in casing[0].get_segments():
        assert len(seg) > 2  # one polyline per stretch: its dashes run on
        on_screen = casing[0].get_transform().transform(np.asarray(seg, np.float64))
        # pixels: the lanes' shifts are turned into data units before the layout, so
        # within 1.5 px of the casing's 3.9 px half-width, against momentum's own offset there
        assert _distance_to_polyline(on_screen, drawn).max() < 1.5
    # in momentum's dash, its dashes as long as momentum's own (matplotlib scales a dash with the width)
    (_offset, dashes), _w = casing[0].get_linestyles()[0], widths[0]
    assert dashes is not None
    np.testing.assert_allclose(np.asarray(dashes), np.asarray(momentum.ls[1]) * momentum.lw, rtol=1e-6)


def test_start_and_minimum_leaders_are_haloed_so_they_read_across_paths(three_at_5):
    fig = three_at_5  # plot_paths(three, NARROW, step=5)
    for gid in ("start-label", "minimum-label"):
        (ann,) = [t for t in fig.axes[0].texts if t.get_gid() == gid]
        effects = ann.arrow_patch.get_path_effects()
        assert len(effects) == 1 and to_rgb(effects[0]._gc["foreground"]) == (1.0, 1.0, 1.0)
        assert effects[0]._gc["linewidth"] > 2 * ann.arrow_patch.get_linewidth()


@pytest.mark.parametrize("step", [1, 4])
@pytest.mark.slow
def test_the_caption_speaks_of_ringed_loss_dots_only_where_dots_meet(two_at, step):
    """At update 1 every run starts at one loss: its dots meet and are ringed; at update 4
    they are apart (01's figure) and the caption says nothing of rings."""
    fig = two_at(step)  # plot_paths(two, VALLEY, step=step)
    ax = fig.axes[1]
    dots = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("loss-marker:")]
    assert len(dots) == 2
    px = [ax.transData.transform(ln.get_xydata()[0]) for ln in dots]
    meet = np.hypot(*(px[0] - px[1])) < max(ln.get_markersize() for ln in dots) * fig.dpi / 72
    ringed = any(ln.get_markerfacecolor() == "none" for ln in dots)
    caption = " ".join(t.get_text() for t in fig.findobj(Text) if "loss panel" in t.get_text())
    assert meet == ringed == ("ringed where dots meet" in caption) == (step == 1), (meet, ringed, caption)


def test_three_first_legs_run_side_by_side_each_in_its_own_look(three, three_at_5):
    """Deliberately changed: the shared first legs were nested casings (Nesterov's edges
    round momentum's round plain's core), read as hidden; now they run in lanes."""
    fig = three_at_5  # plot_paths(three, NARROW, step=5)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    lines = {ln.get_gid()[5:]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("path:")}
    px = fig.dpi / 72.0
    drawn = {k: ln.get_transform().transform(ln.get_xydata()[:2]) for k, ln in lines.items()}
    for a, b in (("plain", "momentum"), ("momentum", "nesterov")):
        d = drawn[a][1] - drawn[a][0]
        n = np.array([-d[1], d[0]]) / np.hypot(*d)
        apart = abs(float(np.dot(drawn[b][0] - drawn[a][0], n)))  # across the shared leg
        need = 0.5 * (style.RULE_LOOKS[a].lw + style.RULE_LOOKS[b].lw) * px
        assert apart >= need + 1.0, (a, b, apart, need)  # clear of each other
        assert apart <= 12.0  # still read as one leg
    np.testing.assert_array_equal(lines["plain"].get_xydata(), three["plain"].path("w"))  # data as recorded
    caption = [t.get_text() for t in fig.findobj(Text) if "side by side" in t.get_text()]
    assert len(caption) == 1


@pytest.mark.slow
def test_the_caption_says_why_nesterovs_first_step_is_long(three, three_at_5):
    fig = three_at_5  # plot_paths(three, NARROW, step=5)
    caption = [t.get_text() for t in fig.findobj(Text) if "first step" in t.get_text()]
    assert len(caption) == 1 and "(1+μ) = 1.9×" in caption[0] and "p ← p + μ·v − lr·g" in caption[0]
    one = dtsgd_viz.plot_paths({"nesterov": three["nesterov"]}, NARROW, step=5)
    assert not [t for t in one.findobj(Text) if "first step" in t.get_text()]
    size = min(t.get_fontsize() for t in fig.findobj(Text) if t.get_gid() is None and "rings" in t.get_text())
    assert size * style.DPI / 72 >= 13  # the caption reads as the labels do


def test_a_loss_within_a_decade_is_drawn_on_a_linear_axis(two):
    from dtsgd_viz.views.paths.loss import _needs_log
    from dtsgd_viz.views.paths.scene import build_scene

    scene = build_scene(two, VALLEY, None)
    assert _needs_log(scene)
    short = {k: synthetic(surfaces.RotatedQuadratic(), 3, 0.01) for k in ("a", "b")}
    fig = dtsgd_viz.plot_paths(short, surfaces.RotatedQuadratic(), step=2)
    assert fig.axes[1].get_yscale() == "linear" and "log" not in fig.axes[1].get_title()


def test_a_projected_minimum_near_the_paths_is_framed_with_them():
    from dtsgd_viz.views.paths.scene import _near

    coords = np.array([[0.0, 0.0], [1.0, 1.0]])
    kept = _near(np.array([[1.4, 0.5], [9.0, 9.0]]), coords)
    assert len(kept) == 1 and kept[0].tolist() == [[1.4, 0.5]]


def test_touching_any_path_costs_extra_and_a_leader_counts_the_paths_it_crosses():
    from dtsgd_viz.views.paths.labels import leader_cost

    obs = Obstacles((0, 0, 200, 200))
    obs.add_polyline([[0, 100], [200, 100]])  # a line across the middle
    grazing = (90, 101, 110, 111)  # its lower edge on the line
    assert spot_cost(obs, grazing, touch=150.0) >= spot_cost(obs, grazing) + 150.0
    assert spot_cost(obs, (90, 140, 110, 150), touch=150.0) == 0.0
    # a far spot clear of the line wins over a near one that grazes it
    box = best_spot(obs, (100, 100), (20, 8), radii=(0.0, 30.0), touch=150.0)
    assert box[1] > 102 or box[3] < 98
    assert leader_cost(obs, (100, 50), (100, 150)) > 0.0  # crosses it
    assert leader_cost(obs, (20, 150), (180, 150)) == 0.0  # runs beside it


def test_a_leader_through_another_label_counts_and_one_leaving_its_own_marker_does_not():
    from dtsgd_viz.views.paths.labels import leader_through_boxes

    star, name = (-4, -4, 4, 4), (20, -5, 60, 5)  # the marker the leader leaves, a name across its way
    assert leader_through_boxes([star, name], (3, 0), (80, 0), anchor=(0, 0)) == 1
    assert leader_through_boxes([star, name], (3, 0), (80, 30), anchor=(0, 0)) == 0  # above the name
