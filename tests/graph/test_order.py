import numpy as np
import pytest

from dynagnn.graph.order import (EpochOrders, bfs_sequences, bfs_visit_order, choose_sequences, epoch_order, label_skew,
                                 proximity_order, random_label_skew, random_order, shuffling_error)
from tests.testing.stores import random_csr


def path_graph(n):
    r = np.r_[np.arange(n - 1), np.arange(1, n)]
    c = np.r_[np.arange(1, n), np.arange(n - 1)]
    o = np.lexsort((c, r))
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum(np.bincount(r, minlength=n))
    return indptr, c[o].astype(np.int64)


def test_random_order_is_permutation():
    t = np.array([5, 3, 9, 1, 7])
    o = random_order(t, seed=1)
    assert sorted(o.tolist()) == sorted(t.tolist())
    assert np.array_equal(o, random_order(t, seed=1))


@pytest.mark.parametrize("sequences", [None, 1, 3, 50])
@pytest.mark.parametrize("seed", [0, 1])
def test_proximity_order_is_permutation(sequences, seed):
    indptr, indices = random_csr(n=80, m=70, seed=seed, hub=False)  # several components
    rng = np.random.default_rng(seed)
    t = rng.choice(80, 30, replace=False)
    o = proximity_order(indptr, indices, t, sequences=sequences, seed=seed)
    assert o.dtype == np.int64
    assert sorted(o.tolist()) == sorted(t.tolist())
    assert np.array_equal(o, proximity_order(indptr, indices, t, sequences=sequences, seed=seed))


def test_bfs_visit_order_matches_queue_bfs():
    indptr, indices = random_csr(n=40, m=60, seed=2, hub=False)
    for root in range(0, 40, 7):
        seen, queue, out = {root}, [root], []
        while queue:
            v = queue.pop(0)
            out.append(v)
            for u in indices[indptr[v]:indptr[v + 1]].tolist():
                if u not in seen:
                    seen.add(u)
                    queue.append(u)
        assert bfs_visit_order(indptr, indices, np.array([root])).tolist() == out


def test_single_sequence_on_a_path_is_bfs():
    indptr, indices = path_graph(10)
    nodes, seq = bfs_sequences(indptr, indices, np.arange(10), np.array([0]), np.random.default_rng(0))
    assert nodes.tolist() == list(range(10)) and seq.tolist() == [0] * 10
    # training nodes only, in visit order (the search goes through the others)
    nodes, _ = bfs_sequences(indptr, indices, np.array([8, 2, 5]), np.array([5]), np.random.default_rng(0))
    assert nodes.tolist() == [5, 2, 8]


def test_multi_source_bfs_splits_the_graph_into_disjoint_sequences():
    indptr, indices = path_graph(10)
    visit, src = bfs_visit_order(indptr, indices, np.array([1, 8]), return_source=True)
    assert visit.tolist() == [1, 8, 0, 2, 7, 9, 3, 6, 4, 5]
    assert src.tolist() == [0, 1, 0, 0, 1, 1, 0, 1, 0, 1]
    nodes, seq = bfs_sequences(indptr, indices, np.arange(10), np.array([1, 8]), np.random.default_rng(0))
    assert nodes.tolist() == [1, 0, 2, 3, 4, 8, 7, 9, 6, 5] and seq.tolist() == [0] * 5 + [1] * 5


def test_unreached_components_are_appended_whole():
    # two disjoint paths 0..4 and 5..9; the root's component first, the other after it
    ip1, ix1 = path_graph(5)
    indptr = np.r_[ip1, ip1[1:] + ip1[-1]]
    indices = np.r_[ix1, ix1 + 5]
    nodes, seq = bfs_sequences(indptr, indices, np.arange(10), np.array([7]), np.random.default_rng(0))
    assert nodes[:5].tolist() == [7, 6, 8, 5, 9]
    assert sorted(nodes[5:].tolist()) == [0, 1, 2, 3, 4] and seq.tolist() == [0] * 10


@pytest.mark.parametrize("order,sequences", [("random", None), ("proximity", 1), ("proximity", 6)])
def test_every_seed_exactly_once_per_epoch_and_fresh_each_epoch(order, sequences):
    indptr, indices = random_csr(n=300, m=600, seed=5, hub=False)
    t = np.random.default_rng(0).choice(300, 120, replace=False)
    epochs = [epoch_order(order, indptr, indices, t, 3, e, sequences) for e in range(3)]
    for o in epochs:
        assert np.array_equal(np.sort(o), np.sort(t))
    assert not np.array_equal(epochs[0], epochs[1]) and not np.array_equal(epochs[1], epochs[2])
    assert np.array_equal(epochs[2], epoch_order(order, indptr, indices, t, 3, 2, sequences))
    # the run's orders: the same epochs from one object (the BFS sequences generated once)
    orders = EpochOrders(order, indptr, indices, t, 3, sequences)
    assert all(np.array_equal(orders(e), epochs[e]) for e in range(3))


