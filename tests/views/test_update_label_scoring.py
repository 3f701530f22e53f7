"""The close-ups' label scoring: ``_static_all`` (every spot of a label at once) gives
each spot the cost the one-spot reference ``_static`` gives it, on random arrows, marks,
path points and frames; the vectorised geometry agrees with the scalar tests in ``hits``."""

import numpy as np
import pytest

from dtsgd_viz.views.update import labels as L
from dtsgd_viz.views.update.hits import _poly_rect, _seg_poly


def scene(rng):
    polys = [L.arrow_polygon(rng.uniform(0, 300, 2), rng.uniform(0, 300, 2), rng.uniform(1, 6)) for _ in range(3)]
    polys.append(rng.uniform(0, 300, (1, 2)))  # a zero-length arrow: a point
    discs = [(rng.uniform(0, 300, 2), float(rng.uniform(2, 8))) for _ in range(3)]
    lines = rng.uniform(0, 300, (40, 2))
    return polys, discs, lines


@pytest.mark.parametrize("seed", range(12))
def test_all_spots_at_once_cost_what_each_spot_costs(seed):
    rng = np.random.default_rng(seed)
    things = scene(rng)
    frame = (0.0, 0.0, 300.0, 300.0)
    # an anchor on an arrow's head half of the time: the leader is then read from where it leaves it
    anchor = things[0][0][3] if seed % 2 else rng.uniform(20, 280, 2)
    label = L.Label("−lr·g", np.zeros(2), "x", own=float(rng.uniform(2, 9)), under=None if seed % 3 else 4.0)
    spots = L._spots(np.asarray(anchor, np.float64), (rng.uniform(20, 60), rng.uniform(8, 20)), frame, 1.5)
    pref = None if seed % 4 == 0 else np.array([0.6, 0.8])
    still = L._Still.of(things, np.asarray(anchor, np.float64))
    fast = L._static_all(spots, label, things, frame, pref, 4.0, still)
    slow = np.array([L._static(s, label, things, frame, pref, 4.0) for s in spots])
    np.testing.assert_allclose(fast, slow, rtol=0, atol=1e-9)
    assert (slow >= L.HARD).any() and (slow < L.HARD).any()  # both crossing and clear spots were scored


def test_vectorised_hits_agree_with_the_scalar_tests():
    rng = np.random.default_rng(7)
    for _ in range(60):
        poly = L.arrow_polygon(rng.uniform(0, 200, 2), rng.uniform(0, 200, 2), rng.uniform(1, 6))
        x0, y0 = rng.uniform(-20, 220, 100), rng.uniform(-20, 220, 100)
        rects = np.column_stack([x0, y0, x0 + rng.uniform(0, 60, 100), y0 + rng.uniform(0, 20, 100)])
        slow = np.array([_poly_rect(poly, tuple(r)) for r in rects])
        assert (L._polys_rects(poly, rects) == slow).mean() > 0.99  # an edge case on a boundary may differ
        a = rng.uniform(0, 200, (100, 2))
        b = a + rng.normal(0, 40, (100, 2))
        assert L._segs_polys(a, b, poly).tolist() == [_seg_poly(x, y, poly) for x, y in zip(a, b)]
