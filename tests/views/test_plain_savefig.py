"""Every public figure saves whole with a plain ``fig.savefig(path)`` (no
``bbox_inches="tight"``): no title, label, note or legend leaves the figure, on the runs
the tutorials draw. Found: ``plot_shards`` cut its title at the right edge ("...over 16
update[s]")."""

import numpy as np
import pytest
from helpers.figure_checks import clipped

import dtsgd_viz
from dtsgd_viz import LayoutSpec, MeshSpec, memory_plan, surfaces

ROTATED = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
SHARDED = surfaces.ShardedQuadratic()
RULES = {
    "plain": dict(learning_rate=0.05),
    "momentum": dict(learning_rate=0.05, momentum=0.9, exact_update=True),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True, exact_update=True),
}


@pytest.fixture(scope="module")
def rotated():
    return dtsgd_viz.run(ROTATED, RULES, 30)


@pytest.fixture(scope="module")
def sharded():
    return dtsgd_viz.run(SHARDED, {k: {**v, "learning_rate": 0.5} for k, v in RULES.items()}, 16)


FIGURES = {
    "plot_paths": lambda r, s: dtsgd_viz.plot_paths(r, ROTATED),
    "plot_paths at an update": lambda r, s: dtsgd_viz.plot_paths(r, ROTATED, step=5),
    "plot_update": lambda r, s: dtsgd_viz.plot_update(r, ROTATED, step=5),
    "plot_modes": lambda r, s: dtsgd_viz.plot_modes({k: r[k] for k in ("momentum", "nesterov")}, ROTATED),
    "plot_shards": lambda r, s: dtsgd_viz.plot_shards(s["nesterov"], "w"),
    "plot_shards, velocity at 8": lambda r, s: dtsgd_viz.plot_shards(s["momentum"], "w", "velocity", 8),
    "plot_update_shards": lambda r, s: dtsgd_viz.plot_update_shards(s["nesterov"], "w"),
    "plot_block_rates": lambda r, s: dtsgd_viz.plot_block_rates(s["momentum"], SHARDED),
    "plot_compare": lambda r, s: dtsgd_viz.plot_compare(s),
    "plot_layout": lambda r, s: dtsgd_viz.plot_layout(s["nesterov"], name="w"),
    "plot_memory": lambda r, s: dtsgd_viz.plot_memory(
        memory_plan(
            {"w": ((64, 64), "float32", LayoutSpec(("batch", "model"), MeshSpec.create({"batch": 2, "model": 4})))}
        )
    ),
    "plot_phase": lambda r, s: dtsgd_viz.plot_phase(
        ROTATED, steps=40, learning_rates=np.geomspace(0.01, 0.2, 6), momenta=np.linspace(0.0, 0.95, 5)
    ),
}


@pytest.mark.parametrize("which", sorted(FIGURES))
@pytest.mark.slow
def test_a_plain_savefig_keeps_every_text(which, rotated, sharded):
    fig = FIGURES[which](rotated, sharded)
    assert clipped(fig) == [], which


@pytest.mark.parametrize("which", sorted(FIGURES))
@pytest.mark.slow
def test_no_text_runs_into_another_or_a_legend(which, rotated, sharded):
    from helpers.figure_checks import clashes

    fig = FIGURES[which](rotated, sharded)
    assert clashes(fig) == [], which
