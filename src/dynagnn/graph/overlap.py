"""PiPAD's overlap / exclusive split of a partition of consecutive snapshots (PiPAD §4.1-4.2;
notes/pipad.md §2.2-2.4).

A frame is cut into partitions of S consecutive snapshots that are trained in parallel. For a
partition, PiPAD keeps "one overlap part for all snapshots and several exclusive parts for each":
the overlap A_Over is the edge-set intersection of the S snapshots, and the exclusive part of
snapshot i is E_i minus that intersection (the edge-level construction is inferred in the notes:
the paper does not give the algorithm). Transfer then carries the overlap indices once
(§2.3), and aggregation becomes A_i·X_i = A_Over·X_i + A_i^excl·X_i, where the first term is one
pass over the overlap indices for the column-concatenated features [X_1 | ... | X_S] (§2.4).

Values do not overlap (normalisation differs per snapshot), so every snapshot keeps its own
value of each common edge: ``overlap_vals[i]`` float32 [n_over].

Edges are int64 keys ``row * N + col``; snapshots sorted by (row, col) have sorted, distinct
keys, so all set operations are sorted-array searches (:mod:`dynagnn.sortedkeys`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.graph.csr import Adjacency, csr_matrix, inv_sqrt_degrees, is_symmetric, self_looped_triples
from dynagnn.graph.sliced import segment_sum_sorted
from dynagnn.sortedkeys import isin_sorted, row_offsets

Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


@dataclass
class FrameSplit:
    """Overlap/exclusive split of S snapshots.

    overlap_row, overlap_col: int64 [n_over], sorted by (row, col): edges present in all S snapshots.
    exclusive: S triples (row int64, col int64, val float32) [n_excl_i], sorted: E_i minus overlap.
    overlap_vals: S float32 arrays [n_over]: snapshot i's value of each overlap edge.
    num_nodes: N.
    """

    overlap_row: np.ndarray
    overlap_col: np.ndarray
    exclusive: list[Triple]
    overlap_vals: list[np.ndarray]
    num_nodes: int

    @property
    def num_snapshots(self) -> int:
        return len(self.exclusive)

    @property
    def num_overlap(self) -> int:
        return int(self.overlap_row.shape[0])

    def nnz(self, i: int) -> int:
        """|E_i| = n_over + n_excl_i."""
        return self.num_overlap + int(self.exclusive[i][0].shape[0])


def edge_keys(row: np.ndarray, col: np.ndarray, num_nodes: int) -> np.ndarray:
    """int64 [E] keys row * N + col (sorted and distinct when the edges are sorted and unique)."""
    return np.asarray(row, dtype=np.int64) * np.int64(num_nodes) + np.asarray(col, dtype=np.int64)


def frames(num_snapshots: int, S: int) -> list[tuple[int, int]]:
    """Consecutive partitions [0, S), [S, 2S), ... of ``num_snapshots``; the last may be shorter."""
    if S < 1:
        raise ValueError("S must be >= 1")
    return [(a, min(a + S, num_snapshots)) for a in range(0, num_snapshots, S)]


def split_frame(edge_lists: list[Triple], num_nodes: int) -> FrameSplit:
    """Split S snapshots (row, col, val), each sorted by (row, col) and unique, into the overlap
    (intersection of all S edge sets) and the S exclusive parts."""
    keys = _keys_of(edge_lists, num_nodes)
    return _split_by(edge_lists, keys, _intersection(keys), num_nodes)


def split_shared(edge_lists: list[Triple], num_nodes: int) -> FrameSplit:
    """As :func:`split_frame`, but an edge is in the overlap only when it has the same value in all S
    snapshots (the others go to the exclusive parts). With the un-normalised weights of ``Ã`` this is
    the one matrix a partition's snapshots truly share: ``Ã_i = A_Over + A_i`` (PiPAD §4.2)."""
    keys = _keys_of(edge_lists, num_nodes)
    over = _intersection(keys)
    if over.size and len(edge_lists) > 1:
        vals = [np.asarray(v, np.float32)[isin_sorted(k, over)] for (_, _, v), k in zip(edge_lists, keys)]
        same = np.logical_and.reduce([v == vals[0] for v in vals[1:]])
        over = over[same]
    return _split_by(edge_lists, keys, over, num_nodes)


