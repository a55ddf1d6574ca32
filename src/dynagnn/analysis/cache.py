"""Feature-cache hit ratios of sampled mini-batch training (BGL Fig 5b analogue).

Every (order, epoch) draws the mini-batches once: training nodes in that order, sliced into
batches of ``batch_size``, each expanded by a seeded :class:`NeighborSampler` into its input
nodes; the same input-node stream is then fed to every (policy, capacity) cache, so policies and
capacities are compared on identical lookups. Capacity = round(fraction * N) vertices.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dynagnn.errors import ConfigError
from dynagnn.graph.order import ORDERS, EpochOrders
from dynagnn.graph.sample import NeighborSampler, batch_rng
from dynagnn.sortedkeys import row_offsets
from dynagnn.graph.cache import FIFOCache, LRUCache, StaticCache

POLICIES = ("static", "fifo", "lru")


def _make_cache(policy: str, capacity: int, degree: np.ndarray):
    if policy == "static":
        return StaticCache(capacity, degree)
    if policy == "fifo":
        return FIFOCache(capacity, degree.size)
    if policy == "lru":
        return LRUCache(capacity, degree.size)
    raise ConfigError(f"unknown cache policy {policy!r}: expected one of {POLICIES}")


def cache_hit_table(indptr, indices, train_nodes, *, batch_size: int = 1024,
                    fanouts=(15, 10, 5), fractions=(0.01, 0.05, 0.1, 0.2, 0.5),
                    policies=POLICIES, orders=ORDERS, epochs: int = 1,
                    seed: int = 0, sequences: int | None = None) -> pd.DataFrame:
    """One row per (order, policy, fraction): capacity, hit_ratio, hits, misses, lookups,
    batches.

    indptr int64 [N+1], indices int64 [nnz]: CSR of the graph; train_nodes int64 [T] distinct.
    Epoch e orders the training nodes by :class:`~dynagnn.graph.order.EpochOrders` and samples its
    batch b with :func:`~dynagnn.graph.sample.batch_rng` (seed, e, b), as sampled training does, so
    the two see the same lookups (``sequences``: the proximity order's BFS sequences, as training's
    shuffling-error check chose them; None: the order's default). Caches persist across epochs (warm
    from epoch 2). Static scores are vertex degrees.
    """
    indptr = np.asarray(indptr, dtype=np.int64)
    indices = np.asarray(indices, dtype=np.int64)
    train = np.asarray(train_nodes, dtype=np.int64).ravel()
    if int(batch_size) < 1:
        raise ConfigError("batch_size must be >= 1")
    for o in orders:
        if o not in ORDERS:
            raise ConfigError(f"unknown order {o!r}: expected one of {ORDERS}")
    for p in policies:
        if p not in POLICIES:
            raise ConfigError(f"unknown cache policy {p!r}: expected one of {POLICIES}")
    n = indptr.size - 1
    degree = np.diff(indptr)
    rows = []
    for order in orders:
        sampler = NeighborSampler(indptr, indices, fanouts, seed=seed)
        caches = {(p, f): _make_cache(p, int(round(f * n)), degree)
                  for p in policies for f in fractions}
        batches = 0
        orders = EpochOrders(order, indptr, indices, train, seed, sequences)
        for e in range(int(epochs)):
            seq = orders(e)
            for b, b0 in enumerate(range(0, seq.size, int(batch_size))):
                ids = sampler.input_nodes(seq[b0:b0 + int(batch_size)], batch_rng(seed, e, b))
                batches += 1
                for c in caches.values():
                    c.lookup(ids)
        for (p, f), c in caches.items():
            rows.append(dict(order=order, policy=p, fraction=float(f), capacity=c.capacity,
                             hit_ratio=c.hit_ratio, hits=c.hits, misses=c.misses,
                             lookups=c.lookups, batches=batches))
    return pd.DataFrame(rows, columns=["order", "policy", "fraction", "capacity", "hit_ratio",
                                       "hits", "misses", "lookups", "batches"])


def store_cache_table(store_path, client=None, *, train_fraction: float = 0.1, batch_size: int = 256,
                      fanouts=(15, 10, 5), fractions=(0.01, 0.05, 0.1, 0.2, 0.5), epochs: int = 3,
                      seed: int = 0) -> pd.DataFrame:
    """The hit-ratio table of a store's union graph, with a seeded ``train_fraction`` of the vertices
    that have an edge as training nodes, over ``epochs`` epochs (the caches persist, as in training:
    over one epoch of few batches a cache that starts empty can only miss); one Dask task per order
    when a client is given."""
    from dynagnn.analysis.partitions import union_graph
    from dynagnn.data.store import open_store

    store = open_store(store_path)
    row, col = union_graph(store)
    n = store.num_nodes
    indptr = row_offsets(row, n)
    candidates = np.flatnonzero(np.diff(indptr) > 0)
    if candidates.size == 0:
        raise ConfigError(f"{store_path}: no vertex has an edge, so there is nothing to sample")
    rng = np.random.default_rng(seed)
    train = np.sort(rng.choice(candidates, max(1, int(round(train_fraction * candidates.size))), replace=False))
    kw = dict(batch_size=batch_size, fanouts=tuple(fanouts), fractions=tuple(fractions), epochs=int(epochs), seed=seed)
    if client is None:
        return cache_hit_table(indptr, col, train, **kw)
    graph = client.scatter((indptr, col, train), broadcast=True)
    futures = [client.submit(lambda g, o: cache_hit_table(*g, orders=(o,), **kw), graph, order, pure=False)
               for order in ORDERS]
    return pd.concat([f.result() for f in futures], ignore_index=True)
