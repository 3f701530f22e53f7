"""plot_stale: where the stale velocity hits. Real runs of a LayoutMap MLP on a 2x4 mesh
with batch-sharded data (the default dtsgd_viz.SGD and exact_update=True) and a numpy
replay that puts the stale velocity on chosen blocks; the figure is checked through its
data: each drawn cell's colour is the class stale_hits gives that device and update, each
row's device and block are the ones dtensor.unpack says the device holds, the title's
numbers are the function's counts."""

import dataclasses
import re
import warnings

import numpy as np
import pytest
from matplotlib.colors import to_rgb
from matplotlib.image import AxesImage
from matplotlib.patches import Patch
from tensorflow.experimental import dtensor

import dtsgd_viz
from dtsgd_viz import dtensor as _dtensor
from dtsgd_viz.theory.stale import CLASSES, STALE, stale_hits
from dtsgd_viz.views.core import style
from dtsgd_viz.views.core.figure import headline_texts
from dtsgd_viz.views.stale import stale_finding, stale_grid
from tests.conftest import CONFIGS
from tests.helpers.builders import layoutmap_mlp, train
from tests.helpers.figure_checks import all_axes, assert_reads, legends
from tests.helpers.stale_replay import replay_with_stale
from tests.helpers.synthetic_recording import recording as synthetic

STEPS = 6
NESTEROV = CONFIGS["nesterov"]


@pytest.fixture(scope="module")
def setup():
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    runs, models = {}, {}
    for name, sgd in (("default", {}), ("exact_update=True", {"exact_update": True})):
        rec = dtsgd_viz.Recorder()
        model = layoutmap_mlp(mesh)
        opt = dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec], **sgd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the recorder's stale-velocity warning
            train(model, opt, mesh, "graph", STEPS, rec)
        runs[name], models[name] = rec.recording, model
    # a run whose stale shards are known: different blocks at different updates
    chosen = {"d1/kernel": {(2, 1), (4, 3)}, "d1/bias": {(1, 0)}, "d2/bias": {(5, 0)}}
    runs["replayed"] = replay_with_stale(runs["exact_update=True"], chosen, **NESTEROV)
    return runs, models["default"]


def _images(fig):
    return {im.get_gid(): im for ax in fig.axes for im in ax.get_children() if isinstance(im, AxesImage)}


def _rows(fig, variables):
    """Per row of the grid, top to bottom: (variable, device name, block label or None),
    read off the drawn tick labels (devices and blocks on the left, variables on the
    right, each variable's name at the middle of its rows)."""
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert list(ax.get_yticks()) == list(range(len(labels)))
    names = [a for a in all_axes(fig) if a is not ax and a.get_yticklabels() and a.get_yticklabels()[0].get_text()]
    if names:
        side = names[-1]
        centres = np.asarray(side.get_yticks())
        assert [t.get_text() for t in side.get_yticklabels()] == list(variables)
        owner = [variables[int(np.argmin(np.abs(centres - r)))] for r in range(len(labels))]
    else:
        owner = [variables[0]] * len(labels)
    out = []
    for variable, text in zip(owner, labels):
        block, _, device = text.rpartition("  ")
        out.append((variable, device, block or None))
    return out


def _held(model, variable):
    """Per device: the flat indices of the global tensor its component holds, by
    ``dtensor.unpack`` of an index tensor laid out like the live variable."""
    var = next(w for w in model.trainable_variables if w.name.split(":")[0] == variable)
    shape = tuple(var.shape)
    index = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    parts = dtensor.unpack(_dtensor.put(index, dtensor.fetch_layout(var)))
    return shape, [frozenset(np.asarray(p).astype(int).ravel().tolist()) for p in parts]


def _indices(block, shape):
    """The flat indices a block label such as ``[:, 4:8]`` or ``whole`` names."""
    grid = np.arange(int(np.prod(shape))).reshape(shape)
    if block == "whole":
        return frozenset(grid.ravel().tolist())
    cut = []
    for part in block.strip("[]").split(", "):
        a, _, b = part.partition(":")
        cut.append(slice(int(a) if a else None, int(b) if b else None))
    return frozenset(grid[tuple(cut)].ravel().tolist())