def _keys_of(edge_lists: list[Triple], num_nodes: int) -> list[np.ndarray]:
    if len(edge_lists) == 0:
        raise ValueError("split_frame needs at least one snapshot")
    return [edge_keys(r, c, num_nodes) for r, c, _ in edge_lists]


def _intersection(keys: list[np.ndarray]) -> np.ndarray:
    over = keys[0]
    for k in keys[1:]:
        if over.size == 0:
            break
        over = over[isin_sorted(over, k)]
    return over


def _split_by(edge_lists: list[Triple], keys: list[np.ndarray], over: np.ndarray, num_nodes: int) -> FrameSplit:
    """The split whose overlap is the sorted keys ``over`` (a subset of every snapshot's keys)."""
    exclusive, overlap_vals = [], []
    for (r, c, v), k in zip(edge_lists, keys):
        v = np.asarray(v, dtype=np.float32)
        m = isin_sorted(k, over)
        overlap_vals.append(v[m])            # in key order, the same order as ``over``
        keep = ~m
        exclusive.append((np.asarray(r, np.int64)[keep], np.asarray(c, np.int64)[keep], v[keep]))
    n = np.int64(num_nodes)
    return FrameSplit(over // n, over % n, exclusive, overlap_vals, int(num_nodes))


def reconstruct(split: FrameSplit, i: int) -> Triple:
    """Snapshot i's (row, col, val) rebuilt from overlap + exclusive part, sorted by (row, col)."""
    er, ec, ev = split.exclusive[i]
    keys = np.concatenate([edge_keys(split.overlap_row, split.overlap_col, split.num_nodes),
                           edge_keys(er, ec, split.num_nodes)])
    vals = np.concatenate([split.overlap_vals[i], ev]).astype(np.float32, copy=False)
    order = np.argsort(keys, kind="stable")
    keys = keys[order]
    n = np.int64(split.num_nodes)
    return keys // n, keys % n, vals[order]


def overlap_rate(split: FrameSplit) -> float:
    """Overlap rate OR = |∩_i E_i| / mean_i |E_i|.

    PiPAD calls OR the "topology overlap rate among all snapshots within the partition" without a
    formula. This definition is the fraction of an average snapshot's edges that the overlap part
    covers, i.e. the share of adjacency traffic the overlap saves per snapshot. 0 when all
    snapshots are empty. See :func:`overlap_jaccard` for |∩| / |∪|.
    """
    sizes = [split.nnz(i) for i in range(split.num_snapshots)]
    mean = float(np.mean(sizes)) if sizes else 0.0
    return split.num_overlap / mean if mean > 0 else 0.0


def overlap_jaccard(split: FrameSplit) -> float:
    """Alternative overlap rate |∩_i E_i| / |∪_i E_i| (0 when the union is empty).

    |∪| = |∩| + |∪_i excl_i|; the exclusive parts of different snapshots can share edges, so
    their union is taken on sorted keys."""
    ex = [edge_keys(r, c, split.num_nodes) for r, c, _ in split.exclusive]
    allx = np.concatenate(ex) if ex else np.zeros(0, np.int64)
    allx.sort()
    n_ex = int(np.count_nonzero(np.r_[True, allx[1:] != allx[:-1]])) if allx.size else 0
    union = split.num_overlap + n_ex
    return split.num_overlap / union if union > 0 else 0.0


def transfer_words(split: FrameSplit) -> int:
    """COO array entries sent for the partition the PiPAD way (§2.3): overlap indices once
    (2·n_over), each snapshot's own overlap values (n_over each) and each exclusive part (3·n_excl_i)."""
    s = split.num_snapshots
    return 2 * split.num_overlap + s * split.num_overlap + sum(3 * int(e[0].shape[0]) for e in split.exclusive)


def parallel_aggregate(split: FrameSplit, xs: list[np.ndarray]) -> list[np.ndarray]:
    """A_i·X_i for every snapshot i of the partition, PiPAD's parallel aggregation (§4.2).

    xs: S float32 arrays [N, F]. Returns S float32 arrays [N, F].

    Step 1 (parallel): the features are coalesced into X_c = [X_1 | ... | X_S] [N, S·F] and the
    overlap indices are read once: X_c[overlap_col] gathers [n_over, S·F] in one pass. Because each
    snapshot has its own value of a common edge, the gathered block is viewed as [n_over, S, F] and
    scaled by the [n_over, S] value matrix (snapshot i's slab by overlap_vals[i]) before one
    segment sum by row. (With equal values in all snapshots this is exactly A_Over·X_c.)
    Step 2 (non-parallel): A_i^excl·X_i per snapshot. The results are added per snapshot.
    """
    s = split.num_snapshots
    if len(xs) != s:
        raise ValueError(f"need {s} feature matrices, got {len(xs)}")
    n = split.num_nodes
    xs = [np.asarray(x, dtype=np.float32) for x in xs]
    f = xs[0].shape[1]
    for x in xs:
        if x.shape != (n, f):
            raise ValueError(f"every X_i must be [{n}, {f}], got {x.shape}")
    xc = np.concatenate(xs, axis=1)                                              # [N, S·F]
    gathered = xc[split.overlap_col].reshape(-1, s, f)                          # [n_over, S, F]
    w = np.stack(split.overlap_vals, axis=1) if s else np.zeros((0, 0), np.float32)  # [n_over, S]
    over = segment_sum_sorted(split.overlap_row, gathered * w[:, :, None], n)   # [N, S, F]
    outs = []
    for i, (er, ec, ev) in enumerate(split.exclusive):
        out = over[:, i, :].copy()
        out += segment_sum_sorted(er, ev[:, None] * xs[i][ec], n)
        outs.append(out)
    return outs


# ---- the training path: a partition's matrices as torch tensors --------------------------------------


@dataclass
class RawSnapshot:
    """One snapshot's un-normalised ``Ã`` on the host, the input of a partition: sorted keys int64
    [nnz] (``row·N + col``), weights float32 [nnz], ``D^-1/2`` float64 [N], and whether Ã = Ãᵀ."""

    keys: np.ndarray
    weights: np.ndarray
    dinv: np.ndarray
    symmetric: bool

    def triple(self, num_nodes: int) -> Triple:
        n = np.int64(num_nodes)
        return self.keys // n, self.keys % n, self.weights


def raw_snapshot(row, col, weight, num_nodes: int) -> RawSnapshot:
    """:class:`RawSnapshot` of one snapshot's edges (A's edges; the self-loops of ``Â`` are added)."""
    r, c, w = self_looped_triples(row, col, weight, num_nodes)
    return RawSnapshot(edge_keys(r, c, num_nodes), w, inv_sqrt_degrees(r, w, num_nodes),
                       is_symmetric(r, c, w, num_nodes))


# Widest coalescent block one shared product reads (floats per row). torch's CPU CSR product slows
# down sharply past ~128 dense columns (measured: 0.02 ms at 32 columns, 4 ms at 256 for the same
# 1,900-row matrix), so wider frames are coalesced in blocks of this width (PiPAD's kernel likewise
# caps what one warp coalesces: coalesce_num = 4).
MAX_COALESCED = 128


@dataclass
class PartitionGraph:
    """The matrices of a partition of s consecutive snapshots, on one device (PiPAD §4.1-4.2).

    ``shared``: ``A_Over`` [N, N], the entries of ``Ã`` common to all s snapshots with the same weight,
    read once for several snapshots' feature blocks; ``exclusive``: each snapshot's exclusive part
    [N, N] (None where empty); ``dinv``: ``D_i^-1/2`` float32 [s, N, 1]. Degree scaling stays outside
    the shared matrix, so ``Â_i Z_i = D_i^-1/2 (A_Over + A_i)(D_i^-1/2 Z_i)`` is exact per snapshot.
    For s = 1 ``shared`` is ``Â`` itself (``dinv`` None): the plain graph operator.

    The exclusive parts are separate products, not one block-diagonal [s·N, s·N] matrix: torch's CPU
    CSR product pays per row (measured 8 ms for 8 x 1,900 rows holding 850 non-zeros, against 0.1 ms
    for the 8 separate products).
    """

    shared: Adjacency
    exclusive: list
    dinv: torch.Tensor | None
    size: int

    @property
    def num_nodes(self) -> int:
        return self.shared.num_nodes

    @property
    def nbytes(self) -> int:
        """Bytes this partition occupies (and moves to a device): CSR arrays and the degree scaling."""
        n = self.shared.nbytes + sum(e.nbytes for e in self.exclusive if e is not None)
        return n + (self.dinv.numel() * self.dinv.element_size() if self.dinv is not None else 0)

    def _map(self, fn) -> "PartitionGraph":
        return PartitionGraph(fn(self.shared), [None if e is None else fn(e) for e in self.exclusive],
                              None if self.dinv is None else fn(self.dinv), self.size)

    def to(self, device, non_blocking: bool = False) -> "PartitionGraph":
        return self._map(lambda a: a.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> "PartitionGraph":
        return self._map(lambda a: a.pin_memory())

    def clone(self) -> "PartitionGraph":
        """A copy (the CPU stand-in for a transfer to the device)."""
        def copy(a):
            if isinstance(a, Adjacency):
                m = a.matrix
                return Adjacency(csr_matrix(m.crow_indices().clone(), m.col_indices().clone(), m.values().clone(),
                                            m.shape[0], m.shape[1]), a.symmetric)
            return a.clone()
        return self._map(copy)

    def aggregate(self, z: torch.Tensor) -> torch.Tensor:
        """``Â_i Z_i`` for the s snapshots: ``z`` [s, N, F] -> [s, N, F] (differentiable in z).

        ``A_Over`` on the column-concatenated (coalescent) features [N, k·F] of k snapshots at a time
        (k·F <= :data:`MAX_COALESCED`), each snapshot's exclusive part on its own features, the degree
        scaling on both sides (PiPAD §4.2, Algorithm 1's work on a CPU/GPU SpMM)."""
        s, n, f = z.shape
        if self.dinv is None:
            return self.shared.spmm(z.reshape(n, f)).reshape(1, n, f)
        y = z * self.dinv                                                            # [s, N, F]
        k = max(1, min(s, MAX_COALESCED // max(f, 1)))
        # split/unbind, not y[a:b] or y[i] per block: the backward of each index would write an
        # [s, N, F] zero gradient (s of them per frame); split's backward is one concatenation
        parts = []
        for blk in torch.split(y, k):
            coal = blk.transpose(0, 1).reshape(n, blk.shape[0] * f)                  # [N, k·F]
            parts.append(self.shared.spmm(coal).reshape(n, blk.shape[0], f).transpose(0, 1))
        out = parts[0] if len(parts) == 1 else torch.cat(parts)                      # [s, N, F]
        if any(e is not None for e in self.exclusive):
            out = out + torch.stack([e.spmm(yi) if e is not None else torch.zeros_like(yi)
                                     for yi, e in zip(y.unbind(0), self.exclusive)])
        return out * self.dinv


def partition_graph(raws: list[RawSnapshot], num_nodes: int) -> tuple[PartitionGraph, FrameSplit | None]:
    """The :class:`PartitionGraph` of consecutive snapshots (CPU tensors), and the split it came from
    (None for one snapshot, whose ``Â`` is built exactly as :func:`dynagnn.graph.csr.normalize` does)."""
    n = int(num_nodes)
    sym = all(r.symmetric for r in raws)
    if len(raws) == 1:
        r, c, w = raws[0].triple(n)
        d = raws[0].dinv
        v = (d[r] * w * d[c]).astype(np.float32)
        return PartitionGraph(Adjacency(csr_matrix(row_offsets(r, n), c, v, n), sym), [None], None, 1), None
    split = split_shared([x.triple(n) for x in raws], n)
    vals = split.overlap_vals[0] if split.num_overlap else np.zeros(0, np.float32)
    shared = Adjacency(csr_matrix(row_offsets(split.overlap_row, n), split.overlap_col, vals, n), sym)
    s = len(raws)
    exclusive = [Adjacency(csr_matrix(row_offsets(er, n), ec, ev.astype(np.float32), n), sym) if er.size else None
                 for er, ec, ev in split.exclusive]
    dinv = torch.from_numpy(np.stack([x.dinv for x in raws]).astype(np.float32)).reshape(s, n, 1)
    return PartitionGraph(shared, exclusive, dinv, s), split
