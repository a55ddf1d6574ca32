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

from dynagnn.graph.sliced import segment_sum_sorted
from dynagnn.sortedkeys import isin_sorted

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
    if len(edge_lists) == 0:
        raise ValueError("split_frame needs at least one snapshot")
    keys = [edge_keys(r, c, num_nodes) for r, c, _ in edge_lists]
    over = keys[0]
    for k in keys[1:]:
        if over.size == 0:
            break
        over = over[isin_sorted(over, k)]
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
