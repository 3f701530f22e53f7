"""``plot_shards`` says two blocks "coincide" only where their norm lines lie within a
drawn line width of each other, in display pixels, at the shown scale, over the stretch
it names, and never drops a dot of a line that can be told apart.

Found on a real model (Embedding 64x16, Dense 16->32 relu sharded over ``model``,
LayerNormalization, Dense 32->8 softmax, fit on a 2x4 mesh): "CPU:2,6 and CPU:3,7
coincide" for norms 0.0563 and 0.0584 with visibly separate lines, one dot dropped (the
rule was "dots closer than 1.8 diameters")."""

import dataclasses
import re

import numpy as np
import pytest
from helpers import synthetic_recording

from dtsgd_viz.views.shards.plot import draw_shards


def _with_norms(norms, shape=(32, 8), specs=("model", "unsharded"), kind="velocity"):
    """A full recording whose blocks of ``kind`` have the L2 norms ``norms`` (updates x
    blocks): seeded random blocks scaled to them (``out/kernel`` of the model above: four
    (8, 8) blocks, each on 2 devices)."""
    norms = np.asarray(norms, np.float64)
    r = synthetic_recording.recording([("w", shape, specs)], steps=len(norms))
    rec = r.records[0]
    b = np.asarray(rec.blocks[kind], np.float64)
    unit = b / np.sqrt(np.sum(b**2, axis=tuple(range(2, b.ndim)), keepdims=True))
    blocks = dict(rec.blocks)
    blocks[kind] = (unit * norms.reshape(*norms.shape, *[1] * (b.ndim - 2))).astype(np.float32)
    return dataclasses.replace(r, records=(dataclasses.replace(rec, blocks=blocks),))


# the found picture's four lines over 16 updates, ending at 0.0563 / 0.0584 for two blocks
FOUND = np.array(
    [
        np.geomspace(0.08, 0.0563, 16),
        np.geomspace(0.10, 0.15, 16),
        np.geomspace(0.06, 0.042, 16),
        np.geomspace(0.09, 0.0584, 16),
    ]
).T


def _dots(view, ax):
    return next(a for a in view.step_lines if a.get_gid() == "step-dots" and a.axes is ax)


def _label(view):
    return next(a for a in view.step_lines if a.get_gid() == "step-label")


def _pixel_y(ax, x, y):
    return ax.transData.transform(np.column_stack([np.full(len(y), float(x)), np.asarray(y, np.float64)]))[:, 1]


def _claimed_pairs(view):
    """The block pairs the step label says coincide (``A and B coincide``)."""
    names = [p.label for p in view.patches]
    text = " ".join(_label(view).get_text().split())
    pairs = []
    for said in re.findall(r"([^;(]+?) coincide", text):
        blocks = [g for g, n in enumerate(names) if n in said]
        pairs += [(a, b) for i, a in enumerate(blocks) for b in blocks[i + 1 :]]
    return pairs


def _check_dots_and_claims(view):
    """Every line drawn at the shown update has its dot unless it lies within a line
    width (pixels) of a dot kept; every pair named as coinciding does."""
    fig, ax = view.figure, view.norm_ax
    fig.draw_without_rendering()
    x = view.updates[view.index]
    norms = np.asarray(view.norm.data[ax][view.index], np.float64)
    y = np.asarray(_dots(view, ax).get_ydata(), np.float64)
    pix = _pixel_y(ax, x, np.where(np.isfinite(norms), norms, 1.0))
    widths = {line.get_gid(): line.get_linewidth() for line in ax.lines}
    tol = max(widths[f"norm-{g}"] for g in range(len(norms))) * fig.dpi / 72
    drawn = [g for g, line in enumerate(view.lines) if line.get_visible() and np.isfinite(norms[g]) and norms[g] > 0]
    kept = [g for g in drawn if np.isfinite(y[g])]
    for g in drawn:
        if g not in kept:  # dropped: its line is on a kept one's
            assert min(abs(pix[g] - pix[k]) for k in kept) <= tol + 1e-6, (g, pix, tol)
    for a, b in _claimed_pairs(view):
        assert abs(pix[a] - pix[b]) <= tol + 1e-6, (view.patches[a].label, view.patches[b].label, pix, tol)
    return kept, drawn


@pytest.mark.slow
def test_close_but_separate_lines_keep_both_dots_and_are_not_said_to_coincide():
    view = draw_shards(_with_norms(FOUND), "w", "velocity")
    ax, x = view.norm_ax, view.updates[-1]
    pix = _pixel_y(ax, x, FOUND[-1])
    tol = max(line.get_linewidth() for line in view.lines) * view.figure.dpi / 72
    assert tol < abs(pix[0] - pix[3]) < 1.8 * 6.5 * view.figure.dpi / 72  # apart, close
    kept, drawn = _check_dots_and_claims(view)
    assert kept == drawn == [0, 1, 2, 3]
    assert "coincide" not in _label(view).get_text()
    # every dot whole, and none over another: the dots drawn smaller where they crowd
    dots = _dots(view, ax)
    size_px = (dots.get_markersize() + dots.get_markeredgewidth()) * view.figure.dpi / 72
    gaps = np.diff(np.sort(pix))
    assert size_px <= gaps.min() + 1e-6 or dots.get_markersize() <= 3.6 + 1e-9


