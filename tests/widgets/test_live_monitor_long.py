"""``LiveMonitor`` on a long run: a 100,000-step store is drawn at most ~2 points per
pixel column, each column's min and max kept (spikes show), checked through the lines'
data. The store is written here, without TensorFlow, as a recorder's flushes would."""

import dataclasses

import numpy as np
import pytest
from helpers import synthetic_store as synth
from helpers.envelope import check_envelope

from dtsgd_viz.recorder.hostlog import entry
from dtsgd_viz.recording.store import StoreReader, StoreWriter

STEPS = 100_000


@pytest.fixture(scope="module")
def long_store(tmp_path_factory):
    """Stats of 'w' (8 blocks) and 'b': block 2's norm spikes at step 61234."""
    path = tmp_path_factory.mktemp("long") / "run.zarr"
    ws = synth.watched()
    rng = np.random.default_rng(0)
    writer = StoreWriter(path, synth.header("stats"))
    for start in range(1, STEPS + 1, 20_000):
        batch = []
        stats = {
            (w.name, k): np.abs(rng.normal(size=(20_000, w.geometry.num_unique, 3))).astype(np.float32) + 0.1
            for w in ws
            for k in synth.KINDS
        }
        if start <= 61_234 < start + 20_000:
            stats[("w", "velocity")][61_234 - start, 2, 0] = 1e4
        for i, s in enumerate(range(start, start + 20_000)):
            loss = 1.0 / s if s != 45_678 else 50.0  # one spike of the loss too
            data = {key: a[i] for key, a in stats.items()}
            batch.append((s, entry((s, 0.1, loss), data, ws, synth.KINDS, "stats")))
        writer.append(batch)
    writer.close()
    return path


@pytest.mark.slow
def test_a_100000_step_store_is_drawn_two_points_a_pixel_column(long_store):
    from dtsgd_viz.widgets import LiveMonitor

    monitor = LiveMonitor(long_store, start=False)
    try:
        assert monitor.state.n_steps == STEPS and monitor.renders == 1
        r = StoreReader(long_store).read()
        norms = r.shard_stats("w", "velocity")[..., 0].astype(np.float64)
        # thinned for the widths the first render laid out: poll again as if 1 step were new
        s = monitor.state
        monitor.state = dataclasses.replace(
            s,
            steps=s.steps[:-1],
            loss=s.loss[:-1],
            norms=s.norms[:-1],
            status=dataclasses.replace(s.status, n_steps=STEPS - 1, closed=False),
        )
        assert monitor.poll_now() and monitor.state.n_steps == STEPS
        # the loss recorded at update k is the loss after k - 1 updates, drawn at k - 1
        for ax, lines, data, x in (
            (monitor.ax_loss, [monitor.loss_line], r.loss_values[:, None], r.steps - 1),
            (monitor.ax_norms, monitor.norm_lines, norms, r.steps),
        ):
            columns = int(np.ceil(ax.bbox.width))
            assert 200 < columns < 1000
            for d, line in enumerate(lines):
                xs, ys = line.get_xdata(), line.get_ydata()
                assert len(xs) <= 2 * columns + 2
                check_envelope(x, data[:, d], xs, ys, columns)
        loss = dict(zip(monitor.loss_line.get_xdata(), monitor.loss_line.get_ydata()))
        assert loss[45_677] == 50.0 == monitor.ax_loss.dataLim.y1  # the spike, the limits
        spike = dict(zip(*(monitor.norm_lines[2].get_data())))
        assert spike[61_234] == pytest.approx(1e4)
        assert monitor.ax_norms.get_ylim()[1] >= 1e4
    finally:
        monitor.close()


@pytest.mark.slow
def test_a_short_store_is_drawn_point_for_point(tmp_path):
    from dtsgd_viz.widgets import LiveMonitor

    path = tmp_path / "run.zarr"
    writer = StoreWriter(path, synth.header("stats"))
    writer.append(synth.entries(range(1, 31), "stats"))
    writer.close()
    monitor = LiveMonitor(path, start=False)
    r = StoreReader(path).read()
    assert np.array_equal(monitor.loss_line.get_xdata(), r.steps - 1)
    assert np.array_equal(monitor.loss_line.get_ydata(), r.loss_values)
    monitor.close()


