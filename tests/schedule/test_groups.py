import itertools

import numpy as np
import pytest

from dynagnn.errors import ConfigError
from dynagnn.schedule.groups import (balanced_plan, even_plan, group_costs, group_ids, group_loads, imbalance,
                                     sync_fraction, sync_ratio)


def brute_minmax(W, P):
    G = len(W)
    best = np.inf
    for cuts in itertools.combinations(range(1, G), P - 1):
        b = (0, *cuts, G)
        best = min(best, max(sum(W[b[i]:b[i + 1]]) for i in range(P)))
    return best


def test_group_loads_and_costs():
    fwd = np.arange(6, dtype=float)
    bwd = 2 * fwd
    W = group_loads(fwd, bwd, 3)
    assert group_ids(6, 3).tolist() == [2, 3, 4, 5]
    assert np.allclose(W, [3 * (0 + 1 + 2), 3 * (1 + 2 + 3), 3 * (2 + 3 + 4), 3 * (3 + 4 + 5)])
    l, b = group_costs(fwd, bwd, 3, [2, 5])
    assert l.tolist() == [[0, 1, 2], [3, 4, 5]] and np.allclose(b, 2 * l)


@pytest.mark.parametrize("seed", range(6))
def test_contiguous_plan_is_minmax_optimal(seed):
    rng = np.random.default_rng(seed)
    T, k, P = int(rng.integers(6, 12)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    fwd = rng.lognormal(size=T)
    bwd = rng.lognormal(size=T)
    plan = balanced_plan(fwd, bwd, k, P)
    W = group_loads(fwd, bwd, k)
    assert np.isclose(plan.loads.max(), brute_minmax(list(W), P))
    flat = [g for w in plan.workers for g in w]
    assert flat == group_ids(T, k).tolist()  # every group once, contiguous, in order
    assert all(len(w) >= 1 for w in plan.workers) and plan.num_workers == P
    assert np.isclose(plan.loads.sum(), W.sum())
    even = even_plan(fwd, bwd, k, P)
    assert plan.loads.max() <= even.loads.max() + 1e-12
    lpt = balanced_plan(fwd, bwd, k, P, strategy="lpt")
    assert sorted(g for w in lpt.workers for g in w) == flat


def test_even_plan_counts():
    plan = even_plan(np.ones(10), np.ones(10), 2, 4)  # 9 groups
    assert [len(w) for w in plan.workers] == [3, 2, 2, 2]
    assert plan.workers[0] == [1, 2, 3]


def test_imbalance_and_sync():
    assert imbalance([1, 1, 1]) == 1.0
    assert np.isclose(imbalance([1, 3]), 1.5)
    assert np.isclose(sync_fraction([2, 4]), 0.25)  # (4-2) / (2*4)
    assert np.isclose(sync_ratio([2, 4]), 0.5)  # (4-2) / 4, BLAD Fig. 5


def test_errors():
    with pytest.raises(ConfigError, match="workers"):
        balanced_plan(np.ones(5), np.ones(5), 3, 4)  # 3 groups, 4 workers
    with pytest.raises(ConfigError, match="workers"):
        even_plan(np.ones(5), np.ones(5), 3, 4)
    with pytest.raises(ConfigError, match="group_len"):
        balanced_plan(np.ones(3), np.ones(3), 4, 1)
    with pytest.raises(ConfigError):
        balanced_plan(np.ones(3), -np.ones(3), 1, 1)
    with pytest.raises(ConfigError, match="strategy"):
        balanced_plan(np.ones(5), np.ones(5), 1, 2, strategy="zigzag")
