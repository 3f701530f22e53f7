"""PhaseDiagram's picture as tutorial 03 shows it, through the artists: the headline is
what the picked cell's runs show (their counts computed here from the numpy reference
of the tf-keras rule), the map keeps its own finding as its title, the loss panel says
why it stops where it does, and the paths' legend sits under their panel, not on it."""

import matplotlib
import numpy as np
import pytest

from dtsgd_viz.theory import reference, surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.widgets import PhaseDiagram

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
LRS, MUS, STEPS, TOL = np.geomspace(1e-3, 0.2, 24), np.linspace(0.0, 0.95, 20), 150, 1e-3
PICK = (17, 16)  # the tutorial's cell: lr 0.0502, mu 0.8


def reference_steps(lr, mu, nesterov):
    """Updates until the loss stays within TOL of the minimum, from the numpy reference
    (a loop written out here; -1: never)."""
    path = reference.run(SURFACE.grad_np, SURFACE.default_start.astype(np.float32), STEPS, lr, mu, nesterov)
    gap = SURFACE.value_np(path.astype(np.float64)) - SURFACE.min_value
    for k in range(len(gap)):
        if np.all(np.isfinite(gap[k:])) and np.all(np.abs(gap[k:]) <= TOL):
            return k
    return -1


@pytest.fixture(scope="module")
def phase():
    pd = PhaseDiagram(SURFACE, learning_rates=LRS, momenta=MUS, steps=STEPS, tol=TOL)
    pd.select(*PICK)
    assert pd.error is None
    pd.figure.canvas.draw()
    return pd


@pytest.mark.slow
def test_the_headline_is_what_the_picked_cell_shows(phase):
    fig = phase.figure
    lr, mu = LRS[PICK[0]], MUS[PICK[1]]
    m, n = reference_steps(lr, mu, False), reference_steps(lr, mu, True)
    assert 0 < n < m < STEPS  # Nesterov faster there: about half the updates
    finding, settings = headline_texts(fig)
    assert finding == f"At lr {lr:.3g}, μ {mu:.3g} Nesterov reaches tol in {n} updates, momentum in {m}"
    assert f"tol {TOL:g}" in settings and f"{STEPS} updates" in settings
    # one line each: the settings hang within a line of the finding's top
    renderer = fig.canvas.get_renderer()
    title = fig._suptitle.get_window_extent(renderer)
    sub = next(t for t in [*fig.texts, *fig.artists] if t.get_gid() == "subtitle").get_window_extent(renderer)
    assert "\n" not in finding and "\n" not in settings
    assert 0 <= title.y1 - sub.y1 <= 1.6 * style.SUPTITLE_SIZE * fig.dpi / 72
    assert title.x1 <= fig.bbox.width and sub.x1 <= fig.bbox.width
    # the map keeps its own finding as its title
    ax = phase.map_axes["ratio"]
    g = phase.grids
    both = (g["momentum"].steps >= 0) & (g["nesterov"].steps >= 0)
    mf, nf = np.maximum(g["momentum"].steps, 1), np.maximum(g["nesterov"].steps, 1)
    nes, mom = int((both & (mf > 1.1 * nf)).sum()), int((both & (nf > 1.1 * mf)).sum())
    assert ax.get_title() == (
        f"Both converge in {int(both.sum())} cells: Nesterov >10% faster in {nes}, momentum in {mom}, "
        f"ties {int(both.sum()) - nes - mom}"
    )
    assert ax.title.get_window_extent(renderer).width <= ax.get_window_extent(renderer).width


@pytest.mark.slow
def test_the_loss_panel_shows_twice_the_slower_runs_updates_and_the_title_says_how_many(phase):
    ax = phase.figure.axes[1]
    lr, mu = LRS[PICK[0]], MUS[PICK[1]]
    slow = max(reference_steps(lr, mu, False), reference_steps(lr, mu, True))
    lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("cell-loss:")]
    assert len(lines) == 2 and all(len(ln.get_xdata()) == 2 * slow + 1 for ln in lines)
    assert ax.get_title() == f"Their loss, the first {2 * slow} of {STEPS} updates"
    assert ax.get_xlabel() == "updates made (k)"  # the count is the title's; the why is the tutorial's


def test_the_paths_legend_sits_under_their_panel_on_nothing(phase):
    fig = phase.figure
    renderer = fig.canvas.get_renderer()
    ax_p = fig.axes[2]
    legend = ax_p.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["momentum", "Nesterov"]
    box = legend.get_window_extent(renderer)
    panel = ax_p.get_window_extent(renderer)
    assert box.y1 <= panel.y0  # under the panel, not on the paths
    others = [
        ax_p.xaxis.label.get_window_extent(renderer),
        *(leg.get_window_extent(renderer) for leg in fig.legends),
        *(ax.get_window_extent(renderer) for ax in fig.axes),
    ]
    assert not any(box.overlaps(o) for o in others)
    assert min(t.get_fontsize() for leg in [legend, *fig.legends] for t in leg.get_texts()) >= 9.5


