"""Per-snapshot statistics of a store, computed in parallel on a Dask cluster.

One row per snapshot: active vertices, edges, degree summary, and the change against the previous
snapshot (common, added and removed edges). This is the load variation that BLAD's scheduler
balances and the overlap that PiPAD's and ESDG's transfers exploit.

Snapshots are split into contiguous ranges, one Dask task each; a task opens the store itself and
reads only its range plus the one snapshot before it, so tasks run on any worker of any cluster.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from ..data.store import open_store
from ..sortedkeys import intersection_size
from ..tables import write_table
from .parallel import map_ranges, snapshot_ranges, workers_of

log = logging.getLogger(__name__)

COLUMNS = ["snapshot", "time", "edges", "active_nodes", "deg_mean", "deg_median", "deg_p99", "deg_max",
           "common", "added", "removed", "overlap_rate", "jaccard"]


def snapshot_stats(row: np.ndarray, col: np.ndarray, prev_row: np.ndarray | None, prev_col: np.ndarray | None,
                   num_nodes: int) -> dict:
    """Statistics of one snapshot against the previous one (None for the first).

    row, col: int64 [nnz] sorted by (row, col), without duplicates. Degrees are row counts (the
    degree of a symmetrised undirected graph, the out-degree of a directed one), over active nodes.
    overlap_rate = common / edges (the share of this snapshot already present before), jaccard =
    common / |union|.
    """
    nnz = int(row.shape[0])
    active = np.zeros(num_nodes, dtype=bool)
    active[row] = True
    active[col] = True
    n_active = int(np.count_nonzero(active))
    deg = np.bincount(row, minlength=num_nodes)[active] if n_active else np.zeros(0, np.int64)
    key = row * num_nodes + col
    if prev_row is None:
        common, prev_nnz = 0, 0
    else:
        prev_key = prev_row * num_nodes + prev_col
        prev_nnz = int(prev_key.shape[0])
        common = intersection_size(key, prev_key)
    union = nnz + prev_nnz - common
    return {
        "edges": nnz,
        "active_nodes": n_active,
        "deg_mean": float(deg.mean()) if deg.size else 0.0,
        "deg_median": float(np.median(deg)) if deg.size else 0.0,
        "deg_p99": float(np.percentile(deg, 99)) if deg.size else 0.0,
        "deg_max": int(deg.max()) if deg.size else 0,
        "common": common,
        "added": nnz - common,
        "removed": prev_nnz - common,
        "overlap_rate": common / nnz if nnz else 0.0,
        "jaccard": common / union if union else 0.0,
    }


def range_stats(store_path: str, t0: int, t1: int) -> pd.DataFrame:
    """Statistics of snapshots t0..t1-1 (a Dask task: opens the store itself)."""
    store = open_store(store_path)
    first = max(t0 - 1, 0)
    edges = store.window_edges(first, t1)
    rows = []
    for t in range(t0, t1):
        r, c, _ = edges[t - first]
        prev = edges[t - 1 - first] if t > 0 else (None, None, None)
        rows.append({"snapshot": t, "time": store.times[t].item(),
                     **snapshot_stats(r, c, prev[0], prev[1], store.num_nodes)})
    return pd.DataFrame(rows, columns=COLUMNS)


def compute_stats(store_path: str | Path, client=None, *, tasks_per_worker: int = 4,
                  progress: bool = True) -> pd.DataFrame:
    """Per-snapshot statistics of the store at ``store_path``, one row per snapshot (see COLUMNS).

    With a Dask ``client`` the snapshot ranges run as tasks on its workers; without one they run
    here, one after the other.
    """
    store = open_store(store_path)
    ranges = snapshot_ranges(store, tasks_per_worker * workers_of(client))
    df = map_ranges(range_stats, store_path, ranges, client, desc=f"stats {Path(store_path).parent.name}",
                    progress=progress)
    df.attrs["checksum"] = store.checksum
    return df


def write_stats(df: pd.DataFrame, out: str | Path, checksum: str) -> Path:
    """Write the statistics table (see :func:`dynagnn.tables.write_table`)."""
    return write_table(df, out, checksum)
