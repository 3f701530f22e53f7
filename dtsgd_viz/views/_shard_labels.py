"""The names on the norm panel of ``ShardsView``, and its band: each block's line named at
its right end, outside the axes, the names at least a text height apart
(``direct_labels.READABLE_GAP``) with a leader line from the line's end to a name that
had to move (``direct_labels.leaders``).

When five or more blocks' lines nearly coincide (``_shard_stats.band_of``), eight
tangled lines say less than their summary: the panel draws one grey band (min..max over
the blocks at each update) with its median line, and keeps as lines in their block
colours only the two extremes, the slowest and the fastest block (the one the title
names), each named with its role ("CPU:7 slowest"); the band is named "median of 8".
Lines that fan out (blocks that differ) stay drawn one by one.

``NormLabels`` holds methods of ``ShardsView`` (a mixin, as ``NormLines``); it reads
``line_ax``, ``_data``, ``styles``, ``patches`` and ``updates``.
"""

from __future__ import annotations

import numpy as np

from . import style
from ._shard_stats import _end_values, _factors, band_of, slow_fast

BAND_COLOR = "#BBBBBB"      # light grey: the blocks' range (no block colour is grey)
MEDIAN_COLOR = "#555555"    # dark grey: their median
LABEL_X = 1.05              # axes fraction: the names, right of the leader lines
NAME_SIZE = style.NOTE_SIZE + 0.5


def _roles(data) -> dict:
    """The blocks drawn as lines over a band: the one highest and the one lowest over
    the run (median log norm), and the slowest when the title names it (its factor
    over 3x apart, ``change_text``); each with the words that say why.

    >>> t = np.linspace(0, 1, 5)[:, None]
    >>> _roles(np.exp(-t * [2.0, 1.0, 8.0]) * [1.0, 2.0, 1.5])
    {1: 'highest, slowest', 2: 'lowest'}
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.where(np.isfinite(data) & (data > 0), np.log10(data), np.nan)
    ok = np.isfinite(logs).any(0)
    if ok.sum() < 2:
        return {}
    level = np.array([np.nanmedian(c) if np.isfinite(c).any() else np.nan for c in logs.T])
    roles = {int(np.nanargmax(level)): ["highest"], int(np.nanargmin(level)): ["lowest"]}
    sf = slow_fast(data)
    if sf is not None:
        factors = _factors(data)[1]
        if factors.max() / factors.min() > 3:
            roles.setdefault(sf[0], []).append("slowest")
    return {g: ", ".join(w) for g, w in sorted(roles.items())}


class NormLabels:
    """``ShardsView``'s end labels and band (a mixin: see the module docstring)."""

    def _set_band(self) -> None:
        """Band or lines for the norm panel's current data, in place (again after
        ``set_kind``): the artists of the last band are removed first."""
        ax = self.line_ax
        for artist in getattr(self, "band_artists", []):
            artist.remove()
        self.band_artists, self.band_blocks = [], None
        band = None if self.stats_only else band_of(self._data[ax])
        roles = _roles(self._data[ax]) if band is not None else None
        if roles:
            lo, med, hi = band
            x = self.updates
            ok = np.isfinite(lo) & np.isfinite(hi)
            self.band_artists = [
                ax.fill_between(x, lo, hi, where=ok, color=BAND_COLOR, alpha=0.55, lw=0,
                                zorder=1.5, gid="norm-band"),
                ax.plot(*self._thinned(ax, med), color=MEDIAN_COLOR, lw=1.8, zorder=2.5,
                        gid="norm-median")[0]]
            self.band_blocks = roles  # block -> what sets it apart
        for g, line in enumerate(self.lines):
            line.set_visible(self.band_blocks is None or g in self.band_blocks)
        for t in getattr(self, "end_labels", None) or []:
            t.remove()
        self.end_labels = None

    def _label_entries(self):
        """``(text, colour, y at the right end)`` of each name to write; block names in
        ``end_labels`` order (hidden ones have y None), then the band's."""
        data = self._data[self.line_ax]
        ends = _end_values(data, -1)
        band = getattr(self, "band_blocks", None)
        out = []
        for g, (p, (color, _, _)) in enumerate(zip(self.patches, self.styles)):
            if band is None:
                out.append((p.label, color, ends[g]))
            else:
                role = band.get(g)
                out.append((f"{p.label} {role}" if role else p.label, color,
                            ends[g] if role else None))
        if band is not None:
            med = self.band_artists[1].get_ydata()
            finite = np.asarray(med)[np.isfinite(med)]
            out.append((f"median of {len(self.patches)}", MEDIAN_COLOR,
                        finite[-1] if len(finite) else None))
        return out

    def place_end_labels(self) -> None:
        """Name each drawn line at its right end, outside the axes, the names pushed
        apart (``direct_labels.spread``) at least a text height, a leader line to each
        name that moved; again after the layout or the data changed."""
        from matplotlib.transforms import blended_transform_factory
        from .direct_labels import READABLE_GAP, axes_height_points, leaders, spread
        ax = getattr(self, "line_ax", None)
        if ax is None or not self._direct():
            return
        entries = self._label_entries()
        if not getattr(self, "end_labels", None):
            trans = blended_transform_factory(ax.transAxes, ax.transAxes)
            self.end_labels = [
                ax.text(LABEL_X, 0.5, text, transform=trans, ha="left", va="center",
                        fontsize=NAME_SIZE, color=color, fontweight="bold", clip_on=False,
                        gid=f"end-label-{g}" if g < len(self.patches) else "end-label-median")
                for g, (text, color, _) in enumerate(entries)]
        for line in getattr(self, "leader_lines", []):
            line.remove()
        lo, hi = ax.get_ylim()
        log = ax.get_yscale() == "log"
        fracs, shown = [], []
        for g, (_, _, y) in enumerate(entries):
            if y is None or not np.isfinite(y) or (log and y <= 0):
                continue
            f = ((np.log10(y) - np.log10(lo)) / (np.log10(hi) - np.log10(lo)) if log
                 else (y - lo) / (hi - lo))
            fracs.append(float(np.clip(f, 0.0, 1.0)))
            shown.append(g)
        gap = READABLE_GAP * NAME_SIZE / axes_height_points(ax)
        placed = dict(zip(shown, spread(fracs, gap, 0.02, 0.98)))
        for g, text in enumerate(self.end_labels):
            text.set_visible(g in placed)
            if g in placed:
                text.set_y(placed[g])
        x0, x1 = ax.get_xlim()   # from the lines' last update, not the frame
        start = float(np.clip((self.updates[-1] - x0) / (x1 - x0), 0.0, 1.0))
        self.leader_lines = leaders(ax, fracs, [placed[g] for g in shown],
                                    [entries[g][1] for g in shown], x0=start,
                                    x1=LABEL_X - 0.006,
                                    min_shift=0.25 * gap, gid="end-leader")
