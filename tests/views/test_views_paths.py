"""plot_paths / animate, checked through the figure's data: path vertices against the
recorded parameters, arrows against the update rule, the loss panel against the
recorded loss, projections against exact geometry; bad input raises."""

import numpy as np
import pytest
from helpers.arrows import assert_tail
from helpers.synthetic_paths import note_text, synthetic
from matplotlib import animation
from matplotlib.quiver import Quiver

import dtsgd_viz
from conftest import CONFIGS
from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.paths import geometry as geo
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.views.paths.loss import MEAN_LABEL
from dtsgd_viz.views.paths.plot import draw_paths
from dtsgd_viz.views.update import geometry as upd
from dtsgd_viz.views.update.geometry import decompose_update

STEPS = 8
ROTATED = surfaces.RotatedQuadratic()
# 8 parameters, 2 device blocks (2 curvature levels): every path lies in one plane
PLANAR = surfaces.ShardedQuadratic((2, 4), {"x": 2}, ("x", "unsharded"), curvature=(0.2, 1.0))


@pytest.fixture(scope="module")
def rotated():
    return dtsgd_viz.run(ROTATED, CONFIGS, STEPS)


@pytest.fixture(scope="module")
def planar():
    configs = {k: dict(CONFIGS[k], learning_rate=0.5) for k in ("momentum", "nesterov")}
    return dtsgd_viz.run(PLANAR, configs, STEPS)


@pytest.fixture(scope="module")
def rotated_figure(rotated):
    """``plot_paths(rotated, ROTATED)``, drawn once: the tests using it only read it."""
    return dtsgd_viz.plot_paths(rotated, ROTATED)


def gid_artists(fig, prefix):
    out = {}
    for ax in fig.axes:
        for a in [*ax.lines, *ax.collections]:
            gid = a.get_gid() or ""
            if gid.startswith(prefix):
                out[gid[len(prefix) :]] = a
    return out


def grid_step(ax, n=121):
    """The spacing of the loss grid (n points across the axes limits)."""
    return max(np.ptp(ax.get_xlim()), np.ptp(ax.get_ylim())) / (n - 1)


def quiver_arrow(q: Quiver):
    return np.asarray(q.get_offsets())[0], np.array([float(q.U[0]), float(q.V[0])])


# ---- paths, start, minimum ------------------------------------------------------------


@pytest.mark.slow
def test_path_vertices_are_the_recorded_params(rotated, rotated_figure):
    fig = rotated_figure
    paths, rests = gid_artists(fig, "path:"), gid_artists(fig, "path-rest:")
    assert sorted(paths) == sorted(CONFIGS) and not rests  # whole, no faded part
    assert not gid_artists(fig, "trail:")
    colors = style.optimizer_colors(rotated)
    for name, rec in rotated.items():
        line = paths[name]
        path = rec.path("w").astype(np.float64)
        # the whole run in the rule's look
        np.testing.assert_array_equal(np.asarray(line.get_xydata()), path)
        assert line.get_color() == colors[name]
    start = gid_artists(fig, "start")[""]
    np.testing.assert_array_equal(start.get_xydata(), [ROTATED.default_start])
    minimum = gid_artists(fig, "minimum")[""]
    np.testing.assert_array_equal(minimum.get_xydata(), ROTATED.minimum)
    ax_path, ax_loss = fig.axes[:2]
    assert ax_path.get_xlabel() == "w[0]" and ax_path.get_ylabel() == "w[1]"
    assert ax_path.get_title() and ax_loss.get_title() and fig.get_suptitle()
    # one legend under the panels names every mark of the paths panel: the runs in their
    # rules' looks, the start, the minimum and the ring; nothing is written on the paths
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        *(rule_name(k) for k in rotated),
        "start",
        "minimum",
        f"after update {fig.axes[0].get_title().split()[1].rstrip(':')}",
        MEAN_LABEL,  # the bars over the shaded k
    ]
    for handle, name in zip(legend.legend_handles, rotated):
        assert handle.get_color() == paths[name].get_color()
        assert handle.get_linestyle() == paths[name].get_linestyle()
    assert not ax_path.texts and ax_path.get_legend() is None and ax_loss.get_legend() is None
    assert not ax_loss.texts  # the legend names the loss lines too
    # no step named: the update where the runs differ most is ringed, and said so
    assert gid_artists(fig, "position:") and "where the runs differ most" in ax_path.get_title()


@pytest.mark.slow
def test_contours_are_the_surface_on_log_levels(rotated_figure):
    fig = rotated_figure
    contour = [c for c in fig.axes[0].collections if hasattr(c, "allsegs") and not c.filled][0]
    levels = np.asarray(contour.levels)
    ratios = levels[1:] / levels[:-1]
    np.testing.assert_allclose(ratios, ratios[0], rtol=1e-9)  # log-spaced
    # marching squares interpolates linearly along grid edges of length h: off by at
    # most (largest curvature) * h^2 / 8
    atol = ROTATED.hessian_eigenvalues.max() * grid_step(fig.axes[0]) ** 2 / 8
    drawn = 0
    for level, segs in zip(levels, contour.allsegs):
        for seg in segs:
            np.testing.assert_allclose(ROTATED.value_np(seg), level, rtol=0, atol=atol)
            drawn += len(seg)
    assert drawn > 100


@pytest.mark.slow
def test_himmelblau_marks_all_four_minima():
    s = surfaces.Himmelblau()
    fig = dtsgd_viz.plot_paths({"nesterov": synthetic(s, 5, 0.01, 0.9, True)}, s)
    marks = gid_artists(fig, "minimum")[""]
    np.testing.assert_allclose(marks.get_xydata(), s.minimum)
    assert marks.get_label() == "minima"


# ---- arrows ----------------------------------------------------------------------------


def rgb(color):
    from matplotlib.colors import to_rgb

    return np.asarray(to_rgb(color))


def assert_tint_of(face, run_color):
    """``face`` is the run's colour mixed with white (neither the colour itself nor black)."""
    face, run = np.asarray(face[:3]), rgb(run_color)
    a = np.dot(face - 1, run - 1) / np.dot(run - 1, run - 1)  # face = 1 + a * (run - 1)
    np.testing.assert_allclose(face, 1 + a * (run - 1), atol=1e-6)
    assert 0.2 < a < 0.8


@pytest.fixture(scope="module")
def arrow_figures(rotated):
    """``plot_paths(rotated, ROTATED, step=update, arrows=True)``, drawn once per update:
    the tests using it only read it."""
    drawn = {}

    def at(update):
        if update not in drawn:
            drawn[update] = dtsgd_viz.plot_paths(rotated, ROTATED, step=update, arrows=True)
        return drawn[update]

    return at


