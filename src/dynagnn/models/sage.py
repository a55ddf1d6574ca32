"""GraphSAGE (mean aggregator) and GCN on sampled blocks: the static models BGL trains (NSDI'23 §7).

A mini-batch of seed vertices is expanded hop by hop by the neighbour sampler
(:class:`dynagnn.graph.sample.NeighborSampler`, fan-out ``fanouts[h]`` at hop h, hop 0 being the
seeds). An L-layer model reads it as L *blocks*, input side first: block l maps the vertices of
hop L-l (its sources, ``n_src``) to those of hop L-1-l (its destinations, ``n_dst``); the last
block's destinations are the seeds, the first block's sources are the input vertices whose features
the batch needs. Every destination is also a source of its block (a layer reads a vertex's own
row), at ``self_idx``.

A block's graph operator is a sparse [n_dst, n_src] matrix built on the numpy side (in the sampler
processes) from the sampled edges:

- ``mean`` (GraphSAGE): ``1/s_v`` on each of the s_v sampled neighbours of v, so ``M·X`` is the
  mean of the sampled neighbours (0 for a vertex without any);
- ``gcn``: Kipf and Welling's ``Â = D^-1/2 (A + I) D^-1/2`` row of v, with D = degree + 1 taken in
  the whole graph, and each sampled neighbour's entry scaled by ``d_v / s_v``: an unbiased estimate
  of the row, which is the row itself when every neighbour is sampled.

So with a fan-out at least the largest degree, both models compute on the seeds exactly what they
compute on the whole graph (``tests/models/test_sage.py`` checks it to 1e-5).

The layers reuse the library's operators: :meth:`GCNLayer.aggregate` (timed as ``graph_op``) and the
GCN layer itself (its weight, bias and operator order), so a block is an
:class:`~dynagnn.graph.csr.Adjacency` like a snapshot's.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import torch
from torch import nn

from dynagnn.errors import ConfigError
from dynagnn.graph.csr import Adjacency, csr_matrix
from dynagnn.models.base import DynamicGNN
from dynagnn.models.layers import GCNLayer
from dynagnn.sortedkeys import unique_sorted
from dynagnn.timing import section

NORMS = ("mean", "gcn")


@dataclass
class Block:
    """One layer's sampled bipartite graph, numpy (built where the sampling runs, then pickled).

    ``crow`` int64 [n_dst+1], ``col`` int64 [nnz] (source positions), ``val`` float32 [nnz]: the CSR
    of the block's operator (module doc); ``self_idx`` int64 [n_dst]: each destination's position
    among the sources.
    """

    n_dst: int
    n_src: int
    crow: np.ndarray
    col: np.ndarray
    val: np.ndarray
    self_idx: np.ndarray

    def to(self, device) -> "TorchBlock":
        adj = Adjacency(csr_matrix(self.crow, self.col, self.val, self.n_dst, self.n_src).to(device))
        return TorchBlock(adj, torch.from_numpy(self.self_idx).to(device))

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for a in (self.crow, self.col, self.val, self.self_idx))


@dataclass
class TorchBlock:
    """A :class:`Block` on the training device: ``adj`` [n_dst, n_src] and ``self_idx`` [n_dst]."""

    adj: Adjacency
    self_idx: torch.Tensor


def make_blocks(hops, degree: np.ndarray, norm: str) -> tuple[np.ndarray, list[Block]]:
    """The input vertices and the blocks (input side first) of one sampled mini-batch.

    ``hops``: the sampler's :class:`~dynagnn.graph.sample.SampledHop` list, hop 0 = the seeds;
    ``degree`` int64 [N]: every vertex's degree in the whole graph (the ``gcn`` normalisation);
    ``norm``: ``mean`` or ``gcn``. Returns (input vertices int64 [M] sorted, L blocks).
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {NORMS}, not {norm!r}")
    blocks = []
    src = unique_sorted(np.concatenate([hops[-1].nodes, hops[-1].nbrs]), in_place=True)
    inputs = src
    for h in range(len(hops) - 1, -1, -1):
        hop = hops[h]
        dst = hop.nodes
        s = np.diff(hop.nbr_ptr)                               # sampled neighbours per destination
        col = np.searchsorted(src, hop.nbrs)
        self_idx = np.searchsorted(src, dst)
        dst_of_edge = np.repeat(np.arange(dst.size, dtype=np.int64), s)
        if norm == "mean":
            crow = hop.nbr_ptr.astype(np.int64)
            val = (1.0 / np.maximum(s, 1))[dst_of_edge].astype(np.float32)
        else:
            d = degree[dst].astype(np.float64)
            w = (d / np.maximum(s, 1))[dst_of_edge] / np.sqrt((d[dst_of_edge] + 1.0) * (degree[hop.nbrs] + 1.0))
            # each row: its sampled neighbours, then the self-loop
            rows = np.concatenate([dst_of_edge, np.arange(dst.size, dtype=np.int64)])
            order = np.argsort(rows, kind="stable")
            col = np.concatenate([col, self_idx])[order]
            val = np.concatenate([w, 1.0 / (d + 1.0)])[order].astype(np.float32)
            crow = np.concatenate([[0], np.cumsum(s + 1)]).astype(np.int64)
        blocks.append(Block(int(dst.size), int(src.size), crow, col.astype(np.int64), val, self_idx))
        src = dst
    return inputs, blocks


