"""The small stores, graphs and event streams tests build (each seeded: the same data on every call)."""

from __future__ import annotations

import numpy as np

from dynagnn.data import discretize as D
from dynagnn.data.store import write_store
from dynagnn.data.synthetic import churn
from dynagnn.data.types import EventStream, RawGraph


def small_store(path, labels: str | None = None, num_nodes=40, num_edges=120, num_snapshots=8,
                features="random", dim=6, seed=0, directed=False):
    """A churning power-law graph (10% of edges replaced per step) as a store, with optional labels:
    "class" (3 static classes) or "regress" (a float target per snapshot and vertex)."""
    raw = churn(num_nodes, num_edges, num_snapshots, seed=seed)
    raw.directed = directed
    rng = np.random.default_rng(seed)
    if labels == "class":
        raw.node_labels = rng.integers(0, 3, num_nodes).astype(np.int64)
    elif labels == "regress":
        raw.node_labels = rng.random((num_snapshots, num_nodes)).astype(np.float32)
    snaps = D.build_snapshots(raw, by="source", directed=directed)
    x = D.make_features(features, raw, snaps, dim=dim, seed=seed)
    return write_store(path, raw, snaps, x, spec={"labels": labels, "seed": seed})


def random_events(n_nodes=30, n_events=400, t_max=1000, seed=0, weights=False):
    """Time-sorted random events with self-loops and repeats, as real streams have."""
    rng = np.random.default_rng(seed)
    src = rng.integers(0, n_nodes, n_events)
    dst = rng.integers(0, n_nodes, n_events)
    t = np.sort(rng.integers(0, t_max, n_events))
    dup = rng.random(n_events) < 0.1  # copy some events exactly
    idx = np.flatnonzero(dup[1:]) + 1
    src[idx], dst[idx], t[idx] = src[idx - 1], dst[idx - 1], t[idx - 1]
    w = rng.random(n_events).astype(np.float32) if weights else None
    return EventStream(src.astype(np.int64), dst.astype(np.int64), t.astype(np.int64), w)


def event_store(path, n_nodes=25, n_events=600, seed=0, weights=True):
    ev = random_events(n_nodes=n_nodes, n_events=n_events, t_max=5000, seed=seed, weights=weights)
    raw = RawGraph(num_nodes=n_nodes, node_ids=np.arange(n_nodes), events=ev, directed=True, name="ev")
    snaps = D.build_snapshots(raw, by="time", width=1000, directed=True)
    return write_store(path, raw, snaps, D.make_features("degree", raw, snaps, dim=4), spec={"seed": seed})


def random_csr(n=60, m=500, seed=0, hub=True):
    rng = np.random.default_rng(seed)
    r = rng.integers(0, n, m)
    c = rng.integers(0, n, m)
    if hub:  # a high-degree vertex so that fan-outs bind
        r = np.r_[r, np.zeros(n - 1, np.int64)]
        c = np.r_[c, np.arange(1, n)]
    k = np.unique(np.r_[r * n + c, c * n + r])
    k = k[k // n != k % n]
    row, col = k // n, k % n
    indptr = np.zeros(n + 1, np.int64)
    indptr[1:] = np.cumsum(np.bincount(row, minlength=n))
    return indptr, col