@pytest.fixture(scope="module")
def update_figures(rotated, arrow_figures):
    """``(plot_paths, plot_update)`` of ``rotated`` at an update, drawn once per update
    (each run's arrows are read from the same two figures)."""
    drawn = {}

    def at(update):
        if update not in drawn:
            drawn[update] = (
                arrow_figures(update),
                dtsgd_viz.plot_update(rotated, ROTATED, step=update),
            )  # the same update up close
        return drawn[update]

    return at


@pytest.mark.parametrize("name", sorted(CONFIGS))
@pytest.mark.parametrize("update", [1, 4, -1])
@pytest.mark.slow
def test_arrows_are_the_update_rule_and_sum_to_the_step(rotated, update_figures, name, update):
    rec = rotated[name]
    fig, close = update_figures(update)
    k = update if update > 0 else STEPS + 1 + update  # the update drawn
    i = list(rec.steps).index(k)  # its row in the recording
    path = rec.path("w").astype(np.float64)
    g = rec.global_values("w", "grad")[i].astype(np.float64)
    vel = rec.global_values("w", "velocity").astype(np.float64)
    v_prev = vel[i - 1] if i else np.zeros(2)
    lr, mu = CONFIGS[name]["learning_rate"], CONFIGS[name]["momentum"]
    if mu == 0:
        expected = {"gradient": -lr * g}
        order = ["gradient"]
    elif CONFIGS[name]["nesterov"]:
        expected = {"lookahead": mu * vel[i], "gradient": -lr * g}
        order = ["lookahead", "gradient"]
    else:
        expected = {"momentum": mu * v_prev, "gradient": -lr * g}
        order = ["momentum", "gradient"]
    color = style.optimizer_colors([name])[name]
    # the path panel's arrows and plot_update's thick ones show the same vectors, at their true length
    for prefix, drawn in (("arrow:", fig), ("zoom-arrow:", close)):
        arrows = {
            key.split(":", 1)[1]: q for key, q in gid_artists(drawn, prefix).items() if key.startswith(name + ":")
        }
        assert set(arrows) == set(expected)
        tail, before = path[i], None
        for term in order:
            xy, uv = quiver_arrow(arrows[term])
            assert_tail(xy, tail, before, uv)  # tip to tail (or beside the arrow it turns back along)
            assert getattr(arrows[term], "magnified", 1.0) == 1.0  # both at their true length
            np.testing.assert_allclose(uv, expected[term], rtol=1e-6, atol=1e-9)
            if prefix == "zoom-arrow:":
                ax = arrows[term].axes
                names = [t.get_text() for t in ax.texts if t.get_gid() == f"zoom-label:{name}:{term}"]
                short = upd.TERM_SHORT[term]  # named (unless in an inset), without its length
                assert names in ([], [short], [f"{short} = 0"])
            face = arrows[term].get_facecolor()[0]
            if term == "gradient":
                assert_tint_of(face, color)  # the run's colour, lighter; not black
            else:
                np.testing.assert_allclose(face[:3], rgb(color))
            tail, before = tail + uv, uv
        # the arrows end where the real optimizer went, and where the reference rule goes
        np.testing.assert_allclose(tail, path[i + 1], rtol=1e-5, atol=1e-6)
        p_ref, _ = reference.sgd_step(path[i], g, v_prev, lr, mu, CONFIGS[name]["nesterov"])
        np.testing.assert_allclose(tail, p_ref, rtol=1e-6, atol=1e-7)
    pos = gid_artists(fig, "position:")[name]  # the ring: the parameters after update k, where its arrows end
    np.testing.assert_array_equal(pos.get_xydata()[0], path[i + 1])
    assert fig.axes[0].get_title().startswith(f"Update {k}:")
    assert not gid_artists(fig, "zoom-")  # the paths figure holds one idea: no close-ups
    zoom_ax = gid_artists(close, "zoom-position:")[name].axes
    # the caption says how much closer every panel is than the paths panel (one zoom)
    zoom = upd.zoom_factor((fig.axes[0].get_xlim(), fig.axes[0].get_ylim()), (zoom_ax.get_xlim(), zoom_ax.get_ylim()))
    # one zoom for all, said in the caption as the share of the paths' width each panel spans
    title = zoom_ax.get_title()
    assert title == rule_name(name) and close.get_suptitle().startswith(f"Update {k}:")
    shown = float(close.get_supxlabel().split("spans 1/", 1)[1].split()[0])
    assert shown == pytest.approx(zoom, rel=0.06, abs=0.06)
    # the zoomed panel holds the position and where the update ends
    (x0, x1), (y0, y1) = zoom_ax.get_xlim(), zoom_ax.get_ylim()
    for point in (path[i], path[i + 1]):
        assert x0 < point[0] < x1 and y0 < point[1] < y1
    # tf-keras' Nesterov parameter is the look-ahead point of Sutskever's iterate, so for every
    # rule the gradient of this update was taken at the ring (plot_update marks no other point)
    np.testing.assert_array_equal(gid_artists(close, "zoom-position:")[name].get_xydata()[0], path[i])
    np.testing.assert_allclose(ROTATED.grad_np(path[i]), g, rtol=1e-5, atol=1e-6)
    assert name not in gid_artists(close, "lookahead:") and name not in gid_artists(close, "iterate:")


def test_older_updates_fade_and_runs_stay_apart(rotated):
    fig = draw_paths(rotated, ROTATED, step=6).figure  # the widgets' stepper look
    trails = gid_artists(fig, "trail:")
    for name, rec in rotated.items():
        segs = trails[name].get_segments()
        path = rec.path("w").astype(np.float64)
        assert len(segs) == 6  # the path up to the ring, the point after update 6
        for j, seg in enumerate(segs):
            np.testing.assert_array_equal(seg, path[j : j + 2])
        alpha = trails[name].get_colors()[:, 3]
        assert np.all(np.diff(alpha) > 0) and alpha[-1] == pytest.approx(1.0) and alpha[0] < 0.6
        np.testing.assert_allclose(
            trails[name].get_colors()[:, :3], np.tile(rgb(style.optimizer_colors([name])[name]), (6, 1))
        )
    # every rule's first update is along -g: the paths overlap there, so each rule has
    # its own look (style.RULE_LOOKS), the same in every figure, and the narrower line is
    # drawn over the wider one (plain over momentum over Nesterov): each shows where they coincide
    paths = gid_artists(fig, "path:")
    looks = {
        k: (line.get_color(), str(line._unscaled_dash_pattern), line.get_linewidth(), line.get_marker())
        for k, line in paths.items()
    }
    assert len(set(looks.values())) == len(paths) == 3
    for k, line in paths.items():
        rule = style.RULE_LOOKS[k]
        assert (line.get_color(), line.get_linewidth(), line.get_zorder()) == (rule.color, rule.lw, rule.zorder)
    assert paths["nesterov"].get_linewidth() == max(ln.get_linewidth() for ln in paths.values())
    bottom_up = sorted(paths.values(), key=lambda ln: ln.get_zorder())
    widths = [ln.get_linewidth() for ln in bottom_up]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 3
    assert [t.get_gid() for t in sorted(trails.values(), key=lambda t: t.get_zorder())] == [
        f"trail:{ln.get_gid()[len('path:') :]}" for ln in bottom_up
    ]
    # pale contours, so the paths stand out
    filled = [c for c in fig.axes[0].collections if getattr(c, "filled", False)]
    assert filled and all(c.get_alpha() <= 0.4 for c in filled)
    assert geo.fade_alphas(4, half_life=1.0, floor=0.0).tolist() == [0.125, 0.25, 0.5, 1.0]