def test_epochs_reuse_the_sequences(monkeypatch):
    # BGL reuses its BFS sequences: one BFS for the run, each epoch a fresh arrangement of them
    import dynagnn.graph.order as order_mod

    calls = []
    real = order_mod.bfs_sequences
    monkeypatch.setattr(order_mod, "bfs_sequences", lambda *a, **k: calls.append(1) or real(*a, **k))
    indptr, indices = path_graph(200)
    orders = EpochOrders("proximity", indptr, indices, np.arange(200), 0, 4)
    got = [orders(e) for e in range(3)]
    assert len(calls) == 1
    assert all(np.array_equal(np.sort(o), np.arange(200)) for o in got)
    assert not np.array_equal(got[0], got[1]) and not np.array_equal(got[1], got[2])


def test_sequences_take_turns():
    # a path of 400, 4 sequences: any 4 consecutive positions hold one node of each of the 4 equal
    # stretches of the (shifted) BFS order, so batches of 20 hold 5 nodes of each
    indptr, indices = path_graph(400)
    o = proximity_order(indptr, indices, np.arange(400), sequences=4, seed=2)
    rng = np.random.default_rng(2)      # replay the roots and the shift to find the stretches
    roots = np.arange(400)[rng.choice(400, size=4, replace=False)]
    nodes, _ = bfs_sequences(indptr, indices, np.arange(400), roots, rng)
    nodes = np.roll(nodes, -int(rng.integers(400)))
    stretch = np.empty(400, np.int64)
    stretch[nodes] = np.arange(400) // 100
    for r in range(0, 400, 4):
        assert sorted(stretch[o[r:r + 4]].tolist()) == [0, 1, 2, 3]
    for k in range(4):     # each stretch keeps its BFS order
        mine = o[stretch[o] == k]
        assert np.array_equal(mine, nodes[k * 100:(k + 1) * 100])


def test_label_skew_and_its_random_expectation():
    assert label_skew(np.array([0, 0, 1, 1]), 2) == 0.5
    assert label_skew(np.array([0, 1, 1, 0]), 2) == 0.0
    assert label_skew(np.array([0, 1, 1]), 4) == 0.0                      # no full batch
    # batches of 2 from {0,0,1,1}: 2 of the 6 pairs are pure (TV 1/2), the rest TV 0
    assert random_label_skew(np.array([0, 0, 1, 1]), 2) == pytest.approx(1 / 6)
    assert shuffling_error(np.array([0, 1, 1, 0]), 2) == pytest.approx(-1 / 6)
    # against sampling: mean TV of random batches of 8 from 3 unequal classes
    y = np.repeat([0, 1, 2], [30, 50, 20])
    rng = np.random.default_rng(0)
    mc = np.mean([label_skew(y[rng.permutation(100)], 8) for _ in range(4000)])
    assert random_label_skew(y, 8) == pytest.approx(mc, rel=0.02)


def test_shuffling_error_check_decides_the_sequence_count():
    indptr, indices = path_graph(400)
    t = np.arange(400)
    # labels alternating along the path: a BFS batch is as mixed as a random one -> one sequence
    s, tried = choose_sequences(indptr, indices, t, t % 2, 20, seed=0)
    assert s == 1 and tried[-1][1] <= np.sqrt(20) / 400
    # labels in runs along the path: one BFS sequence gives batches of one or two labels; the check
    # takes the least count (bisecting 1, 2, 4, ... 400) whose error is not significantly above
    # sqrt(b M) / n: two halves are mixed by 2 sequences, 16 runs of 25 (4 labels) need 16
    bound = np.sqrt(20) / 400
    for y, want in (((t >= 200).astype(np.int64), 2), ((t // 25) % 4, 16)):
        s, tried = choose_sequences(indptr, indices, t, y, 20, seed=0)
        errors = dict(tried)
        assert s == want and errors[1 if want == 2 else 4] > 0.05 > bound
        assert all(e > bound for c, e in tried if c < s)
    # more workers loosen the bound: fewer sequences
    assert choose_sequences(indptr, indices, t, y, 20, workers=4, seed=0)[0] <= s


def test_proximity_batches_share_neighbourhoods():
    # batches of 20 on a path: PO batches are ~2 contiguous runs, so their 1-hop closed
    # neighbourhoods are much smaller than those of random batches
    indptr, indices = path_graph(400)
    t = np.arange(400)

    def mean_footprint(order):
        sizes = []
        for b in range(0, 400, 20):
            v = order[b:b + 20]
            sizes.append(np.unique(np.r_[v, v - 1, v + 1]).size)
        return np.mean(sizes)

    po = proximity_order(indptr, indices, t, sequences=2, seed=0)
    ro = random_order(t, seed=0)
    assert mean_footprint(po) < 0.6 * mean_footprint(ro)


def test_rejects_duplicate_training_nodes():
    indptr, indices = path_graph(5)
    with pytest.raises(ValueError):
        proximity_order(indptr, indices, np.array([1, 1, 2]))
