"""A diverging run is named as diverging on every picture, and no warning the user did
not cause reaches them (numpy's overflow, matplotlib's layout notes).

Found on the views as they were: ``plot_modes`` titled a diverging pair "Momentum
converges fastest: rate ρ = 998.099" over an empty lower panel; ``plot_shards`` said
"block norms within 1.5x of each other" counting only the finite blocks;
``plot_block_rates`` raised ``ValueError: zero-size array to reduction operation
minimum`` at lr=50 on 5 finite updates."""

import warnings

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz import surfaces
from dtsgd_viz.views.core.diverging import diverging_from

ROTATED = surfaces.RotatedQuadratic()
SHARDED = surfaces.ShardedQuadratic()


@pytest.fixture(scope="module")
def diverging():
    """Both rules on the rotated quadratic at lr 3 (past both rules' limits), and
    heavy-ball on the sharded quadratic at lr 50 (7 of its 8 blocks past the limit)."""
    both = dtsgd_viz.run(
        ROTATED,
        {
            "momentum": dict(learning_rate=3.0, momentum=0.9),
            "nesterov": dict(learning_rate=3.0, momentum=0.9, nesterov=True),
        },
        steps=30,
    )
    sharded = dtsgd_viz.run(SHARDED, {"momentum": dict(learning_rate=50.0, momentum=0.9)}, steps=5)
    return both, sharded["momentum"]


def _quiet(fn, *args, **kwargs):
    """``fn(*args)`` with every warning an error: none may leak from a view."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fig = fn(*args, **kwargs)
        fig.savefig(__import__("io").BytesIO(), format="png")
    return fig


def _texts(fig) -> str:
    parts = [fig._suptitle.get_text() if fig._suptitle else ""]
    parts += [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        parts += [ax.get_title(), *[t.get_text() for t in ax.texts]]
    return " ".join(parts).replace("\n", " ")


def test_the_divergence_update_is_where_the_loss_leaves_for_good():
    loss = [1.0, 0.5, 2.0, 40.0, np.inf]
    assert diverging_from(loss, [1, 2, 3, 4, 5]) == 3
    assert diverging_from([1.0, 3.0, 0.8, 0.1], [1, 2, 3, 4]) is None
    assert diverging_from([np.nan, np.nan], [1, 2]) == 1


@pytest.mark.slow
def test_plot_modes_names_both_runs_diverging_with_their_true_rates(diverging):
    both, _ = diverging
    fig = _quiet(dtsgd_viz.plot_modes, both, ROTATED)
    title = fig._suptitle.get_text()
    assert "diverge" in title and "converges fastest" not in title
    # the rates it states are the spectral radii of each rule at the fast direction
    from dtsgd_viz.theory.quadratic import spectral_radius

    h = float(np.max(np.linalg.eigvalsh(ROTATED.hessian)))
    for name, nesterov in (("momentum", False), ("Nesterov", True)):
        rho = spectral_radius(3.0, 0.9, h, nesterov)
        assert f"{name} ρ = {rho:.3g}" in title


@pytest.mark.slow
def test_plot_block_rates_draws_a_diverging_run_and_names_it(diverging):
    _, sharded = diverging
    fig = _quiet(dtsgd_viz.plot_block_rates, sharded, SHARDED)
    text = _texts(fig)
    assert "diverge" in text
    # how many blocks it says are past momentum's limit: those with lr * h * ... > limit
    curv = np.unique(SHARDED.curvature)
    from dtsgd_viz.theory.quadratic import spectral_radius

    past = sum(spectral_radius(50.0, 0.9, float(c), False) > 1 for c in curv)
    assert f"{past} of {len(curv)} blocks diverge" in text or f"{past} past momentum's limit" in text


@pytest.mark.slow
def test_plot_shards_names_a_diverging_run(diverging):
    _, sharded = diverging
    fig = _quiet(dtsgd_viz.plot_shards, sharded, "w")
    text = _texts(fig)
    assert "diverges from update" in text
    assert "within" not in fig._suptitle.get_text()  # no "within 1.5x" over the finite few
