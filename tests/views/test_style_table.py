"""One visual language, checked on the artists: every public view, the kernel-drawn
widgets and the browser explorers' look table draw each rule (plain, momentum,
nesterov) with its one colour, dash, width and marker from ``style.RULE_LOOKS``; a dash
pattern or a rule's marker means one thing in every figure; every log axis is labelled
in the one format of ``views.core.log_ticks``; every loss axis says "loss after k
updates" and plots, at x = k, the recording's loss after k updates.

The checks return what they find wrong (a list of strings): the last tests draw a
figure, change one artist by hand and show each check then fails."""

from __future__ import annotations

import re

import numpy as np
import pytest
from helpers.builders import tutorial_03_runs
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from matplotlib.colors import to_hex
from matplotlib.lines import Line2D
from matplotlib.markers import MarkerStyle
from matplotlib.text import Text

import dtsgd_viz
from dtsgd_viz import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.log_ticks import log_tick_texts
from dtsgd_viz.views.paths.loss import LOSS_YLABEL

RULES = ("plain", "momentum", "nesterov")
SHARDED = surfaces.ShardedQuadratic()
STEPS = 12
# the gids of the lines drawn for one run of a rule: "path:nesterov", "mode:1:momentum",
# "curve-Nesterov" (block rates), "rate:plain"
RUN_GID = re.compile(r"^(path|loss|rate|zoom-rate|ratio-boundary|curve|mode:\d+)[:-](plain|momentum|nesterov)$", re.I)


def _dash(ls: object, lw: float) -> tuple:
    """The dash pattern matplotlib draws for line style ``ls`` at width ``lw``."""
    line = Line2D([], [], ls=ls, lw=lw)  # pyright: ignore[reportArgumentType]
    return _pattern(line)


def _pattern(line: Line2D) -> tuple:
    offset, seq = line._unscaled_dash_pattern  # pyright: ignore[reportAttributeAccessIssue]
    return (0.0, ()) if seq is None else (round(float(offset), 3), tuple(round(float(s), 3) for s in seq))


SOLID = (0.0, ())


def _drawn_lines(fig) -> list[Line2D]:
    """Every visible Line2D with a line or a marker, in every axes and legend."""
    out = []
    for line in fig.findobj(Line2D):
        if not line.get_visible():
            continue
        if line.get_linestyle() in ("None", "none", "") and line.get_marker() in ("None", "none", "", None):
            continue
        out.append(line)
    return out


def _rule_of_line(line: Line2D) -> str | None:
    """The rule a line is drawn for, by its gid, or for a legend key by its label."""
    gid = line.get_gid()
    if gid is not None:
        m = RUN_GID.match(str(gid))
        return m.group(2).lower() if m else None
    label = str(line.get_label())
    return label if label in RULES else None


def run_look_problems(fig) -> list[str]:
    """Lines drawn for a run of a rule whose colour, dash, width or marker is not the
    rule's ``RULE_LOOKS`` entry (a path may drop its marker where the dots crowd)."""
    out = []
    for line in _drawn_lines(fig):
        rule = _rule_of_line(line)
        if rule is None:
            continue
        look = style.RULE_LOOKS[rule]
        got = (to_hex(line.get_color()), _pattern(line), round(line.get_linewidth(), 3))
        want = (to_hex(look.color or "k"), _dash(look.ls, look.lw), round(look.lw, 3))
        if got != want:
            out.append(f"{line.get_gid() or line.get_label()}: {got} != {rule}'s {want}")
        if line.get_marker() not in ("", "None", "none", None, look.marker):
            out.append(f"{line.get_gid() or line.get_label()}: marker {line.get_marker()!r} != {look.marker!r}")
    return out


def _meanings() -> dict[tuple, list[str]]:
    """``{(colour or None, dash): names}`` of every dashed look of the table."""
    out: dict[tuple, list[str]] = {}
    for name, look in [*style.RULE_LOOKS.items(), *style.ROLE_LOOKS.items()]:
        if look.ls in ("-", "none"):
            continue
        key = (None if look.color is None else to_hex(look.color), _dash(look.ls, look.lw))
        out.setdefault(key, []).append(name)
    return out


