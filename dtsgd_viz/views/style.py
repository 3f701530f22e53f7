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
