"""What each update moves between devices, checked through the figure's data: device
circles where the mesh puts them, group lines joining exactly the devices that reduce
together (computed here from mesh coordinates), and byte totals computed by hand
(prod(shard shape) x item size)."""

import math

import matplotlib
import numpy as np
import pytest
from matplotlib.patches import Circle

matplotlib.use("Agg")

from dtsgd_viz import CommunicationReport, LayoutSpec, MeshSpec, communication_plan, memory_plan  # noqa: E402
from dtsgd_viz.recording.communication import Collective  # noqa: E402
from dtsgd_viz.recording.memory import format_bytes  # noqa: E402
from dtsgd_viz.views import plot_communication  # noqa: E402
from dtsgd_viz.views.core.figure import headline_texts  # noqa: E402
from dtsgd_viz.views.mesh.communication import (  # noqa: E402
    communication_geometry,
    device_positions,
    headline,
    mesh_groups,
    serves_lines,
    traffic_items,
)

MESH = MeshSpec.create({"batch": 2, "model": 4})
SHAPES = {"d1/kernel": (64, 256), "d1/bias": (256,), "d2/kernel": (256, 10), "d2/bias": (10,)}


def L(*specs, mesh=MESH):
    return LayoutSpec(specs, mesh)


def mlp(sharded: bool):
    layouts = (
        {
            "d1/kernel": L("unsharded", "model"),
            "d1/bias": L("model"),
            "d2/kernel": L("model", "unsharded"),
            "d2/bias": L("unsharded"),
        }
        if sharded
        else {k: L(*["unsharded"] * len(v)) for k, v in SHAPES.items()}
    )
    return {k: (SHAPES[k], "float32", layouts[k]) for k in SHAPES}


def truth_groups(sizes, axes):
    """Devices that agree on every mesh coordinate outside ``axes`` (row-major ids)."""
    coords = np.array(np.unravel_index(np.arange(math.prod(sizes)), sizes)).T
    keep = [i for i in range(len(sizes)) if i not in axes]
    out = {}
    for d, c in enumerate(coords):
        out.setdefault(tuple(c[keep]), set()).add(d)
    return sorted(map(frozenset, out.values()), key=min)


def shard_bytes(shape, layout, itemsize=4):
    return math.prod(layout.shard_shape(shape)) * itemsize


# ---- the plain geometry ----------------------------------------------------------------


@pytest.mark.parametrize(
    "dims, sizes, axes",
    [
        (("batch",), (2, 4), (0,)),
        (("model",), (2, 4), (1,)),
        (("batch", "model"), (2, 4), (0, 1)),
    ],
)
def test_groups_are_the_devices_differing_only_along_the_dims(dims, sizes, axes):
    got = [frozenset(g) for g in mesh_groups(MESH, dims)]
    assert got == truth_groups(sizes, axes)
    if dims == ("batch",):
        assert got == [{0, 4}, {1, 5}, {2, 6}, {3, 7}]
    m3 = MeshSpec.create({"x": 2, "y": 2, "z": 2})
    assert [frozenset(g) for g in mesh_groups(m3, ("x", "z"))] == truth_groups((2, 2, 2), (0, 2))


