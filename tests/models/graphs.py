"""Tiny random snapshots for model tests: the sparse Â the models take and an independent dense Â."""

import numpy as np
import torch

from dynagnn.graph.csr import dense_normalized, normalize

N = 30


def random_edges(n=N, m=90, seed=0, weighted=False, self_loops=True):
    """Unique (row, col) pairs, sorted, optionally with weights and without self-loops."""
    rng = np.random.default_rng(seed)
    key = np.unique(rng.integers(0, n * n, m))
    row, col = key // n, key % n
    if not self_loops:
        keep = row != col
        row, col = row[keep], col[keep]
    w = rng.uniform(0.5, 2.0, row.shape[0]).astype(np.float32) if weighted else None
    return row, col, w


def window(T=3, n=N, f=5, seed=0):
    """T snapshots: (sparse adjacencies, dense Â's, features [n, f] each); odd snapshots weighted."""
    adjs, dense, xs = [], [], []
    g = torch.Generator().manual_seed(seed)
    for t in range(T):
        row, col, w = random_edges(n, 3 * n, seed=seed * 100 + t, weighted=bool(t % 2))
        adjs.append(normalize(row, col, w, n))
        dense.append(dense_normalized(row, col, w, n))
        xs.append(torch.randn(n, f, generator=g))
    return adjs, dense, xs
