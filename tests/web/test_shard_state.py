"""The browser's ShardExplorer checked through its state (``shard_state``), no browser:
tutorial 05's sharded MLP trained by the real DTensor SGD (Nesterov, 40 updates, four
variables laid out four ways on a 2x4 mesh), a pair of ShardedQuadratic runs side by
side, and one 640x480 tensor that must be sampled down. The truth is TensorFlow's own
(``dtensor.unpack``: what each device holds) and the recording's per-device arrays
(``shard_values``), never the geometry the state was built from."""

import base64
import dataclasses
import io
import json
import math
import re

import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import global_value, layoutmap_mlp
from ipywidgets.widgets.widget import _remove_buffers
from matplotlib import colormaps
from matplotlib import colors as mcolors
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz.views.shards.geometry import as_image, symmetric_limit
from dtsgd_viz.web.encode import decode
from dtsgd_viz.web.shards import LUT_SIZE, MAX_CELLS, ShardExplorer, kept_cells, shard_state

STEPS = 40
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def mlp():
    """Tutorial 05's run (``notebooks/src/05_recordings.py``): the recording and the
    model, whose variables hold the last update's parameters as TensorFlow lays them out."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = layoutmap_mlp(mesh)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype(np.float32)
    y = np.sin(x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32))[:, None]
    data_layout = dtensor.Layout(["batch", "unsharded"], mesh)
    xb, yb = dtsgd_viz.shard(x, data_layout), dtsgd_viz.shard(y, data_layout)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec], exact_update=True)

    @tf.function
    def train_step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(xb) - yb) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables), loss=loss)

    for _ in rec.loop(STEPS):
        train_step()
    return rec.recording, model


@pytest.fixture(scope="module")
def state(mlp):
    return shard_state(mlp[0])


@pytest.fixture(scope="module")
def pair():
    surface = dtsgd_viz.surfaces.ShardedQuadratic((8, 8), specs=("unsharded", "model"))
    configs = {
        "momentum": dict(learning_rate=0.5, momentum=0.9),
        "nesterov": dict(learning_rate=0.5, momentum=0.9, nesterov=True),
    }
    return dtsgd_viz.run(surface, configs, 10)


def parse_slice(text):
    """``"[0:4, 8:12]"`` -> a tuple of slices (parsed here, not taken from the state)."""
    if text.startswith("[] "):
        return ()
    return tuple(slice(int(a), int(b)) for a, b in re.findall(r"(\d+):(\d+)", text))


def saved_bytes(state):
    """The state's size as a saved notebook keeps it: JSON, the buffers base64."""
    st, _, bufs = _remove_buffers({"data": state})
    return len(json.dumps(st)) + sum(len(base64.b64encode(bytes(b))) for b in bufs)


def element_of(shape, row, col):
    """The tensor index an image cell (row, col) shows (rows: the leading dims, C order)."""
    if len(shape) == 0:
        return ()
    if len(shape) == 1:
        return (col,)
    return (*np.unravel_index(row, shape[:-1]), col)


# ---- the blocks: TensorFlow's own placement ---------------------------------------------


def test_each_blocks_slice_is_what_tensorflow_put_on_its_devices(mlp, state):
    rec, model = mlp
    assert state["variables"] == list(rec.variables)
    for var in model.trainable_variables:
        name = next(v for v in rec.variables if var.name.startswith(v))
        t = state["tensors"][name]
        assert t["shape"] == list(var.shape)
        whole = global_value(var)
        parts = [p.numpy() for p in dtensor.unpack(var.read_value())]  # one per mesh device
        devices = list(dtensor.fetch_layout(var).mesh.local_devices())
        held = {}
        for b in t["blocks"]:
            block = parse_slice(b["slice"])
            for dev in b["devices"]:
                held[dev] = block
                part = parts[devices.index(dev)]
                np.testing.assert_array_equal(part, whole[block], err_msg=f"{name} {dev} {b['slice']}")
        assert sorted(held) == sorted(devices), name  # every device in one block's group