@pytest.mark.slow
def test_each_cell_has_the_colour_of_its_class(setup):
    runs, _ = setup
    fig = dtsgd_viz.plot_stale(runs)
    variables = runs["default"].variables
    rows = _rows(fig, variables)
    colors = {kind: np.array(to_rgb(style.STALE_COLORS[kind])) for kind in CLASSES}
    images = _images(fig)
    seen = set()
    for run, rec in runs.items():
        image = images[f"cells|{run}"]
        x0, x1, _, _ = image.get_extent()
        assert (x0, x1) == (rec.steps[0] - 0.5, rec.steps[-1] + 0.5)  # one column per update
        cells = np.asarray(image.get_array())
        assert cells.shape[:2] == (len(rows), rec.steps[-1] - rec.steps[0] + 1)
        devices = [d.split("device:")[-1] for d in rec.shard_devices(variables[0])]
        for r, (variable, device, _) in enumerate(rows):
            verdict = stale_hits(rec, variable).verdict[:, devices.index(device)]
            for step, v in zip(rec.steps, verdict):
                np.testing.assert_allclose(
                    cells[r, step - rec.steps[0], :3], colors[CLASSES[v]], err_msg=f"{run} {variable} {device}"
                )
                seen.add(CLASSES[v])
    assert {"rule", "stale"} <= seen


@pytest.mark.slow
def test_rows_are_devices_grouped_by_the_block_they_hold(setup):
    runs, model = setup
    fig = dtsgd_viz.plot_stale(runs)
    variables = runs["default"].variables
    rows = _rows(fig, variables)
    devices = [d.split("device:")[-1] for d in runs["default"].shard_devices(variables[0])]
    for variable in variables:
        mine = [(device, block) for v, device, block in rows if v == variable]
        assert sorted(device for device, _ in mine) == sorted(devices)  # every device once
        shape, held = _held(model, variable)
        current = None
        for device, block in mine:
            if block is not None:  # a block's first row names it ...
                current = _indices(block, shape)
                assert sum(1 for h in held if h == current) >= 1
            assert held[devices.index(device)] == current, (variable, device)  # ... and its replicas follow
        firsts = [block for _, block in mine if block is not None]
        assert len(firsts) == len(set(held)) == len(set(firsts))  # each block named once, adjacent rows


def _stale_and_total(rec):
    """Shard-updates of ``rec`` that moved with the previous velocity, and all of them."""
    return sum(stale_hits(rec, v).count(STALE) for v in rec.variables), len(rec.steps) * 8 * len(rec.variables)


@pytest.mark.slow
def test_the_title_states_the_functions_counts(setup):
    runs, _ = setup
    two = {name: runs[name] for name in ("default", "exact_update=True")}
    fig = dtsgd_viz.plot_stale(two)
    finding, settings = headline_texts(fig)
    assert "\n" not in finding  # one line
    assert finding == stale_finding(stale_grid(two))
    for run, rec in two.items():
        stale, total = _stale_and_total(rec)
        said = re.search(rf"{re.escape(run)}: (none|(\d+) of (\d+) shard-updates)", finding)
        assert said is not None, finding
        if stale:
            assert (int(said.group(2)), int(said.group(3))) == (stale, total)
        else:
            assert said.group(1) == "none"
    assert [ax.get_title() for ax in fig.axes[:2]] == list(two)
    assert settings is not None and "mesh batch=2 x model=4" in settings


@pytest.mark.slow
def test_three_runs_state_each_count_in_the_title_and_their_names_over_the_panels(setup):
    runs, _ = setup
    fig = dtsgd_viz.plot_stale(runs)
    finding, _ = headline_texts(fig)
    assert " ".join(finding.split()) == stale_finding(stale_grid(runs))  # on two lines if it must
    counts = {run: _stale_and_total(rec) for run, rec in runs.items()}
    for run, (stale, total) in counts.items():
        assert (f"{run}: {stale} of {total} shard-updates" if stale else f"{run}: none") in " ".join(finding.split())
    assert [ax.get_title() for ax in fig.axes[:3]] == list(runs)
    assert counts["replayed"][0] == (2 + 1) * 2 + 8  # the blocks chosen: d1's on 2 devices each, d2/bias on 8


