"""The browser's LayoutExplorer state (no browser): every layout the dropdowns can pick is
in it, its blocks tile the tensor once per copy, each device holds one block, the bytes,
slices, colours and texts are those of the geometry, the kernel-drawn explorer's state
machine and, on a small virtual-CPU mesh, of what DTensor puts on each device."""

import base64
import itertools
import json

import numpy as np
import pytest
from matplotlib.colors import to_hex

from dtsgd_viz import LayoutSpec, MeshSpec, shard_geometry
from dtsgd_viz.views.mesh.layout_geometry import block_colors, layout_picture, slice_text
from dtsgd_viz.web import encode
from dtsgd_viz.web.layout import LayoutExplorer, layout_key, layout_state
from dtsgd_viz.widgets.layout_explorer import LayoutExplorerState, layout_explorer_state

TUTORIAL = ((1024, 512), {"data": 4, "model": 16})
CASES = [
    TUTORIAL,
    ((8, 4), {"x": 2, "y": 2}),
    ((8, 8), {"a": 2, "b": 2, "c": 2}),
    ((12,), {"x": 2, "y": 3}),
    ((6, 4), {"x": 4, "y": 2}),  # 6 rows: x (4) cannot cut them
]
IDS = ["tutorial", "8x4-on-2x2", "8x8-on-2x2x2", "rank1", "not-divisible"]


@pytest.fixture(scope="module", params=range(len(CASES)), ids=IDS)
def case(request):
    shape, mesh = CASES[request.param]
    return shape, mesh, layout_state(shape, mesh, name="W")


def _valid(state):
    return [(k, state["layouts"][k]) for k in state["order"] if not state["layouts"][k]["error"]]


def _machine(shape, mesh, specs, momentum=True):
    """The kernel-drawn explorer's state after picking ``specs`` in its dropdowns."""
    s = LayoutExplorerState.of(shape, mesh=mesh, name="W", momentum=momentum)
    for dim, spec in enumerate(specs):
        s = layout_explorer_state(s, {"name": "dim", "dim": dim, "new": spec})
    return s


def test_every_assignment_is_a_layout_of_the_state(case):
    shape, mesh, state = case
    options = ["unsharded", *mesh]
    assert state["options"] == options
    want = [layout_key(c) for c in itertools.product(options, repeat=len(shape))]
    assert state["order"] == want and sorted(state["layouts"]) == sorted(want)
    for key in want:
        assert layout_key(state["layouts"][key]["specs"]) == key