def _tint_of(color, base) -> bool:
    """Whether ``color`` is ``base`` or ``base`` mixed towards white (a remainder: the
    path after the update shown keeps its rule's dash, in its colour tinted)."""
    from matplotlib.colors import to_rgb

    c, b = np.asarray(to_rgb(color)), np.asarray(to_rgb(base))
    room = 1.0 - b
    t = np.where(room > 1e-6, (c - b) / np.where(room > 1e-6, room, 1.0), 0.0)
    amount = t[room > 1e-6].mean()
    return bool(0.0 <= amount < 1.0 and np.allclose(b + amount * room, c, atol=1.5 / 255))


def dash_problems(fig, ignore: tuple[str, ...] = ()) -> list[str]:
    """Dashed or dotted lines whose (colour, dash) is no rule's or role's look of the
    table: a dashed line reads as momentum or as a documented role, nothing else."""
    meanings = _meanings()
    momentum = style.RULE_LOOKS["momentum"]
    out = []
    for line in _drawn_lines(fig):
        dash = _pattern(line)
        if dash == SOLID or line.get_linestyle() in ("None", "none") or str(line.get_gid()).startswith(ignore):
            continue
        color = to_hex(line.get_color())
        if dash == _dash(momentum.ls, momentum.lw):
            if not _tint_of(color, momentum.color or "k"):
                out.append(f"{line.get_gid() or line.get_label()}: momentum's dash in {color}")
            continue
        if (color, dash) not in meanings and (None, dash) not in meanings:
            out.append(f"{line.get_gid() or line.get_label()}: dash {dash} in {color} means nothing in the table")
    return out


def _marker_path(marker: str) -> np.ndarray:
    m = MarkerStyle(marker)  # pyright: ignore[reportArgumentType]
    return np.asarray(m.get_path().transformed(m.get_transform()).vertices)


def marker_problems(fig) -> list[str]:
    """Rule markers meaning another thing: a square (momentum's) or a triangle
    (Nesterov's) on a line in another colour, and a block-rate scatter of a rule whose
    mark is not that rule's marker."""
    owners = {look.marker: (rule, to_hex(look.color or "k")) for rule, look in style.RULE_LOOKS.items()}
    owners.pop(style.RULE_LOOKS["plain"].marker)  # "o" is also the start's and the current update's ring
    out = []
    for line in _drawn_lines(fig):
        marker = line.get_marker()
        if marker in owners:
            rule, color = owners[str(marker)]
            edge, face = to_hex(line.get_markeredgecolor()), to_hex(line.get_markerfacecolor())
            if color not in (edge, face):
                out.append(f"{line.get_gid() or line.get_label()}: {rule}'s marker {marker!r} in {edge}/{face}")
    for coll in fig.findobj(PathCollection):
        m = re.match(r"^blocks-(momentum|nesterov)$", str(coll.get_gid()), re.I)
        if m is None or not coll.get_paths():
            continue
        want = _marker_path(style.RULE_LOOKS[m.group(1).lower()].marker)
        got = coll.get_paths()[0].vertices
        if got.shape != want.shape or not np.allclose(got, want):
            out.append(f"{coll.get_gid()}: not {m.group(1)}'s marker")
    return out


