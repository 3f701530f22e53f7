"""Direct manipulation: the pixel -> data mapping (checked against where Agg really
drew a point), a click on a PhaseDiagram cell running the real optimizer there, a
diverging cell clipped to the view box, and dragging CompareWidget's start point."""

import io

import matplotlib
import numpy as np
import pytest
from helpers.phase_cells import at_runs, shown_at
from PIL import Image

from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.theory.convergence import steps_to_tolerance
from dtsgd_viz.views.core.figure import new_figure
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.widgets import CompareWidget, PhaseDiagram, _pointer
from dtsgd_viz.widgets._drag import PREVIEW_TITLE, DragState, drag_state
from dtsgd_viz.widgets.phase_diagram import divergence_update

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic()  # Hessian eigenvalues 1 and 10
LRS, MUS, STEPS, TOL = np.geomspace(0.02, 0.4, 6), np.linspace(0.0, 0.9, 5), 25, 1e-2
MARK = (255, 0, 255)


def drawn_pixel(png, color=MARK):
    """The centre of the pixels of ``color`` in a PNG: where Agg really drew it."""
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    ys, xs = np.nonzero(np.all(np.abs(rgb - color) <= 2, axis=-1))
    assert len(xs) > 4
    return xs.mean(), ys.mean()


@pytest.mark.parametrize("xscale", ["linear", "log"])
def test_pixel_to_data_finds_where_agg_drew_a_point(xscale):
    fig = new_figure((5.0, 3.5), dpi=80)
    ax_a, ax_b = fig.subplots(1, 2)
    ax_b.set_xscale(xscale)
    ax_b.set_xlim(0.1, 10.0)
    ax_b.set_ylim(-2.0, 3.0)
    ax_b.plot([2.0], [1.0], "s", ms=6, color=np.array(MARK) / 255, mew=0, antialiased=False)
    buf = io.BytesIO()
    fig.savefig(buf, format="png")
    png = buf.getvalue()
    size = _pointer.png_size(png)
    assert size == (400, 280)
    x, y = drawn_pixel(png)
    assert _pointer.axes_at([ax_a, ax_b], x, y, size) is ax_b
    lr, mu = _pointer.pixel_to_data(ax_b, x, y, size)
    px = 1.0 / ax_b.bbox.width  # one pixel, as a fraction of the axes
    assert abs(np.log10(lr / 2.0) if xscale == "log" else (lr - 2.0) / 9.9) < 2 * px * (2 if xscale == "log" else 1)
    assert abs(mu - 1.0) < 2 * 5.0 / ax_b.bbox.height
    np.testing.assert_allclose(_pointer.data_to_pixel(ax_b, 2.0, 1.0, size), (x, y), atol=1.0)
    # the PNG shown at twice its pixels (savefig.dpi != figure.dpi): the size rescales it
    x2, y2 = _pointer.data_to_pixel(ax_b, 2.0, 1.0, (800, 560))
    np.testing.assert_allclose(_pointer.pixel_to_data(ax_b, x2, y2, (800, 560)), (2.0, 1.0), rtol=1e-9)
    assert _pointer.axes_at([ax_a, ax_b], 1, 1, size) is None


def test_event_pixel_reads_ipyevents_image_coordinates():
    assert _pointer.event_pixel({"dataX": 12, "dataY": 30, "relativeX": 6}, (100, 50)) == (12.0, 30.0)
    ev = {"relativeX": 25, "relativeY": 10, "boundingRectWidth": 50, "boundingRectHeight": 25}
    assert _pointer.event_pixel(ev, (100, 50)) == (50.0, 20.0)
    with pytest.raises(ValueError, match="Not a PNG"):
        _pointer.png_size(b"GIF89a")


@pytest.fixture(scope="module")
def phase():
    return PhaseDiagram(SURFACE, learning_rates=LRS, momenta=MUS, steps=STEPS, tol=TOL)


def cell_pixel(pd, key, j, i):
    """The PNG pixel at the centre of cell (lr j, mu i) of map ``key``."""
    size = _pointer.png_size(pd.image.value)
    lr = np.sqrt(pd.lr_edges[j] * pd.lr_edges[j + 1])
    mu = (pd.mu_edges[i] + pd.mu_edges[i + 1]) / 2
    return _pointer.data_to_pixel(pd.map_axes[key], lr, mu, size)


@pytest.mark.slow
def test_every_cell_of_every_map_is_found_at_its_pixel(phase):
    pd = phase
    # the widget has one map, the ratio map (plot_phase draws the two rule maps)
    assert set(pd.map_axes) == {"ratio"}
    assert not any(ax.get_label() in ("phase:momentum", "phase:nesterov") for ax in pd.figure.axes)
    for key in pd.map_axes:
        for j in range(len(LRS)):
            for i in range(len(MUS)):
                assert pd.cell_at_pixel(*cell_pixel(pd, key, j, i)) == (j, i)
    assert pd.cell_at_pixel(2, 2) is None  # the figure's corner: no map there


