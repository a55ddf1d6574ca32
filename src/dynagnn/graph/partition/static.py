"""The static baselines: seeded hash, contiguous id ranges (PowerGraph / DGL style) and METIS k-way
minimum edge cut (pymetis, the AliGraph-style baseline)."""

from __future__ import annotations

import numpy as np

from dynagnn.errors import InputError
from dynagnn.sortedkeys import row_offsets
from dynagnn.splits import even_bounds

from .base import check_edges, check_parts


def hash_partition(N: int, P: int, seed: int = 0) -> np.ndarray:
    """Seeded hash partition: ``parts[v] = perm[v] mod P`` for a seeded random permutation.

    Every part gets exactly floor(N/P) or ceil(N/P) vertices.
    """
    N, P = check_parts(N, P)
    perm = np.random.default_rng(seed).permutation(N).astype(np.int64)
    return perm % P


def range_partition(N: int, P: int) -> np.ndarray:
    """Contiguous id ranges; part sizes differ by at most 1 (the first N mod P parts are larger)."""
    N, P = check_parts(N, P)
    return np.repeat(np.arange(P, dtype=np.int64), np.diff(even_bounds(N, P)))


def metis(row, col, N, nparts, seed, vweights=None, tpwgts=None) -> np.ndarray:
    import pymetis

    xadj = row_offsets(row, N)
    try:
        opts = pymetis.Options(seed=int(seed))
        adj = pymetis.CSRAdjacency(xadj, col) if hasattr(pymetis, "CSRAdjacency") else None
        kw = {"adjacency": adj} if adj is not None else {"xadj": xadj, "adjncy": col}
        _, membership = pymetis.part_graph(int(nparts), **kw, vweights=vweights, tpwgts=tpwgts,
                                           options=opts)
    except Exception as exc:  # pymetis raises RuntimeError / ValueError on METIS errors
        raise InputError(f"METIS failed to partition {N} vertices into {nparts} parts: {exc}") from exc
    return np.asarray(membership, dtype=np.int64)


def metis_partition(row, col, N: int, P: int, seed: int = 0) -> np.ndarray:
    """METIS k-way minimum edge-cut partition (pymetis, seeded).

    P == 1 gives all zeros without calling METIS. A METIS failure raises :class:`InputError` naming
    it (no silent fallback: a baseline that quietly turns into range partitioning would falsify
    comparisons). Isolated vertices are fine (METIS spreads them for balance).
    """
    N, P = check_parts(N, P)
    row, col = check_edges(row, col, N)
    if P == 1:
        return np.zeros(N, dtype=np.int64)
    return metis(row, col, N, P, seed)