@pytest.mark.slow
def test_the_legend_names_every_class_drawn_in_its_colour_and_nothing_overlaps(setup):
    runs, _ = setup
    for variable in (None, "d1/kernel"):
        fig = dtsgd_viz.plot_stale(runs, variable)
        (legend,) = legends(fig)
        grid = dtsgd_viz.stale_grid(runs, variable)
        used = [k for i, k in enumerate(CLASSES) if any((grid.verdicts[r] == i).any() for r in grid.runs)]
        assert used and [t.get_text() for t in legend.get_texts()] == used  # only the classes some cell has
        faces = [np.array(h.get_facecolor())[:3] for h in legend.legend_handles if isinstance(h, Patch)]
        np.testing.assert_allclose(faces, [to_rgb(style.STALE_COLORS[k]) for k in used])
        fig.set_dpi(style.DPI)
        assert fig.get_figwidth() <= style.WIDTH
        assert_reads(fig, f"plot_stale variable={variable}")


@pytest.mark.slow
def test_one_variable_draws_its_devices_only(setup):
    runs, _ = setup
    fig = dtsgd_viz.plot_stale({"default": runs["default"]}, "d2/bias")
    rows = _rows(fig, ("d2/bias",))
    assert len(rows) == 8 and [b for _, _, b in rows].count("whole") == 1  # replicated: one block, 8 copies
    (image,) = _images(fig).values()
    np.testing.assert_array_equal(image.get_array().shape[:2], (8, STEPS))  # pyright: ignore[reportOptionalMemberAccess]


@pytest.mark.slow
def test_runs_laid_out_differently_are_refused(setup):
    runs, _ = setup
    with pytest.raises(ValueError, match=r"Unknown variable 'nope' in run 'default'.*d1/kernel"):
        dtsgd_viz.plot_stale(runs, "nope")
    other = synthetic([("d1/kernel", (4, 16), ("model", "unsharded"))], steps=3)
    with pytest.raises(ValueError, match=r"lay out 'd1/kernel' differently"):
        dtsgd_viz.plot_stale({"default": runs["default"], "other": other}, "d1/kernel")


def test_bad_input_says_what_was_received_and_allowed():
    one = [("w", (8,), ("model",))]
    with pytest.raises(ValueError, match=r"Unknown variable 'v' in run 'run'.*\['w'\]"):
        dtsgd_viz.plot_stale({"run": synthetic(one, steps=3)}, "v")
    with pytest.raises(ValueError, match=r"param, velocity and grad.*kinds=\['param', 'grad'\]"):
        dtsgd_viz.plot_stale({"run": synthetic(one, steps=3, kinds=("param", "grad"))})
    with pytest.raises(ValueError, match=r"non-empty mapping of name -> Recording. Received: dict"):
        dtsgd_viz.plot_stale({})
    with pytest.raises(ValueError, match=r"Run 'x' is not a Recording. Received: list"):
        dtsgd_viz.plot_stale({"x": []})  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match=r"Recording 'e' has no steps"):
        dtsgd_viz.plot_stale({"e": synthetic(one, steps=0)})


def test_an_update_a_loss_scale_skipped_is_a_blank_column():
    """Updates 1, 2, 4, 5 applied, 3 skipped (it changed nothing): the replay moves with the
    previous velocity at update 4 on block 1, and the grid leaves update 3's column white."""
    base = synthetic([("w", (8,), ("model",))], steps=4, updates=[1, 2, 4, 5])
    base = dataclasses.replace(base, skipped_steps=np.array([3]), skipped_loss_scale=np.array([2.0**15]))
    rec = replay_with_stale(base, {"w": {(4, 1)}}, **NESTEROV)
    fig = dtsgd_viz.plot_stale({"run": rec})
    (image,) = _images(fig).values()
    cells = np.asarray(image.get_array())
    assert cells.shape[:2] == (8, 5)
    np.testing.assert_allclose(cells[:, 2, :3], 1.0)  # update 3: white
    rows = _rows(fig, ("w",))
    for r, (_, device, _) in enumerate(rows):
        kind = STALE if device in ("CPU:1", "CPU:5") else "rule"  # block 1 on both batch rows
        np.testing.assert_allclose(cells[r, 3, :3], to_rgb(style.STALE_COLORS[kind]), err_msg=device)
