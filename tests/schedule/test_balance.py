import numpy as np
import pytest

from dynagnn.errors import ConfigError
from dynagnn.schedule.balance import (balance, brute_force_splits, dp_splits, eq2_splits, even_splits, makespan,
                                      simulate, task_times)
from dynagnn.schedule.groups import group_costs


def random_costs(seed, T=None, k=None):
    rng = np.random.default_rng(seed)
    T = T or int(rng.integers(4, 9))
    k = k or int(rng.integers(2, min(T, 5) + 1))
    fwd = rng.lognormal(sigma=0.8, size=T)
    bwd = fwd * rng.uniform(1.0, 3.0, size=T)
    return group_costs(fwd, bwd, k)


def test_simulator_hand_example():
    # two groups of 2 snapshots, split 1|1. l = 1 everywhere, b = 2 everywhere.
    l = np.ones((2, 2))
    b = 2 * np.ones((2, 2))
    trace = []
    t = simulate([1, 1], l, b, trace)
    # p1: FA0 [0,1], FA1 [1,2], BA0 waits for Q0 [1,4] -> [4,6], BA1 waits for Q1 [4,7] -> [7,9]
    got = [(e["proc"], e["task"], e["group"], e["start"], e["end"]) for e in trace]
    assert ("p1", "FA", 0, 0.0, 1.0) in got and ("p1", "FA", 1, 1.0, 2.0) in got
    assert ("p2", "Q", 0, 1.0, 4.0) in got and ("p2", "Q", 1, 4.0, 7.0) in got
    assert ("p1", "BA", 0, 4.0, 6.0) in got and ("p1", "BA", 1, 7.0, 9.0) in got
    ba0 = next(e for e in trace if e["task"] == "BA" and e["group"] == 0)
    assert ba0["wait"] == 2.0  # p1 idle from 2 to 4 waiting for the gradient
    assert t == 9.0 == makespan([1, 1], l, b)


@pytest.mark.parametrize("seed", range(12))
def test_closed_form_equals_simulation(seed):
    l, b = random_costs(seed)
    rng = np.random.default_rng(seed + 100)
    for _ in range(10):
        p = rng.integers(0, l.shape[1] + 1, size=l.shape[0])
        assert np.isclose(simulate(p, l, b), makespan(p, l, b))


@pytest.mark.parametrize("seed", range(10))
def test_dp_optimal_against_brute_force(seed):
    l, b = random_costs(seed)
    p, v = dp_splits(l, b)
    bp, bv = brute_force_splits(l, b)  # simulate() over every split vector
    assert np.isclose(v, bv)
    assert np.isclose(simulate(p, l, b), bv)
    assert simulate(even_splits(*l.shape), l, b) >= bv - 1e-12
    assert simulate(eq2_splits(l, b), l, b) >= bv - 1e-12


@pytest.mark.parametrize("seed", range(4))
def test_dp_optimal_full_range(seed):
    l, b = random_costs(seed + 50, T=7, k=3)  # 5 groups, p in 0..3: 1024 vectors
    p, v = dp_splits(l, b, lo=0, hi=3)
    _, bv = brute_force_splits(l, b, lo=0, hi=3)
    assert np.isclose(v, bv) and np.isclose(simulate(p, l, b), bv)


def test_single_group_and_k1():
    l, b = random_costs(3, T=5, k=5)
    p, v = dp_splits(l, b)
    assert np.isclose(v, l.sum() + b.sum())  # one group: no overlap possible
    l1, b1 = random_costs(4, T=6, k=1)
    p1, v1 = dp_splits(l1, b1)
    assert np.isclose(v1, brute_force_splits(l1, b1)[1])


def test_balance_worker_and_errors():
    rng = np.random.default_rng(0)
    fwd, bwd = rng.random(12), rng.random(12)
    plan = balance(fwd, bwd, 4, [3, 4, 5, 6], "dp")
    even = balance(fwd, bwd, 4, [3, 4, 5, 6], "even")
    assert even.splits.tolist() == [2, 2, 2, 2]
    assert plan.makespan <= even.makespan + 1e-12
    a, c, q = task_times(plan.splits, *group_costs(fwd, bwd, 4, [3, 4, 5, 6]))
    assert np.isclose(plan.busy.sum(), a.sum() + c.sum() + q.sum())
    assert 0 <= plan.idle_fraction < 1
    with pytest.raises(ConfigError):
        balance(fwd, bwd, 4, [3], "nope")
    with pytest.raises(ConfigError):
        dp_splits(np.ones((2, 3)), np.ones((2, 3)), lo=2, hi=1)
    with pytest.raises(ConfigError):
        simulate([5, 1], np.ones((2, 3)), np.ones((2, 3)))