def test_blocks_tile_the_tensor_once_per_copy_and_each_device_holds_one(case):
    shape, mesh, state = case
    n = int(np.prod(list(mesh.values())))
    assert _valid(state)
    for key, entry in _valid(state):
        rects = encode.decode(entry["rects"])
        group_of = encode.decode(entry["group_of"])
        groups = rects.shape[0]
        assert group_of.shape == (n,) and set(group_of.tolist()) == set(range(groups)), key
        copies = np.bincount(group_of, minlength=groups)
        assert (copies == entry["copies"]).all() and entry["copies"] * groups == n, key
        once = np.zeros((shape[-2] if len(shape) == 2 else 1, shape[-1]), np.int64)
        held = np.zeros_like(once)
        for g, (x, y, w, h) in enumerate(rects):
            assert w > 0 and h > 0
            once[y : y + h, x : x + w] += 1
            held[y : y + h, x : x + w] += copies[g]
        assert (once == 1).all(), key  # the blocks tile the tensor
        assert (held == n // groups).all(), key  # and every copy of it: once per replica


def test_bytes_are_elements_times_itemsize_and_match_the_memory_plan(case):
    shape, mesh, state = case
    assert state["itemsize"] == 4
    for key, entry in _valid(state):
        rects = encode.decode(entry["rects"])
        nbytes = encode.decode(entry["bytes"])
        np.testing.assert_array_equal(nbytes, rects[:, 2] * rects[:, 3] * 4)
        assert int(nbytes[0]) == int(np.prod(entry["local_shape"])) * 4
        plan = _machine(shape, mesh, entry["specs"]).plan
        assert plan is not None
        e = plan.entry("W")
        assert (e.param_bytes_per_device == nbytes[encode.decode(entry["group_of"])]).all(), key


def test_slices_rects_colours_and_texts_are_the_geometry_and_the_state_machine(case):
    shape, mesh, state = case
    for key, entry in _valid(state):
        s = _machine(shape, mesh, entry["specs"])
        assert s.error == "" and s.geometry is not None
        g = s.geometry
        rects, group_of = encode.decode(entry["rects"]), encode.decode(entry["group_of"])
        assert tuple(group_of.tolist()) == g.group_of
        for d, block in enumerate(g.blocks):
            k = group_of[d]
            assert entry["slices"][k] == slice_text(block), (key, d)
            x, w = block[-1].start, block[-1].stop - block[-1].start
            y, h = (block[-2].start, block[-2].stop - block[-2].start) if len(shape) == 2 else (0, 1)
            assert tuple(rects[k]) == (x, y, w, h), (key, d)
        assert entry["colors"] == [to_hex(c) for c in block_colors(g)]
        assert entry["summary"] == s.summary() and entry["memory"] == s.memory_note()
        assert entry["traffic"].startswith("gradient all-reduce")
        assert entry["title"] == layout_picture(shape, LayoutSpec(tuple(entry["specs"]), g.layout.mesh), name="W").title


def test_impossible_layouts_carry_the_state_machines_reason(case):
    shape, mesh, state = case
    for key in state["order"]:
        entry = state["layouts"][key]
        assert entry["error"] == _machine(shape, mesh, entry["specs"]).error, key
        if entry["error"]:
            assert set(entry) == {"specs", "error"}
    twice = [
        k for k in state["order"] if len(set(k.split(", ")) - {"unsharded"}) < len(k.split(", ")) - k.count("unsharded")
    ]
    assert all("only one tensor dim" in state["layouts"][k]["error"] for k in twice)


def test_not_divisible_is_impossible_with_the_arithmetic():
    state = layout_state((6, 4), {"x": 4, "y": 2})
    error = state["layouts"]["x, unsharded"]["error"]
    assert "size 6" in error and "does not divide" in error and "6 = 1 x 4 + 2" in error
    assert state["layouts"]["x, y"]["error"] and not state["layouts"]["y, x"]["error"]


def test_the_mesh_grid_is_the_layout_figures_key():
    shape, mesh = TUTORIAL
    state = layout_state(shape, mesh)
    spec = MeshSpec.create(mesh)
    key = layout_picture(shape, LayoutSpec(("unsharded", "model"), spec)).key
    assert key is not None
    cells = encode.decode(state["mesh"]["cells"])
    for c in key.cells:
        assert tuple(cells[c.device]) == c.rect[:2]
    assert state["mesh"]["size"] == [16, 4]
    assert state["mesh"]["coords"][17] == "data=1, model=1" and state["mesh"]["devices"][17] == "CPU:17"


def test_the_tutorial_state_is_small():
    shape, mesh = TUTORIAL
    w = LayoutExplorer(shape, mesh=mesh, name="W", specs=("unsharded", "model"))
    from ipywidgets.widgets.widget import _remove_buffers

    st, _, bufs = _remove_buffers(w.get_state())
    size = len(json.dumps(st["data"])) + sum(len(base64.b64encode(bytes(b))) for b in bufs)
    assert size < 300_000, size
    assert len(w.data["order"]) == 9 and len(_valid(w.data)) == 7


def test_the_specs_trait_switches_and_checks():
    w = LayoutExplorer((8, 4), mesh={"x": 2, "y": 2}, specs="x, y")
    assert w.specs == "x, y" and w.layout["specs"] == ["x", "y"]
    w.specs = "[y,unsharded]"
    assert w.specs == "y, unsharded" and w.layout_spec.sharding_specs == ("y", "unsharded")
    w.specs = "x, x"  # pickable in the dropdowns, impossible: the state says why
    assert "only one tensor dim" in w.layout["error"]
    with pytest.raises(ValueError, match=r"one of \['unsharded', 'x', 'y'\].*Received: 'z, y'"):
        w.specs = "z, y"
    assert w.specs == "x, x"
    assert LayoutExplorer((8,)).data["mesh_text"] == "batch=2, model=4"  # the kernel-drawn one's default


def test_snapshots_are_pngs():
    w = LayoutExplorer((8, 4), mesh={"x": 2, "y": 2}, specs="x, y")
    assert w.snapshot_png()[:8] == b"\x89PNG\r\n\x1a\n"
    w.specs = "x, x"
    assert w.snapshot_png()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_still_caption_names_the_tensor_the_mesh_and_each_pick():
    w = LayoutExplorer((8, 4), mesh={"x": 2, "y": 2}, name="W", specs="x, y")
    assert "W (8, 4) on mesh x=2 x y=2 with dim 0 = x, dim 1 = y" in w.still_caption()
    w.specs = "unsharded, x"
    assert "dim 0 = unsharded, dim 1 = x" in w.still_caption()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(shape=(4, 4, 4)), r"rank 1 or 2.*Received: shape \(4, 4, 4\)"),
        (dict(shape="44"), r"tuple of 1 or 2 ints.*Received: '44'"),
        (dict(shape=(4, 0)), r">= 1. Received: shape \(4, 0\)"),
        (dict(shape=(4, True)), "Received"),
        (dict(mesh={"x": 0}), r"mesh must be a dict.*Received: x=0"),
        (dict(mesh="x=2"), r"mesh must be a dict.*Received: 'x=2'"),
        (dict(mesh={"x": 32, "y": 16}), r"512 devices.*at most 256"),
        (dict(specs=("x",)), r"for each of the tensor's 2 dim\(s\).*Received: \('x',\)"),
        (dict(specs=("x", "model")), r"one of \['unsharded', 'x', 'y'\].*Received: \('x', 'model'\)"),
    ],
)
def test_bad_arguments_say_what_was_received(kwargs, match):
    args = dict(shape=(8, 4), mesh={"x": 2, "y": 2}) | kwargs
    with pytest.raises(ValueError, match=match):
        layout_state(args.pop("shape"), args.pop("mesh"), **args)


