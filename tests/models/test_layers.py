import numpy as np
import pytest
import torch

from dynagnn.graph.csr import dense_normalized, normalize
from dynagnn.models.layers import GCN, GCNLayer

from tests.testing.devices import DEVICES

from .graphs import N, random_edges


@pytest.fixture
def graph():
    row, col, w = random_edges(seed=3, weighted=True)
    return row, col, w, normalize(row, col, w, N), dense_normalized(row, col, w, N)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("order", ["auto", "aggregate_first", "update_first"])
@pytest.mark.parametrize("dims", [(6, 4), (4, 6)])
def test_gcn_layer_matches_dense(graph, order, dims, device):
    torch.manual_seed(0)
    *_, adj, a = graph
    layer = GCNLayer(*dims, order=order)
    with torch.no_grad():
        layer.bias.normal_()
    x = torch.randn(N, dims[0])
    expect = a.double() @ x.double() @ layer.weight.double() + layer.bias.double()
    got = layer.to(device)(adj.to(device), x.to(device))
    torch.testing.assert_close(got.double().cpu(), expect, rtol=1e-5, atol=1e-5)


def test_auto_order_picks_narrower_side():
    assert GCNLayer(8, 4).resolved_order() == "update_first"
    assert GCNLayer(4, 8).resolved_order() == "aggregate_first"
    assert GCNLayer(4, 4).resolved_order() == "aggregate_first"
    layer = GCNLayer(8, 4)
    layer.order = "aggregate_first"
    assert layer.resolved_order() == "aggregate_first"
    with pytest.raises(ValueError, match="order must be one of"):
        layer.order = "sideways"


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("weighted", [False, True])
def test_gcn_layer_matches_pyg_gcnconv(weighted):
    from torch_geometric.nn import GCNConv

    torch.manual_seed(1)
    # PyG keeps an existing self-loop's weight where we add 1: compare on graphs without them
    row, col, w = random_edges(seed=5, weighted=weighted, self_loops=False)
    adj = normalize(row, col, w, N)
    layer = GCNLayer(5, 7)
    with torch.no_grad():
        layer.bias.normal_()
    conv = GCNConv(5, 7, normalize=True, add_self_loops=True, bias=True)
    with torch.no_grad():
        conv.lin.weight.copy_(layer.weight.t())
        conv.bias.copy_(layer.bias)
    x = torch.randn(N, 5)
    # our (row, col) is PyG's (source, target) as it is: the same edge_index, no reversal
    # (before issue 34 this test fed PyG (col, row), the reversed edges)
    edge_index = torch.stack([torch.as_tensor(row), torch.as_tensor(col)])
    ew = None if w is None else torch.as_tensor(w)
    torch.testing.assert_close(layer(adj, x), conv(x, edge_index, ew), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dims", [(6, 3), (3, 6)])
def test_orders_give_same_output_and_gradients(graph, dims):
    torch.manual_seed(2)
    *_, adj, _ = graph
    layer = GCNLayer(*dims)
    x = torch.randn(N, dims[0], requires_grad=True)
    target = torch.randn(N, dims[1])
    results = []
    for order in ("aggregate_first", "update_first"):
        layer.order = order
        y = layer(adj, x)
        loss = ((y - target) ** 2).sum()
        gx, gw, gb = torch.autograd.grad(loss, [x, layer.weight, layer.bias])
        results.append((y, gx, gw, gb))
    for a, b in zip(*results):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


def test_explicit_weight_overrides(graph):
    *_, adj, a = graph
    layer = GCNLayer(4, 3, bias=False)
    w = torch.randn(4, 3, requires_grad=True)
    x = torch.randn(N, 4)
    y = layer(adj, x, weight=w)
    torch.testing.assert_close(y, a @ x @ w, rtol=1e-5, atol=1e-5)
    y.sum().backward()
    assert w.grad is not None and layer.weight.grad is None


def test_gcn_stack(graph):
    torch.manual_seed(3)
    *_, adj, a = graph
    net = GCN([5, 8, 2])
    x = torch.randn(N, 5)
    l1, l2 = net.gcn_layers()
    expect = a @ torch.relu(a @ x @ l1.weight + l1.bias) @ l2.weight + l2.bias
    torch.testing.assert_close(net(adj, x), expect, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError):
        GCN([5])


def test_glorot_bounds():
    torch.manual_seed(0)
    layer = GCNLayer(20, 10)
    bound = np.sqrt(6 / 30)
    assert layer.weight.abs().max() <= bound and layer.weight.std() > bound / 4