@pytest.mark.slow
def test_lines_within_a_line_width_share_a_dot_and_are_named():
    norms = FOUND.copy()
    norms[:, 3] = norms[:, 0] * 1.002  # on one another: a tenth of a pixel apart
    view = draw_shards(_with_norms(norms), "w", "velocity")
    kept, drawn = _check_dots_and_claims(view)
    assert len(kept) == 3 and len(drawn) == 4
    assert _claimed_pairs(view) == [(0, 3)]


@pytest.mark.parametrize("step", [None, 4, 9])
@pytest.mark.slow
def test_every_claim_of_the_dashed_stretches_is_within_a_line_width(step):
    """The hidden-line notes ("A under B at updates i-j", dashed there): at every update
    of the stretch, and along the straight segments between them, the two lines lie
    within a line width in pixels."""
    norms = FOUND.copy()
    norms[:10, 3] = norms[:10, 0] * 1.001  # on block 0's line for updates 1-10, then apart
    view = draw_shards(_with_norms(norms), "w", "velocity", step=step)
    view.figure.draw_without_rendering()
    ax = view.norm_ax
    runs = view.coincide_runs.get(ax, [])
    assert runs and {(a, b) for a, b, _, _ in runs} == {(0, 3)}
    tol = max(line.get_linewidth() for line in view.lines) * view.figure.dpi / 72
    for a, b, i, j in runs:
        assert view.updates[j] <= 10
        xs = np.linspace(view.updates[i], view.updates[j], 200)  # the segments between
        ya, yb = (np.exp(np.interp(xs, view.updates, np.log(norms[:, g]))) for g in (a, b))
        assert np.max(np.abs(_pixel_y(ax, 0, ya) - _pixel_y(ax, 0, yb))) <= tol
    note = next(t for t in ax.texts if t.get_gid() == "coincide-note")
    assert re.search(r"updates 1-(\d+)", note.get_text())


@pytest.mark.slow
def test_the_real_model_claims_only_lines_within_a_line_width():
    """The model the finding came from, fit for real on the 2x4 mesh: at every update
    shown, every variable and kind, the dots and the claims keep the rule."""
    import tf_keras
    from tensorflow.experimental import dtensor

    import dtsgd_viz
    from dtsgd_viz import models

    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    u, m = "unsharded", "model"
    lm = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    for key, specs in (
        ("emb.*embeddings", [u, u]),
        ("hidden.*kernel", [u, m]),
        ("hidden.*bias", [m]),
        ("norm.*(gamma|beta)", [u]),
        ("out.*kernel", [m, u]),
        ("out.*bias", [u]),
    ):
        lm[key] = dtensor.Layout(specs, mesh)
    with lm.scope():
        tf_keras.utils.set_random_seed(0)
        x_in = tf_keras.Input((5,), dtype="int32")
        h = tf_keras.layers.Embedding(64, 16, name="emb")(x_in)
        h = tf_keras.layers.GlobalAveragePooling1D()(h)
        h = tf_keras.layers.Dense(32, activation="relu", name="hidden")(h)
        h = tf_keras.layers.LayerNormalization(epsilon=1e-6, name="norm")(h)
        out = tf_keras.layers.Dense(8, activation="softmax", name="out")(h)
        model = tf_keras.Model(x_in, out)
    rng = np.random.default_rng(0)
    x = rng.integers(0, 64, (128, 5)).astype(np.int32)
    y = (x.sum(1) % 8).astype(np.int32)
    rec = dtsgd_viz.Recorder()
    model.compile(
        optimizer=dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh, hooks=[rec], exact_update=True),
        loss=tf_keras.losses.SparseCategoricalCrossentropy(),
    )
    with pytest.warns(RuntimeWarning, match="sparse"):  # the embedding's gradient
        model.fit(
            models.dataset(mesh, x, y, 16), epochs=2, steps_per_epoch=8, verbose=0, callbacks=[rec.keras_callback()]
        )
    r = rec.recording
    separate = 0
    for name in ("hidden/kernel", "hidden/bias", "out/kernel"):
        for kind in r.kinds:
            for step in (None, 8):
                view = draw_shards(r, name, kind, step=step)
                kept, drawn = _check_dots_and_claims(view)
                separate += len(kept) == len(drawn)
    assert separate  # the pictures of separate lines keep every dot