@pytest.mark.slow
def test_without_the_update_before_or_the_kinds_the_update_is_marked_without_arrows_and_a_note():
    # as PathExplorer: draw what the recording allows instead of an error on a default call
    s = ROTATED
    every2 = synthetic(s, 6, 0.05, 0.9, every=2)
    with pytest.raises(ValueError, match=r"update 3, just before update 4, is not recorded \(every 2\).*arrows=False"):
        decompose_update(every2, "w", 1)
    with pytest.raises(
        ValueError, match=r"step=3 was not recorded\. Allowed: a recorded update \(updates 2, 4, 6\), -1\.\.-3"
    ):
        dtsgd_viz.plot_paths({"m": every2}, s, step=3)
    for arrows in (True, False):
        fig = dtsgd_viz.plot_paths({"m": every2}, s, step=4, arrows=arrows)
        np.testing.assert_array_equal(
            gid_artists(fig, "position:")["m"].get_xydata()[0], every2.path("w")[2]
        )  # the parameters after update 4
        assert not gid_artists(fig, "arrow:") and "m" in gid_artists(fig, "position:")
        assert note_text(fig) == (
            None
            if not arrows
            else "no update arrows: update 3, just before update 4, is not recorded "
            "(every 2); record every update to see them"
        )
    view = draw_paths({"m": every2}, s, step=2)
    assert view.arrows is False and "update 1, just before update 2" in view.artists.note.get_text()
    params_only = synthetic(s, 4, 0.05, 0.9, kinds=("param",))
    fig = dtsgd_viz.plot_paths({"m": params_only}, s, step=1)
    assert not gid_artists(fig, "arrow:")
    assert note_text(fig) == "no update arrows: kinds grad, velocity not recorded"
    assert note_text(dtsgd_viz.plot_paths({"m": synthetic(s, 4, 0.05, 0.9)}, s, step=2)) is None


@pytest.mark.parametrize("step", [2.0, "3", True, np.float64(3.0)])
def test_steps_that_are_not_ints_are_refused_naming_what_was_received(rotated, step):
    match = (
        r"step must be an int: an update number as recording\.steps counts them \(the first update is "
        r"1\) or a negative count back from the last\. Received: step=.* \(\w+\)\. Allowed: a recorded "
        r"update \(updates 1\.\.8\), -1\.\.-8 counting back"
    )
    with pytest.raises(ValueError, match=match):
        dtsgd_viz.plot_paths(rotated, ROTATED, step=step)
    with pytest.raises(ValueError, match=match):
        draw_paths(rotated, ROTATED, step=step)
    with pytest.raises(ValueError, match=r"frames=\[.*\]: step must be an int.*Received: step="):
        dtsgd_viz.animate(rotated, ROTATED, frames=[1, step])


@pytest.mark.parametrize(
    "frames, match",
    [
        (
            [None],
            r"frames lists update numbers .*None is not one\. Received: frames=\[None\]\. Allowed: updates 1\.\.8",
        ),
        ([2, None], r"None is not one\. Received: frames=\[2, None\]"),
        (2.5, r"frames must be None \(every update\), an int >= 1 .*Received: frames=2\.5"),
    ],
)
def test_animation_frames_that_are_not_updates_are_a_clear_error(rotated, frames, match):
    with pytest.raises(ValueError, match=match):
        dtsgd_viz.animate(rotated, ROTATED, frames=frames)


# ---- loss panel -------------------------------------------------------------------------


@pytest.mark.parametrize("update, index", [(3, 2), (-1, -1)])
@pytest.mark.slow
def test_loss_panel_is_the_loss_after_k_updates(rotated, arrow_figures, update, index):
    fig = arrow_figures(update)
    ax_loss = fig.axes[1]
    assert ax_loss.get_yscale() == "log"
    assert (ax_loss.get_xlabel(), ax_loss.get_ylabel()) == ("updates made (k)", "loss after k updates")
    lines = gid_artists(fig, "loss:")
    markers = gid_artists(fig, "loss-marker:")
    for name, rec in rotated.items():
        after = ROTATED.value_np(rec.path("w").astype(np.float64))  # after k = 0..N updates
        np.testing.assert_array_equal(lines[name].get_xdata(), np.arange(len(rec) + 1))
        np.testing.assert_allclose(lines[name].get_ydata(), after, rtol=1e-12)
        # the recorded loss of update k is what its forward pass saw: after k - 1 updates
        np.testing.assert_allclose(lines[name].get_ydata()[:-1], rec.loss, rtol=1e-5)
        k = int(rec.steps[index])  # the ring: the parameters after the update, after k updates
        np.testing.assert_allclose(markers[name].get_xydata()[0], [k, after[k]], rtol=1e-12)
        assert lines[name].get_color() == gid_artists(fig, "path:")[name].get_color()
    step_line = gid_artists(fig, "step-line")[""]
    assert step_line.get_xdata()[0] == rotated["plain"].steps[index]


# ---- projection of many parameters -------------------------------------------------------


def test_pca_reconstructs_planar_paths_exactly():
    rng = np.random.default_rng(0)
    two_d = rng.normal(size=(7, 2))
    plane = geo.pca_plane([two_d])
    np.testing.assert_allclose(geo.lift(geo.project(two_d, plane), plane), two_d, atol=1e-12)
    np.testing.assert_allclose(plane.basis @ plane.basis.T, np.eye(2), atol=1e-12)
    # points of a known plane in 6-D, stretched along its first direction
    basis = np.linalg.qr(rng.normal(size=(6, 2)))[0].T
    coeff = rng.normal(size=(20, 2)) * [5.0, 1.0]
    pts = 3.0 + coeff @ basis
    plane = geo.pca_plane([pts[:12], pts[12:]])
    np.testing.assert_allclose(geo.lift(geo.project(pts, plane), plane), pts, atol=1e-12)
    assert abs(abs(plane.basis[0] @ basis[0]) - 1) < 0.05  # the long direction comes first
    assert sum(plane.explained) == pytest.approx(1.0)
    assert plane.explained[0] > plane.explained[1]