def log_tick_problems(fig) -> list[str]:
    """Log axes whose labelled ticks in view are not ``log_tick_texts`` of their values."""
    fig.draw_without_rendering()
    out = []
    for ax in fig.findobj(Axes):
        for which in ("x", "y"):
            if getattr(ax, f"get_{which}scale")() != "log":
                continue
            axis = getattr(ax, f"{which}axis")
            lo, hi = sorted(axis.get_view_interval())
            for minor in (False, True):
                ticks = [
                    (t.get_loc(), t.label1.get_text())
                    for t in (axis.get_minor_ticks() if minor else axis.get_major_ticks())
                    if t.label1.get_visible()
                    and t.label1.get_text()
                    and lo * (1 - 1e-9) <= t.get_loc() <= hi * 1.000001
                ]
                if not ticks:
                    continue
                want = log_tick_texts([v for v, _ in ticks])
                got = [s for _, s in ticks]
                if got != want:
                    out.append(f"{ax.get_title() or ax.get_ylabel()} {which}: {got} != {want}")
    return out


def loss_label_problems(fig) -> list[str]:
    """Loss axes not labelled ``LOSS_YLABEL``, and texts speaking of the loss "before"."""
    out = []
    for ax in fig.findobj(Axes):
        label = ax.get_ylabel()
        if label.lower().startswith("loss") and LOSS_YLABEL not in label:
            out.append(f"y label {label!r}")
    for text in fig.findobj(Text):
        if re.search(r"loss[^\n.;:]{0,12}before", text.get_text().lower()):
            out.append(f"text {text.get_text()!r}")
    return out


def _loss_axes(fig) -> list[Axes]:
    return [ax for ax in fig.findobj(Axes) if LOSS_YLABEL in ax.get_ylabel()]


def loss_data_problems(fig, runs: dict) -> list[str]:
    """Each rule's loss line (found by its colour) on a loss axis against the recording:
    x = 0, 1, .. up to N (or, drawn from the recording alone, up to the last loss
    recorded, ``len(loss) - 1``), and y at x = k < len(loss) equal to
    ``recording.loss[k]``, the loss after k updates."""
    colors = {to_hex(style.RULE_LOOKS[r].color or "k"): r for r in RULES}
    out, seen = [], set()
    for ax in _loss_axes(fig):
        for line in ax.get_lines():
            rule = colors.get(to_hex(line.get_color()))
            x, y = (np.asarray(v, np.float64) for v in line.get_data())
            if rule is None or rule not in runs or len(x) < 3:
                continue
            rec = runs[rule]
            loss = np.asarray(rec.loss, np.float64)
            seen.add(rule)
            ends = (int(rec.steps[-1]), len(loss) - 1)
            if x[0] != 0 or x[-1] not in ends or not np.array_equal(x, np.round(x)) or np.any(np.diff(x) <= 0):
                out.append(f"{rule}: x from {x[0]} to {x[-1]}, not 0..{rec.steps[-1]}")
                continue
            k = x.astype(int)
            inside = k < len(loss)
            if not np.allclose(y[inside], loss[k[inside]], rtol=1e-4):
                out.append(f"{rule}: the loss at x = k is not recording.loss[k] (after k updates)")
    if not seen:
        out.append("no loss line of a rule found")
    return out


@pytest.fixture(scope="module")
def rotated():
    surface, runs = tutorial_03_runs(STEPS)
    return surface, runs


@pytest.fixture(scope="module")
def sharded():
    rules = {
        "momentum": dict(learning_rate=0.5, momentum=0.9),
        "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True),
    }
    return dtsgd_viz.run(SHARDED, rules, 8)


def _figures(rotated, sharded) -> dict:
    from dtsgd_viz.widgets import CompareWidget, PathExplorer, RateExplorer

    surface, runs = rotated
    anim = dtsgd_viz.animate(runs, surface, frames=[2, 6])
    anim._draw_next_frame(6, blit=False)  # pyright: ignore[reportAttributeAccessIssue]
    return {
        "plot_paths": dtsgd_viz.plot_paths(runs, surface),
        "plot_update": dtsgd_viz.plot_update(runs, surface, step=5),
        "plot_modes": dtsgd_viz.plot_modes({k: runs[k] for k in ("momentum", "nesterov")}, surface),
        "plot_compare": dtsgd_viz.plot_compare(sharded),
        "plot_block_rates momentum": dtsgd_viz.plot_block_rates(sharded["momentum"], SHARDED),
        "plot_shards": dtsgd_viz.plot_shards(sharded["nesterov"], "w"),
        "plot_phase": dtsgd_viz.plot_phase(
            surface, steps=30, learning_rates=np.geomspace(0.01, 0.2, 5), momenta=np.linspace(0.0, 0.9, 4)
        ),
        "animate": anim._fig,  # pyright: ignore[reportAttributeAccessIssue]
        "PathExplorer": PathExplorer(runs, surface, step=5).figure,
        "CompareWidget": CompareWidget(surface, learning_rate=0.05, momentum=0.9, steps=STEPS, background=False).figure,
        "RateExplorer": RateExplorer(sharded["nesterov"], SHARDED).figure,
    }


