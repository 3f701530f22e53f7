"""The browser's PathExplorer checked through its state (``path_state``): the real DTensor
SGD recorded once for the module (plain, momentum, Nesterov, 30 updates on tutorial
03's valley) and every number the ES module draws compared with what the recording and
the surface say, computed here with numpy: the path and the positions on the slider, the
loss after k updates and its ticks, the update's terms (they add up to the recorded
step), the close-ups at one scale, the slider's decimation, the step picked, the looks
from the style table, and the widget's state as ipywidgets sends it."""

import base64
import json
import re

import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import layout
from ipywidgets.widgets.widget import _put_buffers, _remove_buffers
from matplotlib import colors as mcolors

import dtsgd_viz
from dtsgd_viz import surfaces
from dtsgd_viz.views.core import style
from dtsgd_viz.views.update import geometry as upd
from dtsgd_viz.web import PathExplorer, loss_ticks, path_state
from dtsgd_viz.web.encode import decode
from dtsgd_viz.web.widget import STILLS_ENV

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)  # tutorial 03's valley
CONFIGS = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}
STEPS = 30
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
F32_EPS = float(np.finfo(np.float32).eps)


@pytest.fixture(scope="module")
def recs():
    """The real optimizer, each config once, every update recorded (all kinds)."""
    return dtsgd_viz.run(SURFACE, CONFIGS, steps=STEPS)


@pytest.fixture(scope="module")
def state(recs):
    return path_state(recs, SURFACE)


def run_arrays(state, key):
    """One run's entries, arrays decoded."""
    return {k: decode(v) if isinstance(v, dict) and "dtype" in v else v for k, v in state["runs"][key].items()}


def path64(rec):
    return np.asarray(rec.path("w"), np.float64)


def truth_terms(rec):
    """``(names, [term (n, 2)])``: tf-keras' SGD rule split into its terms from what was
    recorded: classical momentum ``p_new - p = mu*v_prev - lr*g``, Nesterov ``mu*v_new -
    lr*g``, plain ``-lr*g``."""
    g = np.asarray(rec.global_values("w", "grad"), np.float64)
    v = np.asarray(rec.global_values("w", "velocity"), np.float64)
    hp = rec.hyperparameters
    lr = np.asarray(hp.learning_rate, np.float64)[:, None]
    mu = float(hp.momentum)
    if mu == 0.0:
        return ["gradient"], [-lr * g]
    if hp.nesterov:
        return ["lookahead", "gradient"], [mu * v, -lr * g]
    v_prev = np.vstack([np.zeros((1, 2)), v[:-1]])  # the velocity before update 1 is zero
    return ["momentum", "gradient"], [mu * v_prev, -lr * g]


def assert_add_up(uvs, start, end, what):
    """The terms ``uvs`` (m, T, 2) chained from ``start`` end at ``end``: to 1e-6 of the
    step, beyond what float32 rounding of the recorded points and of the terms leaves
    (a late step is small beside the coordinates it is the difference of)."""
    step = end - start
    miss = np.linalg.norm(uvs.sum(axis=1) - step, axis=1)
    rounding = 4 * F32_EPS * (np.abs(start) + np.abs(end) + np.abs(uvs).sum(axis=1)).sum(axis=1)
    bound = 1e-6 * np.linalg.norm(step, axis=1) + rounding
    assert np.all(miss <= bound), (what, miss.max(), (miss / np.linalg.norm(step, axis=1)).max())


def param_only_recording(steps=STEPS):
    """The real DTensor SGD (momentum) recorded with ``Recorder(kinds=("param",))``:
    ``dtsgd_viz.run`` records every kind and takes no ``kinds``, so the run is written
    out here as ``run`` does it (the parameter split over a mesh dim of 2)."""
    mesh = dtsgd_viz.make_mesh({"coord": 2})
    w = dtsgd_viz.variable(np.asarray(SURFACE.default_start, np.float32), layout(mesh, "coord"), name="w")
    rec = dtsgd_viz.Recorder(kinds=("param",))
    opt = dtsgd_viz.SGD(**CONFIGS["momentum"], mesh=mesh, hooks=[rec])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            value = SURFACE.value_tf(w, mesh)
        opt.apply_gradients(zip(tape.gradient(value, [w]), [w]), loss=value)

    for _ in rec.loop(steps):
        step()
    return rec.recording


