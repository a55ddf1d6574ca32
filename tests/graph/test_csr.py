"""The normalised adjacency and the graph operator against dense algebra, values and gradients."""

import numpy as np
import pytest
import torch

from dynagnn.graph.csr import aggregate, dense_normalized, is_symmetric, normalize, normalized_triples


def edges(n, m, seed, symmetric):
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, n, m), rng.integers(0, n, m)
    if symmetric:
        r, c = np.r_[r, c], np.r_[c, r]
    k = np.unique(r * n + c)
    w = np.random.default_rng(seed + 1).random(k.shape[0]).astype(np.float32) + 0.5
    if symmetric:  # the weight of (i, j) is the weight of (j, i)
        lo, hi = np.minimum(k // n, k % n), np.maximum(k // n, k % n)
        w = (np.sin(lo * 7.0 + hi) + 2).astype(np.float32)
    return k // n, k % n, w


@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("weighted", [True, False])
def test_values_and_gradient_match_dense(symmetric, weighted):
    n = 35
    r, c, w = edges(n, 150, 3, symmetric)
    w = w if weighted else None
    adj = normalize(r, c, w, n)
    ref = dense_normalized(r, c, w, n)
    assert adj.symmetric == symmetric
    torch.testing.assert_close(adj.dense(), ref, rtol=1e-6, atol=1e-7)
    assert_aggregates_as(adj, ref, 4)


def assert_aggregates_as(adj, ref: torch.Tensor, width: int) -> None:
    """``aggregate(adj, x)`` is ``ref @ x``, and its gradient to x is ``refᵀ g``, for random x, g."""
    n = ref.shape[0]
    x = torch.randn(n, width, requires_grad=True, dtype=torch.float32)
    g = torch.randn(n, width)
    y = aggregate(adj, x)
    torch.testing.assert_close(y, ref @ x, rtol=1e-5, atol=1e-6)
    (y * g).sum().backward()
    torch.testing.assert_close(x.grad, ref.t() @ g, rtol=1e-5, atol=1e-6)


def test_isolated_vertices_and_existing_self_loops():
    n = 5
    r, c = np.array([0, 1, 1]), np.array([1, 0, 1])    # (1, 1) is a self-loop, 2..4 isolated
    rr, cc, vv = normalized_triples(r, c, None, n)
    ref = dense_normalized(r, c, None, n)
    dense = torch.zeros(n, n)
    dense[rr, cc] = torch.from_numpy(vv)
    torch.testing.assert_close(dense, ref)
    assert ref[1, 1] == pytest.approx(1 / 2)           # the loop is not doubled: 1 / sqrt(2·2)
    assert ref[0, 0] == pytest.approx(1 / 2)           # node 0 gets I's 1: 1 / sqrt(2·2)
    assert ref[3, 3] == 1.0                            # an isolated vertex keeps its own features


def test_self_loops_match_pyg_gcn_norm():
    """A self-loop the data holds keeps its weight, as PyTorch Geometric's gcn_norm keeps it
    (add_remaining_self_loops); the other nodes get I's 1. Our (row, col) is PyG's edge_index as
    it is (source, target); our Â is indexed [target, source]."""
    gcn_norm = pytest.importorskip("torch_geometric.nn.conv.gcn_conv").gcn_norm
    n = 6
    r = np.array([0, 1, 1, 2, 3, 4, 4])
    c = np.array([1, 0, 1, 2, 4, 3, 4])
    w = np.array([1.0, 2.0, 3.0, 0.5, 1.5, 1.5, 7.0], np.float32)
    rr, cc, vv = normalized_triples(r, c, w, n)
    ei, val = gcn_norm(torch.stack([torch.as_tensor(r), torch.as_tensor(c)]), torch.as_tensor(w), n,
                       add_self_loops=True)
    theirs = torch.zeros(n, n)
    theirs[ei[1], ei[0]] = val                          # Â[target, source]
    ours = torch.zeros(n, n)
    ours[rr, cc] = torch.from_numpy(vv)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(dense_normalized(r, c, w, n), theirs)
    # by hand: node 1's in-weights sum to 1 (from 0) + 3 (its own loop, not 3 + 1); node 2's
    # only entry is its loop. (Before issue 34 this read 3 / 5: node 1's *out*-weights 2 + 3,
    # the reversed direction.)
    assert ours[1, 1] == pytest.approx(3 / 4)
    assert ours[2, 2] == pytest.approx(1.0)


# A small directed, weighted graph with a self-loop, a node with only out-edges (0), a node with
# only in-edges (3), a 2-cycle (1 <-> 2, different weights) and an isolated node (5).
DIRECTED = (np.array([0, 0, 1, 2, 2, 4, 4]),                  # source
            np.array([1, 3, 2, 1, 3, 3, 4]),                  # target
            np.array([1.0, 2.0, 0.5, 3.0, 1.5, 4.0, 2.5], np.float32))


def by_hand(src, dst, w, n):
    """D^-1/2 (A + I) D^-1/2 as PyG's GCNConv (flow source_to_target) applies it, written out:
    M[v, u] = w(u -> v) for each edge, plus 1 on the diagonal of every node without a self-loop;
    d_v = Σ_u M[v, u], the weighted in-degree with the loop (gcn_norm's scatter at edge_index[1]);
    Â[v, u] = M[v, u] / sqrt(d_v · d_u). Row v of Â·X then sums over the sources of v's in-edges."""
    m = [[0.0] * n for _ in range(n)]
    for u, v, x in zip(src.tolist(), dst.tolist(), w.tolist()):
        m[v][u] += x
    looped = {u for u, v in zip(src.tolist(), dst.tolist()) if u == v}
    for v in range(n):
        if v not in looped:
            m[v][v] += 1.0
    d = [sum(m[v]) for v in range(n)]
    return torch.tensor([[m[v][u] / (d[v] * d[u]) ** 0.5 if m[v][u] else 0.0 for u in range(n)]
                         for v in range(n)])


def test_directed_graph_by_hand_in_degree_convention():
    """The direction of messages on a directed graph, without PyG: Â[v, u] != 0 iff u -> v (or a
    loop), normalised by in-degrees; the dense reference and the CSR operator agree with it."""
    src, dst, w = DIRECTED
    n = 6
    ref = by_hand(src, dst, w, n)
    # spot values worked out on paper: node 3's in-weights 2 + 1.5 + 4 + I's 1 = 8.5; node 0 has
    # no in-edge (d = 1, its loop); node 4's loop is data (2.5), its in-degree is 2.5
    assert ref[3, 0] == pytest.approx(2.0 / (8.5 * 1.0) ** 0.5)
    assert ref[3, 4] == pytest.approx(4.0 / (8.5 * 2.5) ** 0.5)
    assert ref[4, 4] == pytest.approx(1.0)
    assert ref[0, 3] == 0.0 and ref[0, 1] == 0.0       # 0 receives nothing: it aggregates only itself
    assert ref[1, 2] == pytest.approx(3.0 / ((1 + 3 + 1) * (0.5 + 1)) ** 0.5)
    assert ref[2, 1] == pytest.approx(0.5 / ((0.5 + 1) * (1 + 3 + 1)) ** 0.5)
    adj = normalize(src, dst, w, n)
    assert not adj.symmetric
    torch.testing.assert_close(adj.dense(), ref)
    torch.testing.assert_close(dense_normalized(src, dst, w, n), ref)
    assert_aggregates_as(adj, ref, 3)


def test_directed_graph_matches_pyg_gcn_norm_and_gcnconv():
    """The same directed graph against PyG itself: ``gcn_norm(edge_index=(source, target))`` and
    ``GCNConv``'s propagation (default flow source_to_target), values and aggregation."""
    gcn_conv = pytest.importorskip("torch_geometric.nn.conv.gcn_conv",
                                   reason="torch_geometric is not installed in this environment")
    src, dst, w = DIRECTED
    n = 6
    edge_index = torch.stack([torch.as_tensor(src), torch.as_tensor(dst)])
    ei, val = gcn_conv.gcn_norm(edge_index, torch.as_tensor(w), n, add_self_loops=True)
    theirs = torch.zeros(n, n)
    theirs[ei[1], ei[0]] = val                          # target row, source column
    adj = normalize(src, dst, w, n)
    torch.testing.assert_close(adj.dense(), theirs)
    torch.testing.assert_close(by_hand(src, dst, w, n), theirs)
    # and the reversed edges give a different matrix: the test tells the two directions apart
    ei_r, val_r = gcn_conv.gcn_norm(edge_index.flip(0), torch.as_tensor(w), n, add_self_loops=True)
    reversed_ = torch.zeros(n, n)
    reversed_[ei_r[1], ei_r[0]] = val_r
    assert not torch.allclose(adj.dense(), reversed_)
    conv = gcn_conv.GCNConv(4, 4, bias=False)
    with torch.no_grad():
        conv.lin.weight.copy_(torch.eye(4))
    x = torch.randn(n, 4)
    torch.testing.assert_close(aggregate(adj, x), conv(x, edge_index, torch.as_tensor(w)),
                               rtol=1e-5, atol=1e-6)


def test_is_symmetric():
    r, c, v = np.array([0, 1]), np.array([1, 0]), np.array([0.5, 0.5], np.float32)
    assert is_symmetric(r, c, v, 2)
    assert not is_symmetric(r, c, np.array([0.5, 0.4], np.float32), 2)
    assert not is_symmetric(np.array([0]), np.array([1]), np.array([1.0], np.float32), 2)
