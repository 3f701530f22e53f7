"""Mesh layout views, checked through their data: block rectangles, labels and colours
read back from the figure against the shard geometry and against what DTensor really
puts on each device; golden text for the tables; no TensorFlow for hypothetical layouts."""

import matplotlib

matplotlib.use("Agg")

import re  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import textwrap  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402
import tensorflow as tf  # noqa: E402
import tf_keras  # noqa: E402
from helpers.builders import CASE_IDS, LAYOUT_CASES, layout, layoutmap_mlp  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402
from matplotlib.transforms import Bbox  # noqa: E402
from tensorflow.experimental import dtensor  # noqa: E402

import dtsgd_viz  # noqa: E402
from dtsgd_viz import (  # noqa: E402
    LayoutSpec,
    MeshSpec,
    layout_table,
    model_table,
    plot_layout,
    shard_geometry,  # noqa: E402
)
from dtsgd_viz import dtensor as _dtensor  # noqa: E402
from dtsgd_viz.views.core.style import BLOCK_COLORS, block_styles  # noqa: E402
from dtsgd_viz.views.mesh.layout_colors import mesh_colors as mesh_block_colors  # noqa: E402
from dtsgd_viz.views.mesh.layout_geometry import (
    block_colors,  # noqa: E402
    compact_devices,
    copies_text,
    label_blocks,
    layout_picture,
    pick_indices,
)

# ---- reading a figure back -----------------------------------------------------------


def devices_in(label, names):
    """Device numbers named by a block label: 'CPU:0', 'CPU:0,4', 'CPU:0-3,8', bare ids
    '0,16' or names not of the 'CPU:k' kind ('TPU_0,TPU_4')."""
    label = label.replace("\n", "")
    if m := re.fullmatch(r"[A-Za-z]+:([\d,-]+)", label):  # one platform, then numbers
        label = ",".join(re.sub(r"(\d+)", r"d\1", p) for p in m[1].split(","))
    parts = [p.strip() for p in label.replace("\n", " ").split(",") if p.strip()]
    out = []
    for p in parts:
        if re.fullmatch(r"\d+", p):  # bare ids: "0,16" (the figure's note says so)
            out.append(int(p))
        elif m := re.fullmatch(r"d(\d+)-d(\d+)", p):
            out += range(int(m[1]), int(m[2]) + 1)
        elif m := re.fullmatch(r"d(\d+)", p):
            out.append(int(m[1]))
        else:
            out.append(names.index(p))
    return tuple(out)


def panels_of(fig):
    return [ax for ax in fig.axes if ax.get_gid() != "mesh-key"]


def blocks_of(ax, names):
    """{group: (rect, facecolor, devices from the label)} read from the artists."""
    patches = {p.get_gid(): p for p in ax.patches}
    out = {}
    for t in ax.texts:
        if t.get_gid().startswith("label-"):
            g = int(t.get_gid().split("-")[1])
            p = patches[f"block-{g}"]
            rect = (p.get_x(), p.get_y(), p.get_width(), p.get_height())
            out[g] = (rect, p.get_facecolor(), devices_in(t.get_text(), names))
    assert len(out) == sum(1 for k in patches if k.startswith("block-")), "a block has no label"
    return out


def panel_index(ax, rank=None):
    """Leading indices of a facet from its title '[3, :, :]' (``rank`` given: a slice
    for each leading dim drawn once, ':' in the title, or every one when untitled)."""
    if rank is None:
        return tuple(int(s) for s in re.findall(r"\d+", ax.get_title()))
    title = ax.get_title().strip("[]")
    parts = title.split(", ")[: rank - 2] if title else [":"] * (rank - 2)
    return tuple(slice(None) if p == ":" else int(p) for p in parts)


def region(rect, rank):
    x, y, w, h = (int(round(v)) for v in rect)
    return (slice(y, y + h), slice(x, x + w)) if rank >= 2 else (slice(x, x + w),)


