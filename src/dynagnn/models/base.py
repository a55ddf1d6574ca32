"""The interface every snapshot-based dynamic GNN of dynagnn implements.

A model is a recurrence over snapshots: ``h_t, state_t = step(Â_t, X_t, state_{t-1})``. The
training engine owns the loop (so that strategies can cut it into checkpointed time blocks, frames,
or per-worker ranges); a model owns one step. ``state`` is a tuple of tensors (RNN hidden/cell
states ``[N, H]``, or EvolveGCN's evolving weight matrices), so that
``torch.utils.checkpoint`` can carry it across block boundaries.
"""

from __future__ import annotations

from typing import ClassVar, Sequence

import torch
from torch import nn

from dynagnn.graph.csr import Adjacency

State = tuple[torch.Tensor, ...]


class DynamicGNN(nn.Module):
    """Base class: subclasses set ``name`` and implement :meth:`initial_state` and :meth:`step`.

    ``in_dim``: node-feature width F; ``hidden_dim``: width H of the embedding each step returns.
    """

    name: ClassVar[str] = ""

    def __init__(self, in_dim: int, hidden_dim: int):
        super().__init__()
        self.in_dim = int(in_dim)
        self.hidden_dim = int(hidden_dim)

    @property
    def out_dim(self) -> int:
        return self.hidden_dim

    def initial_state(self, num_nodes: int, device: torch.device | str = "cpu") -> State:
        raise NotImplementedError

    def zero_state(self, num_nodes: int, device: torch.device | str = "cpu", count: int = 1) -> State:
        """``count`` zero tensors [N, H]: the initial hidden (and cell) states of an RNN."""
        return tuple(torch.zeros(num_nodes, self.hidden_dim, device=device) for _ in range(count))

    def gcn_layers(self) -> list:
        """Every GCNLayer of the model, in registration order (BLAD's operator-order manager sets
        their order)."""
        from dynagnn.models.layers import find_gcn_layers
        return find_gcn_layers(self)

    def step(self, adj: Adjacency, x: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        """One snapshot: ``adj`` is Â_t [N, N], ``x`` is X_t [N, F]; returns (h_t [N, H], state_t)."""
        raise NotImplementedError

    def forward(self, adjs: Sequence[Adjacency], xs: Sequence[torch.Tensor],
                state: State | None = None) -> tuple[torch.Tensor, State]:
        """Run the recurrence over a window; returns the last embedding and the final state."""
        if len(adjs) != len(xs) or not adjs:
            raise ValueError(f"a window needs as many feature matrices as snapshots (got {len(adjs)} and {len(xs)})")
        if state is None:
            state = self.initial_state(adjs[0].num_nodes, xs[0].device)
        h = None
        for adj, x in zip(adjs, xs):
            h, state = self.step(adj, x, state)
        return h, state
