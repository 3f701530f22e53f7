"""The app's table of one update's terms (``widgets.update_table``), checked against the
update rules written out in numpy on the real optimizer's recorded run."""

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz.theory import surfaces
from dtsgd_viz.widgets.update_table import update_rows, update_table_html

SURFACE = surfaces.RotatedQuadratic(condition=20.0, angle=30.0)
CONFIGS = {
    "plain": dict(learning_rate=0.05, momentum=0.0),
    "momentum": dict(learning_rate=0.05, momentum=0.9),
    "nesterov": dict(learning_rate=0.05, momentum=0.9, nesterov=True),
}
STEPS = 6


@pytest.fixture(scope="module")
def recs():
    return dtsgd_viz.run(SURFACE, CONFIGS, STEPS)


def reference(config, steps):
    """tf-keras' SGD in numpy from the surface's start: per update (loss before it,
    |velocity term|, |lr*g|, |step|)."""
    lr, mu, nesterov = config["learning_rate"], config["momentum"], config.get("nesterov", False)
    p = np.asarray(SURFACE.default_start, np.float64).reshape(-1)
    v = np.zeros_like(p)
    out = []
    for _ in range(steps):
        g = np.asarray(SURFACE.grad_np(p), np.float64).reshape(-1)
        loss = float(SURFACE.value_np(p))
        v_prev, v = v, mu * v - lr * g
        term = None if mu == 0 else np.linalg.norm(mu * (v if nesterov else v_prev))
        step = mu * v - lr * g if nesterov else v
        out.append((loss, term, np.linalg.norm(lr * g), np.linalg.norm(step)))
        p = p + step
    return out


@pytest.mark.parametrize("update", [1, 2, STEPS - 1])
@pytest.mark.slow
def test_each_rows_numbers_are_the_rules_terms(recs, update):
    rows = {r.name: r for r in update_rows(recs, update)}
    assert list(rows) == list(CONFIGS)
    for key, config in CONFIGS.items():
        loss, term, grad, step = reference(config, STEPS)[update - 1]
        r = rows[key]
        assert r.loss == pytest.approx(loss, rel=1e-5)
        assert r.gradient_term == pytest.approx(grad, rel=1e-5)
        assert r.step == pytest.approx(step, rel=1e-5)
        if term is None:
            assert r.velocity_term is None
        else:
            assert r.velocity_term == pytest.approx(term, rel=1e-5, abs=1e-12)
    assert rows["momentum"].velocity_term == 0.0 if update == 1 else rows["momentum"].velocity_term > 0


@pytest.mark.slow
def test_the_table_names_the_update_and_writes_each_number(recs):
    rows = update_rows(recs, 3)
    text = update_table_html(rows, 3)
    assert "Update 3, each run's terms" in text
    assert text.count("<tr>") == 1 + len(rows)
    for r in rows:
        assert f"{r.step:.3g}" in text and f"{r.gradient_term:.3g}" in text
    assert text.count("—") >= 2  # plain SGD has no velocity term; the footnote names the dash


def test_an_update_not_recorded_is_a_clear_error(recs):
    with pytest.raises(ValueError, match="update"):
        update_rows(recs, STEPS + 5)
