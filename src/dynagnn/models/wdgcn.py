"""WD-GCN (Manessi, Rozza and Manzo, "Dynamic graph convolutional networks", Pattern Recognition 2020).

Waterfall Dynamic GCN: a WD-GC layer (one GCN whose weights are shared by every snapshot) followed by a
v-LSTM (one LSTM per vertex, weights shared by all vertices). Per snapshot t, with X_t [N, F]:

    Z_t = ReLU(Â_t X_t Θ + b)                       Θ [F, H]                      (WD-GC)
    i_t = σ(Z_t W_ii + h_{t-1} W_hi + b_i)          f_t, o_t alike; g_t with tanh  (v-LSTM)
    c_t = f_t ⊙ c_{t-1} + i_t ⊙ g_t                 [N, H]
    h_t = o_t ⊙ tanh(c_t)                           [N, H]

The LSTM is :class:`torch.nn.LSTMCell` with the N vertices as the batch (gate order i, f, g, o).
State ``(h, c)``, both [N, H], zeros at the start. The step returns h_t as the embedding.

A :class:`~dynagnn.models.base.StackedGNN` of one layer: ``spatial`` is the WD-GC layer (Z_t [N, H]),
``temporal`` the v-LSTM over a run of snapshots, its state ``(h, c)``.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import State, StackedGNN, lstm_frame, lstm_over_time
from .layers import GCNLayer


class WDGCN(StackedGNN):
    name = "wdgcn"
    num_layers = 1

    def __init__(self, in_dim: int, hidden_dim: int, order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        self.gcn = GCNLayer(in_dim, hidden_dim, order=order)
        self.lstm = nn.LSTMCell(hidden_dim, hidden_dim)

    def spatial(self, layer: int, adj, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.gcn(adj, z))

    @property
    def first_aggregation_reads_x(self) -> bool:
        return True

    def frame_needs(self) -> set[str]:
        return {"ax"}

    def spatial_frame(self, layer, frame, z):
        # ÂX from the reuse cache or the parallel aggregation, then one GEMM for the frame
        return torch.relu(self.gcn.stacked_update(frame.ax))

    def temporal_frame(self, layer, ys, state):
        return lstm_frame(self.lstm, ys, state)

    def temporal_state(self, layer: int, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return self.zero_state(num_nodes, device, 2)

    def temporal(self, layer: int, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        return lstm_over_time(self.lstm, ys, state)