def test_a_click_where_a_boundary_cuts_a_cell_picks_the_run_drawn_there(phase):
    """The ratio map's cells are cut along the stability boundaries (each side: the nearest run on that side);
    a pixel there picks the run its colour is, read back from the drawn mesh."""
    pd = phase
    mesh = [m for m in pd.map_axes["ratio"].collections if m.get_gid() == "phase:ratio"][0]
    shown = at_runs(mesh, LRS, MUS)
    lr_e, mu_e, (i, j) = pd.cut
    own_i = np.searchsorted(pd.mu_edges, (mu_e[1:] + mu_e[:-1]) / 2)[:, None] - 1
    own_j = np.searchsorted(pd.lr_edges, np.sqrt(lr_e[1:] * lr_e[:-1]))[None, :] - 1
    cut = np.argwhere((i != own_i) | (j != own_j))
    assert len(cut) >= 5
    size = _pointer.png_size(pd.image.value)
    for r, c in cut[:: max(1, len(cut) // 8)]:
        lr, mu = np.sqrt(lr_e[c] * lr_e[c + 1]), (mu_e[r] + mu_e[r + 1]) / 2
        x, y = _pointer.data_to_pixel(pd.map_axes["ratio"], lr, mu, size)
        got = pd.cell_at_pixel(x, y)
        assert got == (j[r, c], i[r, c]) != (own_j[0, c], own_i[r, 0]), (lr, mu)
        # what the mesh draws at that point is the picked run's ratio (or both masked: a region's face)
        drawn, want = shown_at(mesh, lr, mu), shown[got[1], got[0]]
        assert (drawn is np.ma.masked and want is np.ma.masked) or drawn == want, (drawn, want)


@pytest.mark.slow
def test_clicking_a_cell_runs_the_real_optimizer_there(phase):
    pd = phase
    assert pd.events is not None and "click" in pd.events.watched_events and pd.events.source is pd.image
    x, y = cell_pixel(pd, "ratio", 2, 3)
    pd._on_event({"type": "click", "dataX": x, "dataY": y})
    lr, mu = LRS[2], MUS[3]
    assert pd.error is None and (pd.pick.lr_index, pd.pick.mu_index) == (2, 3)
    assert (pd.lr_pick.value, pd.mu_pick.value) == (2, 3)
    for key, nesterov in (("momentum", False), ("nesterov", True)):
        rec = pd.recordings[key]
        hp = rec.hyperparameters
        assert (hp.momentum, hp.nesterov) == (pytest.approx(mu), nesterov)
        np.testing.assert_allclose(hp.learning_rate, lr, rtol=1e-7)
        np.testing.assert_array_equal(rec.initial("w"), SURFACE.default_start.astype(np.float32))
        assert len(rec.steps) == STEPS
        path = pd.figure.axes[2].lines
        drawn = [ln for ln in path if ln.get_gid() == f"path:{key}"][0]
        np.testing.assert_array_equal(drawn.get_xydata(), rec.path("w").astype(np.float64))
    assert f"lr = {lr:.3g}" in pd.figure.axes[2].get_title()
    assert "real DTensor SGD" in pd.status.value
    renders = pd.renders
    pd._on_event({"type": "click", "dataX": 1, "dataY": 1})  # off the maps: nothing runs
    assert pd.renders == renders and pd.ran_at.lr_index == 2


@pytest.mark.slow
def test_the_picked_cells_losses_are_the_real_runs(phase):
    pd = phase
    pd.select(2, 3)
    ax = pd.figure.axes[1]
    lines = {ln.get_gid()[len("cell-loss:") :]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("cell-loss:")}
    assert sorted(lines) == ["momentum", "nesterov"] and ax.get_yscale() == "log"
    for key, rec in pd.recordings.items():
        gap = SURFACE.value_np(rec.path("w").astype(np.float64)) - SURFACE.min_value
        y = lines[key].get_ydata()
        np.testing.assert_allclose(y, gap[: len(y)], rtol=1e-12)
        k = int(pd.grids[key].steps[3, 2])
        assert k >= 0 and len(y) > k  # drawn at least until it is within tol
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    # the key names each rule and the update after which it stays within tol, marked on its line
    for key, rec in pd.recordings.items():
        gap = SURFACE.value_np(rec.path("w").astype(np.float64)) - SURFACE.min_value
        k = int(steps_to_tolerance(gap + SURFACE.min_value, SURFACE.min_value, TOL))
        assert rule_name(key) in names and f"within tol from k = {k}" in names, names
        (mark,) = [ln for ln in ax.lines if ln.get_gid() == f"cell-reached:{key}"]
        assert (mark.get_xdata()[0], mark.get_ydata()[0]) == (k, gap[k])


@pytest.mark.slow
def test_a_diverging_cell_is_clipped_to_the_view_box_and_says_when(phase):
    pd = phase
    j, i = len(LRS) - 1, len(MUS) - 1  # lr 0.4, mu 0.9: beyond both boundaries (h = 10)
    assert pd.grids["nesterov"].diverged[i, j]
    assert pd.click(*cell_pixel(pd, "ratio", j, i))
    ax = pd.figure.axes[2]
    assert (ax.get_xlim(), ax.get_ylim()) == SURFACE.view_box
    box = np.array(SURFACE.view_box)
    for key, rec in pd.recordings.items():
        path = rec.path("w").astype(np.float64)
        with np.errstate(invalid="ignore"):
            outside = ~np.all(np.isfinite(path) & (path >= box[:, 0]) & (path <= box[:, 1]), axis=1)
        k = int(np.argmax(outside))
        assert k > 0 and pd.diverged_at[key] == k == divergence_update(path, SURFACE.view_box)
        assert f"{key}: diverged at update {k}" in pd.status.value
        note = [t.get_text() for t in ax.texts if t.get_gid() == "diverged-note"][0]
        assert f"{key}: diverged at update {k}" in note


# ---- CompareWidget: drag the start ------------------------------------------------------


def test_drag_state_transitions():
    box = ((-4.0, 4.0), (-4.0, 4.0))
    s, a = drag_state(DragState(), "mousemove", (1.0, 1.0), box)
    assert a is None and not s.dragging  # moving without a press: nothing
    s, a = drag_state(s, "mousedown", None, box)
    assert a is None and not s.dragging  # a press off the panel: nothing
    s, a = drag_state(s, "mousedown", (1.0, -2.0), box)
    assert a == ("preview", (1.0, -2.0)) and s.dragging
    s, a = drag_state(s, "mousemove", (-9.0, 0.5), box)
    assert a == ("preview", (-4.0, 0.5))  # clamped to the box
    s, a = drag_state(s, "mousemove", None, box)
    assert a is None and s.start == (-4.0, 0.5)  # off the panel: keep the last point
    s, a = drag_state(s, "mouseleave", None, box)
    assert a == ("run", (-4.0, 0.5)) and not s.dragging


@pytest.mark.slow
def test_dragging_the_start_previews_with_the_reference_and_runs_the_real_sgd_on_release():
    cw = CompareWidget(SURFACE, learning_rate=0.05, momentum=0.9, steps=12, background=False)
    drag = cw.drag
    assert drag.events is not None and {"mousedown", "mousemove", "mouseup"} <= set(drag.events.watched_events)
    ax = cw.view.artists.ax_path
    size = _pointer.png_size(cw.image.value)
    px = [_pointer.data_to_pixel(ax, x, y, size) for x, y in ((-3.0, 1.5), (0.5, 2.0), (2.0, 3.0))]
    runs = len(cw.runs)
    drag.handle({"type": "mousedown", "dataX": px[0][0], "dataY": px[0][1]})
    drag.handle({"type": "mousemove", "dataX": px[1][0], "dataY": px[1][1]})
    drag.handle({"type": "mousemove", "dataX": px[2][0], "dataY": px[2][1]})
    assert len(cw.runs) == runs and drag.previews == 3  # no real run while dragging
    assert ax.get_title() == PREVIEW_TITLE
    start = _pointer.pixel_to_data(ax, *px[2], size)
    np.testing.assert_allclose(start, (2.0, 3.0), atol=0.05)
    for key, config in (
        ("plain", (0.05, 0.0, False)),
        ("momentum", (0.05, 0.9, False)),
        ("nesterov", (0.05, 0.9, True)),
    ):
        expected = reference.run(SURFACE.grad_np, np.float32(start), 12, *config)
        np.testing.assert_allclose(cw.view.artists.paths[key].get_xydata(), expected, rtol=1e-6)
    drag.handle({"type": "mouseup", "dataX": px[2][0], "dataY": px[2][1]})
    assert len(cw.runs) == runs + 1 and cw.error is None
    np.testing.assert_allclose(cw.runs[-1].start, start)
    np.testing.assert_allclose([s.value for s in cw.start], start)
    for key, rec in cw.recordings.items():
        np.testing.assert_allclose(rec.initial("w"), np.float32(start))
        path = [ln for ln in cw.view.artists.ax_path.lines if ln.get_gid() == f"path:{key}"][0]
        np.testing.assert_array_equal(path.get_xydata(), rec.path("w").astype(np.float64))
    assert cw.view.artists.ax_path.get_title() != PREVIEW_TITLE


@pytest.mark.slow
def test_the_phase_diagram_maps_are_readable_at_notebook_size():
    # learning rates over 1.3 decades: minor tick labels (2x10^-2, 3x10^-2, ...) overprinted
    from helpers.readable import check_readable

    pd = PhaseDiagram(SURFACE, learning_rates=np.geomspace(0.02, 0.4, 6))
    check_readable(pd.figure, 1)


@pytest.mark.slow
def test_a_diverging_cell_draws_each_path_only_until_it_leaves_the_view_box(phase):
    pd = phase
    j, i = len(LRS) - 1, len(MUS) - 1
    pd.select(j, i)
    box = np.array(SURFACE.view_box)
    lines = {ln.get_gid()[5:]: ln for ln in pd.figure.axes[2].lines if (ln.get_gid() or "").startswith("path:")}
    for key, rec in pd.recordings.items():
        path = rec.path("w").astype(np.float64)
        k = pd.diverged_at[key]
        assert k and np.all((path[:k] >= box[:, 0]) & (path[:k] <= box[:, 1]))
        # the first point outside is the last drawn: no segments criss-crossing the panel
        np.testing.assert_array_equal(lines[key].get_xydata(), path[: k + 1])


def png_rgb(png, x, y):
    rgb = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(int)
    return rgb[int(round(y)), int(round(x))]


@pytest.mark.slow
def test_the_pixel_mapping_lands_where_the_png_shows_the_data(phase):
    # the maps and paths sit under a headline: the pointer's pixels must still be the
    # PNG's (a subfigure's own box would shift them off the picture)
    pd = phase
    size = _pointer.png_size(pd.image.value)
    mesh = [m for m in pd.map_axes["ratio"].collections if m.get_gid() == "phase:ratio"][0]
    values = at_runs(mesh, LRS, MUS)  # the mesh is cut finer along the boundaries: each run at its centre
    checked = total = 0
    for j in range(len(LRS)):
        for i in range(len(MUS)):
            if np.ma.getmaskarray(values)[i, j] or (pd.pick.lr_index, pd.pick.mu_index) == (j, i):
                continue
            x, y = cell_pixel(pd, "ratio", j, i)
            assert 0 <= x < size[0] and 0 <= y < size[1]
            want = np.round(np.asarray(mesh.cmap(mesh.norm(values[i, j]))[:3]) * 255)
            got = png_rgb(pd.image.value, x, y)
            checked += int(np.abs(got - want).max() <= 3)  # a cell under a name may differ
            total += 1
    assert total >= 5 and checked >= 0.7 * total, (checked, total)
    cw = CompareWidget(SURFACE, learning_rate=0.05, momentum=0.9, steps=5, background=False)
    x, y = _pointer.data_to_pixel(cw.view.artists.ax_path, *SURFACE.default_start, _pointer.png_size(cw.image.value))
    assert tuple(png_rgb(cw.image.value, x, y)) == (255, 255, 255)  # the start's white face


@pytest.mark.slow
def test_the_loss_panel_says_how_much_of_the_run_it_shows_and_names_rules_alike(phase):
    pd = phase
    pd.select(2, 3)
    ax_l, ax_p = pd.figure.axes[1], pd.figure.axes[2]
    shown = max(len(ln.get_xdata()) for ln in ax_l.lines if (ln.get_gid() or "").startswith("cell-loss:"))
    assert ("first" in ax_l.get_title()) == (shown < STEPS + 1)
    # a tolerance both runs stay within from update 3: the panel stops well before the
    # run's end, and its title says so
    from matplotlib.figure import Figure

    from dtsgd_viz.views.phase.cell import draw_cell_losses

    gaps = [SURFACE.value_np(r.path("w").astype(np.float64)) - SURFACE.min_value for r in pd.recordings.values()]
    ax = Figure().subplots()
    lines = draw_cell_losses(ax, pd.recordings, SURFACE, float(max(g[3:].max() for g in gaps)) * 1.01)
    shown = max(len(ln.get_xdata()) for ln in lines.values())
    assert shown < STEPS + 1 and ax.get_title().endswith(f"the first {shown - 1} of {STEPS} updates")
    legend = [t.get_text() for t in ax_p.get_legend().get_texts()]
    names = [t.get_text() for t in ax_l.get_legend().get_texts() if not t.get_text().startswith("within tol")][:-1]
    assert "Nesterov" in legend and "nesterov" not in legend
    assert set(names) <= set(legend)
