"""plot_blocks / block_errors: one sharded quadratic run under momentum and Nesterov, block by
block. Truth is independent of the recording: the numpy reference replays the rule from the
quadratic's own gradient, and ``dtensor.unpack`` of an index tensor laid out like the
variable says which block each device holds."""

import dataclasses

import numpy as np
import pytest
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.theory import reference
from dtsgd_viz.views.blocks import tail_means
from dtsgd_viz.views.core import style
from tests.conftest import CONFIGS
from tests.helpers.builders import Problem, layout, make_sgd, run

SHAPE = (4, 8)
SPECS = ("unsharded", "y")  # columns cut over y (4 blocks), each replicated over x
STEPS = 12
RULES = ("momentum", "nesterov")


@pytest.fixture(scope="module")
def setup():
    mesh = dtsgd_viz.make_mesh({"x": 2, "y": 4})
    runs, problems = {}, {}
    for name in RULES:
        problem = Problem(SHAPE, layout(mesh, *SPECS), seed=3)
        rec = dtsgd_viz.Recorder()
        opt = make_sgd(dict(CONFIGS[name], exact_update=True), mesh, hooks=[rec])
        run(problem, opt, STEPS, mode="graph", rec=rec)
        runs[name], problems[name] = rec.recording, problem
    return mesh, runs, problems


def _held(mesh):
    """Per device (mesh order): the set of global flat indices its component holds, by
    ``dtensor.unpack`` of an index tensor laid out like the variable."""
    index = np.arange(np.prod(SHAPE), dtype=np.float32).reshape(SHAPE)
    parts = dtensor.unpack(_dtensor.put(index, layout(mesh, *SPECS)))
    return [frozenset(np.asarray(p).astype(int).ravel().tolist()) for p in parts]


def _replayed(problem, name):
    cfg = CONFIGS[name]
    return reference.run(
        lambda w: problem.c.astype(np.float64) * w + problem.b,
        problem.w0.astype(np.float64),
        STEPS,
        float(cfg["learning_rate"]),
        float(cfg["momentum"]),
        bool(cfg["nesterov"]),
    )


@pytest.mark.slow
def test_errors_equal_numpy_replay_on_unpacked_blocks(setup):
    mesh, runs, problems = setup
    target = -problems["momentum"].b / problems["momentum"].c  # the quadratic's minimum
    errs = dtsgd_viz.block_errors(runs, "w", target)
    held = _held(mesh)
    assert errs.measure == "target"
    np.testing.assert_array_equal(errs.updates, np.arange(STEPS + 1))
    for name in RULES:
        path = _replayed(problems[name], name)  # (STEPS + 1, *SHAPE)
        assert errs.errors[name].shape == (STEPS + 1, len(set(held)))
        for b, devices in enumerate(errs.devices):
            flat = sorted(held[devices[0]])
            want = np.linalg.norm((path - target).reshape(STEPS + 1, -1)[:, flat], axis=1)
            np.testing.assert_allclose(errs.errors[name][:, b], want, rtol=2e-4)
    # the optimizer's own variable after the last update, device by device
    final = [np.asarray(p) for p in dtensor.unpack(problems["nesterov"].var.read_value())]
    for d, block in enumerate(errs.block_of):
        sl = errs.slices[block]
        np.testing.assert_allclose(errs.errors["nesterov"][-1, block], np.linalg.norm(final[d] - target[sl]), rtol=1e-5)


def test_blocks_and_devices_match_unpack(setup):
    mesh, runs, _ = setup
    errs = dtsgd_viz.block_errors(runs, "w")
    held = _held(mesh)
    by_block: dict[frozenset, list[int]] = {}
    for d, cells in enumerate(held):
        by_block.setdefault(cells, []).append(d)
    assert sorted(map(tuple, by_block.values())) == sorted(errs.devices)
    index = np.arange(np.prod(SHAPE)).reshape(SHAPE)
    for b, devices in enumerate(errs.devices):
        assert frozenset(index[errs.slices[b]].ravel().tolist()) == held[devices[0]]
        assert all(errs.block_of[d] == b for d in devices)


def test_gradient_measure_is_recorded_gradient_norm(setup):
    _, runs, problems = setup
    errs = dtsgd_viz.block_errors(runs, "w")
    assert errs.measure == "gradient"
    for name in RULES:
        path = _replayed(problems[name], name)
        grads = problems[name].c * path + problems[name].b  # gradient at w_k
        for b, sl in enumerate(errs.slices):
            want = np.linalg.norm(grads[(slice(None), *sl)].reshape(STEPS + 1, -1), axis=1)
            np.testing.assert_allclose(errs.errors[name][:-1, b], want[:-1], rtol=2e-4)
        assert np.all(np.isnan(errs.errors[name][-1]))  # the gradient at w_N is never recorded


@pytest.fixture(scope="module")
def drawn(setup):
    _, runs, problems = setup
    target = -problems["momentum"].b / problems["momentum"].c
    return dtsgd_viz.block_errors(runs, "w", target), dtsgd_viz.plot_blocks(runs, "w", target)


def _panels(fig):
    return [ax for ax in fig.axes if (ax.get_gid() or "").startswith("device ")]


