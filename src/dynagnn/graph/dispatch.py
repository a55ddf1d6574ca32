r"""Sven's redundancy-free dispatch (Xia et al., HPDC'23 / TPDS; notes §3-4): which rows a worker
asks each owner for, each distinct row once, and how the answer is scattered back.

The analysis of redundancy (:mod:`dynagnn.analysis.redundancy`) and the distributed training of
memory-based TGNNs (:mod:`dynagnn.train.strategies.tgnn`) share this code: the first counts what
the second sends.

* :func:`redundancy_free` is Algorithm 2: the distinct vertices 𝓥_u of a series of occurrences, the
  dispatch index Ψ (``unique[Ψ] == occurrences``) and the aggregation index Φ (each vertex's last
  occurrence, the one "most recent" aggregation keeps).
* :func:`plan_requests` turns the ids a worker needs into what it asks each owner for, grouped by
  owner: with ``dedupe`` each distinct id once (Sven), else every occurrence (DepComm's per-event
  fetch), and the index that restores the per-occurrence rows from the answers.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dynagnn.sortedkeys import sort_groups


class RedundancyFree(NamedTuple):
    """Algorithm 2's output for one flattened series V_o of n occurrences (a NamedTuple:
    ``unique, inverse, latest = redundancy_free(v)``).

    unique: [U] distinct vertices 𝓥_u (C: 𝓘nr's targets), sorted.
    inverse: int64 [n] Ψ, the dispatch location index: ``unique[inverse] == V_o``, so the
      per-occurrence input is restored as X_o = X_u[Ψ].
    latest: int64 [U] Φ, the aggregation location index: for each unique vertex the index (of the
      occurrence, or of its interaction ξ_j when ``interaction`` was given) of its last
      occurrence in chronological order — the only one aggregation keeps ("most recent" agg).
    """

    unique: np.ndarray
    inverse: np.ndarray
    latest: np.ndarray


def redundancy_free(vertices: np.ndarray, interaction: np.ndarray | None = None) -> RedundancyFree:
    """Sven's Algorithm 2 (redundancy-free graph organisation), sort-based in O(n log n).

    vertices: int [n], V_o in chronological order. interaction: int [n] or None, the index j of
    the interaction ξ_j each occurrence belongs to (e.g. ``arange(n) // 2`` for an interleaved
    src/dst batch); None means the occurrence index itself. Φ takes the maximum of it per vertex,
    which is the last occurrence whenever ``interaction`` is non-decreasing.
    """
    vertices = np.asarray(vertices)
    n = vertices.size
    order, first = sort_groups(vertices)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    starts = np.flatnonzero(first)
    unique = vertices[order[starts]]
    if n == 0:
        return RedundancyFree(unique, inverse, np.empty(0, dtype=np.int64))
    if interaction is None:
        # stable sort: the last element of each run is the vertex's last occurrence
        ends = np.append(starts[1:], n) - 1
        latest = order[ends].astype(np.int64)
    else:
        latest = np.maximum.reduceat(np.asarray(interaction, dtype=np.int64)[order], starts)
    return RedundancyFree(unique, inverse, latest)



class Requests(NamedTuple):
    """What one worker asks the owners for (``plan_requests``).

    ids: int64 [R] the ids asked, grouped by owner rank (ascending); within an owner's group
      ascending ids (deduplicated) or the occurrences in their order (not deduplicated).
    counts: int64 [P] ids asked of each rank (its own rank included: those rows are read locally,
      nothing is sent for them).
    inverse: int64 [n] for each occurrence, the row of the answer [R, ...] holding it:
      ``answer[inverse]`` is the per-occurrence table.
    """

    ids: np.ndarray
    counts: np.ndarray
    inverse: np.ndarray


def plan_requests(ids: np.ndarray, owner: np.ndarray, world: int, dedupe: bool = True) -> Requests:
    """The requests for the rows of ``ids`` (int [n], in any order, repeats allowed) of a table
    partitioned by ``owner`` (int [N], each id's rank in 0..world-1)."""
    ids = np.asarray(ids, dtype=np.int64)
    owner = np.asarray(owner, dtype=np.int64)
    if dedupe:
        unique, inverse, _ = redundancy_free(ids)
    else:
        unique, inverse = ids, np.arange(ids.size, dtype=np.int64)
    ranks = owner[unique]
    order = np.argsort(ranks, kind="stable")  # ascending ids stay ascending within an owner
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size)
    counts = np.bincount(ranks, minlength=int(world)).astype(np.int64)
    return Requests(unique[order], counts, position[inverse])
