"""A model as a user writes it, for the Python API's tests (tests/test_api_fit.py): named by import path,
``tests.fit_cells:AggGRU``, or passed to ``dynagnn.fit`` as the class."""

from __future__ import annotations

import torch
from torch import nn

from dynagnn.models import DynamicGNN


class AggGRU(DynamicGNN):
    """h_t = GRU(ReLU(Â_t X_t W), h_{t-1}): one aggregation per snapshot, through ``adj.spmm``."""

    def __init__(self, in_dim, hidden_dim):
        super().__init__(in_dim, hidden_dim)
        self.lin = nn.Linear(in_dim, hidden_dim)
        self.gru = nn.GRUCell(hidden_dim, hidden_dim)

    def initial_state(self, num_nodes, device="cpu"):
        return self.zero_state(num_nodes, device)

    def step(self, adj, x, state):
        h = self.gru(torch.relu(adj.spmm(self.lin(x))), state[0])
        return h, (h,)
