"""One palette for every view: a consistent, colour-blind-safe colour per optimizer and
per device, and the diverging map used for signed values.

Figures are built with ``matplotlib.figure.Figure`` (no pyplot state, no global
rcParams): nothing here runs at import time beyond defining constants.
"""

from __future__ import annotations

# Okabe & Ito (2008), colour-blind safe. Known optimizer configs get fixed colours.
OPTIMIZER_COLORS = {
    "plain": "#555555",
    "sgd": "#555555",
    "momentum": "#0072B2",
    "nesterov": "#D55E00",
}
_EXTRA = ["#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#000000"]

# Paul Tol's "muted" qualitative scheme (colour-blind safe), then a pale grey.
DEVICE_COLORS = ["#332288", "#88CCEE", "#44AA99", "#117733", "#999933",
                 "#DDCC77", "#CC6677", "#882255", "#AA4499", "#DDDDDD"]

# One colour per unique block (replica group), shared by every view of a layout: Tol's
# muted scheme without its pale grey. Nine is odd on purpose: blocks are coloured by
# their row-major place in the block grid modulo 9, so neighbours along any grid dim
# of a power-of-two mesh never share a colour. Past nine blocks the colours repeat,
# each further round with a hatch (layouts) or line style (norm lines).
BLOCK_COLORS = DEVICE_COLORS[:9]
BLOCK_HATCHES = ("", "//", "\\\\", "..", "x", "--", "||", "o")
BLOCK_LINESTYLES = ("-", "--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)), (0, (8, 2)),
                    (0, (3, 1, 3, 1, 1, 1)))

DIVERGING_CMAP = "RdBu_r"   # signed values (velocity, gradient), centred on 0
SEQUENTIAL_CMAP = "viridis"  # magnitudes (norms), loss surfaces
FONT_SIZE = 9


def optimizer_color(name: str, index: int = 0) -> str:
    """Colour of an optimizer config by name (``plain``/``momentum``/``nesterov`` are
    fixed); other names take the next unused Okabe-Ito colour by position."""
    key = name.lower()
    for known, color in OPTIMIZER_COLORS.items():
        if key == known or key.startswith(known):
            return color
    return _EXTRA[index % len(_EXTRA)]


def optimizer_colors(names) -> dict[str, str]:
    names = list(names)
    extra = iter(range(len(names)))
    out = {}
    for name in names:
        color = optimizer_color(name, -1)
        out[name] = color if color not in _EXTRA else _EXTRA[next(extra) % len(_EXTRA)]
    return out


def device_color(device: int, num_devices: int) -> str | tuple:
    """Colour of device number ``device``: Tol muted for up to 10 devices, a sampled
    sequential map beyond (no two of up to 64 devices share a colour)."""
    if num_devices <= len(DEVICE_COLORS):
        return DEVICE_COLORS[device]
    from matplotlib import colormaps
    return colormaps["turbo"](0.05 + 0.9 * device / max(1, num_devices - 1))


def block_places(geometry) -> tuple[int, ...]:
    """Each replica group's palette place: its row-major index in the block grid (the
    pieces along each tensor dim), bumped by its row where a grid row is a multiple of
    ``len(BLOCK_COLORS)`` long, so blocks sharing an edge never share a colour."""
    import math
    n, p = geometry.global_shape, len(BLOCK_COLORS)
    grid = [s // max(1, l) for s, l in zip(n, geometry.local_shape)]
    strides = [math.prod(grid[i + 1:]) for i in range(len(grid))]
    places = []
    for devices in geometry.replica_groups:
        c = geometry.block_index(devices[0])
        flat = sum(ci * si for ci, si in zip(c, strides))
        bump = sum(ci for ci, si in zip(c, strides) if si % p == 0 and si > 1)
        places.append(flat + bump)
    return tuple(places)


def block_style(place: int) -> tuple[str, str, object]:
    """``(colour, hatch, linestyle)`` of palette place ``place`` (see ``block_places``):
    the colour repeats every ``len(BLOCK_COLORS)`` places, the hatch and line style
    tell the rounds apart."""
    p = len(BLOCK_COLORS)
    k = place // p
    return (BLOCK_COLORS[place % p], BLOCK_HATCHES[k % len(BLOCK_HATCHES)],
            BLOCK_LINESTYLES[k % len(BLOCK_LINESTYLES)])


def block_styles(geometry) -> tuple[tuple[str, str, object], ...]:
    """``(colour, hatch, linestyle)`` of every replica group of ``geometry``.

    >>> from dtsgd_viz.specs import LayoutSpec, MeshSpec
    >>> from dtsgd_viz.geometry import shard_geometry
    >>> g = shard_geometry((4, 4), LayoutSpec(("x", "y"), MeshSpec.create({"x": 2, "y": 2})))
    >>> [c for c, _, _ in block_styles(g)] == BLOCK_COLORS[:4]
    True
    """
    return tuple(block_style(p) for p in block_places(geometry))


def block_device_colors(geometry) -> tuple[str, ...]:
    """Each device's colour: the colour of the block it holds (replicas share it)."""
    styles = block_styles(geometry)
    return tuple(styles[g][0] for g in geometry.group_of)
