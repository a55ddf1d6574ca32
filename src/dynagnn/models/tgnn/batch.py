"""One event batch and the rows it reads: the data side of a TGNN step (Sven, Algorithm 1).

:func:`make_batch` lays out B events with K negative destinations each as R = B(2+K) *roots*
(sources, destinations, negatives, each at its event's time), samples the k most recent
neighbours (strictly before each root's time) of the roots that need them, and lists the distinct
nodes whose memory and mailbox rows the batch reads, with the index of every root and neighbour
into that list. A distributed strategy fetches exactly ``nodes`` from the workers that own them.

It also lays out what an embedding needs once only (TGOpt's and TGLite's deduplication, issue 32):
the distinct (node, time) roots, since a root's sampled neighbourhood and its embedding depend on
nothing else (``emb_rows``, ``emb_inv``); the distinct nodes among the valid neighbours
(``nbr_nodes``, ``nbr_pos``), the only rows an attention projects to keys and values; and the
distinct gaps Δt between the roots and their neighbours (``gaps``, ``gap_idx``), the only values
the time encoding sees. Sampling runs once per distinct root and is copied to the repeats.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynagnn.graph.sample import TemporalNeighbors
from dynagnn.sortedkeys import unique_inverse


@dataclass
class EventBatch:
    """B events ``src[i] -> dst[i]`` at ``t[i]`` (stream index ``eid[i]``) and K negatives each.

    src, dst, eid int64 [B]; t float64 [B]; neg int64 [B, K].
    roots int64 [R]: ``src ‖ dst ‖ neg.ravel()`` (the negatives of event i at rows 2B + iK ...);
    root_t float64 [R]. With negative edges (``neg`` given [B, K, 2] to :func:`make_batch`: DyGLib's
    historical and inductive negatives), ``neg`` holds their destinations, ``neg_src`` int64 [B, K]
    their sources, and the roots end with ``neg_src.ravel()``. nbr, nbr_eid int64 [S, k] and nbr_t float64 [S, k]: the k most recent
    neighbours of the first S roots (S = 0, 2B or R), -1 padded; nbr_valid bool [S, k].
    nodes int64 [U]: sorted distinct ids of the roots and valid neighbours (the rows read);
    root_idx int64 [R], nbr_idx int64 [S, k] (0 where not valid): positions in ``nodes``.
    emb_rows int64 [D]: one root row per distinct (node, time) root (all R rows, in order, when made
    with ``dedup=False``); emb_inv int64 [R]: each root's position in ``emb_rows``.
    nbr_nodes int64 [Un]: sorted positions in ``nodes`` of the valid neighbours (position 0 where
    none is valid, so that every index is in range); nbr_pos int64
    [S, k]: each neighbour's position in ``nbr_nodes`` (0 where not valid).
    gaps float32 [T]: sorted distinct Δt = root_t − nbr_t (float32 as
    :func:`~dynagnn.models.tgnn.time_encoding.time_delta` takes it; 0 where not valid); gap_idx
    int64 [S, k]: each neighbour's position in ``gaps``.
    """

    src: np.ndarray
    dst: np.ndarray
    t: np.ndarray
    eid: np.ndarray
    neg: np.ndarray
    roots: np.ndarray
    root_t: np.ndarray
    nbr: np.ndarray
    nbr_t: np.ndarray
    nbr_eid: np.ndarray
    nbr_valid: np.ndarray
    nodes: np.ndarray
    root_idx: np.ndarray
    nbr_idx: np.ndarray
    emb_rows: np.ndarray
    emb_inv: np.ndarray
    nbr_nodes: np.ndarray
    nbr_pos: np.ndarray
    gaps: np.ndarray
    gap_idx: np.ndarray
    neg_src: np.ndarray | None = None

    @property
    def size(self) -> int:
        return int(self.src.size)

    @property
    def negatives(self) -> int:
        return int(self.neg.shape[1])

    def negative_pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """Root rows (source [BK], destination [BK]) of the negative pairs, event by event: the
        event's own source against each negative destination, or the negative edges' own sources."""
        b, k = self.neg.shape
        dst_rows = 2 * b + np.arange(b * k)
        if self.neg_src is None:
            return np.repeat(np.arange(b), k), dst_rows
        return 2 * b + b * k + np.arange(b * k), dst_rows

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions in ``nodes`` of ids that the batch reads."""
        return np.searchsorted(self.nodes, ids)