def test_one_panel_per_block_draws_its_errors_at_its_first_devices_mesh_place(drawn):
    errs, fig = drawn
    panels = _panels(fig)
    owners = sorted({devices[0] for devices in errs.devices})
    assert sorted(int(ax.get_gid().split()[1]) for ax in panels) == owners  # one panel per block, no copies
    looks = style.run_looks(RULES)
    rows = sorted({errs.mesh.device_coords(d)[0] for d in owners})  # a mesh row of copies only is left out
    for ax in panels:
        device = int(ax.get_gid().split()[1])
        block = errs.block_of[device]
        lines = {ln.get_gid().split("|")[0]: ln for ln in ax.get_lines()}
        assert set(lines) == set(RULES)
        assert {ln.get_label() for ln in lines.values()} == {"momentum", "Nesterov"}  # as every figure names them
        for name in RULES:
            np.testing.assert_array_equal(lines[name].get_xdata(), errs.updates)
            np.testing.assert_array_equal(lines[name].get_ydata(), errs.errors[name][:, block])
            assert lines[name].get_linestyle() == ("--" if name == "momentum" else "-")
            assert lines[name].get_color() == looks[name].color
            assert (lines[name].get_alpha() or 1.0) == 1.0
        # the dashed momentum line over the thick solid Nesterov one: its gaps show the other
        assert lines["momentum"].get_zorder() > lines["nesterov"].get_zorder()
        assert ax.get_yscale() == "log"
        # mesh position: row = x coordinate (among the rows drawn), column = y coordinate
        spec = ax.get_subplotspec()
        assert spec is not None
        x, y = errs.mesh.device_coords(device)
        assert (spec.rowspan.start, spec.colspan.start) == (rows.index(x), y)
    # one y scale for all panels
    assert len({ax.get_ylim() for ax in panels}) == 1


def test_panel_titles_name_every_device_holding_the_block(drawn, setup):
    from dtsgd_viz.views.shards.geometry import device_label

    errs, fig = drawn
    mesh = setup[0]
    held = _held(mesh)
    names = dtsgd_viz.MeshSpec.create({"x": 2, "y": 4}).short_device_names
    for ax in _panels(fig):
        device = int(ax.get_gid().split()[1])
        holding = [d for d, cells in enumerate(held) if cells == held[device]]
        assert holding[0] == device  # drawn at the block's first device
        title = ax.get_title()
        assert title.split(" · ")[0] == device_label([names[d] for d in holding])
        assert title.split(" · ")[1] == errs.block_name(errs.block_of[device])


def test_title_states_the_public_finding(drawn):
    errs, fig = drawn
    finding = dtsgd_viz.blocks_finding(errs)
    assert fig.get_suptitle().rstrip("\n") == finding
    means = tail_means(errs)
    rows = errs.errors["momentum"][-10:]
    np.testing.assert_allclose(means["momentum"], rows.mean(axis=0))
    ratio = means["momentum"] / means["nesterov"]
    if "within" in finding:
        assert f"{np.max(np.abs(ratio - 1)):.0%}" in finding
    else:
        winner = "Nesterov" if np.sum(ratio > 1) >= np.sum(ratio < 1) else "Momentum"
        won = ratio[ratio > 1] if winner == "Nesterov" else 1 / ratio[ratio < 1]
        assert finding.startswith(winner) and f"{won.min():.2g}x" in finding


@pytest.mark.slow
def test_figure_text_fits_and_does_not_overlap(drawn):
    _, fig = drawn
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # pyright: ignore[reportAttributeAccessIssue]
    assert "\n" not in fig.get_suptitle().rstrip("\n")  # the finding fits on one line
    boxes = [t.get_window_extent(renderer) for ax in _panels(fig) for t in (ax.title,)]
    for i, a in enumerate(boxes):
        assert a.x0 >= 0 and a.x1 <= fig.bbox.width
        assert not any(a.overlaps(b) for b in boxes[i + 1 :])


def test_bad_input_raises_clear_errors(setup):
    mesh, runs, problems = setup
    with pytest.raises(ValueError, match="Unknown variable 'nope'"):
        dtsgd_viz.block_errors(runs, "nope")
    with pytest.raises(ValueError, match=r"target has shape \(3,\).*\(4, 8\)"):
        dtsgd_viz.block_errors(runs, "w", np.zeros(3))
    with pytest.raises(ValueError, match="non-empty mapping"):
        dtsgd_viz.plot_blocks({}, "w")
    other = dataclasses.replace(runs["nesterov"], steps=runs["nesterov"].steps + 1)
    with pytest.raises(ValueError, match="recorded different updates"):
        dtsgd_viz.block_errors({"momentum": runs["momentum"], "other": other}, "w")


@pytest.mark.slow
def test_runs_with_another_layout_are_refused(setup):
    mesh, runs, _ = setup
    problem = Problem(SHAPE, layout(mesh, "x", "unsharded"), seed=3)
    rec = dtsgd_viz.Recorder()
    run(problem, make_sgd(dict(CONFIGS["nesterov"], exact_update=True), mesh, hooks=[rec]), 2, "graph", rec)
    with pytest.raises(ValueError, match="lay out 'w' differently"):
        dtsgd_viz.block_errors({"momentum": runs["momentum"], "other": rec.recording}, "w")