def test_the_slices_cover_the_tensor_once_per_replica_and_the_bytes_add_up(mlp, state):
    rec, _ = mlp
    n_dev = rec.mesh.num_devices
    for name, t in state["tensors"].items():
        shape = tuple(t["shape"])
        count = np.zeros(shape, np.int64)
        replicas = {len(b["devices"]) for b in t["blocks"]}
        assert len(replicas) == 1, name  # every block has as many copies
        (copies,) = replicas
        assert copies * len(t["blocks"]) == n_dev
        for b in t["blocks"]:
            block = parse_slice(b["slice"])
            count[block] += 1
            elements = math.prod(s.stop - s.start for s in block)
            assert b["elements"] == elements
            assert b["bytes"] == elements * np.dtype(rec.record(name).dtype).itemsize == elements * 4
            assert b["short"] == [d.rsplit("device:", 1)[1] for d in b["devices"]]
        assert np.all(count == 1), name  # each element in exactly one block
        # the block rectangles tile the 2-D image exactly once too
        rows, cols = t["image"]
        cells = np.zeros((rows, cols), np.int64)
        for b in t["blocks"]:
            for x, y, w, h in b["rects"]:
                cells[y : y + h, x : x + w] += 1
        assert np.all(cells == 1), name
    # the layouts the tutorial gave: d2/bias replicated on all 8, the rest 2 copies a block
    assert [len(b["devices"]) for b in state["tensors"]["d2/bias"]["blocks"]] == [8]
    assert [b["slice"] for b in state["tensors"]["d1/kernel"]["blocks"]] == [
        "[0:4, 0:4]",
        "[0:4, 4:8]",
        "[0:4, 8:12]",
        "[0:4, 12:16]",
    ]
    assert state["tensors"]["d2/kernel"]["image"] == [16, 1] and state["tensors"]["d1/bias"]["image"] == [1, 16]


# ---- the values, their scale and the norms ---------------------------------------------


def test_the_values_are_what_each_device_recorded(mlp, state):
    rec, model = mlp
    assert state["kinds"] == ["param", "velocity", "grad"] and state["shown_kind"] == "velocity"
    updates = decode(state["updates"])
    np.testing.assert_array_equal(updates, rec.steps)
    devices = list(rec.shard_devices(rec.variables[0]))
    for name, t in state["tensors"].items():
        rows, cols = decode(t["rows"]), decode(t["cols"])
        shape = tuple(t["shape"])
        for kind, entry in t["kinds"].items():
            shards = rec.shard_values(name, kind)  # (n, devices, *local): per device
            values = decode(entry["runs"]["recording"]["values"])
            assert values.dtype == np.float32 and values.shape == (STEPS, len(rows), len(cols))
            for jr, er in enumerate(rows):
                for jc, ec in enumerate(cols):
                    idx = element_of(shape, int(er), int(ec))
                    b = next(
                        b
                        for b in t["blocks"]
                        if all(s.start <= i < s.stop for s, i in zip(parse_slice(b["slice"]), idx))
                    )
                    local = tuple(i - s.start for s, i in zip(parse_slice(b["slice"]), idx))
                    for dev in b["devices"]:  # every replica holds it
                        np.testing.assert_array_equal(
                            values[:, jr, jc], shards[(slice(None), devices.index(dev), *local)]
                        )
        # the last update's parameter is the variable TensorFlow holds
        var = next(v for v in model.trainable_variables if v.name.startswith(name))
        img = global_value(var).reshape(rows.size if len(shape) > 1 else 1, -1)
        last = decode(t["kinds"]["param"]["runs"]["recording"]["values"])[-1]
        np.testing.assert_array_equal(last, img[np.ix_(rows, cols)])


