"""Set operations on sorted int64 arrays (edge keys ``row * N + col``, node ids), and CSR row offsets.

Sort + neighbour compare and binary search: np.unique and np.isin of numpy 2.3+ are up to two
orders of magnitude slower on large int64 arrays (13 s against 0.07 s for 12M values here).
"""

from __future__ import annotations

import numpy as np


def unique_sorted(x: np.ndarray, *, in_place: bool = False) -> np.ndarray:
    """Sorted distinct values of the 1-D array x (sorted in place when ``in_place``)."""
    s = x if in_place else x.copy()
    s.sort()
    if s.size == 0:
        return s
    first = np.empty(s.size, dtype=bool)
    first[0] = True
    np.not_equal(s[1:], s[:-1], out=first[1:])
    return s[first]


def isin_sorted(x: np.ndarray, sorted_set: np.ndarray) -> np.ndarray:
    """Bool [len(x)]: whether each value of x is in the sorted array ``sorted_set``."""
    if sorted_set.size == 0:
        return np.zeros(x.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_set, x), sorted_set.size - 1)
    return sorted_set[pos] == x


def intersection_size(a: np.ndarray, b: np.ndarray) -> int:
    """|a ∩ b| for two sorted arrays of distinct values (the smaller is searched in the larger)."""
    if a.size > b.size:
        a, b = b, a
    return int(np.count_nonzero(isin_sorted(a, b)))


def sort_groups(x: np.ndarray, stable: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Stable sort of the 1-D array x, split into runs of equal values.

    Returns (order int64 [n], first bool [n]): ``x[order]`` is sorted, equal values keep their
    input order (argsort kind="stable"), and ``first[i]`` is True where ``x[order][i]`` starts a
    new run. The building block of :func:`unique_inverse` and of per-group reductions (the last
    element of each run is the last occurrence of that value in x). ``stable`` False: equal values
    in any order, by numpy's default SIMD sort, 4-5x faster on a few thousand keys (numpy 2.4).
    """
    order = np.argsort(x, kind="stable" if stable else None)
    first = np.empty(order.size, dtype=bool)
    if order.size:
        s = x[order]
        first[0] = True
        np.not_equal(s[1:], s[:-1], out=first[1:])
    return order, first


def unique_inverse(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Same as ``np.unique(x, return_inverse=True)`` for a 1-D x, sort-based (much faster).

    Returns (uniq [U] sorted distinct values, inverse int64 [n]) with ``uniq[inverse] == x``.
    """
    x = np.asarray(x)
    # unstable: the order among equal values changes neither output
    order, first = sort_groups(x, stable=False)
    inverse = np.empty(x.size, dtype=np.int64)
    inverse[order] = np.cumsum(first) - 1
    return x[order[first]], inverse


def row_offsets(row: np.ndarray, num_nodes: int) -> np.ndarray:
    """CSR row offsets int64 [N+1] of the rows of edges sorted by row, with one bincount."""
    ptr = np.zeros(int(num_nodes) + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=int(num_nodes)), out=ptr[1:])
    return ptr
