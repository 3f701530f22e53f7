"""``update_timeline``, ``timeline_finding`` and ``plot_timeline`` on the real programs
DTensor compiles for a momentum step and a Nesterov step of a sharded MLP (weights over
``model``, data over ``batch``, on a batch=2 x model=4 mesh).

Checked against truth computed here: the gradients' all-reduce moves each device's shard
of every variable (``numpy.prod`` of the shard ``dtensor.unpack`` gives, times 4 bytes)
among the devices that differ only in their batch coordinate; the two rules' compiled
programs list the same collectives; the figure's boxes, texts and title read back the
public numbers; no text overlaps."""

import dataclasses
import re

import numpy as np
import pytest
import tensorflow as tf
from helpers.builders import layoutmap_mlp
from helpers.figure_checks import assert_reads
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz.recording.memory import format_bytes
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.timeline import same_collectives

N = 16  # global batch: 8 examples per batch replica


def _step(mesh, model, nesterov):
    rng = np.random.default_rng(0)
    layout = dtensor.Layout(["batch", "unsharded"], mesh)  # pyright: ignore[reportCallIssue]
    x = dtsgd_viz.shard(rng.normal(size=(N, 4)).astype(np.float32), layout)
    y = dtsgd_viz.shard(rng.normal(size=(N, 1)).astype(np.float32), layout)
    opt = dtsgd_viz.SGD(0.05, momentum=0.9, nesterov=nesterov, mesh=mesh, exact_update=True)
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(x) - y) ** 2)
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables), loss=loss)

    return step


