import numpy as np
import pytest

from dynagnn.errors import InputError
from dynagnn.graph import partition as pt


def sym(pairs, N):
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    r = np.concatenate([pairs[:, 0], pairs[:, 1]])
    c = np.concatenate([pairs[:, 1], pairs[:, 0]])
    k = np.unique(r * N + c)
    return k // N, k % N


def random_graph(N, m, seed):
    rng = np.random.default_rng(seed)
    return sym(rng.integers(0, N, size=(m, 2)), N)


def planted(N=200, p_in=0.1, p_out=0.005, k=2, seed=0):
    rng = np.random.default_rng(seed)
    comm = np.arange(N) * k // N
    a = rng.random((N, N))
    same = comm[:, None] == comm[None, :]
    adj = np.triu(np.where(same, a < p_in, a < p_out), 1)
    i, j = np.nonzero(adj)
    return sym(np.stack([i, j], 1), N), comm


def valid(parts, N, P):
    assert parts.dtype == np.int64 and parts.shape == (N,)
    assert parts.min() >= 0 and parts.max() < P


def test_hash_range_exact_balance():
    for N, P in [(10, 3), (100, 4), (7, 7), (5, 1)]:
        for parts in (pt.hash_partition(N, P, seed=1), pt.range_partition(N, P)):
            valid(parts, N, P)
            s = np.bincount(parts, minlength=P)
            assert s.max() - s.min() <= 1 and s.sum() == N
    r = pt.range_partition(10, 3)
    assert (np.diff(r) >= 0).all()
    assert not np.array_equal(pt.hash_partition(50, 2, 0), pt.hash_partition(50, 2, 1))


def test_metis_beats_hash_on_planted():
    (row, col), _ = planted()
    m = pt.metis_partition(row, col, 200, 2)
    h = pt.hash_partition(200, 2)
    valid(m, 200, 2)
    qm = pt.partition_quality(row, col, 200, m, 2)
    qh = pt.partition_quality(row, col, 200, h, 2)
    assert qm["edge_cut"] < qh["edge_cut"] / 2
    assert set(np.unique(m)) == {0, 1}
    assert (pt.metis_partition(row, col, 200, 1) == 0).all()


@pytest.mark.parametrize("fn", ["metis", "bgl", "reflex"])
def test_empty_graph_and_isolated(fn):
    e = np.empty(0, dtype=np.int64)
    N, P = 20, 4
    f = {"metis": pt.metis_partition, "bgl": pt.bgl_partition, "reflex": pt.reflexbicut_partition}[fn]
    parts = f(e, e, N, P)
    valid(parts, N, P)
    assert len(np.unique(parts)) == P
    # graph with isolated vertices
    row, col = sym([[0, 1], [1, 2], [5, 6]], N)
    parts = f(row, col, N, P)
    valid(parts, N, P)