def test_a_tail_after_the_last_snapshot_is_p2s_work():
    """The task's loss and head (tail) run on p2 after a group's last snapshot: group_costs adds it to
    that snapshot's forward, or puts it in a column of its own (head_column), and a heavy tail moves
    every snapshot to p1 (split k: p2 runs the head alone)."""
    from dynagnn.schedule.balance import balance
    from dynagnn.schedule.groups import group_costs

    rng = np.random.default_rng(3)
    fwd, bwd = rng.uniform(1, 2, 10), rng.uniform(2, 4, 10)
    tail = {g: 1.5 * g for g in range(3, 10)}
    l0, b0 = group_costs(fwd, bwd, 4, list(range(3, 10)))
    l1, b1 = group_costs(fwd, bwd, 4, list(range(3, 10)), tail)
    np.testing.assert_allclose(l1[:, :-1], l0[:, :-1])
    np.testing.assert_allclose(l1[:, -1] - l0[:, -1], [1.5 * g for g in range(3, 10)])
    np.testing.assert_array_equal(b1, b0)
    lh, bh = group_costs(fwd, bwd, 4, list(range(3, 10)), tail, head_column=True)
    np.testing.assert_allclose(lh[:, :4], l0)
    np.testing.assert_allclose(lh[:, 4], [1.5 * g for g in range(3, 10)])
    np.testing.assert_allclose(bh, np.concatenate([b0, np.zeros((7, 1))], axis=1))
    heavy = balance(fwd, bwd, 4, range(3, 10), tail={g: 100.0 for g in range(3, 10)})
    assert heavy.splits.tolist() == [4] * 7
    # the makespan is the pipeline's with the head as p2's pseudo-snapshot k+1
    assert heavy.makespan == pytest.approx(makespan(heavy.splits, *group_costs(
        fwd, bwd, 4, list(range(3, 10)), {g: 100.0 for g in range(3, 10)}, head_column=True)))
    assert balance(fwd, bwd, 4, range(3, 10), tail={g: 100.0 for g in range(3, 10)}, hi=3).splits.tolist() == [3] * 7
    assert heavy.busy[1] >= 700  # every tail counted once, on p2
    # a (lead, tail) pair: the lead (loss inputs p1 prepares) goes to the first snapshot, p1's
    l2, b2 = group_costs(fwd, bwd, 4, list(range(3, 10)), {g: (0.5 * g, 1.5 * g) for g in range(3, 10)})
    np.testing.assert_allclose(l2[:, 0] - l0[:, 0], [0.5 * g for g in range(3, 10)])
    np.testing.assert_allclose(l2[:, 1:], l1[:, 1:])
    np.testing.assert_array_equal(b2, b0)
    led = balance(fwd, bwd, 4, range(3, 10), tail={g: (100.0, 0.0) for g in range(3, 10)})
    assert led.splits.tolist() == [1] * 7 and led.busy[0] >= 700  # a heavy lead keeps p1's part short


def test_receive_costs_by_split():
    # 2 groups of 3 snapshots with the head column (4 columns, splits 0..4)
    from dynagnn.schedule.balance import receive_costs

    rq, rc = receive_costs(
        2, 4, 3, state_s=0.5, embedding_s=0.25, inputs_s=[0.125, 0.0625])
    np.testing.assert_array_equal(rc, [[0, 0.5, 0.5, 0.25, 0.25]] * 2)  # p1 gets the gradient of what it sent
    np.testing.assert_array_equal(rq[0], [0.125, 0.625, 0.625, 0.375, 0.375])  # p2 also gets the loss's inputs
    np.testing.assert_array_equal(rq[1], [0.0625, 0.5625, 0.5625, 0.3125, 0.3125])


def test_receipts_in_the_hand_example():
    # the hand example (l = 1, b = 2, splits 1|1) with a receipt of 0.5 s each way: Q_i and BA_i grow
    from dynagnn.schedule.balance import receive_costs

    l, b = np.ones((2, 2)), 2 * np.ones((2, 2))
    recv = receive_costs(2, 2, 2, state_s=0.5)
    a, c, q = task_times([1, 1], l, b, recv)
    assert a.tolist() == [1, 1] and c.tolist() == [2.5, 2.5] and q.tolist() == [3.5, 3.5]
    # p1: FA0 [0,1], FA1 [1,2]; p2: Q0 [1,4.5], Q1 [4.5,8]; p1: BA0 [4.5,7], BA1 [8,10.5]
    assert simulate([1, 1], l, b, recv=recv) == 10.5 == makespan([1, 1], l, b, recv)


@pytest.mark.parametrize("seed", range(6))
def test_dp_optimal_with_receipts_against_brute_force(seed):
    from dynagnn.schedule.balance import receive_costs

    l, b = random_costs(seed + 200)
    m, k = l.shape
    rng = np.random.default_rng(seed)
    recv = receive_costs(m, k, k, state_s=float(rng.uniform(0, 2)), embedding_s=float(rng.uniform(0, 1)),
                         inputs_s=rng.uniform(0, 1, size=m))
    p, v = dp_splits(l, b, lo=1, hi=k, recv=recv)
    bp, bv = brute_force_splits(l, b, lo=1, hi=k, recv=recv)
    assert np.isclose(v, bv) and np.isclose(simulate(p, l, b, recv=recv), bv)
    for q in rng.integers(1, k + 1, size=(5, m)):
        assert np.isclose(simulate(q, l, b, recv=recv), makespan(q, l, b, recv))