@pytest.fixture(scope="module")
def figures(rotated, sharded):
    figs = _figures(rotated, sharded)
    for fig in figs.values():
        fig.canvas.draw()
    return figs


CHECKS = {
    "run looks": run_look_problems,
    "dashes": dash_problems,
    "markers": marker_problems,
    "log ticks": log_tick_problems,
    "loss labels": loss_label_problems,
}


@pytest.mark.slow
@pytest.mark.parametrize("check", sorted(CHECKS))
def test_every_figure_speaks_the_style_table(figures, check):
    found = {name: CHECKS[check](fig) for name, fig in figures.items()}
    assert {k: v for k, v in found.items() if v} == {}


@pytest.mark.slow
def test_the_checks_see_what_they_check(figures):
    """Each check has something to look at: rule lines, dashed lines, log axes, loss axes."""
    lines = {n: [ln for ln in _drawn_lines(f) if _rule_of_line(ln)] for n, f in figures.items()}
    assert all(lines[n] for n in ("plot_paths", "plot_modes", "plot_block_rates momentum", "PathExplorer"))
    assert any(_pattern(ln) != SOLID for f in figures.values() for ln in _drawn_lines(f))
    logs = [ax for f in figures.values() for ax in f.findobj(Axes) if "log" in (ax.get_xscale(), ax.get_yscale())]
    assert len(logs) >= 5
    assert all(_loss_axes(figures[n]) for n in ("plot_paths", "plot_compare", "CompareWidget", "PathExplorer"))


@pytest.mark.slow
@pytest.mark.parametrize("which", ["plot_paths", "PathExplorer"])
def test_the_loss_at_k_is_the_loss_after_k_updates(figures, rotated, which):
    assert loss_data_problems(figures[which], rotated[1]) == []


@pytest.mark.slow
def test_the_compare_loss_is_the_loss_after_k_updates(figures, sharded):
    assert loss_data_problems(figures["plot_compare"], sharded) == []


@pytest.mark.slow
def test_the_browser_draws_each_rule_as_matplotlib_does(rotated, figures):
    """The browser PathExplorer's look entries against the lines ``plot_paths`` draws:
    the same colour, the same dash (in pixels: the pattern times the width), the same
    width, a marker for every rule, and the roles' colours as the table's."""
    from dtsgd_viz.web.paths import path_state

    surface, runs = rotated
    look = path_state(runs, surface, step=5)["look"]
    px = 100 / 72
    drawn = {}
    for ln in figures["plot_paths"].findobj(Line2D):
        m = RUN_GID.match(str(ln.get_gid()))
        if m and m.group(1) == "path":
            drawn[m.group(2)] = ln
    for rule in RULES:
        entry, line = look["runs"][rule], drawn[rule]
        assert entry == look["rules"][rule]
        assert entry["color"] == to_hex(line.get_color())
        assert entry["width"] == pytest.approx(line.get_linewidth() * px, abs=1e-3)
        _, seq = _pattern(line)
        assert entry["dash"] == pytest.approx([s * line.get_linewidth() * px for s in seq], abs=1e-2)
        assert entry["marker"]
    assert look["rules"]["momentum"]["dash"] and not look["rules"]["nesterov"]["dash"]
    for role, entry in look["roles"].items():
        color = style.ROLE_LOOKS[role].color
        assert entry["color"] == (None if color is None else to_hex(color))


