"""Events to snapshots, edge-life and M-product smoothing, and node features for sources that have none.

A snapshot is a graph: within one snapshot an edge appears once, with a weight that merges the
events that made it (their count, the sum of their weights, or 1). Undirected graphs are stored
symmetrised (both (u, v) and (v, u)), so that a snapshot's CSR is its full adjacency.

The defaults keep what the source says: ``edge_weight="auto"`` sums the source's weights when it
has them (else counts the events), and ``self_loops="auto"`` keeps the self-loops of a source's own
snapshots (there a self-loop is data: a region's internal flow) and drops those of an event stream
(a message to oneself), see :func:`resolve_rules`.

Edge-life smoothing (ESDG Sec. 5.4, used by EvolveGCN): ``A_t <- A_t + sum_{i=t-l+1}^{t-1} A_i``,
i.e. snapshot t holds the edges of the last l windows with their weights added. We follow the
formula, not the prose's off-by-one ("carried to the subsequent l snapshots").

M-product smoothing (ESDG Sec. 5.4, used by TM-GCN; notes/esdg.md §3.5 and §4.3): ``𝒜 ×_1 M`` and
``𝒳 ×_1 M`` with the banded lower-triangular moving average (t, k from 1 at the first snapshot)

    M_tk = 1 / min(w, t)   if max(1, t − w + 1) <= k <= t,   0 otherwise

so snapshot t holds the mean of the last min(w, t) adjacency matrices (the union of their edges,
each weight summed and divided by min(w, t)) and, for per-snapshot features, frame t the mean of
the last min(w, t) frames. Static features [N, F] are unchanged (every row of M sums to 1). The
store holds edges and Â is normalised on load, so the average is of the adjacency, before the
normalisation; the ESDG authors' preprocessing averaged the normalised matrices instead. With both
options the order is theirs: edge-life first, then the M-product.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

import dask
import numpy as np

from ..errors import InputError
from .types import EventStream, RawGraph, Snapshots

log = logging.getLogger(__name__)

EDGE_WEIGHTS = ("count", "sum", "binary")
WEIGHT_RULES = ("auto", *EDGE_WEIGHTS)
SELF_LOOP_RULES = ("auto", "drop", "keep")
EMPTY_POLICIES = ("keep", "error")
FEATURE_KINDS = ("auto", "source", "degree", "identity", "random", "none")
IDENTITY_MAX_NODES = 20_000


def clean_events(ev: EventStream, *, self_loops: str = "drop", duplicates: str = "keep") -> EventStream:
    """Drop self-loops and/or exact duplicate events (same src, dst and t), keeping order.

    self_loops: "drop" or "keep". duplicates: "keep" (they merge into one edge of a snapshot, adding
    to its weight) or "drop" (only the first of identical events is kept).
    """
    if self_loops not in ("drop", "keep"):
        raise ValueError(f"self_loops must be 'drop' or 'keep', not {self_loops!r}")
    if duplicates not in ("drop", "keep"):
        raise ValueError(f"duplicates must be 'drop' or 'keep', not {duplicates!r}")
    keep = np.ones(len(ev), dtype=bool)
    if self_loops == "drop":
        keep &= ev.src != ev.dst
    if duplicates == "drop" and len(ev):
        keep &= ~_repeated_events(ev)
    if keep.all():
        return ev
    return _take_events(ev, keep)


def _repeated_events(ev: EventStream) -> np.ndarray:
    """Mask of events identical to an earlier one; events are time-sorted, so equal ones share a time run."""
    order = np.lexsort((ev.dst, ev.src, ev.t))
    s, d, t = ev.src[order], ev.dst[order], ev.t[order]
    same = np.zeros(len(ev), dtype=bool)
    same[1:] = (s[1:] == s[:-1]) & (d[1:] == d[:-1]) & (t[1:] == t[:-1])
    mask = np.zeros(len(ev), dtype=bool)
    mask[order] = same
    return mask


def _take_events(ev: EventStream, keep: np.ndarray) -> EventStream:
    """The events ``keep`` selects (a bool mask or increasing indices), their stored split and
    negatives kept with them, the negatives renumbered (a dropped event's row goes with it: the task
    then names what is missing)."""
    def take(a):
        return None if a is None else a[keep]

    negatives = None
    if ev.negatives is not None:
        mask = np.zeros(len(ev), dtype=bool)
        mask[keep] = True
        event, dst = ev.negatives
        kept = mask[event]
        negatives = ((np.cumsum(mask) - 1)[event[kept]], dst[kept])
    return EventStream(ev.src[keep], ev.dst[keep], ev.t[keep], take(ev.w), take(ev.label), take(ev.features),
                       take(ev.order), negatives, take(ev.split))


def source_has_weights(raw: RawGraph, by: str) -> bool:
    """Whether what ``by`` discretises (the source's snapshots, or its events) carries weights."""
    if by == "source":
        return raw.snapshots is not None and raw.snapshots.weights is not None
    return raw.events is not None and raw.events.w is not None


def resolve_rules(raw: RawGraph, by: str, edge_weight: str = "auto", self_loops: str = "auto"
                  ) -> tuple[str, str]:
    """The concrete (edge_weight, self_loops) rules for discretising ``raw`` by ``by``.

    edge_weight "auto": "sum" when the source has weights, else "count". self_loops "auto": "keep"
    for the source's own snapshots (by "source"), "drop" for windows of an event stream.
    """
    if edge_weight not in WEIGHT_RULES:
        raise ValueError(f"edge_weight must be one of {WEIGHT_RULES}, not {edge_weight!r}")
    if self_loops not in SELF_LOOP_RULES:
        raise ValueError(f"self_loops must be one of {SELF_LOOP_RULES}, not {self_loops!r}")
    if edge_weight == "auto":
        edge_weight = "sum" if source_has_weights(raw, by) else "count"
    if self_loops == "auto":
        self_loops = "keep" if by == "source" else "drop"
    return edge_weight, self_loops


def window_count(t_first: float, t_last: float, num_events: int, *, by: str,
                 width: float | None = None, size: int | None = None, start: float | None = None) -> int:
    """How many windows :func:`window_bounds` cuts, from the first and last time alone (nothing
    allocated), so that a width too small for the time span is refused before it is tried."""
    if by == "time":
        if width is None or width <= 0:
            raise ValueError("by='time' needs a positive width")
        t0 = t_first if start is None else start
        return int((t_last - t0) // width) + 1
    if by == "count":
        if size is None or size <= 0:
            raise ValueError("by='count' needs a positive size")
        return -(-int(num_events) // int(size))
    raise ValueError(f"unknown window kind {by!r}: expected 'time' or 'count'")


def window_bounds(t: np.ndarray, *, by: str, width: float | None = None, size: int | None = None,
                  start: float | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Cut a sorted time array into windows.

    by="time": windows of ``width`` time units from ``start`` (default: the first event's time);
    by="count": windows of ``size`` consecutive events.
    Returns (bounds int64 [T+1], times [T]): events bounds[k]:bounds[k+1] form window k, which
    stands for time times[k] (its start). Times keep the source's type: int64 when the event times
    are integers and so are width and start, float64 otherwise (a width of 0.25 gives 0.25-apart
    starts, never rounded onto one another).
    """
    n = t.shape[0]
    if n == 0:
        raise InputError("no events to discretise")
    num = window_count(t[0], t[-1], n, by=by, width=width, size=size, start=start)
    if by == "time":
        t0 = t[0] if start is None else start
        if t[0] < t0:
            raise ValueError(f"start {start} is after the first event's time {t[0]}")
        if t.dtype.kind in "iu" and float(width).is_integer() and float(t0).is_integer():
            starts = int(t0) + int(width) * np.arange(num + 1, dtype=np.int64)
        else:
            starts = float(t0) + float(width) * np.arange(num + 1, dtype=np.float64)
        bounds = np.searchsorted(t, starts[1:], side="left")
        bounds = np.concatenate([[0], bounds]).astype(np.int64)
        bounds[-1] = n
        return bounds, starts[:-1]
    bounds = np.append(np.arange(0, n, size, dtype=np.int64), n)
    return bounds, _time_array(t[bounds[:-1]])


def _time_array(times) -> np.ndarray:
    """Snapshot times as the store keeps them: float64 when fractional, int64 otherwise."""
    times = np.asarray(times)
    return times.astype(np.float64 if times.dtype.kind == "f" else np.int64, copy=False)


def reduce_edges(row: np.ndarray, col: np.ndarray, w: np.ndarray | None, num_nodes: int, *,
                 directed: bool, edge_weight: str = "count", presorted_runs: bool = False
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One snapshot's edges from a multiset of (row, col, w): symmetrised if undirected, sorted by
    (row, col), duplicates merged.

    edge_weight: "count" (number of events), "sum" (sum of ``w``, 1 where w is None) or "binary".
    presorted_runs: the input is a concatenation of sorted runs (edge-life merges), which a stable
    sort (timsort) merges in near-linear time.
    Returns (row int64 [m], col int64 [m], weight float32 [m]).
    """
    if edge_weight not in EDGE_WEIGHTS:
        raise ValueError(f"edge_weight must be one of {EDGE_WEIGHTS}, not {edge_weight!r}")
    if not directed:
        off = row != col  # a self-loop is its own reverse: add it once
        row, col = np.concatenate([row, col[off]]), np.concatenate([col, row[off]])
        if w is not None:
            w = np.concatenate([w, w[off]])
    key = row.astype(np.int64) * num_nodes + col
    order = np.argsort(key, kind="stable" if presorted_runs else "quicksort")
    key = key[order]
    first = np.ones(key.shape[0], dtype=bool)
    first[1:] = key[1:] != key[:-1]
    starts = np.flatnonzero(first)
    ukey = key[starts]
    if edge_weight == "binary":
        weight = np.ones(ukey.shape[0], dtype=np.float32)
    elif edge_weight == "count" or w is None:
        weight = np.diff(np.append(starts, key.shape[0])).astype(np.float32)
    else:
        weight = np.add.reduceat(w[order].astype(np.float64), starts).astype(np.float32) \
            if starts.size else np.zeros(0, np.float32)
    return ukey // num_nodes, ukey % num_nodes, weight


def _run_tasks(fn: Callable, items: Sequence, threads: int) -> list:
    """Run fn over items on Dask's threaded scheduler (numpy's sorts release the GIL)."""
    if threads <= 1 or len(items) <= 1:
        return [fn(x) for x in items]
    return list(dask.compute(*[dask.delayed(fn)(x) for x in items], scheduler="threads",
                             num_workers=threads))


def _groups(n: int, parts: int) -> list[range]:
    step = max(1, -(-n // max(parts, 1)))
    return [range(a, min(a + step, n)) for a in range(0, n, step)]


def _concat(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], times: np.ndarray,
            num_nodes: int, directed: bool) -> Snapshots:
    counts = np.array([p[0].shape[0] for p in parts], dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    def cat(i, dtype):
        return np.concatenate([p[i] for p in parts]).astype(dtype, copy=False) if parts \
            else np.zeros(0, dtype)
    return Snapshots(offsets, cat(0, np.int64), cat(1, np.int64), cat(2, np.float32),
                     _time_array(times), num_nodes, directed)


def build_snapshots(raw: RawGraph, *, by: str = "time", width: float | None = None,
                    size: int | None = None, start: float | None = None, directed: bool | None = None,
                    self_loops: str = "auto", edge_weight: str = "auto", edge_life: int = 1,
                    m_product: int = 1, empty: str = "keep", threads: int = 1) -> Snapshots:
    """The store's snapshots from a reader's output.

    by: "time" or "count" cut ``raw.events`` into windows (see :func:`window_bounds`); "source"
    takes ``raw.snapshots`` as they are. directed: None keeps the source's direction; False
    symmetrises. self_loops, edge_weight: see :func:`resolve_rules` (the number of self-loops kept
    or dropped is logged). edge_life: l >= 1, m_product: the band width w >= 1 of M (1: none), see
    the module docstring. empty: "keep" keeps windows with no edge (they are counted and logged) or
    "error" refuses them.
    Snapshot groups are reduced in parallel Dask tasks.
    """
    if empty not in EMPTY_POLICIES:
        raise ValueError(f"empty must be one of {EMPTY_POLICIES}, not {empty!r}")
    if edge_life < 1:
        raise ValueError(f"edge_life must be >= 1, not {edge_life}")
    if m_product < 1:
        raise ValueError(f"m_product must be >= 1, not {m_product}")
    directed = raw.directed if directed is None else directed
    loop_rule = self_loops  # as given, for the log
    edge_weight, self_loops = resolve_rules(raw, by, edge_weight, self_loops)
    n = raw.num_nodes
    if n > 3_000_000_000:
        raise InputError(f"{n} nodes: more than this version's 3e9 limit (edge keys are row*N+col in int64)")

    if by == "source":
        if raw.snapshots is None:
            raise InputError(f"dataset {raw.name!r} has no snapshots of its own: use by 'time' or 'count'")
        sl = raw.snapshots
        times = _time_array(sl.times)
        loops = sum(int(np.count_nonzero(r == c)) for r, c in zip(sl.rows, sl.cols))
        _log_self_loops(loops, sum(r.shape[0] for r in sl.rows), "source edges", self_loops, loop_rule)
        def one(k):
            r, c = sl.rows[k], sl.cols[k]
            w = None if sl.weights is None else sl.weights[k]
            if self_loops == "drop":
                keep = r != c
                r, c, w = r[keep], c[keep], (None if w is None else w[keep])
            return reduce_edges(r, c, w, n, directed=directed, edge_weight=edge_weight)
        count = len(sl)
        window_desc = lambda k: f"snapshot {k} (time {times[k]})"  # noqa: E731
    else:
        if raw.events is None:
            raise InputError(f"dataset {raw.name!r} has no event stream: use by 'source'")
        loops = int(np.count_nonzero(raw.events.src == raw.events.dst))
        _log_self_loops(loops, len(raw.events), "events", self_loops, loop_rule)
        ev = clean_events(raw.events, self_loops=self_loops)
        if len(ev) == 0:
            raise InputError(f"dataset {raw.name!r} has no events left after dropping self-loops")
        bounds, times = window_bounds(ev.t, by=by, width=width, size=size, start=start)
        def one(k):
            a, b = bounds[k], bounds[k + 1]
            w = None if ev.w is None else ev.w[a:b]
            return reduce_edges(ev.src[a:b], ev.dst[a:b], w, n, directed=directed, edge_weight=edge_weight)
        count = len(times)
        window_desc = lambda k: (f"window {k} [{times[k]}, {times[k] + width})" if by == "time"  # noqa: E731
                                 else f"window {k}")

    def group(ks):
        return [one(k) for k in ks]

    parts = [p for g in _run_tasks(group, _groups(count, 4 * threads), threads) for p in g]
    parts = smooth_edge_life(parts, n, edge_life, threads)
    parts = smooth_m_product(parts, n, m_product, threads)
    empty_ids = [k for k, p in enumerate(parts) if p[0].shape[0] == 0]
    if empty_ids:
        if empty == "error":
            raise InputError(f"{len(empty_ids)} of {count} snapshots have no edges, the first is "
                             f"{window_desc(empty_ids[0])}; widen the window, or set empty_snapshots: keep")
        log.warning("%d of %d snapshots have no edges (kept): %s", len(empty_ids), count,
                    ", ".join(str(k) for k in empty_ids[:10]) + (" ..." if len(empty_ids) > 10 else ""))
    return _concat(parts, times, n, directed)


def _log_self_loops(loops: int, total: int, what: str, rule: str, given: str) -> None:
    if loops:
        log.info("self-loops (self_loops: %s): %d of %d %s are self-loops, %s", given, loops, total, what,
                 "dropped" if rule == "drop" else "kept")


def smooth_edge_life(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int, life: int,
                     threads: int = 1) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Edge-life smoothing of a list of (row, col, weight) snapshots: part t becomes the weighted
    union of parts t-l+1..t (see the module docstring)."""
    if life == 1:
        return parts
    # Sum, as in ESDG's A_t + sum A_i (binary edges then count the windows that had them)
    return _smooth_band(parts, n, life, lambda k: 1.0, threads)


def smooth_m_product(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int, w: int,
                     threads: int = 1) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """M-product smoothing ``𝒜 ×_1 M`` of a list of (row, col, weight) snapshots: part t (from 0)
    becomes the weighted union of parts t-w+1..t with every weight divided by min(w, t+1) (see the
    module docstring)."""
    if w == 1:
        return parts
    return _smooth_band(parts, n, w, lambda k: 1.0 / min(w, k + 1), threads)


def _smooth_band(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int, span: int,
                 scale: Callable[[int], float], threads: int) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Part k becomes ``scale(k) * sum(parts[k-span+1..k])`` (weights of equal edges summed)."""
    def smooth(ks):
        out = []
        for k in ks:
            window = parts[max(0, k - span + 1): k + 1]
            r = np.concatenate([p[0] for p in window])
            c = np.concatenate([p[1] for p in window])
            w = np.concatenate([p[2] for p in window])
            # each part is already symmetric when undirected
            r, c, w = reduce_edges(r, c, w, n, directed=True, edge_weight="sum", presorted_runs=True)
            f = scale(k)
            out.append((r, c, w if f == 1.0 else (w * np.float32(f)).astype(np.float32)))
        return out
    return [p for g in _run_tasks(smooth, _groups(len(parts), 4 * threads), threads) for p in g]


def smooth_features_m_product(x: np.ndarray | None, w: int) -> np.ndarray | None:
    """``𝒳 ×_1 M`` of per-snapshot features [T, N, F]: frame t (from 0) becomes the mean of frames
    t-w+1..t (min(w, t+1) of them). Static features [N, F] and None are returned as they are."""
    if x is None or w == 1 or np.ndim(x) != 3:
        return x
    out = np.empty(x.shape, dtype=np.float32)
    run = np.zeros(x.shape[1:], dtype=np.float64)
    for t in range(x.shape[0]):
        run += x[t]
        if t >= w:
            run -= x[t - w]
        out[t] = run / min(w, t + 1)
    return out


def snapshot_degrees(snaps: Snapshots) -> np.ndarray:
    """Degree of every node in every snapshot, int64 [T, N] (row counts: out-degree, or degree when
    the snapshots are symmetric)."""
    T, n = snaps.num_snapshots, snaps.num_nodes
    snap_of_edge = np.repeat(np.arange(T, dtype=np.int64), np.diff(snaps.offsets))
    return np.bincount(snap_of_edge * n + snaps.row, minlength=T * n).reshape(T, n)


def make_features(kind: str, raw: RawGraph, snaps: Snapshots, *, dim: int = 32, seed: int = 0
                  ) -> np.ndarray | None:
    """Node features: float32 [T, N, F] (per snapshot) or [N, F] (static), or None.

    "source": the source's own; "degree": one-hot of each node's degree in each snapshot, clipped
    at dim-1 (EvolveGCN's input for graphs without attributes); "identity": the N x N identity;
    "random": seeded N(0, 1/dim) entries; "none"; "auto": "source" when the source has features,
    else "degree".
    """
    if kind not in FEATURE_KINDS:
        raise ValueError(f"features kind must be one of {FEATURE_KINDS}, not {kind!r}")
    if kind == "auto":
        kind = "source" if raw.node_features is not None else "degree"
    n = snaps.num_nodes
    if kind == "none":
        return None
    if kind == "source":
        if raw.node_features is None:
            raise InputError(f"dataset {raw.name!r} has no node features: choose degree, identity or random")
        return np.asarray(raw.node_features, dtype=np.float32)
    if kind == "identity":
        if n > IDENTITY_MAX_NODES:
            raise InputError(f"identity features for {n} nodes would take {n * n * 4 / 2**30:.1f} GiB; "
                             f"use degree or random features above {IDENTITY_MAX_NODES} nodes")
        return np.eye(n, dtype=np.float32)
    if dim < 1:
        raise ValueError(f"feature dim must be >= 1, not {dim}")
    if kind == "random":
        rng = np.random.default_rng(seed)
        return (rng.standard_normal((n, dim)) / np.sqrt(dim)).astype(np.float32)
    deg = np.minimum(snapshot_degrees(snaps), dim - 1)
    x = np.zeros((snaps.num_snapshots, n, dim), dtype=np.float32)
    np.put_along_axis(x, deg[..., None], 1.0, axis=2)
    return x