def test_an_expensive_state_hand_over_moves_the_split_to_the_head():
    # one group of 2 snapshots and a head (1 s each, no backward): p1 runs 1 or 2 snapshots. Taking
    # the state costs p2 3 s and p1 3 s more for its gradient (split 1), the embedding nothing (split
    # 2): 9 s against 3 s.
    from dynagnn.schedule.balance import receive_costs

    l, b = np.array([[1.0, 1.0, 1.0]]), np.zeros((1, 3))
    recv = receive_costs(1, 3, 2, state_s=3.0, embedding_s=0.0)
    assert makespan([1], l, b, recv) == 9.0 and makespan([2], l, b, recv) == 3.0
    p, v = dp_splits(l, b, lo=1, hi=2, recv=recv)
    assert p.tolist() == [2] and v == 3.0
    plan = balance([1.0, 1.0], [0.0, 0.0], 2, [1], tail={1: 1.0}, handover={"state_s": 3.0})
    assert plan.splits.tolist() == [2] and plan.makespan == 3.0
    plan = balance([1.0, 1.0], [0.0, 0.0], 2, [1], tail={1: 1.0}, handover={"state_s": 0.5, "embedding_s": 4.0})
    assert plan.splits.tolist() == [1] and plan.makespan == 3.0 + 2 * 0.5 and plan.busy.tolist() == [1.5, 2.5]


def test_a_deeper_queue_in_the_hand_example():
    # three groups of 2 snapshots, split 1|1, l = 1, b = 2: at depth 3 p1 runs FA0, FA1, FA2 before
    # any backward. p2: Q0 [1,4], Q1 [4,7], Q2 [7,10]; p1: BA0 [4,6], BA1 [7,9], BA2 [10,12]
    l, b = np.ones((3, 2)), 2 * np.ones((3, 2))
    trace = []
    assert simulate([1, 1, 1], l, b, trace, depth=3) == 12.0 == makespan([1, 1, 1], l, b, depth=3)
    p1 = [(e["task"], e["group"], e["start"]) for e in sorted(trace, key=lambda e: e["start"]) if e["proc"] == "p1"]
    assert p1 == [("FA", 0, 0.0), ("FA", 1, 1.0), ("FA", 2, 2.0), ("BA", 0, 4.0), ("BA", 1, 7.0), ("BA", 2, 10.0)]
    # at depth 2 FA2 waits for BA0: p1 runs FA0, FA1, BA0 [4,6], FA2 [6,7]; Q2 [7,10], BA1 [7,9], BA2 [10,12]
    assert simulate([1, 1, 1], l, b, depth=2) == 12.0 == makespan([1, 1, 1], l, b)
    with pytest.raises(ConfigError, match="depth"):
        simulate([1, 1, 1], l, b, depth=0)


@pytest.mark.parametrize("seed", range(5))
def test_descent_at_depth_is_a_local_optimum_no_worse_than_the_programme(seed):
    from dynagnn.schedule.balance import descend_splits

    l, b = random_costs(seed + 300, T=12, k=3)
    m, k = l.shape
    start, _ = dp_splits(l, b)
    for depth in (3, 4):
        p, v = descend_splits(start, l, b, depth=depth)
        assert v == pytest.approx(simulate(p, l, b, depth=depth)) and v <= simulate(start, l, b, depth=depth) + 1e-12
        for i in range(m):  # no single split moves it lower
            for x in range(1, k):
                q = p.copy()
                q[i] = x
                assert simulate(q, l, b, depth=depth) >= v - 1e-9
    # the queue never holds more than the depth: at most depth forwards ahead of the oldest backward
    trace = []
    simulate(p, l, b, trace, depth=4)
    events = sorted(trace, key=lambda e: (e["start"], e["task"] != "BA"))
    held = peak = 0
    for e in (e for e in events if e["proc"] == "p1"):
        held += 1 if e["task"] == "FA" else -1
        peak = max(peak, held)
    assert peak == min(4, m)
    plan = balance(np.exp(np.arange(12) % 5), np.ones(12), 3, list(range(2, 12)), depth=4)
    assert plan.depth == 4 and plan.makespan == pytest.approx(simulate(plan.splits, *group_costs(
        np.exp(np.arange(12) % 5), np.ones(12), 3, list(range(2, 12))), depth=4))
    from dynagnn.schedule.balance import BalancePlan

    assert BalancePlan.from_dict(plan.to_dict()).depth == 4
