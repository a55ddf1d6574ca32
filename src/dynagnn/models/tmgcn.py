"""TM-GCN (Malik, Ubaru, Horesh, Kilmer and Avron, "Dynamic graph convolutional networks using the
tensor M-product", SDM 2021), in ESDG's framework (Chakaravarthy et al., SC'21, Sec. 5.3;
notes/esdg.md §4.3): a GCN on every snapshot followed by the M-transform along time, per layer.

The M-transform is a parameter-free moving average along time, ``𝒵 = 𝒴 ×_1 M`` with M [T, T] lower
triangular and banded (t, k counted from 1 at the first snapshot after the initial state):

    M_tk = 1 / min(w, t)   if max(1, t − w + 1) <= k <= t,   0 otherwise

Layer l (l = 0, 1), per snapshot t, with input Z_t [N, F_l] (F_0 = F: X_t; F_1 = H):

    Y_t = ReLU(Â_t Z_t W_l + b_l)   (layer 0)      Y_t = Â_t Z_t W_l + b_l   (last layer)   [N, H]
    Z'_t = Σ_k M_tk Y_k = (Y_{t−m+1} + ... + Y_t) / m,   m = min(w, t)                    [N, H]

Layer 1's input is layer 0's Z'_t; the embedding is layer 1's Z'_t [N, H].

How the original code applies it (IBM/TM-GCN, ``EmbeddingGCN2`` with ``use_Minv=False``): the
adjacency and the input features are M-transformed first (``At = 𝒜 ×_1 M``, ``Xt = M·X``), then layer 1
is ``ReLU(At_t Xt_t W1)`` and layer 2 ``At_t Y_t W2``, with no activation after the last layer. The
M-transform of the inputs is preprocessing here, as in ESDG: the dataset option ``m_product: w``
(:func:`dynagnn.data.discretize.smooth_m_product`) smooths both the snapshots and the features. In
ESDG's framework the M-transform is each layer's "RNN" after its GCN, so layer 2 reads the M-transform
of layer 1's output, and the embedding is the M-transform of layer 2's (the original's ``use_Minv=True``
variant mixes time at each layer too, with M^-1 after the product); the activation pattern (after
layer 1 only) is the original's.

w (``w``, default 4: the default run's window, so that the band spans a whole window; the ESDG
authors' preprocessing used 20 diagonals, notes/esdg.md §3.5) is the band width. A
:class:`~dynagnn.models.base.StackedGNN` of two layers: ``spatial(l)`` is the GCN (Y_t [N, H]),
``temporal(l)`` the M-transform. Its state per layer, vertex-first, is ``(past, count)``: ``past``
[N, (w−1)·H] holds the last w−1 spatial outputs of each vertex, oldest first (zeros before the
first), ``count`` [N, 1] the divisor min(w, t) of the last snapshot (0 at the start).
"""

from __future__ import annotations

import torch
from torch import nn

from .base import State, StackedGNN
from .layers import GCNLayer

DEFAULT_W = 4


def m_transform_step(y: torch.Tensor, past: torch.Tensor, count: torch.Tensor, w: int
                     ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """One row of ``𝒴 ×_1 M``: ``y`` [n, S] is Y_t; ``past`` [n, (w−1)·S] the w−1 before it (oldest
    first), ``count`` [n, 1] min(w, t−1). Returns (Z_t [n, S], the new past, min(w, t))."""
    count = torch.clamp(count + 1, max=w)
    if w == 1:
        return y, past, count
    n, s = y.shape
    z = (past.reshape(n, w - 1, s).sum(dim=1) + y) / count
    return z, torch.cat([past[:, s:], y], dim=1), count


class TMGCN(StackedGNN):
    name = "tmgcn"
    num_layers = 2

    def __init__(self, in_dim: int, hidden_dim: int, w: int = DEFAULT_W, order: str = "auto"):
        super().__init__(in_dim, hidden_dim)
        if int(w) < 1:
            raise ValueError(f"TM-GCN band width w must be >= 1, got {w}")
        self.w = int(w)
        self.gcn = nn.ModuleList([GCNLayer(in_dim, hidden_dim, order=order),
                                  GCNLayer(hidden_dim, hidden_dim, order=order)])

    def spatial(self, layer: int, adj, z: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        y = self.gcn[layer](adj, z)
        return torch.relu(y) if layer < self.num_layers - 1 else y

    def temporal_state(self, layer: int, num_nodes: int, device: torch.device | str = "cpu") -> State:
        return (torch.zeros(num_nodes, (self.w - 1) * self.hidden_dim, device=device),
                torch.zeros(num_nodes, 1, device=device))

    def temporal(self, layer: int, ys: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        past, count = state
        zs = []
        for y in ys:
            z, past, count = m_transform_step(y, past, count, self.w)
            zs.append(z)
        return torch.stack(zs), (past, count)

    def extra_repr(self) -> str:
        return f"w={self.w}"
