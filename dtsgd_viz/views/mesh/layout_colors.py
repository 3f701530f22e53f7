"""Colours of the layout view's blocks past ``BLOCK_COLORS`` (by mesh coordinate, in CIELCh) and of their text."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from matplotlib.colors import to_rgb

if TYPE_CHECKING:
    from matplotlib.typing import ColorType

    from ...geometry import ShardGeometry

HUE_START, HUE_SPAN = 20.0, 300.0  # degrees of CIELCh: red through yellow, green, blue to purple
CHROMA = 46.0
TEXT_LIGHTNESS = 58.0  # CIE L*: white text on darker blocks, black on lighter ones
# lightness along the second mesh dim, clear of TEXT_LIGHTNESS: one text colour per level even after gamut clipping
LEVELS = {1: (56.0,), 2: (40.0, 76.0), 3: (36.0, 66.0, 84.0), 4: (34.0, 48.0, 68.0, 84.0)}
ONE_DIM_LEVELS = 3  # one sharding mesh dim: lightness cycles, so same-lightness blocks sit 3 hues apart


def _lch_to_rgb(lightness: float, chroma: float, hue_deg: float) -> tuple[float, float, float]:
    """CIE LCh(ab) to sRGB (D65), clipped into the gamut."""
    a, b = chroma * math.cos(math.radians(hue_deg)), chroma * math.sin(math.radians(hue_deg))
    fy = (lightness + 16) / 116
    fx, fz = fy + a / 500, fy - b / 200

    def finv(t):
        return t**3 if t > 6 / 29 else 3 * (6 / 29) ** 2 * (t - 4 / 29)

    x, y, z = 0.95047 * finv(fx), finv(fy), 1.08883 * finv(fz)
    rgb = (
        3.2406 * x - 1.5372 * y - 0.4986 * z,
        -0.9689 * x + 1.8758 * y + 0.0415 * z,
        0.0557 * x - 0.2040 * y + 1.0570 * z,
    )

    def gamma(c):
        c = min(1.0, max(0.0, c))
        return 12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055

    r, g, b = (round(gamma(c), 4) for c in rgb)
    return r, g, b


def lightness_of(color: ColorType) -> float:
    """CIE L* (0 black .. 100 white) of a matplotlib colour."""

    def linear(c):
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(c) for c in to_rgb(color))
    y = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return 116 * y ** (1 / 3) - 16 if y > (6 / 29) ** 3 else y * (29 / 3) ** 3


def text_color_for(color: ColorType) -> str:
    return "white" if lightness_of(color) < TEXT_LIGHTNESS else "black"


def levels(n: int) -> tuple[float, ...]:
    """``n`` lightness levels, dark to light, none within 6 of ``TEXT_LIGHTNESS``."""
    out = [34.0 + 50.0 * k / max(1, n - 1) for k in range(n)]
    out = [TEXT_LIGHTNESS + math.copysign(6, v - TEXT_LIGHTNESS) if abs(v - TEXT_LIGHTNESS) < 6 else v for v in out]
    return LEVELS.get(n, tuple(out))


def grid_color(i: int, n_i: int, j: int, n_j: int) -> tuple[float, float, float]:
    """Cell ``(i, j)`` of an ``n_i x n_j`` grid: hue along ``i`` (no wrap), lightness ``levels(n_j)[j]``."""
    hue = HUE_START + HUE_SPAN * i / max(1, n_i - 1)
    return _lch_to_rgb(levels(n_j)[j], CHROMA, hue)


def mesh_colors(geometry: ShardGeometry) -> tuple[tuple[float, float, float], ...]:
    """Each replica group's colour: hue along the larger sharding mesh dim, lightness along the other."""
    layout = geometry.layout
    mesh = layout.mesh
    used = [d for d in mesh.dim_names if d in layout.sharding_specs and mesh.dim_size(d) > 1]
    used = used[-2:]  # the last two vary fastest
    sizes = [mesh.dim_size(d) for d in used]
    out = []
    for devices in geometry.replica_groups:
        coords = mesh.device_coords(devices[0])
        c = [coords[mesh.dim_names.index(d)] for d in used]
        if len(used) == 2:
            (hi, n_hi), (lo, n_lo) = sorted(zip(c[::-1], sizes[::-1]), key=lambda t: -t[1])  # ties: hue along the last
            out.append(grid_color(hi, n_hi, lo, n_lo))
        elif len(used) == 1:
            out.append(grid_color(c[0], sizes[0], c[0] % ONE_DIM_LEVELS, ONE_DIM_LEVELS))
        else:
            out.append(grid_color(0, 1, 0, 1))
    if len(set(out)) < len(out):  # mesh dims past the last two repeat colours: by group
        n = len(out)
        k = 4 if n > 16 else ONE_DIM_LEVELS
        out = [grid_color(g // k, -(-n // k), g % k, k) for g in range(n)]
    return tuple(out)