def distinct_roots(roots: np.ndarray, root_t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows int64 [D], inverse int64 [R]): a row of each distinct (node, time) pair, in the order
    of the pairs, and each root's position among them (``roots[rows][inverse] == roots``)."""
    if roots.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    times, t_of = unique_inverse(root_t)
    pairs, inverse = unique_inverse(roots * np.int64(times.size) + t_of)
    rows = np.empty(pairs.size, dtype=np.int64)
    rows[inverse] = np.arange(roots.size)  # any occurrence serves: a pair's rows are equal
    return rows, inverse


def make_batch(src, dst, t, eid, neg, sampler: TemporalNeighbors | None, k: int,
               sample: str = "all", dedup: bool = True) -> EventBatch:
    """Build an :class:`EventBatch`; ``sample``: whose neighbours to sample, ``all`` roots (TGN),
    ``positive`` (the 2B sources and destinations: APAN delivers mail to them) or ``none`` (JODIE);
    ``dedup`` False: every root is its own embedding row (the layout before deduplication)."""
    src, dst, eid = (np.asarray(a, dtype=np.int64) for a in (src, dst, eid))
    t = np.asarray(t, dtype=np.float64)
    b = src.size
    neg = np.asarray(neg, dtype=np.int64)
    neg_src = neg[..., 0].reshape(b, -1) if neg.ndim == 3 else None  # negative edges, not destinations
    neg = (neg[..., 1] if neg.ndim == 3 else neg).reshape(b, -1)
    extra = [] if neg_src is None else [neg_src.ravel()]
    roots = np.concatenate([src, dst, neg.ravel()] + extra)
    root_t = np.concatenate([t, t] + [np.repeat(t, neg.shape[1])] * (1 + len(extra)))
    s = {"all": roots.size, "positive": 2 * b, "none": 0}[sample]
    distinct = distinct_roots(roots, root_t) if dedup or s == roots.size else None
    emb_rows, emb_inv = distinct if dedup else (np.arange(roots.size), np.arange(roots.size))
    if s and k > 0 and sampler is not None:
        rows, inv = distinct if s == roots.size else distinct_roots(roots[:s], root_t[:s])
        nbr, nbr_t, nbr_eid = (a[inv] for a in sampler.most_recent_events(roots[rows], root_t[rows], k))
    else:
        nbr = np.full((s if k > 0 else 0, max(k, 0)), -1, dtype=np.int64)
        nbr_t = np.full(nbr.shape, -1.0)
        nbr_eid = nbr.copy()
    valid = nbr >= 0
    nodes, inv = unique_inverse(np.concatenate([roots, nbr[valid]]))
    nbr_idx = np.zeros(nbr.shape, dtype=np.int64)
    nbr_idx[valid] = inv[roots.size:]
    used = np.zeros(nodes.size, dtype=bool)
    used[nbr_idx[valid]] = True
    nbr_nodes = np.flatnonzero(used) if used.any() else np.zeros(min(nodes.size, 1), dtype=np.int64)
    nbr_pos = np.where(valid, (np.cumsum(used) - 1)[nbr_idx], 0)  # a row for masked indices: 0
    dt = np.where(valid, (root_t[:nbr.shape[0], None] - nbr_t), 0.0).astype(np.float32)
    gaps, gap_idx = unique_inverse(dt.ravel())
    return EventBatch(src, dst, t, eid, neg, roots, root_t, nbr, nbr_t, nbr_eid, valid, nodes,
                      inv[:roots.size], nbr_idx, emb_rows, emb_inv, nbr_nodes, nbr_pos, gaps,
                      gap_idx.reshape(nbr.shape), neg_src)