@pytest.mark.slow
def test_projected_paths_on_real_contours(planar):
    fig = dtsgd_viz.plot_paths(planar, PLANAR, step=3, arrows=True)  # the arrows even where short
    flat = {k: r.path("w").astype(np.float64).reshape(STEPS + 1, -1) for k, r in planar.items()}
    plane = geo.pca_plane(list(flat.values()))
    drawn = gid_artists(fig, "path:")  # the whole run in the rule's look
    everything = np.concatenate(list(flat.values()))
    for name, rec in planar.items():
        xy = np.asarray(drawn[name].get_xydata())
        np.testing.assert_allclose(xy, geo.project(flat[name], plane), rtol=1e-12, atol=1e-12)
        # the paths lie in the plane: lifting the drawn points gives the recorded params back
        np.testing.assert_allclose(geo.lift(xy, plane), flat[name], atol=1e-5)
        # ... so the loss of the plane under each drawn point is the recorded loss
        on_plane = PLANAR.value_np(geo.lift(xy, plane).reshape(-1, *PLANAR.shape))
        np.testing.assert_allclose(on_plane[:-1], rec.loss, rtol=1e-5)
    # distances between drawn points equal distances between the recorded parameters
    xy_all = np.concatenate([np.asarray(drawn[k].get_xydata()) for k in planar])
    d_drawn = np.linalg.norm(xy_all[:, None] - xy_all[None], axis=-1)
    d_true = np.linalg.norm(everything[:, None] - everything[None], axis=-1)
    np.testing.assert_allclose(d_drawn, d_true, atol=1e-5)
    # the contour lines drawn are level sets of the surface on that plane
    contour = [c for c in fig.axes[0].collections if hasattr(c, "allsegs") and not c.filled][0]
    atol = PLANAR.hessian_eigenvalues.max() * grid_step(fig.axes[0]) ** 2 / 8
    for level, segs in zip(contour.levels, contour.allsegs):
        for seg in segs:
            np.testing.assert_allclose(
                PLANAR.value_np(geo.lift(seg, plane).reshape(-1, *PLANAR.shape)), level, rtol=0, atol=atol
            )
    # arrows: projected terms still add up to the projected step
    for name in planar:
        arrows = [q for k, q in gid_artists(fig, "arrow:").items() if k.startswith(name + ":")]
        total = sum(quiver_arrow(q)[1] for q in arrows)
        xy = np.asarray(drawn[name].get_xydata())
        np.testing.assert_allclose(total, xy[3] - xy[2], rtol=1e-5, atol=1e-6)
    assert "principal direction 1" in fig.axes[0].get_xlabel()
    star = gid_artists(fig, "minimum")[""]
    assert star.get_label() in ("minimum", "minimum (projected)")
    # a projected minimum is an open star (the plane's contours do not reach its loss)
    assert (star.get_markerfacecolor() == "none") == star.get_label().endswith("(projected)")
    # a plane shows distances and angles as they are: one data unit as many pixels on both axes
    fig.draw_without_rendering()
    ax = fig.axes[0]
    px = ax.transData.transform([[0.0, 0.0], [1.0, 1.0]])
    assert px[1, 0] - px[0, 0] == pytest.approx(px[1, 1] - px[0, 1], rel=1e-6)


# ---- bad input -------------------------------------------------------------------------


@pytest.mark.slow
def test_bad_input_is_a_clear_error(rotated, planar):
    with pytest.raises(ValueError, match=r"Unknown variable 'v'. Every recording has: \['w'\]"):
        dtsgd_viz.plot_paths(rotated, ROTATED, name="v")
    allowed = r"Allowed: a recorded update \(updates 1\.\.8\), -1\.\.-8 counting back from the last, or None"
    with pytest.raises(ValueError, match=r"step=9 is out of range\. " + allowed):
        dtsgd_viz.plot_paths(rotated, ROTATED, step=STEPS + 1)
    with pytest.raises(ValueError, match=r"step=-9 is out of range: the recordings share 8 updates"):
        dtsgd_viz.plot_paths(rotated, ROTATED, step=-STEPS - 1)
    with pytest.raises(
        ValueError,
        match=r"step=0 is the start, before any update: the start point is always drawn "
        r"\(updates are numbered from 1",
    ):
        dtsgd_viz.plot_paths(rotated, ROTATED, step=0)
    with pytest.raises(ValueError, match=r"step must be an int: an update number .*Received: step=1\.5"):
        dtsgd_viz.plot_paths(rotated, ROTATED, step=1.5)
    with pytest.raises(ValueError, match=r"hold must be an integer >= 0"):
        dtsgd_viz.animate(rotated, ROTATED, hold=-1)
    with pytest.raises(ValueError, match=r"surface takes parameters of shape \(2,\).*has shape \(2, 4\)"):
        dtsgd_viz.plot_paths(planar, ROTATED)
    with pytest.raises(ValueError, match=r"shape \(2, 4\) \(8 numbers\).*has shape \(2,\)"):
        dtsgd_viz.plot_paths(rotated, PLANAR)
    with pytest.raises(ValueError, match="non-empty dict"):
        dtsgd_viz.plot_paths({}, ROTATED)
    empty = synthetic(ROTATED, 0, 0.1)
    with pytest.raises(ValueError, match="Recording 'e' has no steps"):
        dtsgd_viz.plot_paths({"e": empty}, ROTATED)
    with pytest.raises(ValueError, match="Recording 'e' has no steps"):
        dtsgd_viz.animate({"e": empty}, ROTATED)
    with pytest.raises(ValueError, match="frames must be >= 1"):
        dtsgd_viz.animate(rotated, ROTATED, frames=0)


def test_one_recording_and_one_axes(rotated):
    from matplotlib.figure import Figure

    fig = Figure()
    ax = fig.subplots()
    out = dtsgd_viz.plot_paths(rotated["nesterov"], ROTATED, step=1, ax=ax)
    assert out is fig
    assert not gid_artists(fig, "path-rest:")
    np.testing.assert_array_equal(gid_artists(fig, "path:")["recording"].get_xydata(), rotated["nesterov"].path("w"))
    # someone else's axes: a legend of the runs; no thin line after the update to explain
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["recording", "start", "minimum", "after update 1"]
    assert not gid_artists(fig, "loss:")


# ---- animation ---------------------------------------------------------------------------