def test_blocks_are_what_dtensor_puts_on_each_device():
    import dtsgd_viz
    from dtsgd_viz import dtensor as _dtensor

    shape, dims = (8, 4), {"x": 2, "y": 2}
    state = layout_state(shape, dims)
    mesh = dtsgd_viz.make_mesh(dims)
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    checked = 0
    for key, entry in _valid(state):
        live = _dtensor.to_layout(LayoutSpec(tuple(entry["specs"]), _dtensor.mesh_spec(mesh)))
        shards = _dtensor.unpack(_dtensor.put(x, live))
        rects, group_of = encode.decode(entry["rects"]), encode.decode(entry["group_of"])
        assert len(shards) == len(group_of) == 4
        for d, shard in enumerate(shards):
            c, r, w, h = rects[group_of[d]]
            assert tuple(shard.shape) == (h, w) == tuple(entry["local_shape"]), (key, d)
            np.testing.assert_array_equal(shard, x[r : r + h, c : c + w], err_msg=f"{key}, device {d}")
        checked += 1
    assert checked == 7
    assert shard_geometry(shape, _dtensor.layout_spec(live)).num_unique == len(rects)


def test_blocks_named_by_bare_device_ids_say_so():
    from dtsgd_viz.web.layout import layout_state

    st = layout_state((1024, 512), {"data": 4, "model": 16})
    for key in st["order"]:
        e = st["layouts"][key]
        if e["error"]:
            continue
        bare = any(lab and all(ch.isdigit() or ch in ",\n" for ch in lab) for lab in e["labels"])
        assert bool(e["ids_note"]) == bare, key
    # the 64 blocks of [data, model] name their devices by id, upright ("CPU:n" fits only turned
    # and small), and the note says once what the numbers are
    assert st["layouts"]["data, model"]["labels"] == [str(d) for d in range(64)]
    assert st["layouts"]["data, model"]["ids_note"] == "the numbers are device ids (0 = CPU:0, ..., 63 = CPU:63)"
