"""Contiguous splits of a sequence of T items (snapshots, snapshot groups, time steps) into P parts.

Two splits, each written once:

- :func:`even_ranges`: ESDG's even split, part sizes differ by at most one (the first T mod P parts
  are the larger ones). ESDG's snapshot partition, BLAD-Even's group split, the engine's
  checkpoint blocks and the analysis tables all cut this way.
- :func:`minmax_ranges`: the contiguous split minimising the largest summed cost of a part (the
  "linear partition" problem): BLAD's inter-worker level, in the schedule stage's plans and in
  the analysis stage's partition and volume tables.

They sit below every package (with :mod:`dynagnn.errors`): the schedule stage plans with them, and
the analysis stage, which may not import another stage, measures the same splits.
"""

from __future__ import annotations

import numpy as np

from .errors import InputError


def check_split(n: int, parts: int) -> tuple[int, int]:
    n, parts = int(n), int(parts)
    if parts < 1:
        raise InputError(f"number of workers P must be >= 1, got {parts}")
    if parts > n:
        raise InputError(f"cannot split {n} snapshots into P={parts} non-empty groups (need P <= T)")
    return n, parts


def even_sizes(n: int, parts: int) -> list[int]:
    """Part sizes of the even split of ``n`` items into ``parts`` contiguous parts, the first n mod P
    one larger; parts beyond ``n`` are empty (a training step with fewer snapshots than workers)."""
    q, r = divmod(int(n), int(parts))
    return [q + (i < r) for i in range(int(parts))]


def even_bounds(n: int, parts: int) -> np.ndarray:
    """int64 [P+1] cut points of the even split of ``n`` items into ``parts`` non-empty parts."""
    n, parts = check_split(n, parts)
    return np.concatenate([[0], np.cumsum(even_sizes(n, parts))]).astype(np.int64)


def even_ranges(n: int, parts: int) -> list[tuple[int, int]]:
    """The even split as ``parts`` half-open ranges ``(a, b)``; InputError unless 1 <= parts <= n."""
    b = even_bounds(n, parts)
    return [(int(b[i]), int(b[i + 1])) for i in range(len(b) - 1)]


def _greedy_bounds(c: np.ndarray, parts: int, cap: float) -> list[int] | None:
    """Cut the prefix sums ``c`` [T+1] into at most ``parts`` contiguous parts of sum <= cap, each as
    long as possible but leaving at least one item per remaining part; None if infeasible."""
    n = c.size - 1
    bounds = [0]
    start = 0
    tol = cap * 1e-12
    for k in range(parts):
        if start == n:
            break
        end = int(np.searchsorted(c, c[start] + cap + tol, side="right")) - 1
        end = min(end, n - (parts - k - 1))
        if end <= start:
            return None
        bounds.append(end)
        start = end
    return bounds if start == n else None


def minmax_bounds(costs, parts: int) -> np.ndarray:
    """int64 [P+1] cut points of ``parts`` contiguous non-empty parts of ``costs`` (float [T], finite,
    non-negative) whose largest summed cost is the least possible.

    Bisection on the bottleneck B between max(costs) and sum(costs): feasible(B) cuts greedily, each
    part as long as it may be. The optimum is a sum of consecutive costs, so once the bracket is
    narrower than float resolution the greedy cut at its upper end is optimal. O(P log T) per test,
    at most 200 tests. Fewer than P greedy parts are filled to P by splitting the longest part,
    which never raises the maximum.
    """
    costs = np.asarray(costs, dtype=np.float64).ravel()
    _, parts = check_split(costs.size, parts)
    if not np.all(np.isfinite(costs)) or (costs < 0).any():
        raise InputError("snapshot costs must be finite and non-negative")
    c = np.concatenate([[0.0], np.cumsum(costs)])
    lo, hi = float(costs.max()), float(c[-1])
    best = _greedy_bounds(c, parts, hi)
    for _ in range(200):
        if hi - lo <= max(abs(hi), 1e-300) * 1e-15:
            break
        mid = 0.5 * (lo + hi)
        b = _greedy_bounds(c, parts, mid)
        if b is None:
            lo = mid
        else:
            hi, best = mid, b
    assert best is not None
    while len(best) - 1 < parts:
        w = int(np.argmax(np.diff(best)))
        best.insert(w + 1, best[w] + 1)
    return np.asarray(best, dtype=np.int64)


def minmax_ranges(costs, parts: int) -> list[tuple[int, int]]:
    """:func:`minmax_bounds` as ``parts`` half-open ranges ``(a, b)``."""
    b = minmax_bounds(costs, parts)
    return [(int(b[i]), int(b[i + 1])) for i in range(len(b) - 1)]
