"""Feature-cache policies over vertex ids (BGL §3.2: static vs dynamic FIFO, plus LRU).

A cache holds up to ``capacity`` vertices' features; only ids are simulated here (what a hit
ratio needs). Batch semantics, as in BGL where cache queries arrive per mini-batch: ``lookup``
first checks the *whole* batch against the state before the batch (the returned hit mask), then
updates the state:

* :class:`StaticCache`: never changes (PaGraph's top-degree cache).
* :class:`FIFOCache`: the batch's distinct misses are inserted in order of first occurrence;
  each insertion evicts the oldest inserted id once full (a ring buffer, BGL's
  ``(tail+1) % S``). Hits do not refresh an id's age. If a batch misses more than ``capacity``
  distinct ids only the last ``capacity`` of them remain, as with one-by-one insertion.
* :class:`LRUCache`: every id of the batch (hit or miss) is touched in batch order; the cache
  then keeps the ``capacity`` ids touched most recently (the same state as touching them one by
  one and evicting the least recently used on each overflow).

Counters count batch elements (pass distinct ids, as a sampled mini-batch's input nodes are):
``hits``, ``misses``, ``lookups = hits + misses`` and ``hit_ratio = hits / lookups``, i.e. BGL's
per-batch ratio "hit nodes / nodes in the batch" weighted by batch size over all batches.

State is direct-mapped by vertex id (BGL's "contiguous 1D array as a HashMap"): arrays of size
N grow on demand to the largest id seen, or are allocated once with ``num_nodes``.

The same policy objects drive the real feature cache of sampled training
(:mod:`dynagnn.train.cache`), so its hit ratio is the simulation's by construction: ``slot_of``
int64 [N] holds the buffer slot of every cached id (valid where ``in_cache``), and after each
``lookup`` ``inserted`` = (ids int64 [k], slots int64 [k]) says which ids went into which slots, so
that the owner of a feature buffer writes exactly those rows.
"""

from __future__ import annotations

import numpy as np

from dynagnn.sortedkeys import sort_groups


def _ids(ids) -> np.ndarray:
    ids = np.asarray(ids, dtype=np.int64).ravel()
    if ids.size and ids.min() < 0:
        raise ValueError("vertex ids must be >= 0")
    return ids


def _grow(a: np.ndarray, n: int, fill) -> np.ndarray:
    if n <= a.size:
        return a
    b = np.full(max(n, 2 * a.size), fill, dtype=a.dtype)
    b[:a.size] = a
    return b


class _Cache:
    """Counters and the grown-on-demand membership array ``in_cache`` bool [N]."""

    def __init__(self, capacity: int, num_nodes: int = 0) -> None:
        if int(capacity) < 0:
            raise ValueError("capacity must be >= 0")
        self.capacity = int(capacity)
        self.in_cache = np.zeros(int(num_nodes), dtype=bool)
        self.slot_of = np.full(int(num_nodes), -1, dtype=np.int64)
        self.inserted = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
        self.hits = 0
        self.misses = 0

    @property
    def lookups(self) -> int:
        return self.hits + self.misses

    @property
    def hit_ratio(self) -> float:
        return self.hits / self.lookups if self.lookups else 0.0

    @property
    def size(self) -> int:
        """Number of ids cached now."""
        return int(np.count_nonzero(self.in_cache))

    def contents(self) -> np.ndarray:
        """int64: the cached ids, sorted."""
        return np.flatnonzero(self.in_cache).astype(np.int64)

    def _ensure(self, ids: np.ndarray) -> None:
        if ids.size:
            self.in_cache = _grow(self.in_cache, int(ids.max()) + 1, False)
            self.slot_of = _grow(self.slot_of, self.in_cache.size, -1)

    def peek(self, ids) -> np.ndarray:
        """bool [M]: whether each id is cached now; changes neither the state nor the counters."""
        ids = _ids(ids)
        hit = np.zeros(ids.size, dtype=bool)
        inside = ids < self.in_cache.size
        hit[inside] = self.in_cache[ids[inside]]
        return hit

    def _count(self, hit: np.ndarray) -> None:
        h = int(np.count_nonzero(hit))
        self.hits += h
        self.misses += hit.size - h

    def lookup(self, ids) -> np.ndarray:
        """bool [M]: whether each id was cached before this batch; then updates the state."""
        ids = _ids(ids)
        self._ensure(ids)
        hit = self.in_cache[ids]
        self._count(hit)
        self._update(ids, hit)
        return hit

    def _update(self, ids: np.ndarray, hit: np.ndarray) -> None:  # pragma: no cover
        raise NotImplementedError