@pytest.mark.slow
def test_animation_updates_artists_in_place_and_saves_a_gif(rotated, tmp_path):
    updates, hold = [2, 5, 7], 3
    anim = dtsgd_viz.animate(rotated, ROTATED, frames=updates, interval=50, hold=hold)
    assert isinstance(anim, animation.FuncAnimation)
    assert anim.frame_updates == updates + [7] * hold  # the last frame is held
    fig = anim._fig
    paths, arrows = gid_artists(fig, "path:"), gid_artists(fig, "arrow:")
    markers, losses = gid_artists(fig, "loss-marker:"), gid_artists(fig, "loss:")
    positions = gid_artists(fig, "position:")
    ax_loss = losses["plain"].axes
    from dtsgd_viz.views.core.figure import headline_texts

    limits = None
    seen = []

    def check(k, total):
        nonlocal limits
        u = anim.frame_updates[k]
        i = u - 1  # its row in the recording; the ring is the parameters after it, path point u
        assert gid_artists(fig, "path:") == paths  # the same artists, updated in place
        for name, rec in rotated.items():
            path = rec.path("w")
            np.testing.assert_array_equal(paths[name].get_xydata(), path[: i + 2])
            tip = path[i].astype(np.float64)
            for term, _ in upd.decompose_update(rec, "w", i).terms:
                xy, uv = quiver_arrow(arrows[f"{name}:{term}"])
                np.testing.assert_allclose(xy, tip, atol=1e-12)
                tip = tip + uv
            np.testing.assert_allclose(tip, path[i + 1], rtol=1e-5, atol=1e-6)
            after = ROTATED.value_np(path.astype(np.float64))  # the loss after k = 0..N updates
            np.testing.assert_array_equal(positions[name].get_xydata()[0], path[u])
            np.testing.assert_allclose(markers[name].get_xydata()[0], [u, after[u]], rtol=1e-12)
            # the loss curve is drawn up to the update shown: to the loss after it
            np.testing.assert_array_equal(losses[name].get_xdata(), np.arange(u + 1))
            np.testing.assert_allclose(losses[name].get_ydata(), after[: u + 1], rtol=1e-12)
        assert fig.axes[0].get_title().startswith(f"Update {u}")
        # the headline is the frame's own: findings up to the update shown
        assert (
            headline_texts(fig)[0].replace("\n", " ").strip() == dtsgd_viz.findings(rotated, ROTATED, upto=u).headline()
        )
        # the loss axes keep the whole run's limits while the curves grow
        lim = (ax_loss.get_xlim(), ax_loss.get_ylim())
        assert limits in (None, lim)
        limits = lim
        assert lim[0][1] >= STEPS
        seen.append(u)

    out = tmp_path / "paths.gif"
    anim.save(out, writer="pillow", fps=5, dpi=40, progress_callback=check)
    assert seen == updates + [7] * hold
    from PIL import Image

    with Image.open(out) as im:
        durations = []
        for n in range(im.n_frames):
            im.seek(n)
            durations.append(im.info["duration"])
    # identical frames are merged by the GIF writer: the last one lasts 1 + hold frames
    assert durations == [200, 200, 200 * (1 + hold)]


@pytest.mark.slow
def test_animation_pace_and_frames_by_update(rotated):
    anim = dtsgd_viz.animate(rotated, ROTATED, frames=4)
    assert anim._interval >= 200  # at most 5 updates a second
    assert anim.frame_updates[-8:] == [STEPS] * 8  # held about two seconds
    assert anim.frame_updates[0] == 1
    with pytest.raises(ValueError, match=r"step=0 is the start"):
        dtsgd_viz.animate(rotated, ROTATED, frames=[0, 3])
    anim._draw_was_started = True  # never saved here: keep matplotlib's deletion warning quiet


@pytest.mark.skipif(not animation.writers.is_available("ffmpeg"), reason="ffmpeg not installed")
@pytest.mark.slow
def test_animation_saves_mp4(rotated, tmp_path):
    # two frames without close-ups: the writer is checked here (the gif test saves the close-ups)
    anim = dtsgd_viz.animate(rotated, ROTATED, frames=[1, 2], hold=0, zoom=False)
    out = tmp_path / "paths.mp4"
    anim.save(out, writer="ffmpeg", fps=2, dpi=40)
    assert out.stat().st_size > 0


def test_plot_paths_draws_no_close_ups_and_names_plot_update_for_them(rotated):
    with pytest.raises(ValueError, match=r"plot_update\(recordings, surface, step=k\).*Received: zoom=True"):
        dtsgd_viz.plot_paths(rotated, ROTATED, step=4, zoom=True)


@pytest.mark.slow
def test_one_update_has_integer_update_ticks():
    one = {"nesterov": synthetic(ROTATED, 1, 0.05, 0.9, nesterov=True)}
    fig = dtsgd_viz.plot_paths(one, ROTATED, step=1)
    fig.draw_without_rendering()
    ax_loss = [ax for ax in fig.axes if ax.get_title().startswith("Loss after k updates")][0]
    lo, hi = ax_loss.get_xlim()
    ticks = [t for t in ax_loss.get_xticks() if lo <= t <= hi]
    assert ticks == [0.0, 1.0]  # the loss after 0 and 1 updates


# ---- diverging runs and short runs ------------------------------------------------------


def test_a_diverged_path_ends_where_it_left_the_view_and_the_paths_say_when():
    ok = synthetic(ROTATED, 40, 0.05, 0.5)
    bad = synthetic(ROTATED, 40, 0.5, 0.9)  # lr * h = 5: leaves the view and overflows
    fig = draw_paths({"ok": ok, "bad": bad}, ROTATED).figure
    ax_path = fig.axes[0]
    ax_loss = [a for a in fig.axes if a.get_title().startswith("Loss after k updates")][0]
    box = np.array(ROTATED.view_box)
    path = bad.path("w").astype(np.float64)
    with np.errstate(invalid="ignore"):
        outside = ~np.all(np.isfinite(path) & (path >= box[:, 0]) & (path <= box[:, 1]), axis=1)
    k = int(np.argmax(outside))
    assert k > 0
    lines = gid_artists(fig, "path:")
    # up to and including the first point outside (the axes clip it), not the runaway
    np.testing.assert_array_equal(lines["bad"].get_xydata(), path[: k + 1])
    np.testing.assert_array_equal(lines["ok"].get_xydata(), ok.path("w").astype(np.float64))
    assert (ax_path.get_xlim(), ax_path.get_ylim()) == ROTATED.view_box  # not stretched
    note = [t.get_text() for t in ax_path.texts if t.get_gid() == "diverged-note"]
    assert len(note) == 1 and f"bad: diverged at update {k}" in note[0] and "ok:" not in note[0]
    # the loss panel: an x at the last finite loss (the note on the paths says when)
    with np.errstate(invalid="ignore", over="ignore"):
        loss = ROTATED.value_np(path)  # the loss after k = 0..N updates
        last = np.flatnonzero(np.isfinite(loss) & (loss > 0))[-1]
    x = gid_artists(fig, "loss-diverged:")
    assert set(x) == {"bad"} and x["bad"].get_marker() == "x"
    np.testing.assert_array_equal(x["bad"].get_xydata(), [[last, loss[last]]])
    assert not [t for t in ax_loss.texts if "diverged" in t.get_text()]  # said once, on the paths
    assert geo.divergence_update(path, ROTATED.view_box) == k