# ---- the checks fail on a drift made by hand ------------------------------------------


def _line(fig, gid: str) -> Line2D:
    return next(ln for ln in fig.findobj(Line2D) if ln.get_gid() == gid)


@pytest.mark.slow
def test_a_recoloured_run_line_is_caught(rotated):
    surface, runs = rotated
    fig = dtsgd_viz.plot_paths(runs, surface)
    assert run_look_problems(fig) == []
    _line(fig, "path:nesterov").set_color("red")
    assert any("path:nesterov" in p for p in run_look_problems(fig))


@pytest.mark.slow
def test_a_dashed_nesterov_and_a_stray_dash_are_caught(rotated):
    surface, runs = rotated
    fig = dtsgd_viz.plot_paths(runs, surface)
    assert dash_problems(fig) == []
    _line(fig, "loss:nesterov").set_linestyle(style.RULE_LOOKS["momentum"].ls)  # pyright: ignore[reportArgumentType]
    assert any("momentum's dash" in p for p in dash_problems(fig))
    assert any("loss:nesterov" in p for p in run_look_problems(fig))
    fig.axes[0].plot([0, 1], [0, 1], color="black", ls=(0, (2.0, 7.0)), gid="stray")
    assert any("stray" in p for p in dash_problems(fig))


@pytest.mark.slow
def test_a_square_in_nesterov_colour_is_caught(rotated):
    surface, runs = rotated
    fig = dtsgd_viz.plot_paths(runs, surface)
    assert marker_problems(fig) == []
    fig.axes[0].plot([0.0], [0.0], ls="none", marker="s", color=style.OPTIMIZER_COLORS["nesterov"], gid="odd")
    assert any("odd" in p for p in marker_problems(fig))


def test_a_foreign_log_format_and_a_before_label_are_caught():
    from matplotlib.figure import Figure
    from matplotlib.ticker import LogFormatterSciNotation

    fig = Figure(figsize=(style.WIDTH, 3), dpi=style.DPI)
    ax = fig.subplots()
    ax.plot([1, 2, 3], [1e-3, 1e-2, 1e-1])
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(LogFormatterSciNotation())
    ax.set_ylabel("loss (before the update)")
    assert log_tick_problems(fig) and loss_label_problems(fig)
    from dtsgd_viz.views.core.log_ticks import use_log_ticks

    use_log_ticks(ax.yaxis)
    ax.set_ylabel(LOSS_YLABEL)
    assert log_tick_problems(fig) == [] and loss_label_problems(fig) == []


def test_a_shifted_loss_line_is_caught(rotated):
    from matplotlib.figure import Figure

    _, runs = rotated
    fig = Figure(figsize=(style.WIDTH, 3), dpi=style.DPI)
    ax = fig.subplots()
    ax.set_ylabel(LOSS_YLABEL)
    rec = runs["nesterov"]
    loss = np.asarray(rec.loss, np.float64)
    k = np.arange(1, len(loss) + 1)  # the loss before update k drawn at k: one too far
    ax.plot(k, loss, color=style.RULE_LOOKS["nesterov"].color)
    assert loss_data_problems(fig, runs)
    ax.lines[0].set_data(np.arange(len(loss)), loss)
    last = int(rec.steps[-1])
    if last == len(loss) - 1:
        assert loss_data_problems(fig, runs) == []


def _hue(color) -> tuple[float, float]:
    """``(hue in degrees, saturation)`` of a colour."""
    import colorsys

    from matplotlib.colors import to_rgb

    h, _, s = colorsys.rgb_to_hls(*to_rgb(color))
    return 360.0 * h, s


