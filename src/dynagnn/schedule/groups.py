"""Inter-worker level of BLAD's two-level scheduler (BLAD §5.1): snapshot groups to workers.

A *snapshot group* is the unit of work of one training step (BLAD Eq. 1): to train snapshot g the
model runs the GNN on the ``group_len`` snapshots g-group_len+1 .. g and the RNN along them.
Groups have stride 1 (one group per trainable snapshot), so adjacent groups share group_len-1
snapshots and a snapshot's cost is paid once per group that contains it.

    group g  =  (S_{g-k+1}, ..., S_g),   g = k-1 .. T-1,   k = group_len,   G = T - k + 1 groups
    W_g      =  sum_{t in group g} (fwd[t] + bwd[t])          (predicted seconds)

Note on BLAD's indices: Eq. 1 writes t = S-l .. S (l+1 snapshots) while §5.2 calls ``group`` "the size
of the snapshots in one group"; here ``group_len`` is the number of snapshots in a group. The first
k-1 snapshots are context only (no group ends on them).

BLAD never splits a group across GPUs, so the only inter-GPU traffic is the gradient all-reduce
(Table 3), and each GPU's groups are *contiguous* ranges of target snapshots (Fig. 9a: "GPU 0
processes the snapshot groups corresponding to G_T and G_{T+1}, while GPU n handles the groups
corresponding to G_{T+2n-1} and G_{T+2n}"); a contiguous range also lets a worker load each snapshot
once for all its overlapping groups. The paper does not print the balancing rule; we take the
exact min-max contiguous partition of the group loads (the "linear partition" problem, solved by
bisection on the bottleneck with a greedy feasibility test over prefix sums, exact up to float
resolution and checked against brute force in the tests). ``strategy="lpt"`` is an extra,
non-contiguous option (longest-processing-time first), not BLAD's.

The baseline is ESDG-style even splitting: equal group counts per worker, contiguous
(``even_plan``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError
from ..splits import even_bounds, minmax_bounds


def _as_costs(fwd, bwd) -> tuple[np.ndarray, np.ndarray]:
    fwd = np.asarray(fwd, dtype=np.float64)
    bwd = np.asarray(bwd, dtype=np.float64)
    if fwd.ndim != 1 or bwd.shape != fwd.shape:
        raise ConfigError(f"per-snapshot costs: expected two 1-D arrays of equal length, got fwd {fwd.shape} "
                          f"and bwd {bwd.shape}")
    if not (np.all(np.isfinite(fwd)) and np.all(np.isfinite(bwd))) or (fwd < 0).any() or (bwd < 0).any():
        raise ConfigError("per-snapshot costs: expected finite, non-negative predicted times (seconds)")
    return fwd, bwd


def num_groups(num_snapshots: int, group_len: int) -> int:
    """G = T - group_len + 1; ConfigError if the group length does not fit."""
    if group_len < 1:
        raise ConfigError(f"group_len: expected >= 1, got {group_len}")
    if group_len > num_snapshots:
        raise ConfigError(f"group_len: {group_len} snapshots per group but the store has only "
                          f"{num_snapshots} snapshots")
    return num_snapshots - group_len + 1


def group_ids(num_snapshots: int, group_len: int) -> np.ndarray:
    """Ids of all groups: the index of each group's last (target) snapshot, int64 [G]."""
    return np.arange(group_len - 1, num_snapshots, dtype=np.int64)


def group_members(group: int, group_len: int) -> np.ndarray:
    """Snapshots of group ``group`` in time order, int64 [group_len]."""
    return np.arange(group - group_len + 1, group + 1, dtype=np.int64)


