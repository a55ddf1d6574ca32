"""A faithful re-creation of how PyTorch Geometric Temporal feeds and convolves snapshots, as the
reference the training benchmark compares dynagnn's loop with.

PyG Temporal's ``DynamicGraphTemporalSignal.__getitem__`` builds a ``Data`` object from numpy arrays
on every access (``torch.LongTensor(edge_index)``, ``torch.FloatTensor(edge_weight)``, features), and
its recurrent cells call ``GCNConv`` with ``cached=False``: every call re-runs ``gcn_norm`` (adding
self-loops, scattering degrees, scaling every edge) and aggregates by gather/scatter over
``edge_index``. Here the same model classes run, with the same weights and windows; only the graph
operator (:class:`PygAdjacency`) and the snapshot feed (:class:`PygFeeder`) are PyG's.
"""

from __future__ import annotations

import numpy as np
import torch
from torch_geometric.nn.conv.gcn_conv import gcn_norm
from torch_geometric.utils import scatter

from dynagnn.graph.csr import Adjacency
from dynagnn.timing import section


class PygAdjacency(Adjacency):
    """A snapshot as PyG holds it: the raw edges' ``edge_index`` [2, E] (source, target) and
    ``edge_weight`` [E], kept as ``raw_index``/``raw_weight`` (dynagnn's ``Adjacency.edge_index`` is the
    normalised Â's, which this baseline builds anew in every product, as ``GCNConv`` uncached does)."""

    def __init__(self, edge_index: torch.Tensor, edge_weight: torch.Tensor, num_nodes: int):
        self.raw_index, self.raw_weight, self._n = edge_index, edge_weight, num_nodes

    @property
    def num_nodes(self) -> int:
        return self._n

    @property
    def device(self):
        return self.raw_index.device

    def spmm(self, x: torch.Tensor) -> torch.Tensor:
        # GCNConv.forward with cached=False: normalise, then propagate (gather from source, scatter-add at target)
        ei, w = gcn_norm(self.raw_index, self.raw_weight, self._n, improved=False, add_self_loops=True,
                         flow="source_to_target", dtype=x.dtype)
        msg = x.index_select(0, ei[0]) * w.unsqueeze(-1)
        return scatter(msg, ei[1], dim=0, dim_size=self._n, reduce="sum")


class PygFeeder:
    """Per access, a fresh snapshot from numpy, as ``DynamicGraphTemporalSignal`` returns it."""

    def __init__(self, store, device="cpu"):
        self.num_nodes = store.num_nodes
        self.device = torch.device(device)
        parts = store.window_edges(0, store.num_snapshots)
        # the store's (row, col) is (source, target), PyG's edge_index order: messages flow row -> col,
        # as dynagnn's operator sends them (graph/csr.py)
        self.edge_indices = [np.stack([r, c]) for r, c, _ in parts]
        self.edge_weights = [w for _, _, w in parts]
        x = store.features()
        self.features_np = x if x.ndim == 3 else None
        self.static = None if x.ndim == 3 else x

    def get(self, t: int):
        # timed as "transfer", as dynagnn's feeder times its copies: PiPAD's 38.7% is this share of
        # PyG-T's epoch (building the tensors from numpy and copying them to the device)
        with section("transfer"):
            ei = torch.LongTensor(self.edge_indices[t]).to(self.device)
            w = torch.FloatTensor(self.edge_weights[t]).to(self.device)
            x = torch.FloatTensor(self.static if self.features_np is None else self.features_np[t]).to(self.device)
        return PygAdjacency(ei, w, self.num_nodes), x
