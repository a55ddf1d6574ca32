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
    x = torch.randn(n, 4, requires_grad=True, dtype=torch.float32)
    g = torch.randn(n, 4)
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
    (add_remaining_self_loops); the other nodes get I's 1."""
    gcn_norm = pytest.importorskip("torch_geometric.nn.conv.gcn_conv").gcn_norm
    n = 6
    r = np.array([0, 1, 1, 2, 3, 4, 4])
    c = np.array([1, 0, 1, 2, 4, 3, 4])
    w = np.array([1.0, 2.0, 3.0, 0.5, 1.5, 1.5, 7.0], np.float32)
    rr, cc, vv = normalized_triples(r, c, w, n)
    ei, val = gcn_norm(torch.stack([torch.as_tensor(c), torch.as_tensor(r)]), torch.as_tensor(w), n,
                       add_self_loops=True)
    theirs = torch.zeros(n, n)
    theirs[ei[1], ei[0]] = val                          # PyG's (source, target) is our (col, row)
    ours = torch.zeros(n, n)
    ours[rr, cc] = torch.from_numpy(vv)
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(dense_normalized(r, c, w, n), theirs)
    # by hand: node 1's row sums 2 + 3 (its own loop, not 3 + 1), node 2's only entry is its loop
    assert ours[1, 1] == pytest.approx(3 / 5)
    assert ours[2, 2] == pytest.approx(1.0)


def test_is_symmetric():
    r, c, v = np.array([0, 1]), np.array([1, 0]), np.array([0.5, 0.5], np.float32)
    assert is_symmetric(r, c, v, 2)
    assert not is_symmetric(r, c, np.array([0.5, 0.4], np.float32), 2)
    assert not is_symmetric(np.array([0]), np.array([1]), np.array([1.0], np.float32), 2)