def test_loss_lines_of_one_update_have_markers(rotated):
    one = {k: synthetic(ROTATED, 1, 0.05, 0.9) for k in ("a", "b")}
    lines = gid_artists(draw_paths(one, ROTATED).figure, "loss:")
    assert all(
        len(ln.get_xydata()) == 2 and ln.get_marker() not in ("", "None", None)  # k = 0, 1
        for ln in lines.values()
    )
    long = gid_artists(draw_paths(rotated, ROTATED).figure, "loss:")
    assert all(ln.get_marker() in ("", "None") for ln in long.values())


# ---- the update taken apart when none is named --------------------------------------


def furthest_apart(paths):
    """numpy, from the recorded paths: the recording index of the update after which two
    runs' parameters are furthest apart."""
    p = np.stack([np.asarray(x, np.float64) for x in paths])  # (runs, n + 1, dim)
    d = np.linalg.norm(p[:, None, 1:] - p[None, :, 1:], axis=-1)  # (runs, runs, n)
    return int(np.argmax(d.max(axis=(0, 1))))


@pytest.mark.slow
def test_without_a_step_plot_paths_takes_apart_the_update_where_the_runs_differ_most(rotated, planar, arrow_figures):
    for recs, surface in ((rotated, ROTATED), (planar, PLANAR)):
        # the story compares the rules with momentum: plain SGD counts when fewer have it
        story = [r for r in recs.values() if r.hyperparameters.momentum]
        i = furthest_apart([r.path("w").reshape(len(r) + 1, -1) for r in story])
        k = int(next(iter(recs.values())).steps[i])
        fig = dtsgd_viz.plot_paths(recs, surface, arrows=True)
        assert fig.axes[0].get_title() == f"Update {k}: where the runs differ most"
        plane = draw_paths(recs, surface).scene.plane
        for name, rec in recs.items():  # the ring is the parameters after update k (furthest apart)
            np.testing.assert_allclose(
                gid_artists(fig, "position:")[name].get_xydata()[0],
                geo.project(rec.path("w").reshape(len(rec) + 1, -1)[i + 1], plane),
                atol=1e-9,
            )
        assert gid_artists(fig, "arrow:") and not gid_artists(fig, "zoom-arrow:")
        # plot_update picks the same update, and its subtitle says why
        from dtsgd_viz.views.core.figure import headline_texts

        finding, settings = headline_texts(dtsgd_viz.plot_update(recs, surface))
        assert finding.startswith((f"Update {k}:", f"Update {k}, in all "))  # measured in all parameters, said first
        assert " ".join(settings.split()).endswith("the update where the runs differ most")
    # one run: its longest update
    one = {"nesterov": rotated["nesterov"]}
    path = rotated["nesterov"].path("w").astype(np.float64)
    k = int(np.argmax(np.linalg.norm(np.diff(path, axis=0), axis=1))) + 1
    assert dtsgd_viz.plot_paths(one, ROTATED, arrows=True).axes[0].get_title().startswith(f"Update {k}:")
    # a named step is drawn as named, and the title does not claim it was picked
    title = arrow_figures(2).axes[0].get_title()
    assert title.startswith("Update 2: ") and "terms as arrows" in title and "differ most" not in title


@pytest.mark.slow
def test_run_distances_and_the_pick_skip_what_cannot_be_drawn():
    a = np.array([[0.0, 0.0], [1.0, 0.0], [9.0, 0.0], [np.nan, 0.0]])
    b = np.zeros((4, 2))
    np.testing.assert_array_equal(geo.run_distances([a, b])[:2], [1.0, 9.0])
    assert np.isnan(geo.run_distances([a, b])[2])  # not finite: never picked
    assert geo.most_different_index([a, b]) == 1
    assert geo.most_different_index([a, b], allowed=[True, False, True]) == 0
    assert geo.most_different_index([a, b], allowed=[False, False, True]) is None
    # a recording of every other update: arrows nowhere, the pick still names an update
    every2 = synthetic(ROTATED, 6, 0.05, 0.9, every=2)
    fig = dtsgd_viz.plot_paths({"m": every2, "n": synthetic(ROTATED, 6, 0.05, 0.9, True, every=2)}, ROTATED)
    assert int(fig.axes[0].get_title().split()[1].rstrip(":")) in set(every2.steps)


# ---- the update shown: before it the rule's look, after it a thin line ------------------

CONDITIONED = surfaces.RotatedQuadratic(condition=20)


@pytest.fixture(scope="module")
def long_runs():
    return {
        "plain": synthetic(CONDITIONED, 60, 0.05),
        "momentum": synthetic(CONDITIONED, 60, 0.05, 0.9),
        "nesterov": synthetic(CONDITIONED, 60, 0.05, 0.9, True),
    }


@pytest.fixture(scope="module")
def long_update_5(long_runs):
    """``plot_paths(long_runs, CONDITIONED, step=5)``, drawn once: the tests using it only read it."""
    return dtsgd_viz.plot_paths(long_runs, CONDITIONED, step=5)


@pytest.mark.slow
def test_after_the_update_shown_each_path_is_a_thin_light_line_without_markers(long_runs):
    from matplotlib.colors import to_rgb

    fig = draw_paths(long_runs, CONDITIONED, step=5).figure  # the widgets' stepper look
    paths, rests = gid_artists(fig, "path:"), gid_artists(fig, "path-rest:")
    lowest_path = min(line.get_zorder() for line in paths.values())
    for name, rec in long_runs.items():
        path, rest, rule = paths[name], rests[name], style.RULE_LOOKS[name]
        whole = rec.path("w").astype(np.float64)
        np.testing.assert_array_equal(path.get_xydata(), whole[: 5 + 1])  # the start, updates 1..5
        np.testing.assert_array_equal(rest.get_xydata(), whole)
        # no mark per update: the ring marks the update shown, the line the path
        assert path.get_marker() in ("", "None")
        assert path.get_linewidth() == rule.lw
        assert rest.get_marker() in ("", "None") and rest.get_linewidth() < path.get_linewidth()
        assert rest.get_zorder() < lowest_path  # under every run's path
        # lighter, opaque: the run's colour mixed towards white, no alpha to mix colours
        assert rest.get_alpha() in (None, 1.0) and path.get_alpha() in (None, 1.0)
        assert sum(to_rgb(rest.get_color())) > sum(to_rgb(path.get_color()))
    # each run's trail lies on its own path, under every narrower run's path
    trails = gid_artists(fig, "trail:")
    assert trails["nesterov"].get_zorder() < paths["momentum"].get_zorder() < paths["plain"].get_zorder()
    assert trails["momentum"].get_zorder() < paths["plain"].get_zorder()
    # the legend names the ring: the parameters after the update shown
    assert [t.get_text() for t in fig.legends[0].get_texts()][-2:] == ["after update 5", MEAN_LABEL]
    # past the update the runs stay apart: each rest keeps its rule's dash
    for name, rest in rests.items():
        assert rest.get_linestyle() == paths[name].get_linestyle()
    assert rests["momentum"].get_linestyle() != rests["nesterov"].get_linestyle()


