"""BGL's two-level feature cache (NSDI'23 §3.2.3), for real: node features come from the store
through a device level and a host level, and never whole.

- **Level 1**: a buffer [S1, F] on the training device (a separate tensor when that is the CPU).
- **Level 2**: a buffer [S2, F] in host memory.
- **Below**: ``features/x`` in the Zarr store, read by rows (:class:`StoreRows`): only the chunks
  that hold the rows asked for are decoded, each once per read.

Each level is driven by one of the simulation's policy objects (:mod:`dynagnn.graph.cache`:
``FIFOCache``, BGL's ring buffer, or ``StaticCache``, PaGraph's top-degree cache), which decide hits
and which slots the misses go to; this module only moves the rows. So the hit ratio of training is
the simulation's for the same lookups, by construction, not by imitation. Level 1 looks up every
input vertex of a batch; level 2 looks up level 1's misses; the store serves level 2's misses.
Every level inserts its own misses (BGL: "the CPU cache uses the same FIFO policy").

A level's budget is bytes (config ``cache_l1_mb``, ``cache_l2_mb``): its capacity is
``budget // (4 F)`` rows, at most N. A budget larger than the memory it lives in is refused.

Counted per level, for training lookups only (evaluation reads through the cache without changing
it or its counters): hits, misses, bytes served; below: the rows (and their bytes) asked of the store,
and the chunks it decoded for them and their decoded (uncompressed) bytes: what the store had to
produce for the rows, the read amplification's numerator.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.data.rows import RowReader
from dynagnn.errors import ConfigError
from dynagnn.graph.cache import FIFOCache, StaticCache
from dynagnn.host_memory import physical_memory

POLICIES = ("fifo", "static", "none")
MIB = 1 << 20


def device_memory(device: torch.device) -> int | None:
    """Bytes of memory of ``device``: a GPU's total, the host's for the CPU."""
    if device.type == "cuda":
        return int(torch.cuda.get_device_properties(device).total_memory)
    return physical_memory()


class StoreRows:
    """The level below the caches: rows of the store's ``features/x``, read by chunk
    (:class:`~dynagnn.data.rows.RowReader`: each chunk that holds rows asked for decoded once, the
    rows sliced out).

    Static features [N, F] are read as they are; per-snapshot features [T, N, F] are read at snapshot
    ``snapshot`` (default the last, the graph a static model is trained on). ``read(ids)`` takes
    sorted distinct ids and returns float32 [k, F]. Counted: the rows asked for (``rows``, ``bytes``)
    and what the store decoded for them (``chunks``, ``chunk_bytes_read``: the chunks' decoded,
    uncompressed bytes), and the seconds it took.
    """

    def __init__(self, store, snapshot: int | None = None):
        if not store.has("features/x"):
            store.require_features()  # the one message for a store without features
        arr = store.root["features/x"]
        last = arr.shape[0] - 1 if arr.ndim == 3 else None
        self.reader = RowReader(store, "features/x", last if snapshot is None else snapshot)
        self.num_nodes, self.dim = self.reader.num_rows, self.reader.width
        self.row_bytes = self.reader.dtype.itemsize * self.dim
        self.chunk_rows = self.reader.chunk_rows
        self.rows = self.bytes = self.chunks = self.chunk_bytes_read = 0
        self.seconds = 0.0

    def read(self, ids: np.ndarray, count: bool = True) -> np.ndarray:
        t0 = time.perf_counter()
        rows, chunks, decoded = self.reader.read(ids)
        if count:
            self.seconds += time.perf_counter() - t0
            self.rows += int(ids.size)
            self.bytes += int(ids.size) * self.row_bytes
            self.chunks += chunks
            self.chunk_bytes_read += decoded
        return rows.astype(np.float32, copy=False)


class CacheLevel:
    """One level: a policy of :mod:`dynagnn.graph.cache` and its feature buffer [S, F] on ``device``.

    ``policy``: ``fifo`` (empty at start), ``static`` (the ``capacity`` highest ``scores``, filled once
    with :meth:`fill`) or ``none`` (capacity 0).
    """

    def __init__(self, name: str, policy: str, capacity: int, num_nodes: int, dim: int, device,
                 scores: np.ndarray | None = None):
        if policy not in POLICIES:
            raise ConfigError(f"cache_policy {policy!r}: expected one of {', '.join(POLICIES)}")
        self.name = name
        self.capacity = 0 if policy == "none" else int(min(capacity, num_nodes))
        self.device = torch.device(device)
        if policy == "static":
            self.policy = StaticCache(self.capacity, scores)
        else:
            self.policy = FIFOCache(self.capacity, num_nodes)
        self.buffer = torch.empty(self.capacity, dim, device=self.device)
        self.row_bytes = 4 * dim

    def fill(self, rows_of) -> int:
        """Write the rows of what the policy holds from the start (a static cache); returns bytes."""
        ids, slots = self.policy.inserted
        if ids.size:
            order = np.argsort(ids)
            rows = rows_of(ids[order])
            self.buffer[torch.from_numpy(slots[order])] = torch.from_numpy(rows).to(self.device)
        return int(ids.size) * self.row_bytes

    def lookup(self, ids: np.ndarray, update: bool) -> tuple[np.ndarray, torch.Tensor]:
        """(hit bool [M], the hit rows [h, F] on this level's device), gathered before the policy's
        insertions overwrite any slot. ``update`` False: a peek (no state change, not counted)."""
        slots = self.policy.slot_of[ids].copy() if self.capacity else None
        if not self.capacity:
            hit = np.zeros(ids.size, dtype=bool)
            if update:
                self.policy.lookup(ids)  # counts the misses
        else:
            hit = self.policy.lookup(ids) if update else self.policy.peek(ids)
        rows = self.buffer[torch.from_numpy(slots[hit])] if hit.any() else self.buffer[:0]
        return hit, rows

    def insert(self, miss_ids: np.ndarray, miss_rows: torch.Tensor) -> None:
        """Write the rows of the ids the last lookup inserted; ``miss_ids`` sorted, ``miss_rows`` theirs."""
        ids, slots = self.policy.inserted
        if self.capacity and ids.size:
            pos = torch.from_numpy(np.searchsorted(miss_ids, ids))
            self.buffer[torch.from_numpy(slots).to(self.device)] = miss_rows[pos.to(miss_rows.device)].to(self.device)

    @property
    def nbytes(self) -> int:
        return self.capacity * self.row_bytes


@dataclass
class CacheStats:
    """Counters of one period (an epoch): per level hits/misses/bytes served, and the store's reads."""

    l1_hits: int = 0
    l1_misses: int = 0
    l2_hits: int = 0
    l2_misses: int = 0
    store_rows: int = 0
    store_bytes: int = 0
    store_chunks: int = 0
    store_chunk_bytes: int = 0
    store_seconds: float = 0.0
    row_bytes: int = 0

    def __sub__(self, other: "CacheStats") -> "CacheStats":
        return CacheStats(**{k: getattr(self, k) - getattr(other, k) for k in self.__dataclass_fields__
                             if k != "row_bytes"}, row_bytes=self.row_bytes)

    def __add__(self, other: "CacheStats") -> "CacheStats":
        return CacheStats(**{k: getattr(self, k) + getattr(other, k) for k in self.__dataclass_fields__
                             if k != "row_bytes"}, row_bytes=self.row_bytes or other.row_bytes)

    def metrics(self) -> dict[str, float]:
        """Per-epoch figures for metrics.parquet: hit ratio and bytes served per level, store reads."""
        def ratio(h, m):
            return h / (h + m) if h + m else 0.0
        return {"l1_hit_ratio": ratio(self.l1_hits, self.l1_misses),
                "l2_hit_ratio": ratio(self.l2_hits, self.l2_misses),
                "l1_bytes": float(self.l1_hits * self.row_bytes), "l2_bytes": float(self.l2_hits * self.row_bytes),
                "store_bytes": float(self.store_bytes), "store_chunk_bytes": float(self.store_chunk_bytes),
                "store_seconds": self.store_seconds,
                "lookups": float(self.l1_hits + self.l1_misses)}


class FeatureCache:
    """Level 1 on ``device``, level 2 on the host, the store below; :meth:`fetch` returns the rows.

    ``l1_bytes``, ``l2_bytes``: the budgets; ``policy``: ``fifo``, ``static`` (both levels hold the
    highest-``scores`` vertices, level 2 the ones after level 1's) or ``none``; ``scores`` float [N]
    (degrees) for static.
    """

    def __init__(self, rows: StoreRows, l1_bytes: int, l2_bytes: int, device, policy: str = "fifo",
                 scores: np.ndarray | None = None):
        self.rows = rows
        self.device = torch.device(device)
        check_budget("cache_l1_mb", l1_bytes, device_memory(self.device), str(self.device))
        host_need = l2_bytes + (l1_bytes if self.device.type == "cpu" else 0)
        check_budget("cache_l2_mb" if self.device.type != "cpu" else "cache_l1_mb + cache_l2_mb", host_need,
                     physical_memory(), "the host")
        n, f = rows.num_nodes, rows.dim
        cap1, cap2 = int(l1_bytes) // rows.row_bytes, int(l2_bytes) // rows.row_bytes
        if policy == "static":
            if scores is None:
                raise ValueError("a static cache needs scores")
            order = np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
            s1 = np.zeros(n)
            s1[order[:cap1]] = 1.0                        # level 1: the top cap1
            s2 = np.zeros(n)
            s2[order[cap1:cap1 + cap2]] = 1.0             # level 2: the next cap2
            self.l1 = CacheLevel("l1", policy, int(s1.sum()), n, f, self.device, s1)
            self.l2 = CacheLevel("l2", policy, int(s2.sum()), n, f, "cpu", s2)
            self.fill_bytes = self.l1.fill(lambda i: rows.read(i, count=False)) + \
                self.l2.fill(lambda i: rows.read(i, count=False))
        else:
            self.l1 = CacheLevel("l1", policy, cap1, n, f, self.device)
            self.l2 = CacheLevel("l2", policy, cap2, n, f, "cpu")
            self.fill_bytes = 0

    def stats(self) -> CacheStats:
        p1, p2, r = self.l1.policy, self.l2.policy, self.rows
        return CacheStats(p1.hits, p1.misses, p2.hits, p2.misses, r.rows, r.bytes, r.chunks, r.chunk_bytes_read,
                          r.seconds, r.row_bytes)

    def fetch(self, ids: np.ndarray, update: bool = True) -> torch.Tensor:
        """float32 [M, F] on the device: the features of ``ids`` (int64 [M], sorted, distinct), from
        whichever level holds them. ``update`` False (evaluation): the caches are read, not changed,
        and nothing is counted."""
        ids = np.asarray(ids, dtype=np.int64)
        out = torch.empty(ids.size, self.rows.dim, device=self.device)
        hit1, rows1 = self.l1.lookup(ids, update)
        hit1_t = torch.from_numpy(hit1).to(self.device)
        out[hit1_t] = rows1
        miss1 = ids[~hit1]
        hit2, rows2 = self.l2.lookup(miss1, update)
        miss2 = miss1[~hit2]
        below = torch.from_numpy(self.rows.read(miss2, count=update))
        host = torch.empty(miss1.size, self.rows.dim)
        host[torch.from_numpy(hit2)] = rows2
        host[torch.from_numpy(~hit2)] = below
        moved = host.to(self.device)
        out[~hit1_t] = moved
        if update:
            self.l2.insert(miss2, below)
            self.l1.insert(miss1, moved)
        return out


def check_budget(key: str, nbytes: int, memory: int | None, where: str) -> None:
    """Refuse a cache budget of more bytes than ``where`` has."""
    if nbytes < 0:
        raise ConfigError(f"{key}: a cache budget cannot be negative")
    if memory and nbytes > memory:
        raise ConfigError(f"{key}: a cache budget of {nbytes / MIB:,.0f} MiB is more than the "
                          f"{memory / MIB:,.0f} MiB of memory {where} has; lower it")
