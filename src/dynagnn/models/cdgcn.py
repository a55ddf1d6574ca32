"""CD-GCN (Manessi, Rozza and Manzo, "Dynamic graph convolutional networks", Pattern Recognition 2020),
in the two-layer form of ESDG (Chakaravarthy et al., SC'21, Sec. 5.1; notes/esdg.md §4.1).

Concatenate Dynamic GCN: every layer is a GCN with a skip connection, whose output keeps the
aggregated input beside the transformed one, followed by an LSTM per vertex. Layer l (l = 0, 1), per
snapshot t, with input Z_t [N, F_l] (F_0 = F: the raw features X_t; F_1 = H):

    Y0_t = Â_t Z_t                                  [N, F_l]          (aggregate)
    Y1_t = Y0_t W_l + b_l                           [N, H]            W_l [F_l, H]
    Y_t  = ReLU(Y0_t ‖ Y1_t)                        [N, F_l + H]      (the skip: ESDG's Y = σ(Y0 ∘ Y1))
    (h_t, c_t) = LSTM_l(Y_t, (h_{t-1}, c_{t-1}))    [N, H] each, one LSTM per vertex (weights shared)

Layer 1's input is layer 0's h_t; the embedding is layer 1's h_t [N, H]. ESDG's formula has no bias;
the bias b_l is kept as in every GCN of dynagnn (Kipf and Welling's layer). The aggregation must come
first (Y0 is part of the output), so the layers' operator order is fixed: setting ``order`` on them
(BLAD's operator-order manager) changes nothing. ESDG runs CD-GCN on raw, unsmoothed snapshots.

A :class:`~dynagnn.models.base.StackedGNN` of two layers: ``spatial(l)`` is the GCN with skip (Y_t
[N, F_l + H]), ``temporal(l)`` the per-vertex LSTM; state per layer ``(h, c)``, each [N, H], zeros at
the start; the flat state is ``(h0, c0, h1, c1)``.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import State, StackedGNN, lstm_over_time
from .layers import GCNLayer


class SkipGCNLayer(GCNLayer):
    """``[ÂZ ‖ ÂZ W + b]`` [N, F_in] -> [N, F_in + F_out] (before the activation): CD-GCN's GCN.

    Always aggregates first (ÂZ is part of the output), whatever ``order`` says."""

    def resolved_order(self, in_dim: int | None = None, out_dim: int | None = None) -> str:
        return "aggregate_first"

    def forward(self, adj, x: torch.Tensor, weight: torch.Tensor | None = None) -> torch.Tensor:
        y0 = self.aggregate(adj, x)
        y1 = self.update(y0, self.weight if weight is None else weight)
        if self.bias is not None:
            y1 = y1 + self.bias
        return torch.cat([y0, y1], dim=1)


class CDGCN(StackedGNN):
    name = "cdgcn"
    num_layers = 2

    def __init__(self, in_dim: int, hidden_dim: int, order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        widths = [in_dim, hidden_dim]
        self.gcn = nn.ModuleList(SkipGCNLayer(w, hidden_dim, order=order) for w in widths)
        self.lstm = nn.ModuleList(nn.LSTMCell(w + hidden_dim, hidden_dim) for w in widths)

    def spatial(self, layer: int, adj, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.gcn[layer](adj, z))

    def temporal_state(self, layer: int, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return self.zero_state(num_nodes, device, 2)

    def temporal(self, layer: int, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        return lstm_over_time(self.lstm[layer], ys, state)
