"""ESDG's graph difference between consecutive snapshots (ESDG Sec. 3.2, 6.2; notes/esdg.md §3.2).

Consecutive snapshots share most of their topology but not their values (normalisation and
smoothing change every value). With A_i already on the device, ESDG sends for A_{i+1} only

* the indices of A_i^ext     = edges of A_i not in A_{i+1}   (``removed_row``, ``removed_col``),
* the indices of A_{i+1}^ext = edges of A_{i+1} not in A_i   (``added_row``, ``added_col``),
* all values of A_{i+1}, in A_{i+1}'s sorted (row, col) order (``values``),

and the device rebuilds A^com = A_i minus A_i^ext, indices(A_{i+1}) = A^com ∪ A_{i+1}^ext, then
attaches the values. Set operations work on sorted int64 keys ``row * N + col``.

Byte model (derived in the notes): base = nnz·(b_i + b_v); GD = (|removed| + |added|)·b_i + nnz·b_v,
with b_i = 16 (int64 row + int64 col) and b_v = 4 (float32) for PyTorch COO.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dynagnn.graph.sortedkeys import isin_sorted

Triple = tuple[np.ndarray, np.ndarray, np.ndarray]


def _keys(row: np.ndarray, col: np.ndarray, num_nodes: int) -> np.ndarray:
    return np.asarray(row, dtype=np.int64) * np.int64(num_nodes) + np.asarray(col, dtype=np.int64)


@dataclass
class GraphDiff:
    """What ESDG sends for snapshot i+1 given snapshot i.

    removed_row, removed_col: int64 [n_removed], sorted: indices of A_i^ext.
    added_row, added_col: int64 [n_added], sorted: indices of A_{i+1}^ext.
    values: float32 [nnz_{i+1}]: every value of A_{i+1} in its (row, col) order.
    """

    removed_row: np.ndarray
    removed_col: np.ndarray
    added_row: np.ndarray
    added_col: np.ndarray
    values: np.ndarray

    @property
    def num_removed(self) -> int:
        return int(self.removed_row.shape[0])

    @property
    def num_added(self) -> int:
        return int(self.added_row.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.values.shape[0])


def diff(prev: Triple, nxt: Triple, num_nodes: int) -> GraphDiff:
    """Graph difference from ``prev`` to ``nxt``, each (row, col, val) sorted by (row, col), unique."""
    kp = _keys(prev[0], prev[1], num_nodes)
    kn = _keys(nxt[0], nxt[1], num_nodes)
    removed = ~isin_sorted(kp, kn)
    added = ~isin_sorted(kn, kp)
    pr, pc = np.asarray(prev[0], np.int64), np.asarray(prev[1], np.int64)
    nr, nc = np.asarray(nxt[0], np.int64), np.asarray(nxt[1], np.int64)
    return GraphDiff(pr[removed], pc[removed], nr[added], nc[added],
                     np.asarray(nxt[2], dtype=np.float32).copy())


def apply(prev_row: np.ndarray, prev_col: np.ndarray, d: GraphDiff, num_nodes: int) -> Triple:
    """Rebuild the next snapshot's (row, col, val), sorted by (row, col), from the previous
    snapshot's indices and a :class:`GraphDiff` (the device side of ESDG's GD transfer)."""
    kp = _keys(prev_row, prev_col, num_nodes)
    common = kp[~isin_sorted(kp, _keys(d.removed_row, d.removed_col, num_nodes))]
    keys = np.concatenate([common, _keys(d.added_row, d.added_col, num_nodes)])
    keys.sort(kind="stable")
    if keys.shape[0] != d.nnz:
        raise ValueError(f"diff does not fit the previous snapshot: {keys.shape[0]} indices for "
                         f"{d.nnz} values")
    n = np.int64(num_nodes)
    return keys // n, keys % n, d.values.copy()


def full_bytes(nnz: int, index_bytes: int = 16, value_bytes: int = 4) -> int:
    """Bytes to send a snapshot as (index, value) pairs, ESDG's base: nnz·(b_i + b_v)."""
    return int(nnz) * (index_bytes + value_bytes)


def diff_bytes(d: GraphDiff, index_bytes: int = 16, value_bytes: int = 4) -> int:
    """Bytes to send a :class:`GraphDiff`: (|removed| + |added|)·b_i + nnz_{i+1}·b_v."""
    return (d.num_removed + d.num_added) * index_bytes + d.nnz * value_bytes
