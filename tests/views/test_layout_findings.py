"""The layout, memory and communication figures read at a glance, at the notebook's size:
titles state the finding (checked against an independent count of distinct blocks),
every text is at least ``style.NOTE_SIZE``, labels sit clear of the bars and inside
their circles, block labels stay on one or two lines, no empty band above the key."""

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.patches import Circle, Rectangle  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402

import dtsgd_viz  # noqa: E402
from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan, plot_layout, shard_geometry  # noqa: E402
from dtsgd_viz.views import plot_communication  # noqa: E402
from dtsgd_viz.views.core.style import DPI, MAX_WIDTH_PX, NOTE_SIZE  # noqa: E402

CASES = [  # (mesh, shape, specs), the tutorial's layouts among them
    ({"batch": 2, "model": 4}, (8, 8), ("batch", "model")),
    ({"batch": 2, "model": 4}, (8, 8), ("unsharded", "model")),
    ({"batch": 2, "model": 4}, (4, 16), ("unsharded", "model")),
    ({"batch": 2, "model": 4}, (8, 8), ("unsharded", "unsharded")),
    ({"x": 2, "y": 2, "z": 2}, (2, 4, 4), ("x", "y", "z")),
    ({"x": 2, "y": 2, "z": 2}, (4, 8), ("unsharded", "z")),
    ({"data": 4, "model": 16}, (1024, 512), ("model", "unsharded")),
    ({"data": 4, "model": 16}, (1024, 512), ("data", "model")),
    ({"data": 4, "model": 16}, (1024, 512), ("unsharded", "model")),
    ({"batch": 2, "model": 4}, (3, 3, 8, 8), ("unsharded", "unsharded", "unsharded", "model")),
]
IDS = ["-".join(specs) + f"-{len(dims)}d" for dims, _, specs in CASES]


