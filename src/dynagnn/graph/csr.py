"""The GCN graph operator: the normalised adjacency and its sparse-dense product.

Kipf and Welling's propagation matrix ``Â = D^-1/2 Ã D^-1/2``, held as a torch sparse CSR tensor
``[N, N]``, with PyTorch Geometric's message direction (``GCNConv``'s default
``flow="source_to_target"``). The edges every function here takes are the store's and the
sources' ``(row, col)`` = (source, target), PyG's ``edge_index`` as it is: an edge ``u -> v``
sends u's features to v. So the operator is the *transposed* adjacency: ``Ã[v, u] = w(u -> v)``,
row v of ``Â·X`` sums over the sources u of v's in-edges, and ``D = rowsum(Ã)`` is each node's
weighted in-degree (PyG's ``gcn_norm`` counts degrees at the target, ``edge_index[1]``). Hence
``Â[v, u] = d_v^-1/2 · w(u -> v) · d_u^-1/2`` equals ``gcn_norm(edge_index=(row, col))``'s value of
the edge (u, v) exactly. An undirected (symmetric) snapshot is its own transpose, so there nothing
depends on the direction. (Before issue 34 the operator was built untransposed, ``Ã[u, v]``: on a
directed graph a node aggregated from the nodes it points to, PyG's ``gcn_norm`` on the reversed
edges. Nothing needs that direction, so there is no option for it: reverse the edges at ingest if
a dataset's edges point the other way.)

``Ã`` is ``Aᵀ + I`` except where A already has a self-loop: a self-loop is data (a region's
internal flow), so it keeps its weight and is not counted twice, as PyTorch Geometric's
``add_remaining_self_loops`` does.

Consumers of ``Â`` (the snapshot transfer, PiPAD's frames, the vertex strategy's halos) work on its
(row, col) = (target, source) pattern as :func:`normalized_triples` returns it: a worker owning the
rows V_p reads the remote *sources* of its vertices' in-edges (the halo), which is what the
analyze stage's volume counts on the store's (source, target) edges.

The normalisation depends only on the snapshot, so it is computed once per snapshot (here, on the
numpy side, in one pass) and the result is what models receive; the layers never renormalise. That is
the first thing the PyTorch Geometric Temporal loop repeats every step and dynagnn does not.
"""

from __future__ import annotations

import contextlib
import warnings
from dataclasses import dataclass, field

import numpy as np
import torch

from dynagnn.sortedkeys import row_offsets


@contextlib.contextmanager
def _csr_beta_ok():
    """Silence torch's "Sparse CSR tensor support is in beta" warning, and only it."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
        yield


def csr_matrix(crow, col, values, num_nodes: int, num_cols: int | None = None) -> torch.Tensor:
    """A torch sparse CSR tensor [N, N] (or [N, num_cols]) from its parts (numpy arrays or tensors,
    on any device).

    The parts are trusted (sorted, in-range, unique columns per row: every caller builds them so),
    so torch does not check them again; that would cost a pass over the edges."""
    def tensor(a):
        return a if isinstance(a, torch.Tensor) else torch.from_numpy(np.ascontiguousarray(a))

    n = int(num_nodes)
    m = n if num_cols is None else int(num_cols)
    with _csr_beta_ok():
        return torch.sparse_csr_tensor(tensor(crow), tensor(col), tensor(values), size=(n, m),
                                       check_invariants=False)


def self_looped_triples(row: np.ndarray, col: np.ndarray, weight: np.ndarray | None, num_nodes: int,
                        self_loops: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, weight) of ``Ã`` (Aᵀ with the self-loops of the module docstring), sorted by
    (row, col), duplicate edges summed: the un-normalised matrix whose degree scaling gives ``Â``.
    PiPAD's frames share its entries between snapshots and keep the scaling apart.

    ``row``, ``col``: A's edges (source, target); the result's rows are the targets and its
    columns the sources (the message direction of the module docstring)."""
    n = int(num_nodes)
    # Ã[target, source]: row v of the operator reads the sources of v's in-edges (PyG's flow)
    row, col = np.asarray(col, dtype=np.int64), np.asarray(row, dtype=np.int64)
    w = np.ones(row.shape[0], np.float32) if weight is None else np.asarray(weight, np.float32)
    if self_loops:
        looped = np.zeros(n, dtype=bool)
        looped[row[row == col]] = True
        diag = np.flatnonzero(~looped).astype(np.int64)
        row = np.concatenate([row, diag])
        col = np.concatenate([col, diag])
        w = np.concatenate([w, np.ones(diag.shape[0], np.float32)])
    key = row * np.int64(n) + col
    order = np.argsort(key, kind="stable")
    key, w = key[order], w[order]
    if key.shape[0] > 1 and (key[1:] == key[:-1]).any():
        # edges given more than once (the contract says unique): their weights add up
        first = np.ones(key.shape[0], bool)
        first[1:] = key[1:] != key[:-1]
        starts = np.flatnonzero(first)
        w = np.add.reduceat(w, starts).astype(np.float32)
        key = key[starts]
    return key // n, key % n, w