# ---- the path, the slider's updates and the loss ------------------------------------


@pytest.mark.slow
def test_the_slider_shows_the_recorded_updates_at_the_recorded_path(recs, state):
    assert state["names"] == list(CONFIGS)
    assert state["rule_names"] == {"plain": "plain", "momentum": "momentum", "nesterov": "Nesterov"}
    assert state["plane"] == "the parameters"  # a 2-D surface: the plane is the identity
    assert (state["n_updates"], state["last_update"], state["index"]) == (STEPS, STEPS, 0)
    for key, rec in recs.items():
        np.testing.assert_array_equal(decode(state["updates"]), rec.steps)
        np.testing.assert_array_equal(state["frame_index"], np.arange(STEPS))
        p, r = path64(rec), run_arrays(state, key)
        assert p.shape == (STEPS + 1, 2)
        # the position before each update and the point it leads to, as recorded
        np.testing.assert_array_equal(r["position"], p[:-1], err_msg=key)
        np.testing.assert_array_equal(r["next"], p[1:], err_msg=key)
        # the whole path, the start included
        np.testing.assert_array_equal(r["path"], p, err_msg=key)
        np.testing.assert_array_equal(r["path_index"], np.arange(STEPS + 1))
        assert r["position"].dtype == np.float64
    # the runs went somewhere different from one another (the rules are told apart)
    ends = [path64(rec)[-1] for rec in recs.values()]
    assert min(np.linalg.norm(a - b) for i, a in enumerate(ends) for b in ends[i + 1 :]) > 1e-3


@pytest.mark.slow
def test_the_loss_after_k_updates_is_the_surface_at_the_path_points(recs, state):
    everything = []
    for key, rec in recs.items():
        r, p = run_arrays(state, key), path64(rec)
        truth = np.array([SURFACE.value_np(x) for x in p], np.float64)  # k = 0..N, one point at a time
        everything.append(truth)
        np.testing.assert_array_equal(r["loss_k"], np.arange(STEPS + 1))
        np.testing.assert_allclose(r["loss"], truth, rtol=1e-12, err_msg=key)
        # the dot on the loss panel at update u: the loss after it
        np.testing.assert_allclose(r["loss_at"], truth[1:], rtol=1e-12, err_msg=key)
        # the recorded loss is the one before each update: the same numbers, one earlier
        np.testing.assert_allclose(rec.loss, truth[:-1], rtol=1e-5, err_msg=key)
    allv = np.concatenate(everything)
    lo, hi = state["loss_range"]
    np.testing.assert_allclose([lo, hi], [allv.min(), allv.max()], rtol=1e-12)
    # the loss panel's ticks: inside the range, 1-2-5 numbers, increasing, read as labelled
    ticks, labels = state["loss_ticks"], state["loss_labels"]
    assert len(ticks) == len(labels) >= 3
    # inside the range, or the decades under its bottom and over its top where those would be unlabelled (the JS
    # axis reaches them)
    assert all(10.0 ** np.floor(np.log10(lo)) <= t <= 10.0 ** np.ceil(np.log10(hi)) for t in ticks)
    assert ticks[0] <= 3.0 * lo and ticks[-1] >= hi / 3.0
    assert ticks == sorted(set(ticks))
    for t in ticks:
        mantissa = t / 10.0 ** np.floor(np.log10(t) + 1e-9)
        assert min(abs(mantissa - m) for m in (1, 2, 5)) < 1e-9, t
    assert [float(s) for s in labels] == pytest.approx(ticks, rel=1e-12)
    assert one_format(labels), labels
    # the update axis: whole numbers from 0 to the last update
    ut = state["update_ticks"]
    assert ut[0] == 0 and ut[-1] <= STEPS and 3 <= len(ut) <= 6 and all(isinstance(u, int) for u in ut)


def one_format(labels):
    """All plain numbers (``0.05``) or all powers of ten (``1e-5``), never mixed."""
    plain = [re.fullmatch(r"\d+(\.\d+)?", s) is not None for s in labels]
    powers = [re.fullmatch(r"[125]e-?\d+", s) is not None for s in labels]
    return all(plain) or all(powers)


