"""``CompareWidget``'s figure as the tutorial shows it (notebook 03, the app): each run's
name beside a stretch of its path, never on a corner; the headline in the table's
numbers."""

import re

import matplotlib
import numpy as np
import pytest

from dtsgd_viz import surfaces
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.widgets.compare import CompareWidget

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # notebook 03's and the app's


@pytest.fixture(scope="module")
def widget():
    return CompareWidget(SURFACE, learning_rate=0.05, momentum=0.9, steps=60, background=False)


def _corners(xy, turn=20.0):
    """The vertices (pixels) where the polyline ``xy`` turns by more than ``turn``
    degrees, and its two ends."""
    d = np.diff(xy, axis=0)
    cos = (d[:-1] * d[1:]).sum(axis=1) / np.maximum(np.hypot(*d[:-1].T) * np.hypot(*d[1:].T), 1e-12)
    bent = np.degrees(np.arccos(np.clip(cos, -1, 1))) > turn
    return np.concatenate([xy[:1], xy[1:-1][bent], xy[-1:]])


def _nearest_on(xy, p):
    a, b = xy[:-1], xy[1:]
    d = b - a
    t = np.clip(((p - a) * d).sum(axis=1) / np.maximum((d**2).sum(axis=1), 1e-12), 0, 1)
    foot = a + t[:, None] * d
    return foot[np.argmin(np.hypot(*(foot - p).T))]


@pytest.mark.slow
def test_run_names_cover_no_path_vertex_and_stand_off_every_corner(widget):
    ax = widget.view.artists.ax_path
    fig = ax.figure
    r = fig.canvas.get_renderer()
    paths = {k: ax.transData.transform(line.get_xydata()) for k, line in widget.view.artists.paths.items()}
    names = {t.get_gid()[len("path-name:") :]: t for t in ax.texts if (t.get_gid() or "").startswith("path-name:")}
    assert set(names) == set(paths) and all(t.get_text() == rule_name(k) for k, t in names.items())
    boxes = {k: t.get_window_extent(r) for k, t in names.items()}
    for key, box in boxes.items():
        for other, xy in paths.items():  # no vertex of any path (the plain run's corner) under a name
            inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
            assert not inside.any(), (key, "covers a vertex of", other)
        for other in boxes:
            assert other == key or not box.overlaps(boxes[other])
        # where the name points at its path (its leader's end, or the path's point nearest it)
        leader = [ln for ln in ax.lines if ln.get_gid() == f"path-leader:{key}"]
        centre = np.array([(box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2])
        foot = ax.transData.transform(leader[0].get_xydata())[-1] if leader else _nearest_on(paths[key], centre)
        assert np.hypot(*(_nearest_on(paths[key], foot) - foot)) < 2.0  # on its own path
        # not at a corner: Nesterov's not at its first update's overshoot
        gap = np.min(np.hypot(*(_corners(paths[key]) - foot).T))
        assert gap >= 10.0, (key, gap)
        if leader:  # a leader joins the name to its path: from the name's box edge, in its colour
            start = ax.transData.transform(leader[0].get_xydata())[0]
            assert box.x0 - 1 <= start[0] <= box.x1 + 1 and box.y0 - 1 <= start[1] <= box.y1 + 1
            assert leader[0].get_color() == names[key].get_color()


# the window first, then the best run after the colon and its ratios to the next two
HEADLINE = r"Lowest mean loss over k = (\d+)–(\d+): (\w+), (\d+)× below (\w+), (\d+)× below (\w+)$"


@pytest.mark.slow
def test_headline_says_the_tables_numbers(widget):
    """The headline's ratios are those of the table's means over the last updates (the
    loss after k = 51..60 updates), never of one point of momentum's saw-tooth."""
    from dtsgd_viz.views.core.figure import headline_texts

    finding = " ".join(headline_texts(widget.figure)[0].split())
    rows = {rule_name(r.name): r for r in widget.rows}
    m = re.match(HEADLINE, finding)
    assert m, finding
    assert (int(m[1]), int(m[2])) == (51, 60)
    assert ">mean loss after 51–60 updates<" in widget.table.value and ">loss after 60 updates<" in widget.table.value
    for key, rec in widget.recordings.items():  # numpy on the recorded parameters
        after = SURFACE.value_np(rec.path("w").astype(np.float64))
        assert widget.rows[list(widget.recordings).index(key)].mean_loss == pytest.approx(after[51:].mean(), rel=1e-12)
    best = rows[m[3]]
    for times, name in ((m[4], m[5]), (m[6], m[7])):
        assert int(times) == round(rows[name].mean_loss / best.mean_loss)  # the table's means' ratio
        assert f">{rows[name].mean_loss:.2e}<" in widget.table.value
        assert f">{rows[name].final_loss:.2e}<" in widget.table.value


def test_loss_lines_end_on_the_tables_and_the_headlines_numbers(widget):
    """One number each: the loss panel's last point is the table's "loss after 60
    updates", and the headline's ratios are the ratios of the lines' means over the
    shaded window (each run's bar across it)."""
    from dtsgd_viz.views.core.figure import headline_texts

    ax = widget.view.artists.ax_loss
    lines = widget.view.artists.loss_lines
    rows = {r.name: r.final_loss for r in widget.rows}
    assert set(lines) == set(rows)
    bars = {ln.get_gid()[len("loss-mean:") :]: ln for ln in ax.lines if (ln.get_gid() or "").startswith("loss-mean:")}
    for key, line in lines.items():
        x, y = np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)
        np.testing.assert_array_equal(x, np.arange(61))  # after 0, 1, ..., 60 updates
        assert y[-1] == rows[key]  # the table's loss after 60 updates
        assert y[0] == pytest.approx(float(SURFACE.value_np(widget.recordings[key].path("w")[0])))
        assert bars[key].get_ydata()[0] == pytest.approx(y[51:].mean(), rel=1e-12)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("updates made (k)", "loss after k updates")
    finding = " ".join(headline_texts(widget.figure)[0].split())
    m = re.match(HEADLINE, finding)
    means = {rule_name(k): float(np.mean(line.get_ydata()[51:])) for k, line in lines.items()}
    assert m, finding
    assert (int(m[1]), int(m[2])) == (51, 60)  # the shaded window the bars span
    for times, name in ((m[4], m[5]), (m[6], m[7])):
        assert int(times) == round(means[name] / means[m[3]])  # the plotted lines' means' ratio


