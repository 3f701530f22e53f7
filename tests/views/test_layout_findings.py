"""The layout, memory and communication figures read at a glance, at the notebook's size:
titles state the finding (checked against an independent count of distinct blocks),
every text is at least ``style.NOTE_SIZE``, labels sit clear of the bars and inside
their circles, block labels stay on one or two lines, no empty band above the key."""

import math
import re

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
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
        ticks = [*_in_view(ax, ax.get_xticklabels(), False), *_in_view(ax, ax.get_yticklabels(), True)]
        texts += [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label, *ticks]
        for child in ax.child_axes:
            texts += [child.xaxis.label, *child.get_xticklabels(), *child.get_yticklabels()]
    return r, [(t, t.get_window_extent(r)) for t in texts if t.get_visible() and t.get_text()]


def _in_view(ax, labels, y: bool) -> list:
    """The tick labels matplotlib draws: those whose tick is inside the view (it lists more)."""
    lo, hi = sorted(ax.get_ylim() if y else ax.get_xlim())
    return [t for t in labels if lo - 1e-9 <= t.get_position()[1 if y else 0] <= hi + 1e-9]


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
    title = fig.texts[0].get_text()
    assert "\n" not in title  # one line
    prefix = f"w {tuple(shape)}"
    if n == cut:
        assert title == f"{prefix}: {n} devices, {n} distinct {block} blocks"
    elif cut == 1:
        assert title == (f"{prefix}: all {n} devices hold the whole tensor (copied over {', '.join(unused)})")
    else:
        assert title == (
            f"{prefix}: {cut} distinct {block} blocks, each on {n // cut} devices (copied over {', '.join(unused)})"
        )
    assert "sharding [" not in title  # the spec is the setting: the subtitle's
    assert fig.texts[1].get_text().startswith(f"sharding [{', '.join(specs)}] on {mesh}")
    # a wrapped title stays inside the figure and clear of the subtitle
    r, boxes = _texts(fig)
    t0, t1 = fig.texts[0].get_window_extent(r), fig.texts[1].get_window_extent(r)
    w, _ = fig.canvas.get_width_height()
    assert t0.x0 >= 0 and t0.x1 <= w and t0.y0 > t1.y1
    assert w <= MAX_WIDTH_PX


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
    three, taller than wide as the tensor is; every block names exactly its devices on
    one line, turned along the 16 tall narrow blocks."""
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
            assert "\n" not in text and tuple(int(i) for i in re.findall(r"\d+", text)) == geom.replica_groups[g]
            if specs == ("unsharded", "model"):
                assert t.get_rotation() == 90
    assert len(set(sizes)) == 1, sizes
    # named labels need no note
    small = plot_layout(LayoutSpec(("unsharded", "model"), MeshSpec.create({"batch": 2, "model": 4})), (8, 8))
    assert not [t for t in small.texts if t.get_gid() == "note"]


def test_bare_ids_are_named_device_ids():
    """64 devices: the key's cells are too small for names, so they show bare ids and the
    key's own title says what the numbers are (no note far from the key)."""
    spec = LayoutSpec(("model", "unsharded"), MeshSpec.create({"data": 4, "model": 16}))
    fig = plot_layout(spec, (1024, 512))
    (key,) = [a for a in fig.axes if a.get_gid() == "mesh-key"]
    assert sorted(int(t.get_text()) for t in key.texts) == list(range(64))
    assert key.get_title() == "devices on the mesh, coloured by the block they hold (k = CPU:k)"
    assert not [t for t in fig.texts if t.get_gid() == "note"]  # the blocks name their devices in full


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
def test_memory_bars_fill_their_axes_and_the_legend_names_the_hatch(communication):
    """The bars reach 1/1.1 of the axes' height (no empty axis above them), their tops are
    the plan's bytes per device, and a legend beside the bars names every variable and the
    velocity slot's hatch; no text is smaller than NOTE_SIZE or overlaps another."""
    plan = _plan()
    fig = dtsgd_viz.plot_memory(plan, communication=communication)
    r, boxes = _texts(fig)
    assert min(t.get_fontsize() for t, _ in boxes) >= NOTE_SIZE
    ax = fig.axes[0]
    tops = {}
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_height() > 0:
            x = round(p.get_x() + p.get_width() / 2)
            tops[x] = max(tops.get(x, 0.0), p.get_y() + p.get_height())
    np.testing.assert_allclose([tops[d] for d in range(8)], plan.bytes_per_device)  # bytes: the plan is small
    assert ax.get_ylim()[1] == pytest.approx(1.1 * plan.bytes_per_device.max())
    legend = fig.axes[-1].get_legend()
    by_size = [e.name for e in sorted(plan.entries, key=lambda e: -int(e.bytes_per_device.max()))]
    assert [t.get_text() for t in legend.get_texts()][:5] == [*by_size[::-1], "velocity slot"]  # top of the stack first
    assert legend.legend_handles[4].get_hatch() == "///"
    frame = legend.get_window_extent(r)
    for a in fig.axes:
        bars = [p.get_window_extent(r) for p in a.patches if isinstance(p, Rectangle) and p.get_height() > 0]
        assert all(Bbox.intersection(frame, b) is None for b in bars)
    texts = [b for _, b in boxes]
    for i, a in enumerate(texts):
        for b in texts[i + 1 :]:
            inter = Bbox.intersection(a, b)
            assert inter is None or inter.width <= 1 or inter.height <= 1


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
    ids = sorted(int(t.get_text().rsplit(":", 1)[-1]) for t in labels)  # CPU:k where it fits, else k
    assert ids == list(range(mesh.num_devices))
    assert all(t.get_text() == mesh.short_device_names[int(t.get_gid().rsplit("-", 1)[1])] for t in labels) == (
        mesh.num_devices == 8
    )
    for t in labels:
        d = t.get_gid().rsplit("-", 1)[1]
        inner, outer = t.get_window_extent(r), circles[f"device-{d}"].get_window_extent(r)
        assert inner.x0 >= outer.x0 and inner.x1 <= outer.x1, t.get_text()
        assert inner.y0 >= outer.y0 - 1 and inner.y1 <= outer.y1 + 1, t.get_text()
        assert np.isclose(inner.x0 + inner.x1, outer.x0 + outer.x1, atol=2)  # centred