@pytest.mark.slow
def test_the_gif_names_its_marks_in_a_legend_and_its_window_follows_the_frame(long_runs):
    anim = dtsgd_viz.animate(long_runs, CONDITIONED, frames=[5, 30, 60], zoom=False, hold=0)
    fig = anim._fig
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == [*(rule_name(k) for k in long_runs), "start", "minimum", "after the update", MEAN_LABEL]
    assert not fig.axes[0].texts  # nothing written on the paths
    ax_loss = fig.axes[1]
    for u in (5, 30, 60):
        anim._func(list(long_runs["plain"].steps).index(u))
        found = dtsgd_viz.findings(long_runs, CONDITIONED, upto=u)
        (band,) = [p for p in ax_loss.patches if p.get_gid() == "loss-window"]
        a, b = found.window
        x = np.array([band.get_x(), band.get_x() + band.get_width()])
        half = 0.5 if a == b else 0.0
        assert (x.min(), x.max()) == pytest.approx((a - half, b + half))
        for key, mean in found.tail_loss.items():
            (line,) = [ln for ln in ax_loss.lines if ln.get_gid() == f"loss-mean:{key}"]
            np.testing.assert_allclose(line.get_ydata(), [mean, mean], rtol=1e-12)
    anim._draw_was_started = True


@pytest.mark.slow
def test_the_gif_star_is_the_stills_yellow(long_runs, tmp_path):
    from matplotlib.colors import to_rgb
    from PIL import Image

    # update 10: no ring on the star yet (late on the rings there are open, over it)
    anim = dtsgd_viz.animate(long_runs, CONDITIONED, frames=[10], zoom=False, hold=0)
    (star,) = [a for a in anim._fig.axes[0].lines if a.get_gid() == "minimum"]
    look = style.ROLE_LOOKS["minimum"]
    assert (to_rgb(star.get_markerfacecolor()), star.get_marker()) == (to_rgb(style.MINIMUM_FACE), look.marker)
    assert star.get_zorder() > style.ROLE_LOOKS["current"].zorder  # opaque, over the rings (each in a white halo)
    out = tmp_path / "paths.gif"
    anim.save(out, writer="pillow", dpi=60)
    with Image.open(out) as im:  # Pillow's adaptive palette would merge it into the orange
        pixels = np.asarray(im.convert("RGB")).reshape(-1, 3).astype(int)
    yellow = np.round(np.array(to_rgb(style.MINIMUM_FACE)) * 255)
    assert (np.abs(pixels - yellow).sum(axis=1) < 6).sum() >= 10


@pytest.mark.slow
def test_a_title_is_a_sentence_even_when_it_starts_with_a_config_name(long_runs, long_update_5):
    from dtsgd_viz.views.core.figure import headline_texts

    finding, _ = headline_texts(long_update_5)
    assert finding.startswith("Lowest mean loss over k") and finding.split(": ", 1)[1].startswith("Nesterov, ")
    one = draw_paths({"nesterov": long_runs["nesterov"]}, CONDITIONED).figure
    assert headline_texts(one)[0].startswith("Mean loss over k") and ": Nesterov at " in headline_texts(one)[0]


def test_the_legend_shows_two_whole_dashes_and_names_the_white_outlined_mean_bars(rotated):
    """Momentum's handle is long enough for two whole dashes of its pattern (matplotlib
    scales a dash by the line's width); the mean bars over the shaded k are outlined in
    white, each in its run's colour, and the legend's entry shows them so: one short bar
    per run, in the colour, width and outline it is drawn in."""
    from matplotlib.colors import to_rgba

    fig = dtsgd_viz.plot_paths(rotated, ROTATED, step=3)
    (legend,) = fig.legends
    texts = [t.get_text() for t in legend.get_texts()]
    look = style.RULE_LOOKS["momentum"]
    on, off = look.ls[1]
    handle_pt = legend.handlelength * legend.prop.get_size_in_points()
    assert handle_pt >= (2 * on + off) * look.lw
    assert texts[-1] == MEAN_LABEL == "mean over the shaded k"
    found = dtsgd_viz.findings(rotated, ROTATED)
    bars = gid_artists(fig, "loss-mean:")
    assert set(bars) == set(found.ranking)
    for key, bar in bars.items():
        np.testing.assert_allclose(bar.get_ydata(), [found.tail_loss[key]] * 2, rtol=1e-12)
        assert bar.get_color() == style.RULE_LOOKS[key].color and bar.get_path_effects()
    # the entry's bars: the last handle box of the legend holds one per drawn bar, as drawn
    entry = legend.get_children()[0].get_children()[1].get_children()[-1].get_children()[-1].get_children()[0]
    shown = [a for a in entry.get_children() if a.get_linewidth() == bars[found.ranking[0]].get_linewidth()]
    assert sorted(to_rgba(a.get_color()) for a in shown) == sorted(to_rgba(b.get_color()) for b in bars.values())
    assert all(a.get_path_effects() for a in shown)


# ---- names on the paths, updates too short to see, the star over the paths ------------


@pytest.mark.slow
def test_the_runs_are_named_once_in_the_legend(long_runs, long_update_5):
    fig = long_update_5
    assert not fig.axes[0].texts  # no name placed on the data
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()][: len(long_runs)] == [rule_name(k) for k in long_runs]
    for handle, key in zip(legend.legend_handles, long_runs):
        assert handle.get_color() == style.RULE_LOOKS[key].color
    assert not fig.axes[1].texts  # nor on the loss panel: the legend names its lines too
    from dtsgd_viz.views.text.clashes import clashes

    fig.draw_without_rendering()
    for ax in fig.axes:
        assert clashes(ax, fig.canvas.get_renderer()) == []