def text_boxes(fig):
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    texts = list(fig.texts)
    for ax in fig.axes:
        texts += [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
    return renderer, [(t, t.get_window_extent(renderer)) for t in texts if t.get_visible() and t.get_text()]


def assert_readable(fig):
    """Every text inside the figure, no two overlapping, every block label inside its block."""
    renderer, boxes = text_boxes(fig)
    width, height = fig.canvas.get_width_height()
    for t, b in boxes:
        assert b.x0 >= -1 and b.y0 >= -1 and b.x1 <= width + 1 and b.y1 <= height + 1, t.get_text()
    for i, (t1, b1) in enumerate(boxes):
        for t2, b2 in boxes[i + 1 :]:
            inter = Bbox.intersection(b1, b2)
            assert inter is None or inter.width <= 1 or inter.height <= 1, (
                f"{t1.get_text()!r} overlaps {t2.get_text()!r}"
            )
    for ax in fig.axes:
        patches = {p.get_gid(): p for p in ax.patches}
        for t in ax.texts:
            kind, g = t.get_gid().rsplit("-", 1)
            cell = patches[f"key-{g}" if kind == "key-label" else f"block-{g}"]
            outer, inner = cell.get_window_extent(renderer), t.get_window_extent(renderer)
            assert (
                inner.x0 >= outer.x0 - 1
                and inner.x1 <= outer.x1 + 1
                and inner.y0 >= outer.y0 - 1
                and inner.y1 <= outer.y1 + 1
            ), t.get_text()


# ---- against shard_geometry (pure) -----------------------------------------------------


@pytest.mark.parametrize("dims, shape, specs", LAYOUT_CASES, ids=CASE_IDS)
def test_blocks_against_shard_geometry(dims, shape, specs):
    spec = LayoutSpec(specs, MeshSpec.create(dims))
    geom = shard_geometry(shape, spec)
    n = spec.mesh.num_devices
    fig = plot_layout(spec, shape)
    panels = panels_of(fig)
    # one panel per index of each sharded leading dim; unsharded ones are drawn once
    assert len(panels) == int(np.prod([shape[d] for d in range(len(shape) - 2) if specs[d] != "unsharded"]))
    seen = set()
    for ax in panels:
        index = panel_index(ax, len(shape)) if len(shape) >= 3 else ()
        blocks = blocks_of(ax, spec.mesh.short_device_names)
        cover = np.zeros(shape[-2:] if len(shape) >= 2 else shape, int)
        for g, (rect, color, devices) in blocks.items():
            assert devices == geom.replica_groups[g]
            want = geom.blocks[devices[0]]
            assert all(s.start <= i < s.stop for s, i in zip(want, index) if isinstance(i, int))
            # a leading dim drawn once: every block spans it whole
            assert all(s == slice(0, shape[k]) for k, (s, i) in enumerate(zip(want, index)) if not isinstance(i, int))
            assert region(rect, len(shape)) == want[-2:] if len(shape) >= 2 else want
            assert color == to_rgba(block_colors(geom)[g])  # one colour per block
            assert not any(p.get_gid().startswith("swatch") for p in ax.patches)
            cover[region(rect, len(shape))] += 1
            seen.add(g)
        assert np.all(cover == 1)  # the blocks tile the panel exactly once
    assert seen == set(range(geom.num_unique))
    keys = [ax for ax in fig.axes if ax.get_gid() == "mesh-key"]
    if geom.num_unique == n:  # one copy each: the block labels say it all, no key
        assert not keys
        return
    (key,) = keys
    assert sorted(p.get_gid() for p in key.patches) == sorted(f"key-{d}" for d in range(n))
    for p in key.patches:  # each device in the colour of the block it holds
        d = int(p.get_gid()[4:])
        assert p.get_facecolor() == to_rgba(block_styles(geom)[geom.group_of[d]][0])


# ---- against what DTensor puts on each device ----------------------------------------


@pytest.mark.parametrize("dims, shape, specs", LAYOUT_CASES, ids=CASE_IDS)
@pytest.mark.slow
def test_blocks_against_dtensor_unpack(dims, shape, specs):
    mesh = dtsgd_viz.make_mesh(dims)
    live = layout(mesh, *specs)
    array = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    shards = _dtensor.unpack(_dtensor.put(array, live))
    names = _dtensor.mesh_spec(mesh).short_device_names
    fig = plot_layout(live, shape)
    held = {d: [] for d in range(len(shards))}
    for ax in panels_of(fig):
        index = panel_index(ax, len(shape)) if len(shape) >= 3 else ()
        for rect, _, devices in blocks_of(ax, names).values():
            for d in devices:
                held[d].append(array[index + region(rect, len(shape))])
    for d, shard in enumerate(shards):
        if len(shape) <= 2:
            assert len(held[d]) == 1
            np.testing.assert_array_equal(held[d][0], shard)
        else:  # every value the device holds, drawn once across the facets
            drawn = np.sort(np.concatenate([h.ravel() for h in held[d]]))
            np.testing.assert_array_equal(drawn, np.sort(shard.ravel()))
    # the same picture from a DVariable (shape and layout read from it)
    var = _dtensor.variable(array, live, name="w")
    again = plot_layout(var)
    assert [blocks_of(ax, names) for ax in panels_of(again)] == [blocks_of(ax, names) for ax in panels_of(fig)]
    assert again.texts[0].get_text().startswith(f"w {tuple(shape)}")


# ---- what the figures say ------------------------------------------------------------------


def _fig(dims, shape, specs, **kw):
    return plot_layout(LayoutSpec(specs, MeshSpec.create(dims)), shape, **kw)


@pytest.mark.slow
def test_rank1_strip_and_axis_labels():
    fig = _fig({"x": 8}, (16,), ("x",), name="b")
    (ax,) = panels_of(fig)
    assert ax.get_xlabel() == "dim 0 — over 'x' (8)"  # the one wording of every layout picture
    assert list(ax.get_xticks()) == list(range(0, 17, 2))
    assert [t.get_text() for t in ax.texts if t.get_gid().startswith("label")] == [f"CPU:{d}" for d in range(8)]
    assert not [t for t in ax.texts if t.get_gid().startswith("slices")]  # the ticks give the slices
    assert fig.texts[0].get_text() == "b (16,): 8 devices, 8 distinct 2 blocks"
    assert fig.texts[1].get_text().startswith("sharding [x] on Mesh(x=8; 8 devices)")
    assert_readable(fig)


@pytest.mark.slow
def test_2x4_sharded_both_dims_and_replicated():
    fig = _fig({"batch": 2, "model": 4}, (8, 16), ("batch", "model"))
    (ax,) = panels_of(fig)
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("dim 1 — over 'model' (4)", "dim 0 — over 'batch' (2)")
    assert ax.get_ylim() == (8, 0)  # row 0 on top, as a matrix prints
    assert_readable(fig)
    fig = _fig({"batch": 2, "model": 4}, (8, 16), ("unsharded", "model"))
    (ax,) = panels_of(fig)
    assert ax.get_ylabel() == "dim 0 — not sharded"
    labels = [t.get_text() for t in ax.texts if t.get_gid().startswith("label")]
    assert labels == ["CPU:0,4", "CPU:1,5", "CPU:2,6", "CPU:3,7"]
    # the title counts the distinct blocks and where their copies live
    assert " ".join(fig.texts[0].get_text().split()) == (
        "(8, 16): 4 distinct 8x4 blocks, each on 2 devices (copied over batch)"
    )
    assert fig.texts[1].get_text().startswith("sharding [unsharded, model] on Mesh(batch=2")
    assert_readable(fig)


@pytest.mark.parametrize(
    "dims, shape, specs, roles",
    [
        # cut 4 ways over 'model' and copied over 'batch': the copies come from the mesh dim
        (
            {"batch": 2, "model": 4},
            (8, 16),
            ("unsharded", "model"),
            "batch: unused -> 2 copies · model: cuts tensor dim 1 (4 ways)",
        ),
        (
            {"batch": 2, "model": 4},
            (16, 8),
            ("model", "unsharded"),
            "batch: unused -> 2 copies · model: cuts tensor dim 0 (4 ways)",
        ),
        (
            {"batch": 2, "model": 4},
            (8, 8),
            ("batch", "model"),
            "batch: cuts tensor dim 0 (2 ways) · model: cuts tensor dim 1 (4 ways)",
        ),
        ({"x": 8}, (4, 8), ("unsharded", "unsharded"), "x: unused -> 8 copies"),
        (
            {"a": 2, "b": 2, "c": 2},
            (4, 6),
            ("b", "a"),
            "c: unused -> 2 copies · a: cuts tensor dim 1 (2 ways) · b: cuts tensor dim 0 (2 ways)",
        ),
    ],
)
def test_the_figure_says_where_copies_come_from(dims, shape, specs, roles):
    spec = LayoutSpec(specs, MeshSpec.create(dims))
    fig = plot_layout(spec, shape)
    texts = [t.get_text() for t in fig.texts]
    assert copies_text(spec) == f"mesh dims: {roles}"  # the explorer's line; the figure's title says it
    geom = shard_geometry(shape, spec)
    unused = [s for n, s in zip(spec.mesh.dim_names, spec.mesh.dim_sizes) if n not in specs]
    assert geom.num_devices // geom.num_unique == int(np.prod(unused))  # copies = unused dims
    over = [n for n, z in zip(spec.mesh.dim_names, spec.mesh.dim_sizes) if n not in specs and z > 1]
    assert texts[0].endswith(f"(copied over {', '.join(over)})") == bool(over)
    assert not any("replicated" in t for t in texts)
    (ax,) = panels_of(fig)
    for dim, label in ((len(shape) - 1, ax.get_xlabel()), (len(shape) - 2, ax.get_ylabel())):
        assert label.replace("\n", " ").endswith(
            "not sharded" if specs[dim] == "unsharded" else f"over '{specs[dim]}' ({spec.mesh.dim_size(specs[dim])})"
        )
    keys = [a for a in fig.axes if a.get_gid() == "mesh-key"]
    if geom.num_devices == geom.num_unique:  # one copy each: no key
        assert not keys
    else:
        assert keys[0].get_xlabel() == f"mesh dim {spec.mesh.dim_names[-1]}"  # the title says where copies come from
    assert_readable(fig)


def test_2x2x2_mesh_rank3_facets_and_mesh_key():
    fig = _fig({"a": 2, "b": 2, "c": 2}, (2, 4, 6), ("a", "b", "c"))
    panels = panels_of(fig)
    assert [ax.get_title() for ax in panels] == ["[0, :, :]", "[1, :, :]"]
    assert fig.texts[1].get_text().endswith("; panels: dim 0 — over 'a' (2)")
    assert panels[0].get_ylabel() == "dim 1 — over 'b' (2)"
    assert not [ax for ax in fig.axes if ax.get_gid() == "mesh-key"]  # one copy per block: no key
    assert_readable(fig)
    fig = _fig({"a": 2, "b": 2, "c": 2}, (4, 6), ("unsharded", "c"))  # copies: the key shows where
    key = next(ax for ax in fig.axes if ax.get_gid() == "mesh-key")
    assert key.get_xlabel() == "mesh dim c"
    assert [t.get_text() for t in key.get_yticklabels()] == ["a=0, b=0", "a=0, b=1", "a=1, b=0", "a=1, b=1"]
    assert [t.get_text() for t in key.texts] == [f"CPU:{d}" for d in range(8)]
    assert_readable(fig)


def test_hypothetical_16_devices_groups_replicas():
    fig = _fig({"data": 4, "model": 4}, (8, 64), ("model", "unsharded"), name="emb")
    (ax,) = panels_of(fig)
    labels = [t.get_text() for t in ax.texts if t.get_gid().startswith("label")]
    assert labels == ["CPU:" + ",".join(str(d) for d in range(k, 16, 4)) for k in range(4)]  # named: they fit
    key = next(a for a in fig.axes if a.get_gid() == "mesh-key")
    assert len({p.get_facecolor() for p in key.patches}) == 4  # one colour per block
    assert_readable(fig)


MANY = [
    ({"batch": 2, "model": 8}, (16, 64), ("batch", "model")),  # 16 blocks
    ({"x": 4, "y": 8}, (32, 32), ("unsharded", "y")),  # 8 blocks x 4 copies
    ({"x": 8, "y": 8}, (64, 64), ("x", "y")),  # 64 blocks
    ({"a": 4, "b": 4, "c": 4}, (16, 16), ("a", "b")),
]  # 16 blocks x 4 copies


@pytest.mark.parametrize("dims, shape, specs", MANY, ids=["16", "32", "64", "4x4x4"])
@pytest.mark.slow
def test_many_devices_stay_readable(dims, shape, specs):
    """16-64 devices, no devices needed: up to 9 blocks each in a palette colour, more
    each in its mesh coordinate's colour (no hatches), no two blocks sharing an edge look
    alike, replicas listed in text."""
    spec = LayoutSpec(specs, MeshSpec.create(dims))
    geom = shard_geometry(shape, spec)
    fig = plot_layout(spec, shape)
    (ax,) = panels_of(fig)
    blocks = blocks_of(ax, spec.mesh.short_device_names)
    assert {g: d for g, (_, _, d) in blocks.items()} == dict(enumerate(geom.replica_groups))
    patches = {p.get_gid(): p for p in ax.patches}
    look = {}
    for g, (_rect, color, _devices) in blocks.items():
        if geom.num_unique <= len(BLOCK_COLORS):
            assert to_rgba(color)[:3] in {to_rgba(c)[:3] for c in BLOCK_COLORS}
        else:  # the block's mesh coordinate, unhatched
            assert to_rgba(color)[:3] == pytest.approx(mesh_block_colors(geom)[g])
            assert not patches[f"block-{g}"].get_hatch()
        look[g] = (color, patches[f"block-{g}"].get_hatch())
    assert len(set(look.values())) == geom.num_unique  # colour (+ hatch) tell every block apart
    grid = {geom.block_index(d[0]): g for g, d in enumerate(geom.replica_groups)}
    for c, g in grid.items():  # neighbours along each tensor dim: different colours
        for dim in range(len(c)):
            n = c[:dim] + (c[dim] + 1,) + c[dim + 1 :]
            if n in grid:
                assert look[g][0] != look[grid[n]][0], (c, n)
    keys = [a for a in fig.axes if a.get_gid() == "mesh-key"]
    assert len(keys) == (geom.num_devices > geom.num_unique)  # a key only for replicas
    if keys:
        assert len(keys[0].patches) == spec.mesh.num_devices
    assert fig.get_size_inches()[1] <= 11.5  # the key no longer grows with the mesh
    assert_readable(fig)


@pytest.mark.slow
def test_truncated_facets_keep_every_shard_and_say_so():
    fig = _fig({"x": 2, "y": 4}, (64, 8, 8), ("y", "x", "unsharded"))
    titles = [ax.get_title() for ax in panels_of(fig)]
    assert len(titles) == 12 and {"[0, :, :]", "[16, :, :]", "[32, :, :]", "[48, :, :]"} <= set(titles)
    note = fig.texts[2].get_text()
    assert "of 64 along tensor dim 0" in note
    geom = shard_geometry((64, 8, 8), LayoutSpec(("y", "x", "unsharded"), MeshSpec.create({"x": 2, "y": 4})))
    drawn = {t.get_gid() for ax in panels_of(fig) for t in ax.texts}
    assert drawn == {f"label-{g}" for g in range(geom.num_unique)}  # every block appears
    assert_readable(fig)
    fig = _fig({"x": 2, "y": 4}, (2, 3, 4, 8), ("x", "unsharded", "unsharded", "y"))
    # tensor dim 1 is not sharded: each of its 3 indices is laid out alike, drawn once
    assert [ax.get_title() for ax in panels_of(fig)] == ["[0, :, :, :]", "[1, :, :, :]"]
    assert fig.texts[1].get_text().endswith("; dim 1 (3) drawn once")
    assert_readable(fig)


def test_small_blocks_get_compact_labels_that_still_fit():
    spec = LayoutSpec(("unsharded", "b"), MeshSpec.create({"a": 2, "b": 8}))
    names = spec.mesh.short_device_names
    blocks = layout_picture((4, 64), spec).panels[0].blocks
    small = label_blocks(blocks, names, 3.0 * 72 / 64, 72 / 4)  # a 3 x 1 inch panel
    assert [devices_in(b.label, names) for b in small] == [(d, d + 8) for d in range(8)]
    assert compact_devices([0, 1, 2, 3, 8, 9, 10, 11]) == "0-3,8-11"
    assert {0, 16, 32, 48} <= set(pick_indices(64, 4, 12))


# ---- text ---------------------------------------------------------------------------------


def test_layout_table_golden_and_against_unpack():
    spec = LayoutSpec(("x", "y"), MeshSpec.create({"x": 2, "y": 2}))
    assert layout_table(spec, (4, 6), name="w") == textwrap.dedent("""\
        w: shape (4, 6), sharding [x, y], Mesh(x=2, y=2; 4 devices): 4 unique blocks of (2, 3), 1 copy each
        block  slices      local shape  devices
        0      [0:2, 0:3]  (2, 3)       CPU:0
        1      [0:2, 3:6]  (2, 3)       CPU:1
        2      [2:4, 0:3]  (2, 3)       CPU:2
        3      [2:4, 3:6]  (2, 3)       CPU:3""")
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    live = layout(mesh, "unsharded", "y", "x")
    array = np.arange(96, dtype=np.float32).reshape(2, 8, 6)
    var = _dtensor.variable(array, live, name="w")
    text = layout_table(var)
    hypothetical = LayoutSpec(("unsharded", "y", "x"), MeshSpec.create({"x": 2, "y": 4}))
    assert text == layout_table(hypothetical, (2, 8, 6), name="w")  # live == hypothetical
    shards = _dtensor.unpack(var)
    rows = text.splitlines()[2:]
    assert len(rows) == 8
    for row in rows:
        slices = [slice(int(a), int(b)) for a, b in re.findall(r"(\d+):(\d+)", row)]
        for name in re.findall(r"CPU:\d+", row):
            np.testing.assert_array_equal(array[tuple(slices)], shards[int(name[4:])])
    assert "<table>" in text._repr_html_() and str(text) == text


@pytest.mark.slow
def test_hypothetical_layout_needs_no_tensorflow(tmp_path):
    code = textwrap.dedent(f"""
        import sys, dtsgd_viz
        from dtsgd_viz import LayoutSpec, MeshSpec
        spec = LayoutSpec(("model", "unsharded"), MeshSpec.create({{"data": 4, "model": 4}}))
        fig = dtsgd_viz.plot_layout(spec, (8, 64), name="emb")
        fig.savefig({str(tmp_path / "h.png")!r})
        table = dtsgd_viz.layout_table(spec, (8, 64))
        print(len(fig.axes[0].patches), len(table.splitlines()), "tensorflow" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["4", "6", "False"]  # 4 blocks; 4 rows
    assert (tmp_path / "h.png").stat().st_size > 10_000


def _model(mesh):
    return layoutmap_mlp(mesh, name="mlp")


@pytest.mark.slow
def test_model_table_of_a_layoutmap_model_after_one_step():
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = _model(mesh)
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=True, mesh=mesh, hooks=[rec])
    model.compile(optimizer=opt, loss="mse")
    rng = np.random.default_rng(0)
    data = dtensor.Layout(["batch", "unsharded"], mesh)
    x = _dtensor.put(rng.normal(size=(8, 4)).astype(np.float32), data)
    y = _dtensor.put(rng.normal(size=(8, 1)).astype(np.float32), data)
    opt.minimize(lambda: tf.reduce_mean((model(x) - y) ** 2), model.trainable_variables)
    assert len(rec.recording) == 1
    assert model_table(model) == textwrap.dedent("""\
        model 'mlp', optimizer SGD (momentum=0.9, nesterov=True): 4 variables, 97 values, on Mesh(batch=2, model=4; 8 devices)
        variable   shape    dtype    layout              block shape  velocity slot       flag
        d1/kernel  (4, 16)  float32  [unsharded, model]  (4, 4)       [unsharded, model]
        d1/bias    (16,)    float32  [model]             (4,)         [model]
        d2/kernel  (16, 1)  float32  [model, unsharded]  (4, 1)       [model, unsharded]
        d2/bias    (1,)     float32  [unsharded]         (1,)         [unsharded]
        velocity slots: all 4 share their parameter's layout""")  # noqa: E501
    assert model_table(model, memory=True).splitlines()[-1] == (
        "memory per device: 200 B (parameters 100 B + velocity slots 100 B)"
    )
    # by hand: blocks of 4x4 + 4 + 4x1 + 1 float32 values, each twice (its velocity)
    np.testing.assert_array_equal(dtsgd_viz.memory_plan(model).bytes_per_device, [200] * 8)
    np.testing.assert_array_equal(dtsgd_viz.memory_plan(rec.recording).bytes_per_device, [200] * 8)
    np.testing.assert_array_equal(dtsgd_viz.memory_plan(model, momentum=False).bytes_per_device, [100] * 8)
    # a slot laid out unlike its parameter is flagged
    kernel = model.trainable_variables[2]
    i = opt._index_dict[opt._var_key(kernel)]
    opt.momentums[i] = _dtensor.variable(
        np.zeros((16, 1), np.float32), dtensor.Layout.replicated(mesh, 2), name="m/d2/kernel"
    )
    text = model_table(model, memory=True)
    assert text.splitlines()[4].endswith("(4, 1)       [unsharded, unsharded]  DIFFERS")
    assert sum("DIFFERS" in line for line in text.splitlines()[2:6]) == 1
    assert text.splitlines()[-2] == ("velocity slots: 1 of 4 laid out differently from their parameter (flag DIFFERS)")
    # the replicated 16x1 slot costs 64 B where its [model] parameter's block costs 16 B
    assert text.splitlines()[-1] == ("memory per device: 248 B (parameters 100 B + velocity slots 148 B)")
    np.testing.assert_array_equal(dtsgd_viz.memory_plan(model).bytes_per_device, [248] * 8)
    # an optimizer alone: its slots, and parameters laid out like them
    np.testing.assert_array_equal(dtsgd_viz.memory_plan(opt).bytes_per_device, [296] * 8)
    # an optimizer alone knows only its slots (tf-keras keeps no reference to parameters)
    slots = model_table(opt).splitlines()
    assert slots[0].startswith("optimizer SGD (momentum=0.9, nesterov=True) slots: 4 variables")
    assert [line.split()[0].split("m/", 1)[1] for line in slots[2:6]] == [
        "d1/kernel",
        "d1/bias",
        "d2/kernel",
        "d2/bias",
    ]
    assert "[unsharded, unsharded]" in slots[4] and slots[-1].startswith("slots only")
    # plain tf-keras DTensor SGD: slots found through its momentums list
    plain = tf_keras.dtensor.experimental.optimizers.SGD(0.1, momentum=0.5, mesh=mesh)
    plain.build(model.trainable_variables)
    model.compile(optimizer=plain, loss="mse")
    assert model_table(model).splitlines()[-1] == "velocity slots: all 4 share their parameter's layout"
    # the recording: same variables and layouts; views draw it like the live variable
    rec_text = model_table(rec.recording)
    assert [line.split()[:2] for line in rec_text.splitlines()[2:6]] == [
        line.split()[:2] for line in model_table(model).splitlines()[2:6]
    ]
    names = _dtensor.mesh_spec(mesh).short_device_names
    from_rec = plot_layout(rec.recording, name="d1/kernel")
    from_var = plot_layout(model.trainable_variables[0])
    assert blocks_of(panels_of(from_rec)[0], names) == blocks_of(panels_of(from_var)[0], names)
    assert layout_table(rec.recording, name="d1/bias") == layout_table(model.trainable_variables[1])
    with pytest.raises(ValueError, match=r"Unknown variable 'nope'. This recording has: \['d1/kernel'"):
        plot_layout(rec.recording, name="nope")
    with pytest.raises(ValueError, match=r"Pass name= .*Allowed: \['d1/kernel', 'd1/bias'"):
        layout_table(rec.recording)


# ---- bad input ----------------------------------------------------------------------------

SPEC2 = LayoutSpec(("x", "unsharded"), MeshSpec.create({"x": 2, "y": 2}))


@pytest.mark.parametrize(
    "args, error, match",
    [
        ((SPEC2,), ValueError, r"pass shape=, e.g. \(8, 16\) for a rank-2 tensor"),
        ((SPEC2, (3, 4)), ValueError, "size 3.*sharded over mesh dim 'x' of size 2, which does not divide"),
        ((SPEC2, (4,)), ValueError, r"has rank 2. Received: shape \(4,\) of rank 1"),
        ((LayoutSpec((), SPEC2.mesh), ()), ValueError, r"rank 1 .* can be shown. Received: shape \(\) of rank 0"),
        ((SPEC2, (0, 4)), ValueError, "must be >= 1"),
        ((SPEC2, "4x4"), TypeError, "shape must be a tuple of ints"),
        ((42,), TypeError, r"Expected a DTensor Layout \+ shape, .*Received: int"),
        ((np.zeros((4, 4)), (4, 4)), TypeError, "Received: ndarray"),
    ],
)
def test_bad_input_is_explained(args, error, match):
    with pytest.raises(error, match=match):
        plot_layout(*args)
    with pytest.raises(error, match=match):
        layout_table(*args)


def test_rank_limits_of_figure_and_text():
    rank5 = LayoutSpec(("x",) + ("unsharded",) * 4, SPEC2.mesh)
    with pytest.raises(ValueError, match=r"rank 1 to 4 can be shown. Received: shape \(2, 2, 2, 2, 2\) of rank 5"):
        plot_layout(rank5, (2,) * 5)
    assert len(layout_table(rank5, (2,) * 5).splitlines()) == 4  # text has no rank limit


def test_bad_live_input_is_explained():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    live = layout(mesh, "x", "y")
    with pytest.raises(ValueError, match="pass shape="):
        plot_layout(live)
    var = _dtensor.variable(np.zeros((4, 8), np.float32), live)
    with pytest.raises(ValueError, match=r"shape=\(8, 8\) differs from the DVariable's own shape \(4, 8\)"):
        plot_layout(var, (8, 8))
    with pytest.raises(TypeError, match="Cannot show the layout of a Mesh"):
        plot_layout(mesh)
    with pytest.raises(TypeError, match="model_table takes .*Received: int"):
        model_table(3)
    with pytest.raises(ValueError, match="has no momentum slots yet: build it"):
        model_table(dtsgd_viz.SGD(mesh=mesh))


def test_a_multi_client_mesh_names_each_device_once_in_layout_views():
    """Each client numbers its CPUs from 0: two clients' devices are /task:0/.../CPU:0-3 and
    /task:1/.../CPU:0-3. The layout views keep the task where the short names repeat
    (the table had 'CPU:0' twice for two different devices)."""
    from dtsgd_viz import LayoutSpec, MeshSpec, layout_table, plot_layout

    devices = [f"/job:worker/replica:0/task:{t}/device:CPU:{c}" for t in (0, 1) for c in range(4)]
    mesh = MeshSpec(("batch", "model"), (2, 4), devices)
    assert mesh.short_device_names == tuple(f"t{t}/CPU:{c}" for t in (0, 1) for c in range(4))
    spec = LayoutSpec(("model", "unsharded"), mesh)
    table = layout_table(spec, (8, 4), name="w")
    for t in (0, 1):
        for c in range(4):
            assert f"t{t}/CPU:{c}" in table, table
    fig = plot_layout(spec, (8, 4), name="w")
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "t1/CPU:0" in texts, texts
    import matplotlib.pyplot as plt

    plt.close(fig)
    # one client's own mesh keeps the short form
    assert MeshSpec.create({"x": 2}).short_device_names == ("CPU:0", "CPU:1")


@pytest.mark.slow
def test_one_copy_layouts_have_no_key_and_the_labels_name_every_device():
    """No replicas: the key would repeat the panel, so there is none; each block names
    its one device; the title states the finding."""
    mesh = MeshSpec.create({"batch": 2, "model": 4})
    fig = plot_layout(LayoutSpec(("batch", "model"), mesh), (8, 8))
    assert not [a for a in fig.axes if a.get_gid() == "mesh-key"]
    (ax,) = panels_of(fig)
    assert not ax.child_axes
    assert fig.texts[0].get_text() == "(8, 8): 8 devices, 8 distinct 4x2 blocks"
    assert fig.texts[1].get_text() == "sharding [batch, model] on Mesh(batch=2, model=4; 8 devices)"
    assert_readable(fig)
    # 64 blocks: still 64 colours, every device named
    big = MeshSpec.create({"data": 4, "model": 16})
    fig = plot_layout(LayoutSpec(("data", "model"), big), (1024, 512))
    assert not [a for a in fig.axes if a.get_gid() == "mesh-key"]
    (ax,) = panels_of(fig)
    assert len({p.get_facecolor() for p in ax.patches if p.get_gid().startswith("block-")}) == 64
    geom = shard_geometry((1024, 512), LayoutSpec(("data", "model"), big))
    assert {g: d for g, (_, _, d) in blocks_of(ax, big.short_device_names).items()} == dict(
        enumerate(geom.replica_groups)
    )
    assert_readable(fig)
    # replicas: the key stays (it shows where the copies live)
    fig = plot_layout(LayoutSpec(("unsharded", "model"), mesh), (8, 8))
    (key,) = [a for a in fig.axes if a.get_gid() == "mesh-key"]
    assert len(key.patches) == 8
    assert fig.texts[0].get_text() == "(8, 8): 4 distinct 8x2 blocks, each on 2 devices (copied over batch)"


def test_mesh_colours_do_not_wrap_and_text_follows_lightness():
    """[data, model] on data=4, model=16: model=0 and model=15 differ in hue (the hue
    runs red to purple, no wrap), and every block of one data row has one text colour
    (white on the dark rows, black on the light ones)."""
    from matplotlib.colors import rgb_to_hsv

    from dtsgd_viz.views.mesh.layout_colors import lightness_of

    mesh = MeshSpec.create({"data": 4, "model": 16})
    spec = LayoutSpec(("data", "model"), mesh)
    geom = shard_geometry((1024, 512), spec)
    fig = plot_layout(spec, (1024, 512))
    (ax,) = panels_of(fig)
    colors = {int(p.get_gid().split("-")[1]): p.get_facecolor()[:3] for p in ax.patches}
    text = {int(t.get_gid().split("-")[1]): t.get_color() for t in ax.texts if t.get_gid().startswith("label-")}
    for row in range(4):
        groups = [
            geom.group_of[mesh.device_id((row, m)) if hasattr(mesh, "device_id") else row * 16 + m] for m in range(16)
        ]
        assert len({text[g] for g in groups}) == 1, row
        first, last = rgb_to_hsv(colors[groups[0]]), rgb_to_hsv(colors[groups[-1]])
        gap = abs(first[0] - last[0])
        assert min(gap, 1 - gap) > 0.1  # at least 36° of hue apart
        for g in groups:  # the label's colour is the one the block's lightness asks for
            assert text[g] == ("white" if lightness_of(colors[g]) < 58 else "black")
    assert text[geom.group_of[0]] == "white" and text[geom.group_of[63]] == "black"


def test_the_drawn_aspect_is_the_one_the_tutorial_states():
    """02 says the 1024x512 weight on 16 model columns is drawn about 1.4 times as tall as
    wide (not its true 2): read the ratio off the drawn panel in every layout of it."""
    mesh = MeshSpec.create({"data": 4, "model": 16})
    for specs in (("model", "unsharded"), ("data", "model"), ("unsharded", "model")):
        spec = LayoutSpec(specs, mesh)
        fig = plot_layout(spec, (1024, 512), name="W")
        fig.draw_without_rendering()
        (ax,) = panels_of(fig)
        box = ax.get_window_extent()
        _, _, w, h = layout_picture((1024, 512), spec).panels[0].box
        assert box.height / box.width == pytest.approx(h / w, rel=0.01)
        assert round(box.height / box.width, 1) == 1.4