@pytest.mark.parametrize(
    "lo, hi, ticks, labels",
    [
        (0.003, 0.4, [0.005, 0.01, 0.02, 0.05, 0.1, 0.2], ["0.005", "0.01", "0.02", "0.05", "0.1", "0.2"]),
        # three decades: still 1-2-5
        (
            1.0,
            1000.0,
            [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
            ["1", "2", "5", "10", "20", "50", "100", "200", "500", "1000"],
        ),
        # more than three decades: the decades alone
        (5.6e-4, 80.0, [0.001, 0.01, 0.1, 1, 10], ["0.001", "0.01", "0.1", "1", "10"]),
        # a tick outside 1e-4..1e5: every label a power of ten
        (1e-6, 1.0, [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0], ["1e-6", "1e-5", "1e-4", "1e-3", "1e-2", "1e-1", "1e0"]),
        (
            2e-5,
            3e-3,
            [2e-5, 5e-5, 1e-4, 2e-4, 5e-4, 1e-3, 2e-3],
            ["2e-5", "5e-5", "1e-4", "2e-4", "5e-4", "1e-3", "2e-3"],
        ),
    ],
)
def test_loss_ticks_on_a_few_ranges(lo, hi, ticks, labels):
    got_ticks, got_labels = loss_ticks(lo, hi)
    assert got_ticks == pytest.approx(ticks, rel=1e-12)
    assert got_labels == labels
    assert one_format(got_labels)


@pytest.mark.parametrize("lo, hi", [(0.0, 1.0), (-1.0, 1.0), (1.0, 1.0), (2.0, 1.0), (np.nan, 1.0), (1e-3, np.inf)])
def test_loss_ticks_of_no_range_are_none(lo, hi):
    assert loss_ticks(lo, hi) == ([], [])


# ---- the update's terms -------------------------------------------------------------


@pytest.mark.slow
def test_the_terms_are_the_sgd_rules_and_add_up_to_the_recorded_step(recs, state):
    expected_names = {
        "plain": ["gradient"],
        "momentum": ["momentum", "gradient"],
        "nesterov": ["lookahead", "gradient"],
    }
    assert state["arrows"] is True
    assert state["term_names"] == {"momentum": "μ·v_prev", "lookahead": "μ·v_new", "gradient": "−lr·g"}
    for key, rec in recs.items():
        r, p = run_arrays(state, key), path64(rec)
        names, terms = truth_terms(rec)
        assert r["terms"] == names == expected_names[key]
        assert set(r["term_colors"]) == set(names)
        assert r["uvs"].shape == (STEPS, len(names), 2)
        for q, term in enumerate(terms):
            np.testing.assert_allclose(r["uvs"][:, q], term, rtol=1e-12, atol=1e-15, err_msg=f"{key} {names[q]}")
        # the terms chained tip to tail end at the recorded next point
        assert_add_up(r["uvs"], p[:-1], p[1:], key)
        step = p[1:] - p[:-1]
        # full-space lengths of each term and of the whole step
        want = np.stack([np.linalg.norm(t, axis=1) for t in terms] + [np.linalg.norm(step, axis=1)], axis=1)
        np.testing.assert_allclose(r["lengths"], want, rtol=1e-12, err_msg=key)
    # momentum's first update has no velocity before it: its momentum term is zero
    assert np.all(run_arrays(state, "momentum")["uvs"][0, 0] == 0)
    # and afterwards the momentum terms are what carries those runs (not a zero term)
    assert np.all(run_arrays(state, "momentum")["lengths"][1:, 0] > 0)
    assert np.all(run_arrays(state, "nesterov")["lengths"][:, 0] > 0)


@pytest.mark.slow
def test_a_recording_that_skips_updates_draws_no_terms_that_miss_the_step():
    """``every=2``: the step between two recorded points spans two updates and the
    velocity before each recorded update is not recorded, so the update cannot be split
    into its terms (the matplotlib close-ups say so: ``why_no_arrows``). The explorer must
    then draw no arrows, never arrows that do not add up to the step it draws."""
    rec = dtsgd_viz.run(SURFACE, {"momentum": CONFIGS["momentum"]}, steps=12, every=2)["momentum"]
    np.testing.assert_array_equal(rec.steps, np.arange(2, 13, 2))
    assert upd.why_no_arrows(rec) is not None  # the kernel-drawn views draw none
    state = path_state({"momentum": rec}, SURFACE)
    r = run_arrays(state, "momentum")
    p = path64(rec)
    np.testing.assert_array_equal(r["position"], p[:-1])
    if "uvs" in r:
        miss = np.linalg.norm(r["uvs"].sum(axis=1) - (p[1:] - p[:-1]), axis=1)
        detail = f"arrows drawn that miss the recorded step by up to {miss.max():.3g}"
    else:
        detail = "no terms, but arrows=True"
    assert state["arrows"] is False, detail
    assert "uvs" not in r and "terms" not in r and "lengths" not in r


@pytest.mark.slow
def test_a_recording_of_the_parameter_alone_draws_the_path_without_arrows():
    rec = param_only_recording()
    assert rec.kinds == ("param",)
    state = path_state(rec, SURFACE)  # one Recording, not a dict
    assert state["names"] == ["recording"] and state["arrows"] is False
    r = run_arrays(state, "recording")
    assert not {"terms", "uvs", "lengths", "term_colors"} & set(r)
    p = path64(rec)
    np.testing.assert_array_equal(r["position"], p[:-1])
    np.testing.assert_array_equal(r["next"], p[1:])
    np.testing.assert_allclose(r["loss_at"], [SURFACE.value_np(x) for x in p[1:]], rtol=1e-12)
    # the close-ups still frame the position and the next point
    zoom = decode(state["zoom"])
    assert zoom.shape == (STEPS, 1, 4) and np.all(np.isfinite(zoom))
    for i in range(STEPS):
        x0, x1, y0, y1 = zoom[i, 0]
        for pt in (p[i], p[i + 1]):
            assert x0 <= pt[0] <= x1 and y0 <= pt[1] <= y1
    w = PathExplorer(rec, SURFACE, step=-1)
    assert w.update == STEPS and w.data["arrows"] is False


# ---- the close-ups ------------------------------------------------------------------


@pytest.mark.slow
def test_the_close_ups_are_one_square_scale_holding_each_runs_update(recs, state):
    zoom, factor = decode(state["zoom"]), decode(state["zoom_factor"])
    names = state["names"]
    assert zoom.shape == (STEPS, len(names), 4) and factor.shape == (STEPS,)
    (bx0, bx1), (by0, by1) = state["box"]
    paths_side = max(bx1 - bx0, by1 - by0)
    for i in range(STEPS):
        sides = []
        for j, key in enumerate(names):
            x0, x1, y0, y1 = zoom[i, j]
            assert x1 - x0 == pytest.approx(y1 - y0, rel=1e-9), (i, key)  # square
            sides.append(x1 - x0)
            p = path64(recs[key])
            names_j, terms = truth_terms(recs[key])
            tips = p[i] + np.cumsum([t[i] for t in terms], axis=0)
            for pt in [p[i], p[i + 1], *tips]:
                assert x0 <= pt[0] <= x1 and y0 <= pt[1] <= y1, (i, key, pt)
        assert max(sides) == pytest.approx(min(sides), rel=1e-12), i  # one scale for every run
        assert sides[0] > 0
        assert factor[i] == pytest.approx(paths_side / sides[0], rel=1e-12)
    # the early updates are big, the late ones small: the scale follows them in
    assert factor[-1] > 3 * factor[0]


@pytest.mark.slow
def test_update_n_is_marked_at_k_n_with_the_loss_after_it_as_findings_says(recs, state):
    """Update n as plot_paths and findings mark it: the loss panel's k is n, the dot the
    loss after n updates (the surface at the recorded point p[n]), the ring at p[n]; the
    headline's window findings(upto=n) ends at that k."""
    updates = decode(state["updates"])
    np.testing.assert_array_equal(state["marked_k"], updates)
    for key in state["names"]:
        r, p = run_arrays(state, key), path64(recs[key])
        truth = np.array([SURFACE.value_np(p[n]) for n in updates])
        np.testing.assert_allclose(r["loss_at"], truth, rtol=1e-12, err_msg=key)
        np.testing.assert_array_equal(r["next"], p[updates], err_msg=key)  # where the ring is drawn
    for n in (1, 5, 20):
        found = dtsgd_viz.findings(recs, SURFACE, upto=n)
        assert found.window[1] == state["marked_k"][n - 1] == n
        assert tuple(state["mean_window"][n - 1]) == found.window  # the band the browser shades
        for key in state["names"]:  # and each run's bar over it: the mean the headline compares
            assert state["mean_loss"][key][n - 1] == pytest.approx(found.tail_loss[key], rel=1e-12)
        assert state["headlines"][n - 1] == found.headline()  # the words over the panels say it
    assert state["settings"].startswith(SURFACE.label + " · lr ")  # the settings line under it, as the still's


def test_a_window_holding_a_non_finite_loss_has_no_mean():
    from dtsgd_viz.web.paths import window_means

    ks, loss = np.arange(6), np.array([4.0, 2.0, np.nan, 1.0, 3.0, 5.0])
    assert window_means(ks, loss, [[0, 1], [1, 3], [3, 5], [5, 5]]) == [3.0, None, 3.0, 5.0]


@pytest.mark.slow
def test_the_browser_says_the_shared_zoom_the_still_says(recs, state):
    """One zoom convention: the browser's factor at update n is the still's caption's
    (views.update.zoom.zoom_caption over the explorer still's close-ups); no box on the
    paths marks where they look (one scale, said once)."""
    from dtsgd_viz.widgets.explorer_figure import explorer_still

    for n in (1, 20):
        fig = explorer_still(recs, SURFACE, n)
        caption = next(t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid() == "caption")
        said = re.search(r"every panel spans (1/[0-9.]+) of the paths' width", caption)
        assert said is not None, caption
        assert state["zoom_text"][n - 1] == said.group(1), (n, caption)
        assert "zoom_shown" not in state
        assert not [p for ax in fig.axes for p in ax.patches if (p.get_gid() or "").startswith("zoom-box:")], n


@pytest.mark.slow
def test_the_browsers_insets_are_the_stills(recs, state):
    """A run too small at the shared zoom is inset in the browser exactly where the still
    insets it (``zoom.draw_inset`` in the explorer still): the same runs, the same box (its
    dotted rectangle) and the same 1/N; the others have none (NaN, ""). The inset's place is
    the still's (``zoom.INSET_RECT``, turned to the upper left)."""
    from dtsgd_viz.views.update.zoom import INSET_RECT
    from dtsgd_viz.widgets.explorer_figure import explorer_still

    insets, names = decode(state["inset"]), state["names"]
    assert insets.shape == decode(state["zoom"]).shape
    seen = 0
    for n in (1, 5, 20):
        fig = explorer_still(recs, SURFACE, n)
        texts = {
            t.get_gid(): t.get_text()
            for a in fig.axes
            for inset in a.child_axes  # the 1/N: written in the inset
            for t in inset.texts
            if (t.get_gid() or "").startswith("inset-zoom:")
        }
        boxes = {  # what each inset enlarges: its own limits
            t.get_gid().split(":")[1]: [*inset.get_xlim(), *inset.get_ylim()]
            for a in fig.axes
            for inset in a.child_axes
            for t in inset.texts
            if (t.get_gid() or "").startswith("inset-zoom:")
        }
        for j, key in enumerate(names):
            if key in boxes:
                seen += 1
                np.testing.assert_allclose(insets[n - 1, j], boxes[key], rtol=1e-9, err_msg=f"{n} {key}")
                assert state["inset_text"][n - 1][j] == texts[f"inset-zoom:{key}"], (n, key)
            else:
                assert np.all(np.isnan(insets[n - 1, j])) and state["inset_text"][n - 1][j] == "", (n, key)
    assert seen  # tutorial 03's runs have insets at these updates
    x, y, w, h = INSET_RECT
    assert state["inset_rect"] == pytest.approx([x, 1 - y - h, w, h])


def test_the_close_ups_key_says_the_stills_words():
    from dtsgd_viz.views.update.plot import close_up_marks
    from dtsgd_viz.web.paths import close_key

    key = close_key()
    assert [k["text"] for k in key] == list(close_up_marks())
    assert [k["mark"] for k in key] == ["before", "after", "step", "trail"]
    assert all(mcolors.to_rgb(k["color"]) for k in key)
    # the step, drawn in each run's colour, is keyed in them, not in a grey that reads as plain's line
    from dtsgd_viz.views.update.panel import tint
    from dtsgd_viz.web.paths import FAINT_TINT

    before, after, step, trail = close_key(["#0072B2", (0.8, 0.4, 0.0)])
    assert before["colors"] == after["colors"] == ["#0072b2", "#cc6600"]  # the disk and the ring in each run's colour
    assert step["colors"] == ["#0072b2", "#cc6600"] and "colors" not in key[2]
    assert trail["colors"] == [mcolors.to_hex(tint(c, FAINT_TINT)) for c in ("#0072B2", (0.8, 0.4, 0.0))]  # as drawn
    # the still's key draws the path so far with its dots, as the close-ups do (not as the pale later updates)
    assert all(m["marker"] == "o" and m["ms"] > 0 for m in close_up_marks(colors=["#0072B2"])["path so far"])


# ---- the slider's decimation and the update picked ----------------------------------


@pytest.mark.slow
def test_a_slider_of_seven_keeps_seven_updates_first_and_last_among_them(recs):
    state = path_state(recs, SURFACE, max_points=7)
    kept = np.asarray(state["frame_index"])
    updates = decode(state["updates"])
    assert len(kept) == len(updates) == 7
    assert (kept[0], kept[-1]) == (0, STEPS - 1)
    assert np.all(np.diff(kept) > 0) and np.ptp(np.diff(kept)) <= 1  # evenly spread
    assert (state["n_updates"], state["last_update"]) == (STEPS, STEPS)
    zoom = decode(state["zoom"])
    assert zoom.shape == (7, 3, 4) and decode(state["zoom_factor"]).shape == (7,)
    for key, rec in recs.items():
        np.testing.assert_array_equal(updates, rec.steps[kept])
        assert (updates[0], updates[-1]) == (1, STEPS)
        r, p = run_arrays(state, key), path64(rec)
        np.testing.assert_array_equal(r["position"], p[kept])
        np.testing.assert_array_equal(r["next"], p[kept + 1])
        np.testing.assert_allclose(r["loss_at"], [SURFACE.value_np(x) for x in p[kept + 1]], rtol=1e-12)
        names, terms = truth_terms(rec)
        assert r["uvs"].shape == (7, len(names), 2) and r["lengths"].shape == (7, len(names) + 1)
        for q, term in enumerate(terms):
            np.testing.assert_allclose(r["uvs"][:, q], term[kept], rtol=1e-12, atol=1e-15)
        assert_add_up(r["uvs"], p[kept], p[kept + 1], key)
        step = p[kept + 1] - p[kept]
        np.testing.assert_allclose(r["lengths"][:, -1], np.linalg.norm(step, axis=1), rtol=1e-12)
        # the drawn path: from the start to the end, on the recorded points
        idx = r["path_index"]
        assert (idx[0], idx[-1]) == (0, STEPS) and np.all(np.diff(idx) > 0)
        np.testing.assert_array_equal(r["path"], p[idx])
        np.testing.assert_array_equal(r["loss_k"], idx)  # every update recorded: k = index
        np.testing.assert_allclose(r["loss"], [SURFACE.value_np(x) for x in p[idx]], rtol=1e-12)
        for i in range(7):  # each run's close-up holds its position and next point
            x0, x1, y0, y1 = zoom[i, list(recs).index(key)]
            for pt in (p[kept[i]], p[kept[i] + 1]):
                assert x0 <= pt[0] <= x1 and y0 <= pt[1] <= y1


@pytest.mark.slow
@pytest.mark.parametrize("step, index", [(5, 4), (-1, STEPS - 1), (1, 0), (STEPS, STEPS - 1), (-STEPS, 0)])
def test_step_picks_the_first_update_shown(recs, step, index):
    state = path_state(recs, SURFACE, step=step)
    assert state["index"] == index
    assert decode(state["updates"])[index] == recs["plain"].steps[index]


@pytest.mark.slow
@pytest.mark.parametrize(
    "step, message",
    [
        (0, r"step=0 is the start"),
        (STEPS + 1, rf"step={STEPS + 1} is out of range"),
        (-(STEPS + 1), rf"step=-{STEPS + 1} is out of range"),
        ("3", r"step must be an int.*Received: step='3' \(str\)"),
        (2.5, r"step must be an int.*Received: step=2\.5 \(float\)"),
        (True, r"Received: step=True \(bool\)"),
    ],
)
def test_a_bad_step_says_what_was_received(recs, step, message):
    with pytest.raises(ValueError, match=message) as info:
        path_state(recs, SURFACE, step=step)
    assert "Allowed: a recorded update" in str(info.value)
    with pytest.raises(ValueError, match=message):
        PathExplorer(recs, SURFACE, step=step)


@pytest.mark.slow
def test_the_wrong_surface_or_no_recordings_say_what_was_received(recs):
    other = surfaces.ShardedQuadratic((4, 4), {"x": 2, "y": 2}, ("x", "y"))
    with pytest.raises(ValueError, match=r"Cannot draw 'plain' on ShardedQuadratic.*\(4, 4\).*shape \(2,\)"):
        path_state(recs, other)
    with pytest.raises(TypeError, match=r"surface must be a dtsgd_viz.surfaces surface.*Received: str"):
        path_state(recs, "RotatedQuadratic")
    with pytest.raises(ValueError, match=r"non-empty dict.*Received: \{\}"):
        path_state({}, SURFACE)
    with pytest.raises(TypeError, match=r"recordings\['plain'\] must be a Recording. Received: ndarray"):
        path_state({"plain": np.zeros((3, 2))}, SURFACE)


# ---- the looks ----------------------------------------------------------------------


@pytest.mark.slow
def test_each_runs_look_is_the_style_tables(state):
    names = state["names"]
    looks = style.run_looks(names)
    px = style.DPI / 72.0
    for key in names:
        got, look = state["look"]["runs"][key], looks[key]
        assert got["color"] == mcolors.to_hex(look.color), key
        assert got["width"] == pytest.approx(look.lw * px, abs=1e-3), key
    runs = state["look"]["runs"]
    assert len({runs[k]["color"] for k in names}) == len(names)  # never two runs alike
    # momentum dashed: its pattern (points, scaled by the width as matplotlib does) in pixels
    on, off = style.RULE_LOOKS["momentum"].ls[1]
    lw = style.RULE_LOOKS["momentum"].lw
    assert runs["momentum"]["dash"] == pytest.approx([on * lw * px, off * lw * px], abs=1e-3)
    assert runs["nesterov"]["dash"] == [] and runs["plain"]["dash"] == []  # solid
    assert runs["nesterov"]["width"] > runs["momentum"]["width"] > runs["plain"]["width"]
    # the term arrows are the run's colours (the look-ahead / momentum term in the run's own)
    r = state["runs"]
    assert r["momentum"]["term_colors"]["momentum"] == runs["momentum"]["color"]
    assert r["nesterov"]["term_colors"]["lookahead"] == runs["nesterov"]["color"]
    assert state["look"]["minimum_face"] == mcolors.to_hex(style.MINIMUM_FACE)


# ---- the widget ---------------------------------------------------------------------


def png_size(png):
    assert png[:8] == PNG_SIGNATURE
    assert png[12:16] == b"IHDR"
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


@pytest.mark.slow
def test_the_widget_starts_at_the_step_and_carries_its_module(recs, state):
    w = PathExplorer(recs, SURFACE, step=3)
    assert w.update == 3 and w.data["index"] == 2
    assert PathExplorer(recs, SURFACE).update == 1
    assert PathExplorer(recs, SURFACE, step=-1).update == STEPS
    assert "export default" in w._esm
    # the contour picture under the paths: a PNG of the size asked for
    assert png_size(base64.b64decode(state["contours"])) == (420, 420)


@pytest.mark.slow
def test_the_widget_state_goes_as_binary_buffers_and_stays_small():
    recs60 = dtsgd_viz.run(SURFACE, CONFIGS, steps=60)
    w = PathExplorer(recs60, SURFACE)
    sent = w.get_state()
    rest, buffer_paths, buffers = _remove_buffers(sent)
    json_part = json.dumps(rest)  # what is left is plain JSON: no bytes in it
    arrays = sum(1 for r in w.data["runs"].values() for v in r.values() if isinstance(v, dict) and "dtype" in v)
    arrays += sum(1 for v in w.data.values() if isinstance(v, dict) and "dtype" in v)
    assert len(buffers) == len(buffer_paths) == arrays
    assert all(path[0] == "data" and path[-1] == "data" for path in buffer_paths)
    size = len(json_part.encode()) + sum(len(b) for b in buffers)
    assert size < 300_000, size
    # the buffers put back give the same arrays; so do they as a saved notebook keeps them (base64)
    back = json.loads(json_part)
    _put_buffers(back, buffer_paths, buffers)
    saved = json.loads(json_part)
    _put_buffers(saved, buffer_paths, [base64.b64encode(bytes(b)).decode("ascii") for b in buffers])
    for key in w.data["names"]:
        for field in ("position", "next", "uvs", "lengths", "loss_at"):
            want = decode(w.data["runs"][key][field])
            np.testing.assert_array_equal(decode(back["data"]["runs"][key][field]), want)
            np.testing.assert_array_equal(decode(saved["data"]["runs"][key][field]), want)
    np.testing.assert_array_equal(decode(back["data"]["updates"]), np.arange(1, 61))


@pytest.mark.slow
def test_a_still_png_only_when_asked(recs, monkeypatch):
    w = PathExplorer(recs, SURFACE, step=3)
    monkeypatch.delenv(STILLS_ENV, raising=False)
    bundle = w._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    assert "image/png" not in data
    assert "application/vnd.jupyter.widget-view+json" in data
    monkeypatch.setenv(STILLS_ENV, "1")
    bundle = w._repr_mimebundle_()
    data = bundle[0] if isinstance(bundle, tuple) else bundle
    width, height = png_size(base64.b64decode(data["image/png"]))
    assert width > 300 and height > 200


def test_the_loss_axis_says_what_every_loss_axis_says(state):
    """The browser's loss panel is labelled as every loss panel (``views.paths.loss``)."""
    from dtsgd_viz.views.paths.loss import LOSS_XLABEL

    assert state["loss_xlabel"] == LOSS_XLABEL == "updates made (k)"


def test_the_paths_are_drawn_widest_first_as_the_stills(state):
    """Each run's lines in the stills' order (``style.run_looks``' zorder: the widest under), so the browser
    hides no narrower path under a wider one: Nesterov's first, plain's last and on top."""
    from dtsgd_viz.views.core import style

    looks = style.run_looks(state["names"])
    assert sorted(state["draw_order"]) == sorted(state["names"])
    assert [looks[k].zorder for k in state["draw_order"]] == sorted(looks[k].zorder for k in state["names"])
    assert state["draw_order"][-1] == "plain" and state["draw_order"][0] == "nesterov"


def test_python_marks_the_terms_drawn_beside_the_one_before(state):
    """Which arrows the browser moves beside the one before is ``panel.lies_along``, decided in Python (the still's
    ``beside_folds`` rule); tutorial 03's runs have both cases: momentum's fold at update 5, Nesterov's run-on."""
    from dtsgd_viz.views.update import panel

    marked = 0
    for key in state["names"]:
        r = run_arrays(state, key)
        uvs, beside = r["uvs"], r["beside"]
        assert beside.shape == uvs.shape[:2] and not beside[:, 0].any()  # the first term starts the chain
        for i in range(len(uvs)):
            for q in range(1, uvs.shape[1]):
                assert bool(beside[i, q]) == panel.lies_along(uvs[i, q - 1], uvs[i, q]), (key, i, q)
        marked += int(beside.sum())
    assert marked


def test_a_thin_solid_path_is_cased_in_white_as_the_stills_draw_it(recs, state):
    """Plain's thin line over Nesterov's wide one: the still cases it in white (``style.Look.casing``), and the
    state gives the browser that casing's width for the same runs, and none for the wider or dashed ones."""
    from matplotlib.patheffects import withStroke

    fig = dtsgd_viz.plot_paths(recs, SURFACE, step=5)
    lines = {ln.get_gid().split(":")[1]: ln for ln in fig.axes[0].lines if (ln.get_gid() or "").startswith("path:")}
    cased = {k for k, ln in lines.items() if any(isinstance(e, withStroke) for e in ln.get_path_effects())}
    assert cased == set(state["cased"]) == {"plain"}
    assert state["cased"]["plain"] == pytest.approx((lines["plain"].get_linewidth() + 1.4) * 100 / 72, abs=1e-3)