@pytest.fixture(scope="module")
def compiled():
    """The mesh, one model and the reports of one compiled step per rule."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    reports, models = {}, {}
    for name, nesterov in (("momentum", False), ("nesterov", True)):
        models[name] = layoutmap_mlp(mesh, name=name)
        reports[name] = dtsgd_viz.communication(_step(mesh, models[name], nesterov))
    return mesh, models, reports


def _groups_along(mesh_spec, dims):
    """Device ids that differ only along ``dims``, from the mesh coordinates."""
    keep = [i for i, n in enumerate(mesh_spec.dim_names) if n not in dims]
    out: dict[tuple, list[int]] = {}
    for d in range(mesh_spec.num_devices):
        coords = mesh_spec.device_coords(d)
        out.setdefault(tuple(coords[i] for i in keep), []).append(d)
    return tuple(tuple(g) for g in out.values())


@pytest.mark.slow
def test_the_two_rules_compile_the_same_collectives(compiled):
    _, _, reports = compiled
    m, n = reports["momentum"], reports["nesterov"]
    assert len(m.collectives) > 0
    assert [(c.kind, c.mesh_dims, c.groups, c.shape, c.bytes_per_device) for c in m.collectives] == [
        (c.kind, c.mesh_dims, c.groups, c.shape, c.bytes_per_device) for c in n.collectives
    ]
    assert same_collectives(m, n)


@pytest.mark.slow
def test_the_timeline_bytes_and_groups_are_the_reports(compiled):
    mesh, models, reports = compiled
    for name, report in reports.items():
        t = dtsgd_viz.update_timeline(report)
        by_dims: dict = {}  # the phases' bytes by the mesh dims they run along: the report's totals
        for p in t.collectives:
            by_dims[p.mesh_dims] = by_dims.get(p.mesh_dims, 0) + p.bytes_per_device
        assert by_dims == report.totals() and t.bytes_per_device == report.bytes_per_device
        names = [p.name for p in t.phases]
        g = names.index("local gradient")
        assert names[-2:] == ["velocity", "parameter"]
        assert all(p.bytes_per_device == 0 and p.local for p in (t.phases[g], *t.phases[-2:]))
        # what the forward and backward passes need comes before the local gradient is whole;
        # the gradient's sums after it
        assert all(set(p.serves) <= {"activation", "activation gradient", "loss"} for p in t.phases[:g])
        assert all("gradient" in p.serves for p in t.phases[g + 1 : -2])
        spec = report.mesh
        for p in t.collectives:
            drawn = {c.groups for c in report.collectives if (c.kind, c.mesh_dims) == (p.kind, p.mesh_dims)}
            assert drawn == {p.groups}
            assert p.groups == _groups_along(spec, p.mesh_dims)  # truth from the coordinates
        # the gradient sum over batch moves each device's shard of every variable
        shards = [dtensor.unpack(v.read_value())[0] for v in models[name].trainable_variables]
        shard_bytes = sum(int(np.prod(s.shape)) * 4 for s in shards)
        (over_batch,) = [p for p in t.collectives if p.kind == "all-reduce" and p.mesh_dims == ("batch",)]
        assert over_batch.bytes_per_device == shard_bytes
        for d in range(spec.num_devices):
            for p in t.phases:
                group = p.group_of(d)
                assert (group is None) == p.local
                if group is not None:
                    assert d in p.groups[group]
        assert t.labels[5] == "CPU:5 (batch=1, model=1)"  # the names and coordinates plot_communication writes


@pytest.mark.slow
def test_the_figure_draws_the_timeline(compiled):
    """Identical programs are drawn once; every box and its bytes are the timeline's, each
    collective in the colour plot_communication gives its mesh dims."""
    from matplotlib.colors import to_rgba

    from dtsgd_viz.views.mesh.communication import dim_color

    _, _, reports = compiled
    fig = dtsgd_viz.plot_timeline(reports)
    fig.draw_without_rendering()
    assert_reads(fig, "timeline")
    (ax,) = fig.axes  # the two rules compile the same collectives: one panel says so
    t = dtsgd_viz.update_timeline(reports["momentum"])
    n = reports["momentum"].mesh.num_devices
    boxes = {p.get_gid(): p for p in ax.patches}
    assert len(boxes) == len(t.phases) * n
    texts = {x.get_gid(): x.get_text() for x in ax.texts}
    for d in range(n):
        for p in t.phases:
            box = boxes[f"0|{d}|{p.name}|{p.group_of(d)}"]
            assert box.get_y() < d < box.get_y() + box.get_height()
            assert texts[f"bytes|0|{d}|{p.name}"] == format_bytes(p.bytes_per_device)
            want = "0.92" if p.local else dim_color(t.mesh, p.mesh_dims)
            assert box.get_facecolor() == to_rgba(want)
    ticks = [x.get_text() for x in ax.get_xticklabels()]
    for p, tick in zip(t.collectives, [ticks[t.phases.index(p)] for p in t.collectives]):
        assert tick.endswith(f"{len(p.groups)} groups of {len(p.groups[0])}")
    assert [x.get_text() for x in ax.get_yticklabels()] == list(t.labels)
    assert "order" in ax.get_xlabel() and "not time" in ax.get_xlabel()
    title, _ = headline_texts(fig)
    assert title == dtsgd_viz.timeline_finding(reports) and title.startswith(
        "Nesterov's step has momentum's collectives"
    )
    assert headline_texts(fig)[1].startswith("momentum's compiled step drawn")  # which of the equal two is drawn
    assert format_bytes(reports["momentum"].bytes_per_device) in title


@pytest.mark.slow
def test_a_run_that_sends_more_says_so(compiled):
    _, _, reports = compiled
    n = reports["nesterov"]
    more = dataclasses.replace(
        n, collectives=tuple(dataclasses.replace(c, bytes_per_device=2 * c.bytes_per_device) for c in n.collectives)
    )
    fig = dtsgd_viz.plot_timeline({"momentum": reports["momentum"], "nesterov": more})
    title, _ = headline_texts(fig)
    assert "same collectives" not in title and len(fig.axes) == 2  # programs that differ: one panel each
    assert [ax.get_title(loc="left") for ax in fig.axes] == [
        f"momentum: {format_bytes(reports['momentum'].bytes_per_device)} per device",
        f"Nesterov: {format_bytes(2 * n.bytes_per_device)} per device",
    ]
    sizes = re.findall(r"\d+(?:\.\d+)? (?:B|KiB|MiB)", title)
    assert sizes == [format_bytes(reports["momentum"].bytes_per_device), format_bytes(2 * n.bytes_per_device)]


def test_bad_input_is_refused_clearly(compiled):
    _, _, reports = compiled
    with pytest.raises(ValueError, match="non-empty mapping.*Received: {}"):
        dtsgd_viz.plot_timeline({})
    with pytest.raises(ValueError, match=r"CommunicationReport as reports\['nesterov'\].*Received: dict"):
        dtsgd_viz.plot_timeline({"momentum": reports["momentum"], "nesterov": {}})
    with pytest.raises(ValueError, match="Expected a dtsgd_viz.CommunicationReport.*Received: str"):
        dtsgd_viz.update_timeline("report")  # type: ignore[arg-type]
