"""stale_hits: which shard-updates moved with the previous velocity. Truth is independent of
the function: a real exact run (dtsgd_viz.SGD(exact_update=True), a LayoutMap MLP on a 2x4
mesh, batch-sharded data) follows the rule; numpy replays of its gradients put the stale
velocity exactly where a test chooses; the real default optimizer's run is compared with
tutorial 04's check on global values."""

import dataclasses
import warnings

import numpy as np
import pytest

import dtsgd_viz
from dtsgd_viz.theory.stale import CANNOT_TELL, CLASSES, NEITHER, RULE, STALE, moves, stale_hits
from tests.conftest import CONFIGS
from tests.helpers.builders import layoutmap_mlp, train
from tests.helpers.stale_replay import expected_verdicts, replay_with_stale
from tests.helpers.synthetic_recording import recording as synthetic

STEPS = 8
NESTEROV = CONFIGS["nesterov"]


def _record(mesh, **sgd):
    rec = dtsgd_viz.Recorder()
    opt = dtsgd_viz.SGD(**NESTEROV, mesh=mesh, hooks=[rec], **sgd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the recorder's stale-velocity warning
        train(layoutmap_mlp(mesh), opt, mesh, "graph", STEPS, rec)
    return rec.recording


@pytest.fixture(scope="module")
def runs():
    mesh = dtsgd_viz.make_mesh({"batch": 2, "model": 4})
    return {"exact": _record(mesh, exact_update=True), "default": _record(mesh)}


def _chosen(recording):
    """A few ``(update, block)`` pairs per variable: different updates on different
    blocks, the first update and the last included, some blocks left alone."""
    out = {}
    for k, name in enumerate(recording.variables):
        n = recording.geometry(name).num_unique
        out[name] = {(1, 0), (STEPS, n - 1), (3 + k % 3, (k + 1) % n), (5, 0)}
    return out


@pytest.mark.slow
def test_an_exact_run_moves_every_shard_with_the_new_velocity(runs):
    rec = runs["exact"]
    assert len(dtsgd_viz.reference.check_recording(rec)["d1/kernel"]) == 0  # the run follows the rule
    for name in rec.variables:
        hits = stale_hits(rec, name)
        assert hits.verdict.shape == (STEPS, 8)
        assert hits.count(RULE) == STEPS * 8, (name, hits.counts)
        assert hits.counts == {RULE: STEPS * 8, STALE: 0, NEITHER: 0, CANNOT_TELL: 0}
        assert np.nanmax(hits.rule_residual) <= hits.tol < np.nanmin(hits.stale_residual)


@pytest.mark.parametrize("rule", ["plain", "momentum", "nesterov", "nesterov+decay"])
@pytest.mark.slow
def test_a_replay_with_chosen_stale_shards_is_flagged_exactly_there(runs, rule):
    cfg = CONFIGS[rule.partition("+")[0]]
    rec = runs["exact"]
    chosen = _chosen(rec)
    decay = 0.01 if rule.endswith("decay") else None
    replayed = replay_with_stale(
        rec, chosen, cfg["learning_rate"], cfg["momentum"], cfg["nesterov"], weight_decay=decay
    )
    for name in rec.variables:
        hits = stale_hits(replayed, name)
        expected = expected_verdicts(replayed, name, chosen, CLASSES)
        np.testing.assert_array_equal(hits.verdict, expected, err_msg=f"{rule} {name}")
        geometry = replayed.geometry(name)
        flagged = {(s, geometry.group_of[d]) for s, d in hits.where(STALE)}
        assert flagged == chosen[name]


@pytest.mark.slow
def test_the_same_replay_without_stale_shards_is_all_rule(runs):
    replayed = replay_with_stale(runs["exact"], {}, **NESTEROV)
    for name in replayed.variables:
        assert stale_hits(replayed, name).count(RULE) == STEPS * 8, name


@pytest.mark.slow
def test_a_move_of_neither_velocity_is_neither(runs):
    """A shard moved half-way between the two candidates is neither, with both residuals
    about a half of the gap."""
    rec = replay_with_stale(runs["exact"], {}, **NESTEROV)
    record = rec.record("d1/kernel")
    p = record.blocks["param"].copy()
    v = record.blocks["velocity"]
    mu = np.float32(NESTEROV["momentum"])
    i, block = 4, 2
    p[i, block] = p[i, block] - np.float32(0.5) * mu * (v[i, block] - v[i - 1, block])
    p[i + 1 :] += p[i] - record.blocks["param"][i]  # later updates move as they did, from there
    changed = dataclasses.replace(record, blocks={**record.blocks, "param": p})
    rec = dataclasses.replace(rec, records=tuple(changed if r.name == "d1/kernel" else r for r in rec.records))
    hits = stale_hits(rec, "d1/kernel")
    geometry = rec.geometry("d1/kernel")
    devices = list(geometry.replica_groups[block])
    assert sorted(d for s, d in hits.where(NEITHER)) == devices
    assert {s for s, _ in hits.where(NEITHER)} == {int(rec.steps[i])}
    for d in devices:
        assert hits.rule_residual[i, d] == pytest.approx(0.5 * hits.gap[i, d], rel=1e-3)
        assert hits.stale_residual[i, d] == pytest.approx(0.5 * hits.gap[i, d], rel=1e-3)


@pytest.mark.slow
def test_nesterov_without_momentum_cannot_tell_the_velocities_apart(runs):
    """With mu = 0 Nesterov's move is -lr * g whichever velocity is read."""
    replayed = replay_with_stale(runs["exact"], {}, 0.05, 0.0, True)
    for name in replayed.variables:
        assert stale_hits(replayed, name).count(CANNOT_TELL) == STEPS * 8, name


@pytest.mark.slow
def test_a_recording_begun_mid_run_cannot_tell_its_first_update(runs):
    rec = replay_with_stale(runs["exact"], _chosen(runs["exact"]), **NESTEROV)
    cut = 2  # keep updates 3..STEPS
    records = tuple(
        dataclasses.replace(
            r,
            initial=r.geometry.assemble(r.blocks["param"][cut - 1]),
            blocks={k: b[cut:] for k, b in r.blocks.items()},
        )
        for r in rec.records
    )
    hp = dataclasses.replace(rec.hyperparameters, learning_rate=rec.hyperparameters.learning_rate[cut:])
    later = dataclasses.replace(
        rec,
        records=records,
        steps=rec.steps[cut:],
        hyperparameters=hp,
        loss_values=rec.loss_values[cut:],
        nonfinite=rec.nonfinite[cut:],
        mismatch=rec.mismatch[cut:],
    )
    for name in rec.variables:
        hits = stale_hits(later, name)
        assert np.all(hits.verdict[0] == CLASSES.index(CANNOT_TELL)), name
        np.testing.assert_array_equal(hits.verdict[1:], stale_hits(rec, name).verdict[cut + 1 :])


@pytest.mark.slow
def test_disagreeing_copies_leave_the_other_replicas_unknown(runs):
    rec = replay_with_stale(runs["exact"], {}, **NESTEROV)
    index = rec.variables.index("d1/kernel")
    mismatch = rec.mismatch.copy()
    mismatch[3, index] = 1  # the parameter's copies disagreed at the 4th update
    hits = stale_hits(dataclasses.replace(rec, mismatch=mismatch), "d1/kernel")
    geometry = rec.geometry("d1/kernel")
    others = [d for d in range(8) if geometry.replica_groups[geometry.group_of[d]][0] != d]
    unknown = {(s, d) for s, d in hits.where(CANNOT_TELL)}
    assert unknown == {(int(rec.steps[i]), d) for i in (3, 4) for d in others}
    assert np.isnan(hits.rule_residual[3:5, others]).all() and not np.isnan(hits.rule_residual[3:5, 0]).any()


@pytest.mark.slow
def test_ema_overwrites_are_not_sgd_moves(runs):
    rec = replay_with_stale(runs["exact"], _chosen(runs["exact"]), **NESTEROV)
    hp = dataclasses.replace(rec.hyperparameters, ema_overwrite_frequency=3)
    overwritten = dataclasses.replace(rec, hyperparameters=hp)
    for name in rec.variables:
        before, after = stale_hits(rec, name).verdict, stale_hits(overwritten, name).verdict
        every_third = rec.steps % 3 == 0
        assert np.all(after[every_third] == CLASSES.index(CANNOT_TELL))
        np.testing.assert_array_equal(after[~every_third], before[~every_third])


@pytest.mark.slow
def test_the_default_optimizer_agrees_with_tutorial_04s_global_check(runs):
    """Tutorial 04 compares p with p_prev - lr*g + mu*v (the rule) and with mu*v_prev in
    its place (stale) on the global values. A variable all of whose shards are stale at an
    update fits the stale formula globally there, one all of whose shards follow the rule
    fits the rule, and a variable mixing the two fits neither."""
    rec = runs["default"]
    lr, mu = np.float64(np.float32(NESTEROV["learning_rate"])), np.float64(np.float32(NESTEROV["momentum"]))
    seen = 0
    for name in rec.variables:
        p, v, g = (rec.global_values(name, k).astype(np.float64) for k in ("param", "velocity", "grad"))
        p_prev = np.concatenate([rec.initial(name)[None], p[:-1]])
        v_prev = np.concatenate([np.zeros_like(v[:1]), v[:-1]])
        hits = stale_hits(rec, name)
        seen += hits.count(STALE)
        for i in range(STEPS):
            rule = np.allclose(p[i], p_prev[i] - lr * g[i] + mu * v[i], atol=1e-6)
            stale = np.allclose(p[i], p_prev[i] - lr * g[i] + mu * v_prev[i], atol=1e-6)
            # the shards it could tell: a copy whose replicas disagreed is told on the recorded one only (the
            # global values are that copy), and a shard whose two candidates coincide fits both
            row = hits.verdict[i][hits.verdict[i] != CLASSES.index(CANNOT_TELL)]
            if len(row) and np.all(row == CLASSES.index(STALE)):
                assert stale and not rule, (name, i)
            elif len(row) and np.all(row == CLASSES.index(RULE)):
                assert rule and not stale, (name, i)
            elif len(row):
                assert not (rule or stale), (name, i, hits.verdict[i])
            assert hits.count(NEITHER) == 0, name
    assert seen > 0  # the hazard tutorial 04 shows (see test_optimizer's pin of it)


def test_moves_are_the_two_candidates():
    v_prev, v, g = np.float32(-0.1), np.float32(-0.19), np.float32(1.0)
    rule, stale = moves(v_prev, v, g, 0.1, 0.9, True, np.float32(2.0), weight_decay=0.5)
    assert rule == pytest.approx(0.9 * -0.19 - 0.1 - 0.5 * 0.1 * 2.0)
    assert stale == pytest.approx(0.9 * -0.1 - 0.1 - 0.5 * 0.1 * 2.0)
    assert moves(v_prev, v, g, 0.1, 0.9, False, np.float32(2.0)) == pytest.approx((-0.19, -0.1))


@pytest.mark.slow
def test_bad_input_says_what_was_received_and_allowed(runs):
    rec = runs["exact"]
    with pytest.raises(ValueError, match=r"Unknown variable 'nope'.*d1/kernel"):
        stale_hits(rec, "nope")
    no_velocity = dataclasses.replace(
        rec,
        kinds=("param", "grad"),
        records=tuple(
            dataclasses.replace(r, blocks={k: b for k, b in r.blocks.items() if k != "velocity"}) for r in rec.records
        ),
    )
    with pytest.raises(ValueError, match=r"param, velocity and grad.*kinds=\['param', 'grad'\]"):
        stale_hits(no_velocity, "d1/kernel")
    with pytest.raises(ValueError, match=r"Unknown class 'old'.*'rule', 'stale', 'neither', 'cannot tell'"):
        stale_hits(rec, "d1/kernel").count("old")


def test_recordings_it_cannot_classify_are_refused_with_the_reason():
    one = [("w", (8,), ("model",))]
    with pytest.raises(ValueError, match=r"Unknown variable 'v'.*\['w'\]"):
        stale_hits(synthetic(one, steps=3), "v")
    with pytest.raises(ValueError, match=r"param, velocity and grad.*kinds=\['param', 'grad'\]"):
        stale_hits(synthetic(one, steps=3, kinds=("param", "grad")), "w")
    with pytest.raises(ValueError, match=r"mode='stats'"):
        stale_hits(synthetic(one, steps=3, mode="stats"), "w")
    with pytest.raises(ValueError, match=r"consecutive updates.*\[2, 4, 6\]"):
        stale_hits(synthetic(one, steps=3, updates=[2, 4, 6]), "w")
    for tol in (-1, 0.5, "0.1", True):
        with pytest.raises(ValueError, match=rf"tol must be a number in \[0, 0.5\). Received: tol={tol!r}"):
            stale_hits(synthetic(one, steps=3), "w", tol=tol)  # pyright: ignore[reportArgumentType]
