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

    def forward(self, dt: torch.Tensor) -> torch.Tensor:
        return torch.cos(self.w(dt.to(self.w.weight.dtype).unsqueeze(-1)))


def time_delta(t: torch.Tensor, since: torch.Tensor) -> torch.Tensor:
    """float32 ``t - since`` of float64 times: the difference is taken before the cast, so second
    resolution survives times of 1e9 (float32 alone keeps 7 digits)."""
    return (t.to(torch.float64) - since.to(torch.float64)).to(torch.float32)