def test_the_colour_limits_and_the_norms_are_the_recorded_ones(mlp, state):
    rec, _ = mlp
    devices = list(rec.shard_devices(rec.variables[0]))
    lut = state["lut"]
    cmap = colormaps["RdBu_r"]
    assert len(lut) == LUT_SIZE and lut == [mcolors.to_hex(cmap((k + 0.5) / LUT_SIZE)) for k in range(LUT_SIZE)]
    for name, t in state["tensors"].items():
        for kind, entry in t["kinds"].items():
            g = np.asarray(rec.global_values(name, kind), np.float64).reshape(STEPS, -1)
            run = entry["runs"]["recording"]
            assert entry["fixed_limit"] == pytest.approx(np.abs(g).max(), rel=1e-7)
            np.testing.assert_allclose(decode(entry["update_limit"]), np.abs(g).max(axis=1), rtol=1e-7)
            np.testing.assert_allclose(decode(run["min"]), g.min(axis=1), rtol=1e-7)
            np.testing.assert_allclose(decode(run["max"]), g.max(axis=1), rtol=1e-7)
            norms = decode(run["norms"])
            assert norms.shape == (STEPS, len(t["blocks"]))
            shards = np.asarray(rec.shard_values(name, kind), np.float64)
            for q, b in enumerate(t["blocks"]):
                d = devices.index(b["devices"][0])
                want = np.linalg.norm(shards[:, d].reshape(STEPS, -1), axis=1)
                np.testing.assert_allclose(norms[:, q], np.where(want > 0, want, np.nan), rtol=1e-5)
            lo, hi = entry["norm_range"]
            finite = norms[np.isfinite(norms)]
            assert lo <= finite.min() and finite.max() <= hi and hi / lo < 5.01 * finite.max() / finite.min()
            ticks = entry["norm_ticks"]
            assert len(ticks) >= 2 and all(lo * (1 - 1e-9) <= tick <= hi * (1 + 1e-9) for tick in ticks)
            assert [float(s) for s in entry["norm_labels"]] == pytest.approx(ticks)


def test_runs_side_by_side_share_one_fixed_scale(pair):
    st = shard_state(pair, step=-1)
    assert st["names"] == ["momentum", "nesterov"] and st["index"] == 9
    entry = st["tensors"]["w"]["kinds"]["velocity"]
    every = np.concatenate([np.abs(r.global_values("w", "velocity")).ravel() for r in pair.values()])
    assert entry["fixed_limit"] == pytest.approx(every.max(), rel=1e-7)
    for name, r in pair.items():
        np.testing.assert_array_equal(decode(entry["runs"][name]["values"]), r.global_values("w", "velocity"))
    per = np.max([np.abs(r.global_values("w", "velocity")).reshape(10, -1).max(axis=1) for r in pair.values()], axis=0)
    np.testing.assert_allclose(decode(entry["update_limit"]), per, rtol=1e-7)
    assert [len(b["devices"]) for b in st["tensors"]["w"]["blocks"]] == [2, 2, 2, 2]  # replicated over batch


# ---- size and sampling ------------------------------------------------------------------


def test_the_tutorial_runs_state_is_well_under_300_kb(state):
    size = saved_bytes(state)
    assert size < 200_000, size


def test_a_big_tensor_is_sampled_to_the_cells_it_fills():
    rec = dtsgd_viz.run(
        dtsgd_viz.surfaces.ShardedQuadratic((640, 480)), {"m": dict(learning_rate=0.5, momentum=0.9)}, 2
    )["m"]
    st = shard_state(rec, max_bytes=4_000_000)  # a generous budget: every cell the panel fills
    t = st["tensors"]["w"]
    rows, cols = decode(t["rows"]), decode(t["cols"])
    assert len(rows) == len(cols) == st["max_cells"] == MAX_CELLS
    np.testing.assert_array_equal(rows, kept_cells(640, MAX_CELLS))
    assert np.all(np.diff(rows) > 0) and rows[0] >= 0 and rows[-1] < 640 and cols[-1] < 480
    for kind in rec.kinds:
        got = decode(t["kinds"][kind]["runs"]["recording"]["values"])
        np.testing.assert_array_equal(got, rec.global_values("w", kind)[:, rows][:, :, cols])
        # the scale is the whole tensor's, not the kept cells'
        assert t["kinds"][kind]["fixed_limit"] == pytest.approx(np.abs(rec.global_values("w", kind)).max(), rel=1e-7)
    assert saved_bytes(st) < 4_000_000 * 4 / 3 + 100_000
    small = shard_state(rec)  # the default budget: coarser cells, a saved state under 300 KB
    assert small["max_cells"] < MAX_CELLS and saved_bytes(small) < 300_000


