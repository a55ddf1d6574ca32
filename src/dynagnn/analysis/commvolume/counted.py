"""What each scheme sends, enumerated on a real partition (per snapshot, vertex, chunk or batch
occurrence) without the closed forms of :mod:`.closed`, one section per scheme."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...errors import InputError
from ...graph import partition as gp
from ...sortedkeys import unique_sorted
from ...splits import even_ranges

# ----------------------------------------------------------------------------- snapshot partitioning (ESDG)

def count_snapshot_redistribution(T: int, N: int, P: int) -> int:
    """Count, snapshot by snapshot, the (t, v) rows whose snapshot owner is not v's RNN owner."""
    time_owner = np.empty(int(T), dtype=np.int64)
    for p, (a, b) in enumerate(even_ranges(T, P)):
        time_owner[a:b] = p
    vertex_owner = gp.range_partition(N, P)
    return int(sum(np.count_nonzero(vertex_owner != time_owner[t]) for t in range(int(T))))


# ----------------------------------------------------------------------------- vertex partitioning

def count_vertex_volume(edge_lists, N: int, parts, P: int) -> int:
    """Σ_t Σ_v λ_t(v) on the given partition (ESDG's vertex-partition volume, counted)."""
    return gp.snapshot_volume(edge_lists, N, parts, P)


# ----------------------------------------------------------------------------- parameter all-reduce

def count_ring_allreduce(params: int, P: int) -> int:
    """Simulate the ring: W cut into P chunks; P−1 reduce-scatter then P−1 all-gather steps, in
    each of which worker i sends one chunk to worker i+1. Returns the elements sent."""
    if P < 1:
        raise InputError(f"an all-reduce needs P >= 1 workers, got {P}")
    chunk = np.array([len(c) for c in np.array_split(np.arange(params), P)])
    sent = 0
    for phase in (0, 1):  # reduce-scatter, all-gather
        for s in range(P - 1):
            for i in range(P):
                sent += int(chunk[(i - s + phase) % P])
    return sent


# ----------------------------------------------------------------------------- snapshot groups (BLAD)

def count_group_halo(ranges, window: int) -> int:
    """For every worker, the snapshots its groups {S−l..S} touch that lie outside its range."""
    total = 0
    for a, b in ranges:
        need = {t for s in range(a, b) for t in range(max(0, s - window), s + 1)}
        total += len(need - set(range(a, b)))
    return total


# ----------------------------------------------------------------------------- Sven

@dataclass(frozen=True)
class SvenBatches:
    """A stream cut into batches of ``bs`` events, each split into M contiguous trainer chunks.

    group: int64 [2E'] trainer-chunk id (batch·M + trainer) of every batch occurrence (src, dst
    interleaved); roots [2E']: the vertices; nbrs [2E', k] their sampled neighbours (−1 = none).
    """

    roots: np.ndarray
    nbrs: np.ndarray
    group: np.ndarray
    M: int
    batches: int

    @property
    def trainer(self) -> np.ndarray:
        return self.group % self.M


