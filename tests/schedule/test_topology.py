import itertools

import numpy as np
import pytest

from dynagnn.errors import ConfigError
from dynagnn.schedule.topology import (deployment_reward, evaluate, exhaustive_order, greedy_order, operator_sequence,
                                       plan_operators, plan_operators_batch)


def sampled_reward(ops1, ops2, n=20001):
    """Eq. 3 on a fine grid of instants: f_p(t) read off each process's timeline (None when idle)."""
    def f_at(ops, t):
        ends = np.cumsum([o[2] for o in ops])
        out = np.full(t.shape, -1)
        starts = ends - np.array([o[2] for o in ops])
        for (name, kind, d), s, e in zip(ops, starts, ends):
            out[(t >= s) & (t < e)] = kind
        return out
    span = max(sum(o[2] for o in ops1), sum(o[2] for o in ops2))
    dt = span / n
    t = (np.arange(n) + 0.5) * dt
    f1, f2 = f_at(ops1, t), f_at(ops2, t)
    return float(((f1 >= 0) & (f2 >= 0) & (f1 != f2)).sum() * dt), span


@pytest.mark.parametrize("seed", range(6))
def test_reward_matches_sampled_timeline(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(1, 4))
    agg, upd, rnn = rng.random((2, L)), rng.random((2, L)), rng.random((2, L)) * (seed % 2)
    flips = rng.random((2, L)) < 0.5
    o1 = operator_sequence(agg[0], upd[0], rnn[0], flips[0])
    o2 = operator_sequence(agg[1], upd[1], rnn[1], flips[1])
    want, span = sampled_reward(o1, o2)
    assert abs(deployment_reward(o1, o2) - want) < 5e-3 * span


def test_exchange_gives_full_overlap():
    # BLAD Fig. 10: equal operators in both processes; exchanging one process overlaps everything.
    agg = np.ones((2, 2))
    upd = np.ones((2, 2))
    for res in (greedy_order(agg, upd), exhaustive_order(agg, upd), plan_operators(agg, upd)):
        assert np.isclose(res.reward, 4.0) and np.isclose(res.overlap_fraction, 1.0)
        assert res.default_reward == 0.0
        assert res.update_first[0] != res.update_first[1]


@pytest.mark.parametrize("seed", range(8))
def test_choice_against_exhaustive(seed):
    rng = np.random.default_rng(seed)
    L = int(rng.integers(1, 4))
    agg, upd, rnn = rng.random((2, L)), rng.random((2, L)), rng.random((2, L)) * (seed % 2)
    best = max(evaluate(agg, upd, rnn, np.array(bits).reshape(2, L))[0]
               for bits in itertools.product((False, True), repeat=2 * L))
    e = exhaustive_order(agg, upd, rnn)
    g = greedy_order(agg, upd, rnn)
    a = plan_operators(agg, upd, rnn)
    assert np.isclose(e.reward, best) and np.isclose(a.reward, best)
    assert g.reward <= best + 1e-12
    assert np.isclose(evaluate(agg, upd, rnn, g.update_first)[0], g.reward)


def test_batch_matches_single():
    rng = np.random.default_rng(7)
    n, L = 12, 2
    agg, upd, rnn = rng.random((n, 2, L)), rng.random((n, 2, L)), rng.random((n, 2, L))
    ex = plan_operators_batch(agg, upd, rnn, "exhaustive")
    gr = plan_operators_batch(agg, upd, rnn, "greedy")
    for i in range(n):
        e = exhaustive_order(agg[i], upd[i], rnn[i])
        g = greedy_order(agg[i], upd[i], rnn[i])
        assert np.isclose(ex.reward[i], e.reward) and np.isclose(gr.reward[i], g.reward)
        assert (gr.update_first[i] == np.array(g.update_first)).all()
    assert ex.overlap_fraction >= gr.overlap_fraction - 1e-12
    assert ex.overlap_fraction >= ex.default_overlap_fraction - 1e-12


def test_errors():
    with pytest.raises(ConfigError):
        plan_operators(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(ConfigError):
        plan_operators(np.ones((2, 2)), -np.ones((2, 2)))
    with pytest.raises(ConfigError):
        plan_operators_batch(np.ones((1, 2, 7)), np.ones((1, 2, 7)))


def test_cross_kind_overlap_sweep_equals_all_pairs():
    from dynagnn.schedule.topology import _dr_segments, cross_kind_overlap

    rng = np.random.default_rng(7)
    for _ in range(20):
        timelines = []
        for _ in range(2):  # disjoint sorted segments with gaps, as a process's operators are
            n = int(rng.integers(0, 30))
            edges = np.sort(rng.uniform(0, 10, 2 * n))
            timelines += [edges[0::2], edges[1::2], rng.integers(0, 2, n)]
        assert cross_kind_overlap(*timelines) == pytest.approx(_dr_segments(*timelines), abs=1e-12)
