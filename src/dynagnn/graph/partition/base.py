"""What the vertex partitioners share: argument checks, CSR neighbour gathering and the
(vertex, remote part) pairs that every communication measure counts."""

from __future__ import annotations

import numpy as np

from dynagnn.errors import InputError
from dynagnn.sortedkeys import unique_sorted


def check_parts(N: int, P: int) -> tuple[int, int]:
    N, P = int(N), int(P)
    if N < 0:
        raise InputError(f"number of vertices N must be >= 0, got {N}")
    if P < 1:
        raise InputError(f"number of parts P must be >= 1, got {P}")
    if P > N:
        raise InputError(f"cannot split {N} vertices into P={P} non-empty parts (need P <= N)")
    return N, P


def check_edges(row, col, N: int) -> tuple[np.ndarray, np.ndarray]:
    row = np.asarray(row, dtype=np.int64).ravel()
    col = np.asarray(col, dtype=np.int64).ravel()
    if row.shape != col.shape:
        raise InputError(f"row and col differ in length ({row.size} vs {col.size})")
    if row.size and (min(row.min(), col.min()) < 0 or max(row.max(), col.max()) >= N):
        raise InputError(f"edge endpoint out of range [0, {N})")
    return row, col


def gather(ptr: np.ndarray, col: np.ndarray, verts: np.ndarray) -> np.ndarray:
    """Concatenated neighbour lists of ``verts`` (CSR ``ptr, col``), vectorised."""
    starts, ends = ptr[verts], ptr[verts + 1]
    lens = ends - starts
    total = int(lens.sum())
    if total == 0:
        return np.empty(0, dtype=np.int64)
    offs = np.repeat(starts - np.cumsum(lens) + lens, lens)
    return col[offs + np.arange(total, dtype=np.int64)]


def remote_pairs(row: np.ndarray, col: np.ndarray, parts: np.ndarray, P: int) -> np.ndarray:
    """Sorted distinct keys ``v * P + q``: vertex v has a neighbour in part q != parts[v]."""
    pc = parts[col]
    cross = parts[row] != pc
    return unique_sorted(row[cross] * P + pc[cross], in_place=True)