def test_the_monitor_headline_and_update_axis_are_pure_functions_of_the_store():
    """The settings come from the store's header (a client's part names its client and
    devices); the update axis starts at 0 for a run from its start, at the first update
    of a run resumed late, and ends at the last update (where the names stand)."""
    from matplotlib.figure import Figure

    from dtsgd_viz.widgets.live_monitor_text import monitor_finding, monitor_settings, set_update_axis

    header = {
        "mesh": {"dim_names": ["x", "y"], "dim_sizes": [2, 4]},
        "momentum": 0.5,
        "nesterov": False,
        "part": {"client_id": 1, "num_clients": 2, "devices": [4, 5, 6, 7]},
    }
    text = monitor_settings(header, 0.25)
    assert text.startswith("SGD lr=0.25, momentum=0.5, heavy-ball")
    assert "mesh x=2, y=4 (8 devices)" in text and "client 1 of 2 (devices 4-7)" in text
    assert "lr=" not in monitor_settings(dict(header, part=None), None)
    steps = np.arange(1, 41)
    norms = np.column_stack([np.exp(-steps / 10), 2 * np.exp(-steps / 10)])
    finding = monitor_finding(steps, 1 / steps, norms, "grad", ["CPU:0", "CPU:1"])
    # the loss before update 1 to the loss before update 40: changed by updates 1-39
    assert finding.startswith("Loss falls 40x over updates 1-39")
    assert "the grad's median block norm falls" in finding
    assert monitor_finding(steps[:1], [1.0], norms[:1], "grad", ["a", "b"]) == "Loss"
    ax = Figure().add_subplot()
    set_update_axis(ax, steps)
    assert ax.get_xlim() == (0, 40) and list(ax.get_xticks())[0] == 0
    set_update_axis(ax, np.arange(1000, 1081))
    assert ax.get_xlim() == (1000, 1080)


def test_a_clients_median_says_whose_blocks_and_the_loss_axis_ends_on_ticks():
    """08: the monitor's peak (update 13, client 0's 4 blocks) and plot_shards' (update
    12, all 8) differed with nothing saying why; the loss axis ended between ticks."""
    from matplotlib.figure import Figure

    from dtsgd_viz.widgets.live_monitor_axes import _scale_y, snap_log_limits
    from dtsgd_viz.widgets.live_monitor_text import monitor_finding

    steps = np.arange(1, 31)
    norms = np.exp(-(((steps[:, None] - 12) / 6.0) ** 2)) * [1.0, 1.1, 0.9, 1.2] + 0.01
    text = monitor_finding(
        steps,
        np.linspace(1, 0.1, 30),
        norms,
        "velocity",
        ["CPU:0", "CPU:1", "CPU:2", "CPU:3"],
        who="client 0's 4 blocks",
    )
    assert "the median norm of client 0's 4 blocks rises" in " ".join(text.split())
    # 08: the headline wrapped onto a third line holding "11x" alone: two balanced lines
    from dtsgd_viz.views.core import style
    from dtsgd_viz.views.core.figure import fit, headline
    from dtsgd_viz.widgets.live_monitor_text import LIVE_MONITOR_HEADLINED_SIZE

    fig = Figure(figsize=LIVE_MONITOR_HEADLINED_SIZE)
    headline(fig, text, "settings")
    lines = fig.get_suptitle().rstrip("\n").split("\n")
    assert len(lines) == 2 and min(len(line.split()) for line in lines) >= 4
    width = LIVE_MONITOR_HEADLINED_SIZE[0] * 72
    assert all("\n" not in fit(line, width, style.SUPTITLE_SIZE, bold=True) for line in lines)
    ax = Figure().add_subplot()
    loss = np.geomspace(0.97, 0.027, 80)
    ax.plot(np.arange(80), loss)
    _scale_y(ax, loss)
    ax.relim()
    ax.autoscale_view()
    snap_log_limits(ax)
    lo, hi = ax.get_ylim()
    assert lo == pytest.approx(0.02) and hi == pytest.approx(1.0)
    assert ax.get_autoscaley_on()  # the next poll scales to its own data again
