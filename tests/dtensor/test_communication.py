"""``communication(step)`` lists the collectives DTensor compiled for a training step.

Checked against truth computed here, not by the package: on a data-parallel MLP, an MLP
with kernels ``[unsharded, model]`` and biases ``[model]`` on a 2x4 mesh, a 2x2x2 mesh, the
example conv net and transformer block (and two clients of one mesh), every gradient is
one all-reduce over the batch dims of exactly its shard's bytes (``numpy.prod`` of the
shard shape the layout gives, times the item size) among the devices that differ only in
their batch coordinate, as ``communication_plan`` predicts. A report that runs the step
leaves every variable (weights, slots, ``iterations``) bit for bit as it was; a report of
a compiled step does not run it. Reports save and load without TensorFlow.
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
import tensorflow as tf
import tf_keras
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import CommunicationReport, LayoutSpec, MeshSpec, communication, communication_plan
from dtsgd_viz.dtensor import communication as communication_module
from dtsgd_viz.models import examples as models
from dtsgd_viz.recording.communication import Collective

U = "unsharded"
N = 16  # global batch of the MLPs
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(os.path.dirname(HERE), "helpers", "multiclient_comm.py")


def _mlp(mesh, specs, seed=0):
    """A 24-64-32 Dense MLP ``mlp`` (layers ``d1``, ``d2``) laid out by ``specs``."""
    layout_map = tf_keras.dtensor.experimental.LayoutMap(mesh=mesh)
    for key, spec in specs.items():
        layout_map[key] = dtensor.Layout(list(spec), mesh)
    with layout_map.scope():
        tf_keras.utils.set_random_seed(seed)
        inp = tf_keras.Input((24,), batch_size=N)
        h = tf_keras.layers.Dense(64, activation="relu", name="d1")(inp)
        return tf_keras.Model(inp, tf_keras.layers.Dense(32, name="d2")(h), name="mlp")


def _mse_step(model, opt, x, y):
    variables = model.trainable_variables

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        opt.apply_gradients(zip(tape.gradient(loss, variables), variables), loss=loss)
        return loss

    return step


def _mlp_setup(mesh, specs):
    model = _mlp(mesh, specs)
    rng = np.random.default_rng(0)
    x, y = models.on_mesh(
        mesh, rng.normal(size=(N, 24)).astype(np.float32), rng.normal(size=(N, 32)).astype(np.float32)
    )
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh)
    opt.build(model.trainable_variables)  # its slots exist before the first report
    return model, opt, _mse_step(model, opt, x, y)


def _values(variables):
    return [np.stack(dtsgd_viz.device_values(v)) for v in variables]


def _state(model, opt):
    return _values(list(model.variables) + list(opt.variables()))


def _same(a, b):
    return len(a) == len(b) and all(x.dtype == y.dtype and np.array_equal(x, y) for x, y in zip(a, b))


def _shard_bytes(var):
    """Bytes of one device's shard: each dim divided by the size of the mesh dim that
    shards it."""
    layout = dtensor.fetch_layout(var)
    sizes = dict(zip(layout.mesh.dim_names, layout.mesh.shape()))
    shard = [n // sizes[s] if s in sizes else n for n, s in zip(var.shape.as_list(), layout.sharding_specs)]
    return int(np.prod(shard)) * var.dtype.size


def _groups_along(dim_sizes, dims):
    """Device ids (row-major over the mesh dims) that differ only along ``dims``."""
    names = list(dim_sizes)
    ids = np.arange(int(np.prod(list(dim_sizes.values())))).reshape(list(dim_sizes.values()))
    moved = np.moveaxis(ids, [names.index(d) for d in dims], list(range(len(names) - len(dims), len(names))))
    return tuple(
        sorted(tuple(sorted(g)) for g in moved.reshape(-1, int(np.prod([dim_sizes[d] for d in dims]))).tolist())
    )


def _check_gradients(report, model, dim_sizes, dims=("batch",), skip=()):
    grads = report.gradients
    names = [v.name.removesuffix(":0") for v in model.trainable_variables]
    assert sorted(grads) == sorted(names)
    for v, name in zip(model.trainable_variables, names):
        if name in skip:
            continue
        c = grads[name]
        assert (c.kind, c.mesh_dims, c.dtype, c.reduce_op) == ("all-reduce", dims, "float32", "Add")
        assert c.bytes_per_device == _shard_bytes(v), name
        assert c.groups == _groups_along(dim_sizes, dims), name


# ------------------------------------------------------------------ data-parallel MLP
@pytest.mark.slow
def test_a_first_report_runs_the_step_once_and_restores_every_variable():
    mesh = dtsgd_viz.make_mesh({"batch": 8})
    model, opt, step = _mlp_setup(mesh, {})
    before = _state(model, opt)
    started = time.perf_counter()
    report = communication(step)
    first = time.perf_counter() - started
    assert _same(before, _state(model, opt)) and int(opt.iterations.numpy()) == 0
    assert report.ran_step and "restored" in report.note and report.function == "step"
    assert report.mesh == dtsgd_viz.mesh_spec(mesh)
    assert report.compare(communication_plan(model)) == []
    _check_gradients(report, model, {"batch": 8})
    # everything is replicated: the gradients and the loss are all there is
    assert {c.serves for c in report.collectives} == {"gradient", "loss"}
    assert sum(c.bytes_per_device for c in report.select("gradient")) == 4 * (24 * 64 + 64 + 64 * 32 + 32)
    step()  # a real step: now compiled
    assert int(opt.iterations.numpy()) == 1
    started = time.perf_counter()
    assert communication(step).collectives == report.collectives
    assert time.perf_counter() - started < min(1.0, first)


# ------------------------------------------------------------------ model-sharded MLP
SHARDED = {"d1.kernel": (U, "model"), "d1.bias": ("model",), "d2.kernel": (U, "model"), "d2.bias": ("model",)}


@pytest.fixture(scope="module")
def sharded():
    """The sharded MLP on a 2x4 mesh, trained two steps (so compiled)."""
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model, opt, step = _mlp_setup(mesh, SHARDED)
    for _ in range(2):
        step()
    return mesh, model, opt, step


@pytest.mark.slow
def test_a_compiled_step_is_read_not_run(sharded, monkeypatch):
    mesh, model, opt, step = sharded
    before = _state(model, opt)

    def refuse(*args, **kwargs):
        raise AssertionError("communication ran a step DTensor had compiled")

    monkeypatch.setattr(communication_module, "run_restoring", refuse)
    started = time.perf_counter()
    report = communication(step)
    assert time.perf_counter() - started < 1.0
    assert not report.ran_step and "did not run" in report.note
    assert _same(before, _state(model, opt)) and int(opt.iterations.numpy()) == 2
    assert report.compare(communication_plan(model)) == []
    _check_gradients(report, model, {"batch": 2, "model": 4})
    assert sum(c.bytes_per_device for c in report.select("gradient")) == 3680


@pytest.mark.slow
def test_the_activation_collectives_of_the_sharded_mlp_are_listed_and_named(sharded):
    report = communication(sharded[3])
    model_groups = ((0, 1, 2, 3), (4, 5, 6, 7))
    act = report.select("activation gradient", "all-reduce")
    # d2's input gradient: (8 examples, 64 features) partial sums over d2's kernel columns
    assert [(c.shape, c.mesh_dims, c.bytes_per_device, c.groups, c.variable, c.name) for c in act] == [
        ((8, 64), ("model",), 8 * 64 * 4, model_groups, None, "gradient_tape/mlp/d2/MatMul/MatMul")
    ]
    gathered = report.select("activation", "all-gather")
    assert [(c.shape, c.mesh_dims, c.name) for c in gathered] == [((8, 16), ("model",), "mlp/d1/Relu")]
    assert gathered[0].executed_as == "CollectiveReduceV2"  # a CPU gather: a padded all-reduce
    assert gathered[0].executed_bytes == 8 * 64 * 4
    (loss,) = report.select("loss")
    assert (loss.shape, loss.mesh_dims, loss.reduce_op) == ((), ("batch", "model"), "Mean")
    assert {c.serves for c in report.collectives} == {"gradient", "activation gradient", "activation", "loss", "other"}
    assert "activation gradient" in str(report) and "gradient of d1/kernel" in str(report)


@pytest.mark.slow
def test_the_gradient_all_reduces_run_fused(sharded):
    grads = communication(sharded[3]).select("gradient")
    assert len({c.executed_node for c in grads}) == 1
    assert grads[0].executed_bytes >= sum(c.bytes_per_device for c in grads)
    for c in grads:
        assert set(c.fused_with) == {g.name for g in grads} - {c.name}


@pytest.mark.slow
def test_timings_run_the_step_under_the_profiler_and_restore_it(sharded):
    mesh, model, opt, step = sharded
    before = _state(model, opt)
    report = communication(step, timings=True)
    assert report.ran_step and "profiler" in report.note
    assert _same(before, _state(model, opt)) and int(opt.iterations.numpy()) == 2
    assert all(c.time_us is not None and c.time_us > 0 for c in report.collectives)
    assert report.collectives[0].time_us is not None and "us" in str(report)


@pytest.mark.slow
def test_run_says_whether_to_run(sharded):
    mesh, model, opt, step = sharded
    before = _state(model, opt)
    forced = communication(step, run=True)
    assert forced.ran_step and _same(before, _state(model, opt))
    assert forced.collectives == communication(step, run=False).collectives
    fresh = _mse_step(model, opt, *models.on_mesh(mesh, np.zeros((N, 24), np.float32), np.zeros((N, 32), np.float32)))
    with pytest.raises(
        ValueError,
        match=r"has not compiled tf.function 'step' .* "
        r"call it once first",
    ):
        communication(fresh, run=False)


@pytest.mark.slow
def test_a_report_saves_and_loads(sharded, tmp_path):
    report = communication(sharded[3])
    assert CommunicationReport.from_dict(report.to_dict()) == report
    assert CommunicationReport.from_dict(json.loads(json.dumps(report.to_dict()))) == report
    for c in report.collectives:
        assert Collective.from_dict(json.loads(json.dumps(c.to_dict()))) == c
    path = report.save(tmp_path / "comm.json")
    assert CommunicationReport.load(path) == report
    code = (
        "import sys, dtsgd_viz; r = dtsgd_viz.CommunicationReport.load(sys.argv[1]); "
        "assert 'tensorflow' not in sys.modules; "
        "print(len(r.collectives), r.totals('gradient'), r.gradients['d1/kernel'].groups)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, path], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.split() == [
        str(len(report.collectives)),
        "{('batch',):",
        "3680}",
        "((0,",
        "4),",
        "(1,",
        "5),",
        "(2,",
        "6),",
        "(3,",
        "7))",
    ]


# ------------------------------------------------------------------ a 3-D mesh
@pytest.mark.slow
def test_a_2x2x2_mesh_reduces_gradients_over_batch_only():
    """Megatron-style: d1 by columns, d2 by rows over ``model``; ``x`` replicates."""
    sizes = {"x": 2, "batch": 2, "model": 2}
    mesh = dtsgd_viz.make_mesh(sizes)
    model, opt, step = _mlp_setup(
        mesh, {"d1.kernel": (U, "model"), "d1.bias": ("model",), "d2.kernel": ("model", U), "d2.bias": (U,)}
    )
    before = _state(model, opt)
    report = communication(step)
    assert report.ran_step and _same(before, _state(model, opt))
    assert report.compare(communication_plan(model)) == []
    _check_gradients(report, model, sizes)
    assert report.gradients["d1/kernel"].groups == ((0, 2), (1, 3), (4, 6), (5, 7))
    assert not any("x" in c.mesh_dims for c in report.collectives)
    # the forward pass sums d2's row-sharded products over model: (8, 32) per device
    (fwd,) = report.select("activation", "all-reduce")
    assert (fwd.shape, fwd.mesh_dims, fwd.groups) == ((8, 32), ("model",), _groups_along(sizes, ("model",)))


# ------------------------------------------------------------------ the example models
def _example(build, data):
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    model = build(mesh)
    opt = dtsgd_viz.SGD(0.1, momentum=0.9, mesh=mesh)
    opt.build(model.trainable_variables)
    step = models.train_step(model, opt, *models.on_mesh(mesh, *data(32)))
    before = _state(model, opt)
    report = communication(step)
    assert report.ran_step and _same(before, _state(model, opt))
    return model, report


@pytest.mark.slow
def test_the_conv_net():
    model, report = _example(models.conv_net, models.bars)
    convs = ("conv1/kernel", "conv1/bias", "conv2/kernel", "conv2/bias")
    _check_gradients(report, model, {"batch": 2, "model": 4}, skip=convs)
    # ShardedConv2D relays its kernel and bias out to replicated before the convolution
    # (DTensor refuses a sharded filter): each is gathered over model (its shard, fused
    # into one lowered collective), its gradient is computed whole on every device and
    # summed over batch whole, then sliced to the variable's layout. So the convolutions
    # move 4x the bytes the layouts predict.
    by_name = {v.name.removesuffix(":0"): v for v in model.trainable_variables}
    gathered = [c for c in report.select("other", "all-gather")]
    assert sorted(c.variable for c in gathered) == sorted(convs)
    assert all(c.bytes_per_device == _shard_bytes(by_name[c.variable]) for c in gathered)
    assert len({c.executed_node for c in gathered}) == 1
    expected = []
    for name in convs:
        whole = int(np.prod(by_name[name].shape)) * 4
        assert report.gradients[name].bytes_per_device == whole
        expected.append(f"{name}: predicted {whole // 4} B over ('batch',), measured {whole} B over ('batch',)")
    assert report.compare(communication_plan(model)) == expected
    (loss,) = report.select("loss")
    assert loss.mesh_dims == ("batch",) and loss.fused_with  # rides with the gradients


@pytest.mark.slow
def test_the_transformer_block():
    with pytest.warns(RuntimeWarning, match="is sparse"):
        model, report = _example(models.transformer_block, models.token_counts)
    table = "tokens/embeddings"
    _check_gradients(report, model, {"batch": 2, "model": 4}, skip=(table,))
    # The embedding's gradient is sparse; dtsgd_viz.SGD densifies it, and DTensor sums the
    # dense (16, 16) table over batch before slicing it to the variable's [model, unsharded]
    # layout: it moves the whole table, 4x the shard the layouts predict.
    c = report.gradients[table]
    assert (c.shape, c.bytes_per_device, c.mesh_dims) == ((16, 16), 16 * 16 * 4, ("batch",))
    assert report.compare(communication_plan(model)) == [
        f"{table}: predicted {16 * 4 * 4} B over ('batch',), measured {16 * 16 * 4} B over ('batch',)"
    ]
    assert len(report.select("activation", "all-reduce")) == 2  # attention out, MLP out


# ------------------------------------------------------------------ errors
def test_what_it_refuses():
    def step():
        return 1.0

    with pytest.raises(
        TypeError,
        match=r"takes a tf.function or a ConcreteFunction. "
        r"Received: function 'step' \(a plain Python function",
    ):
        communication(step)
    with pytest.raises(TypeError, match=r"Received: int"):
        communication(3)
    w = tf.Variable([1.0, 2.0])

    @tf.function
    def plain():
        return w.assign_add([1.0, 1.0])

    with pytest.raises(
        ValueError,
        match=r"runs on a DTensor mesh. Received: "
        r"tf.function 'plain', none of whose 1 inputs",
    ):
        communication(plain)
    assert w.numpy().tolist() == [1.0, 2.0]  # refused before running anything


# ------------------------------------------------------------------ two clients
def _plan(mesh):
    from helpers.multiclient_comm import SHAPES, SPECS

    return communication_plan({n: (SHAPES[n], "float32", LayoutSpec(SPECS[n], mesh)) for n in SHAPES})


@pytest.mark.slow
def test_two_clients_report_the_same_collectives(tmp_path):
    out = str(tmp_path / "two")
    cmd = [
        sys.executable,
        "-m",
        "dtsgd_viz.cli",
        "launch",
        "--clients",
        "2",
        "--devices-per-client",
        "4",
        "--timeout",
        "200",
        "--logs",
        os.path.join(out, "logs"),
        SCRIPT,
        out,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=260, cwd=os.path.dirname(HERE))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    first = [CommunicationReport.load(os.path.join(out, f"first-{i}.json")) for i in (0, 1)]
    second = [CommunicationReport.load(os.path.join(out, f"second-{i}.json")) for i in (0, 1)]
    assert first[0] == first[1] and second[0] == second[1]
    assert first[0].ran_step and not second[0].ran_step
    assert first[0].collectives == second[0].collectives
    assert [open(os.path.join(out, f"iterations-{i}.txt")).read() for i in (0, 1)] == ["0", "0"]
    report = first[0]
    assert report.mesh.device_names[4] == "/job:worker/replica:0/task:1/device:CPU:0"
    assert report.compare(_plan(report.mesh)) == []
    # global groups: the batch pairs span the clients (client 0 holds ids 0-3)
    assert {c.groups for c in report.select("gradient")} == {((0, 4), (1, 5), (2, 6), (3, 7))}
    # one process with 8 devices reports the same collectives
    from helpers import multiclient_comm

    multiclient_comm.main([str(tmp_path / "one")])
    one = CommunicationReport.load(str(tmp_path / "one" / "first-0.json"))
    assert one.collectives == report.collectives
    assert one.compare(_plan(MeshSpec.create({"batch": 2, "model": 4}))) == []
