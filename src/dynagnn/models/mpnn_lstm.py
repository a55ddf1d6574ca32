"""MPNN-LSTM (Panagopoulos, Nikolentzos and Vazirgiannis, "Transfer Graph Neural Networks for Pandemic
Forecasting", AAAI 2021): a 2-layer GCN on every snapshot, then two stacked LSTMs along time.

Per snapshot t, with X_t [N, F]:

    H1_t = ReLU(Â_t X_t W1 + b1)                  [N, H]
    H2_t = ReLU(Â_t H1_t W2 + b2)                 [N, H]
    (a_t, c1_t) = LSTM1([H1_t ‖ H2_t], (a_{t-1}, c1_{t-1}))    2H -> H, per vertex
    (b_t, c2_t) = LSTM2(a_t, (b_{t-1}, c2_{t-1}))              H -> H, per vertex

Embedding (``embedding="concat"``, default, as the paper and PyG Temporal's ``MPNNLSTM``):
``[a_t ‖ b_t ‖ X_t]`` [N, 2H + F] — both LSTMs' hidden states plus a skip of the raw features (the
paper skips the window's raw features; here the current snapshot's, since a step sees one snapshot).
``embedding="last"``: ``b_t`` [N, H]. Use :attr:`out_dim` for the head's width.

Simplified on purpose: the paper's batch norm and dropout after each GCN layer are left out. Batch
norm in training mode updates running statistics, so a step would not be a pure function of its
inputs and a checkpointed recompute would update them twice. State ``(a, c1, b, c2)``, each [N, H].

A :class:`~dynagnn.models.base.StackedGNN` of one layer. ``spatial`` is both GCN layers and carries
the raw-feature skip through the seam: it returns ``[H1_t ‖ H2_t ‖ X_t]`` [N, 2H + F] ("concat") or
``[H1_t ‖ H2_t]`` [N, 2H] ("last"). ``temporal`` runs LSTM1 on the first 2H columns, then LSTM2, and
returns ``[a ‖ b ‖ X]`` (the skip columns passed through) or ``b``; its state is ``(a, c1, b, c2)``.
"""

from __future__ import annotations

import torch
from torch import nn

from .base import State, StackedGNN, lstm_frame
from .layers import GCNLayer


class MPNNLSTM(StackedGNN):
    name = "mpnn_lstm"
    num_layers = 1

    def __init__(self, in_dim: int, hidden_dim: int, embedding: str = "concat", order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        if embedding not in ("concat", "last"):
            raise ValueError(f"MPNN-LSTM embedding must be 'concat' or 'last', got {embedding!r}")
        self.embedding = embedding
        self.gcn1 = GCNLayer(in_dim, hidden_dim, order=order)
        self.gcn2 = GCNLayer(hidden_dim, hidden_dim, order=order)
        self.lstm1 = nn.LSTMCell(2 * hidden_dim, hidden_dim)
        self.lstm2 = nn.LSTMCell(hidden_dim, hidden_dim)

    @property
    def out_dim(self) -> int:
        return 2 * self.hidden_dim + self.in_dim if self.embedding == "concat" else self.hidden_dim

    def spatial(self, layer: int, adj, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        h1 = torch.relu(self.gcn1(adj, z))
        h2 = torch.relu(self.gcn2(adj, h1))
        return torch.cat([h1, h2, x] if self.embedding == "concat" else [h1, h2], dim=1)

    @property
    def first_aggregation_reads_x(self) -> bool:
        return True

    def frame_needs(self) -> set[str]:
        return {"ax", "parts", "x"} if self.embedding == "concat" else {"ax", "parts"}

    def spatial_frame(self, layer, frame, z):
        # both GCN layers are state-free: ÂX reused, Â·H1 by the parallel aggregation, one GEMM each
        h1 = torch.relu(self.gcn1.stacked_update(frame.ax))
        h2 = torch.relu(self.gcn2.stacked_update(frame.aggregate(h1)))
        return torch.cat([h1, h2, frame.x] if self.embedding == "concat" else [h1, h2], dim=2)

    def temporal_frame(self, layer, ys, state):
        # LSTM1 over the whole frame first (it does not read LSTM2), then LSTM2 on its outputs: each
        # with its input projection as one GEMM over the frame
        if ys.shape[0] == 1:   # one step: the cells themselves (ATen's sequence LSTM pays over several)
            return self.temporal(layer, ys, state)
        a, c1, b, c2 = state
        h2 = 2 * self.hidden_dim
        aa, (a, c1) = lstm_frame(self.lstm1, ys[..., :h2], (a, c1))
        bb, (b, c2) = lstm_frame(self.lstm2, aa, (b, c2))
        out = torch.cat([aa, bb, ys[..., h2:]], dim=2) if self.embedding == "concat" else bb
        return out, (a, c1, b, c2)

    def temporal_state(self, layer: int, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return self.zero_state(num_nodes, device, 4)

    def temporal(self, layer: int, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        a, c1, b, c2 = state
        h2 = 2 * self.hidden_dim
        outs = []
        for y in ys:
            a, c1 = self.lstm1(y[:, :h2], (a, c1))
            b, c2 = self.lstm2(a, (b, c2))
            outs.append(torch.cat([a, b, y[:, h2:]], dim=1) if self.embedding == "concat" else b)
        return torch.stack(outs), (a, c1, b, c2)
