r"""Intra-worker level of BLAD's scheduler (BLAD §5.2): split each snapshot group between two
co-located processes, with the queue of deferred backward passes, by an exact dynamic programme.

The pipeline (BLAD §5.2.1, Fig. 9), modelled precisely
------------------------------------------------------
A worker trains its groups i = 1..m in a fixed order; each group has k = ``group_len`` snapshots,
with predicted forward times l(i, j) and backward times b(i, j), j = 1..k. The split p_i says that
process p1 runs snapshots 1..p_i of group i and process p2 runs p_i+1..k. Per group there are
three tasks:

    FA_i  on p1: forward of snapshots 1..p_i               a_i = sum_{j<=p_i} l(i, j)
    Q_i   on p2: forward of p_i+1..k, the loss, and the     q_i = sum_{j>p_i} (l(i, j) + b(i, j))
                 backward of p_i+1..k
    BA_i  on p1: backward of snapshots 1..p_i               c_i = sum_{j<=p_i} b(i, j)

with the dependencies FA_i -> Q_i (p1 hands the hidden state over) and Q_i -> BA_i (p2 hands the
gradient back). BLAD takes the hand-over as free ("negligible"); here it may cost the receiver
the time to take the message (``recv``, from the measured channel, :mod:`dynagnn.cost.link`): p2's
receipt of the state (or, at split k, the last embedding) and of the loss's inputs is added to q_i,
p1's receipt of the gradient to c_i, each depending on the split (:func:`receive_costs`). Each process
runs one task at a time, without pre-emption, as soon as its next task is ready:

* p2 serves hand-overs first in, first out: Q_1, Q_2, ..., Q_m.
* p1 keeps the queue q of groups whose forward it finished but whose backward waits for the
  gradient (BLAD's "snapshot group queue"). After a forward it starts the next group's forward at
  once (BLAD: "begins training sg_{i+1} immediately") unless q already holds two groups or no
  forward is left; then it pulls the oldest group from q and runs its backward, waiting for the
  gradient if it has not arrived. So p1 runs FA_1, FA_2, BA_1, FA_3, BA_2, ..., FA_m, BA_{m-1},
  BA_m: one forward of warm-up, then one-forward-one-backward (the PipeDream-style order BLAD cites
  as [31], and the order Eq. 2's periods pair up).

``simulate`` plays this out event by event (a heap of task completions and hand-over messages; the
optional trace records who ran what when and how long p1's backward waited).

Deeper queues (our extension). BLAD's queue holds two groups. With a queue of d groups p1 runs d - 1
forwards of warm-up (FA_1 .. FA_d, BA_1, FA_{d+1}, BA_2, ...), so a long Q_i on p2 no longer stalls
p1 at once: on blad_group's plan (12 groups, WD-GCN, a link head heavier than a snapshot) the
simulated idle share fell from 10.2% at d = 2 to 4.9% at d = 3 and 4.0% at d = 4, for d groups'
activations held on p1. ``simulate`` takes ``depth``; the programme below is exact for d = 2 only,
so for d > 2 :func:`balance` improves its splits by coordinate descent on the simulated makespan
(:func:`descend_splits`: a local optimum, never worse than the programme's splits at that depth).

Closed form and periods
-----------------------
Let M_i be the start of BA_{i-1} (M_1 = a_1; c_0 = 0; a_{m+1} = 0). After M_i, p1 is free at
M_i + c_{i-1} and p2 at M_i + q_i, both shifted by the same M_i, so

    M_{i+1} = max(M_i + c_{i-1} + a_{i+1},  M_i + q_i)            (BA_i waits for FA_{i+1} and Q_i)
    makespan = a_1 + sum_{i=1}^{m} max(c_{i-1} + a_{i+1}, q_i) + c_m                          (*)

Period i lasts max(T_p1, T_p2) with T_p1 = c_{i-1} + a_{i+1} (backward of group i-1, forward of
group i+1) and T_p2 = q_i (all of p2's work on group i). This is BLAD's Eq. 2,

    OPT(i, p_i) = min_{p_{i-1}} OPT(i-1, p_{i-1}) + max(T_p1, T_p2),
    T_p1 = sum_{j<=p_i} l(i, j) + sum_{j<=p_{i-1}} b(i-1, j),   T_p2 = sum_{j>=p_{i-1}} (l+b)(i-1, j),

with its indices corrected: in the printed equation p1's backward in a period belongs to the same
group as p2's work (group i-1), but that backward cannot start before p2 has finished that very
group, so it cannot run beside it; the backward that runs beside q_i is of group i-1 while the
forward is of group i+1. A period therefore depends on three consecutive splits (p_{i-1}, p_i,
p_{i+1}), and the programme's state is a pair of consecutive splits:

    D_1(p_1, p_2)   = a_1(p_1) + max(a_2(p_2), q_1(p_1))
    D_i(p_i, p_{i+1}) = min_{p_{i-1}} D_{i-1}(p_{i-1}, p_i) + max(c_{i-1}(p_{i-1}) + a_{i+1}(p_{i+1}), q_i(p_i))
    OPT = min_{p_{m-1}, p_m} D_{m-1}(p_{m-1}, p_m) + max(c_{m-1}(p_{m-1}), q_m(p_m)) + c_m(p_m)

(also: the printed T_p2 sums from p_{i-1}, counting snapshot p_{i-1} in both processes; here from
p_{i-1}+1; and the printed answer min OPT(m, p_m) drops the last group's tail). (*) is exactly the
event simulation's makespan, so the programme is optimal for the simulated pipeline, in
O(m n^3) time for n allowed split values; the tests check it against brute force over all splits.

``eq2_splits`` runs the printed one-index recurrence (with the tail added) for comparison, and
``even_splits`` is BLAD-Even: p1 runs the first floor(k/2) snapshots, p2 the other ceil(k/2).
Splits range over 1..k-1 (both processes get work; 0..1 for k = 1); pass lo/hi to widen to 0..k.
"""

