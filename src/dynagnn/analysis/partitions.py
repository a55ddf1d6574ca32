"""Partition quality of every partitioner at several worker counts, as a Dask table.

Vertex partitioners (hash, range, METIS, BGL's BFS blocks, Sven's Re-FlexBiCut) cut the union graph
of all snapshots; each is then scored on the union graph (edge cut, communication volume, Sven's
maximum per-worker volume, load balance) and on the snapshots themselves (ESDG's vertex-partition
volume, summed over snapshots). The temporal partitioners (ESDG's even contiguous split, BLAD's
balanced snapshot groups) are scored by the edge load of their busiest worker. Every (method,
workers) pair is one Dask task; the union graph is built once and scattered to the workers.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from ..data.store import open_store
from ..errors import InputError
from ..graph import partition as gp
from ..graph.union import union_graph
from ..splits import even_ranges, minmax_ranges

VERTEX_METHODS = ("hash", "range", "metis", "bgl", "reflexbicut")
TEMPORAL_METHODS = ("esdg_even", "blad_groups")
COLUMNS = ["method", "workers", "seconds", "edge_cut", "comm_volume", "max_part_comm", "load_balance",
           "snapshot_volume", "max_worker_edges", "edge_balance"]


def _vertex_parts(method: str, row, col, n: int, P: int, seed: int) -> np.ndarray:
    if method == "hash":
        return gp.hash_partition(n, P, seed=seed)
    if method == "range":
        return gp.range_partition(n, P)
    if method == "metis":
        return gp.metis_partition(row, col, n, P, seed=seed)
    if method == "bgl":
        return gp.bgl_partition(row, col, n, P, seed=seed)
    if method == "reflexbicut":
        return gp.reflexbicut_partition(row, col, n, P, seed=seed)
    raise InputError(f"unknown partitioner {method!r}: expected one of {VERTEX_METHODS + TEMPORAL_METHODS}")


def score(store_path: str, method: str, P: int, union, seed: int = 0) -> dict:
    """One row of the table: partition with ``method`` into P workers and measure it (a Dask task)."""
    store = open_store(store_path)
    n, T = store.num_nodes, store.num_snapshots
    nnz = np.diff(store.offsets)
    row = dict.fromkeys(COLUMNS, np.nan)
    row.update(method=method, workers=P)
    t0 = time.perf_counter()
    if method in TEMPORAL_METHODS:
        ranges = even_ranges(T, P) if method == "esdg_even" else minmax_ranges(nnz.astype(float), P)
        row["seconds"] = time.perf_counter() - t0
        load = np.array([nnz[a:b].sum() for a, b in ranges], dtype=float)
        row["max_worker_edges"] = float(load.max())
        row["edge_balance"] = float(load.max() / load.mean()) if load.mean() else 1.0
        return row
    urow, ucol = union
    parts = _vertex_parts(method, urow, ucol, n, P, seed)
    row["seconds"] = time.perf_counter() - t0
    q = gp.partition_quality(urow, ucol, n, parts, P)
    row.update({k: q[k] for k in ("edge_cut", "comm_volume", "max_part_comm", "load_balance")})
    # on the store's (source, target) edges: a source is sent to the parts owning its targets, whose
    # rows of Â read it (PyG's direction, :mod:`dynagnn.graph.csr`): the vertex strategy's halo
    row["snapshot_volume"] = gp.snapshot_volume([(r, c) for r, c, _ in store.window_edges(0, T)], n, parts, P)
    return row


def check_workers(store, workers, temporal: bool = True) -> None:
    """Refuse a worker count above the number of vertices (or snapshots, for temporal partitioners)."""
    for P in workers:
        if P < 1 or P > store.num_nodes:
            raise InputError(f"{P} workers for {store.num_nodes} vertices: a worker count must be 1..N")
        if temporal and P > store.num_snapshots:
            raise InputError(f"{P} workers for {store.num_snapshots} snapshots: the temporal partitioners "
                             f"need at least one snapshot per worker")


def partition_table(store_path, client=None, workers=(2, 4, 8), methods=VERTEX_METHODS + TEMPORAL_METHODS,
                    *, seed: int = 0) -> pd.DataFrame:
    """One row per (method, worker count); raises InputError for a worker count above the number of
    vertices or snapshots."""
    store = open_store(store_path)
    check_workers(store, workers, temporal=any(m in TEMPORAL_METHODS for m in methods))
    union = union_graph(store)
    jobs = [(m, P) for m in methods for P in workers]
    if client is None:
        rows = [score(str(store_path), m, P, union, seed) for m, P in jobs]
    else:
        shared = client.scatter(union, broadcast=True)
        futures = [client.submit(score, str(store_path), m, P, shared, seed, pure=False) for m, P in jobs]
        rows = [f.result() for f in futures]
    return pd.DataFrame(rows, columns=COLUMNS)