class SampledGNN(DynamicGNN):
    """A static GNN of ``num_layers`` layers on sampled blocks: ``forward(blocks, x)`` -> h [B, H].

    ``x`` [M, F]: features of the first block's sources (the batch's input vertices, sorted);
    ``blocks``: :class:`TorchBlock` list, input side first; the result holds the seeds' embeddings in
    the order of the last block's destinations (sorted seed ids). ReLU between layers, none after
    the last (the task's head follows). ``norm``: which block operator the model reads.
    """

    norm: ClassVar[str] = ""
    sampled: ClassVar[bool] = True   # trained only by the sampled strategy

    def __init__(self, in_dim: int, hidden_dim: int, num_layers: int = 3):
        super().__init__(in_dim, hidden_dim)
        if int(num_layers) < 1:
            raise ConfigError(f"model {self.name}: needs at least 1 layer, got {num_layers}")
        self.num_layers = int(num_layers)
        dims = [self.in_dim] + [self.hidden_dim] * self.num_layers
        self.layers = nn.ModuleList(self.make_layer(a, b) for a, b in zip(dims[:-1], dims[1:]))

    def make_layer(self, in_dim: int, out_dim: int) -> nn.Module:
        raise NotImplementedError

    def forward(self, blocks: Sequence[TorchBlock], x: torch.Tensor) -> torch.Tensor:
        if len(blocks) != self.num_layers:
            raise ValueError(f"{self.name}: {self.num_layers} layers need as many blocks, got {len(blocks)}")
        for i, (layer, block) in enumerate(zip(self.layers, blocks)):
            x = layer(block, x)
            if i < self.num_layers - 1:
                x = torch.relu(x)
        return x

    def initial_state(self, num_nodes, device="cpu"):
        raise ConfigError(f"model {self.name} trains on sampled mini-batches of a static graph: "
                          "use strategy sampled (or a sampled baseline), not a snapshot strategy")

    def step(self, adj, x, state):
        self.initial_state(0)


class SAGELayer(nn.Module):
    """GraphSAGE, mean aggregator (Hamilton et al.; DGL's ``SAGEConv(aggregator_type="mean")``):
    ``y_v = W_self x_v + W_neigh mean_{u in S(v)} x_u + b``, [n_src, F_in] -> [n_dst, F_out]."""

    def __init__(self, in_dim: int, out_dim: int):
        super().__init__()
        self.self_lin = nn.Linear(in_dim, out_dim)
        self.neigh_lin = nn.Linear(in_dim, out_dim, bias=False)

    def forward(self, block: TorchBlock, x: torch.Tensor) -> torch.Tensor:
        agg = GCNLayer.aggregate(block.adj, x)
        with section("nn_op"):
            return self.self_lin(x[block.self_idx]) + self.neigh_lin(agg)


class BlockGCNLayer(GCNLayer):
    """The GCN layer on a block: ``Â_block X W + b`` with the block's [n_dst, n_src] operator."""

    def forward(self, block: TorchBlock, x: torch.Tensor, weight=None) -> torch.Tensor:
        return super().forward(block.adj, x, weight)


class GraphSAGE(SampledGNN):
    name = "graphsage"
    norm = "mean"

    def make_layer(self, in_dim, out_dim):
        return SAGELayer(in_dim, out_dim)


class BlockGCN(SampledGNN):
    name = "gcn"
    norm = "gcn"

    def make_layer(self, in_dim, out_dim):
        return BlockGCNLayer(in_dim, out_dim)


SAMPLED_MODELS: dict[str, type[SampledGNN]] = {cls.name: cls for cls in (GraphSAGE, BlockGCN)}