from __future__ import annotations

import heapq
import itertools
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from ..errors import ConfigError

# groups p1 holds at most in its queue of deferred backward passes: one forward of warm-up, then
# one-forward-one-backward (the module docstring); the group strategy runs the same order
PIPELINE_DEPTH = 2


def _costs(l, b) -> tuple[np.ndarray, np.ndarray]:
    l = np.asarray(l, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    if l.ndim != 2 or b.shape != l.shape:
        raise ConfigError(f"group costs: expected l and b of shape [groups, group_len], got {l.shape}, {b.shape}")
    if (l < 0).any() or (b < 0).any() or not np.isfinite(l).all() or not np.isfinite(b).all():
        raise ConfigError("group costs: expected finite, non-negative predicted times")
    return l, b


def split_range(group_len: int, lo: int | None = None, hi: int | None = None) -> tuple[int, int]:
    """Allowed values of p_i: default 1..k-1 (0..1 for k = 1); ConfigError if outside 0..k or empty."""
    k = group_len
    lo = (1 if k >= 2 else 0) if lo is None else lo
    hi = (k - 1 if k >= 2 else 1) if hi is None else hi
    if not 0 <= lo <= hi <= k:
        raise ConfigError(f"split range: expected 0 <= lo <= hi <= group_len={k}, got lo={lo}, hi={hi}")
    return lo, hi


def receive_costs(m: int, columns: int, group_len: int, state_s: float = 0.0, embedding_s: float = 0.0,
                  inputs_s=None) -> tuple[np.ndarray, np.ndarray]:
    """(rq, rc) float64 [m, columns + 1]: the seconds p2 and p1 spend receiving, for every split
    value p = 0..columns of each of m groups (``columns``: the cost table's width, group_len, + 1
    with the head column). At 0 < p < group_len p2 receives the state (``state_s``) and p1 its
    gradient (the same bytes); at p >= group_len both the last embedding (``embedding_s``); at p = 0
    there is no hand-over. ``inputs_s`` [m] (or a number): the loss's inputs p1 prepares and p2
    receives, whatever the split."""
    p = np.arange(columns + 1)
    hand = np.where(p == 0, 0.0, np.where(p >= group_len, float(embedding_s), float(state_s)))
    inputs = np.broadcast_to(np.asarray(0.0 if inputs_s is None else inputs_s, dtype=np.float64), (m,))
    rc = np.broadcast_to(hand, (m, columns + 1)).copy()
    rq = rc + inputs[:, None]
    if (rq < 0).any() or not np.isfinite(rq).all():
        raise ConfigError("hand-over costs: expected finite, non-negative seconds")
    return rq, rc


def _recv(recv, m: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    if recv is None:
        return np.zeros((m, k + 1)), np.zeros((m, k + 1))
    rq, rc = (np.asarray(x, dtype=np.float64) for x in recv)
    if rq.shape != (m, k + 1) or rc.shape != (m, k + 1):
        raise ConfigError(f"receive costs: expected two [{m}, {k + 1}] arrays, got {rq.shape} and {rc.shape}")
    return rq, rc


def task_times(splits, l, b, recv=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(a, c, q) per group for the given splits: p1 forward, p1 backward (with its receipt of the
    gradient), p2 forward + backward (with its receipts); ``recv``: :func:`receive_costs` or None."""
    l, b = _costs(l, b)
    p = np.asarray(splits, dtype=np.int64)
    m, k = l.shape
    if p.shape != (m,) or (p < 0).any() or (p > k).any():
        raise ConfigError(f"splits: expected {m} integers in 0..{k}, got {p.tolist()}")
    A, C, Q = _prefix_tables(l, b, 0, k, recv)
    r = np.arange(m)
    return A[r, p], C[r, p], Q[r, p]


def simulate(splits, l, b, trace: list | None = None, recv=None, depth: int = PIPELINE_DEPTH) -> float:
    """Event-by-event simulation of the two-process pipeline (module docstring); returns the makespan.

    splits: int [m] (p_i) or a BalancePlan; l, b: float [m, k] seconds. If ``trace`` is a list,
    one dict per task is appended: proc ("p1"/"p2"), task ("FA", "Q", "BA"), group (0-based),
    start, end, and wait (for BA: time p1 sat idle waiting for the gradient). ``recv``: see
    :func:`task_times`. ``depth``: the most groups p1's queue holds (at least 1).
    """
    depth = _depth(depth)
    if isinstance(splits, BalancePlan):
        splits = splits.splits
    a, c, q = task_times(splits, l, b, recv)
    m = a.size
    events: list = []
    seq = itertools.count()
    now = 0.0
    p1_busy = p2_busy = False
    next_fwd = 0
    queue: deque[int] = deque()  # p1's deferred backward passes
    grads: set[int] = set()  # groups whose gradient p2 has handed back
    inbox: deque[int] = deque()  # hand-overs waiting for p2
    p1_idle_since = 0.0

    def start(proc, task, g, dur, wait=0.0):
        heapq.heappush(events, (now + dur, next(seq), proc, task, g))
        if trace is not None:
            trace.append({"proc": proc, "task": task, "group": g, "start": now, "end": now + dur, "wait": wait})

    def dispatch():
        nonlocal p1_busy, p2_busy, next_fwd
        if not p1_busy:
            if queue and (len(queue) >= depth or next_fwd == m):
                g = queue[0]
                if g in grads:  # else p1 waits for the gradient of its oldest group
                    queue.popleft()
                    p1_busy = True
                    start("p1", "BA", g, c[g], now - p1_idle_since)
            elif next_fwd < m:
                p1_busy = True
                start("p1", "FA", next_fwd, a[next_fwd])
                next_fwd += 1
        if not p2_busy and inbox:
            p2_busy = True
            g = inbox.popleft()
            start("p2", "Q", g, q[g])

    def complete(proc, task, g):
        nonlocal p1_busy, p2_busy, p1_idle_since
        if proc == "p1":
            p1_busy = False
            p1_idle_since = now
            if task == "FA":
                queue.append(g)
                inbox.append(g)  # hidden state handed to p2
        else:
            p2_busy = False
            grads.add(g)  # gradient handed back to p1

    dispatch()
    while events:
        now = events[0][0]
        # Complete every event at this instant before deciding, so ties do not depend on heap order.
        while events and events[0][0] == now:
            _, _, proc, task, g = heapq.heappop(events)
            complete(proc, task, g)
        dispatch()
    if queue or next_fwd < m or inbox:
        raise RuntimeError("pipeline simulation deadlocked")  # a bug, not bad input
    return float(now)


def _depth(depth) -> int:
    if int(depth) < 1:
        raise ConfigError(f"pipeline depth: expected at least 1 group in p1's queue, got {depth}")
    return int(depth)


def makespan(splits, l, b, recv=None, depth: int = PIPELINE_DEPTH) -> float:
    """Closed form (*) of the simulated makespan: a_1 + sum_i max(c_{i-1} + a_{i+1}, q_i) + c_m
    (at depth 2; :func:`simulate` at any other)."""
    if isinstance(splits, BalancePlan):
        splits = splits.splits
    if _depth(depth) != 2:
        return simulate(splits, l, b, recv=recv, depth=depth)
    a, c, q = task_times(splits, l, b, recv)
    if a.size == 0:
        return 0.0
    c_prev = np.concatenate([[0.0], c[:-1]])
    a_next = np.concatenate([a[1:], [0.0]])
    return float(a[0] + np.maximum(c_prev + a_next, q).sum() + c[-1])


def _prefix_tables(l, b, lo, hi, recv=None):
    """A, C, Q [m, n]: a_i, c_i, q_i for every allowed split value lo..hi (receipts included)."""
    rq, rc = _recv(recv, *l.shape)
    cl = np.concatenate([np.zeros((l.shape[0], 1)), np.cumsum(l, axis=1)], axis=1)
    cb = np.concatenate([np.zeros((b.shape[0], 1)), np.cumsum(b, axis=1)], axis=1)
    A, C = cl[:, lo:hi + 1], cb[:, lo:hi + 1]
    Q = (cl[:, -1] + cb[:, -1])[:, None] - A - C + rq[:, lo:hi + 1]
    return A, C + rc[:, lo:hi + 1], Q


def dp_splits(l, b, lo: int | None = None, hi: int | None = None, recv=None) -> tuple[np.ndarray, float]:
    """The exact programme over pairs of consecutive splits (module docstring); returns (p [m], makespan).

    l, b: float [m, k]; recv: see :func:`task_times`. O(m n^3) with n = hi - lo + 1, vectorised over
    the n^3 triples per group.
    """
    l, b = _costs(l, b)
    m, k = l.shape
    lo, hi = split_range(k, lo, hi)
    if m == 0:
        return np.zeros(0, dtype=np.int64), 0.0
    A, C, Q = _prefix_tables(l, b, lo, hi, recv)
    if m == 1:
        tot = A[0] + Q[0] + C[0]
        x = int(np.argmin(tot))
        return np.array([lo + x]), float(tot[x])
    D = A[0][:, None] + np.maximum(A[1][None, :], Q[0][:, None])  # [p_1, p_2]
    # Period cost of every middle group i = 1..m-2 (0-based) for every triple, computed at once:
    # term[i-1][x, y, z] with p_{i-1} = x, p_i = y, p_{i+1} = z.
    term = np.maximum(C[:m - 2, :, None, None] + A[2:, None, None, :], Q[1:m - 1, None, :, None])
    back = []
    rows = np.arange(D.shape[0])
    for i in range(m - 2):
        t = D[:, :, None] + term[i]
        arg = t.argmin(axis=0)
        back.append(arg)
        D = t[arg, rows[:, None], rows[None, :]]
    tot = D + np.maximum(C[m - 2][:, None], Q[m - 1][None, :]) + C[m - 1][None, :]
    x, y = np.unravel_index(int(np.argmin(tot)), tot.shape)
    p = np.empty(m, dtype=np.int64)
    p[m - 2], p[m - 1] = x, y
    for i in range(m - 2, 0, -1):
        p[i - 1] = back[i - 1][p[i], p[i + 1]]
    return p + lo, float(tot[x, y])


def eq2_splits(l, b, lo: int | None = None, hi: int | None = None, recv=None) -> np.ndarray:
    """BLAD's printed Eq. 2 (one split per state, period max(a_i + c_{i-1}, q_{i-1})), with the last
    group's tail q_m + c_m added; kept to compare against ``dp_splits`` under ``simulate``."""
    l, b = _costs(l, b)
    m, k = l.shape
    lo, hi = split_range(k, lo, hi)
    if m == 0:
        return np.zeros(0, dtype=np.int64)
    A, C, Q = _prefix_tables(l, b, lo, hi, recv)
    opt = A[0].copy()
    back = []
    for i in range(1, m):
        t = opt[:, None] + np.maximum(A[i][None, :] + C[i - 1][:, None], Q[i - 1][:, None])  # [p_{i-1}, p_i]
        arg = np.argmin(t, axis=0)
        back.append(arg)
        opt = t[arg, np.arange(t.shape[1])]
    y = int(np.argmin(opt + Q[m - 1] + C[m - 1]))
    p = np.empty(m, dtype=np.int64)
    p[m - 1] = y
    for i in range(m - 1, 0, -1):
        p[i - 1] = back[i - 1][p[i]]
    return p + lo


def descend_splits(start, l, b, lo: int | None = None, hi: int | None = None, recv=None,
                   depth: int = PIPELINE_DEPTH, sweeps: int = 4) -> tuple[np.ndarray, float]:
    """Coordinate descent on the simulated makespan at ``depth`` from the splits ``start``: sweep the
    groups in order, move each split to its best value in lo..hi with the others fixed, until a
    sweep changes nothing (or ``sweeps``). Returns (p [m], makespan): a local optimum, never worse
    than ``start``. O(sweeps · m · n) simulations of O(m log m)."""
    l, b = _costs(l, b)
    lo, hi = split_range(l.shape[1], lo, hi)
    p = np.asarray(start, dtype=np.int64).copy()
    best = simulate(p, l, b, recv=recv, depth=depth)
    for _ in range(int(sweeps)):
        moved = False
        for i in range(p.size):
            keep = p[i]
            for v in range(lo, hi + 1):
                if v == keep:
                    continue
                p[i] = v
                t = simulate(p, l, b, recv=recv, depth=depth)
                if t < best - 1e-12 * max(best, 1.0):
                    best, keep, moved = t, v, True
            p[i] = keep
        if not moved:
            break
    return p, float(best)


def even_splits(m: int, group_len: int) -> np.ndarray:
    """BLAD-Even: p_i = floor(k/2) (at least 1 when k >= 2) for every group."""
    return np.full(m, max(group_len // 2, 1 if group_len >= 2 else 0), dtype=np.int64)


def brute_force_splits(l, b, lo: int | None = None, hi: int | None = None, fn=None,
                       recv=None) -> tuple[np.ndarray, float]:
    """Minimum of ``fn`` (default ``simulate``) over every split vector; (n^m) evaluations, tests
    only. With ``recv``, ``fn`` is called as ``fn(p, l, b, recv=recv)``."""
    l, b = _costs(l, b)
    m, k = l.shape
    lo, hi = split_range(k, lo, hi)
    fn = simulate if fn is None else fn
    best, best_p = np.inf, None
    for p in itertools.product(range(lo, hi + 1), repeat=m):
        v = fn(p, l, b) if recv is None else fn(p, l, b, recv=recv)
        if v < best:
            best, best_p = v, np.array(p)
    return best_p, float(best)


@dataclass
class BalancePlan:
    """One worker's intra-device plan: ``groups`` in training order and ``splits[i]`` = snapshots of
    groups[i] that process p1 runs. ``makespan`` is the simulated pipeline time, ``busy`` the
    per-process busy time [p1, p2] (seconds), ``depth`` p1's queue bound the makespan assumes."""

    method: str
    group_len: int
    groups: list[int]
    splits: np.ndarray
    makespan: float
    busy: np.ndarray = field(repr=False)
    depth: int = PIPELINE_DEPTH  # the most groups p1's queue holds

    @property
    def idle_fraction(self) -> float:
        """Share of the two processes' time spent idle (synchronisation): 1 - sum(busy) / (2 makespan)."""
        return float(1.0 - self.busy.sum() / (2 * self.makespan)) if self.makespan > 0 else 0.0

    def to_dict(self) -> dict:
        return {"method": self.method, "group_len": self.group_len, "groups": list(map(int, self.groups)),
                "splits": [int(x) for x in self.splits], "makespan": self.makespan,
                "busy": [float(x) for x in self.busy], "idle_fraction": self.idle_fraction, "depth": int(self.depth)}

    @classmethod
    def from_dict(cls, d: dict) -> "BalancePlan":
        return cls(method=str(d["method"]), group_len=int(d["group_len"]), groups=[int(g) for g in d["groups"]],
                   splits=np.asarray(d["splits"], dtype=np.int64), makespan=float(d["makespan"]),
                   busy=np.asarray(d["busy"], dtype=np.float64), depth=int(d.get("depth", PIPELINE_DEPTH)))


def balance(fwd, bwd, group_len: int, groups, method: str = "dp", lo: int | None = None,
            hi: int | None = None, tail: dict | None = None, handover: dict | None = None,
            depth: int = PIPELINE_DEPTH) -> BalancePlan:
    """Split one worker's groups between its two processes.

    fwd, bwd: float [T] per-snapshot predicted seconds; groups: group ids (last snapshot index) in
    training order (``GroupPlan.workers[w]``); method: "dp" (exact programme), "eq2" (printed Eq. 2),
    "even" (BLAD-Even); tail: {group id: seconds of the loss and head after its last snapshot}.
    With a tail, the head is a pseudo-snapshot k+1 that p2 always runs, and splits range over 1..k
    by default: p1 may run a whole group forward and hand p2 only the head (the last embedding
    instead of the state), which balances a task whose head outweighs a snapshot. handover:
    {"state_s", "embedding_s": seconds of receiving the state or the last embedding, "inputs_s":
    {group id: seconds of receiving its loss's inputs}} (:func:`receive_costs`), or None (free).
    depth: p1's queue bound (the module docstring): above 2, the programme's splits are improved by
    :func:`descend_splits` ("dp" and "eq2"; "even" keeps its halves).
    """
    from .groups import group_costs

    groups = [int(g) for g in groups]
    head = bool(tail) and group_len >= 2
    l, b = group_costs(fwd, bwd, group_len, groups, tail, head_column=head)
    recv = None
    if handover:
        inputs = handover.get("inputs_s") or {}
        recv = receive_costs(len(groups), l.shape[1], group_len, handover.get("state_s", 0.0),
                             handover.get("embedding_s", 0.0), [inputs.get(g, inputs.get(str(g), 0.0)) for g in groups])
    if head and hi is None:
        hi = group_len
    if method == "dp":
        p, _ = dp_splits(l, b, lo, hi, recv)
    elif method == "eq2":
        p = eq2_splits(l, b, lo, hi, recv)
    elif method == "even":
        p = even_splits(len(groups), group_len)
    else:
        raise ConfigError(f"balance method: expected 'dp', 'eq2' or 'even', got {method!r}")
    mk = None
    if _depth(depth) != 2 and method != "even" and groups:
        p, mk = descend_splits(p, l, b, lo, hi, recv, depth)  # the simulated makespan of p, as makespan() gives
    a, c, q = task_times(p, l, b, recv)
    return BalancePlan(method, group_len, groups, p, makespan(p, l, b, recv, depth) if mk is None else mk,
                       np.array([a.sum() + c.sum(), q.sum()]), depth)
