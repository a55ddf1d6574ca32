"""Mapping a source's node ids (integers or strings) to dense ids ``0..N-1``."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import InputError
from ..sortedkeys import unique_sorted


def dense_ids(*columns) -> tuple[list[np.ndarray], np.ndarray]:
    """Map the ids in all ``columns`` together to dense int64 ids.

    Each column is a numpy array or a pyarrow (Chunked)Array of integer or string ids; the same id
    gets the same dense id in every column. Integer ids keep their order (dense id i is the i-th
    smallest id); string ids are sorted too, so the mapping does not depend on row order.

    Returns the mapped columns (int64, one per input) and the id table [N] (int64 for integer ids,
    an object array of str otherwise) with ``table[dense] == original``.
    """
    arrays = [_to_numpy(c) for c in columns]
    if all(a.dtype.kind in "iu" for a in arrays):
        return _dense_int_ids(arrays)
    arrays = [a.astype(str).astype(object) if a.dtype.kind != "O" else a for a in arrays]
    combined = pa.chunked_array([pa.array(a, type=pa.string()) for a in arrays])
    table = np.sort(np.asarray(pc.unique(combined).to_numpy(zero_copy_only=False), dtype=object))
    lookup = pa.array(table, type=pa.string())
    mapped = [np.asarray(pc.index_in(pa.array(a, type=pa.string()), value_set=lookup), dtype=np.int64)
              for a in arrays]
    return mapped, table


def _to_numpy(column) -> np.ndarray:
    if isinstance(column, pa.ChunkedArray):
        return column.to_numpy()
    if isinstance(column, pa.Array):
        return column.to_numpy(zero_copy_only=False)
    return np.asarray(column)


def _dense_int_ids(arrays: list[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    for a in arrays:
        # uint64 ids past int64 would wrap to negative ones, silently reordered
        if a.dtype == np.uint64 and a.size and int(a.max()) > np.iinfo(np.int64).max:
            raise InputError(f"node id {int(a.max())} does not fit in 64 bits: expected integers "
                             f"from -2**63 to 2**63-1")
    arrays = [a.astype(np.int64, copy=False) for a in arrays]
    lo = min(int(a.min()) for a in arrays if a.size) if any(a.size for a in arrays) else 0
    hi = max(int(a.max()) for a in arrays if a.size) if any(a.size for a in arrays) else -1
    total = sum(a.size for a in arrays)
    span = hi - lo + 1
    if span <= max(4 * total, 1 << 20):
        # Ids are compact enough for a presence table: O(E + span), no sort.
        present = np.zeros(span, dtype=bool)
        for a in arrays:
            present[a - lo] = True
        table = np.flatnonzero(present).astype(np.int64) + lo
        index = np.cumsum(present, dtype=np.int64) - 1
        return [index[a - lo] for a in arrays], table
    table = unique_sorted(np.concatenate(arrays), in_place=True)
    return [np.searchsorted(table, a).astype(np.int64) for a in arrays], table
