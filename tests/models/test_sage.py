"""GraphSAGE and GCN on sampled blocks: with every neighbour sampled they compute, on the seeds, what
the same layers compute on the whole graph (dense matrices built here, independently), and their
gradients agree too."""

import numpy as np
import pytest
import torch

from dynagnn.errors import ConfigError
from dynagnn.graph.sample import NeighborSampler
from dynagnn.models.sage import SAMPLED_MODELS, BlockGCN, GraphSAGE, make_blocks


def graph(n=40, m=120, seed=0):
    """A symmetric graph without self-loops, a hub and an isolated vertex (n-1): CSR and dense A."""
    rng = np.random.default_rng(seed)
    r, c = rng.integers(0, n - 1, m), rng.integers(0, n - 1, m)
    r, c = np.r_[r, np.zeros(12, np.int64)], np.r_[c, np.arange(1, 13)]
    k = np.unique(np.r_[r * n + c, c * n + r])
    k = k[k // n != k % n]
    row, col = k // n, k % n
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum(np.bincount(row, minlength=n))
    a = np.zeros((n, n))
    a[row, col] = 1.0
    return indptr, col, a


def dense_forward(model, a, x):
    """The model's layers on the whole graph with dense operators (float64)."""
    deg = a.sum(1)
    if model.norm == "mean":
        op = a / np.maximum(deg, 1)[:, None]
    else:
        d = 1.0 / np.sqrt(deg + 1.0)
        op = d[:, None] * (a + np.eye(a.shape[0])) * d[None, :]
    op = torch.from_numpy(op)
    h = x.double()
    for i, layer in enumerate(model.layers):
        if model.norm == "mean":
            h = (h @ layer.self_lin.weight.double().T + layer.self_lin.bias.double()
                 + (op @ h) @ layer.neigh_lin.weight.double().T)
        else:
            h = op @ h @ layer.weight.double() + layer.bias.double()
        if i < len(model.layers) - 1:
            h = torch.relu(h)
    return h


@pytest.mark.parametrize("cls", [GraphSAGE, BlockGCN])
@pytest.mark.parametrize("layers", [1, 3])
def test_full_fanout_equals_full_graph(cls, layers):
    indptr, indices, a = graph()
    n = a.shape[0]
    torch.manual_seed(0)
    model = cls(7, 5, num_layers=layers)
    for p in model.parameters():   # biases too, so that they are checked
        torch.nn.init.normal_(p, std=0.5)
    x = torch.randn(n, 7)
    seeds = np.array([0, 3, 3, 11, n - 1, 25])
    sampler = NeighborSampler(indptr, indices, [int(np.diff(indptr).max())] * layers, seed=1)
    inputs, blocks = make_blocks(sampler.sample(seeds), np.diff(indptr), cls.norm)
    out = model([b.to("cpu") for b in blocks], x[torch.from_numpy(inputs)])
    ref = dense_forward(model, a, x)[np.unique(seeds)]
    assert out.shape == (5, 5)
    torch.testing.assert_close(out.double(), ref, atol=1e-5, rtol=1e-5)
    # gradients of a loss on the seeds, against the dense model's
    out.square().sum().backward()
    grads = [p.grad.clone() for p in model.parameters()]
    model.zero_grad()
    dense_forward(model, a, x)[np.unique(seeds)].square().sum().backward()
    for g, p in zip(grads, model.parameters()):
        torch.testing.assert_close(g.double(), p.grad.double(), atol=1e-4, rtol=1e-4)


def test_blocks_shape_and_self_positions():
    indptr, indices, _ = graph()
    sampler = NeighborSampler(indptr, indices, (3, 2), seed=0)
    hops = sampler.sample(np.array([5, 1, 7]))
    inputs, blocks = make_blocks(hops, np.diff(indptr), "mean")
    assert inputs.tolist() == sorted(set(inputs.tolist()))
    assert blocks[0].n_src == inputs.size and blocks[-1].n_dst == 3
    assert blocks[0].n_dst == blocks[1].n_src == hops[1].nodes.size
    # a destination's own row is found where it is among the sources
    src = inputs
    assert np.array_equal(src[blocks[0].self_idx], hops[1].nodes)
    # mean rows sum to 1 where a vertex has sampled neighbours
    for b in blocks:
        sums = np.add.reduceat(b.val, b.crow[:-1][np.diff(b.crow) > 0]) if b.val.size else []
        np.testing.assert_allclose(sums, 1.0, rtol=1e-6)


def test_sampled_gcn_is_unbiased_on_average():
    """With a fan-out below the degrees, the GCN block row is an unbiased estimate of Â's row."""
    indptr, indices, a = graph()
    deg = a.sum(1)
    d = 1.0 / np.sqrt(deg + 1.0)
    full = d[:, None] * (a + np.eye(a.shape[0])) * d[None, :]
    x = np.random.default_rng(0).standard_normal((a.shape[0], 3))
    sampler = NeighborSampler(indptr, indices, (2,), seed=0)
    acc = np.zeros(3)
    runs = 4000
    for _ in range(runs):
        inputs, (b,) = make_blocks(sampler.sample(np.array([0])), np.diff(indptr), "gcn")
        acc += b.val @ x[inputs[b.col]]
    np.testing.assert_allclose(acc / runs, full[0] @ x, atol=0.05)


def test_registry_and_snapshot_strategies_refused():
    assert set(SAMPLED_MODELS) == {"graphsage", "gcn"}
    with pytest.raises(ConfigError, match="strategy sampled"):
        GraphSAGE(4, 4).initial_state(10)
    with pytest.raises(ConfigError, match="at least 1 layer"):
        BlockGCN(4, 4, num_layers=0)
