"""The union graph of a snapshot store: every edge that appears in any snapshot, once.

One static graph stands for the whole dynamic graph where a method needs a single topology: the
vertex partitioners of the analyze stage (:mod:`dynagnn.analysis.partitions`, and through it the
communication-volume and cache tables) cut it, and sampled training
(:mod:`dynagnn.train.strategies.sampled`) samples neighbourhoods from it. It is a graph operation
on the store's edges, so it sits in the graph layer, below both of its users.
"""

from __future__ import annotations

import numpy as np

from dynagnn.sortedkeys import unique_sorted


def union_graph(store) -> tuple[np.ndarray, np.ndarray]:
    """(row, col) of the union of all snapshots' edges, symmetrised, sorted, without self-loops.

    ``store``: a :class:`~dynagnn.data.store.SnapshotStore`, read in eight windows of consecutive
    snapshots (one slice of the edge arrays each).
    """
    n = store.num_nodes
    keys = []
    step = max(1, store.num_snapshots // 8)
    for t0 in range(0, store.num_snapshots, step):
        for r, c, _ in store.window_edges(t0, min(store.num_snapshots, t0 + step)):
            keep = r != c
            keys.append(r[keep] * n + c[keep])
            keys.append(c[keep] * n + r[keep])
    u = unique_sorted(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
    return u // n, u % n
