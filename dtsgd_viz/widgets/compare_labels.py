"""Where ``CompareWidget`` writes its labels: the tolerance's name on its line where no
other line crosses it (``place_on_line``), and each run's name beside its path
(``name_paths``), both at the first spot (``free_spot``) no line (``line_points``) and
no other text is in.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..views.core import style
from ..views.paths.geometry import rule_name

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.lines import Line2D
    from matplotlib.text import Annotation

__all__ = ["line_points", "free_spot", "place_on_line", "place_point_names", "name_paths"]


# ---- the tolerance's label: on its line, where no other line crosses it ----------------


def _renderer(ax: Axes) -> Any:
    """The renderer of the (Agg) canvas ``ax`` is drawn on."""
    # the Agg canvas has get_renderer; matplotlib's stub types the canvas as the base class
    return ax.figure.canvas.get_renderer()  # pyright: ignore[reportAttributeAccessIssue]


def line_points(ax: Axes, exclude: Collection[Any] = (), spacing: float = 2.0) -> np.ndarray:
    """``(n, 2)`` display points along every line of ``ax`` but ``exclude``, at most
    ``spacing`` pixels apart (a box holding none of them is crossed by no line)."""
    out = [np.zeros((0, 2))]
    for line in ax.lines:
        if line in exclude or not line.get_visible():
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            xy = ax.transData.transform(np.asarray(line.get_xydata(), np.float64))
        ok = np.all(np.isfinite(xy), axis=1)
        for a, b, good in zip(xy[:-1], xy[1:], ok[:-1] & ok[1:]):
            if good and line.get_linestyle() not in ("None", "none", ""):
                n = max(2, int(np.ceil(np.hypot(*(b - a)) / spacing)) + 1)
                out.append(a + np.linspace(0.0, 1.0, n)[:, None] * (b - a))
        out.append(xy[ok])  # the markers (and a line of one point)
    return np.concatenate(out)


def free_spot(candidates: ArrayLike, points: ArrayLike, boxes: Sequence[Sequence[float]] = (), pad: float = 1.5) -> int:
    """The index of the first of ``candidates`` (``(n, 4)`` display boxes ``x0, y0, x1,
    y1``) holding none of ``points`` and overlapping none of ``boxes``; none free: the
    one with the fewest points in it."""
    c = np.asarray(candidates, np.float64).reshape(-1, 4)
    p = np.asarray(points, np.float64).reshape(-1, 2)
    x0, y0, x1, y1 = (c[:, i : i + 1] for i in range(4))
    inside = ((p[:, 0] >= x0 - pad) & (p[:, 0] <= x1 + pad) & (p[:, 1] >= y0 - pad) & (p[:, 1] <= y1 + pad)).sum(axis=1)
    for b in boxes:
        inside += 1000 * ((c[:, 0] < b[2]) & (c[:, 2] > b[0]) & (c[:, 1] < b[3]) & (c[:, 3] > b[1]))
    free = np.flatnonzero(inside == 0)
    return int(free[0]) if len(free) else int(np.argmin(inside))


def _wrapped(text: str) -> list:
    """``text`` as written, then on two lines: broken before its bracket (a number in
    brackets stays whole), then at the space that makes its longer line shortest; a
    narrower label fits between lines a one-line one would touch."""
    words = text.split(" ")
    splits = [(" ".join(words[:i]), " ".join(words[i:])) for i in range(1, len(words))]
    if not splits:
        return [text]
    brackets = [ab for ab in splits if ab[1].startswith("(")]
    even = min(splits, key=lambda ab: max(len(ab[0]), len(ab[1])))
    out = [text] + [a + "\n" + b for a, b in brackets[-1:] + [even]]
    return list(dict.fromkeys(out))


def _box_size(label, renderer) -> tuple[float, float, float, float]:
    """Pixels of ``label`` as drawn: the width and height of its white box (its pad
    included; the text's if it has none) plus 1 px each side, and the pad's x and y."""
    text = label.get_window_extent(renderer)
    patch = label.get_bbox_patch()
    if patch is None:
        return text.width + 2.0, text.height + 2.0, 0.0, 0.0
    if hasattr(label, "update_positions"):
        label.update_positions(renderer)
    label.update_bbox_position_size(renderer)
    box = patch.get_window_extent(renderer)
    px, py = max(0.0, (box.width - text.width) / 2), max(0.0, (box.height - text.height) / 2)
    return text.width + 2 * px + 2.0, text.height + 2 * py + 2.0, px, py


def place_on_line(ax: Axes, label: Annotation, y: float, gap: float = 3.0, step: float = 4.0) -> None:
    """Move ``label`` (an annotation on the horizontal line at data ``y``) to the
    leftmost spot just above or below the line where no other line of ``ax`` crosses
    its white box and no other text is (``free_spot``, against every other line's
    points ``line_points``, 2 px apart); where no spot is free for its text on one line,
    on two (``_wrapped``); none free: the spot fewest lines cross."""
    renderer = _renderer(ax)
    frame = ax.get_window_extent(renderer)
    with np.errstate(invalid="ignore", divide="ignore"):
        ty = ax.transData.transform((ax.get_xlim()[0], y))[1]
    if not np.isfinite(ty):
        return
    g = gap * ax.figure.dpi / 72.0  # the offset's pixels
    tol_line = [ln for ln in ax.lines if ln.get_gid() == "tolerance"]
    points = line_points(ax, tol_line)
    texts = [t.get_window_extent(renderer) for t in ax.texts if t is not label and t.get_visible()]
    texts = [(b.x0, b.y0, b.x1, b.y1) for b in texts]
    label.set_position((0.0, 0.0))
    label.xyann = (0.0, gap)
    label.set_verticalalignment("bottom")
    best = None  # (points in the box, text, candidate)
    for text in _wrapped(label.get_text()):
        label.set_text(text)
        w, h, pad_x, pad_y = _box_size(label, renderer)
        xs = np.arange(frame.x0 + 3.0, frame.x1 - w - 2.0, step)
        # the white box's edge 1 px out: the text's foot (above) or top (below) ``g`` off the line
        sides = [(ty + g - pad_y - 1.0, ty + g - pad_y - 1.0 + h), (ty - g + pad_y + 1.0 - h, ty - g + pad_y + 1.0)]
        cands = [(x, lo, x + w, hi) for x in xs for lo, hi in sides if lo >= frame.y0 and hi <= frame.y1]
        if not cands:
            continue
        k = free_spot(cands, points, texts)
        n = 0 if _is_free(cands[k], points, texts) else max(1, _count(cands[k], points))
        if best is None or n < best[0]:
            best = (n, text, cands[k], pad_x)
        if n == 0:
            break
    if best is None:  # no room in the frame: as it was written
        label.set_text(label.get_text().replace("\n", " "))
        return
    _, text, (x0, lo, _, hi), pad_x = best
    label.set_text(text)
    above = lo + hi > 2 * ty
    label.xy = ((x0 + 1.0 + pad_x - frame.x0) / frame.width, y)  # the text's left edge
    label.xyann = (0.0, gap if above else -gap)
    label.set_verticalalignment("bottom" if above else "top")


def _count(box, points, pad=1.5) -> int:
    x0, y0, x1, y1 = box
    p = np.asarray(points, np.float64).reshape(-1, 2)
    return int(
        np.count_nonzero((p[:, 0] >= x0 - pad) & (p[:, 0] <= x1 + pad) & (p[:, 1] >= y0 - pad) & (p[:, 1] <= y1 + pad))
    )


# ---- the start's and the minimum's names: beside their marks, off every path -------------

RADII = (3.0, 6.0, 10.0, 15.0, 21.0, 28.0, 36.0, 45.0, 56.0)  # pixels from a mark's edge to its name
DIRECTIONS = ((1, 1), (-1, 1), (1, -1), (-1, -1), (1, 0), (-1, 0), (0, 1), (0, -1))  # up-right first


def _mark_boxes(ax, exclude=()) -> list:
    """Display boxes of the markers of every line of ``ax`` but ``exclude`` (the start's
    circle, the minimum's star): a name over none of them hides no mark."""
    out = []
    for line in ax.lines:
        if line in exclude or not line.get_visible() or line.get_marker() in (None, "None", "none", ""):
            continue
        r = 0.5 * line.get_markersize() * ax.figure.dpi / 72.0 + 1.0
        with np.errstate(invalid="ignore", divide="ignore"):
            xy = ax.transData.transform(np.asarray(line.get_xydata(), np.float64))
        out += [(x - r, y - r, x + r, y + r) for x, y in xy[np.all(np.isfinite(xy), axis=1)]]
    return out


def place_point_names(ax: Axes, names: Mapping[str, Annotation]) -> list:
    """Move each of ``names`` (annotations of a point: the start's and the minimum's,
    ``{gid: Annotation}``) to the spot nearest its mark, up and right of it first, where
    its white box holds no point of any line (``line_points``), covers no marker and
    overlaps no other text (``free_spot``); its leader shows only when it stands off the
    mark. Call on the laid-out figure, before ``name_paths``. Returns the names moved."""
    renderer = _renderer(ax)
    frame = ax.get_window_extent(renderer)
    px = ax.figure.dpi / 72.0
    points = line_points(ax)
    marks = _mark_boxes(ax)
    out = []
    for ann in [a for a in names.values() if a.get_visible()]:
        with np.errstate(invalid="ignore", divide="ignore"):
            at = ax.transData.transform(np.asarray(ann.xy, np.float64))
        if not np.all(np.isfinite(at)):
            continue
        mark = max(
            [
                0.5 * ln.get_markersize() * px
                for ln in ax.lines
                if ln.get_marker() not in (None, "None", "none", "")
                and len(line_xy := np.asarray(ln.get_xydata()))
                and np.allclose(line_xy[0], ann.xy)
            ],
            default=3.0,
        )
        ann.set_horizontalalignment("center")
        ann.set_verticalalignment("center")
        ann.xyann = (0.0, 0.0)
        w, h, _, _ = _box_size(ann, renderer)
        others = [t.get_window_extent(renderer) for t in ax.texts if t is not ann and t.get_visible()]
        own = [m for m in marks if np.hypot((m[0] + m[2]) / 2 - at[0], (m[1] + m[3]) / 2 - at[1]) < 1.0]
        taken = [m for m in marks if m not in own] + [(b.x0, b.y0, b.x1, b.y1) for b in others]
        cands = []
        for r in RADII:
            d = mark + r
            for dx, dy in DIRECTIONS:
                cx = at[0] + dx * (d + w / 2) if dx else at[0]
                cy = at[1] + dy * (d + h / 2) if dy else at[1]
                if dx and dy:  # a corner: the box's near corner on the circle of radius d
                    cx, cy = at[0] + dx * (d / np.sqrt(2) + w / 2), at[1] + dy * (d / np.sqrt(2) + h / 2)
                box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
                if frame.x0 <= box[0] and box[2] <= frame.x1 and frame.y0 <= box[1] and box[3] <= frame.y1:
                    cands.append(box)
        if not cands:
            continue
        x0, y0, x1, y1 = cands[free_spot(cands, points, taken)]
        ann.xyann = (((x0 + x1) / 2 - at[0]) / px, ((y0 + y1) / 2 - at[1]) / px)
        if ann.arrow_patch is not None:  # a leader only where the name stands off its mark
            near = np.hypot(*(np.clip(at, (x0, y0), (x1, y1)) - at))
            ann.arrow_patch.set_visible(bool(near > mark + 8.0))
        out.append(ann)
    return out


GAPS = (4.0, 9.0, 15.0)  # points between a path and its name: beside it, then farther on a leader
CORNER = 14.0  # pixels: a name's foot on its path this near a corner is at the corner
CANDIDATES = 150  # the path's points (farthest from the other paths first) a name may stand by


def _at_vertex(centre, xy, turn=20.0) -> tuple[bool, np.ndarray]:
    """Whether the point of the polyline ``xy`` (display) nearest ``centre`` is one of
    its corners (a vertex where it turns by more than ``turn`` degrees, or an end): a
    name there reads as naming that corner (the first update's overshoot) and hides it;
    and that nearest point."""
    xy = xy[np.all(np.isfinite(xy), axis=1)]
    if len(xy) < 2:
        return True, (xy[0] if len(xy) else np.asarray(centre, np.float64))
    a, b = xy[:-1], xy[1:]
    d = b - a
    L2 = np.maximum((d**2).sum(axis=1), 1e-12)
    t = np.clip(((centre - a) * d).sum(axis=1) / L2, 0.0, 1.0)
    foot = a + t[:, None] * d
    k = int(np.argmin(np.hypot(*(foot - centre).T)))
    if 0.0 < t[k] < 1.0:  # on a stretch: a corner only if within CORNER px of one
        u, w = d[:-1], d[1:]
        cos = (u * w).sum(axis=1) / np.maximum(np.hypot(*u.T) * np.hypot(*w.T), 1e-12)
        corners = np.concatenate([xy[:1], xy[1:-1][np.degrees(np.arccos(np.clip(cos, -1, 1))) > turn], xy[-1:]])
        return bool(np.min(np.hypot(*(corners - foot[k]).T)) < CORNER), foot[k]
    v = k + int(t[k] >= 1.0)  # the vertex nearest
    if v == 0 or v == len(xy) - 1:
        return True, xy[v]
    u, w = xy[v] - xy[v - 1], xy[v + 1] - xy[v]
    cos = float(u @ w) / max(float(np.hypot(*u) * np.hypot(*w)), 1e-12)
    return bool(np.degrees(np.arccos(np.clip(cos, -1.0, 1.0))) > turn), xy[v]


def name_paths(
    ax: Axes,
    paths: Mapping[str, Line2D],
    colors: Mapping[str, str],
    fontsize: float = style.LABEL_SIZE,
    gaps: Sequence[float] = GAPS,
) -> list:
    """Write each run's name beside its path (``paths``: ``{config: Line2D}``), where
    no line of ``ax`` and no other text crosses it (``free_spot``), beside a stretch of
    the path rather than at one of its corners (``_at_vertex``), preferring the point
    of the path farthest from the other paths: the name reads as that path's. The
    nearest of ``gaps`` (points) where such a spot is free; a name farther than the
    first gets a short leader to its path. Returns the names (gid
    ``path-name:<config>``; leaders ``path-leader:<config>``)."""
    renderer = _renderer(ax)
    frame = ax.get_window_extent(renderer)
    texts = [t.get_window_extent(renderer) for t in ax.texts if t.get_visible()]
    taken = [(b.x0, b.y0, b.x1, b.y1) for b in texts]
    every = line_points(ax)
    px = ax.figure.dpi / 72.0
    near = lambda p, q: np.min(np.hypot(*(q - p).T)) if len(q) else np.inf  # noqa: E731
    out = []
    for key, line in paths.items():
        own = line_points(ax, [ln for ln in ax.lines if ln is not line], spacing=4.0)
        others = line_points(ax, [line] + [ln for ln in ax.lines if ln not in paths.values()])
        if not len(own):
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            xy = ax.transData.transform(np.asarray(line.get_xydata(), np.float64))
        far = (
            np.min(np.hypot(*(own[:, None, :] - others[None, :, :]).transpose(2, 0, 1)), axis=1)
            if len(others)
            else np.zeros(len(own))
        )
        name = rule_name(key)
        text = ax.text(
            0.5,
            0.5,
            name,
            fontsize=fontsize,
            fontweight="bold",
            color=colors[key],
            ha="center",
            va="center",
            gid=f"path-name:{key}",
            zorder=8,
            transform=ax.transAxes,
            bbox=dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8),
        )
        size = text.get_window_extent(renderer)  # as drawn, plus its white box's pad
        pad = 0.1 * fontsize * px + 1.0
        w, h = size.width + 2 * pad, size.height + 2 * pad
        # tiers, each at the gaps in turn: beside a stretch of its own (nearer it than any
        # other path), beside a stretch it shares (on a leader: the leader says whose), at a
        # corner; the first tier with a free spot is taken
        tiers = [[] for _ in range(3 * len(gaps))]
        for n, gap in enumerate(gaps):
            g = gap * px
            for i in np.argsort(-far)[:CANDIDATES]:
                x, y = own[i]
                for bx, by in ((x + g, y + g), (x - g - w, y + g), (x + g, y - g - h), (x - g - w, y - g - h)):
                    if not (frame.x0 <= bx and bx + w <= frame.x1 and frame.y0 <= by and by + h <= frame.y1):
                        continue
                    c = np.array([bx + w / 2, by + h / 2])
                    corner, foot = _at_vertex(c, xy)
                    tier = 2 if corner else 0 if near(c, own) < 0.8 * near(c, others) else 1
                    tiers[tier * len(gaps) + n].append(((bx, by, bx + w, by + h), foot, n > 0 or tier == 1))
        chosen = None
        for tier in tiers:
            if tier:
                k = free_spot([b for b, _, _ in tier], every, taken)
                if chosen is None:
                    chosen = tier[k]
                if _is_free(tier[k][0], every, taken):  # else the next tier may have one
                    chosen = tier[k]
                    break
        if chosen is None:
            text.remove()
            continue
        (x0, y0, x1, y1), anchor, lead = chosen
        inv = ax.transData.inverted()
        text.set_transform(ax.transData)
        tx, ty = inv.transform(((x0 + x1) / 2, (y0 + y1) / 2))
        text.set_position((tx, ty))
        real = text.get_window_extent(renderer)  # where it now stands
        edge = np.clip(anchor, (real.x0, real.y0), (real.x1, real.y1))  # its point nearest the path
        if lead and np.hypot(*(edge - np.asarray(anchor))) > 2.0 * px:
            ax.plot(*inv.transform([edge, anchor]).T, color=colors[key], lw=0.9, zorder=7.9, gid=f"path-leader:{key}")
        out.append(text)
        taken.append((real.x0, real.y0, real.x1, real.y1))
    return out


def _is_free(box, points, boxes, pad=1.5) -> bool:
    """Whether ``box`` holds none of ``points`` (within ``pad``) and overlaps none of ``boxes``."""
    x0, y0, x1, y1 = box
    p = np.asarray(points, np.float64).reshape(-1, 2)
    hit = np.any((p[:, 0] >= x0 - pad) & (p[:, 0] <= x1 + pad) & (p[:, 1] >= y0 - pad) & (p[:, 1] <= y1 + pad))
    return not hit and not any(x0 < b[2] and x1 > b[0] and y0 < b[3] and y1 > b[1] for b in boxes)
