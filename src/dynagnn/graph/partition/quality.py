"""Quality of a vertex partition: edge cut, communication volumes (per part and summed over
snapshots), load and training-vertex balance."""

from __future__ import annotations

import numpy as np

from dynagnn.errors import InputError

from .base import check_edges, remote_pairs


def partition_quality(row, col, N: int, parts, P: int, train_mask=None) -> dict:
    """Quality of a vertex partition of a symmetric graph.

    - ``edge_cut``: undirected edges with endpoints in different parts, each counted once.
    - ``comm_volume``: sum_v lam(v), lam(v) = number of parts other than parts[v] holding >= 1
      neighbour of v (ESDG's per-snapshot vertex-partition volume, connectivity-1 form).
    - ``max_part_comm``: max over parts i of sum_{v in part i} lam(v), the number of
      (vertex, remote part) pairs part i sends (Sven's zeta with unit weights).
    - ``load_balance``: max part size / (N / P).
    - ``train_balance`` (with ``train_mask``): max training vertices in a part / (|train| / P).
    """
    N, P = int(N), int(P)
    row, col = check_edges(row, col, N)
    parts = np.asarray(parts, dtype=np.int64).ravel()
    if parts.size != N or (N and (parts.min() < 0 or parts.max() >= P)):
        raise InputError(f"parts must be {N} labels in [0, {P})")
    cross = parts[row] != parts[col]
    edge_cut = int(np.count_nonzero(cross & (row < col)))
    keys = remote_pairs(row, col, parts, P)
    per_part = np.bincount(parts[keys // P], minlength=P)
    sizes = np.bincount(parts, minlength=P)
    out = {
        "edge_cut": edge_cut,
        "comm_volume": int(keys.size),
        "max_part_comm": int(per_part.max()) if P else 0,
        "part_comm": per_part.astype(np.int64),
        "load_balance": float(sizes.max() / (N / P)) if N else 1.0,
    }
    if train_mask is not None:
        tm = np.asarray(train_mask, dtype=bool).ravel()
        nt = int(tm.sum())
        tp = np.bincount(parts[tm], minlength=P)
        out["train_balance"] = float(tp.max() / (nt / P)) if nt else 1.0
    return out


def snapshot_volume(edge_lists, N: int, parts, P: int) -> int:
    """Sum of ``comm_volume`` over snapshots, each given as a symmetric (row, col[, ...]) edge list."""
    parts = np.asarray(parts, dtype=np.int64).ravel()
    total = 0
    for e in edge_lists:
        row, col = check_edges(e[0], e[1], N)
        total += int(remote_pairs(row, col, parts, P).size)
    return total
