"""One scale and one palette for every view: sizes, type, colour-blind-safe looks per rule, role and block.

**The scale.** Every figure fits a notebook column (``WIDTH`` plus ``PAD`` a side), no text under ``MIN_TEXT_PX``:

    >>> (WIDTH + 2 * PAD) * DPI <= MAX_WIDTH_PX and NOTE_SIZE * DPI / 72 >= MIN_TEXT_PX
    True
    >>> NOTE_SIZE * GIF_DPI / 72 >= MIN_TEXT_PX        # the GIF, drawn at its own dpi
    True

**The looks.** Views draw runs with ``run_looks`` (wider lines lower: coinciding paths show), roles with ``ROLE_LOOKS``:

    >>> run_looks(["plain", "momentum", "nesterov"])["nesterov"].lw == max(
    ...     look.lw for look in RULE_LOOKS.values())
    True
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.typing import ColorType

    from ...geometry import ShardGeometry

DPI = 100  # every figure and widget PNG is drawn at this dpi
MAX_WIDTH_PX = 950  # a notebook column: wider figures are shown shrunk
MIN_TEXT_PX = 9  # the smallest text as displayed
PAD = 0.1  # inches IPython's print_figure (bbox_inches="tight") adds each side
WIDTH = (MAX_WIDTH_PX - 2 * PAD * DPI) / DPI  # 9.3 inches: shown as wide as the column
GIF_DPI = DPI  # animations: frames as wide as the figures (930 px), the same type

# type sizes in points (at DPI: x 1.39 in pixels)
SUPTITLE_SIZE = 12.5  # a figure's finding
SUBTITLE_SIZE = 10.0  # the settings under it
TITLE_SIZE = 11.0  # a panel's title
LABEL_SIZE = 10.0  # axis labels and direct labels on the data
TICK_SIZE = 9.0  # tick labels
NOTE_SIZE = 8.5  # notes, legends, the smallest text anywhere
SUBTITLE_COLOR = "0.3"

# figure sizes in inches, all at most WIDTH wide
PATHS_SIZE = (WIDTH, 8.6)  # paths and loss, one zoomed panel per run under them
PATHS_SIZE_NO_ZOOM = (WIDTH, 4.7)  # paths and loss
MODES_SIZE = (WIDTH, 7.6)  # one panel per mode, the rates under them
PHASE_DIAGRAM_SIZE = (WIDTH, 9.2)  # the same maps and the real paths at a picked cell
COMPARE_SIZE = (WIDTH, 4.9)  # CompareWidget: paths and loss
RATES_SIZE = (WIDTH, 4.6)  # block rates: the rate curves and each block's error
SHARD_EXPLORER_SIZE = (WIDTH, 5.0)  # ShardExplorer: the tensor panel and the norm lines
LIVE_MONITOR_SIZE = (WIDTH, 3.6)  # LiveMonitor: the loss and the block norms

# Okabe & Ito (2008), colour-blind safe. Known optimizer configs get fixed colours.
OPTIMIZER_COLORS = {
    "plain": "#555555",
    "momentum": "#0072B2",
    "nesterov": "#D55E00",
}
# runs of other names: none in a rule's hue (orange and sky blue read as Nesterov and momentum)
_EXTRA = ["#009E73", "#CC79A7", "#999933", "#332288", "#F0E442", "#000000"]

# One colour per unique block: Tol's muted scheme, a brown and a gold for its grey, green and olive, all >= 28 apart
# in CIELAB (also from the rules', colour-blind); nine, odd, so neighbours differ on 2^k meshes; then hatches, dashes.
BLOCK_COLORS = ["#332288", "#CC6677", "#F0C000", "#882255", "#88CCEE", "#DDCC77", "#AA4499", "#663300", "#44AA99"]
BLOCK_HATCHES = ("", "//", "\\\\", "..", "x", "--", "||", "o")
BLOCK_LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)), (0, (3, 1, 3, 1, 1, 1)))

DIVERGING_CMAP = "RdBu_r"  # signed values (velocity, gradient), centred on 0
SEQUENTIAL_CMAP = "viridis"  # magnitudes (norms), loss surfaces


def optimizer_colors(names: Iterable[str]) -> dict[str, str]:
    """``{name: colour}``: a rule's colour for a rule's names (``rule_of``), the next extra colour for others."""
    out: dict[str, str] = {}
    extra = 0
    for name in names:
        rule = rule_of(name)
        if rule is not None:
            out[name] = OPTIMIZER_COLORS[rule]
        else:
            out[name] = _EXTRA[extra % len(_EXTRA)]
            extra += 1
    return out


@dataclasses.dataclass(frozen=True)
class Look:
    """How one thing is drawn: ``color`` (None: the run's), ``ls``, ``lw``, ``marker``, ``ms`` and ``zorder``."""

    color: ColorType | None
    ls: object
    lw: float
    marker: str = ""
    ms: float = 0.0
    zorder: float = 2.0

    def line(self, color: ColorType | None = None, **extra: Any) -> dict[str, Any]:
        """Keyword arguments of ``ax.plot`` for this look (``color`` fills a None one)."""
        return dict(color=self.color if color is None else color, ls=self.ls, lw=self.lw, zorder=self.zorder, **extra)

    def casing(self) -> float:  # a white casing's width (points) for a solid line under 1.5 pt (over wider: it shows)
        return self.lw + 1.4 if self.lw < 1.5 and self.ls == "-" else 0.0


RULE_LOOKS = {
    "plain": Look(OPTIMIZER_COLORS["plain"], "-", 1.1, "o", 3.2, zorder=3.3),
    "momentum": Look(OPTIMIZER_COLORS["momentum"], (0, (4.0, 1.6)), 2.5, "s", 3.6, zorder=3.2),
    "nesterov": Look(OPTIMIZER_COLORS["nesterov"], "-", 3.8, "^", 4.2, zorder=3.1),
}
# runs of other names: the next of these, in the next _EXTRA colour
EXTRA_LOOKS = (
    Look(None, (0, (1.0, 1.2)), 2.2, "D", 3.4, zorder=3.05),
    Look(None, (0, (6.0, 1.5, 1.5, 1.5)), 1.8, "v", 3.6, zorder=3.04),
)

ROLE_LOOKS = {
    "start": Look("black", "none", 1.5, "o", 9.0, zorder=5.0),  # white face
    "minimum": Look("black", "none", 1.0, "*", 10.0, zorder=6.5),  # MINIMUM_FACE: over paths and rings, under labels
    "current": Look(None, "none", 2.0, "o", 9.0, zorder=6.0),  # the update shown: white face
    "remainder": Look(None, "-", 0.9, zorder=2.2),  # a path after the update shown, tinted by REMAINDER_TINT
    "update_line": Look("#8C8C8C", "-", 1.2, zorder=4.5),  # the loss panel's update (as the shards'), over the lines
    "theory": Look("white", (0, (5.0, 2.0)), 2.0, zorder=4.0),  # stability boundary, outlined
    "rate_level": Look("white", "-", 0.9, zorder=3.5),  # iso-rate contours, outlined
    "critical": Look("black", (0, (6.0, 1.5, 1.5, 1.5)), 1.6, zorder=4.0),  # critical damping
    "envelope": Look(None, (0, (1.0, 1.3)), 1.4, zorder=2.5),  # the bound from theory
    "tolerance": Look("0.3", ":", 1.2, zorder=1.5),  # minimum + tol
    "stability": Look("0.3", "--", 0.9, zorder=1.0),  # rate = 1
    "limit": Look(None, ":", 1.2, zorder=2.0),  # a rule's stability limit on an lr·h axis, in its colour
    "guide": Look("0.45", ":", 0.9, zorder=0.0),  # a direction's lr·h on a rate axis
    # Nesterov's update: dotted mu·v_prev to the look-ahead (white diamond), the iterate a white pentagon
    "lookahead": Look(None, (0, (0.1, 2.2)), 1.8, "D", 7.5, zorder=4.0),
    "iterate": Look(None, "none", 1.4, "p", 6.0, zorder=6.0),
}
MINIMUM_FACE = "#F0E442"
REMAINDER_TINT = 0.5  # how far towards white a path after the update shown is mixed

# phase maps: neutrals outside the colour maps, hatches of the regions only one rule survives
NOT_CONVERGED_COLOR = "#E2E2E2"  # the cap: not within tol in the updates allowed
REGION_FACE = "white"  # under a hatch: apart from the cap's grey
TIE_FACE = "#EFE3B8"  # the ratio map's ties (counts within 10%): a sand no cell, region or page has
HATCH_COLOR = "#6E6E6E"
HATCHES = {"only_momentum": "///", "only_nesterov": "\\\\\\", "cap_momentum": "...", "cap_nesterov": "..."}


def handle_length(fontsize: float = NOTE_SIZE, dashes: int = 2) -> float:
    """A legend's ``handlelength`` (in font sizes) showing ``dashes`` whole dashes of every dashed rule's line.

    >>> round(handle_length(10.0), 2)   # momentum: 2 dashes of 4 and a gap of 1.6, times 2.5
    2.45
    """
    longest = 2.0 * fontsize  # matplotlib's default
    for look in RULE_LOOKS.values():
        if isinstance(look.ls, tuple):
            on, off = look.ls[1][0], look.ls[1][1]
            longest = max(longest, (dashes * on + (dashes - 1) * off) * look.lw + 0.5)
    return longest / fontsize


def rule_of(name: str) -> str | None:
    """``plain``, ``momentum`` or ``nesterov`` for a config name, None for another name."""
    key = name.lower()
    for rule in ("nesterov", "momentum", "plain", "sgd"):
        if key == rule or key.startswith(rule):
            return "plain" if rule == "sgd" else rule
    return None


def run_looks(names: Iterable[str]) -> dict[str, Look]:
    """``{name: Look}``: a rule's look for a rule's names, the next ``EXTRA_LOOKS`` for others: never one look twice."""
    names = list(names)
    colors = optimizer_colors(names)
    out: dict[str, Look] = {}
    extra = 0
    for name in names:
        rule = rule_of(name)
        if rule is not None:
            out[name] = RULE_LOOKS[rule]
            continue
        look = EXTRA_LOOKS[extra % len(EXTRA_LOOKS)]
        out[name] = dataclasses.replace(look, color=colors[name], zorder=look.zorder - 0.001 * extra)
        extra += 1
    return out


def block_places(geometry: ShardGeometry) -> tuple[int, ...]:
    """Each replica group's palette place: its row-major block-grid index, bumped so edge neighbours never match."""
    import math

    n, p = geometry.global_shape, len(BLOCK_COLORS)
    grid = [s // max(1, m) for s, m in zip(n, geometry.local_shape)]
    strides = [math.prod(grid[i + 1 :]) for i in range(len(grid))]
    places = []
    for devices in geometry.replica_groups:
        c = geometry.block_index(devices[0])
        flat = sum(ci * si for ci, si in zip(c, strides))
        bump = sum(ci for ci, si in zip(c, strides) if si % p == 0 and si > 1)
        places.append(flat + bump)
    return tuple(places)


def block_style(place: int) -> tuple[str, str, object]:
    """``(colour, hatch, linestyle)`` of palette place ``place``: hatch and line style tell colour rounds apart."""
    p = len(BLOCK_COLORS)
    k = place // p
    return (BLOCK_COLORS[place % p], BLOCK_HATCHES[k % len(BLOCK_HATCHES)], BLOCK_LINESTYLES[k % len(BLOCK_LINESTYLES)])


def chip(color: ColorType, hatch: str | None = None) -> dict[str, Any]:
    """Text keywords naming a block (or run) on a box of its colour, in black or white: whichever reads on it."""
    from matplotlib.colors import to_rgb

    light = sum(w * c for w, c in zip((0.299, 0.587, 0.114), to_rgb(color))) > 0.5
    box = dict(boxstyle="round,pad=0.2", facecolor=color, edgecolor="none", alpha=0.9, hatch=hatch or None)
    return {"color": "black" if light else "white", "bbox": box}


def block_styles(geometry: ShardGeometry) -> tuple[tuple[str, str, object], ...]:
    """``(colour, hatch, linestyle)`` of every replica group of ``geometry``.

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> from dtsgd_viz.geometry import shard_geometry
    >>> g = shard_geometry((4, 4), LayoutSpec(("x", "y"), MeshSpec.create({"x": 2, "y": 2})))
    >>> [c for c, _, _ in block_styles(g)] == BLOCK_COLORS[:4]
    True
    """
    return tuple(block_style(p) for p in block_places(geometry))


# communication: a colour per mesh dim in mesh order, sets of dims their own; dark, none a variable's
MESH_DIM_COLORS = ("#332288", "#882255", "#999933", "#000000")
MESH_DIMS_COLORS = ("#117733", "#AA4499", "#5A3A8A", "#666666")

# memory bars: a colour per variable, lighter, none near a rule's hue or a mesh dim's colour
VARIABLE_COLORS = ("#009E73", "#CC79A7", "#F0E442", "#44AA99", "#CC6677", "#BBCC33", "#FFAABB", "#EEDD88", "#BBBBBB")

# which velocity moved a shard (theory.stale's classes): the rule calm, the stale read loud, none a rule's hue
STALE_COLORS = {
    "rule": "#C6E3CC",
    "stale": "#882255",
    "neither": "#000000",
    "cannot tell": "#E4E4E4",
}