def _texts(fig):
    """Every visible text of the figure with its window extent (after a draw)."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    r = canvas.get_renderer()
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
        for child in ax.child_axes:
            texts += [child.xaxis.label, *child.get_xticklabels(), *child.get_yticklabels()]
    return r, [(t, t.get_window_extent(r)) for t in texts if t.get_visible() and t.get_text()]


def _flat(text):
    return " ".join(text.split())


# ---- titles say the finding -------------------------------------------------------------


@pytest.mark.parametrize("dims, shape, specs", CASES, ids=IDS)
@pytest.mark.slow
def test_titles_count_the_distinct_blocks_and_their_copies(dims, shape, specs):
    spec = LayoutSpec(specs, MeshSpec.create(dims))
    mesh = spec.mesh
    geom = shard_geometry(shape, spec)
    # independent counts: distinct slices among the devices' blocks, and the mesh dims the
    # layout cuts with (their sizes multiply to the number of distinct blocks)
    distinct = {tuple((s.start, s.stop) for s in b) for b in geom.blocks}
    cut = math.prod(mesh.dim_size(s) for s in specs if s != "unsharded")
    assert len(distinct) == cut
    n = mesh.num_devices
    unused = [d for d in mesh.dim_names if d not in specs and mesh.dim_size(d) > 1]
    assert n // cut == math.prod(mesh.dim_size(d) for d in unused)
    block = "x".join(str(sh // (mesh.dim_size(s) if s != "unsharded" else 1)) for sh, s in zip(shape, specs))
    fig = plot_layout(spec, shape, name="w")
    title = _flat(fig.texts[0].get_text())
    prefix = f"w {tuple(shape)}"
    if n == cut:
        assert title == f"{prefix}: {n} devices, {n} distinct {block} blocks"
    elif cut == 1:
        assert title == (f"{prefix}: all {n} devices hold the whole tensor (copied over {', '.join(unused)})")
    else:
        assert title == (
            f"{prefix}: {n} devices hold {cut} distinct {block} blocks: each on "
            f"{n // cut} devices (copied over {', '.join(unused)})"
        )
    assert "sharding [" not in title  # the spec is the setting: the subtitle's
    assert fig.texts[1].get_text().startswith(f"sharding [{', '.join(specs)}] on {mesh}")
    # a wrapped title stays inside the figure and clear of the subtitle
    r, boxes = _texts(fig)
    t0, t1 = fig.texts[0].get_window_extent(r), fig.texts[1].get_window_extent(r)
    w, _ = fig.canvas.get_width_height()
    assert t0.x0 >= 0 and t0.x1 <= w and t0.y0 > t1.y1
    assert w <= MAX_WIDTH_PX


def test_ax_title_is_a_short_finding():
    spec = LayoutSpec(("unsharded", "b"), MeshSpec.create({"a": 2, "b": 8}))
    fig = Figure(figsize=(4.5, 2.0))
    ax = fig.add_axes((0.15, 0.3, 3.0 / 4.5, 0.5))
    plot_layout(spec, (4, 64), ax=ax)
    geom = shard_geometry((4, 64), spec)
    assert ax.get_title() == f"(4, 64): {geom.num_unique} blocks x {16 // geom.num_unique} copies"
    r = FigureCanvasAgg(fig).get_renderer()
    fig.canvas.draw()
    assert ax.title.get_window_extent(r).x0 >= 0


# ---- every text readable at the notebook's size -------------------------------------------


@pytest.mark.parametrize("dims, shape, specs", CASES, ids=IDS)
@pytest.mark.slow
def test_layout_texts_are_at_least_note_size_and_labels_short(dims, shape, specs):
    spec = LayoutSpec(specs, MeshSpec.create(dims))
    fig = plot_layout(spec, shape)
    _, boxes = _texts(fig)
    assert boxes and min(t.get_fontsize() for t, _ in boxes) >= NOTE_SIZE
    labels = [t.get_text() for ax in fig.axes for t in ax.texts if t.get_gid().startswith("label-")]
    assert labels and all(s.count("\n") <= 1 for s in labels)  # one or two lines


@pytest.mark.slow
def test_every_layout_of_one_tensor_on_one_mesh_has_one_shape():
    """1024x512 on data=4, model=16 as [model, unsharded], [data, model] and
    [unsharded, model] (the explorer's start): the panel has one size and shape in all
    three, taller than wide as the tensor is; the 16 tall narrow blocks of 4 copies list
    their devices turned along the block, in JAX's ``CPU 0,16,32,48`` as the 16 wide
    ones do; the key names no device in another notation."""
    mesh = MeshSpec.create({"data": 4, "model": 16})
    sizes = []
    for specs in (("model", "unsharded"), ("data", "model"), ("unsharded", "model")):
        fig = plot_layout(LayoutSpec(specs, mesh), (1024, 512))
        (ax,) = [a for a in fig.axes if a.get_gid() != "mesh-key"]
        box = ax.get_window_extent(FigureCanvasAgg(fig).get_renderer())
        sizes.append((round(box.width), round(box.height)))
        assert box.height > 1.4 * box.width
        geom = shard_geometry((1024, 512), LayoutSpec(specs, mesh))
        labels = {int(t.get_gid().split("-")[1]): t for t in ax.texts if t.get_gid().startswith("label-")}
        assert len(labels) == geom.num_unique
        for g, t in labels.items():
            text = t.get_text()
            if geom.num_unique == 64:
                assert int(text) == geom.replica_groups[g][0]
                continue
            assert "\n" not in text and text.startswith("CPU ")
            assert tuple(int(i) for i in text[4:].split(",")) == geom.replica_groups[g]
            assert t.get_rotation() == (90 if specs[0] == "unsharded" else 0)
        for key in [a for a in fig.axes if a.get_gid() == "mesh-key"]:
            assert not any(t.get_text().startswith("d") for t in key.texts)
    assert len(set(sizes)) == 1, sizes
    # named labels need no note
    small = plot_layout(LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4})), (8, 8))
    assert not [t for t in small.texts if t.get_gid() == "note"]


def test_one_copy_bare_ids_are_named_device_ids():
    spec = LayoutSpec(("data", "model"), MeshSpec.create({"data": 4, "model": 16}))
    fig = plot_layout(spec, (1024, 512))
    (ax,) = [a for a in fig.axes if a.get_gid() != "mesh-key"]
    labels = [t.get_text() for t in ax.texts if t.get_gid().startswith("label-")]
    assert sorted(map(int, labels)) == list(range(64))
    (note,) = [t for t in fig.texts if t.get_gid() == "note"]
    assert "the numbers are device ids" in _flat(note.get_text())


@pytest.mark.parametrize("dims, shape, specs", [c for c in CASES if len(c[1]) >= 3 or "unsharded" in c[2]])
@pytest.mark.slow
def test_no_empty_band_above_the_mesh_key(dims, shape, specs):
    """Between the panels' lowest text and the key's title: a gap, but a small one."""
    spec = LayoutSpec(specs, MeshSpec.create(dims))
    fig = plot_layout(spec, shape)
    keys = [a for a in fig.axes if a.get_gid() == "mesh-key"]
    if not keys:
        pytest.skip("one copy per block and one panel: no key")
    r, _ = _texts(fig)
    panels = [a for a in fig.axes if a.get_gid() != "mesh-key"]
    lowest = min(a.get_tightbbox(r).y0 for a in panels)
    key_top = keys[0].title.get_window_extent(r).y1
    gap_px = lowest - key_top
    assert 0 < gap_px <= 0.4 * DPI, gap_px


# ---- memory: the level labels sit clear of the bars ---------------------------------------


def _plan():
    m = MeshSpec.create({"batch": 2, "model": 4})
    return dtsgd_viz.memory_plan(
        {
            "d1/kernel": ((4, 16), "float32", LayoutSpec(("unsharded", "model"), m)),
            "d1/bias": ((16,), "float32", LayoutSpec(("model",), m)),
            "d2/kernel": ((16, 1), "float32", LayoutSpec(("model", "unsharded"), m)),
            "d2/bias": ((1,), "float32", LayoutSpec(("unsharded",), m)),
        }
    )


@pytest.mark.parametrize("communication", [False, True])
@pytest.mark.slow
def test_memory_labels_do_not_touch_the_bars(communication):
    plan = _plan()
    fig = dtsgd_viz.plot_memory(plan, communication=communication)
    r, boxes = _texts(fig)
    assert min(t.get_fontsize() for t, _ in boxes) >= NOTE_SIZE
    checked = 0
    for ax in fig.axes:
        bars = [p.get_window_extent(r) for p in ax.patches if isinstance(p, Rectangle) and p.get_height() > 0]
        for t in ax.texts:
            if t.get_gid() not in ("sharded-text", "traffic-text"):
                continue
            box = t.get_window_extent(r)
            for b in bars:
                assert Bbox.intersection(box, b) is None or box.y0 >= b.y1 + 2, t.get_text()
            assert box.y0 >= max(b.y1 for b in bars) + 2  # lifted off the tallest bar
            checked += 1
    assert checked == 1 + communication
    # the label's level is still the fullest device's bytes
    (label,) = [t for t in fig.axes[0].texts if t.get_gid() == "sharded-text"]
    unit = 1  # bytes: the plan is small
    assert label.xy[1] * unit == plan.bytes_per_device.max()


# ---- communication: device ids readable inside their circles ------------------------------


@pytest.mark.parametrize("dims", [{"batch": 2, "model": 4}, {"data": 4, "model": 16}])
@pytest.mark.slow
def test_communication_node_labels_are_readable_and_inside(dims):
    mesh = MeshSpec.create(dims)
    names = mesh.dim_names
    plan = communication_plan({"w": ((64, 64), "float32", LayoutSpec(("unsharded", names[-1]), mesh))}, (names[0],))
    fig = plot_communication(plan)
    r, boxes = _texts(fig)
    assert min(t.get_fontsize() for t, _ in boxes) >= NOTE_SIZE
    w, _ = fig.canvas.get_width_height()
    assert w <= MAX_WIDTH_PX
    ax = fig.axes[0]
    circles = {p.get_gid(): p for p in ax.patches if isinstance(p, Circle)}
    labels = [t for t in ax.texts if t.get_gid().startswith("device-label-")]
    assert sorted(int(t.get_text()) for t in labels) == list(range(mesh.num_devices))
    for t in labels:
        d = t.get_gid().rsplit("-", 1)[1]
        inner, outer = t.get_window_extent(r), circles[f"device-{d}"].get_window_extent(r)
        assert inner.x0 >= outer.x0 and inner.x1 <= outer.x1, t.get_text()
        assert inner.y0 >= outer.y0 - 1 and inner.y1 <= outer.y1 + 1, t.get_text()
        assert np.isclose(inner.x0 + inner.x1, outer.x0 + outer.x1, atol=2)  # centred
