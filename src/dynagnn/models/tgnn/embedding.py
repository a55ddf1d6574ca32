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
    valid bool [R, k]) -> z [R, out_dim]``; ``out_dim`` divisible by ``heads``.

    :meth:`forward_indexed` computes the same from a table of distinct node rows and indices into
    it, which is how a batch holds them (TGLite's dedup, TGOpt's time-encoding lookup): every
    linear layer is split by its input blocks, the node blocks are applied once per distinct node
    (not once per root and neighbour: R(1 + k) rows), and the time block once per distinct Δt. The
    arithmetic is the same up to the order of float sums.
    """

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

    def forward_indexed(self, table, root_idx, nbr_idx, e_nbr, dt, valid):
        """:meth:`forward` of ``h_root = table[root_idx]`` and ``h_nbr = table[nbr_idx]``.

        Args:
            table: [U, dn], the distinct node rows (a batch's updated memory).
            root_idx: int64 [R]; nbr_idx: int64 [R, k] (any row where not ``valid``).
            e_nbr, dt, valid: as :meth:`forward`.
        """
        r, k = dt.shape
        h, dn, de = self.heads, table.shape[1], self.edge_dim
        d = self.w_q.out_features
        w_q = self.w_q.weight
        q = (table @ w_q[:, :dn].T)[root_idx]
        q = q + (self.time_enc(torch.zeros(1, device=dt.device)) @ w_q[:, dn:].T + self.w_q.bias)
        w_kv = torch.cat([self.w_k.weight, self.w_v.weight])          # [2d, dn + de + dt]
        b_kv = torch.cat([self.w_k.bias, self.w_v.bias])
        kv = (table @ w_kv[:, :dn].T)[nbr_idx]                         # [R, k, 2d]
        times, at = torch.unique(dt, return_inverse=True)
        kv = kv + (self.time_enc(times) @ w_kv[:, dn + de:].T + b_kv)[at]
        if de:
            kv = kv + e_nbr @ w_kv[:, dn:dn + de].T
        key, val = kv[..., :d].reshape(r, k, h, -1), kv[..., d:].reshape(r, k, h, -1)
        score = F.leaky_relu((q.reshape(r, 1, h, -1) * key).sum(-1), 0.2).masked_fill(~valid.unsqueeze(-1),
                                                                                  float("-inf"))
        att = torch.softmax(score, dim=1).nan_to_num(0.0)
        out = (att.unsqueeze(-1) * val).sum(1).reshape(r, -1)
        w_o = self.w_o.weight
        o = out @ w_o[:, :d].T + (table @ w_o[:, d:].T)[root_idx] + self.w_o.bias
        return self.norm(self.dropout(F.relu(o)))


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
