"""Overlap and reuse between snapshots (PiPAD Sec. 4.1, ESDG Sec. 3.2), as Dask tables.

overlap table: for frames of S consecutive snapshots (S in 2, 4, 8), the overlap part (edges in
every snapshot of the frame) and the exclusive parts, the overlap rate, and what overlap-aware
transfer saves in edge indices (the overlap once instead of S times).

formats table: per snapshot, the size of its adjacency in CSR, COO and PiPAD's sliced CSR (in
words, the paper's counts, on the snapshot's edges: ``nnz``), and the bytes of ESDG's
graph-difference transfer against the full transfer, on the store's snapshots and on their
edge-life smoothed version. The transfer columns are exactly what training's ``transfer: diff``
sends (:mod:`dynagnn.graph.diff`, the one implementation and byte model): they are counted on the
normalised adjacency Â, whose ``adj_nnz`` entries are the edges plus every self-loop; ``added`` and
``removed`` are entries of Â_t not in Â_{t-1} and back; ``full_bytes`` = 8·(N+1) + 12·adj_nnz (CSR);
``diff_bytes`` = 8·(added + removed) + 4·adj_nnz (the first snapshot goes in full);
``diff_saving`` = full_bytes / diff_bytes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data.discretize import smooth_edge_life
from ..data.store import open_store
from ..graph import diff as gd
from ..graph import overlap as ov
from ..graph.sliced import SlicedCSR, coo_size_words, csr_size_words
from .parallel import map_ranges, workers_of

FRAME_SIZES = (2, 4, 8)
OVERLAP_COLUMNS = ["frame_size", "frame", "t0", "t1", "edges_mean", "overlap_edges", "union_edges",
                   "exclusive_edges", "overlap_rate", "overlap_jaccard", "index_transfer_saving"]
FORMAT_COLUMNS = ["edge_life", "snapshot", "nnz", "slices", "csr_words", "coo_words", "sliced_words",
                  "adj_nnz", "added", "removed", "full_bytes", "diff_bytes", "diff_saving"]


def frame_rows(store_path: str, t0: int, t1: int, size: int) -> pd.DataFrame:
    """Overlap rows of the frames of ``size`` snapshots that start in [t0, t1) (t0 a multiple of size)."""
    store = open_store(store_path)
    end = min(store.num_snapshots, t1 + (-(t1 - t0)) % size)
    edges = store.window_edges(t0, end)
    rows = []
    for a in range(t0, end, size):
        part = edges[a - t0: min(a + size, end) - t0]
        split = ov.split_frame(part, store.num_nodes)
        nnz = np.array([p[0].shape[0] for p in part])
        n_over = int(split.overlap_row.shape[0])
        n_excl = int(sum(e[0].shape[0] for e in split.exclusive))
        sent = n_over + n_excl
        rows.append({
            "frame_size": size, "frame": a // size, "t0": a, "t1": a + len(part),
            "edges_mean": float(nnz.mean()), "overlap_edges": n_over, "union_edges": int(_union_size(part, store.num_nodes)),
            "exclusive_edges": n_excl, "overlap_rate": ov.overlap_rate(split), "overlap_jaccard": ov.overlap_jaccard(split),
            # edge indices sent per snapshot, against the overlap once plus the exclusive parts
            "index_transfer_saving": float(nnz.sum() / sent) if sent else 1.0,
        })
    return pd.DataFrame(rows, columns=OVERLAP_COLUMNS)


def _union_size(part, n: int) -> int:
    from ..sortedkeys import unique_sorted

    keys = np.concatenate([r * n + c for r, c, _ in part]) if part else np.zeros(0, np.int64)
    return int(unique_sorted(keys).shape[0])


def overlap_table(store_path, client=None, sizes=FRAME_SIZES, *, progress: bool = True) -> pd.DataFrame:
    """Overlap rows for every frame size, frames split among Dask tasks."""
    store = open_store(store_path)
    T = store.num_snapshots
    out = []
    for size in sizes:
        if size > T:
            continue
        n_frames = -(-T // size)
        per_task = max(1, -(-n_frames // (4 * workers_of(client))))
        ranges = [(f * size, min(T, (f + per_task) * size)) for f in range(0, n_frames, per_task)]
        out.append(map_ranges(frame_rows, store_path, ranges, client, size, desc=f"overlap S={size}",
                              progress=progress))
    return pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=OVERLAP_COLUMNS)


def format_rows(store_path: str, t0: int, t1: int, life: int) -> pd.DataFrame:
    """Format and transfer sizes of snapshots t0..t1-1 after edge-life ``life`` smoothing."""
    store = open_store(store_path)
    first = max(0, t0 - life)  # the smoothing window of t0-1, whose difference t0 needs
    parts = smooth_edge_life(store.window_edges(first, t1), store.num_nodes, life)
    n = store.num_nodes
    rows = []
    prev_keys = gd.adjacency_keys(*parts[t0 - 1 - first], n)[0] if t0 > 0 else None
    for t in range(t0, t1):
        r, c, w = parts[t - first]
        nnz = int(r.shape[0])
        sliced = SlicedCSR.from_edges(r, c, w, n)
        keys, vals, _ = gd.adjacency_keys(r, c, w, n)
        full = gd.full_bytes(keys.shape[0], n)
        if prev_keys is None:
            added, removed, sent = int(keys.shape[0]), 0, full  # the first snapshot always goes in full
        else:
            d = gd.diff_keys(prev_keys, keys, vals)
            added, removed, sent = d.num_added, d.num_removed, d.nbytes
        prev_keys = keys
        rows.append({"edge_life": life, "snapshot": t, "nnz": nnz, "slices": sliced.num_slices,
                     "csr_words": csr_size_words(nnz, n), "coo_words": coo_size_words(nnz),
                     "sliced_words": sliced.size_words(), "adj_nnz": int(keys.shape[0]), "added": added,
                     "removed": removed, "full_bytes": full, "diff_bytes": sent,
                     "diff_saving": full / sent if sent else 1.0})
    return pd.DataFrame(rows, columns=FORMAT_COLUMNS)


def formats_table(store_path, client=None, edge_lives=(1, 5), *, progress: bool = True) -> pd.DataFrame:
    """Format rows for every edge life, snapshot ranges split among Dask tasks."""
    from .parallel import snapshot_ranges

    store = open_store(store_path)
    ranges = snapshot_ranges(store, 4 * workers_of(client))
    out = [map_ranges(format_rows, store_path, ranges, client, life, desc=f"formats l={life}", progress=progress)
           for life in edge_lives]
    return pd.concat(out, ignore_index=True)