def group_costs(fwd, bwd, group_len: int, groups=None, tail: dict | None = None,
                head_column: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """BLAD's l(i, j) and b(i, j): forward/backward time of the j-th snapshot of the i-th group.

    fwd, bwd: float [T] per-snapshot predicted seconds; groups: group ids (default all, in order);
    tail: {group id: seconds} of the work after a group's last snapshot (the task's loss and head,
    forward and backward), which p2 runs: added to the last snapshot's forward, or, with
    ``head_column``, as a column k+1 of its own (backward 0), so that a split may give p1 every
    snapshot and p2 the head alone. A value may also be a pair (lead, tail): ``lead`` seconds of the
    loss's inputs, which p1 prepares, added to the group's first snapshot (always p1's). Returns two
    float64 arrays [len(groups), group_len (+ 1 with head_column)].
    """
    fwd, bwd = _as_costs(fwd, bwd)
    num_groups(fwd.shape[0], group_len)
    g = group_ids(fwd.shape[0], group_len) if groups is None else np.asarray(groups, dtype=np.int64)
    if g.size and (g.min() < group_len - 1 or g.max() >= fwd.shape[0]):
        raise ConfigError(f"groups: ids must lie in [{group_len - 1}, {fwd.shape[0] - 1}]")
    idx = g[:, None] + np.arange(-group_len + 1, 1)[None, :]
    l, b = fwd[idx], bwd[idx]
    lead, after = _extras(tail, g)
    l[:, 0] += lead
    if head_column:
        return np.concatenate([l, after[:, None]], axis=1), np.concatenate([b, np.zeros((g.size, 1))], axis=1)
    l[:, -1] += after
    return l, b


def _extras(tail: dict | None, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lead, tail) seconds of each group (0 for a group ``tail`` does not name; a plain number is
    a tail alone): see group_costs."""
    tail = tail or {}
    pairs = [tail.get(int(g), 0.0) for g in ids]
    out = np.array([p if isinstance(p, (tuple, list)) else (0.0, p) for p in pairs], dtype=np.float64).reshape(-1, 2)
    if (out < 0).any() or not np.isfinite(out).all():
        raise ConfigError("group tail costs: expected finite, non-negative seconds")
    return out[:, 0], out[:, 1]


def group_loads(fwd, bwd, group_len: int) -> np.ndarray:
    """W_g = sum over the group's snapshots of fwd + bwd, float64 [G] (one prefix sum)."""
    fwd, bwd = _as_costs(fwd, bwd)
    num_groups(fwd.shape[0], group_len)
    c = np.concatenate([[0.0], np.cumsum(fwd + bwd)])
    return c[group_len:] - c[:-group_len]


def imbalance(loads) -> float:
    """max / mean of per-worker loads (1.0 is perfect balance; 1.0 when all loads are zero)."""
    loads = np.asarray(loads, dtype=np.float64)
    mean = loads.mean() if loads.size else 0.0
    return float(loads.max() / mean) if mean > 0 else 1.0


def sync_fraction(loads) -> float:
    """Share of all workers' time spent waiting at the gradient all-reduce when all start together:
    sum(max - load) / (P * max)."""
    loads = np.asarray(loads, dtype=np.float64)
    mx = loads.max() if loads.size else 0.0
    return float((mx - loads).sum() / (loads.size * mx)) if mx > 0 else 0.0


def sync_ratio(loads) -> float:
    """BLAD's synchronisation ratio (Fig. 5, Fig. 18): (max - min) / max, the difference between the
    slowest and fastest worker normalised to the slowest (for 2 GPUs, exactly the paper's)."""
    loads = np.asarray(loads, dtype=np.float64)
    mx = loads.max() if loads.size else 0.0
    return float((mx - loads.min()) / mx) if mx > 0 else 0.0


@dataclass
class GroupPlan:
    """Groups per worker. ``workers[w]`` lists group ids (target snapshot index) in training order;
    ``loads[w]`` is the predicted time of worker w (seconds)."""

    group_len: int
    num_snapshots: int
    strategy: str
    workers: list[list[int]]
    loads: np.ndarray = field(repr=False)

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    @property
    def imbalance(self) -> float:
        return imbalance(self.loads)

    def to_dict(self) -> dict:
        return {"group_len": self.group_len, "num_snapshots": self.num_snapshots, "strategy": self.strategy,
                "workers": [list(map(int, w)) for w in self.workers], "loads": [float(x) for x in self.loads],
                "imbalance": self.imbalance}

    @classmethod
    def from_dict(cls, d: dict) -> "GroupPlan":
        return cls(group_len=int(d["group_len"]), num_snapshots=int(d["num_snapshots"]), strategy=str(d["strategy"]),
                   workers=[[int(g) for g in w] for w in d["workers"]], loads=np.asarray(d["loads"], dtype=np.float64))


def _check_workers(num_workers: int, G: int, group_len: int) -> None:
    if num_workers < 1:
        raise ConfigError(f"workers: expected >= 1, got {num_workers}")
    if num_workers > G:
        raise ConfigError(f"workers: {num_workers} workers but only {G} snapshot groups of {group_len} "
                          f"snapshots; BLAD never splits a group, so use at most {G} workers")


def _plan_from_bounds(bounds: np.ndarray, ids: np.ndarray, W: np.ndarray, group_len: int, T: int,
                      strategy: str) -> GroupPlan:
    c = np.concatenate([[0.0], np.cumsum(W)])
    workers = [ids[bounds[w]:bounds[w + 1]].tolist() for w in range(len(bounds) - 1)]
    loads = c[bounds[1:]] - c[bounds[:-1]]
    return GroupPlan(group_len, T, strategy, workers, loads)


def _selected(fwd, bwd, group_len: int, groups, tail: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ids, loads) of the groups to plan: all (None) or the given ids, which must be increasing and
    in range (the training windows of a run are a contiguous, increasing range of target snapshots)."""
    W = group_loads(fwd, bwd, group_len)
    ids = group_ids(fwd.size, group_len)
    W = W + sum(_extras(tail, ids))
    if groups is None:
        return ids, W
    g = np.asarray(groups, dtype=np.int64).reshape(-1)
    if g.size == 0 or (np.diff(g) <= 0).any() or g[0] < group_len - 1 or g[-1] >= fwd.size:
        raise ConfigError(f"groups: expected increasing group ids in [{group_len - 1}, {fwd.size - 1}], got "
                          f"{g[:3].tolist()}..{g[-3:].tolist()} ({g.size})")
    return g, W[g - (group_len - 1)]


def even_plan(fwd, bwd, group_len: int, num_workers: int, groups=None, tail: dict | None = None) -> GroupPlan:
    """ESDG-style baseline: equal group counts per worker (the first G mod P workers get one more),
    contiguous in time. ``groups``: the group ids to plan (default all); ``tail``: see group_costs."""
    fwd, bwd = _as_costs(fwd, bwd)
    ids, W = _selected(fwd, bwd, group_len, groups, tail)
    _check_workers(num_workers, W.size, group_len)
    return _plan_from_bounds(even_bounds(W.size, num_workers), ids, W, group_len, fwd.size, "even")


def balanced_plan(fwd, bwd, group_len: int, num_workers: int, strategy: str = "contiguous",
                  groups=None, tail: dict | None = None) -> GroupPlan:
    """BLAD's inter-GPU partition: whole groups per worker, predicted loads balanced.

    strategy "contiguous" (default, BLAD Fig. 9a): the min-max contiguous partition, every worker
    non-empty (:func:`dynagnn.splits.minmax_bounds`).
    strategy "lpt": longest-processing-time-first list scheduling (not contiguous; 4/3-approximate).
    """
    fwd, bwd = _as_costs(fwd, bwd)
    T = fwd.size
    ids, W = _selected(fwd, bwd, group_len, groups, tail)
    _check_workers(num_workers, W.size, group_len)
    if strategy == "lpt":
        order = np.argsort(-W, kind="stable")
        loads = np.zeros(num_workers)
        members: list[list[int]] = [[] for _ in range(num_workers)]
        for g in order:
            w = int(np.argmin(loads))
            loads[w] += W[g]
            members[w].append(int(ids[g]))
        return GroupPlan(group_len, T, "lpt", [sorted(m) for m in members], loads)
    if strategy != "contiguous":
        raise ConfigError(f"strategy: expected 'contiguous' or 'lpt', got {strategy!r}")
    return _plan_from_bounds(minmax_bounds(W, num_workers), ids, W, group_len, T, "contiguous")


def plan_groups(fwd, bwd, group_len: int, num_workers: int, strategy: str = "contiguous",
                groups=None, tail: dict | None = None) -> GroupPlan:
    """Dispatch: strategy in {"even", "contiguous", "lpt"}; ``groups``: the ids to plan (default all);
    ``tail``: {group id: seconds after its last snapshot} (see group_costs)."""
    if strategy == "even":
        return even_plan(fwd, bwd, group_len, num_workers, groups, tail)
    return balanced_plan(fwd, bwd, group_len, num_workers, strategy, groups, tail)