def _names_clear(widget):
    """The start's and the minimum's white boxes hold no point of any path (densified
    every 1 px) and cover no marker but their own, and overlap no other text."""
    from dtsgd_viz.widgets.compare import line_points

    ax = widget.view.artists.ax_path
    widget.figure.canvas.draw()
    r = widget.figure.canvas.get_renderer()
    paths = [ln for ln in ax.lines if (ln.get_gid() or "").startswith("path:")]
    pts = line_points(ax, [ln for ln in ax.lines if ln not in paths], spacing=1.0)
    names = {t.get_gid(): t for t in ax.texts if t.get_gid() in ("start-label", "minimum-label")}
    assert set(names) == {"start-label", "minimum-label"}
    for gid, ann in names.items():
        box = ann.get_bbox_patch().get_window_extent(r)
        hits = pts[(pts[:, 0] >= box.x0) & (pts[:, 0] <= box.x1) & (pts[:, 1] >= box.y0) & (pts[:, 1] <= box.y1)]
        assert not len(hits), (gid, box.bounds, hits[:3])
        for mark in ("start", "minimum"):
            (line,) = [ln for ln in ax.lines if ln.get_gid() == mark]
            x, y = ax.transData.transform(line.get_xydata()[0])
            rad = 0.5 * line.get_markersize() * widget.figure.dpi / 72.0
            assert x + rad < box.x0 or x - rad > box.x1 or y + rad < box.y0 or y - rad > box.y1, (gid, mark)
        for t in ax.texts:
            if t is not ann and t.get_visible():
                assert not box.overlaps(t.get_window_extent(r)), (gid, t.get_text())
        # beside its own mark: within a name's height or two of it, or on a visible leader
        at = ax.transData.transform(ann.xy)
        gap = np.hypot(*(np.clip(at, (box.x0, box.y0), (box.x1, box.y1)) - at))
        assert gap < 80.0 and (ann.arrow_patch.get_visible() or gap < 25.0), (gid, gap)


def test_start_and_minimum_names_cover_no_path(widget):
    """The tutorial's figure: the "minimum" name's box stood on momentum's path."""
    _names_clear(widget)


@pytest.mark.slow
def test_start_and_minimum_names_find_their_spot_again_after_a_rerun():
    w = CompareWidget(SURFACE, learning_rate=0.05, momentum=0.5, steps=40, start=(2.5, -2.0), background=False)
    assert w.error is None
    _names_clear(w)


def test_a_label_too_wide_for_any_gap_is_tried_on_two_lines_broken_before_its_bracket():
    from dtsgd_viz.widgets.compare_labels import _wrapped

    assert _wrapped("minimum + tol (0.001)") == [
        "minimum + tol (0.001)",
        "minimum + tol\n(0.001)",
        "minimum +\ntol (0.001)",
    ]
    assert _wrapped("tol") == ["tol"]