def inv_sqrt_degrees(row: np.ndarray, w: np.ndarray, num_nodes: int) -> np.ndarray:
    """float64 [N]: ``D^-1/2`` of ``Ã`` (0 for a node of degree 0)."""
    deg = np.bincount(row, weights=w, minlength=int(num_nodes))
    with np.errstate(divide="ignore"):
        return np.where(deg > 0, 1.0 / np.sqrt(deg), 0.0)


def normalized_triples(row: np.ndarray, col: np.ndarray, weight: np.ndarray | None, num_nodes: int,
                       self_loops: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, value) of ``Â``, sorted by (row, col), from the edges of A (any order, unique):
    ``row``, ``col`` are A's (source, target); the result is indexed [target, source].

    With ``self_loops`` every node without a self-loop gets one of weight 1; an existing self-loop
    keeps its weight (see the module docstring). ``weight=None`` means 1. Weights must be >= 0
    (ingest refuses negative ones): degrees are square-rooted.
    """
    row, col, w = self_looped_triples(row, col, weight, num_nodes, self_loops)
    dinv = inv_sqrt_degrees(row, w, num_nodes)
    val = (dinv[row] * w * dinv[col]).astype(np.float32)
    return row, col, val


@dataclass
class Adjacency:
    """One snapshot's normalised adjacency, ready for the graph operator.

    ``matrix``: torch sparse CSR [N, N] float32 (on whatever device it was moved to);
    ``symmetric``: whether ``Â = Âᵀ`` (every undirected snapshot), so that the backward pass can
    multiply by ``matrix`` itself; otherwise ``Âᵀ`` is built once, on the first backward pass.
    ``num_edges``: nnz of ``Â`` including the self-loops (the cost model's edge count).
    """

    matrix: torch.Tensor
    symmetric: bool = False
    _transposed: torch.Tensor | None = field(default=None, repr=False, compare=False)
    _edges: tuple[torch.Tensor, torch.Tensor] | None = field(default=None, repr=False, compare=False)

    @property
    def transposed(self) -> torch.Tensor:
        """``Âᵀ`` as sparse CSR (the matrix the gradient of ``Â·X`` with respect to X needs)."""
        if self.symmetric:
            return self.matrix
        if self._transposed is None:
            with _csr_beta_ok():
                self._transposed = self.matrix.t().to_sparse_csr()
        return self._transposed

    @property
    def edge_index(self) -> torch.Tensor:
        """``Â`` as PyTorch Geometric's ``edge_index`` int64 [2, nnz]: row 0 the source u, row 1 the
        target v of each entry ``Â[v, u]``, self-loops included, on the matrix's device. Built on first
        use and kept with the snapshot, so that a PyG layer (``GCNConv(normalize=False)``,
        ``ChebConv``, any ``MessagePassing``) reads it without a conversion per call."""
        return self._pyg_edges()[0]

    @property
    def edge_weight(self) -> torch.Tensor:
        """The values of ``Â`` float32 [nnz], aligned with :attr:`edge_index`: what PyG's ``gcn_norm``
        returns for the snapshot's edges (module docstring), so ``GCNConv(normalize=False)`` with
        these computes dynagnn's ``Â·X``."""
        return self._pyg_edges()[1]

    @property
    def adj_t(self) -> torch.Tensor:
        """``Â`` as PyG's ``adj_t`` (a torch sparse CSR [target, source]): a PyG layer given it in place of
        ``edge_index`` aggregates with one sparse-dense product instead of gathering and scattering
        messages (``GCNConv(normalize=False)(x, adj.adj_t)``; ``tests/models/test_pyg_cell.py``)."""
        return self.matrix

    def _pyg_edges(self) -> tuple[torch.Tensor, torch.Tensor]:
        if self._edges is None:
            m = self.matrix
            crow = m.crow_indices()
            target = torch.repeat_interleave(torch.arange(m.shape[0], device=crow.device), crow.diff())
            self._edges = (torch.stack([m.col_indices().to(torch.int64), target]), m.values())
        return self._edges

    @property
    def num_nodes(self) -> int:
        return int(self.matrix.shape[0])

    @property
    def num_edges(self) -> int:
        return int(self.matrix.values().shape[0])

    @property
    def device(self) -> torch.device:
        return self.matrix.device

    def to(self, device, non_blocking: bool = False) -> "Adjacency":
        return Adjacency(self.matrix.to(device, non_blocking=non_blocking), self.symmetric)

    def pin_memory(self) -> "Adjacency":
        m = self.matrix
        return Adjacency(csr_matrix(m.crow_indices().pin_memory(), m.col_indices().pin_memory(),
                                    m.values().pin_memory(), m.shape[0]), self.symmetric)

    def dense(self) -> torch.Tensor:
        return self.matrix.to_dense()

    def spmm(self, x: torch.Tensor) -> torch.Tensor:
        """``Â·X``, differentiable in X. A subclass may compute it another way (the PyTorch Geometric
        baseline of the training benchmark renormalises and scatters here, as ``GCNConv`` does)."""
        return SpMM.apply(self, x)

    @property
    def nbytes(self) -> int:
        m = self.matrix
        return sum(t.numel() * t.element_size() for t in (m.crow_indices(), m.col_indices(), m.values()))


class SpMM(torch.autograd.Function):
    """``Y = Â·X`` with ``dL/dX = Âᵀ·dL/dY`` taken from the snapshot's cached (or, for symmetric
    snapshots, its own) CSR matrix. torch's generic backward of a CSR product rebuilds the transpose
    on every call: with 1M non-zeros and 32 columns on one CPU thread, forward plus backward took
    0.105 s that way against 0.017 s this way. The edge values get no gradient (they are data)."""

    @staticmethod
    def forward(ctx, adj: "Adjacency", x: torch.Tensor) -> torch.Tensor:
        ctx.adj = adj
        return torch.sparse.mm(adj.matrix, x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        return None, torch.sparse.mm(ctx.adj.transposed, grad.contiguous())


def is_symmetric(row: np.ndarray, col: np.ndarray, val: np.ndarray, num_nodes: int) -> bool:
    """Whether the matrix with these (row, col)-sorted entries equals its transpose (values to float32
    rounding: ``d_i^-1/2·w·d_j^-1/2`` is rounded from either side)."""
    n = np.int64(num_nodes)
    keys = row.astype(np.int64) * n + col
    tkeys = col.astype(np.int64) * n + row
    order = np.argsort(tkeys, kind="stable")
    return bool(np.array_equal(tkeys[order], keys) and np.allclose(val[order], val, rtol=1e-6, atol=0))


def normalize(row: np.ndarray, col: np.ndarray, weight: np.ndarray | None, num_nodes: int,
              self_loops: bool = True) -> Adjacency:
    """``Â`` of one snapshot's edges (source, target) as an :class:`Adjacency` (CPU)."""
    r, c, v = normalized_triples(row, col, weight, num_nodes, self_loops)
    return Adjacency(csr_matrix(row_offsets(r, num_nodes), c, v, num_nodes), is_symmetric(r, c, v, num_nodes))


def aggregate(adj: Adjacency | torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """The graph operator ``Â·X``: [N, N] sparse times [N, F] dense -> [N, F] (differentiable in X)."""
    if isinstance(adj, Adjacency):
        return adj.spmm(x)
    return torch.sparse.mm(adj, x)


def dense_normalized(row, col, weight, num_nodes: int, self_loops: bool = True) -> torch.Tensor:
    """``Â`` as a dense tensor, computed independently with dense algebra (for tests and tiny graphs):
    ``a[target, source] += w`` for each edge (source, target) = (``row``, ``col``), then the loops
    and the in-degree scaling of the module docstring."""
    a = torch.zeros(num_nodes, num_nodes, dtype=torch.float64)
    w = torch.ones(len(row), dtype=torch.float64) if weight is None else torch.as_tensor(np.asarray(weight), dtype=torch.float64)
    a.index_put_((torch.as_tensor(np.asarray(col)), torch.as_tensor(np.asarray(row))), w, accumulate=True)
    if self_loops:  # I on the nodes without a self-loop of their own
        looped = torch.zeros(num_nodes, dtype=torch.bool)
        looped[torch.as_tensor(np.asarray(row)[np.asarray(row) == np.asarray(col)])] = True
        a = a + torch.diag((~looped).to(torch.float64))
    d = a.sum(1)
    dinv = torch.where(d > 0, d.rsqrt(), torch.zeros_like(d))
    return (dinv[:, None] * a * dinv[None, :]).float()