class StaticCache(_Cache):
    """The ``capacity`` vertices of highest ``scores`` (float/int [N], e.g. degree); fixed.

    Ties in score go to the lower vertex id (a stable sort of -score).
    """

    def __init__(self, capacity: int, scores) -> None:
        scores = np.asarray(scores).ravel()
        super().__init__(capacity, scores.size)
        top = np.argsort(-scores, kind="stable")[:self.capacity]
        self.in_cache[top] = True
        self.slot_of[top] = np.arange(top.size, dtype=np.int64)
        self.inserted = (top.astype(np.int64), np.arange(top.size, dtype=np.int64))  # filled once

    def _update(self, ids, hit) -> None:
        self.inserted = (ids[:0], ids[:0])


class FIFOCache(_Cache):
    """BGL's dynamic cache: misses go in, the oldest inserted id goes out (ring buffer)."""

    def __init__(self, capacity: int, num_nodes: int = 0) -> None:
        super().__init__(capacity, num_nodes)
        self.slots = np.full(self.capacity, -1, dtype=np.int64)  # slot -> id (-1 empty)
        self.tail = 0                                            # next slot to (over)write

    def _update(self, ids, hit) -> None:
        if self.capacity == 0:
            self.inserted = (ids[:0], ids[:0])
            return
        miss = ids[~hit]
        order, first = sort_groups(miss)
        miss = miss[np.sort(order[first])]          # distinct, in order of first occurrence
        m = miss.size
        if m > self.capacity:
            self.tail += m - self.capacity
            miss = miss[m - self.capacity:]
        pos = (self.tail + np.arange(miss.size, dtype=np.int64)) % self.capacity
        old = self.slots[pos]
        self.in_cache[old[old >= 0]] = False
        self.slots[pos] = miss
        self.in_cache[miss] = True
        self.slot_of[miss] = pos
        self.inserted = (miss, pos)
        self.tail = (self.tail + miss.size) % self.capacity


class LRUCache(_Cache):
    """Least recently used: a last-used clock per vertex; overflow evicts the oldest by
    ``argpartition`` over the cached ids, once per batch."""

    def __init__(self, capacity: int, num_nodes: int = 0) -> None:
        super().__init__(capacity, num_nodes)
        self.last_used = np.zeros(int(num_nodes), dtype=np.int64)
        self.cached = np.zeros(0, dtype=np.int64)   # the cached ids, unordered
        self.clock = 0

    def _ensure(self, ids) -> None:
        super()._ensure(ids)
        self.last_used = _grow(self.last_used, self.in_cache.size, 0)

    def _update(self, ids, hit) -> None:
        if self.capacity == 0 or ids.size == 0:
            return
        order, first = sort_groups(ids)
        # last occurrence of each distinct id: the element before the next run's start
        last = np.empty(first.size, dtype=bool)
        last[:-1] = first[1:]
        last[-1] = True
        pos = order[last]                           # position of each id's last touch
        uniq = ids[pos]
        self.last_used[uniq] = self.clock + pos     # distinct times: no ties
        self.clock += ids.size
        new = uniq[~self.in_cache[uniq]]
        self.in_cache[new] = True
        cached = np.concatenate([self.cached, new])
        extra = cached.size - self.capacity
        if extra > 0:
            t = self.last_used[cached]
            part = np.argpartition(t, extra)  # extra-th smallest in place: [:extra] the oldest
            self.in_cache[cached[part[:extra]]] = False
            cached = cached[part[extra:]]
        self.cached = cached
