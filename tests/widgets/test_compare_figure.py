"""``CompareWidget``'s figure as the app shows it: the headline in the table's numbers
(``findings``, which the notebooks print) and the loss lines ending on the table's
numbers."""

import re

import matplotlib
import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz import surfaces
from dtsgd_viz.views.paths.geometry import rule_name
from dtsgd_viz.widgets.compare import CompareWidget

matplotlib.use("Agg")

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # notebook 03's and the app's


@pytest.fixture(scope="module")
def widget():
    return CompareWidget(SURFACE, learning_rate=0.05, momentum=0.9, steps=60, background=False)


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
    assert ">mean over<br>k = 51–60<" in widget.table.value and ">k = 60<" in widget.table.value
    printed = dtsgd_viz.findings(widget.recordings, SURFACE, tol=widget.tol).headline()  # what the notebooks print
    assert finding == " ".join(printed.split())
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
