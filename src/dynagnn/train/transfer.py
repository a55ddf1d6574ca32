"""Snapshots on the host, delivered to the training device in full or as ESDG graph differences.

The host keeps every snapshot's normalised adjacency ``Â_t`` as sorted int64 keys ``row·N + col``
and float32 values (built once, :func:`dynagnn.graph.csr.normalized_triples`). The device keeps the
snapshots it was last asked for (a window, or a checkpointed block). Asking for ``t`` when ``t-1``
is resident sends, in ``diff`` mode, ESDG's graph difference (Sec. 3.2): the keys removed from
``t-1``, the keys added in ``t``, and all values of ``t``; the device rebuilds ``t``'s keys from
``t-1``'s by set difference and a sorted merge, then its CSR with one bincount. Otherwise the full
CSR (row offsets, columns, values) is sent. The difference and its byte model are
:mod:`dynagnn.graph.diff`'s (the same the analyze stage reports):

* full: ``8·(N+1) + 12·nnz_t``;
* diff: ``8·(|removed| + |added|) + 4·nnz_t``.

On a GPU the host arrays are pinned and copied with ``non_blocking=True``; on CPU the "device" is a
separate buffer (a copy), so the same code runs and is tested without one. The sequential loop's
feeder on a CPU (``preload``) makes every copy when it is built, before training: made in a step,
a long-lived copy fragments the heap the step's temporaries come from.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.graph import diff as gd
from dynagnn.graph.csr import Adjacency, csr_matrix, is_symmetric
from dynagnn.sortedkeys import row_offsets
from dynagnn.timing import PhaseTimer

MODES = ("full", "diff")


@dataclass
class HostSnapshot:
    """One snapshot on the host: sorted keys int64 [nnz], values float32 [nnz], CSR row offsets [N+1],
    and whether ``Â`` is symmetric (the graph operator's backward then reuses it)."""

    keys: np.ndarray
    values: np.ndarray
    crow: np.ndarray
    symmetric: bool = False

    @property
    def nnz(self) -> int:
        return int(self.keys.shape[0])


def host_snapshot(row, col, weight, num_nodes: int) -> HostSnapshot:
    keys, v, r = gd.adjacency_keys(row, col, weight, num_nodes)
    crow = row_offsets(r, num_nodes)
    return HostSnapshot(keys, v, crow, is_symmetric(r, keys - r * np.int64(num_nodes), v, num_nodes))


def load_host_snapshots(store) -> list[HostSnapshot]:
    """Every snapshot's normalised adjacency on the host, read in one slice of the store."""
    n = store.num_nodes
    return [host_snapshot(r, c, w, n) for r, c, w in store.window_edges(0, store.num_snapshots)]


def apply_key_diff(prev_keys: torch.Tensor, removed: torch.Tensor, added: torch.Tensor,
                   values: torch.Tensor, num_nodes: int, symmetric: bool = False) -> tuple[Adjacency, torch.Tensor]:
    """Device side: t's adjacency and sorted keys from t-1's sorted keys and the difference
    (:func:`dynagnn.graph.diff.merge_keys`), its CSR built with one bincount."""
    keys = gd.merge_keys(prev_keys, removed, added)
    if keys.shape[0] != values.shape[0]:
        raise ValueError(f"graph difference does not fit the resident snapshot: {keys.shape[0]} keys "
                         f"for {values.shape[0]} values")
    row = torch.div(keys, num_nodes, rounding_mode="floor")
    crow = torch.zeros(num_nodes + 1, dtype=torch.int64, device=keys.device)
    crow[1:] = torch.cumsum(torch.bincount(row, minlength=num_nodes), 0)
    return Adjacency(csr_matrix(crow, keys - row * num_nodes, values, num_nodes), symmetric), keys


class SnapshotFeeder:
    """Delivers ``(Â_t, X_t)`` on ``device``, counting bytes and time in the timer's ``transfer`` phase.

    ``host``: the HostSnapshot of every t; ``features``: float32 [N, F] (static, sent once) or
    [T, N, F]; ``mode``: "full" or "diff"; ``capacity``: snapshots kept resident (None: all);
    ``preload``: on a CPU in full mode with no capacity, every snapshot's copy made now
    (:meth:`_preload`; a process that reads every snapshot, as the sequential loop does).
    """

    def __init__(self, host: list[HostSnapshot], features: np.ndarray, num_nodes: int,
                 device: torch.device | str = "cpu", mode: str = "full", capacity: int | None = None,
                 timer: PhaseTimer | None = None, preload: bool = False):
        if mode not in MODES:
            raise ValueError(f"transfer mode {mode!r}: expected one of {', '.join(MODES)}")
        self.host = host
        self.num_nodes = int(num_nodes)
        self.device = torch.device(device)
        self.mode = mode
        self.capacity = capacity
        self.timer = timer
        self.gpu = self.device.type == "cuda"
        self._diffs: dict[int, gd.GraphDiff] = {}
        self._resident: OrderedDict[int, tuple[Adjacency, torch.Tensor | None]] = OrderedDict()
        self.stats = {"full": 0, "diff": 0, "bytes": 0}
        feats = np.ascontiguousarray(features, dtype=np.float32)
        self._static = feats.ndim == 2
        self._features_host = torch.from_numpy(feats)
        if self.gpu:
            self._features_host = self._features_host.pin_memory()
        self._features_dev = self._send(self._features_host) if self._static else None
        if preload and not self.gpu and mode == "full" and capacity is None:
            self._preload()

    def _preload(self) -> None:
        """On a CPU, every snapshot's copy made now, before training rather than in the step that first
        reads it: a copy made inside a step is a long-lived block among the step's temporaries, and
        glibc, which keeps freed memory (:func:`dynagnn.allocator.keep_freed_heap`), then serves each
        later step's temporaries from fresh pages beside it. Measured on CollegeMsg daily (T-GCN,
        window 4, 194 snapshots, one epoch): the resident set grew 0.4 MiB a step, to 115 MiB above
        its start, with copies made as read, and stayed at 71-73 MiB with them made first; the live
        bytes grew by the same 7 MiB of copies either way. (On a GPU the copies stay lazy: the
        one-snapshot loop's transfer is what PiPAD's pipeline hides and the ladder measures. A
        process that reads a few snapshots, or whose feeder is bounded, keeps them lazy too.)"""
        for t, snap in enumerate(self.host):
            if snap is not None:
                self._resident[t] = self._load(t)

    def __len__(self) -> int:
        return len(self.host)

    def _send(self, array) -> torch.Tensor:
        t = torch.from_numpy(array) if isinstance(array, np.ndarray) else array
        if self.gpu:
            if not t.is_pinned():
                t = t.pin_memory()
            return t.to(self.device, non_blocking=True)
        return t.clone()

    def _diff(self, t: int) -> gd.GraphDiff:
        d = self._diffs.get(t)
        if d is None:
            d = self._diffs[t] = gd.diff_keys(self.host[t - 1].keys, self.host[t].keys, self.host[t].values)
        return d

    def _count(self, kind: str, nbytes: int) -> None:
        self.stats[kind] += 1
        self.stats["bytes"] += nbytes
        if self.timer is not None:
            self.timer.add_bytes(kind, nbytes)

    def _load(self, t: int) -> tuple[Adjacency, torch.Tensor | None]:
        snap = self.host[t]
        n = self.num_nodes
        prev = self._resident.get(t - 1)
        if self.mode == "diff" and prev is not None and prev[1] is not None:
            d = self._diff(t)
            self._count("diff", d.nbytes)
            return tuple(apply_key_diff(prev[1], self._send(d.removed), self._send(d.added),
                                        self._send(d.values), n, snap.symmetric))
        self._count("full", gd.full_bytes(snap.nnz, n))
        crow = self._send(snap.crow)
        col = self._send(snap.keys % np.int64(n))
        adj = Adjacency(csr_matrix(crow, col, self._send(snap.values), n), snap.symmetric)
        keys = None
        if self.mode == "diff":
            # the device derives keys from its CSR rather than receiving them twice
            rows = torch.repeat_interleave(torch.arange(n, device=self.device), crow.diff())
            keys = rows * n + col
        return adj, keys

    def adjacency(self, t: int) -> Adjacency:
        if t in self._resident:
            self._resident.move_to_end(t)
            return self._resident[t][0]
        ctx = self.timer.phase("transfer") if self.timer is not None else contextlib.nullcontext()
        with ctx:
            entry = self._load(t)
        self._resident[t] = entry
        if self.capacity is not None:
            while len(self._resident) > self.capacity:
                self._resident.popitem(last=False)
        return entry[0]

    def features(self, t: int) -> torch.Tensor:
        if self._static:
            return self._features_dev
        ctx = self.timer.phase("transfer") if self.timer is not None else contextlib.nullcontext()
        with ctx:
            x = self._send(self._features_host[t])
            self._count_features(x)
        return x

    def _count_features(self, x: torch.Tensor) -> None:
        self.stats["bytes"] += x.numel() * 4
        if self.timer is not None:
            self.timer.add_bytes("features", x.numel() * 4)

    def get(self, t: int) -> tuple[Adjacency, torch.Tensor]:
        return self.adjacency(t), self.features(t)

    def drop(self) -> None:
        """Forget every resident snapshot (the next request is sent in full)."""
        self._resident.clear()