@pytest.mark.slow
def test_before_a_run_the_headline_is_the_maps_finding():
    pd = PhaseDiagram(SURFACE, learning_rates=LRS[10:], momenta=MUS[10:], steps=40, tol=1e-2)
    finding, _ = headline_texts(pd.figure)
    assert pd.recordings is None and finding.startswith("Both converge in")
    assert pd.map_axes["ratio"].get_title() == "Who is faster: Nesterov's updates / momentum's"


def test_the_ratio_maps_boundaries_are_each_rules_look_and_in_the_key(phase):
    """The boundaries are drawn as on plot_phase's maps (each rule's look) and named in
    the key, not on the map."""
    from matplotlib.colors import to_hex

    ax = phase.map_axes["ratio"]
    lines = {ln.get_gid(): ln for ln in ax.lines if (ln.get_gid() or "").startswith("ratio-boundary:")}
    for key in ("momentum", "nesterov"):
        look = style.RULE_LOOKS[key]
        assert to_hex(lines[f"ratio-boundary:{key}"].get_color()) == to_hex(look.color)
    texts = [t.get_text() for t in phase.figure.legends[0].get_texts()]
    assert {"momentum's stability boundary", "Nesterov's stability boundary"} <= set(texts)
    assert not [t for t in ax.texts if (t.get_gid() or "").startswith(("boundary-label", "region-"))]


def test_the_loss_axis_ends_just_past_the_data_and_its_key_names_the_rules_and_tol(phase):
    fig = phase.figure
    ax = fig.axes[1]
    lines = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("cell-loss:")]
    last = max(float(np.max(ln.get_xdata())) for ln in lines)
    x0, x1 = ax.get_xlim()
    assert last < x1 <= last + 0.03 * (x1 - x0) and x0 < 0 <= x0 + 0.03 * (x1 - x0)
    names = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [n for n in names if not n.startswith("within tol")] == ["momentum", "Nesterov", f"tol {phase.tol:g}"]
    # room made under the map only: the ratio map keeps (nearly) the figure's width
    ratio = phase.map_axes["ratio"].get_window_extent(fig.canvas.get_renderer())
    assert ratio.width >= 0.75 * fig.bbox.width


def test_the_pick_outline_is_a_double_stroke_and_the_key_draws_the_maps_marks(phase):
    """The pink pick outline was faint on red cells and the "both diverge" key showed a
    hatch where the map draws x marks: the outline is a white line on a wider black
    stroke (map and key alike), the key's divergence swatch the map's grey with the
    map's white x marker, no hatch."""
    from matplotlib.colors import to_rgba
    from matplotlib.patheffects import Stroke

    from dtsgd_viz.views.phase.regions import DIVERGED_FACE, DIVERGED_MARK

    fig = phase.figure
    (rect,) = [p for p in phase.map_axes["ratio"].patches if p.get_gid() == "pick:ratio"]
    legend = fig.legends[0]
    key = next(h for h, t in zip(legend.legend_handles, legend.get_texts()) if t.get_text().startswith("picked"))
    for patch in (rect, key):
        assert matplotlib.colors.to_hex(patch.get_edgecolor()) == "#ffffff"
        (stroke, _) = patch.get_path_effects()
        assert isinstance(stroke, Stroke) and stroke._gc["foreground"] == "black"
        assert stroke._gc["linewidth"] >= patch.get_linewidth() + 2
    texts = [t.get_text() for t in legend.get_texts()]
    assert "both diverge" in texts
    drawn = [a for a in legend.findobj() if isinstance(a, matplotlib.lines.Line2D) and a.get_marker() == "x"]
    assert len(drawn) == 1 and len(drawn[0].get_xdata()) >= 1
    assert drawn[0].get_markersize() == DIVERGED_MARK["ms"] and drawn[0].get_markeredgecolor() == "white"
    swatch = [a for a in legend.findobj(matplotlib.lines.Line2D) if a.get_color() == DIVERGED_FACE]
    assert swatch and swatch[0].get_linewidth() >= 6  # a grey cell under the x
    grey = [p for p in legend.findobj(matplotlib.patches.Patch) if p.get_facecolor() == to_rgba(DIVERGED_FACE)]
    assert not [p for p in grey if p.get_hatch()]