def sven_batches(roots, nbrs, bs: int, M: int) -> SvenBatches:
    """Cut Sven's flattened stream (``analysis.redundancy._sample_all``) into full batches of bs
    events (a last partial batch is dropped) and each batch into M contiguous trainer chunks."""
    roots = np.asarray(roots, dtype=np.int64)
    nbrs = np.asarray(nbrs, dtype=np.int64).reshape(roots.size, -1)
    bs, M = int(bs), int(M)
    if M < 1:
        raise InputError(f"Sven needs M >= 1 trainers, got {M}")
    if bs < M:
        raise InputError(f"a batch of {bs} events cannot feed M={M} trainers: need batch size >= M")
    n_batches = roots.size // 2 // bs
    n = 2 * n_batches * bs
    event = np.arange(n) // 2
    trainer = (event % bs) * M // bs  # contiguous chunks of bs/M events
    return SvenBatches(roots[:n], nbrs[:n], (event // bs) * M + trainer, M, n_batches)


def sampled_occurrences(b: SvenBatches) -> tuple[np.ndarray, np.ndarray]:
    """(group, vertex) of every sampled occurrence: the batch's vertices and their neighbours."""
    k = b.nbrs.shape[1]
    g = np.concatenate([b.group, np.repeat(b.group, k)])
    v = np.concatenate([b.roots, b.nbrs.ravel()])
    ok = v >= 0
    return g[ok], v[ok]


def sven_stats(b: SvenBatches) -> pd.DataFrame:
    """Per trainer, summed over batches: N1 (sampled occurrences), U1 (distinct per batch), N2
    (batch occurrences), U2 (distinct per batch) -- Sven's N·(1 − η) terms."""
    M = b.M
    g1, v1 = sampled_occurrences(b)
    span = np.int64(max(int(v1.max(initial=0)), int(b.roots.max(initial=0))) + 1)
    u1 = unique_sorted(g1 * span + v1) // span
    u2 = unique_sorted(b.group * span + b.roots) // span

    def per_trainer(groups):
        return np.bincount(groups % M, minlength=M)

    return pd.DataFrame({"trainer": np.arange(M), "N1": per_trainer(g1), "U1": per_trainer(u1),
                         "N2": per_trainer(b.group), "U2": per_trainer(u2)})


def sven_trainer_stats(occurrences, originals, trainer, owner, M: int) -> pd.DataFrame:
    """Per trainer, Sven's counts of given batches on the partition ``owner`` [N]: the columns of
    :func:`sven_stats` (N1, U1, N2, U2) and the remote ones (N1_remote, U1_remote, U2_remote: the
    occurrences, distinct sampled and distinct original vertices that ``owner`` puts on another
    trainer), which make :func:`~.closed.sven_volumes` exact on that partition.

    occurrences, originals: per (trainer, batch) piece, int arrays of its sampled occurrences (the
    vertices whose rows it reads, repeats kept) and of its original ones (the vertices it writes);
    trainer: int, the trainer of each piece.
    """
    owner = np.asarray(owner, dtype=np.int64)
    out = np.zeros((M, 7), dtype=np.int64)
    for occ, orig, i in zip(occurrences, originals, trainer):
        occ, orig = np.asarray(occ, dtype=np.int64), np.asarray(orig, dtype=np.int64)
        u1, u2 = unique_sorted(occ), unique_sorted(orig)
        out[i] += [occ.size, u1.size, orig.size, u2.size, np.count_nonzero(owner[occ] != i),
                   np.count_nonzero(owner[u1] != i), np.count_nonzero(owner[u2] != i)]
    cols = ["N1", "U1", "N2", "U2", "N1_remote", "U1_remote", "U2_remote"]
    return pd.DataFrame({"trainer": np.arange(M), **{c: out[:, k] for k, c in enumerate(cols)}})


def count_sven_volumes(b: SvenBatches, owner, memory_dim: int, edge_dim: int = 0) -> dict[str, int]:
    """Elements each scheme sends, enumerated on the partition ``owner`` [N] (values 0..M−1)."""
    owner = np.asarray(owner, dtype=np.int64)
    M = b.M
    w = 3 * memory_dim + edge_dim
    g1, v1 = sampled_occurrences(b)
    remote_occ = owner[v1] != g1 % M
    # distinct (batch-trainer, vertex) pairs, each checked once
    span = np.int64(owner.size)
    d1 = unique_sorted(g1 * span + v1)
    d2 = unique_sorted(b.group * span + b.roots)
    remote_d1 = int(np.count_nonzero(owner[d1 % span] != (d1 // span) % M))
    remote_d2 = int(np.count_nonzero(owner[d2 % span] != (d2 // span) % M))
    gathered = sum(int(np.count_nonzero((d2 // span) % M == i)) * (M - 1) for i in range(M))
    return {"depcache/dispatch": 0, "depcache/aggregation": gathered * w,
            "depcomm/dispatch": int(np.count_nonzero(remote_occ)) * memory_dim,
            "depcomm/dispatch_backward": int(np.count_nonzero(remote_occ)) * memory_dim,
            "depcomm/aggregation": remote_d2 * w,
            "sven/dispatch": remote_d1 * w, "sven/aggregation": remote_d2 * w}
