import numpy as np
import pytest

from dynagnn.graph.order import bfs_sequence, bfs_visit_order, proximity_order, random_order
from tests.graph.test_neighbor_sampler import random_csr


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


def test_single_sequence_on_a_path_is_bfs_then_rotated():
    indptr, indices = path_graph(10)
    t = np.arange(10)
    seq = bfs_sequence(indptr, indices, t, 0, np.random.default_rng(0))
    assert seq.tolist() == list(range(10))
    o = proximity_order(indptr, indices, t, sequences=1, seed=4)
    # a circular shift of a BFS order from a random root: consecutive nodes are mostly adjacent
    assert sorted(o.tolist()) == list(range(10))


def test_components_each_contiguous_in_a_sequence():
    # two disjoint paths 0..4 and 5..9
    ip1, ix1 = path_graph(5)
    indptr = np.r_[ip1, ip1[1:] + ip1[-1]]
    indices = np.r_[ix1, ix1 + 5]
    seq = bfs_sequence(indptr, indices, np.arange(10), 7, np.random.default_rng(0))
    assert seq[:5].tolist() in ([7, 6, 8, 5, 9],)
    assert sorted(seq[5:].tolist()) == [0, 1, 2, 3, 4]


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