@pytest.mark.parametrize("table", ["STALE_COLORS", "VARIABLE_COLORS", "MESH_DIM_COLORS", "MESH_DIMS_COLORS", "_EXTRA"])
def test_no_role_or_variable_colour_borrows_a_rules_hue(table):
    """A rule's colour means that rule only: the colours of things that are not runs
    of a rule (stale_hits' classes, the memory bars' variables, mesh dims, runs of other
    names) keep 20 degrees of hue away from momentum's blue and Nesterov's orange, greys
    aside."""
    colors = getattr(style, table)
    colors = colors.values() if isinstance(colors, dict) else colors
    rules = {rule: _hue(style.OPTIMIZER_COLORS[rule])[0] for rule in ("momentum", "nesterov")}
    near = [
        (to_hex(c), rule)
        for c in colors
        for rule, hue in rules.items()
        if _hue(c)[1] > 0.15 and min(abs(_hue(c)[0] - hue), 360 - abs(_hue(c)[0] - hue)) < 20
    ]
    assert near == []


def test_mesh_dims_and_variables_never_share_a_colour():
    """A colour means a mesh dim (communication, timeline) or a variable (memory bars),
    never both: the tables share no colour."""
    mesh = {to_hex(c) for c in (*style.MESH_DIM_COLORS, *style.MESH_DIMS_COLORS)}
    variables = {to_hex(c) for c in style.VARIABLE_COLORS}
    assert mesh.isdisjoint(variables), mesh & variables
    assert len(variables) == len(style.VARIABLE_COLORS) and len(mesh) == len(style.MESH_DIM_COLORS) + len(
        style.MESH_DIMS_COLORS
    )


def _lab(hex_color: str, cvd: np.ndarray | None = None) -> np.ndarray:
    """CIELAB of ``hex_color``, seen through the Machado et al. (2009) matrix ``cvd`` (None: normal vision)."""
    from matplotlib.colors import to_rgb

    c = np.asarray(to_rgb(hex_color))
    lin = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    lin = np.clip(lin if cvd is None else cvd @ lin, 0, 1)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ lin
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


DEUTAN = np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413], [-0.011820, 0.042940, 0.968881]])
PROTAN = np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216], [-0.003882, -0.048116, 1.051998]])


def test_the_block_colours_that_replaced_tols_close_pairs_stand_apart():
    """Tol's muted green and olive (too close to its teal and sand for deuteranopes) are
    replaced: each replacement is far (CIELAB distance >= 28) from every other block colour
    and from the rules' colours in normal, deutan and protan vision."""
    blocks = [c.upper() for c in style.BLOCK_COLORS]
    assert "#117733" not in blocks and "#999933" not in blocks and len(set(blocks)) == 9
    tol_muted = {"#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499"}
    new = [c for c in blocks if c not in tol_muted]
    assert len(new) == 2
    rules = [style.OPTIMIZER_COLORS[k] for k in ("plain", "momentum", "nesterov")]
    for a in new:
        for b in [*blocks, *rules]:
            if b != a:
                for cvd in (None, DEUTAN, PROTAN):
                    assert np.linalg.norm(_lab(a, cvd) - _lab(b, cvd)) >= 28, (a, b)


def test_consecutive_block_colours_are_far_apart():
    """Neighbouring blocks (consecutive palette places, the ninth wrapping to the first)
    get colours far apart (CIELAB >= 45) in normal, deutan and protan vision; blocks 2 and 4
    places apart (neighbours across a grid row of 2 or 4) at least 25 apart."""
    blocks = style.BLOCK_COLORS
    n = len(blocks)
    for gap, least in ((1, 45), (2, 25), (4, 25)):
        pairs = [(i, (i + gap) % n) for i in range(n)] if gap == 1 else [(i, i + gap) for i in range(8 - gap)]
        for i, j in pairs:
            for cvd in (None, DEUTAN, PROTAN):
                assert np.linalg.norm(_lab(blocks[i], cvd) - _lab(blocks[j], cvd)) >= least, (
                    i,
                    j,
                    blocks[i],
                    blocks[j],
                )
