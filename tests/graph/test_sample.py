import numpy as np
import pytest

from dynagnn.graph.sample import TemporalNeighbors
from dynagnn.sortedkeys import unique_inverse


def brute_most_recent(src, dst, t, nodes, times, k, undirected):
    """Python loop: history of v = events touching v in (t, event index) order, t < query."""
    order = sorted(range(len(t)), key=lambda e: (t[e], e))
    nb, et, cnt = [], [], []
    for v, q in zip(nodes.tolist(), times.tolist()):
        hist = []
        for e in order:
            if t[e] >= q:
                continue
            if src[e] == v:
                hist.append((int(dst[e]), t[e]))
            if undirected and dst[e] == v:
                hist.append((int(src[e]), t[e]))
        last = hist[::-1][:k]
        cnt.append(len(last))
        nb.append([u for u, _ in last] + [-1] * (k - len(last)))
        et.append([s for _, s in last] + [-1] * (k - len(last)))
    b = len(cnt)
    return (np.array(nb, dtype=np.int64).reshape(b, k), np.array(et, dtype=np.int64).reshape(b, k),
            np.array(cnt))


@pytest.mark.parametrize("undirected", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_most_recent_matches_brute_force(seed, undirected):
    rng = np.random.default_rng(seed)
    n, e = 12, int(rng.integers(0, 60))
    src = rng.integers(0, n - 2, e)  # nodes n-2, n-1 never appear: no history
    dst = rng.integers(0, n - 2, e)
    t = np.sort(rng.integers(0, 15, e))  # many ties in time
    if seed % 2:
        t = rng.permutation(t)  # unsorted input is sorted (stably) by the sampler
    s = TemporalNeighbors(src, dst, t, n, undirected=undirected)
    nodes = rng.integers(0, n, 80)
    times = rng.integers(-1, 18, 80)
    for k in (0, 1, 3, 50):  # 50 > any history
        got = s.most_recent(nodes, times, k)
        want = brute_most_recent(src.tolist(), dst.tolist(), t.tolist(), nodes, times, k,
                                 undirected)
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g, w)


def test_float_times_and_csr():
    src = np.array([0, 1, 0, 2])
    dst = np.array([1, 2, 2, 0])
    t = np.array([0.5, 1.0, 1.0, 2.5])
    s = TemporalNeighbors(src, dst, t, 4)
    assert s.indptr.tolist() == [0, 3, 5, 8, 8]
    nb, et, c = s.most_recent(np.array([0, 0, 3]), np.array([1.0, 3.0, 9.0]), 2)
    assert nb.tolist() == [[1, -1], [2, 2], [-1, -1]]
    assert et.tolist() == [[0.5, -1.0], [2.5, 1.0], [-1.0, -1.0]]
    assert c.tolist() == [1, 2, 0]


def test_unique_inverse_matches_numpy():
    rng = np.random.default_rng(1)
    for size in (0, 1, 5, 100):
        x = rng.integers(-5, 20, size)
        u, inv = unique_inverse(x)
        nu, ninv = np.unique(x, return_inverse=True)
        np.testing.assert_array_equal(u, nu)
        np.testing.assert_array_equal(inv, ninv.ravel())
        np.testing.assert_array_equal(u[inv], x)