@pytest.mark.slow
def test_arrows_are_drawn_by_default_only_where_every_runs_are_long_enough_to_see(long_runs, long_update_5):
    from dtsgd_viz.views.paths.scene import MIN_ARROW_FRAC

    ax = long_update_5.axes[0]
    span = max(np.ptp(ax.get_xlim()), np.ptp(ax.get_ylim()))

    def too_short(update):  # numpy, from the recorded gradients and velocities
        out = set()
        for key, rec in long_runs.items():
            i = list(rec.steps).index(update)
            g = rec.global_values("w", "grad")[i].astype(np.float64)
            v = rec.global_values("w", "velocity").astype(np.float64)
            hp = rec.hyperparameters
            mu, lr = float(hp.momentum), float(hp.learning_rate[i])
            first = mu * (v[i] if hp.nesterov else (v[i - 1] if i else 0 * v[i]))
            lengths = [x for x in (np.linalg.norm(first), np.linalg.norm(lr * g)) if x > 0]
            if min(lengths) < MIN_ARROW_FRAC * span:  # an arrow too short to see: none drawn by default
                out.add(key)
        return out

    assert too_short(5)  # some run's update 5 is a speck on the paths panel: no arrows by default
    fig = long_update_5
    assert not gid_artists(fig, "arrow:")
    assert fig.axes[0].get_title() == "Update 5 marked"
    for key, ring in gid_artists(fig, "position:").items():  # each run's update ringed, paths whole
        i = geo.step_index(long_runs[key].steps, 5)
        np.testing.assert_array_equal(ring.get_xydata()[0], long_runs[key].path("w")[i + 1])
        assert len(gid_artists(fig, "path:")[key].get_xydata()) == len(long_runs[key].path("w"))
    # asked for, they are drawn; with every arrow long enough the default draws them too
    shown = dtsgd_viz.plot_paths(long_runs, CONDITIONED, step=5, arrows=True)
    assert {k.split(":")[0] for k in gid_artists(shown, "arrow:")} == set(long_runs)
    assert not too_short(1)
    fig = dtsgd_viz.plot_paths(long_runs, CONDITIONED, step=1)
    assert fig.axes[0].get_title() == "Update 1: its terms as arrows" and gid_artists(fig, "arrow:")


@pytest.mark.slow
def test_the_star_is_over_every_path_and_ring(long_runs):
    from matplotlib.colors import to_rgba

    fig = dtsgd_viz.plot_paths(long_runs, CONDITIONED, step=20)
    ax = fig.axes[0]
    star = gid_artists(fig, "minimum")[""]
    kind = lambda a: (a.get_gid() or "").split(":")[0]  # noqa: E731
    paths = [a for a in [*ax.lines, *ax.collections] if kind(a) in ("path", "path-rest", "path-casing", "trail")]
    rings = [a for a in ax.lines if kind(a) == "position"]
    assert paths and star.get_zorder() > max(a.get_zorder() for a in paths)
    assert rings and star.get_zorder() > max(a.get_zorder() for a in rings)  # a ring on it shows round it, in a halo
    assert all(a.get_path_effects() for a in rings)
    assert to_rgba(star.get_markerfacecolor()) == to_rgba(style.MINIMUM_FACE)  # opaque: the GIF's yellow too


@pytest.mark.slow
def test_the_still_rings_are_open_so_the_star_and_paths_show_through(long_runs):
    fig = dtsgd_viz.plot_paths(long_runs, CONDITIONED, step=58)  # Nesterov's ring on the star
    assert {r.get_markerfacecolor() for r in gid_artists(fig, "position:").values()} == {"none"}


def test_a_loss_axis_under_a_decade_and_a_half_has_plain_tick_labels():
    from matplotlib.figure import Figure

    from dtsgd_viz.views.paths.loss import plain_log_ticks

    ax = Figure().subplots()
    ax.plot([1, 60], [0.18, 0.52])
    ax.set_yscale("log")
    plain_log_ticks(ax)
    lo, hi = ax.get_ylim()
    labels = [ax.yaxis.get_major_formatter()(v) for v in ax.get_yticks() if lo <= v <= hi]
    assert labels == ["0.2", "0.3", "0.4", "0.5"]


@pytest.mark.slow
def test_level_ends_are_titled_by_where_the_runs_differ(rotated):
    from dtsgd_viz.views.paths.findings import findings_of
    from dtsgd_viz.views.paths.scene import build_scene, default_update

    scene = build_scene(rotated, ROTATED, None)
    fig = dtsgd_viz.plot_paths(rotated, ROTATED, step=2)
    fig.draw_without_rendering()
    ax = fig.axes[1]
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    steps = np.diff(ticks)
    assert len(set(steps)) == 1 and steps[0] in (1, 2, 5, 10, 20)  # round tick steps
    text = findings_of(scene).headline()
    if text.startswith("Paths furthest apart"):
        assert f"update {default_update(scene)}" in text


@pytest.mark.slow
def test_loss_axis_ends_at_the_data(rotated):
    fig = dtsgd_viz.plot_paths(rotated, ROTATED, step=3)
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    ax = fig.axes[1]
    x0, x1 = ax.get_xlim()
    last = max(rec.steps[-1] for rec in rotated.values())
    assert last <= x1 <= last + 0.03 * (x1 - x0)  # no empty range past the data
    assert ax.get_window_extent(r).x1 <= fig.bbox.x1  # inside the figure


@pytest.mark.slow
def test_every_runs_loss_ring_is_its_path_ring_and_the_legend_names_it(rotated):
    from dtsgd_viz.views.paths.loss import DOT_SIZE

    # after update 1 plain and momentum of one learning rate are at one point (both took
    # -lr*g), Nesterov apart (it took (1 + mu) times that)
    same = {
        "plain": synthetic(ROTATED, 4, 0.05),
        "momentum": synthetic(ROTATED, 4, 0.05, 0.9),
        "nesterov": synthetic(ROTATED, 4, 0.05, 0.9, True),
    }
    after = {k: ROTATED.value_np(r.path("w")[1].astype(np.float64)) for k, r in same.items()}
    assert after["plain"] == pytest.approx(after["momentum"]) and after["plain"] != after["nesterov"]
    fig = dtsgd_viz.plot_paths(same, ROTATED, step=1)
    dots = gid_artists(fig, "loss-marker:")
    assert len(dots) == len(same)
    # every mark is the path panel's ring (open, in the run's colour, one size), at the loss after update 1
    rings = gid_artists(fig, "position:")
    for key, dot in dots.items():
        assert dot.get_marker() == rings[key].get_marker() == style.ROLE_LOOKS["current"].marker
        assert dot.get_markerfacecolor() == "none" and dot.get_markeredgecolor() == style.RULE_LOOKS[key].color
        assert dot.get_markersize() == DOT_SIZE
        assert (list(dot.get_xdata()), list(dot.get_ydata())) == ([1], [pytest.approx(after[key])])
    # the legend's "after update 1" is that ring too, in each run's colour side by side (one meaning of grey: plain)
    legend = fig.legends[0]
    (i,) = [i for i, t in enumerate(legend.get_texts()) if t.get_text() == "after update 1"]
    from matplotlib.offsetbox import DrawingArea

    (box,) = [b for b in legend.findobj(DrawingArea) if legend.legend_handles[i] in b.get_children()]
    drawn = [a for a in box.get_children() if a.get_marker() not in ("None", "", None)]
    assert [k.get_markeredgecolor() for k in drawn] == [style.RULE_LOOKS[k].color for k in same]
    assert {(k.get_marker(), k.get_markerfacecolor()) for k in drawn} == {(style.ROLE_LOOKS["current"].marker, "none")}