def test_devices_sit_on_the_mesh_grid():
    centres, rows, extent = device_positions(MESH)
    np.testing.assert_allclose(centres, [(d % 4 + 0.5, d // 4 + 0.5) for d in range(8)])
    assert rows == ((0.5, "batch=0"), (1.5, "batch=1")) and extent == (4.0, 2.0)
    m3 = MeshSpec.create({"x": 2, "y": 2, "z": 2})
    centres, rows, _ = device_positions(m3)
    assert [s for _, s in rows] == ["x=0, y=0", "x=0, y=1", "x=1, y=0", "x=1, y=1"]
    at = dict(rows)
    for d in range(8):  # columns: the last mesh dim; rows: the dims before it, in mesh order
        x, y, z = np.unravel_index(d, (2, 2, 2))
        assert centres[d][0] == z + 0.5 and at[centres[d][1]] == f"x={x}, y={y}"


def test_a_plan_predicts_shard_bytes_along_the_unused_batch_dim():
    plan = communication_plan(mlp(sharded=True))
    want = {k: shard_bytes(shape, lay) for k, (shape, _, lay) in mlp(True).items()}
    assert {i.label: i.bytes_per_device for i in traffic_items(plan)} == want
    total = sum(want.values())  # 16 KiB + 256 B + 2.5 KiB + 40 B
    assert headline(plan) == f"Each update all-reduces {format_bytes(total)} of gradient per device along batch"
    pic = communication_geometry(plan)
    (panel,) = pic.panels
    assert panel.mesh_dims == ("batch",) and panel.bytes_per_device == total
    assert panel.title == "along batch"
    assert [frozenset(g.devices) for g in panel.groups] == truth_groups((2, 4), (0,))
    for g in panel.groups:  # one box around each column, holding its devices and no other
        assert len(g.boxes) == 1 and inside(g.boxes, pic.centres) == set(g.devices)
    assert pic.figsize[0] * 100 <= 950


def inside(boxes, centres):
    """The devices whose centres lie in any of ``boxes`` (x, y, w, h)."""
    return {d for d, (cx, cy) in enumerate(centres) for x, y, w, h in boxes if x < cx < x + w and y < cy < y + h}


def test_serves_lines_name_the_top_gradients_then_the_rest():
    plan = communication_plan({f"w{i}": ((8, 4 * (i + 1)), "float32", L("unsharded", "model")) for i in range(40)})
    b = [8 * (i + 1) * 4 for i in range(40)]  # 8 x (i+1) float32 per device
    lines = serves_lines(traffic_items(plan), max_items=3)
    assert lines[0] == f"gradients of 40 variables: {format_bytes(sum(b))}"
    named = lines[1].split(", ")
    assert [s.split(":")[0] for s in named[:3]] == ["w39", "w38", "w37"]
    assert named[3] == f"+37 more: {format_bytes(sum(b[:37]))}"
    assert len(lines) == 2 and len(named) == 4


# ---- the figure, read back ------------------------------------------------------------------


def report():
    plan = communication_plan(mlp(sharded=True))
    return CommunicationReport(
        MESH,
        (
            Collective("all-reduce", ("model",), 32 * 10 * 4, "float32", (32, 10), "activation"),
            *[
                Collective(
                    "all-reduce", ("batch",), e.bytes_per_device, e.dtype, e.block_shape, "gradient", e.variable, "sum"
                )
                for e in plan.entries
            ],
            Collective("all-reduce", ("batch", "model"), 4, "float32", (), "loss"),
            Collective(
                "all-gather",
                ("model",),
                2048,
                "float32",
                (16, 32),
                "activation gradient",
                groups=((0, 1, 2, 3), (4, 5, 6, 7)),
            ),
        ),
        function="train_step",
    )


def boxes_of(ax):
    """The drawn group boxes by group gid (``group-k-i``; a group of several boxes has ``-j``)."""
    out = {}
    for p in ax.patches:
        if (gid := p.get_gid() or "").startswith("group-"):
            out.setdefault("-".join(gid.split("-")[:3]), []).append(
                (p.get_x(), p.get_y(), p.get_width(), p.get_height())
            )
    return out


def test_the_figure_draws_each_group_and_its_bytes():
    rep = report()
    fig = plot_communication(rep)
    pic = communication_geometry(rep)
    grads = sum(c.bytes_per_device for c in rep.collectives if c.serves == "gradient")
    model = 32 * 10 * 4 + 2048
    assert headline_texts(fig)[0].replace("\n", " ") == (
        f"Each update moves {format_bytes(grads)} per device along batch, "
        f"{format_bytes(model)} along model, 4 B along batch × model"
    )
    panels = [ax for ax in fig.axes if ax.get_gid().startswith("panel-")]
    titles = {t.get_gid(): t.get_text() for ax in panels for t in ax.texts if t.get_gid().startswith("serves-")}
    assert [ax.get_title(loc="left") for ax in panels] == [
        f"along {d}" for d in ["batch", "model", "batch × model"]
    ]  # the bytes are the headline's
    assert "activation gradient: 2 KiB (1 all-gather)" in titles["serves-1"]
    assert all(ax.get_xlabel() == "mesh dim model" for ax in panels)  # the byte list is a text of its own
    centres = {p.get_gid(): p.center for p in panels[0].patches if isinstance(p, Circle)}
    np.testing.assert_allclose(
        [centres[f"device-{d}"] for d in range(8)], [(d % 4 + 0.5, d // 4 + 0.5) for d in range(8)]
    )
    for k, axes in [(0, (0,)), (1, (1,)), (2, (0, 1))]:
        drawn = boxes_of(panels[k])
        assert len(drawn) == len(truth_groups((2, 4), axes))
        for i, members in enumerate(truth_groups((2, 4), axes)):
            assert inside(drawn[f"group-{k}-{i}"], pic.centres) == members  # no order, no chain: one box
    labels = {t.get_gid(): t.get_text() for t in panels[0].texts}
    assert [labels[f"device-label-{d}"] for d in range(8)] == [str(d) for d in range(8)]  # three panels: no room
    note = next(t for t in fig.texts if t.get_gid() == "note").get_text()
    assert note.startswith("circles: devices (0 = CPU:0, ..., 7 = CPU:7); ")


@pytest.mark.slow
def test_readable_at_notebook_size():
    for obj in (
        report(),
        communication_plan(mlp(False)),
        communication_plan(mlp(True)),
        communication_plan({"w": ((8, 8), "float32", L("batch", "model"))}),
    ):
        fig = plot_communication(obj)
        fig.canvas.draw()
        assert fig.get_size_inches()[0] * fig.dpi <= 950
        texts = [
            *fig.texts,
            *(
                t
                for ax in fig.axes
                for t in [*ax.texts, *ax.get_xticklabels(), *ax.get_yticklabels(), ax.xaxis.label, ax.yaxis.label]
            ),
        ]
        assert min(t.get_fontsize() for t in texts if t.get_text()) * fig.dpi / 72 >= 9
        r = fig.canvas.get_renderer()
        bbox = fig.bbox
        for t in fig.texts:  # nothing runs off the figure
            e = t.get_window_extent(r)
            assert e.x0 >= bbox.x0 - 1 and e.x1 <= bbox.x1 + 1, t.get_text()


def test_a_3d_mesh_reaches_across_facets_without_overlap():
    m3 = MeshSpec.create({"x": 2, "y": 2, "z": 2})
    rep = CommunicationReport(m3, (Collective("all-reduce", ("x",), 4096, "float32", (32, 32), "gradient", "w"),))
    pic = communication_geometry(rep)
    (panel,) = pic.panels
    assert [frozenset(g.devices) for g in panel.groups] == truth_groups((2, 2, 2), (0,))
    for g in panel.groups:  # members apart on the grid: one box each, holding no other device
        assert len(g.boxes) == 2 and inside(g.boxes, pic.centres) == set(g.devices)
    fig = plot_communication(rep)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["x=0, y=0", "x=0, y=1", "x=1, y=0", "x=1, y=1"]


def test_nothing_moves_and_bad_input():
    unsplit = MeshSpec.create({"batch": 1, "model": 4})
    plan = communication_plan({"w": ((8, 8), "float32", L("batch", "model", mesh=unsplit))})
    fig = plot_communication(plan)
    assert headline_texts(fig)[0] == "Each update all-reduces no gradient: the batch is not split over devices"
    assert not boxes_of(fig.axes[0])
    with pytest.raises(TypeError, match="Expected a CommunicationPlan .* Received: MemoryPlan"):
        plot_communication(memory_plan(mlp(False)))


def test_the_bytes_of_each_purpose_are_under_the_panel():
    fig = plot_communication(communication_plan(mlp(False)))
    full = sum(math.prod(s) * 4 for s in SHAPES.values())
    serves = next(t for t in fig.axes[0].texts if t.get_gid() == "serves-0").get_text().splitlines()
    assert serves[0] == f"gradients of 4 variables: {format_bytes(full)}"  # the bytes, under the panel
    assert serves[1] == serves_lines(traffic_items(communication_plan(mlp(False))))[1]


def test_the_headline_is_the_house_one_and_the_figure_has_no_empty_band():
    from dtsgd_viz.views.core.figure import headline_texts

    rep = CommunicationReport(
        MESH,
        tuple(
            Collective("all-reduce", ("batch",), b, "float32", (b // 4,), "gradient", v)
            for v, b in [("w", 256), ("b", 64)]
        ),
        function="step",
        ran_step=True,
    )
    fig = plot_communication(rep)
    finding, settings = headline_texts(fig)
    assert finding == "Each update all-reduces 320 B per device along batch"
    title = next(t for t in fig.texts if t.get_gid() == "title")
    assert title.get_ha() == "center" and title.get_position()[0] == 0.5
    assert settings == (f"measured on the compiled step on {MESH}: 2 all-reduces")  # one line, no jargon
    fig.canvas.draw()
    r = fig.canvas.get_renderer()
    note = next(t for t in fig.texts if t.get_gid() == "note").get_window_extent(r)
    above = [
        t.get_window_extent(r)
        for t in [*fig.texts, *(x for ax in fig.axes for x in [ax.xaxis.label, *ax.get_xticklabels(), *ax.texts])]
        if t.get_text() and t.get_gid() != "note"
    ]
    gap = min(b.y0 for b in above) - note.y1
    assert 0 <= gap <= 0.3 * fig.dpi  # the note sits just under the panel, no empty band


def test_the_figure_names_what_its_lines_mean():
    """04's pictures said what their lines are only in the text beside them."""
    from dtsgd_viz import LayoutSpec, MeshSpec, communication_plan
    from dtsgd_viz.views import plot_communication

    mesh = MeshSpec.create({"batch": 2, "model": 4})
    plan = communication_plan({"w": ((8, 16), "float32", LayoutSpec(("unsharded", "model"), mesh))})
    fig = plot_communication(plan)
    note = next(t for t in fig.texts if t.get_gid() == "note").get_text()
    assert note == "a shaded box holds each group of devices that all-reduce together"
    assert boxes_of(fig.axes[0])
    labels = {t.get_gid(): t.get_text() for t in fig.axes[0].texts}
    assert [labels[f"device-label-{d}"] for d in range(8)] == list(mesh.short_device_names)  # CPU:k, as elsewhere