def test_past_the_coarsest_cells_the_slider_keeps_fewer_updates(mlp):
    rec, _ = mlp
    full = shard_state(rec)
    thin = shard_state(rec, max_bytes=20_000)
    assert thin["max_cells"] == 16 and len(thin["frame_index"]) < len(full["frame_index"])
    assert thin["frame_index"][0] == 0 and thin["frame_index"][-1] == len(rec) - 1
    assert saved_bytes(thin) < saved_bytes(full)
    # the norm lines keep every update, and each kept frame points at its own
    norms = decode(thin["tensors"]["d1/kernel"]["kinds"]["velocity"]["runs"]["recording"]["norms"])
    assert norms.shape[0] == len(rec) == len(decode(thin["norm_updates"]))
    assert thin["norm_index"] == thin["frame_index"]
    # what is kept is still each kept update's own values
    k = thin["frame_index"][1]
    t = thin["tensors"]["d1/kernel"]
    got = decode(t["kinds"]["velocity"]["runs"]["recording"]["values"])[1]
    rows, cols = decode(t["rows"]), decode(t["cols"])
    want = rec.global_values("d1/kernel", "velocity")[k]
    np.testing.assert_array_equal(got, want[rows][:, cols])


# ---- the update shown and the errors ------------------------------------------------------


def test_the_update_picked_and_the_widget(mlp):
    rec, _ = mlp
    assert shard_state(rec)["index"] == 0
    assert shard_state(rec, step=10)["index"] == 9
    assert shard_state(rec, step=-1)["index"] == STEPS - 1
    thin = shard_state(rec, max_points=7)
    assert (
        thin["frame_index"] == np.round(np.linspace(0, STEPS - 1, 7)).astype(int).tolist()
    )  # first and last among them
    assert decode(thin["tensors"]["d1/kernel"]["kinds"]["grad"]["runs"]["recording"]["values"]).shape[0] == 7
    w = ShardExplorer(rec, variable="d2/kernel", kind="grad", step=-1)
    assert (w.update, w.variable, w.kind) == (STEPS, "d2/kernel", "grad")
    assert w.data["kind"] == "shards" and "export default" in w._esm
    w.update = 12
    png = w.snapshot_png()
    assert png.startswith(PNG_SIGNATURE)
    # as a notebook shows a figure: at most a column wide, nothing at its edges (the y label whole)
    from PIL import Image

    from dtsgd_viz.views.core import style

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("L"))
    assert pixels.shape[1] <= style.MAX_WIDTH_PX
    assert (pixels[:, :5] == 255).all() and (pixels[:, -5:] == 255).all()
    # the still's caption says what it shows, on which colour scale: the update's own
    heat = w.still_figure().axes[0].images[0]
    grads = rec.global_values("d2/kernel", "grad")[11]
    assert heat.get_clim()[1] == pytest.approx(symmetric_limit(as_image(grads)))
    assert w.still_caption().startswith(
        f"Still picture: gradient of 'd2/kernel' at update 12 of {STEPS}, on update 12's colour scale"
    )


def test_clear_errors(mlp, pair):
    rec, _ = mlp
    with pytest.raises(ValueError, match=r"Unknown variable 'nope'\. This recording has: \['d1/kernel'"):
        shard_state(rec, variable="nope")
    with pytest.raises(ValueError, match=r"Kind 'momentum' was not recorded\. Recorded kinds: \['param'"):
        shard_state(rec, kind="momentum")
    with pytest.raises(ValueError, match="41"):
        shard_state(rec, step=41)
    empty = dataclasses.replace(rec, steps=rec.steps[:0])
    with pytest.raises(ValueError, match="has no steps"):
        shard_state(empty)
    with pytest.raises(ValueError, match="Recording 'b' has no steps"):
        shard_state({"a": rec, "b": empty})
    with pytest.raises(TypeError, match="Received: list"):
        ShardExplorer([rec])
    with pytest.raises(ValueError, match="different"):
        shard_state({"mlp": rec, "quadratic": pair["momentum"]})


def test_the_update_asked_for_is_kept_when_the_slider_keeps_few(mlp):
    rec, _ = mlp
    st = shard_state(rec, step=10, max_bytes=20_000)
    updates = decode(st["updates"])
    assert len(updates) < len(rec) and updates[st["index"]] == 10
    assert list(updates) == sorted(set(updates.tolist()))
