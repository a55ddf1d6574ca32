"""Orderings of training nodes into mini-batches: random shuffling and BGL's proximity-aware order.

BGL (NSDI'23, §3.2.2) feeds training nodes to the sampler in BFS order so that consecutive
mini-batches share neighbourhoods, which a FIFO feature cache turns into hits. To keep SGD close
to i.i.d. it (1) builds several BFS sequences from random roots and forms batches by taking
nodes from the sequences round-robin, and (2) circularly shifts each sequence by a random offset
(the small components appended at the end of a BFS would otherwise always come last).

Choices where the paper is vague (see the BGL notes):
  * A BFS sequence visits the *whole* graph (non-training vertices too, so training nodes two
    hops apart through a non-training vertex stay close) and keeps only training nodes, in visit
    order. The root is a random training node; the root's connected component comes first, then
    every other component that holds training nodes, in random order, each traversed by BFS from
    a random training node of its own. (One multi-source level-synchronous BFS does all
    components at once; a stable sort by component rank then makes each component contiguous.)
  * Round-robin without repeats: the sequences are read position by position (sequence 0's
    i-th node, sequence 1's i-th node, ..., then position i+1) and a node already taken is
    skipped. A round can therefore yield fewer than ``s`` nodes; this keeps it vectorised.
  * The number of sequences: BGL picks the least count whose shuffling error (from label
    distributions) is below sqrt(bM)/n; without labels here the default is a fixed small count
    (``DEFAULT_SEQUENCES``), capped at the number of training nodes.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from dynagnn.sortedkeys import sort_groups

DEFAULT_SEQUENCES = 8


def _as_train(train_nodes, num_nodes: int | None = None) -> np.ndarray:
    t = np.asarray(train_nodes, dtype=np.int64).ravel()
    if t.size and t.min() < 0:
        raise ValueError("training node ids must be >= 0")
    if num_nodes is not None and t.size and t.max() >= num_nodes:
        raise ValueError("training node ids must lie in [0, num_nodes)")
    _, first = sort_groups(t)
    if not first.all():
        raise ValueError("training nodes must be distinct")
    return t


def random_order(train_nodes, seed: int = 0) -> np.ndarray:
    """int64 [T]: a seeded uniform permutation of ``train_nodes`` (RO, the usual shuffle)."""
    t = _as_train(train_nodes)
    return t[np.random.default_rng(seed).permutation(t.size)]


def _first_occurrence(x: np.ndarray) -> np.ndarray:
    """Indices of the first occurrence of every distinct value of x, in increasing order."""
    order, first = sort_groups(x)
    return np.sort(order[first])


def bfs_visit_order(indptr: np.ndarray, indices: np.ndarray, roots: np.ndarray) -> np.ndarray:
    """int64: the vertices reachable from ``roots`` in level-synchronous BFS order.

    Level 0 is ``roots`` (in the given order); a level's vertices come in the order of their
    first discovery (by parent position, then adjacency order), as a FIFO-queue BFS visits them.
    """
    n = indptr.size - 1
    visited = np.zeros(n, dtype=bool)
    frontier = np.asarray(roots, dtype=np.int64)
    frontier = frontier[_first_occurrence(frontier)]
    visited[frontier] = True
    out = [frontier]
    while frontier.size:
        start = indptr[frontier]
        cnt = indptr[frontier + 1] - start
        tot = int(cnt.sum())
        if tot == 0:
            break
        seg_first = np.cumsum(cnt) - cnt
        pos = np.repeat(start - seg_first, cnt) + np.arange(tot, dtype=np.int64)
        cand = indices[pos]
        cand = cand[~visited[cand]]
        cand = cand[_first_occurrence(cand)]
        visited[cand] = True
        out.append(cand)
        frontier = cand
    return np.concatenate(out)


def bfs_sequence(indptr, indices, train_nodes, root: int, rng: np.random.Generator,
                 labels: np.ndarray | None = None) -> np.ndarray:
    """int64 [T]: every training node once, in BFS visit order from ``root`` (see module doc).

    ``labels`` int [N] are connected-component labels (computed when None).
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    t = np.asarray(train_nodes, dtype=np.int64)
    n = indptr.size - 1
    if labels is None:
        labels = _components(indptr, indices)
    ncomp = int(labels.max()) + 1 if n else 0
    # component rank: root's first, the others in random order
    rank = np.empty(ncomp, dtype=np.int64)
    perm = rng.permutation(ncomp)
    rc = labels[root]
    perm = np.concatenate([[rc], perm[perm != rc]])
    rank[perm] = np.arange(ncomp)
    # one random training root per other component: shuffle training nodes, first per component
    ts = t[rng.permutation(t.size)]
    ts = ts[labels[ts] != rc]
    others = ts[_first_occurrence(labels[ts])]
    roots = np.concatenate([[root], others]).astype(np.int64)
    roots = roots[np.argsort(rank[labels[roots]], kind="stable")]
    visit = bfs_visit_order(indptr, indices, roots)
    visit = visit[np.argsort(rank[labels[visit]], kind="stable")]
    is_train = np.zeros(n, dtype=bool)
    is_train[t] = True
    return visit[is_train[visit]]


def _components(indptr, indices) -> np.ndarray:
    n = indptr.size - 1
    a = sp.csr_matrix((np.ones(indices.size, dtype=np.int8), indices, indptr), shape=(n, n))
    return connected_components(a, directed=True, connection="weak")[1].astype(np.int64)


def proximity_order(indptr, indices, train_nodes, *, sequences: int | None = None,
                    seed: int = 0) -> np.ndarray:
    """int64 [T]: BGL's proximity-aware ordering of ``train_nodes`` (every node exactly once).

    indptr int64 [N+1], indices int64 [nnz]: CSR of the (symmetric) graph. ``sequences``
    BFS sequences from distinct random training roots (default ``DEFAULT_SEQUENCES``, at most
    T), each circularly shifted by a random offset, merged round-robin without repeats (module
    doc). Slicing the result into consecutive batches gives BGL's PO mini-batches.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    n = indptr.size - 1
    t = _as_train(train_nodes, n)
    if t.size == 0:
        return t.copy()
    s = DEFAULT_SEQUENCES if sequences is None else int(sequences)
    if s < 1:
        raise ValueError("sequences must be >= 1")
    s = min(s, t.size)
    rng = np.random.default_rng(seed)
    labels = _components(indptr, indices)
    roots = t[rng.choice(t.size, size=s, replace=False)]
    seqs = np.empty((s, t.size), dtype=np.int64)
    for i, r in enumerate(roots):
        seq = bfs_sequence(indptr, indices, t, int(r), rng, labels)
        seqs[i] = np.roll(seq, -int(rng.integers(seq.size)))
    merged = seqs.T.ravel()           # position-major: round-robin over the sequences
    return merged[_first_occurrence(merged)]


ORDERS = ("random", "proximity")


def epoch_order(order: str, indptr, indices, train_nodes, seed: int, epoch: int) -> np.ndarray:
    """int64 [T]: the training nodes of ``epoch`` in ``order`` (``random``: a fresh shuffle per epoch;
    ``proximity``: BGL's order with fresh roots and shifts per epoch), seeded by ``seed + epoch``.
    The cache simulation and sampled training both cut it into mini-batches."""
    if order == "random":
        return random_order(train_nodes, seed + epoch)
    if order == "proximity":
        return proximity_order(indptr, indices, train_nodes, seed=seed + epoch)
    raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
