"""ESDG's graph difference between consecutive snapshots (ESDG Sec. 3.2, 6.2; notes/esdg.md §3.2):
the one implementation, used by training's snapshot transfer (:mod:`dynagnn.train.transfer`) and by
the analyze stage's formats table (:mod:`dynagnn.analysis.reuse`), with one byte model.

Consecutive snapshots share most of their topology but not their values (normalisation and
smoothing change every value). With Â_{t-1} already on the device, ESDG sends for Â_t only

* the indices of Â_{t-1}^ext = entries of Â_{t-1} not in Â_t   (``removed``),
* the indices of Â_t^ext     = entries of Â_t not in Â_{t-1}   (``added``),
* all values of Â_t, in Â_t's sorted (row, col) order           (``values``),

and the device rebuilds the common part (Â_{t-1} minus the removed), merges the added in, and
attaches the values. An index is one sorted int64 key ``row·N + col``.

What is diffed is what training sends: the normalised adjacency Â = D^-1/2 (A + I) D^-1/2, whose
pattern is the snapshot's edges plus every self-loop (:func:`adjacency_keys`).

Byte model (what :class:`~dynagnn.train.transfer.SnapshotFeeder` counts), int64 indices, float32
values:

* full (a CSR: int64 row offsets, int64 columns, float32 values): ``8·(N+1) + 12·nnz_t``;
* difference: ``8·(|removed| + |added|) + 4·nnz_t``.

ESDG's own derived model counts COO (row, col) pairs at 16 bytes (full ``20·nnz``, difference
``16·(|removed| + |added|) + 4·nnz``); one int64 key per index halves the index part of the
difference without changing the technique, and the full CSR needs 8 bytes per column plus the row
offsets.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from dynagnn.sortedkeys import isin_sorted

INDEX_BYTES = 8    # one int64 key row·N + col
VALUE_BYTES = 4    # float32
OFFSET_BYTES = 8   # int64 CSR row offsets


def keys_of(row, col, num_nodes: int) -> np.ndarray:
    """int64 keys ``row·N + col`` (sorted when (row, col) is)."""
    return np.asarray(row, dtype=np.int64) * np.int64(num_nodes) + np.asarray(col, dtype=np.int64)


def adjacency_keys(row, col, weight, num_nodes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(sorted keys int64 [nnz], values float32 [nnz], row int64 [nnz]) of the normalised adjacency
    Â of one snapshot's edges: what training holds on the host and sends (self-loops included)."""
    from dynagnn.graph.csr import normalized_triples

    r, c, v = normalized_triples(row, col, weight, num_nodes)
    return keys_of(r, c, num_nodes), v, r


@dataclass
class GraphDiff:
    """What ESDG sends for snapshot t given snapshot t-1 (host side).

    removed: int64 keys of Â_{t-1} not in Â_t, sorted; added: int64 keys of Â_t not in Â_{t-1},
    sorted; values: float32 [nnz_t], every value of Â_t in key order.
    """

    removed: np.ndarray
    added: np.ndarray
    values: np.ndarray

    @property
    def num_removed(self) -> int:
        return int(self.removed.shape[0])

    @property
    def num_added(self) -> int:
        return int(self.added.shape[0])

    @property
    def nnz(self) -> int:
        return int(self.values.shape[0])

    @property
    def nbytes(self) -> int:
        """Bytes sent: :func:`diff_bytes`."""
        return diff_bytes(self.num_removed, self.num_added, self.nnz)


def diff_keys(prev_keys: np.ndarray, next_keys: np.ndarray, next_values: np.ndarray) -> GraphDiff:
    """The difference from sorted unique keys ``prev_keys`` to ``next_keys`` (values in key order)."""
    return GraphDiff(prev_keys[~isin_sorted(prev_keys, next_keys)],
                     next_keys[~isin_sorted(next_keys, prev_keys)], np.asarray(next_values, dtype=np.float32))


def diff(prev: tuple, nxt: tuple, num_nodes: int) -> GraphDiff:
    """Graph difference from ``prev`` to ``nxt``, each (row, col, val) sorted by (row, col), unique."""
    return diff_keys(keys_of(prev[0], prev[1], num_nodes), keys_of(nxt[0], nxt[1], num_nodes), nxt[2])


def merge_keys(prev_keys: torch.Tensor, removed: torch.Tensor, added: torch.Tensor) -> torch.Tensor:
    """The device side: Â_t's sorted keys from Â_{t-1}'s sorted keys and the difference's removed
    and added keys (sorted), on whatever device they are. Removing is a searchsorted mask; adding
    merges two sorted arrays without a sort (each added key lands after the common keys below it
    and after the added keys before it)."""
    common = prev_keys
    if removed.numel():
        keep = torch.ones(prev_keys.shape[0], dtype=torch.bool, device=prev_keys.device)
        keep[torch.searchsorted(prev_keys, removed)] = False
        common = prev_keys[keep]
    if not added.numel():
        return common
    slot = torch.searchsorted(common, added) + torch.arange(added.shape[0], device=added.device)
    keys = torch.empty(common.shape[0] + added.shape[0], dtype=common.dtype, device=common.device)
    is_added = torch.zeros(keys.shape[0], dtype=torch.bool, device=keys.device)
    is_added[slot] = True
    keys[slot] = added
    keys[~is_added] = common
    return keys


def apply(prev_keys: np.ndarray, d: GraphDiff) -> tuple[np.ndarray, np.ndarray]:
    """Host-side rebuild with :func:`merge_keys`: (Â_t's sorted keys, its values)."""
    keys = merge_keys(torch.from_numpy(np.ascontiguousarray(prev_keys, dtype=np.int64)),
                      torch.from_numpy(d.removed), torch.from_numpy(d.added)).numpy()
    if keys.shape[0] != d.nnz:
        raise ValueError(f"graph difference does not fit the previous snapshot: {keys.shape[0]} keys "
                         f"for {d.nnz} values")
    return keys, d.values.copy()


def full_bytes(nnz: int, num_nodes: int) -> int:
    """Bytes to send a snapshot in full as CSR: ``8·(N+1) + 12·nnz``."""
    return OFFSET_BYTES * (int(num_nodes) + 1) + (INDEX_BYTES + VALUE_BYTES) * int(nnz)


def diff_bytes(num_removed: int, num_added: int, nnz: int) -> int:
    """Bytes to send a difference: ``8·(|removed| + |added|) + 4·nnz_t``."""
    return INDEX_BYTES * (int(num_removed) + int(num_added)) + VALUE_BYTES * int(nnz)