def test_bgl_keeps_blocks_whole_and_balances():
    (row, col), _ = planted(N=400, k=4, p_in=0.05, seed=3)
    N, P = 400, 4
    blocks = pt.bfs_blocks(row, col, N, block_size=N // (8 * P), seed=0)
    assert blocks.min() == 0 and len(np.unique(blocks)) == blocks.max() + 1
    parts = pt.bgl_partition(row, col, N, P, seed=0)
    valid(parts, N, P)
    for b in np.unique(blocks):
        assert len(np.unique(parts[blocks == b])) == 1
    q = pt.partition_quality(row, col, N, parts, P)
    assert q["load_balance"] < 1.5
    assert len(np.unique(parts)) == P
    # proximity: fewer cut edges than hash
    qh = pt.partition_quality(row, col, N, pt.hash_partition(N, P), P)
    assert q["edge_cut"] < qh["edge_cut"]
    tm = np.zeros(N, dtype=bool)
    tm[::3] = True
    parts = pt.bgl_partition(row, col, N, P, tm, hops=1, seed=2)
    q = pt.partition_quality(row, col, N, parts, P, tm)
    assert q["train_balance"] < 1.6


def test_bfs_blocks_connected_and_bounded():
    row, col = random_graph(300, 600, 5)
    bs = 20
    blocks = pt.bfs_blocks(row, col, 300, bs, seed=1)
    assert (blocks >= 0).all()


@pytest.mark.parametrize("P", [2, 3, 4])
def test_reflexbicut_max_part_comm(P):
    (row, col), _ = planted(N=240, k=4, p_in=0.08, p_out=0.01, seed=7)
    N = 240
    parts = pt.reflexbicut_partition(row, col, N, P, seed=0)
    valid(parts, N, P)
    assert len(np.unique(parts)) == P
    qr = pt.partition_quality(row, col, N, parts, P)
    qg = pt.partition_quality(row, col, N, pt.range_partition(N, P), P)
    assert qr["max_part_comm"] <= qg["max_part_comm"]
    assert qr["load_balance"] <= 1.10
    # cost helper agrees with the quality metric
    assert pt.part_send_cost(row, col, parts, P).max() == qr["max_part_comm"]


@pytest.mark.parametrize("P", [3, 8])
def test_reflexbicut_best_start_is_the_better_of_both_searches(P):
    (row, col), _ = planted(N=300, k=6, p_in=0.06, p_out=0.02, seed=13)
    N = 300
    key = lambda parts: (lambda c: (c.max(), c.sum()))(pt.part_send_cost(row, col, parts, P))  # noqa: E731
    bisect = pt.reflexbicut_partition(row, col, N, P, seed=1, start="bisect")
    kway = pt.reflexbicut_partition(row, col, N, P, seed=1, start="kway")
    best = pt.reflexbicut_partition(row, col, N, P, seed=1)
    assert key(best) == min(key(bisect), key(kway))
    # the search never makes its start worse
    assert key(kway) <= key(pt.metis_partition(row, col, N, P, seed=1))
    assert key(bisect) <= key(pt.reflexbicut_partition(row, col, N, P, seed=1, max_moves=0, start="bisect"))
    with pytest.raises(InputError, match="start"):
        pt.reflexbicut_partition(row, col, N, P, start="random")


def test_reflexbicut_weights_nonpow2():
    row, col = random_graph(60, 150, 2)
    w = np.random.default_rng(0).random(60)
    parts = pt.reflexbicut_partition(row, col, 60, 3, weights=w)
    valid(parts, 60, 3)
    with pytest.raises(InputError):
        pt.reflexbicut_partition(row, col, 60, 3, weights=-w)


def brute_quality(row, col, N, parts, P):
    nbrs = [set() for _ in range(N)]
    for r, c in zip(row.tolist(), col.tolist()):
        nbrs[r].add(c)
    cut = sum(1 for r, c in zip(row.tolist(), col.tolist()) if r < c and parts[r] != parts[c])
    lam = [len({parts[u] for u in nbrs[v]} - {parts[v]}) for v in range(N)]
    per = [sum(lam[v] for v in range(N) if parts[v] == i) for i in range(P)]
    return cut, sum(lam), max(per)


def test_quality_against_brute_force():
    rng = np.random.default_rng(1)
    for trial in range(10):
        N = int(rng.integers(5, 40))
        P = int(rng.integers(1, min(N, 6) + 1))
        row, col = random_graph(N, int(rng.integers(0, 3 * N)), trial)
        parts = rng.integers(0, P, size=N)
        q = pt.partition_quality(row, col, N, parts, P, train_mask=rng.random(N) < 0.5)
        assert (q["edge_cut"], q["comm_volume"], q["max_part_comm"]) == brute_quality(row, col, N, parts, P)
        sizes = np.bincount(parts, minlength=P)
        assert q["load_balance"] == pytest.approx(sizes.max() * P / N)
        assert "train_balance" in q
    row, col = random_graph(20, 40, 0)
    row2, col2 = random_graph(20, 30, 1)
    parts = rng.integers(0, 3, size=20)
    v = pt.snapshot_volume([(row, col), (row2, col2)], 20, parts, 3)
    assert v == brute_quality(row, col, 20, parts, 3)[1] + brute_quality(row2, col2, 20, parts, 3)[1]


def test_errors():
    e = np.empty(0, dtype=np.int64)
    with pytest.raises(InputError, match="P"):
        pt.hash_partition(5, 0)
    with pytest.raises(InputError, match="P <= N"):
        pt.range_partition(3, 4)
    with pytest.raises(InputError):
        pt.metis_partition(e, e, 3, 4)
    with pytest.raises(InputError):
        pt.bgl_partition(e, e, 3, 0)
    with pytest.raises(InputError):
        pt.reflexbicut_partition(e, e, 2, 3)
    with pytest.raises(InputError):
        pt.metis_partition(np.array([0]), np.array([5]), 3, 2)
