"""Learnable time encoding Φ(Δt) = cos(ωΔt + φ) (TGAT, TGN; Sven's message and attention inputs)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn


class TimeEncoding(nn.Module):
    """Φ(Δt) = cos(ω·Δt + φ) with learnable ω, φ [dim].

    ω starts at ``10^(-9 i / (dim-1))`` for i = 0..dim-1 and φ at 0 (TGL's and DyGLib's start), so
    the channels span periods from seconds to decades whatever the stream's time unit.
    ``forward(dt)``: float tensor of any shape [...] -> [..., dim].
    """

    def __init__(self, dim: int):
        super().__init__()
        self.dim = int(dim)
        self.w = nn.Linear(1, self.dim)
        with torch.no_grad():
            omega = 1.0 / 10 ** np.linspace(0, 9, self.dim, dtype=np.float32)
            self.w.weight.copy_(torch.from_numpy(omega).reshape(self.dim, 1))
            self.w.bias.zero_()

    # the memo of of_distinct: at most this many values (50 MiB at width 100)
    memo_limit = 1 << 17

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return torch.cos(self.w(dt.to(self.w.weight.dtype).unsqueeze(-1)))

    def of_distinct(self, values: torch.Tensor) -> torch.Tensor:
        """``forward`` of distinct values [T] -> [T, dim]. Where autograd does not record (an
        evaluation pass), the answer comes from a memo of the values seen since ω and φ last
        changed (TGOpt's time-encoding table): gaps repeat across batches, and at minute
        resolution most do. While training, ω and φ move every step, so each batch encodes its own
        distinct gaps and their gradient is exact."""
        if torch.is_grad_enabled():
            self._memo = None
            return self(values)
        # the memo's weights compared by value: a fused optimiser step changes them in place without
        # bumping their version counters (torch 2.13), and a copy is 2·dim numbers
        weights = torch.cat([self.w.weight.detach().reshape(-1), self.w.bias.detach()])
        memo = getattr(self, "_memo", None)
        if (memo is None or memo[0].device != weights.device or not torch.equal(memo[0], weights)
                or memo[1].numel() > self.memo_limit):
            memo = (weights.clone(), values[:0].to(self.w.weight.dtype), self.w.weight.new_zeros(0, self.dim))
        _, known, enc = memo
        pos = torch.searchsorted(known, values).clamp_(max=max(known.numel() - 1, 0))
        new = values if known.numel() == 0 else values[known[pos] != values]
        if new.numel():
            known, order = torch.sort(torch.cat([known, new.to(known.dtype)]))
            enc = torch.cat([enc, self(new)])[order]
            pos = torch.searchsorted(known, values)
        self._memo = (memo[0], known, enc)
        return enc[pos]


def time_delta(t: torch.Tensor, since: torch.Tensor) -> torch.Tensor:
    """float32 ``t - since`` of float64 times: the difference is taken before the cast, so second
    resolution survives times of 1e9 (float32 alone keeps 7 digits)."""
    return (t.to(torch.float64) - since.to(torch.float64)).to(torch.float32)
