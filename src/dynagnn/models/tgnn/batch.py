"""One event batch and the rows it reads: the data side of a TGNN step (Sven, Algorithm 1).

:func:`make_batch` lays out B events with K negative destinations each as R = B(2+K) *roots*
(sources, destinations, negatives, each at its event's time), samples the k most recent
neighbours (strictly before each root's time) of the roots that need them, and lists the distinct
nodes whose memory and mailbox rows the batch reads, with the index of every root and neighbour
into that list. A distributed strategy fetches exactly ``nodes`` from the workers that own them.
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
    root_t float64 [R]. nbr, nbr_eid int64 [S, k] and nbr_t float64 [S, k]: the k most recent
    neighbours of the first S roots (S = 0, 2B or R), -1 padded; nbr_valid bool [S, k].
    nodes int64 [U]: sorted distinct ids of the roots and valid neighbours (the rows read);
    root_idx int64 [R], nbr_idx int64 [S, k] (0 where not valid): positions in ``nodes``.
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

    @property
    def size(self) -> int:
        return int(self.src.size)

    @property
    def negatives(self) -> int:
        return int(self.neg.shape[1])

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Positions in ``nodes`` of ids that the batch reads."""
        return np.searchsorted(self.nodes, ids)


def make_batch(src, dst, t, eid, neg, sampler: TemporalNeighbors | None, k: int,
               sample: str = "all") -> EventBatch:
    """Build an :class:`EventBatch`; ``sample``: whose neighbours to sample, ``all`` roots (TGN),
    ``positive`` (the 2B sources and destinations: APAN delivers mail to them) or ``none`` (JODIE)."""
    src, dst, eid = (np.asarray(a, dtype=np.int64) for a in (src, dst, eid))
    t = np.asarray(t, dtype=np.float64)
    b = src.size
    neg = np.asarray(neg, dtype=np.int64).reshape(b, -1)
    roots = np.concatenate([src, dst, neg.ravel()])
    root_t = np.concatenate([t, t, np.repeat(t, neg.shape[1])])
    s = {"all": roots.size, "positive": 2 * b, "none": 0}[sample]
    if s and k > 0 and sampler is not None:
        nbr, nbr_t, nbr_eid = sampler.most_recent_events(roots[:s], root_t[:s], k)
    else:
        nbr = np.full((s if k > 0 else 0, max(k, 0)), -1, dtype=np.int64)
        nbr_t = np.full(nbr.shape, -1.0)
        nbr_eid = nbr.copy()
    valid = nbr >= 0
    nodes, inv = unique_inverse(np.concatenate([roots, nbr[valid]]))
    nbr_idx = np.zeros(nbr.shape, dtype=np.int64)
    nbr_idx[valid] = inv[roots.size:]
    return EventBatch(src, dst, t, eid, neg, roots, root_t, nbr, nbr_t, nbr_eid, valid, nodes,
                      inv[:roots.size], nbr_idx)
