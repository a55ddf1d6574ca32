"""Models as a user writes them, named by import path in the plugin tests (``tests.models.plugin_cells:GRUCell``):
two that keep the contract (a plain DynamicGNN, a StackedGNN) and one per way to break it."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from dynagnn.graph import csr
from dynagnn.models import DynamicGNN, StackedGNN
from dynagnn.models.base import lstm_over_time


class GRUCell(DynamicGNN):
    """h_t = GRU(Â_t X_t W, h_{t-1}): one aggregation per snapshot, through adj.spmm."""

    name = "test_gru_cell"

    def __init__(self, in_dim, hidden_dim):
        super().__init__(in_dim, hidden_dim)
        self.lin = nn.Linear(in_dim, hidden_dim)
        self.gru = nn.GRUCell(hidden_dim, hidden_dim)

    def initial_state(self, num_nodes, device="cpu"):
        return self.zero_state(num_nodes, device)

    def step(self, adj, x, state):
        h = self.gru(torch.relu(csr.aggregate(adj, self.lin(x))), state[0])
        return h, (h,)


class StackedCell(StackedGNN):
    """One layer: ReLU(Â Z W) per snapshot, then a per-vertex LSTM along time."""

    num_layers = 1

    def __init__(self, in_dim, hidden_dim):
        super().__init__(in_dim, hidden_dim)
        self.lin = nn.Linear(in_dim, hidden_dim)
        self.cell = nn.LSTMCell(hidden_dim, hidden_dim)

    def spatial(self, layer, adj, z, x):
        return torch.relu(csr.aggregate(adj, self.lin(z)))

    def temporal_state(self, layer, num_nodes, device="cpu"):
        return self.zero_state(num_nodes, device, count=2)

    def temporal(self, layer, ys, state):
        return lstm_over_time(self.cell, ys, state)


class GlobalMeanCell(GRUCell):
    """Adds the mean of every vertex's features: it reads across vertices outside adj.spmm."""

    def step(self, adj, x, state):
        h, st = super().step(adj, x, state)
        return h + self.lin(x).mean(0, keepdim=True), st


class StackedMixingCell(StackedCell):
    """A temporal part that mixes vertices (a softmax over them): no snapshot split."""

    def temporal(self, layer, ys, state):
        zs, st = lstm_over_time(self.cell, ys, state)
        return torch.softmax(zs, dim=1), st


class WrongShapeCell(GRUCell):
    def step(self, adj, x, state):
        h, st = super().step(adj, x, state)
        return torch.cat([h, h[:, :1]], 1), st


class ListStateCell(GRUCell):
    def step(self, adj, x, state):
        h, st = super().step(adj, x, state)
        return h, [h]


class NumpyNoiseCell(GRUCell):
    """Noise from numpy's global generator, which torch.manual_seed does not fix."""

    def step(self, adj, x, state):
        h, st = super().step(adj, x, state)
        return h + torch.from_numpy(np.random.rand(*h.shape).astype(np.float32)), st


class NoArgsCell(DynamicGNN):
    def __init__(self):
        super().__init__(1, 1)


class NotAModel(nn.Module):
    def __init__(self, in_dim, hidden_dim):
        super().__init__()


def not_a_class(in_dim, hidden_dim):
    return GRUCell(in_dim, hidden_dim)


class AdjTCell(GRUCell):
    """Aggregates with adj.adj_t (PyG's sparse adjacency) instead of adj.spmm: no halo under the vertex split."""

    def step(self, adj, x, state):
        h = self.gru(torch.relu(torch.sparse.mm(adj.adj_t, self.lin(x))), state[0])
        return h, (h,)


class BadTemporalCell(StackedCell):
    """A temporal part that returns a 2-D tensor, not [W, n, H]."""

    def temporal(self, layer, ys, state):
        zs, st = lstm_over_time(self.cell, ys, state)
        return zs[0], st


class HeadsCell(GRUCell):
    """Attention over each vertex's own features: 4 heads need a hidden width they divide."""

    def __init__(self, in_dim, hidden_dim):
        super().__init__(in_dim, hidden_dim)
        self.att = nn.MultiheadAttention(hidden_dim, 4, batch_first=True)

    def step(self, adj, x, state):
        h, st = super().step(adj, x, state)
        a, _ = self.att(h[:, None], h[:, None], h[:, None])
        return a[:, 0], (a[:, 0],)


class DenseReadCell(GRUCell):
    """Aggregates with the dense matrix: under the vertex split a worker's rows are [n, n + halo]."""

    def step(self, adj, x, state):
        h = self.gru(torch.relu(adj.dense() @ self.lin(x)), state[0])
        return h, (h,)


class LayeredStateCell(DynamicGNN):
    """A 2-layer torch GRU over vertices: its state [L, N, H] is mixed along the sequence axis N."""

    def __init__(self, in_dim, hidden_dim):
        super().__init__(in_dim, hidden_dim)
        self.lin = nn.Linear(in_dim, hidden_dim)
        self.gru = nn.GRU(hidden_dim, hidden_dim, num_layers=2)

    def initial_state(self, num_nodes, device="cpu"):
        return (torch.zeros(2, 1, self.hidden_dim, device=device),)

    def step(self, adj, x, state):
        out, hn = self.gru(csr.aggregate(adj, self.lin(x))[:, None], state[0])   # vertices as time: mixes them
        return out[:, 0], (hn,)
