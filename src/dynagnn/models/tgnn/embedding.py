"""Embedding modules: z_v(t) from the (updated) memory.

- :class:`TemporalAttention` (TGN): one layer of temporal graph attention over the k most recent
  neighbours (TGL's form). For a root v at time t with neighbours u_j, events e_j at t_j:
  ``q = W_q [h_v ‖ Φ(0)]``, ``k_j, v_j = W_{k,v} [h_{u_j} ‖ e_j ‖ Φ(t − t_j)]``, per head
  ``α_j = softmax_j LeakyReLU(0.2)(q·k_j)`` over the valid neighbours (none: the attended part is 0),
  ``z = LayerNorm(relu(W_o [Σ α_j v_j ‖ h_v]))`` (dropout after the relu).
- :class:`TimeProjection` (JODIE): ``z = s ⊙ (1 + W Δt̂)``, Δt̂ the time since the memory's last
  update, standardised by the training stream's mean and standard deviation of such gaps.
- APAN embeds with the memory itself (no module).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from dynagnn.models.tgnn.time_encoding import TimeEncoding


class TemporalAttention(nn.Module):
    """``forward(h_root [R, dn], h_nbr [R, k, dn], e_nbr [R, k, de] or None, dt [R, k] float32,
    valid bool [R, k]) -> z [R, out_dim]``; ``out_dim`` divisible by ``heads``."""

    def __init__(self, node_dim: int, edge_dim: int, time_enc: TimeEncoding, out_dim: int,
                 heads: int = 2, dropout: float = 0.1):
        super().__init__()
        if out_dim % heads:
            raise ValueError(f"embedding dimension {out_dim} is not divisible by {heads} heads")
        self.time_enc, self.heads, self.edge_dim = time_enc, int(heads), int(edge_dim)
        self.w_q = nn.Linear(node_dim + time_enc.dim, out_dim)
        self.w_k = nn.Linear(node_dim + edge_dim + time_enc.dim, out_dim)
        self.w_v = nn.Linear(node_dim + edge_dim + time_enc.dim, out_dim)
        self.w_o = nn.Linear(out_dim + node_dim, out_dim)
        self.norm = nn.LayerNorm(out_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, h_root, h_nbr, e_nbr, dt, valid):
        r, k = dt.shape
        h = self.heads
        zero = self.time_enc(torch.zeros(r, device=dt.device))
        q = self.w_q(torch.cat([h_root, zero], dim=1)).reshape(r, 1, h, -1)
        parts = [h_nbr] + ([e_nbr] if self.edge_dim else []) + [self.time_enc(dt)]
        x = torch.cat(parts, dim=2)
        key = self.w_k(x).reshape(r, k, h, -1)
        val = self.w_v(x).reshape(r, k, h, -1)
        score = F.leaky_relu((q * key).sum(-1), 0.2).masked_fill(~valid.unsqueeze(-1), float("-inf"))
        att = torch.softmax(score, dim=1).nan_to_num(0.0)  # a root without neighbours: all -inf -> 0
        out = (att.unsqueeze(-1) * val).sum(1).reshape(r, -1)
        return self.norm(self.dropout(F.relu(self.w_o(torch.cat([out, h_root], dim=1)))))


class TimeProjection(nn.Module):
    """JODIE's projection ``z = s ⊙ (1 + W Δt̂)``; ``forward(s [R, d], dt [R] float32) -> [R, d]``.

    ``shift``, ``scale``: Δt̂ = (Δt − shift) / scale (the training gaps' mean and standard deviation).
    """

    def __init__(self, dim: int, shift: float = 0.0, scale: float = 1.0, dropout: float = 0.1):
        super().__init__()
        self.w = nn.Linear(1, dim)
        self.register_buffer("shift", torch.tensor(float(shift)), persistent=False)
        self.register_buffer("scale", torch.tensor(float(scale) if scale > 0 else 1.0), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, s, dt):
        return self.dropout(s * (1 + self.w(((dt - self.shift) / self.scale).unsqueeze(1))))
